"""Autocontext blocks of the Search Console connector (spec 7.2, 15.2): what the model needs to write
its next ``search_analytics`` call well. Windows end on the property's last reliable day, in Pacific
Time; every block is a few small ``searchAnalytics.query`` calls (free), or ``sitemaps.list``."""

from __future__ import annotations

import datetime as dt
from typing import Any

from shared import Block, CallContext, ResourceRef

from . import api
from .countries import NAMES
from .inspection import sitemap_entry
from .resources import settings
from .search import first_available_day, last_reliable_day, months_before, pacific_today

RECENT_DAYS = 28  # the stats blocks cover the last 28 days of final data, as Search Console's own default
TOP_SHOWN = 20
COUNTRIES_SHOWN = 15
CLUSTER_MONTHS = 3
CLUSTER_MAX_ROWS = 100_000  # queries read for position_clusters (4 pages); the data says when it stopped
STATS_TTL_S = 3600  # volume statistics (spec 7.4's reference: 1 h)
CLUSTERS_TTL_S = 21600  # three months of every query: the heaviest block, and it moves slowly
SITEMAPS_TTL_S = 21600
# (name, upper bound of the average position): a query falls in the first cluster whose bound it is within.
CLUSTERS: tuple[tuple[str, float], ...] = (
    ("Top-3", 3),
    ("Top-10", 10),
    ("Top-30", 30),
    ("Top-100", 100),
    ("Out", float("inf")),
)


def _recent_window(config: api.Settings, site: str) -> tuple[dt.date, dt.date]:
    """The last 28 days of final web data."""
    end = last_reliable_day(config, site, "web", pacific_today())
    return end - dt.timedelta(days=RECENT_DAYS - 1), end


def _metrics(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "clicks": int(row["clicks"]),
        "impressions": int(row["impressions"]),
        "ctr": round(row["ctr"], 4),
        "position": round(row["position"], 1),  # web search: every row has a position
    }


async def _ranked(ref: ResourceRef, ctx: CallContext, dimension: str, limit: int) -> dict[str, Any]:
    """The ``limit`` values of one dimension with the most clicks over the last 28 days of final data."""
    config = settings(ctx)

    def read() -> dict[str, Any]:
        start, end = _recent_window(config, ref.id)
        body = {
            "startDate": start.isoformat(),
            "endDate": end.isoformat(),
            "dimensions": [dimension],
            "type": "web",
            "dataState": "final",
            "rowLimit": limit,
        }
        rows = []
        for row in api.query(config, ref.id, body).get("rows", []):  # ordered by clicks, as Google does
            key = row["keys"][0]
            named = {dimension: key, "country_name": NAMES.get(key)} if dimension == "country" else {dimension: key}
            rows.append(named | _metrics(row))
        return {"start_date": start.isoformat(), "end_date": end.isoformat(), "rows": rows}

    return await ctx.run_blocking(read)


async def fetch_top_queries(ref: ResourceRef, ctx: CallContext) -> Any:
    return await _ranked(ref, ctx, "query", TOP_SHOWN)


async def fetch_top_pages(ref: ResourceRef, ctx: CallContext) -> Any:
    return await _ranked(ref, ctx, "page", TOP_SHOWN)


async def fetch_devices(ref: ResourceRef, ctx: CallContext) -> Any:
    return await _ranked(ref, ctx, "device", TOP_SHOWN)


async def fetch_countries(ref: ResourceRef, ctx: CallContext) -> Any:
    return await _ranked(ref, ctx, "country", COUNTRIES_SHOWN)


async def fetch_search_appearance(ref: ResourceRef, ctx: CallContext) -> Any:
    return await _ranked(ref, ctx, "searchAppearance", TOP_SHOWN)


# -- available_date_range ----------------------------------------------------------------------------
async def fetch_available_date_range(ref: ResourceRef, ctx: CallContext) -> Any:
    today = pacific_today()
    config = settings(ctx)
    reliable = await ctx.run_blocking(lambda: last_reliable_day(config, ref.id, "web", today))
    return {
        "first_date": first_available_day(today).isoformat(),
        "last_reliable_date": reliable.isoformat(),
        "note": "Search Console keeps 16 months of data and publishes it with a 2-3 day delay.",
    }


