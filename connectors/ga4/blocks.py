"""Autocontext blocks of the GA4 connector (spec 7, 15.1 §3): the property's configuration (Admin API)
and its traffic over the last 28 days ending yesterday, in the property's time zone (Data API).

The traffic blocks that one autocontext call asks for share round trips: their reports go out together
as ``batchRunReports``. A block that needs a v1alpha Admin method (calculated metrics, channel groups,
annotations) raises when it fails, so that the core gives that block its ``error`` and the call goes on;
``property_settings`` keeps its v1beta part when only the attribution settings fail.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.lowlevel

from shared import AcpError, Block, CallContext, ResourceRef, UpstreamError

from . import api
from .report import default_window, row_converter
from .resources import property_settings, settings

CONFIG_TTL_S = 86_400  # a property's configuration changes rarely (spec 7.4's reference: 24 h)
TRAFFIC_TTL_S = 3_600  # volume statistics (spec 7.4's reference: 1 h)
RATE_DIGITS = 4
ANNOTATION_DAYS = 365  # annotations that end before this many days ago are left out
ANNOTATIONS_SHOWN = 50

# The Data API name of a custom definition: its scope's prefix and its parameter name.
CUSTOM_PREFIX_BY_SCOPE = {"EVENT": "customEvent", "USER": "customUser", "ITEM": "customItem"}
SYSTEM_CHANNEL_DIMENSION = "sessionDefaultChannelGroup"
CUSTOM_CHANNEL_DIMENSION = "sessionCustomChannelGroup"  # + ":<channel group id>"


# -- configuration (Admin API) -------------------------------------------------------------------
def _failure_message(exc: Exception) -> str:
    """What the core would say for ``exc`` as a block error: the connector's error table, or its type."""
    mapped = exc if isinstance(exc, AcpError) else api.translate(exc)
    if mapped is not None:
        return mapped.message
    return f"The source failed ({type(exc).__name__})."


async def fetch_property_settings(ref: ResourceRef, ctx: CallContext) -> Any:
    config = settings(ctx)

    def read() -> dict[str, Any]:
        with ThreadPoolExecutor(max_workers=4) as pool:  # four independent Admin calls at once
            found = pool.submit(property_settings, config, ref.id)
            retention = pool.submit(api.get_data_retention_settings, config, ref.id)
            links = pool.submit(api.list_google_ads_links, config, ref.id)
            attribution = pool.submit(api.get_attribution_settings, config, ref.id)
            prop = found.result()
            out: dict[str, Any] = {
                "display_name": prop.get("displayName"),
                "time_zone": prop.get("timeZone"),
                "currency_code": prop.get("currencyCode"),
                "industry_category": prop.get("industryCategory"),
                "service_level": prop.get("serviceLevel"),
            }
            try:
                model = attribution.result()
                out["attribution"] = {
                    "reporting_attribution_model": model.get("reportingAttributionModel"),
                    "acquisition_conversion_event_lookback_window": model.get(
                        "acquisitionConversionEventLookbackWindow"
                    ),
                    "other_conversion_event_lookback_window": model.get("otherConversionEventLookbackWindow"),
                }
            except Exception as exc:  # v1alpha: its failure must not hide the rest of the settings
                out["attribution_error"] = _failure_message(exc)
            kept = retention.result()
            out["data_retention"] = {
                "event_data_retention": kept.get("eventDataRetention"),
                "user_data_retention": kept.get("userDataRetention"),
                "reset_user_data_on_new_activity": kept.get("resetUserDataOnNewActivity", False),
            }
            out["google_ads_links"] = [
                {
                    "customer_id": link.get("customerId"),
                    "ads_personalization_enabled": link.get("adsPersonalizationEnabled", False),
                }
                for link in links.result()
            ]
            return out

    return await ctx.run_blocking(read)


