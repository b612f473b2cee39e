"""Search Console ACP connector: Search Analytics with every row paged into the table, autocontext
on the first call, URL Inspection and sitemaps (issue 14, spec 15.2).

The declaration a reader opens first: credentials, configuration, resources, tools, blocks.
"""

from __future__ import annotations

from typing import Any

from shared import CallContext, Connector, Cost, Credentials, Defaults, Resources, google_auth

from . import api, resources
from .blocks import BLOCKS
from .inspection import DEFAULT_LANGUAGE, INSPECT_URL, INSPECT_URLS, LIST_SITEMAPS
from .search import MAX_ROWS, SEARCH_ANALYTICS

__version__ = "0.1.0"

CREDENTIALS_SCHEMA = google_auth.credentials_schema(
    api.SCOPES,
    "A service account added as a user of the properties in Search Console (Settings > Users and permissions; "
    "Restricted is enough).",
)

CONFIG_SCHEMA = {
    "type": "object",
    "properties": {
        "inspection_language": {
            "type": "string",
            "title": "URL Inspection language",
            "description": "IETF BCP-47 language of the inspection's messages (issue texts, coverage states).",
            "default": DEFAULT_LANGUAGE,
            "examples": ["en-US", "es-ES", "de"],
        },
    },
    "required": [],
}


async def authenticate(credentials: dict[str, Any], ctx: CallContext) -> None:
    """List the properties: proves the credentials (and warms the list that resolves resource ids)."""
    config = resources.settings(ctx)
    await ctx.run_blocking(lambda: resources.sites(config))


CONNECTOR = Connector(
    id="gsc",
    title="Search Console",
    version=__version__,
    description="Google Search Console: search analytics paged in full, URL inspection and sitemaps.",
    instructions=(
        "Google Search Console: how the user's sites appear in Google Search (clicks, impressions, CTR and average "
        "position by query, page, country, device, date and search appearance), Google's index view of their URLs, "
        "and their sitemaps, per property (sc-domain:example.com or https://www.example.com/). Days are Pacific Time "
        "and data arrives 2-3 days late."
    ),
    credentials=Credentials(schema=CREDENTIALS_SCHEMA, identify=google_auth.identify, authenticate=authenticate),
    resources=Resources(
        title="Property",
        description="A Search Console property: a domain property (sc-domain:example.com) or a URL-prefix property "
        "(https://www.example.com/). A bare domain, a URL without its trailing slash, the other scheme or www, and a "
        "page URL resolve to the property that holds them.",
        format="sc-domain:<domain> | <URL prefix>",
        examples=("sc-domain:example.com", "https://www.example.com/"),
        levels=(resources.LEVEL,),
        normalize=resources.normalize,
        list=resources.list_resources,
        resolve=resources.resolve,
    ),
    tools=(SEARCH_ANALYTICS, INSPECT_URLS, INSPECT_URL, LIST_SITEMAPS),
    blocks=BLOCKS,
    config_schema=CONFIG_SCHEMA,
    defaults=Defaults(row_limit=25),
    cost=Cost(
        model="free",
        description="The Search Console API has no per-call price. Quotas: 1,200 Search Analytics queries a minute "
        "per property; URL Inspection 600 a minute and 2,000 a day per property.",
    ),
    autocontext_ttl_s=3600,
    translate_error=api.translate,
    max_rows=MAX_ROWS,
)
