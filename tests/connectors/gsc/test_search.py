"""search_analytics against the fake Search Console, through the real client: paging, ground truth,
totals, headers, the default window, Pacific days, filters, freshness and the extraction cap."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterator

import pytest
from fakes.search_console import FakeSearchConsole
from gsc_support import BLOG, DOMAIN, by_page_truth, gsc_env, service_account, today

from connectors.gsc import CONNECTOR
from connectors.gsc.search import months_before

pytestmark = pytest.mark.anyio
EVERY_SPLIT = ["query", "page", "country", "device", "date"]
QUERY_PATH = "/webmasters/v3/sites/sc-domain%3Aexample.com/searchAnalytics/query"


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _pages(fake: FakeSearchConsole) -> list[tuple[int, int]]:
    """(startRow, rowLimit) of each paged request (the freshness probe asks for one small page, unpaged)."""
    return [
        (r.json["startRow"], r.json["rowLimit"]) for r in fake.requests if r.path == QUERY_PATH and "startRow" in r.json
    ]


@pytest.fixture(scope="module")
def big_fake() -> Iterator[FakeSearchConsole]:
    """More traffic a day than the module's fake: split every way, four months make several API pages."""
    with FakeSearchConsole(today=today(), facts_per_day=1100) as server:
        yield server


async def test_a_result_of_several_api_pages_arrives_whole_and_equals_the_facts(
    big_fake: FakeSearchConsole, in_process, runtime_dirs
) -> None:
    start, end = big_fake.first_date, big_fake.last_final_date(DOMAIN)
    truth = by_page_truth(big_fake, DOMAIN, EVERY_SPLIT, start, end)
    meta = {"credentials": service_account(big_fake), "autocontext_delivered": True}
    arguments = {"resource_id": DOMAIN, "dimensions": EVERY_SPLIT, "start_date": str(start), "end_date": str(end)}
    async with in_process(CONNECTOR, env={**runtime_dirs, **gsc_env(big_fake)}) as host:
        result = await host.call("search_analytics", arguments, meta)
        assert result.kind == "extraction", result.error
        rows = result.rows()

    assert len(truth) > 2 * 25_000  # several full pages, then a short one
    pages = _pages(big_fake)
    full, last = divmod(len(truth), 25_000)
    # Every page at the API's maximum, until an answer without rows (after the short one).
    assert pages == [(25_000 * n, 25_000) for n in range(full + 1)] + [(len(truth), 25_000)]
    assert result.system_info["source"]["pages"] == full + 2 and last > 0
    assert result.model_response["total_rows"] == len(rows) == len(truth)
    assert result.system_data["format"] == "file"  # past inline_max_bytes: a table_uri file

    got = {tuple(row[d] for d in EVERY_SPLIT): row for row in rows}
    assert got.keys() == truth.keys()
    for key, expected in truth.items():
        row = got[key]
        assert (row["clicks"], row["impressions"]) == (expected.clicks, expected.impressions), key
        assert _close(row["ctr"], expected.ctr) and _close(row["position"], expected.position), key

    totals = result.model_response["totals"]
    clicks = sum(e.clicks for e in truth.values())
    impressions = sum(e.impressions for e in truth.values())
    position = sum(e.position_sum for e in truth.values()) / impressions
    assert (totals["clicks"], totals["impressions"]) == (clicks, impressions)
    assert totals["ctr"] == round(clicks / impressions, 4) and totals["position"] == round(position, 2)
    names = {(row["country"], row["country_name"]) for row in rows}
    assert {("esp", "Spain"), ("usa", "United States"), ("mex", "Mexico")} <= names


async def test_headers_roles_and_the_ctr_fraction_follow_15_2(gsc_host, meta) -> None:
    async with gsc_host() as host:
        result = await host.call("search_analytics", {"resource_id": DOMAIN, "dimensions": ["country", "date"]}, meta())
    headers = {h["name"]: h for h in result.system_data["headers"]}
    assert list(headers) == ["country", "country_name", "date", "clicks", "impressions", "ctr", "position"]
    assert headers["country"]["role"] == "dimension" and headers["date"]["type"] == "date"
    assert headers["clicks"] == {"name": "clicks", "type": "integer", "role": "metric"}
    assert headers["ctr"] == {"name": "ctr", "type": "number", "role": "metric", "description": "Fraction 0-1"}
    assert headers["position"]["description"] == "Average position weighted by impressions"
    assert all(0 <= row["ctr"] <= 1 for row in result.rows())
    assert result.model_response["columns"] == list(headers)


