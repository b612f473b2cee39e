"""Google Analytics 4 ACP connector: reports paged in full with totals, realtime, pivots, funnels, regex
clusters, attribution comparison, and the property's autocontext (issue 13, spec 4.2 and 15.1).

The declaration a reader opens first: credentials, configuration, resources, tools, blocks.
"""

from __future__ import annotations

from typing import Any

from shared import CallContext, Connector, Cost, Credentials, Defaults, Resources, google_auth

from . import api, resources
from .attribution import COMPARE_CONVERSION_MODELS
from .blocks import BLOCKS
from .clusters import RUN_REPORT_BY_REGEX_CLUSTER
from .funnel import RUN_FUNNEL_REPORT
from .pivot import RUN_PIVOT_REPORT
from .realtime import RUN_REALTIME_REPORT
from .report import RUN_REPORT

__version__ = "0.1.0"
MAX_ROWS = 1_000_000  # the extraction cap's default (the max_rows setting)

CREDENTIALS_SCHEMA = google_auth.credentials_schema(
    api.SCOPES,
    "A service account added to the GA4 properties (GA4 Admin > Property access management; the Viewer role is "
    "enough). Paste its JSON key.",
)

CONFIG_SCHEMA = {
    "type": "object",
    "properties": {
        "page_size": {
            "type": "integer",
            "title": "Rows per API page",
            "description": "Rows asked for in each runReport page. The default is the API's maximum; smaller pages "
            "spend more requests (and quota tokens) on large reports.",
            "default": api.PAGE_ROWS,
            "minimum": 1,
            "maximum": api.PAGE_ROWS,
        },
    },
    "required": [],
}


async def authenticate(credentials: dict[str, Any], ctx: CallContext) -> None:
    """List the account summaries: proves the credentials (and warms the list that resolves property ids)."""
    config = resources.settings(ctx)
    await ctx.run_blocking(lambda: resources.summaries(config))


CONNECTOR = Connector(
    id="ga4",
    title="Google Analytics 4",
    version=__version__,
    description="Google Analytics 4: reports paged in full with totals, realtime, pivots, funnels, regex clusters "
    "and attribution comparison; property autocontext.",
    instructions=(
        "Google Analytics 4 ACP. Start with autocontext for the resource_id (numeric property id) to learn key "
        "events, custom dimensions and channels before requesting reports. Dates are days in the property's time "
        "zone; metric and dimension names are GA4 API names (sessions, totalUsers, keyEvents:purchase, "
        "sessionDefaultChannelGroup)."
    ),
    credentials=Credentials(schema=CREDENTIALS_SCHEMA, identify=google_auth.identify, authenticate=authenticate),
    resources=Resources(
        title="GA4 property",
        description="Numeric GA4 property id",
        format="<propertyId>",
        examples=("123456789",),
        levels=(resources.LEVEL,),
        normalize=resources.normalize,
        list=resources.list_resources,
        resolve=resources.resolve,
    ),
    tools=(
        RUN_REPORT,
        RUN_REPORT_BY_REGEX_CLUSTER,
        COMPARE_CONVERSION_MODELS,
        RUN_PIVOT_REPORT,
        RUN_FUNNEL_REPORT,
        RUN_REALTIME_REPORT,
    ),
    blocks=BLOCKS,
    config_schema=CONFIG_SCHEMA,
    defaults=Defaults(row_limit=25, cost_limit_usd=0),
    cost=Cost(
        model="free",
        description="The GA4 Data API has no monetary cost; it consumes property quota tokens (see "
        "system_info.source.property_quota): a standard property has 200,000 tokens a day (refilled at midnight "
        "Pacific Time) and 40,000 an hour, and a report costs more tokens the more rows, dimensions and days it "
        "reads.",
    ),
    translate_error=api.translate,
    max_rows=MAX_ROWS,
)
