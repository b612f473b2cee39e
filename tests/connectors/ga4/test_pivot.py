"""run_pivot_report against the fake GA4: the wide table (one row per row value, one column per column value and
metric) equals the truth counted from the fake's events, over one page and over several; columns_limit keeps
the top values and says how many are left out."""

from __future__ import annotations

import datetime as dt

import pytest
from fakes.ga4 import FakeGA4
from ga4_support import PROPERTY, event_counts_by, events_between, sessions_by

pytestmark = pytest.mark.anyio
DEVICES = ("desktop", "mobile", "tablet")


def _window(fake: FakeGA4, days: int) -> tuple[dt.date, dt.date]:
    today = fake.today(PROPERTY)
    return today - dt.timedelta(days=days), today - dt.timedelta(days=1)


def _wide_truth(fake: FakeGA4, start: dt.date, end: dt.date) -> dict[str, dict[str, int]]:
    """{date: {"<device> · sessions": n, "<device> · eventCount": n}} with 0 where a device has no event."""
    key = lambda e: (e.date.isoformat(), e.visitor.device_category)  # noqa: E731
    sessions = sessions_by(fake, PROPERTY, key, start, end)
    events = event_counts_by(fake, PROPERTY, key, start, end)
    days = {day for day, _ in events}
    return {
        day: {
            **{f"{d} · sessions": sessions.get((day, d), 0) for d in DEVICES},
            **{f"{d} · eventCount": events.get((day, d), 0) for d in DEVICES},
        }
        for day in days
    }


def _arguments(start: dt.date, end: dt.date, **extra: object) -> dict[str, object]:
    return {
        "resource_id": PROPERTY,
        "rows": ["date"],
        "columns": ["deviceCategory"],
        "metrics": ["sessions", "eventCount"],
        "start_date": start.isoformat(),
        "end_date": end.isoformat(),
        **extra,
    }


async def test_the_wide_table_equals_the_events(fake: FakeGA4, ga4_host, meta) -> None:
    start, end = _window(fake, 10)
    truth = _wide_truth(fake, start, end)
    async with ga4_host() as host:
        result = await host.call("run_pivot_report", _arguments(start, end, rows_order="value"), meta())
    assert result.kind == "extraction", result.error
    rows = result.rows()
    assert [row["date"] for row in rows] == sorted(truth)  # rows_order value: chronological
    assert {row["date"]: {k: v for k, v in row.items() if k != "date"} for row in rows} == truth
    headers = {h["name"]: h for h in result.system_data["headers"]}
    assert headers["date"] == {**headers["date"], "type": "date", "role": "dimension"}
    assert headers["mobile · sessions"]["type"] == "integer" and headers["mobile · sessions"]["role"] == "metric"
    assert "deviceCategory = mobile" in headers["mobile · sessions"]["description"]
    # Column totals from GA4: sessions are distinct over the whole window, not the sum of the days.
    every = events_between(fake, PROPERTY, start, end)
    totals = result.model_response["totals"]
    for device in DEVICES:
        own = [e for e in every if e.visitor.device_category == device]
        assert totals[f"{device} · sessions"] == len({e.session.key for e in own})
        assert totals[f"{device} · eventCount"] == len(own)
    assert "'<value> · <metric>'" in result.model_response["description"]


async def test_rows_over_several_pages_arrive_whole(fake: FakeGA4, ga4_host, meta) -> None:
    start, end = _window(fake, 10)
    truth = _wide_truth(fake, start, end)
    async with ga4_host() as host:
        result = await host.call("run_pivot_report", _arguments(start, end), meta(config={"page_size": 3}))
    assert result.kind == "extraction", result.error
    rows = result.rows()
    assert {row["date"]: {k: v for k, v in row.items() if k != "date"} for row in rows} == truth
    sessions = [sum(row[f"{d} · sessions"] for d in DEVICES) for row in rows]
    assert result.system_info["source"]["pages"] == -(-len(truth) // 3) > 1
    assert sessions[0] >= sessions[-1]  # rows_order metric: the busiest days first
    assert "totals" not in result.model_response  # GA4's totals per page would cover a page each
    assert any("pages" in w for w in result.model_response["warnings"])


async def test_columns_limit_keeps_the_top_values_and_says_how_many_are_left(fake: FakeGA4, ga4_host, meta) -> None:
    start, end = _window(fake, 7)
    events = event_counts_by(fake, PROPERTY, lambda e: e.page_path, start, end)
    ranked = sorted(events.items(), key=lambda item: -item[1])
    assert ranked[1][1] > ranked[2][1]  # no tie at the cut
    arguments = {
        "resource_id": PROPERTY,
        "rows": ["deviceCategory"],
        "columns": ["pagePath"],
        "metrics": ["eventCount"],
        "columns_limit": 2,
        "start_date": start.isoformat(),
        "end_date": end.isoformat(),
    }
    async with ga4_host() as host:
        result = await host.call("run_pivot_report", arguments, meta())
        clash = await host.call("run_pivot_report", {**arguments, "columns": ["deviceCategory"]}, meta())
    assert result.kind == "extraction", result.error
    shown = [h["name"] for h in result.system_data["headers"][1:]]
    assert shown == [f"{path} · eventCount" for path, _ in ranked[:2]]
    assert any(f"{len(events) - 2} more pagePath values" in w for w in result.model_response["warnings"])
    assert clash.error_name == "ACP_INVALID_ARGUMENTS" and "both a row and a column" in clash.error["message"]