async def fetch_key_events(ref: ResourceRef, ctx: CallContext) -> Any:
    config = settings(ctx)
    found = await ctx.run_blocking(lambda: api.list_key_events(config, ref.id))
    return [
        {
            "event_name": event["eventName"],
            "counting_method": event.get("countingMethod", "COUNTING_METHOD_UNSPECIFIED"),
            "metric": f"keyEvents:{event['eventName']}",
        }
        for event in found
    ]


def custom_api_name(scope: str, parameter_name: str) -> str | None:
    """``customEvent:form_name``; None for a scope the Data API has no prefix for."""
    prefix = CUSTOM_PREFIX_BY_SCOPE.get(scope)
    return f"{prefix}:{parameter_name}" if prefix else None


async def fetch_custom_dimensions(ref: ResourceRef, ctx: CallContext) -> Any:
    config = settings(ctx)
    found = await ctx.run_blocking(lambda: api.list_custom_dimensions(config, ref.id))
    return [
        {
            "api_name": custom_api_name(dimension.get("scope", ""), dimension["parameterName"]),
            "display_name": dimension.get("displayName"),
            "scope": dimension.get("scope"),
        }
        for dimension in found
    ]


async def fetch_custom_metrics(ref: ResourceRef, ctx: CallContext) -> Any:
    config = settings(ctx)
    found = await ctx.run_blocking(lambda: api.list_custom_metrics(config, ref.id))
    return [
        {
            "api_name": custom_api_name(metric.get("scope", ""), metric["parameterName"]),
            "display_name": metric.get("displayName"),
            "unit": metric.get("measurementUnit"),
            "scope": metric.get("scope"),
        }
        for metric in found
    ]


async def fetch_calculated_metrics(ref: ResourceRef, ctx: CallContext) -> Any:
    config = settings(ctx)
    found = await ctx.run_blocking(lambda: api.list_calculated_metrics(config, ref.id))
    return [
        {
            "api_name": f"calcMetric:{metric['calculatedMetricId']}",
            "display_name": metric.get("displayName"),
            "formula": metric.get("formula"),
            "unit": metric.get("metricUnit"),
        }
        for metric in found
    ]


async def fetch_channel_groups(ref: ResourceRef, ctx: CallContext) -> Any:
    config = settings(ctx)
    found = await ctx.run_blocking(lambda: api.list_channel_groups(config, ref.id))
    out = []
    for group in found:
        system = bool(group.get("systemDefined", False))
        group_id = group["name"].rsplit("/", 1)[-1]  # properties/N/channelGroups/<id>
        out.append(
            {
                "display_name": group.get("displayName"),
                "system_defined": system,
                "primary": bool(group.get("primary", False)),
                # The dimension that reports sessions by this group's channels.
                "dimension": SYSTEM_CHANNEL_DIMENSION if system else f"{CUSTOM_CHANNEL_DIMENSION}:{group_id}",
                "channels": [rule.get("displayName") for rule in group.get("groupingRule", [])],
            }
        )
    return out


def _calendar_date(value: dict[str, int]) -> dt.date:
    return dt.date(value["year"], value["month"], value["day"])


async def fetch_annotations(ref: ResourceRef, ctx: CallContext) -> Any:
    config = settings(ctx)
    found = await ctx.run_blocking(lambda: api.list_reporting_data_annotations(config, ref.id))
    oldest = ctx.today - dt.timedelta(days=ANNOTATION_DAYS)
    dated = []
    for annotation in found:
        if "annotationDateRange" in annotation:
            span = annotation["annotationDateRange"]
            start, end = _calendar_date(span["startDate"]), _calendar_date(span["endDate"])
        else:
            start = end = _calendar_date(annotation["annotationDate"])
        if end < oldest:
            continue
        entry: dict[str, Any] = (
            {"date": start.isoformat()}
            if start == end
            else {"start_date": start.isoformat(), "end_date": end.isoformat()}
        )
        entry["title"] = annotation.get("title")
        if annotation.get("description"):
            entry["description"] = annotation["description"]
        if annotation.get("systemGenerated"):
            entry["system_generated"] = True
        dated.append((start, entry))
    dated.sort(key=lambda pair: pair[0], reverse=True)  # newest first
    return [entry for _, entry in dated[:ANNOTATIONS_SHOWN]]


