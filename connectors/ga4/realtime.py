"""``run_realtime_report``: the property's events of the last 30 minutes (60 on GA4 360).

Realtime reports have their own short list of dimensions and metrics (``names`` checks them against
the documented list, not ``getMetadata``), no dates and no paging: one request of up to 250,000 rows.
``minute_ranges`` split the window (``minutesAgo`` windows, at most two); each range then adds a
``dateRange`` value to the rows, named as given.
"""

from __future__ import annotations

import json
from typing import Any

from shared import CallContext, Extraction, InvalidArguments, TableData, Tool

from . import api, names, report
from .filters import FILTER_SCHEMA
from .resources import property_settings, settings

API = "analyticsdata.v1beta.runRealtimeReport"

DEFAULT_METRICS = ("activeUsers",)
MAX_MINUTE_RANGES = 2
WINDOW_MINUTES = 60  # GA4 360 keeps 60 minutes, standard properties 30


def minute_ranges(arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``MinuteRange``s asked for, each named (the ``dateRange`` value of its rows)."""
    out = []
    for index, raw in enumerate(arguments.get("minute_ranges") or []):
        start = int(raw.get("start_minutes_ago", 29))
        end = int(raw.get("end_minutes_ago", 0))
        if start < end:
            raise InvalidArguments(
                f"minute_ranges[{index}]: start_minutes_ago {start} is later than end_minutes_ago {end}. The start is "
                "further in the past: e.g. start_minutes_ago 29, end_minutes_ago 0 for the last 30 minutes."
            )
        out.append(
            {"start_minutes_ago": start, "end_minutes_ago": end, "name": str(raw.get("name") or f"range_{index}")}
        )
    return out


async def run_realtime_report(arguments: dict[str, Any], ctx: CallContext) -> Extraction:
    property_id = ctx.require_resource().id
    config = settings(ctx)
    ranges = minute_ranges(arguments)
    limit = arguments.get("limit")
    dimensions, metrics, notes = names.check_names(
        config,
        property_id,
        list(arguments.get("dimensions") or []),
        list(arguments.get("metrics") or DEFAULT_METRICS),
        realtime=True,
    )
    request: dict[str, Any] = {
        "property": f"properties/{property_id}",
        "dimensions": [{"name": d} for d in dimensions],
        "metrics": [{"name": m} for m in metrics],
        "metric_aggregations": ["TOTAL"],
        "order_bys": [{"metric": {"metric_name": metrics[0]}, "desc": True}],
        "return_property_quota": True,
    }
    expressions, fixed = report.checked_filters(names.Catalog.realtime(), arguments)
    request.update(expressions)
    notes += fixed
    if ranges:
        request["minute_ranges"] = ranges
    cap = ctx.config.get("max_rows")
    # One request: no more rows than asked, and one past the cap tells a table that fits from a longer one.
    request["limit"] = min(int(limit or api.PAGE_ROWS), int(cap) + 1 if cap is not None else api.PAGE_ROWS)

    def pull() -> tuple[TableData, api.Report, str | None]:
        answer = api.run_realtime_report(config, request)
        zone = property_settings(config, property_id).get("timeZone")
        writer = ctx.table(
            columns=report.headers(answer.dimension_names, answer.metric_names, answer.metric_types, zone),
            title=f"GA4 {property_id} · realtime",
        )
        writer.expected_rows = answer.row_count
        convert = report.row_converter(answer.dimension_names, answer.metric_types)
        writer.extend([convert(row) for row in answer.rows])
        return writer.finish(), answer, zone

    table, answer, zone = await ctx.run_blocking(pull)
    warnings = [*notes, *report.quota_warnings(answer.property_quota)]
    if answer.row_count > len(answer.rows) and table.capped_at is None:
        warnings.append(
            f"GA4 has {answer.row_count:,} realtime rows; {len(answer.rows):,} were asked for (limit). Raise limit "
            "for every row."
        )
    applied: dict[str, Any] = {"dimensions": dimensions, "metrics": metrics}
    if ranges:
        applied["minute_ranges"] = ranges
    quota = report.quota_extra(answer.property_quota)
    source: dict[str, Any] = {"property": f"properties/{property_id}", "api": API, "pages": 1}
    if zone:
        source["time_zone"] = zone
    if answer.property_quota is not None:
        source["property_quota"] = answer.property_quota
    return Extraction(
        tables=[table],
        description=_description(property_id, dimensions, metrics, ranges, arguments),
        dates=[ctx.today.isoformat()],
        title=f"GA4 {property_id} · realtime",
        totals=_totals(answer, ranges),
        extra={"quota": quota} if quota else None,
        warnings=warnings,
        source=source,
        applied_arguments=applied,
    )


def _totals(answer: api.Report, ranges: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The API's TOTAL rows: one per minute range when there are several."""
    if not answer.totals:
        return None
    typed = [dict(zip(answer.metric_names, row, strict=True)) for row in report.typed_totals(answer)]
    if len(typed) == 1:
        return typed[0]
    labels = [r["name"] for r in ranges] if len(ranges) == len(typed) else [str(i) for i in range(len(typed))]
    return dict(zip(labels, typed, strict=True))


def _description(
    property_id: str, dimensions: list[str], metrics: list[str], ranges: list[dict[str, Any]], arguments: dict[str, Any]
) -> str:
    window = (
        "; ".join(f"{r['start_minutes_ago']} to {r['end_minutes_ago']} minutes ago" for r in ranges)
        if ranges
        else "the last 30 minutes"
    )
    text = (
        f"GA4 property {property_id}, realtime report ({window}). Metrics: {', '.join(metrics)}. "
        f"Dimensions: {', '.join(dimensions) or 'none (property totals)'}."
    )
    for key in ("dimension_filter", "metric_filter"):
        if arguments.get(key):
            text += f" Filter: {key} {json.dumps(arguments[key], separators=(',', ':'))}."
    return text


MINUTE_RANGE_SCHEMA = {
    "type": "object",
    "properties": {
        "start_minutes_ago": {"type": "integer", "minimum": 0, "maximum": WINDOW_MINUTES - 1, "default": 29},
        "end_minutes_ago": {"type": "integer", "minimum": 0, "maximum": WINDOW_MINUTES - 1, "default": 0},
        "name": {"type": "string", "description": "Label of the range in the dateRange column."},
    },
    "additionalProperties": False,
}

RUN_REALTIME_REPORT = Tool(
    name="run_realtime_report",
    title="Realtime report",
    description=(
        "Events of the last 30 minutes (60 on GA4 360): realtime dimensions (country, city, deviceCategory, "
        "eventName, unifiedScreenName, minutesAgo, platform, audienceName...) and metrics (activeUsers, eventCount, "
        "keyEvents, screenPageViews). Optional minute_ranges split the window (at most two; rows then carry the "
        "range's name in dateRange). Rows sorted by the first metric, descending; totals from GA4."
    ),
    kind="extraction",
    run=run_realtime_report,
    input_schema={
        "properties": {
            "dimensions": {
                "type": "array",
                "items": {"type": "string"},
                "uniqueItems": True,
                "description": "Realtime dimension API names, e.g. country, deviceCategory, eventName, minutesAgo.",
            },
            "metrics": {
                "type": "array",
                "items": {"type": "string"},
                "uniqueItems": True,
                "default": list(DEFAULT_METRICS),
                "description": "Realtime metric API names: activeUsers (default), eventCount, keyEvents, "
                "screenPageViews.",
            },
            "minute_ranges": {
                "type": "array",
                "items": MINUTE_RANGE_SCHEMA,
                "maxItems": MAX_MINUTE_RANGES,
                "description": 'Windows in minutes ago, e.g. [{"start_minutes_ago": 29, "end_minutes_ago": 15, '
                '"name": "earlier"}, {"start_minutes_ago": 14, "end_minutes_ago": 0, "name": "latest"}].',
            },
            "dimension_filter": FILTER_SCHEMA,
            "metric_filter": FILTER_SCHEMA,
            "limit": {"type": "integer", "minimum": 1, "maximum": api.PAGE_ROWS, "description": "Rows at most."},
        },
        "required": [],
    },
    idempotent=True,
)
