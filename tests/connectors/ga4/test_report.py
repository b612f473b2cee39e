"""run_report against the fake GA4: every row of a report larger than one page, typed; filters, a
comparison, ordering and totals equal to ground truth computed from the fake's events in plain loops;
names fixed or refused; an incompatible combination explained; the response metadata and the quota
as warnings."""

from __future__ import annotations

import datetime as dt
import math
import re
import zoneinfo
from collections.abc import Callable
from typing import Any

import pytest
from fakes.ga4 import FakeGA4
from fakes.ga4_export import Event
from ga4_support import PROPERTY, event_counts_by, events_between, sessions_by

pytestmark = pytest.mark.anyio
ZONE = zoneinfo.ZoneInfo("Europe/Madrid")  # the property's time zone (fakes.ga4_catalog)


def window(fake: FakeGA4, days: int = 60) -> tuple[dt.date, dt.date]:
    end = fake.today(PROPERTY) - dt.timedelta(days=1)
    return end - dt.timedelta(days=days - 1), end


def arguments(fake: FakeGA4, metrics: list[str], dimensions: list[str], **extra: Any) -> dict[str, Any]:
    start, end = window(fake)
    return {
        "resource_id": PROPERTY,
        "metrics": metrics,
        "dimensions": dimensions,
        "start_date": start.isoformat(),
        "end_date": end.isoformat(),
        **extra,
    }


def report_requests(fake: FakeGA4) -> list[dict[str, Any]]:
    return [r.json for r in fake.data.server.requests_for("runReport")]


async def test_a_report_of_several_pages_arrives_whole_while_the_model_sees_row_limit_rows(
    ga4_host, meta, fake: FakeGA4
) -> None:
    start, end = window(fake)
    truth = event_counts_by(fake, PROPERTY, lambda e: (e.date.isoformat(), e.name), start, end)
    page = 97
    assert len(truth) > 3 * page
    async with ga4_host() as host:
        await host.call("autocontext", {}, meta())  # the property list is known: only the report is left
        before = len(report_requests(fake))
        result = await host.call(
            "run_report", arguments(fake, ["eventCount"], ["date", "eventName"]), meta(config={"page_size": page})
        )
        assert result.kind == "extraction", result.error
        rows = result.rows()

    assert {(r["date"], r["eventName"]): r["eventCount"] for r in rows} == truth
    assert result.system_data["row_count"] == result.model_response["total_rows"] == len(truth)
    assert result.model_response["returned_rows"] == len(result.model_response["rows"]) == 25
    assert result.model_response["truncated"] is True
    pages = math.ceil(len(truth) / page)
    sent = report_requests(fake)[before:]
    assert [(int(r.get("offset", 0)), int(r["limit"])) for r in sent] == [(page * n, page) for n in range(pages)]
    assert "metricAggregations" in sent[0] and all("metricAggregations" not in r for r in sent[1:])
    source = result.system_info["source"]
    assert source["pages"] == pages and source["property"] == f"properties/{PROPERTY}"
    assert source["api"] == "analyticsdata.v1beta.runReport" and source["property_quota"]["tokensPerDay"]["consumed"]
    assert result.model_response["totals"] == {"eventCount": sum(truth.values())}
    assert result.model_response["extra"]["quota"]["tokensPerDay"]["remaining"] > 0
    assert result.system_info["title"] == f"GA4 {PROPERTY} · {start}→{end}"


