"""``compare_conversion_models``: key events by channel under GA4's three views, side by side.

- **first-user** (``firstUserDefaultChannelGroup``): the channel that first brought the user;
- **session** (``sessionDefaultChannelGroup``): the channel of the session the key event happened in;
- **attributed** (``defaultChannelGroup``): the channel GA4 credits under the property's reporting
  attribution model (Admin API ``attributionSettings``, v1alpha; data-driven by default).

The three reports travel in one ``batchRunReports`` round trip, while the attribution settings are read
alongside; when that alpha call fails the comparison still comes back, with a warning that the model
could not be read.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from shared import CallContext, ColumnType, Extraction, Header, InvalidArguments, TableData, Tool

from . import api, report
from .resources import settings

API = "analyticsdata.v1beta.batchRunReports"

# (column suffix, the Data API dimension, what the view credits)
VIEWS = (
    ("first_user", "firstUserDefaultChannelGroup", "the channel that first acquired the user"),
    ("session", "sessionDefaultChannelGroup", "the channel of the session the key event happened in"),
    ("attributed", "defaultChannelGroup", "the channel credited by the property's reporting attribution model"),
)
LOOKBACK_WINDOWS = ("acquisitionConversionEventLookbackWindow", "otherConversionEventLookbackWindow")
ATTRIBUTION_MODELS = {
    "PAID_AND_ORGANIC_CHANNELS_DATA_DRIVEN": "data-driven (paid and organic channels)",
    "PAID_AND_ORGANIC_CHANNELS_LAST_CLICK": "last click (paid and organic channels)",
    "GOOGLE_PAID_CHANNELS_LAST_CLICK": "Google paid channels last click (Ads-preferred)",
}


@dataclass
class Compared:
    rows: list[list[Any]]
    column_type: ColumnType
    totals: dict[str, Any]
    model: str | None  # the API's enum, None when it could not be read
    model_note: str | None  # why it could not be read
    lookback: dict[str, Any]
    metadata: dict[str, Any]
    quota: dict[str, Any] | None


def _metric(arguments: dict[str, Any]) -> str:
    key_event = str(arguments.get("key_event") or "").strip()
    if key_event.startswith("keyEvents:"):
        key_event = key_event.removeprefix("keyEvents:")
    if ":" in key_event or " " in key_event:
        raise InvalidArguments(
            f"key_event '{key_event}' is not an event name. Give the key event's name as the key_events block "
            "lists it, e.g. purchase."
        )
    return f"keyEvents:{key_event}" if key_event else "keyEvents"


def _attribution(config: api.Settings, property_id: str) -> tuple[dict[str, Any], str | None]:
    """The property's attribution settings, or {} and why not: an alpha API that may fail or change."""
    try:
        return api.get_attribution_settings(config, property_id), None
    except Exception as exc:  # the comparison stands without the model's name
        translated = api.translate(exc)
        if translated is None:
            raise
        return {}, translated.message


async def compare_conversion_models(arguments: dict[str, Any], ctx: CallContext) -> Extraction:
    property_id = ctx.require_resource().id
    config = settings(ctx)
    metric = _metric(arguments)
    ranges = report.date_ranges(arguments, ctx.today)

    def reports() -> tuple[list[report.Checked], list[api.Report]]:
        checked = [
            report.build_request(config, property_id, {"metrics": [metric], "dimensions": [dimension]}, ranges, None)
            for _, dimension, _ in VIEWS
        ]
        return checked, api.batch_run_reports(config, property_id, [c.request for c in checked])

    (checked, answers), (attribution, model_note) = await asyncio.gather(
        ctx.run_blocking(reports), ctx.run_blocking(lambda: _attribution(config, property_id))
    )
    zone = answers[0].metadata.get("timeZone")
    compared = _compare(answers, attribution, model_note, str(zone) if zone else None)
    metric_name = checked[0].metrics[0]

    def store() -> TableData:
        writer = ctx.table(columns=_columns(compared.column_type, metric_name), title=_title(property_id, ranges))
        writer.extend(compared.rows)
        return writer.finish()

    table = await ctx.run_blocking(store)
    model = compared.model
    model_text = ATTRIBUTION_MODELS.get(model, model) if model else None
    warnings = [
        *dict.fromkeys(w for c in checked for w in c.warnings),
        *report.response_warnings(compared.metadata),
        *report.quota_warnings(compared.quota),
    ]
    if compared.model_note is not None:
        warnings.append(
            "The property's attribution settings could not be read (Admin API v1alpha: "
            f"{compared.model_note}); key_events_attributed follows the property's reporting attribution model, "
            "whichever it is (data-driven unless changed in Admin > Attribution settings)."
        )
    extra: dict[str, Any] = {"attribution_model": model, "attribution_model_name": model_text}
    if compared.lookback:
        extra["lookback_windows"] = compared.lookback
    quota = report.quota_extra(compared.quota)
    if quota:
        extra["quota"] = quota
    source: dict[str, Any] = {"property": f"properties/{property_id}", "api": API, "pages": 1}
    if compared.quota is not None:
        source["property_quota"] = compared.quota
    return Extraction(
        tables=[table],
        description=_description(property_id, metric_name, ranges, model_text),
        dates=[ranges.start.isoformat(), ranges.end.isoformat()],
        title=_title(property_id, ranges),
        totals=compared.totals,
        extra=extra,
        warnings=warnings,
        source=source,
        applied_arguments={
            "key_event": metric_name.removeprefix("keyEvents").removeprefix(":") or None,
            "start_date": ranges.start.isoformat(),
            "end_date": ranges.end.isoformat(),
        },
    )


