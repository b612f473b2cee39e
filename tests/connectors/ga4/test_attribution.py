"""compare_conversion_models against the fake GA4: first-user, session and attributed key events by channel
equal the truth counted from the fake's events (and differ from each other), in one batchRunReports round trip;
the property's attribution model is named, and its absence degrades to a warning."""

from __future__ import annotations

import datetime as dt
from collections.abc import Hashable

import pytest
from fakes.ga4 import FakeGA4
from ga4_support import PROPERTY, attributed_channel, first_user_channel, key_events_by

pytestmark = pytest.mark.anyio
VIEWS = ("key_events_first_user", "key_events_session", "key_events_attributed")


def _window(fake: FakeGA4) -> tuple[dt.date, dt.date]:
    today = fake.today(PROPERTY)
    return today - dt.timedelta(days=28), today - dt.timedelta(days=1)


def _truth(fake: FakeGA4, start: dt.date, end: dt.date, event: str | None = None) -> list[dict[Hashable, int]]:
    keys = (first_user_channel, lambda e: e.session.channel, attributed_channel(fake, PROPERTY))
    return [key_events_by(fake, PROPERTY, key, start, end, event) for key in keys]


def _by_view(rows: list[dict]) -> list[dict[str, int]]:
    return [{row["channel"]: row[view] for row in rows if row[view]} for view in VIEWS]


async def test_three_views_equal_the_events_and_differ(fake: FakeGA4, ga4_host, meta) -> None:
    start, end = _window(fake)
    truth = _truth(fake, start, end)
    arguments = {"resource_id": PROPERTY, "start_date": start.isoformat(), "end_date": end.isoformat()}
    fake.data.server.clear_log()
    async with ga4_host() as host:
        result = await host.call("compare_conversion_models", arguments, meta())
    assert result.kind == "extraction", result.error
    rows = result.rows()
    assert _by_view(rows) == truth
    first_user, session, attributed = truth
    assert first_user != session != attributed != first_user  # the generated visitors switch channels
    for row in rows:
        assert row["attributed_minus_session"] == row["key_events_attributed"] - row["key_events_session"]
        assert row["attributed_minus_first_user"] == row["key_events_attributed"] - row["key_events_first_user"]
    attributed_order = [row["key_events_attributed"] for row in rows]
    assert attributed_order == sorted(attributed_order, reverse=True)
    totals = result.model_response["totals"]
    assert totals == {view: sum(counts.values()) for view, counts in zip(VIEWS, truth, strict=True)}
    # One round trip for the three reports.
    server = fake.data.server
    assert (len(server.requests_for("batchRunReports")), len(server.requests_for("runReport"))) == (1, 0)
    extra = result.model_response["extra"]
    assert extra["attribution_model"] == "PAID_AND_ORGANIC_CHANNELS_DATA_DRIVEN"
    assert "data-driven" in result.model_response["description"]
    headers = {h["name"]: h for h in result.system_data["headers"]}
    assert headers["channel"]["role"] == "dimension" and headers["key_events_attributed"]["role"] == "metric"


async def test_one_key_event(fake: FakeGA4, ga4_host, meta) -> None:
    start, end = _window(fake)
    truth = _truth(fake, start, end, "purchase")
    arguments = {"resource_id": PROPERTY, "key_event": "purchase", "start_date": str(start), "end_date": str(end)}
    async with ga4_host() as host:
        result = await host.call("compare_conversion_models", arguments, meta())
        unknown = await host.call("compare_conversion_models", {**arguments, "key_event": "purchased"}, meta())
    assert result.kind == "extraction", result.error
    assert _by_view(result.rows()) == truth
    assert "keyEvents:purchase" in result.model_response["description"]
    assert result.system_info["arguments"]["key_event"] == "purchase"
    assert unknown.error_name == "ACP_INVALID_ARGUMENTS" and "keyEvents:purchase" in unknown.error["message"]


async def test_without_the_attribution_settings_the_comparison_still_comes(fake: FakeGA4, ga4_host, meta) -> None:
    start, end = _window(fake)
    fake.admin.server.fail("properties.getAttributionSettings", 404)  # an alpha method gone
    async with ga4_host() as host:
        result = await host.call("compare_conversion_models", {"resource_id": PROPERTY}, meta())
    assert result.kind == "extraction", result.error
    assert _by_view(result.rows()) == _truth(fake, start, end)  # the default window: 28 days ending yesterday
    assert result.model_response["extra"]["attribution_model"] is None
    assert any("attribution settings could not be read" in w for w in result.model_response["warnings"])