async def test_headers_are_typed_with_roles_and_times_are_local(ga4_host, meta, fake: FakeGA4) -> None:
    start, end = window(fake, days=3)
    request = arguments(fake, ["eventCount", "bounceRate"], ["date", "dateHour", "dateHourMinute", "eventName"])
    request.update(start_date=start.isoformat(), end_date=end.isoformat(), limit=400)
    async with ga4_host() as host:
        result = await host.call("run_report", request, meta())
    headers = {h["name"]: h for h in result.system_data["headers"]}
    assert [(h["type"], h["role"]) for h in result.system_data["headers"]] == [
        ("date", "dimension"),
        ("datetime", "dimension"),
        ("datetime", "dimension"),
        ("string", "dimension"),
        ("integer", "metric"),
        ("number", "metric"),
    ]
    assert "Europe/Madrid" in headers["date"]["description"] and "Europe/Madrid" in headers["dateHour"]["description"]

    def local(event: Event) -> dt.datetime:
        return dt.datetime.fromtimestamp(event.timestamp_us / 1e6, ZONE).replace(tzinfo=None)

    minutes = {
        (e.date.isoformat(), local(e).replace(minute=0, second=0, microsecond=0).isoformat(), e.name): e
        for e in events_between(fake, PROPERTY, start, end)
    }
    rows = result.rows()
    assert rows and all(isinstance(r["eventCount"], int) and isinstance(r["bounceRate"], float) for r in rows)
    for row in rows:
        assert (row["date"], row["dateHour"], row["eventName"]) in minutes
        assert row["dateHourMinute"].startswith(row["dateHour"][:14]) and len(row["dateHourMinute"]) == 19


def _blog(e: Event) -> bool:
    return e.page_path.startswith("/blog/")


FILTERS: list[tuple[str, dict[str, Any], Callable[[Event], bool]]] = [
    ("begins_with", {"dimension_filter": [{"field": "pagePath", "match": "begins_with", "value": "/blog/"}]}, _blog),
    (
        "full_regexp, case-insensitive",
        {"dimension_filter": [{"field": "pagePath", "match": "full_regexp", "value": "/SHOES(/.*)?"}]},
        lambda e: re.fullmatch("/shoes(/.*)?", e.page_path) is not None,
    ),
    (
        "in_list, not",
        {
            "dimension_filter": [
                {"field": "eventName", "match": "in_list", "value": ["page_view", "scroll"], "not": True}
            ]
        },
        lambda e: e.name not in ("page_view", "scroll"),
    ),
    (
        "any and all groups",
        {
            "dimension_filter": [
                {"field": "device", "match": "exact", "value": "mobile"},
                {
                    "any": [
                        {"field": "pagePath", "match": "begins_with", "value": "/blog/"},
                        {"all": [{"field": "pagePath", "match": "contains", "value": "shoes"}]},
                    ]
                },
            ]
        },
        lambda e: e.session.visitor.device_category == "mobile" and (_blog(e) or "shoes" in e.page_path),
    ),
]


@pytest.mark.parametrize(("case", "extra", "keep"), FILTERS, ids=[f[0] for f in FILTERS])
async def test_filters_equal_the_truth(ga4_host, meta, fake: FakeGA4, case: str, extra: dict[str, Any], keep) -> None:
    start, end = window(fake)
    truth = event_counts_by(fake, PROPERTY, lambda e: (e.page_path, e.name) if keep(e) else None, start, end)
    everything = event_counts_by(fake, PROPERTY, lambda e: (e.page_path, e.name), start, end)
    assert 0 < len(truth) < len(everything)
    async with ga4_host() as host:
        result = await host.call(
            "run_report", arguments(fake, ["eventCount"], ["pagePath", "eventName"], **extra), meta()
        )
    assert result.kind == "extraction", result.error
    assert {(r["pagePath"], r["eventName"]): r["eventCount"] for r in result.rows()} == truth