# -- position_clusters -------------------------------------------------------------------------------
def cluster_of(position: float) -> str:
    """The cluster of a query's average position: the first whose bound it is within."""
    return next(name for name, bound in CLUSTERS if position <= bound)


async def fetch_position_clusters(ref: ResourceRef, ctx: CallContext) -> Any:
    config = settings(ctx)

    def read() -> list[dict[str, Any]]:
        end = last_reliable_day(config, ref.id, "web", pacific_today())
        body = {
            "startDate": months_before(end, CLUSTER_MONTHS).isoformat(),
            "endDate": end.isoformat(),
            "dimensions": ["query"],
            "type": "web",
            "dataState": "final",
        }
        sums = {name: [0, 0, 0] for name, _ in CLUSTERS}  # clicks, impressions, queries
        seen = 0
        while seen < CLUSTER_MAX_ROWS:
            rows = api.query(config, ref.id, {**body, "rowLimit": api.PAGE_ROWS, "startRow": seen}).get("rows")
            if not rows:
                break
            for row in rows:
                cluster = sums[cluster_of(row["position"])]
                cluster[0] += int(row["clicks"])
                cluster[1] += int(row["impressions"])
                cluster[2] += 1
            seen += len(rows)
        out: list[dict[str, Any]] = [
            {"clusterPosition": name, "clicks": c, "impressions": i, "queries": q} for name, (c, i, q) in sums.items()
        ]
        if seen >= CLUSTER_MAX_ROWS:
            out.append({"note": f"Counted the {seen} queries with the most clicks, not every query."})
        return out

    return await ctx.run_blocking(read)


# -- sitemaps ----------------------------------------------------------------------------------------
async def fetch_sitemaps(ref: ResourceRef, ctx: CallContext) -> Any:
    config = settings(ctx)
    found = await ctx.run_blocking(lambda: api.list_sitemaps(config, ref.id))
    return [
        {k: v for k, v in sitemap_entry(entry).items() if k not in ("last_submitted", "is_index") or v}
        for entry in found
    ]


_STATS = "over the last 28 days of final data (web search), with clicks, impressions, ctr (0-1) and position"

BLOCKS = (
    Block(
        id="available_date_range",
        description="Queryable date range (16 months) and the latest day with reliable data.",
        fetch=fetch_available_date_range,
        ttl_s=STATS_TTL_S,
    ),
    Block(
        id="position_clusters",
        description="Queries grouped by position cluster (Top-3, Top-10, Top-30, Top-100, Out) over the last 3 months.",
        fetch=fetch_position_clusters,
        ttl_s=CLUSTERS_TTL_S,
    ),
    Block(
        id="top_queries",
        description=f"The {TOP_SHOWN} queries with the most clicks {_STATS}.",
        fetch=fetch_top_queries,
        ttl_s=STATS_TTL_S,
    ),
    Block(
        id="top_pages",
        description=f"The {TOP_SHOWN} pages with the most clicks {_STATS}.",
        fetch=fetch_top_pages,
        ttl_s=STATS_TTL_S,
    ),
    Block(
        id="devices",
        description=f"Clicks by device (DESKTOP, MOBILE, TABLET) {_STATS}.",
        fetch=fetch_devices,
        ttl_s=STATS_TTL_S,
    ),
    Block(
        id="countries",
        description=f"The {COUNTRIES_SHOWN} countries with the most clicks (alpha-3 codes as search_analytics takes "
        f"them, with their names) {_STATS}.",
        fetch=fetch_countries,
        ttl_s=STATS_TTL_S,
    ),
    Block(
        id="search_appearance",
        description=f"Search appearances (rich result types, such as FAQ_RICH_RESULT) {_STATS}. Filter on one to "
        "split it by query or page.",
        fetch=fetch_search_appearance,
        ttl_s=STATS_TTL_S,
    ),
    Block(
        id="sitemaps",
        description="Submitted sitemaps with their type, last download, errors, warnings and URLs submitted and "
        "indexed.",
        fetch=fetch_sitemaps,
        ttl_s=SITEMAPS_TTL_S,
    ),
)