# -- traffic (Data API) --------------------------------------------------------------------------
@dataclass(frozen=True)
class TrafficReport:
    """One traffic block's report: metrics by one dimension, the largest first metric first."""

    dimension: str
    metrics: tuple[str, ...]
    limit: int | None = None

    def request(self, property_id: str, start: dt.date, end: dt.date) -> dict[str, Any]:
        request: dict[str, Any] = {
            "property": f"properties/{property_id}",
            "date_ranges": [{"start_date": start.isoformat(), "end_date": end.isoformat()}],
            "dimensions": [{"name": self.dimension}],
            "metrics": [{"name": name} for name in self.metrics],
            # Ties broken by the dimension value, so that a block's rows never change order between fetches.
            "order_bys": [
                {"metric": {"metric_name": self.metrics[0]}, "desc": True},
                {"dimension": {"dimension_name": self.dimension}},
            ],
        }
        if self.limit is not None:
            request["limit"] = self.limit
        return request


CHANNELS = TrafficReport("sessionDefaultChannelGroup", ("sessions", "totalUsers", "engagementRate"))
DEVICES = TrafficReport("deviceCategory", ("sessions", "totalUsers"))
COUNTRIES = TrafficReport("country", ("sessions", "totalUsers"), limit=15)
EVENTS = TrafficReport("eventName", ("eventCount",), limit=50)
LANDING_PAGES = TrafficReport("landingPage", ("sessions", "totalUsers", "engagementRate"), limit=25)
CONTENT_GROUPS = TrafficReport("contentGroup", ("sessions", "totalUsers"))
NOT_SET = "(not set)"


@dataclass
class _Batch:
    """The traffic requests of one autocontext call, gathered while its blocks start, then sent together."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    done: anyio.Event = field(default_factory=anyio.Event)
    reports: list[api.Report] | None = None
    error: Exception | None = None

    def result(self, index: int) -> api.Report:
        if self.reports is None:
            raise self.error or UpstreamError("The batched traffic reports were cancelled; ask again.")
        return self.reports[index]


# Batches still gathering requests, per (call, property, window start). The core starts a call's blocks
# together, so they all join before the first one yields control and sends.
_gathering: dict[tuple[CallContext, str, dt.date], _Batch] = {}


def _send(config: api.Settings, property_id: str, requests: list[dict[str, Any]]) -> list[api.Report]:
    """``requests`` as batchRunReports, the batches of five sent at once rather than one after another."""
    size = api.BATCH_REPORTS
    chunks = [requests[i : i + size] for i in range(0, len(requests), size)]
    if len(chunks) == 1:
        return api.batch_run_reports(config, property_id, chunks[0])
    with ThreadPoolExecutor(max_workers=len(chunks)) as pool:
        answers = pool.map(lambda chunk: api.batch_run_reports(config, property_id, chunk), chunks)
        return [report for answer in answers for report in answer]


async def _traffic_report(ref: ResourceRef, ctx: CallContext, traffic: TrafficReport) -> api.Report:
    start, end = default_window(ctx.today)
    request = traffic.request(ref.id, start, end)
    key = (ctx, ref.id, start)
    batch = _gathering.get(key)
    if batch is not None:  # another block of this call sends it
        index = len(batch.requests)
        batch.requests.append(request)
        await batch.done.wait()
        return batch.result(index)
    batch = _gathering[key] = _Batch(requests=[request])
    try:
        try:
            # The call's other blocks, started with this one, run up to here and add their requests.
            await anyio.lowlevel.checkpoint()
        finally:
            del _gathering[key]  # later blocks start a batch of their own
        config = settings(ctx)
        batch.reports = await ctx.run_blocking(lambda: _send(config, ref.id, batch.requests))
    except Exception as exc:
        batch.error = exc
    finally:
        batch.done.set()  # also when cancelled: the blocks waiting on it must not wait forever
    return batch.result(0)


def _rounded(value: Any) -> Any:
    return round(value, RATE_DIGITS) if isinstance(value, float) else value


def report_rows(report: api.Report) -> list[dict[str, Any]]:
    """The report's rows as ``{dimension: value, metric: typed value}``, rates rounded."""
    convert = row_converter(report.dimension_names, report.metric_types)
    names = [*report.dimension_names, *report.metric_names]
    return [dict(zip(names, map(_rounded, convert(row)), strict=True)) for row in report.rows]


