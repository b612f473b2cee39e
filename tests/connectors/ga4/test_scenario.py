"""Spec 15.1 end to end: ``python -m connectors.ga4`` as a process, over stdio and over HTTP, driven by the
test host on the fake GA4: the resource list for the sign-up, the blocks on offer, acp/configure, two
blocks injected, then a truncated extraction with totals. Figures are the fake's events counted here."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fakes.ga4 import FakeGA4
from fakes.ga4_export import default_channel_group
from ga4_support import PROPERTY, ga4_env, key_events_by, sessions_by
from http_support import http_server, module_command

from shared.host import AcpHost

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # a server process per test

# Spec 15.1 §3, in its order; the connector adds annotations after them.
BLOCKS = {
    "property_settings": "Property settings: name, time zone, currency, industry, attribution model, conversion "
    "lookback windows and data retention.",
    "key_events": "Property key events (conversions) with their API metric (keyEvents:<event>).",
    "custom_dimensions": "Custom dimensions with their scope, description and API name "
    "(customEvent:/customUser:/customItem:).",
    "custom_metrics": "Custom metrics with unit, scope and API name (customEvent:<param>).",
    "calculated_metrics": "Calculated metrics with their formula and API name (calcMetric:<id>).",
    "channel_groups": "Channel groups (system-defined and custom).",
    "sessions_by_channel": "Sessions, users and engagement by default channel group over the last 28 days.",
    "sessions_by_device": "Sessions and users by device over the last 28 days.",
    "sessions_by_country": "Top 15 countries by sessions over the last 28 days.",
    "top_events": "Top 50 events by event count over the last 28 days (exact eventName values).",
    "top_landing_pages": "Top 25 landing pages by sessions over the last 28 days.",
    "content_groups": "Sessions by content group over the last 28 days (empty if the property does not use them).",
}
METRICS = ["sessions", "keyEvents:purchase"]
DIMENSIONS = ["date", "sessionDefaultChannelGroup"]


@contextlib.asynccontextmanager
async def _host(transport: str, env: dict[str, str], folder: Path) -> AsyncIterator[AcpHost]:
    if transport == "stdio":
        async with AcpHost.for_module("ga4", env=env) as host:
            yield host
        return
    with http_server(module_command("ga4"), env, folder) as server:
        async with AcpHost(url=server.url) as host:
            yield host


def _session_channel(event: Any) -> tuple[str, str]:
    return event.date.isoformat(), default_channel_group(event.session.source, event.session.medium)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_spec_15_1_sign_up_and_a_truncated_report(
    transport: str, fake: FakeGA4, credentials: dict[str, Any], runtime_dirs: dict[str, str], tmp_path: Path
) -> None:
    # The three months of 15.1's report, ending yesterday in the property's calendar.
    end = fake.today(PROPERTY) - dt.timedelta(days=1)
    start = end - dt.timedelta(days=91)
    sessions = sessions_by(fake, PROPERTY, _session_channel, start, end)
    purchases = key_events_by(fake, PROPERTY, _session_channel, start, end, event_name="purchase")
    report = {"metrics": METRICS, "dimensions": DIMENSIONS, "start_date": str(start), "end_date": str(end)}
    async with _host(transport, {**runtime_dirs, **ga4_env(fake)}, tmp_path) as host:
        listed = await host.call("autocontext", {}, {"credentials": credentials})
        offered = await host.call("autocontext_data", {}, {"credentials": credentials})
        effective = await host.configure(
            row_limit=25, cost_limit_usd=0, default_resource_id=PROPERTY, credentials=credentials
        )
        injected = await host.call(
            "autocontext", {"resource_id": PROPERTY, "request_data": ["key_events", "custom_dimensions"]}, {}
        )
        extraction = await host.call("run_report", report, {"autocontext_delivered": True})

    # 2. The resources the credentials see, grouped by account; the hidden property is not among them.
    assert listed.kind == "autocontext", listed.error
    assert listed.model_response == {
        "notice": "3 resources available. Pass resource_id to get its autocontext.",
        "total_available": 3,
        "resources": [
            {"resource_id": "123456789", "name": "ikaue.com", "group": "IKAUE"},
            {"resource_id": "222333444", "name": "Blog", "group": "IKAUE"},
            {"resource_id": "987654321", "name": "Store", "group": "Client X"},
        ],
    }
    assert listed.system_info["acp"] == "ga4" and listed.system_info["resource_id"] is None

    # 3. The twelve blocks of 15.1 with their ids and descriptions, then the annotations.
    blocks = [(block["id"], block["description"]) for block in offered.model_response]
    assert blocks[: len(BLOCKS)] == list(BLOCKS.items())
    assert [block_id for block_id, _ in blocks[len(BLOCKS) :]] == ["annotations"]

    # 4. The session's configuration.
    assert effective["ok"] is True
    assert {key: effective["effective"][key] for key in ("row_limit", "cost_limit_usd", "default_resource_id")} == {
        "row_limit": 25,
        "cost_limit_usd": 0,
        "default_resource_id": PROPERTY,
    }
    assert effective["effective"]["has_credentials"] is True

    # 5. The two blocks injected, with the data of 15.1 (the fake's catalog is the spec's property).
    key_events, custom_dimensions = injected.model_response
    assert key_events["id"] == "key_events" and key_events["description"] == BLOCKS["key_events"]
    assert [
        {key: event[key] for key in ("event_name", "counting_method", "metric")} for event in key_events["data"]
    ] == [
        {"event_name": "purchase", "counting_method": "ONCE_PER_EVENT", "metric": "keyEvents:purchase"},
        {"event_name": "generate_lead", "counting_method": "ONCE_PER_SESSION", "metric": "keyEvents:generate_lead"},
    ]
    assert custom_dimensions["id"] == "custom_dimensions"
    assert [
        {key: dimension[key] for key in ("api_name", "display_name", "scope")}
        for dimension in custom_dimensions["data"]
    ] == [
        {"api_name": "customEvent:form_name", "display_name": "Form", "scope": "EVENT"},
        {"api_name": "customUser:plan", "display_name": "Plan", "scope": "USER"},
    ]
    assert injected.system_info["resource_id"] == PROPERTY

    # 6. The extraction: 25 rows for the model, every row for the host, GA4's totals.
    assert extraction.kind == "extraction", extraction.error
    model = extraction.model_response
    total = len(sessions)
    assert total > 25
    assert model["notice"] == f"Showing 25 of {total} extracted rows."
    assert (model["total_rows"], model["returned_rows"], model["truncated"]) == (total, 25, True)
    assert model["columns"] == DIMENSIONS + METRICS
    assert model["totals"] == {"sessions": sum(sessions.values()), "keyEvents:purchase": sum(purchases.values())}
    info = extraction.system_info
    assert (info["acp"], info["tool"], info["resource_id"]) == ("ga4", "run_report", PROPERTY)
    assert {key: info["arguments"][key] for key in report} == report
    assert (info["row_limit"], info["cost_limit_usd"], info["cost_actual_usd"]) == (25, 0, 0)
    assert info["title"] == f"GA4 {PROPERTY} · {start}→{end}"
    data = extraction.system_data
    assert data["row_count"] == total
    assert [(h["name"], h["type"], h["role"]) for h in data["headers"][:3]] == [
        ("date", "date", "dimension"),
        ("sessionDefaultChannelGroup", "string", "dimension"),
        ("sessions", "integer", "metric"),
    ]
    # 15.1 shows a number: GA4 may credit a key event in part, and types it TYPE_FLOAT.
    assert data["headers"][3] == {"name": "keyEvents:purchase", "type": "number", "role": "metric"}
    rows = {(row["date"], row["sessionDefaultChannelGroup"]): row for row in extraction.rows()}
    assert {key: row["sessions"] for key, row in rows.items()} == sessions
    assert {key: row["keyEvents:purchase"] for key, row in rows.items() if row["keyEvents:purchase"]} == purchases
