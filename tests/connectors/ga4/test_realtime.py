"""run_realtime_report against the fake GA4: rows and totals equal the fake's events of the last 30 minutes,
per minute range too; names outside the realtime list are refused with the closest valid ones."""

from __future__ import annotations

from collections.abc import Callable, Hashable

import pytest
from fakes.ga4 import FakeGA4
from fakes.ga4_export import Event
from ga4_support import PROPERTY

pytestmark = pytest.mark.anyio


def _recent(fake: FakeGA4) -> list[tuple[int, Event]]:
    """(minutes ago, event) of the property's events in the last 30 minutes of the fake's clock."""
    now_us = int(fake.now.timestamp() * 1_000_000)
    out = []
    for event in fake.events(PROPERTY):
        ago = (now_us - event.timestamp_us) // 60_000_000
        if 0 <= ago <= 29:
            out.append((ago, event))
    return out


def _truth(fake: FakeGA4, key: Callable[[int, Event], Hashable | None]) -> dict[Hashable, tuple[int, int]]:
    """(active users, events) per key."""
    users: dict[Hashable, set[str]] = {}
    events: dict[Hashable, int] = {}
    for ago, event in _recent(fake):
        row = key(ago, event)
        if row is None:
            continue
        users.setdefault(row, set()).add(event.user)
        events[row] = events.get(row, 0) + 1
    return {row: (len(users[row]), events[row]) for row in events}


async def test_rows_equal_the_last_30_minutes(fake: FakeGA4, ga4_host, meta) -> None:
    truth = _truth(fake, lambda ago, e: (e.visitor.country, e.visitor.device_category))
    assert len(truth) > 3
    arguments = {
        "resource_id": PROPERTY,
        "dimensions": ["country", "deviceCategory"],
        "metrics": ["activeUsers", "eventCount"],
    }
    async with ga4_host() as host:
        result = await host.call("run_realtime_report", arguments, meta())
    assert result.kind == "extraction", result.error
    rows = result.rows()
    assert {(r["country"], r["deviceCategory"]): (r["activeUsers"], r["eventCount"]) for r in rows} == truth
    users = [row["activeUsers"] for row in rows]
    assert users == sorted(users, reverse=True)  # by the first metric, descending
    recent = _recent(fake)
    assert result.model_response["totals"] == {
        "activeUsers": len({e.user for _, e in recent}),
        "eventCount": len(recent),
    }
    assert result.model_response["dates"] == [fake.today(PROPERTY).isoformat()]
    assert result.system_info["source"]["api"] == "analyticsdata.v1beta.runRealtimeReport"
    assert "last 30 minutes" in result.model_response["description"]


async def test_minute_ranges_and_a_filter(fake: FakeGA4, ga4_host, meta) -> None:
    truth = _truth(
        fake,
        lambda ago, e: (e.page_title, "earlier" if ago >= 15 else "latest") if e.name == "page_view" else None,
    )
    arguments = {
        "resource_id": PROPERTY,
        "dimensions": ["unifiedScreenName"],
        "metrics": ["activeUsers", "screenPageViews"],
        "minute_ranges": [
            {"start_minutes_ago": 29, "end_minutes_ago": 15, "name": "earlier"},
            {"start_minutes_ago": 14, "end_minutes_ago": 0, "name": "latest"},
        ],
        "dimension_filter": [{"field": "eventname", "match": "exact", "value": "page_view"}],
    }
    async with ga4_host() as host:
        result = await host.call("run_realtime_report", arguments, meta())
    assert result.kind == "extraction", result.error
    rows = {(r["unifiedScreenName"], r["dateRange"]): (r["activeUsers"], r["screenPageViews"]) for r in result.rows()}
    assert rows == truth
    totals = result.model_response["totals"]
    assert set(totals) == {"earlier", "latest"}
    latest = [key for key in truth if key[1] == "latest"]
    assert totals["latest"]["screenPageViews"] == sum(truth[key][1] for key in latest)
    assert "dimension_filter: Dimension 'eventname' mapped to 'eventName'." in result.model_response["warnings"]


async def test_names_outside_the_realtime_list_are_refused(ga4_host, meta) -> None:
    async with ga4_host() as host:
        metric = await host.call("run_realtime_report", {"resource_id": PROPERTY, "metrics": ["sessions"]}, meta())
        dimension = await host.call(
            "run_realtime_report", {"resource_id": PROPERTY, "dimensions": ["pagePath"]}, meta()
        )
        backwards = await host.call(
            "run_realtime_report",
            {"resource_id": PROPERTY, "minute_ranges": [{"start_minutes_ago": 3, "end_minutes_ago": 10}]},
            meta(),
        )
    assert metric.error_name == "ACP_INVALID_ARGUMENTS" and "'sessions'" in metric.error["message"]
    assert dimension.error_name == "ACP_INVALID_ARGUMENTS" and "'pagePath'" in dimension.error["message"]
    assert backwards.error_name == "ACP_INVALID_ARGUMENTS" and "minute_ranges[0]" in backwards.error["message"]
