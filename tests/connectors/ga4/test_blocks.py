"""The autocontext blocks against the fake GA4 (spec 7, 15.1 §3 and §5): configuration blocks equal the
fake's catalog, traffic blocks equal what the fake's events say (counted here in plain loops), the
traffic reports of one call travel as batchRunReports, and a failing v1alpha call degrades one block."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Hashable
from typing import Any

import pytest
from fakes import ga4_catalog
from fakes.ga4 import FakeGA4
from fakes.ga4_export import Event
from ga4_support import PROPERTY, STORE, events_between

from connectors.ga4 import CONNECTOR
from connectors.ga4.blocks import BLOCKS

pytestmark = pytest.mark.anyio

# Spec 15.1 step 3, word for word.
SPEC_BLOCKS = [
    {
        "id": "property_settings",
        "description": "Property settings: name, time zone, currency, industry, attribution model, conversion "
        "lookback windows and data retention.",
    },
    {
        "id": "key_events",
        "description": "Property key events (conversions) with their API metric (keyEvents:<event>).",
    },
    {
        "id": "custom_dimensions",
        "description": "Custom dimensions with their scope, description and API name "
        "(customEvent:/customUser:/customItem:).",
    },
    {"id": "custom_metrics", "description": "Custom metrics with unit, scope and API name (customEvent:<param>)."},
    {
        "id": "calculated_metrics",
        "description": "Calculated metrics with their formula and API name (calcMetric:<id>).",
    },
    {"id": "channel_groups", "description": "Channel groups (system-defined and custom)."},
    {
        "id": "sessions_by_channel",
        "description": "Sessions, users and engagement by default channel group over the last 28 days.",
    },
    {"id": "sessions_by_device", "description": "Sessions and users by device over the last 28 days."},
    {"id": "sessions_by_country", "description": "Top 15 countries by sessions over the last 28 days."},
    {
        "id": "top_events",
        "description": "Top 50 events by event count over the last 28 days (exact eventName values).",
    },
    {"id": "top_landing_pages", "description": "Top 25 landing pages by sessions over the last 28 days."},
    {
        "id": "content_groups",
        "description": "Sessions by content group over the last 28 days (empty if the property does not use them).",
    },
]
CONFIGURATION = ["property_settings", "key_events", "custom_dimensions", "custom_metrics", "calculated_metrics"]
CONFIGURATION += ["channel_groups", "annotations"]
TRAFFIC = [
    "sessions_by_channel",
    "sessions_by_device",
    "sessions_by_country",
    "top_events",
    "top_landing_pages",
    "content_groups",
]
PREFIX = {"EVENT": "customEvent", "USER": "customUser", "ITEM": "customItem"}


async def _blocks(host: Any, meta: Callable[..., dict[str, Any]], resource: str, *names: str) -> dict[str, Any]:
    result = await host.call("autocontext", {"resource_id": resource, "request_data": list(names)}, meta())
    assert result.kind == "autocontext", result.error
    return {b["id"]: b for b in result.model_response}


# -- the list and its declaration ------------------------------------------------------------------
def test_the_connector_declares_the_blocks_with_their_ttls() -> None:
    assert CONNECTOR.blocks == BLOCKS
    ttl = {block.id: block.ttl_s for block in BLOCKS}
    assert {ttl[name] for name in CONFIGURATION} == {24 * 3600}
    assert {ttl[name] for name in TRAFFIC} == {3600}


async def test_autocontext_data_lists_the_twelve_blocks_of_15_1_and_annotations(ga4_host) -> None:
    async with ga4_host() as host:
        result = await host.call("autocontext_data", {})
    assert result.kind == "autocontext_data", result.error
    listed = result.model_response
    assert listed[:12] == SPEC_BLOCKS
    assert [b["id"] for b in listed[12:]] == ["annotations"]
    assert "explain changes in traffic" in listed[12]["description"]


async def test_inject_of_step_5_gives_key_events_and_custom_dimensions(ga4_host, meta) -> None:
    request = {"resource_id": PROPERTY, "request_data": ["key_events", "custom_dimensions"]}
    async with ga4_host() as host:
        result = await host.call("autocontext", request, meta())
    prop = ga4_catalog.property_by_id(PROPERTY)
    assert prop is not None
    assert result.model_response == [
        {
            "id": "key_events",
            "description": SPEC_BLOCKS[1]["description"],
            "data": [
                {
                    "event_name": e.event_name,
                    "counting_method": e.counting_method,
                    "metric": f"keyEvents:{e.event_name}",
                }
                for e in prop.key_events
            ],
        },
        {
            "id": "custom_dimensions",
            "description": SPEC_BLOCKS[2]["description"],
            "data": [
                {"api_name": f"{PREFIX[d.scope]}:{d.parameter_name}", "display_name": d.display_name, "scope": d.scope}
                for d in prop.custom_dimensions
            ],
        },
    ]
    # The catalog is spec 15.1's property: the step's own example holds.
    assert result.model_response[0]["data"][1] == {
        "event_name": "generate_lead",
        "counting_method": "ONCE_PER_SESSION",
        "metric": "keyEvents:generate_lead",
    }
    assert result.system_info["resource_id"] == PROPERTY and result.system_info["warnings"] == []


# -- configuration ---------------------------------------------------------------------------------
@pytest.mark.parametrize("prop", ga4_catalog.PROPERTIES, ids=lambda p: p.display_name)
async def test_configuration_blocks_equal_the_catalog(ga4_host, meta, fake, prop: ga4_catalog.Property) -> None:
    async with ga4_host() as host:
        blocks = await _blocks(host, meta, prop.property_id, *CONFIGURATION)
    assert all("data" in b for b in blocks.values()), blocks
    attribution, retention = prop.attribution, prop.data_retention
    assert blocks["property_settings"]["data"] == {
        "display_name": prop.display_name,
        "time_zone": prop.time_zone,
        "currency_code": prop.currency_code,
        "industry_category": prop.industry_category,
        "service_level": prop.service_level,
        "attribution": {
            "reporting_attribution_model": attribution.reporting_attribution_model,
            "acquisition_conversion_event_lookback_window": attribution.acquisition_conversion_event_lookback_window,
            "other_conversion_event_lookback_window": attribution.other_conversion_event_lookback_window,
        },
        "data_retention": {
            "event_data_retention": retention.event_data_retention,
            "user_data_retention": retention.user_data_retention,
            "reset_user_data_on_new_activity": retention.reset_user_data_on_new_activity,
        },
        "google_ads_links": [
            {"customer_id": link.customer_id, "ads_personalization_enabled": link.ads_personalization_enabled}
            for link in prop.google_ads_links
        ],
    }
    assert blocks["custom_metrics"]["data"] == [
        {
            "api_name": f"customEvent:{m.parameter_name}",
            "display_name": m.display_name,
            "unit": m.measurement_unit,
            "scope": m.scope,
        }
        for m in prop.custom_metrics
    ]
    assert blocks["calculated_metrics"]["data"] == [
        {
            "api_name": f"calcMetric:{m.calculated_metric_id}",
            "display_name": m.display_name,
            "formula": m.formula,
            "unit": m.metric_unit,
        }
        for m in prop.calculated_metrics
    ]
    assert blocks["channel_groups"]["data"] == [
        {
            "display_name": g.display_name,
            "system_defined": g.system_defined,
            "primary": g.primary,
            "dimension": "sessionDefaultChannelGroup"
            if g.system_defined
            else f"sessionCustomChannelGroup:{g.channel_group_id}",
            "channels": [rule.display_name for rule in g.grouping_rules],
        }
        for g in prop.channel_groups
    ]
    assert blocks["annotations"]["data"] == _annotations_truth(prop, fake.today(prop.property_id))


def _annotations_truth(prop: ga4_catalog.Property, today: dt.date) -> list[dict[str, Any]]:
    """The property's annotations that end within the last 365 days (or later), newest first."""
    kept = [a for a in prop.annotations if (a.end_date or a.start_date) >= today - dt.timedelta(days=365)]
    out = []
    for a in sorted(kept, key=lambda a: a.start_date, reverse=True):
        when = (
            {"date": a.start_date.isoformat()}
            if a.end_date is None
            else {"start_date": a.start_date.isoformat(), "end_date": a.end_date.isoformat()}
        )
        entry = {**when, "title": a.title, "description": a.description}
        out.append({**entry, "system_generated": True} if a.system_generated else entry)
    return out