def _compare(
    answers: list[api.Report], attribution: dict[str, Any], model_note: str | None, time_zone: str | None
) -> Compared:
    """The three views side by side, one row per channel any of them credits, the most attributed first."""
    metric_type = answers[0].metric_types[0]
    convert = report.row_converter(["channel"], [metric_type])
    by_view = [dict(map(convert, answer.rows)) for answer in answers]
    channels = sorted(set().union(*by_view), key=lambda c: (-by_view[2].get(c, 0), c))
    rows = []
    for channel in channels:
        first_user, session, attributed = (view.get(channel, 0) for view in by_view)
        rows.append([channel, first_user, session, attributed, attributed - session, attributed - first_user])
    totals: dict[str, Any] = {}
    for (suffix, _, _), answer, view in zip(VIEWS, answers, by_view, strict=True):
        typed = report.typed_totals(answer)
        totals[f"key_events_{suffix}"] = typed[0][0] if typed else sum(view.values())
    lookback = {key: attribution[key] for key in LOOKBACK_WINDOWS if key in attribution}
    return Compared(
        rows=rows,
        column_type=report.headers([], [""], [metric_type], time_zone)[0]["type"],
        totals=totals,
        model=attribution.get("reportingAttributionModel"),
        model_note=model_note,
        lookback=lookback,
        metadata=answers[0].metadata,
        quota=answers[-1].property_quota,
    )


def _columns(column_type: ColumnType, metric: str) -> list[Header]:
    out: list[Header] = [
        {"name": "channel", "type": "string", "role": "dimension", "description": "Default channel group"}
    ]
    for suffix, dimension, meaning in VIEWS:
        out.append(
            {
                "name": f"key_events_{suffix}",
                "type": column_type,
                "role": "metric",
                "description": f"{metric} by {dimension}: {meaning}",
            }
        )
    out.append(
        {
            "name": "attributed_minus_session",
            "type": column_type,
            "role": "metric",
            "description": "key_events_attributed - key_events_session",
        }
    )
    out.append(
        {
            "name": "attributed_minus_first_user",
            "type": column_type,
            "role": "metric",
            "description": "key_events_attributed - key_events_first_user",
        }
    )
    return out


def _title(property_id: str, ranges: report.Ranges) -> str:
    return f"GA4 {property_id} · key events by channel, three views · {ranges.start}→{ranges.end}"


def _description(property_id: str, metric: str, ranges: report.Ranges, model: str | None) -> str:
    uses = f"the property's model: {model}" if model else "the property's model, which could not be read"
    return (
        f"GA4 property {property_id}, {ranges.start} to {ranges.end}: {metric} by channel under three views in one "
        "batchRunReports call: first-user (firstUserDefaultChannelGroup), session (sessionDefaultChannelGroup) and "
        f"attributed (defaultChannelGroup, {uses}), with attributed - session and attributed - first-user."
    )


COMPARE_CONVERSION_MODELS = Tool(
    name="compare_conversion_models",
    title="Compare conversion attribution views",
    description=(
        "Key events by default channel group under GA4's three views side by side: first-user (the channel that "
        "first acquired the user), session (the session's channel) and attributed (the property's reporting "
        "attribution model, e.g. data-driven), with the differences attributed - session and attributed - "
        "first-user. One key event with key_event (e.g. purchase), else all key events. The answer names the "
        "property's attribution model (extra.attribution_model). Default window: the last 28 days ending yesterday."
    ),
    kind="extraction",
    run=compare_conversion_models,
    input_schema={
        "properties": {
            "key_event": {
                "type": "string",
                "description": "One key event's name (e.g. purchase, generate_lead); none: all key events.",
            },
            "start_date": {"type": "string", "x-acp-date": "start", "description": report.DATE_DESCRIPTION},
            "end_date": {"type": "string", "x-acp-date": "end", "description": report.DATE_DESCRIPTION},
        },
        "required": [],
    },
    idempotent=True,
)
