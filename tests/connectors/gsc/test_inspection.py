"""inspect_url, inspect_urls and list_sitemaps against the fake Search Console, and the per-minute quota."""

from __future__ import annotations

import threading

import pytest
from fakes.search_console import FakeSearchConsole
from gsc_support import DOMAIN, PREFIX

from connectors.gsc.inspection import MinuteQuota

pytestmark = pytest.mark.anyio
INSPECT_PATH = "/v1/urlInspection/index:inspect"


def _inspected(fake: FakeSearchConsole) -> int:
    return sum(1 for r in fake.requests if r.path.startswith("/v1/urlInspection"))


async def test_inspect_url_gives_index_status_canonicals_and_amp(gsc_host, meta, fake: FakeSearchConsole) -> None:
    amp_page = next(u for u, r in fake.inspections.items() if "ampResult" in r and u.startswith(PREFIX))
    rich_page = next(u for u, r in fake.inspections.items() if "richResultsResult" in r and u.startswith(PREFIX))
    async with gsc_host() as host:
        amp = await host.call("inspect_url", {"resource_id": DOMAIN, "url": amp_page}, meta())
        rich = await host.call("inspect_url", {"resource_id": PREFIX, "url": rich_page}, meta())
    assert amp.kind == "info", amp.error
    status = fake.inspections[amp_page]["indexStatusResult"]
    data = amp.model_response
    assert (data["url"], data["verdict"], data["coverage_state"]) == (
        amp_page,
        status["verdict"],
        status["coverageState"],
    )
    assert data["google_canonical"] == status.get("googleCanonical") and data["sitemaps"] == status.get("sitemap", [])
    assert data["amp"]["amp_url"] == fake.inspections[amp_page]["ampResult"]["ampUrl"]
    assert data["inspection_link"].startswith("https://search.google.com/search-console/inspect")
    assert "mobile_usability" not in data and "mobileUsabilityResult" not in str(data)  # retired by Google
    detected = fake.inspections[rich_page]["richResultsResult"]["detectedItems"]
    assert [d["type"] for d in rich.model_response["rich_results"]["detected"]] == [
        d["richResultType"] for d in detected
    ]


async def test_a_url_outside_the_property_is_refused_before_any_request(gsc_host, meta, fake) -> None:
    async with gsc_host() as host:
        before = _inspected(fake)
        result = await host.call("inspect_url", {"resource_id": PREFIX, "url": "https://docs.example.com/x"}, meta())
        relative = await host.call("inspect_url", {"resource_id": DOMAIN, "url": "/blog/"}, meta())
    assert result.error_name == "ACP_INVALID_ARGUMENTS" and _inspected(fake) == before
    assert PREFIX in result.error["message"] and "resource_id" in result.error["message"]  # the next step
    assert relative.error_name == "ACP_INVALID_ARGUMENTS"


async def test_list_sitemaps_counts_and_follows_a_sitemap_index(gsc_host, meta, fake: FakeSearchConsole) -> None:
    async with gsc_host() as host:
        domain = await host.call("list_sitemaps", {"resource_id": DOMAIN}, meta())
        (index,) = (await host.call("list_sitemaps", {"resource_id": PREFIX}, meta())).model_response["sitemaps"]
        children = await host.call("list_sitemaps", {"resource_id": PREFIX, "sitemap_index": index["path"]}, meta())
    expected = fake.sitemaps[DOMAIN]
    data = domain.model_response
    assert [s["path"] for s in data["sitemaps"]] == [s["path"] for s in expected]
    assert data["totals"]["submitted"] == sum(int(c["submitted"]) for s in expected for c in s["contents"])
    assert data["totals"]["warnings"] == sum(int(s["warnings"]) for s in expected)
    assert all(isinstance(s["errors"], int) for s in data["sitemaps"])  # int64 strings become numbers
    assert index["is_index"] is True
    listed = children.model_response["sitemaps"]
    assert [s["path"] for s in listed] == [s["path"] for s in fake.sitemap_indexes[index["path"]]]


async def test_inspect_urls_gives_one_row_per_url_and_errors_in_their_rows(gsc_host, meta, fake) -> None:
    pages = fake.pages(DOMAIN)[:10]
    urls = [*pages[:5], "https://elsewhere.example.org/page", *pages[5:]]
    fake.inspection_qpd = 8  # the property's daily quota runs out after eight URLs
    try:
        progress: list[dict] = []
        async with gsc_host() as host:
            result = await host.call("inspect_urls", {"resource_id": DOMAIN, "urls": urls}, meta(), progress=progress)
    finally:
        fake.inspection_qpd = 2_000
    assert result.kind == "extraction", result.error
    rows = result.rows()
    assert [row["url"] for row in rows] == urls  # the order asked, whatever order they finished in
    outside = rows[5]
    assert "not a URL of the property" in outside["error"] and outside["verdict"] is None
    inspected = [row for row in rows if row["error"] is None]
    refused = [row for row in rows if row["error"] is not None and row is not outside]
    assert len(inspected) == 8 and len(refused) == 2
    assert all("Wait a minute" in row["error"] for row in refused)  # the quota: when to try again
    for row in inspected:
        status = fake.inspections[row["url"]]["indexStatusResult"]
        assert (row["verdict"], row["coverage_state"]) == (status["verdict"], status["coverageState"])
    assert result.model_response["warnings"] == ["3 of 11 URLs could not be inspected; see their error column."]
    assert progress and progress[-1]["progress"] == progress[-1]["total"] == 11
    assert "11 of 11 URLs inspected" in progress[-1]["message"]
    headers = {h["name"]: h["type"] for h in result.system_data["headers"]}
    assert headers["last_crawl_time"] == "datetime" and headers["canonical_matches"] == "boolean"


def test_the_minute_quota_waits_for_the_oldest_request_to_leave_the_window() -> None:
    now = [100.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    quota = MinuteQuota(3, clock=lambda: now[0], sleep=sleep)
    for _ in range(3):
        quota.acquire()
    assert slept == []
    now[0] += 10
    quota.acquire()  # the first one leaves the window at 160: 50 s of waiting, in steps of at most 1 s
    assert round(sum(slept), 6) == 50 and max(slept) <= 1.0 and now[0] == 160.0


def test_a_cancelled_call_stops_waiting_for_the_quota() -> None:
    from shared import UpstreamError

    quota = MinuteQuota(1, clock=lambda: 0.0, sleep=lambda s: None)
    quota.acquire()
    cancelled = threading.Event()
    cancelled.set()
    with pytest.raises(UpstreamError, match="cancelled"):
        quota.acquire(cancelled)
