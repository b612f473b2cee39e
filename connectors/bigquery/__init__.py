"""BigQuery ACP connector: read-only GoogleSQL with a mandatory dry run and a cost limit,
sharded-table and GA4-export autocontext, and loads from host tables when allowed.

The declaration a reader opens first: credentials, configuration, resources, blocks, tools.
"""

from __future__ import annotations

from typing import Any

from shared import CallContext, Connector, Cost, Credentials, Defaults, Resources, google_auth
from shared.access import config_properties

from . import api, resources
from .blocks import BLOCKS
from .cost import DEFAULT_PRICE_PER_TIB_USD
from .tools import DEFAULT_JOB_TIMEOUT_S, MAX_ROWS, TOOLS

__version__ = "0.1.0"

CREDENTIALS_SCHEMA = google_auth.credentials_schema(
    api.SCOPES,
    "A service account with BigQuery Data Viewer on the datasets and BigQuery Job User on the billing project.",
)

CONFIG_SCHEMA = {
    "type": "object",
    "properties": {
        "location": {
            "type": "string",
            "title": "Location",
            "description": "Job location. Empty: the dataset location.",
            "examples": ["EU", "US", "europe-west1"],
        },
        "billing_project": {
            "type": "string",
            "title": "Billing project",
            "description": "Project that runs (and pays for) the jobs. Empty: the project of the resource.",
        },
        "price_per_tib_usd": {
            "type": "number",
            "title": "Price per TiB (USD)",
            "description": "On-demand price used for estimates. 0 for capacity (slot) pricing.",
            "default": DEFAULT_PRICE_PER_TIB_USD,
            "minimum": 0,
        },
        **config_properties("execute_query", "load_rows"),
        "allowed_datasets": {
            "type": "string",
            "title": "Allowed datasets",
            "description": 'JSON list of regexes matched against "dataset" and "project.dataset", for example '
            '["analytics_\\\\d+", "my-project\\\\.reporting"]. When set, a query reading any other table is '
            "refused before it runs.",
            "contentMediaType": "application/json",
        },
        "job_timeout_s": {
            "type": "integer",
            "title": "Job timeout (s)",
            "description": "A job running longer is cancelled in BigQuery.",
            "default": DEFAULT_JOB_TIMEOUT_S,
            "minimum": 1,
            "maximum": 21600,
        },
        "session_budget_usd": {
            "type": "number",
            "title": "Session budget (USD)",
            "description": "Optional: what all the queries of one conversation may cost together.",
            "minimum": 0,
        },
    },
    "required": [],
}


async def authenticate(credentials: dict[str, Any], ctx: CallContext) -> None:
    """List one project (or one dataset of the service account's project): proves the credentials."""
    settings = resources.api_settings(ctx)
    project = resources.default_project(ctx)

    def probe() -> None:
        if project:
            api.list_datasets(settings, project, 1)
        else:
            api.list_projects(settings, 1)

    await ctx.run_blocking(probe)


CONNECTOR = Connector(
    id="bigquery",
    title="BigQuery",
    version=__version__,
    description="Read-only SQL over BigQuery with a mandatory dry-run and a cost limit.",
    # What the source is (the MCP standards' rule for instructions); how to query it cheaply is in
    # execute_query's description, its errors and the bigquery-sql skill.
    instructions=(
        "Google BigQuery: the user's data warehouse (often a GA4 export: analytics_<id> datasets with daily "
        "events_YYYYMMDD shards), read with read-only GoogleSQL and billed by the bytes each query reads."
    ),
    credentials=Credentials(schema=CREDENTIALS_SCHEMA, identify=google_auth.identify, authenticate=authenticate),
    resources=Resources(
        title="Project, dataset or table",
        description="A BigQuery project, optionally followed by .<dataset> and .<table> (a wildcard such as "
        "events_* is a table).",
        format="<project>[.<dataset>[.<table>]]",
        examples=("my-project", "my-project.analytics_123", "my-project.analytics_123.events_*"),
        separators=(".", "/", ":"),
        levels=resources.LEVELS,
        normalize=resources.normalize,
        list=resources.list_resources,
        check=resources.check,
    ),
    tools=TOOLS,
    blocks=BLOCKS,
    config_schema=CONFIG_SCHEMA,
    defaults=Defaults(row_limit=25, cost_limit_usd=0.0),
    cost=Cost(
        model="per_byte",
        description="BigQuery on-demand bills the bytes a query reads (price_per_tib_usd, $6.25 per TiB by "
        "default). Every query is dry-run first, for free, and refused above cost_limit_usd.",
    ),
    autocontext_ttl_s=21600,
    translate_error=api.translate,
    max_rows=MAX_ROWS,
)