# -- traffic ---------------------------------------------------------------------------------------
def _window(fake: FakeGA4, property_id: str) -> tuple[dt.date, dt.date]:
    """The last 28 days ending yesterday, in the property's calendar."""
    end = fake.today(property_id) - dt.timedelta(days=1)
    return end - dt.timedelta(days=27), end


def _by(
    fake: FakeGA4, property_id: str, dimension: str, key: Callable[[Event], Hashable], metrics: tuple[str, ...]
) -> list[dict[str, Any]]:
    """Rows ``{dimension, metric...}`` over the window, most of the first metric first, ties by value."""
    start, end = _window(fake, property_id)
    sessions: dict[Hashable, set[tuple[str, int]]] = {}
    engaged: dict[Hashable, set[tuple[str, int]]] = {}
    users: dict[Hashable, set[str]] = {}
    events: dict[Hashable, int] = {}
    for event in events_between(fake, property_id, start, end):
        value = key(event)
        sessions.setdefault(value, set()).add(event.session.key)
        if event.session.engaged:
            engaged.setdefault(value, set()).add(event.session.key)
        users.setdefault(value, set()).add(event.user)
        events[value] = events.get(value, 0) + 1
    computed = {
        "sessions": lambda v: len(sessions[v]),
        "totalUsers": lambda v: len(users[v]),
        "engagementRate": lambda v: round(len(engaged.get(v, ())) / len(sessions[v]), 4),
        "eventCount": lambda v: events[v],
    }
    rows = [{dimension: value} | {m: computed[m](value) for m in metrics} for value in sessions]
    return sorted(rows, key=lambda row: (-row[metrics[0]], row[dimension]))