async def test_filters_select_what_the_facts_say_and_group_the_same(gsc_host, meta, fake: FakeSearchConsole) -> None:
    end = fake.last_final_date(DOMAIN)
    start = end - dt.timedelta(days=27)
    filters = [
        {"dimension": "page", "operator": "contains", "expression": "/BLOG/"},  # contains ignores case
        {"dimension": "query", "operator": "includingRegex", "expression": "^(ga4|gtm|seo)"},
        {"dimension": "country", "operator": "notEquals", "expression": "usa"},
        {"dimension": "query", "operator": "notContains", "expression": "dashboard"},
    ]
    arguments = {
        "resource_id": DOMAIN,
        "dimensions": ["query", "country"],
        "filters": filters,
        "start_date": str(start),
        "end_date": str(end),
    }
    async with gsc_host() as host:
        result = await host.call("search_analytics", arguments, meta())
    truth = by_page_truth(fake, DOMAIN, ["query", "country"], start, end, filters)
    got = {(row["query"], row["country"]): (row["clicks"], row["impressions"]) for row in result.rows()}
    assert truth and got == {key: (e.clicks, e.impressions) for key, e in truth.items()}
    assert (
        'Filter: page contains "/BLOG/" and query includingRegex "^(ga4|gtm|seo)"'
        in (result.model_response["description"])
    )
    assert result.system_info["source"]["response_aggregation_type"] == "byPage"
    assert any("anonymized" in w for w in result.model_response["warnings"])  # split by query: not the property's


async def test_a_url_prefix_property_sees_only_its_own_pages(gsc_host, meta, fake: FakeSearchConsole) -> None:
    end = fake.last_final_date(BLOG)
    start = end - dt.timedelta(days=6)
    arguments = {"resource_id": BLOG, "dimensions": ["page"], "start_date": str(start), "end_date": str(end)}
    async with gsc_host() as host:
        rows = (await host.call("search_analytics", arguments, meta())).rows()
    truth = by_page_truth(fake, BLOG, ["page"], start, end)
    assert {row["page"]: row["clicks"] for row in rows} == {key[0]: e.clicks for key, e in truth.items()}
    assert all(row["page"].startswith(BLOG) for row in rows)


async def test_the_default_window_ends_on_the_last_reliable_day(gsc_host, meta, fake: FakeSearchConsole) -> None:
    reliable = fake.last_final_date(DOMAIN)
    async with gsc_host() as host:
        final = await host.call("search_analytics", {"resource_id": DOMAIN, "dimensions": ["date"]}, meta())
        fresh = await host.call(
            "search_analytics", {"resource_id": DOMAIN, "dimensions": ["date"], "data_state": "all"}, meta()
        )
        hourly = await host.call(
            "search_analytics", {"resource_id": DOMAIN, "dimensions": ["hour"], "data_state": "hourly_all"}, meta()
        )
        started = await host.call(
            "search_analytics", {"resource_id": DOMAIN, "dimensions": ["date"], "start_date": "20daysAgo"}, meta()
        )
        reversed_ = await host.call(
            "search_analytics", {"resource_id": DOMAIN, "start_date": "today"}, meta()
        )  # after the default end
    # spec 15.2: system_info.arguments carries the dates the server chose, so the host can repeat the call.
    arguments = final.system_info["arguments"]
    assert (arguments["start_date"], arguments["end_date"]) == (str(months_before(reliable, 1)), str(reliable))
    assert arguments["search_type"] == "web" and arguments["data_state"] == "final"
    assert final.model_response["dates"] == [str(months_before(reliable, 1)), str(reliable)]
    assert [row["date"] for row in final.rows()][-1] == str(reliable)
    assert final.model_response["extra"]["last_reliable_date"] == str(reliable)
    now = today()
    assert fresh.system_info["arguments"]["end_date"] == str(now)  # fresh data: up to today
    assert fresh.system_info["arguments"]["start_date"] == str(months_before(now, 1))
    assert hourly.system_info["arguments"]["start_date"] == str(now - dt.timedelta(days=2))
    assert started.system_info["arguments"] == {
        **started.system_info["arguments"],
        "start_date": str(now - dt.timedelta(days=20)),  # NdaysAgo in Pacific days
        "end_date": str(reliable),
    }
    assert reversed_.error_name == "ACP_INVALID_ARGUMENTS" and str(reliable) in reversed_.error["message"]


async def test_the_freshness_warning_says_why_recent_days_are_empty(gsc_host, meta, fake: FakeSearchConsole) -> None:
    reliable = fake.last_final_date(DOMAIN)
    now = today()
    recent = {"resource_id": DOMAIN, "dimensions": ["date"], "start_date": "6daysAgo", "end_date": "today"}
    old_and_empty = {
        "resource_id": DOMAIN,
        "filters": [{"dimension": "query", "operator": "equals", "expression": "no such query at all"}],
        "start_date": str(reliable - dt.timedelta(days=30)),
        "end_date": str(reliable - dt.timedelta(days=20)),
    }
    async with gsc_host() as host:
        final = await host.call("search_analytics", recent, meta())
        fresh = await host.call("search_analytics", {**recent, "data_state": "all"}, meta())
        empty = await host.call("search_analytics", old_and_empty, meta())
    assert [row["date"] for row in final.rows()] == [str(now - dt.timedelta(days=d)) for d in range(6, 2, -1)]
    (note,) = [w for w in final.model_response["warnings"] if "final data ends" in w]
    assert str(reliable) in note and "data_state" in note and "missing, not zero" in note
    assert [row["date"] for row in fresh.rows()][-1] == str(now)
    assert any("not final yet" in w and str(reliable) in w for w in fresh.model_response["warnings"])
    assert empty.model_response["total_rows"] == 0
    assert any("no search traffic matched" in w for w in empty.model_response["warnings"])