async def test_a_metric_filter_applies_after_aggregation(ga4_host, meta, fake: FakeGA4) -> None:
    start, end = window(fake)
    counts = event_counts_by(fake, PROPERTY, lambda e: (e.date.isoformat(),), start, end)
    low, high = sorted(counts.values())[len(counts) // 4], sorted(counts.values())[3 * len(counts) // 4]
    extra = {"metric_filter": [{"field": "events", "match": "between", "value": [low, high]}]}
    async with ga4_host() as host:
        result = await host.call("run_report", arguments(fake, ["eventCount"], ["date"], **extra), meta())
    assert {r["date"]: r["eventCount"] for r in result.rows()} == {
        day: n for (day,), n in counts.items() if low <= n <= high
    }
    assert "metric_filter: Metric 'events' mapped to 'eventCount'." in result.system_info["warnings"]


async def test_two_date_ranges_compare_with_a_date_range_column_and_totals_per_range(
    ga4_host, meta, fake: FakeGA4
) -> None:
    start, end = window(fake, days=14)
    before = (start - dt.timedelta(days=14), start - dt.timedelta(days=1))
    extra = {"compare_start_date": before[0].isoformat(), "compare_end_date": before[1].isoformat()}
    async with ga4_host() as host:
        request = arguments(fake, ["sessions"], ["sessionDefaultChannelGroup"], **extra)
        request.update(start_date=start.isoformat(), end_date=end.isoformat())
        result = await host.call("run_report", request, meta())
    assert result.kind == "extraction", result.error
    names = {f"{start}..{end}": (start, end), f"{before[0]}..{before[1]}": before}
    got = {(r["dateRange"], r["sessionDefaultChannelGroup"]): r["sessions"] for r in result.rows()}
    truth = {
        (name, channel): n
        for name, (a, b) in names.items()
        for (channel,), n in sessions_by(fake, PROPERTY, lambda e: (e.session.channel,), a, b).items()
    }
    assert got == truth
    totals = result.model_response["totals"]
    for name, (a, b) in names.items():
        assert totals[name] == {"sessions": sum(sessions_by(fake, PROPERTY, lambda e: 0, a, b).values())}
    assert result.model_response["dates"] == [str(start), str(end), str(before[0]), str(before[1])]
    assert result.system_info["arguments"]["compare_start_date"] == str(before[0])
    header = next(h for h in result.system_data["headers"] if h["name"] == "dateRange")
    assert all(name in header["description"] for name in names)


async def test_order_bys_sort_by_metric_or_dimension(ga4_host, meta, fake: FakeGA4) -> None:
    start, end = window(fake)
    truth = event_counts_by(fake, PROPERTY, lambda e: (e.page_path,), start, end)
    async with ga4_host() as host:
        by_path = await host.call(
            "run_report", arguments(fake, ["eventCount"], ["pagePath"], order_bys=[{"field": "page"}]), meta()
        )
        by_count = await host.call(
            "run_report",
            arguments(fake, ["eventCount"], ["pagePath"], order_bys=[{"field": "eventCount", "desc": False}]),
            meta(),
        )
        outside = await host.call(
            "run_report", arguments(fake, ["eventCount"], ["pagePath"], order_bys=[{"field": "sessions"}]), meta()
        )
    assert [r["pagePath"] for r in by_path.rows()] == sorted(path for (path,) in truth)
    assert [r["eventCount"] for r in by_count.rows()] == sorted(truth.values())
    assert outside.error_name == "ACP_INVALID_ARGUMENTS" and "not in the report" in outside.error["message"]


async def test_aliases_are_mapped_with_a_warning_and_unknown_names_list_the_closest(ga4_host, meta, fake) -> None:
    start, end = window(fake)
    async with ga4_host() as host:
        mapped = await host.call("run_report", arguments(fake, ["purchases", "conversions:purchase"], ["page"]), meta())
        unknown = await host.call("run_report", arguments(fake, ["sesions"], ["pagePth"]), meta())
        misplaced = await host.call("run_report", arguments(fake, ["date"], []), meta())
    warnings = mapped.system_info["warnings"]
    assert "Metric 'purchases' mapped to 'ecommercePurchases'." in warnings
    assert "Metric 'conversions:purchase' mapped to 'keyEvents:purchase'." in warnings
    assert "Dimension 'page' mapped to 'pagePath'." in warnings
    assert mapped.system_info["arguments"]["metrics"] == ["ecommercePurchases", "keyEvents:purchase"]
    purchases = event_counts_by(fake, PROPERTY, lambda e: (e.page_path,) if e.name == "purchase" else None, start, end)
    assert {r["pagePath"]: r["ecommercePurchases"] for r in mapped.rows() if r["ecommercePurchases"]} == {
        path: n for (path,), n in purchases.items()
    }
    assert unknown.error_name == "ACP_INVALID_ARGUMENTS"
    assert "Closest valid metrics: sessions" in unknown.error["message"]
    assert "Closest valid dimensions: pagePath" in unknown.error["message"]
    assert misplaced.error_name == "ACP_INVALID_ARGUMENTS" and "move it to dimensions" in misplaced.error["message"]


async def test_an_incompatible_combination_names_the_fields_and_suggests_others(ga4_host, meta, fake) -> None:
    async with ga4_host() as host:
        result = await host.call("run_report", arguments(fake, ["sessions"], ["defaultChannelGroup"]), meta())
    assert result.error_name == "ACP_INVALID_ARGUMENTS", result.error
    message = result.error["message"]
    assert "dimension 'defaultChannelGroup'" in message and "metric 'sessions'" in message
    assert "sessionDefaultChannelGroup" in message  # a compatible dimension close to the refused one
    assert set(result.error["data"]["incompatible"]) == {"defaultChannelGroup", "sessions"}


@pytest.mark.parametrize(
    ("knob", "value", "says"),
    [
        ("sampling", 0.25, "GA4 sampled this report: the figures are estimated from 25.0% of the events"),
        ("thresholded", True, "GA4 applied thresholding"),
        ("cardinality_limit", 3, "grouped into an '(other)' row"),
        ("revenue_restricted", True, "Metric 'totalRevenue' is restricted"),
        ("empty_reason", "The property has no data for these dates", "GA4 returned no rows: The property has no data"),
    ],
)
async def test_response_metadata_becomes_warnings(ga4_host, meta, fake: FakeGA4, knob, value, says) -> None:
    setattr(fake.knobs(PROPERTY), knob, value)
    async with ga4_host() as host:
        result = await host.call("run_report", arguments(fake, ["sessions", "totalRevenue"], ["pagePath"]), meta())
    assert result.kind == "extraction", result.error
    assert any(says in w for w in result.system_info["warnings"]), result.system_info["warnings"]


@pytest.mark.parametrize(("period", "refill"), [("day", "midnight Pacific Time"), ("hour", "within the hour")])
async def test_a_quota_running_low_is_a_warning(ga4_host, meta, fake: FakeGA4, period: str, refill: str) -> None:
    status = getattr(fake.quota(PROPERTY), f"tokens_per_{period}")
    status.consumed, status.remaining = 9_500, 500
    async with ga4_host() as host:
        result = await host.call("run_report", arguments(fake, ["sessions"], ["date"]), meta())
    key = "tokensPerDay" if period == "day" else "tokensPerHour"
    quota = result.system_info["source"]["property_quota"][key]
    assert quota["remaining"] < 0.1 * (quota["remaining"] + quota["consumed"])
    assert result.model_response["extra"]["quota"][key] == quota
    low = [w for w in result.system_info["warnings"] if "running low" in w]
    assert len(low) == 1 and f"tokens per {period}" in low[0] and refill in low[0]


async def test_limit_caps_the_extraction_and_says_so(ga4_host, meta, fake: FakeGA4) -> None:
    start, end = window(fake)
    truth = event_counts_by(fake, PROPERTY, lambda e: (e.date.isoformat(), e.name), start, end)
    async with ga4_host() as host:
        result = await host.call(
            "run_report",
            arguments(fake, ["eventCount"], ["date", "eventName"], limit=50),
            meta(config={"page_size": 20}),
        )
    assert result.model_response["total_rows"] == 50
    assert result.system_info["source"]["pages"] == 3
    assert any(f"the report has {len(truth):,}" in w for w in result.system_info["warnings"])
    assert result.model_response["totals"] == {"eventCount": sum(truth.values())}
