"""run_report_by_regex_cluster against the fake GA4: clusters, Other and by_date equal the truth counted from
the fake's events (additive metrics summed, users and sessions asked per cluster), over several pages; a bad
pattern names its cluster."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Hashable
from typing import Any

import pytest
from fakes.ga4 import FakeGA4
from fakes.ga4_export import Event
from ga4_support import PROPERTY, event_counts_by, events_between, sessions_by, users_by

from connectors.ga4.clusters import additive

pytestmark = pytest.mark.anyio
CLUSTERS = [
    {"name": "Blog", "pattern": "^/blog/"},
    {"name": "Shop", "pattern": "^/(shoes|bags|cart|checkout)"},
    {"name": "Shoes", "pattern": "shoes"},  # every shoes page went to Shop first: it matches none
]
METRICS = ["screenPageViews", "eventCount", "totalUsers", "sessions"]


def _window(fake: FakeGA4, days: int = 14) -> tuple[dt.date, dt.date]:
    today = fake.today(PROPERTY)
    return today - dt.timedelta(days=days), today - dt.timedelta(days=1)


def _cluster(path: str) -> str:
    """The first cluster whose pattern the path matches, in plain Python."""
    return next((c["name"] for c in CLUSTERS if re.search(c["pattern"], path)), "Other")


def _truth(
    fake: FakeGA4, key: Callable[[Event], Hashable], start: dt.date, end: dt.date
) -> dict[Hashable, dict[str, Any]]:
    views = event_counts_by(fake, PROPERTY, lambda e: key(e) if e.name == "page_view" else None, start, end)
    events = event_counts_by(fake, PROPERTY, key, start, end)
    users = users_by(fake, PROPERTY, key, start, end)
    sessions = sessions_by(fake, PROPERTY, key, start, end)
    paths: dict[Hashable, set[str]] = {}
    for event in events_between(fake, PROPERTY, start, end):
        paths.setdefault(key(event), set()).add(event.page_path)
    return {
        row: {
            "screenPageViews": views.get(row, 0),
            "eventCount": count,
            "totalUsers": users[row],
            "sessions": sessions[row],
            "distinct_values": len(paths[row]),
        }
        for row, count in events.items()
    }


async def test_clusters_and_other_equal_the_events(fake: FakeGA4, ga4_host, meta) -> None:
    start, end = _window(fake)
    truth = _truth(fake, lambda e: _cluster(e.page_path), start, end)
    arguments = {
        "resource_id": PROPERTY,
        "dimension": "pagePath",
        "clusters": CLUSTERS,
        "metrics": METRICS,
        "start_date": start.isoformat(),
        "end_date": end.isoformat(),
    }
    async with ga4_host() as host:
        result = await host.call("run_report_by_regex_cluster", arguments, meta())
    assert result.kind == "extraction", result.error
    rows = {row["cluster"]: row for row in result.rows()}
    assert list(rows) == ["Blog", "Shop", "Shoes", "Other"]  # the given order, Other last, the empty one too
    for name, expected in truth.items():
        assert {k: rows[name][k] for k in expected} == expected, name
    assert rows["Shoes"]["distinct_values"] == 0 and rows["Shoes"]["eventCount"] == 0
    # Users and sessions over pagePath are asked per cluster: summing the paths would count people twice.
    assert result.model_response["extra"]["asked_per_cluster"] == ["totalUsers", "sessions"]
    by_path = users_by(fake, PROPERTY, lambda e: e.page_path, start, end)
    blog_paths = [p for p in by_path if _cluster(p) == "Blog"]
    assert sum(by_path[p] for p in blog_paths) > rows["Blog"]["totalUsers"]  # the sum would have been wrong

    totals = result.model_response["totals"]
    every_event = events_between(fake, PROPERTY, start, end)
    assert totals["eventCount"] == len(every_event)
    assert totals["totalUsers"] == len({e.user for e in every_event})
    assert totals["distinct_values"] == len({e.page_path for e in every_event})
    warnings = " ".join(result.model_response["warnings"])
    assert "Cluster 'Shoes' matched no pagePath value" in warnings
    other_share = truth["Other"]["screenPageViews"] / sum(t["screenPageViews"] for t in truth.values())
    assert other_share > 0.2 and "Other holds" in warnings and "/contact" in warnings


async def test_by_date_over_several_pages_equals_the_events(fake: FakeGA4, ga4_host, meta) -> None:
    start, end = _window(fake, days=5)
    truth = _truth(fake, lambda e: (_cluster(e.page_path), e.date.isoformat()), start, end)
    arguments = {
        "resource_id": PROPERTY,
        "dimension": "pagePath",
        "clusters": CLUSTERS,
        "metrics": METRICS,
        "by_date": True,
        "start_date": start.isoformat(),
        "end_date": end.isoformat(),
    }
    async with ga4_host() as host:
        result = await host.call("run_report_by_regex_cluster", arguments, meta(config={"page_size": 7}))
    assert result.kind == "extraction", result.error
    rows = {(row["cluster"], row["date"]): row for row in result.rows()}
    assert rows.keys() == truth.keys()
    for key, expected in truth.items():
        assert {k: rows[key][k] for k in expected} == expected, key
    values = len({(e.page_path, e.date) for e in events_between(fake, PROPERTY, start, end)})
    pages = -(-values // 7)
    # Every page of the full list, then one batch of per-cluster reports (three clusters have values).
    assert result.system_info["source"]["pages"] == pages + 1 > 2


async def test_a_session_scoped_dimension_sums_sessions(fake: FakeGA4, ga4_host, meta) -> None:
    start, end = _window(fake, days=7)
    truth = sessions_by(fake, PROPERTY, lambda e: _cluster(e.session.landing_page), start, end)
    arguments = {
        "resource_id": PROPERTY,
        "dimension": "landingPage",
        "clusters": CLUSTERS,
        "metrics": ["sessions"],
        "start_date": start.isoformat(),
        "end_date": end.isoformat(),
    }
    async with ga4_host() as host:
        result = await host.call("run_report_by_regex_cluster", arguments, meta())
    assert result.kind == "extraction", result.error
    assert result.model_response["extra"]["asked_per_cluster"] == []  # one landing page per session: summed
    assert {row["cluster"]: row["sessions"] for row in result.rows() if row["sessions"]} == truth


async def test_a_bad_pattern_names_its_cluster(ga4_host, meta) -> None:
    clusters = [{"name": "Blog", "pattern": "^/blog/"}, {"name": "Broken shop", "pattern": "^/(shoes|bags"}]
    arguments = {"resource_id": PROPERTY, "dimension": "pagePath", "clusters": clusters, "metrics": ["sessions"]}
    async with ga4_host() as host:
        result = await host.call("run_report_by_regex_cluster", arguments, meta())
        reserved = [{"name": "other", "pattern": "x"}]
        taken = await host.call("run_report_by_regex_cluster", {**arguments, "clusters": reserved}, meta())
        fine = {**arguments, "clusters": clusters[:1], "dimension": "pagePth"}
        unknown = await host.call("run_report_by_regex_cluster", fine, meta())
    assert result.error_name == "ACP_INVALID_ARGUMENTS"
    assert "Cluster 'Broken shop'" in result.error["message"] and "^/(shoes|bags" in result.error["message"]
    assert taken.error_name == "ACP_INVALID_ARGUMENTS" and "reserved" in taken.error["message"]
    assert unknown.error_name == "ACP_INVALID_ARGUMENTS" and "pagePath" in unknown.error["message"]


@pytest.mark.parametrize(
    ("metric", "dimension", "summed"),
    [
        ("eventCount", "pagePath", True),
        ("keyEvents:purchase", "pagePath", True),
        ("userEngagementDuration", "eventName", True),
        ("totalRevenue", "pagePath", True),
        ("sessions", "landingPage", True),
        ("sessions", "pagePath", False),
        ("engagedSessions", "eventName", False),
        ("totalUsers", "sessionSource", False),
        ("sessionKeyEventRate", "landingPage", False),
        ("averageSessionDuration", "landingPage", False),
        ("screenPageViewsPerSession", "pagePath", False),
        ("calcMetric:revenue_per_user", "pagePath", False),
    ],
)
def test_which_metrics_are_summed(metric: str, dimension: str, summed: bool) -> None:
    assert additive(metric, dimension) is summed