def _traffic_fetch(traffic: TrafficReport) -> Callable[[ResourceRef, CallContext], Awaitable[Any]]:
    async def fetch(ref: ResourceRef, ctx: CallContext) -> Any:
        return report_rows(await _traffic_report(ref, ctx, traffic))

    return fetch


async def fetch_content_groups(ref: ResourceRef, ctx: CallContext) -> Any:
    rows = report_rows(await _traffic_report(ref, ctx, CONTENT_GROUPS))
    # A property without content groups has every session in "(not set)": nothing to tell.
    return rows if any(row[CONTENT_GROUPS.dimension] != NOT_SET for row in rows) else []


BLOCKS = (
    Block(
        id="property_settings",
        description="Property settings: name, time zone, currency, industry, attribution model, conversion lookback "
        "windows and data retention.",
        fetch=fetch_property_settings,
        ttl_s=CONFIG_TTL_S,
    ),
    Block(
        id="key_events",
        description="Property key events (conversions) with their API metric (keyEvents:<event>).",
        fetch=fetch_key_events,
        ttl_s=CONFIG_TTL_S,
    ),
    Block(
        id="custom_dimensions",
        description="Custom dimensions with their scope, description and API name "
        "(customEvent:/customUser:/customItem:).",
        fetch=fetch_custom_dimensions,
        ttl_s=CONFIG_TTL_S,
    ),
    Block(
        id="custom_metrics",
        description="Custom metrics with unit, scope and API name (customEvent:<param>).",
        fetch=fetch_custom_metrics,
        ttl_s=CONFIG_TTL_S,
    ),
    Block(
        id="calculated_metrics",
        description="Calculated metrics with their formula and API name (calcMetric:<id>).",
        fetch=fetch_calculated_metrics,
        ttl_s=CONFIG_TTL_S,
    ),
    Block(
        id="channel_groups",
        description="Channel groups (system-defined and custom).",
        fetch=fetch_channel_groups,
        ttl_s=CONFIG_TTL_S,
    ),
    Block(
        id="sessions_by_channel",
        description="Sessions, users and engagement by default channel group over the last 28 days.",
        fetch=_traffic_fetch(CHANNELS),
        ttl_s=TRAFFIC_TTL_S,
    ),
    Block(
        id="sessions_by_device",
        description="Sessions and users by device over the last 28 days.",
        fetch=_traffic_fetch(DEVICES),
        ttl_s=TRAFFIC_TTL_S,
    ),
    Block(
        id="sessions_by_country",
        description="Top 15 countries by sessions over the last 28 days.",
        fetch=_traffic_fetch(COUNTRIES),
        ttl_s=TRAFFIC_TTL_S,
    ),
    Block(
        id="top_events",
        description="Top 50 events by event count over the last 28 days (exact eventName values).",
        fetch=_traffic_fetch(EVENTS),
        ttl_s=TRAFFIC_TTL_S,
    ),
    Block(
        id="top_landing_pages",
        description="Top 25 landing pages by sessions over the last 28 days.",
        fetch=_traffic_fetch(LANDING_PAGES),
        ttl_s=TRAFFIC_TTL_S,
    ),
    Block(
        id="content_groups",
        description="Sessions by content group over the last 28 days (empty if the property does not use them).",
        fetch=fetch_content_groups,
        ttl_s=TRAFFIC_TTL_S,
    ),
    Block(
        id="annotations",
        description="Annotations of the last 12 months (date or date range, title, description), which explain "
        "changes in traffic.",
        fetch=fetch_annotations,
        ttl_s=CONFIG_TTL_S,
    ),
)