def _traffic_truth(fake: FakeGA4, property_id: str) -> dict[str, list[dict[str, Any]]]:
    rates = ("sessions", "totalUsers", "engagementRate")
    counts = ("sessions", "totalUsers")
    return {
        "sessions_by_channel": _by(fake, property_id, "sessionDefaultChannelGroup", lambda e: e.session.channel, rates),
        "sessions_by_device": _by(fake, property_id, "deviceCategory", lambda e: e.visitor.device_category, counts),
        "sessions_by_country": _by(fake, property_id, "country", lambda e: e.visitor.country, counts)[:15],
        "top_events": _by(fake, property_id, "eventName", lambda e: e.name, ("eventCount",))[:50],
        "top_landing_pages": _by(fake, property_id, "landingPage", lambda e: e.session.landing_page, rates)[:25],
        "content_groups": _by(fake, property_id, "contentGroup", lambda e: e.content_group or "(not set)", counts),
    }


@pytest.mark.parametrize("property_id", [PROPERTY, STORE])
async def test_traffic_blocks_equal_the_events_of_the_last_28_days(ga4_host, meta, fake, property_id) -> None:
    async with ga4_host() as host:
        blocks = await _blocks(host, meta, property_id, *TRAFFIC)
    truth = _traffic_truth(fake, property_id)
    for name in TRAFFIC:
        assert blocks[name].get("data") == truth[name], name
    assert len(truth["sessions_by_channel"]) > 3 and len(truth["top_landing_pages"]) > 3  # something to compare
    assert {row["contentGroup"] for row in blocks["content_groups"]["data"]} - {"(not set)"}


async def test_the_traffic_blocks_of_one_call_travel_as_two_batches(ga4_host, meta, fake) -> None:
    server = fake.data.server
    async with ga4_host() as host:
        server.clear_log()
        every = await host.call("autocontext", {"resource_id": PROPERTY}, meta())
        batches = server.requests_for("batchRunReports")
        assert all("data" in b for b in every.model_response), every.model_response
        server.clear_log()
        await _blocks(host, meta, STORE, "top_events")
        single = server.requests_for("batchRunReports")
    # Six reports, at most five a batch: two round trips, and no runReport at all.
    assert sorted(len(r.json["requests"]) for r in batches) == [1, 5]
    assert not [r for r in server.requests if r.route == "runReport"]
    assert [len(r.json["requests"]) for r in single] == [1]


# -- v1alpha failures --------------------------------------------------------------------------------
async def test_a_failing_alpha_block_carries_an_error_and_the_call_goes_on(ga4_host, meta, fake) -> None:
    fake.admin.server.fail("properties.calculatedMetrics.list", 404, message="Method not found.")
    request = ["key_events", "calculated_metrics", "channel_groups"]
    async with ga4_host() as host:
        result = await host.call("autocontext", {"resource_id": PROPERTY, "request_data": request}, meta())
    assert result.kind == "autocontext", result.error
    blocks = {b["id"]: b for b in result.model_response}
    assert "data" not in blocks["calculated_metrics"]
    assert "Method not found." in blocks["calculated_metrics"]["error"]
    assert "data" in blocks["key_events"] and "data" in blocks["channel_groups"]
    assert result.system_info["warnings"] == ["1 of 3 autocontext blocks failed; see their error field."]


async def test_failing_attribution_settings_leave_the_rest_of_property_settings(ga4_host, meta, fake) -> None:
    fake.admin.server.fail("properties.getAttributionSettings", 403, message="Alpha API not enabled.")
    async with ga4_host() as host:
        block = (await _blocks(host, meta, PROPERTY, "property_settings"))["property_settings"]
        healthy = (await _blocks(host, meta, STORE, "property_settings"))["property_settings"]
    data = block["data"]
    assert "attribution" not in data and "Alpha API not enabled." in data["attribution_error"]
    assert data["time_zone"] == "Europe/Madrid" and data["google_ads_links"]
    assert data["data_retention"]["event_data_retention"] == "FOURTEEN_MONTHS"
    assert "attribution_error" not in healthy["data"] and healthy["data"]["attribution"]