async def test_hours_come_with_hourly_all_as_utc_instants(gsc_host, meta, fake: FakeSearchConsole) -> None:
    async with gsc_host() as host:
        refused = await host.call("search_analytics", {"resource_id": DOMAIN, "dimensions": ["hour"]}, meta())
        start = today() - dt.timedelta(days=1)
        arguments = {
            "resource_id": DOMAIN,
            "dimensions": ["hour"],
            "data_state": "hourly_all",
            "start_date": str(start),
        }
        hourly = await host.call("search_analytics", arguments, meta())
    assert refused.error_name == "ACP_INVALID_ARGUMENTS" and "hourly_all" in refused.error["message"]
    assert {h["name"]: h["type"] for h in hourly.system_data["headers"]}["hour"] == "datetime"
    truth: dict[str, int] = {}
    for fact in fake.facts(DOMAIN):
        if fact.search_type == "web" and fact.date >= start:
            local = dt.datetime(fact.date.year, fact.date.month, fact.date.day, fact.hour, tzinfo=_pacific())
            key = local.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            truth[key] = truth.get(key, 0) + fact.clicks
    assert {row["hour"]: row["clicks"] for row in hourly.rows()} == truth


def _pacific() -> dt.tzinfo:
    from zoneinfo import ZoneInfo

    return ZoneInfo("America/Los_Angeles")


async def test_the_extraction_cap_stops_paging_and_the_totals_say_so(
    big_fake: FakeSearchConsole, in_process, runtime_dirs
) -> None:
    arguments = {"resource_id": DOMAIN, "dimensions": EVERY_SPLIT, "start_date": "100daysAgo", "end_date": "5daysAgo"}
    meta = {"credentials": service_account(big_fake), "autocontext_delivered": True, "config": {"max_rows": 30_000}}
    before = len(_pages(big_fake))
    async with in_process(CONNECTOR, env={**runtime_dirs, **gsc_env(big_fake)}) as host:
        result = await host.call("search_analytics", arguments, meta)
    rows = result.rows()
    assert len(rows) == result.model_response["total_rows"] == 30_000
    assert _pages(big_fake)[before:] == [(0, 25_000), (25_000, 5_001)]  # one row past the cap, then no more pages
    warnings = result.model_response["warnings"]
    assert any("max_rows" in w and "30000" in w for w in warnings)
    totals = result.model_response["totals"]
    assert totals["clicks"] == sum(row["clicks"] for row in rows)  # the rows kept, not the one past the cap
    assert totals["impressions"] == sum(row["impressions"] for row in rows)


async def test_countries_by_name_devices_and_the_property_total(gsc_host, meta, fake: FakeSearchConsole) -> None:
    window = {"start_date": "30daysAgo", "end_date": "4daysAgo"}
    spain = [{"dimension": "country", "operator": "equals", "expression": "Spain"}]
    async with gsc_host() as host:
        by_name = await host.call(
            "search_analytics", {"resource_id": DOMAIN, "dimensions": ["country"], "filters": spain, **window}, meta()
        )
        total = await host.call("search_analytics", {"resource_id": DOMAIN, **window}, meta())
        devices = await host.call(
            "search_analytics", {"resource_id": DOMAIN, "dimensions": ["device"], **window}, meta()
        )
    assert [(r["country"], r["country_name"]) for r in by_name.rows()] == [("esp", "Spain")]
    assert any("read as the code 'esp'" in w for w in by_name.model_response["warnings"])
    assert by_name.system_info["arguments"]["filters"][0]["expression"] == "esp"
    (row,) = total.rows()  # no dimensions: one row, the property's totals, and no warning that they differ
    assert row["clicks"] == total.model_response["totals"]["clicks"]
    assert not any("Totals are computed" in w for w in total.model_response.get("warnings", []))
    assert sum(r["clicks"] for r in devices.rows()) == row["clicks"]
    assert {r["device"] for r in devices.rows()} <= {"DESKTOP", "MOBILE", "TABLET"}


async def test_discover_has_no_position_and_refuses_queries(gsc_host, meta) -> None:
    window = {"start_date": "30daysAgo", "end_date": "4daysAgo"}
    async with gsc_host() as host:
        pages = await host.call(
            "search_analytics",
            {"resource_id": DOMAIN, "dimensions": ["page"], "search_type": "discover", **window},
            meta(),
        )
        queries = await host.call(
            "search_analytics",
            {"resource_id": DOMAIN, "dimensions": ["query"], "search_type": "discover", **window},
            meta(),
        )
        by_property = await host.call(
            "search_analytics",
            {"resource_id": DOMAIN, "dimensions": ["page"], "aggregation_type": "byProperty"},
            meta(),
        )
    rows = pages.rows()
    assert rows and all(row["position"] is None for row in rows)
    assert pages.model_response["totals"]["position"] is None and pages.model_response["totals"]["clicks"] > 0
    assert queries.error_name == "ACP_INVALID_ARGUMENTS" and "Fix the arguments" in queries.error["message"]
    assert by_property.error_name == "ACP_INVALID_ARGUMENTS"
