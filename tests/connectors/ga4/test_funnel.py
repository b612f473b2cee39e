"""run_funnel_report against the fake GA4: step counts (closed, open, with a breakdown, with a step filtered
on a dimension) equal the truth followed user by user through the fake's events; two tables in one multi-table
extraction; empty steps are refused; step filters on event parameters reach the API's own message type."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence

import pytest
from fakes.ga4 import FakeGA4
from fakes.ga4_export import Event
from ga4_support import PROPERTY, events_between

from connectors.ga4.funnel import Step
from shared import InvalidArguments

pytestmark = pytest.mark.anyio
STEPS = [
    {"name": "Product", "event": "view_item"},
    {"name": "Cart", "event": "add_to_cart"},
    {"name": "Purchase", "event": "purchase"},
]
Test = Callable[[Event], bool]


def _window(fake: FakeGA4) -> tuple[dt.date, dt.date]:
    today = fake.today(PROPERTY)
    return today - dt.timedelta(days=14), today - dt.timedelta(days=1)


def _reached(events: Sequence[Event], tests: Sequence[Test], entries: range) -> set[int]:
    """The steps one user reached: from the first event of an entry step, each next step's first later event."""
    reached: set[int] = set()
    for entry in entries:
        position = next((i for i, e in enumerate(events) if tests[entry](e)), None)
        if position is None:
            continue
        reached.add(entry)
        for step in range(entry + 1, len(tests)):
            position = next((i for i in range(position + 1, len(events)) if tests[step](events[i])), None)
            if position is None:
                break
            reached.add(step)
    return reached


def _truth(
    fake: FakeGA4, tests: Sequence[Test], start: dt.date, end: dt.date, is_open: bool = False
) -> dict[str, list[int]]:
    """Users per step, overall ("") and per device category."""
    by_user: dict[str, list[Event]] = {}
    for event in events_between(fake, PROPERTY, start, end):
        by_user.setdefault(event.user, []).append(event)
    counts: dict[str, list[int]] = {}
    for events in by_user.values():
        reached = _reached(events, tests, range(len(tests)) if is_open else range(1))
        for key in ("", events[0].visitor.device_category):
            row = counts.setdefault(key, [0] * len(tests))
            for step in reached:
                row[step] += 1
    return counts


def _event(name: str) -> Test:
    return lambda e: e.name == name


async def test_a_closed_funnel_equals_the_users_followed_through_the_events(fake: FakeGA4, ga4_host, meta) -> None:
    start, end = _window(fake)
    truth = _truth(fake, [_event(s["event"]) for s in STEPS], start, end)[""]
    arguments = {"resource_id": PROPERTY, "steps": STEPS, "start_date": str(start), "end_date": str(end)}
    async with ga4_host() as host:
        result = await host.call("run_funnel_report", arguments, meta())
    assert result.kind == "extraction", result.error
    tables = result.tables()
    assert list(tables) == ["funnel_table", "funnel_visualization"]
    labels = [f"{i}. {s['name']}" for i, s in enumerate(STEPS, start=1)]
    table = tables["funnel_table"]
    assert [row["funnelStepName"] for row in table] == labels
    assert [row["activeUsers"] for row in table] == truth
    assert truth[0] > truth[1] > truth[2] > 0
    for row, users, following in zip(table, truth, [*truth[1:], None], strict=True):
        if following is not None:
            assert row["funnelStepCompletionRate"] == pytest.approx(following / users)
            assert row["funnelStepAbandonments"] == users - following
    assert [row["activeUsers"] for row in tables["funnel_visualization"]] == truth
    model = result.model_response
    assert set(model["tables"]) == {"funnel_table", "funnel_visualization"}
    assert "closed funnel" in model["description"] and "Product (view_item)" in model["description"]
    headers = {h["name"]: h for h in result.system_data["tables"][0]["headers"]}
    assert headers["activeUsers"]["type"] == "integer" and headers["funnelStepCompletionRate"]["type"] == "number"


async def test_an_open_funnel_with_a_breakdown_and_a_filtered_step(fake: FakeGA4, ga4_host, meta) -> None:
    start, end = _window(fake)
    steps = [
        {
            "name": "Blog",
            "event": "page_view",
            "filter": [{"field": "pagePath", "match": "begins_with", "value": "/blog/"}],
        },
        {
            "name": "Shop",
            "event": "page_view",
            "filter": [{"field": "contentGroup", "match": "exact", "value": "Shop"}],
        },
        {"name": "Purchase", "event": "purchase"},
    ]
    tests = [
        lambda e: e.name == "page_view" and e.page_path.startswith("/blog/"),
        lambda e: e.name == "page_view" and e.content_group == "Shop",
        _event("purchase"),
    ]
    truth = _truth(fake, tests, start, end, is_open=True)
    arguments = {
        "resource_id": PROPERTY,
        "steps": steps,
        "open_funnel": True,
        "breakdown": "device",  # an alias: deviceCategory
        "start_date": str(start),
        "end_date": str(end),
    }
    async with ga4_host() as host:
        result = await host.call("run_funnel_report", arguments, meta())
    assert result.kind == "extraction", result.error
    table = result.tables()["funnel_table"]
    got: dict[str, list[int]] = {}
    for row in table:
        step = int(row["funnelStepName"].split(".")[0]) - 1
        key = "" if row["deviceCategory"] == "RESERVED_TOTAL" else row["deviceCategory"]
        got.setdefault(key, [0] * len(steps))[step] = row["activeUsers"]
    assert got == truth
    assert truth[""][0] < truth[""][1]  # open: users enter at the shop without reading the blog
    assert "Dimension 'device' mapped to 'deviceCategory'." in result.model_response["warnings"]
    assert result.system_info["arguments"]["breakdown"] == "deviceCategory"


async def test_empty_or_eventless_steps_are_refused(ga4_host, meta) -> None:
    async with ga4_host() as host:
        empty = await host.call("run_funnel_report", {"resource_id": PROPERTY, "steps": []}, meta())
        eventless = await host.call("run_funnel_report", {"resource_id": PROPERTY, "steps": [{"event": " "}]}, meta())
    assert empty.error_name == "ACP_INVALID_ARGUMENTS" and "steps" in empty.error["message"]
    assert eventless.error_name == "ACP_INVALID_ARGUMENTS" and "Step 1" in eventless.error["message"]


def test_step_filters_on_parameters_and_dimensions_fit_the_apis_message() -> None:
    """Conditions on event parameters go inside the event filter, those on dimensions beside it; the result is
    what the v1alpha client's own RunFunnelReportRequest takes."""
    from google.analytics.data_v1alpha.types import RunFunnelReportRequest

    step = Step(
        "Lead",
        "generate_lead",
        [
            {"field": "form_name", "match": "in_list", "value": ["contact", "demo_request"]},
            {"field": "pagePath", "match": "begins_with", "value": "/contact"},
            {
                "any": [
                    {"field": "value", "match": "greater_than", "value": 10},
                    {"field": "currency", "match": "exact", "value": "EUR"},
                ]
            },
        ],
    )
    body = step.body({"pagePath", "deviceCategory"})
    parsed = RunFunnelReportRequest(funnel={"steps": [body]}).funnel.steps[0].filter_expression
    members = parsed.and_group.expressions
    event_filter = members[0].funnel_event_filter
    assert event_filter.event_name == "generate_lead"
    parameters = event_filter.funnel_parameter_filter_expression.and_group.expressions
    assert parameters[0].funnel_parameter_filter.event_parameter_name == "form_name"
    assert list(parameters[0].funnel_parameter_filter.in_list_filter.values) == ["contact", "demo_request"]
    assert len(parameters[1].or_group.expressions) == 2
    assert members[1].funnel_field_filter.field_name == "pagePath"

    mixed = Step(
        "Mixed",
        "page_view",
        [
            {
                "any": [
                    {"field": "pagePath", "match": "contains", "value": "x"},
                    {"field": "form_name", "match": "exact", "value": "y"},
                ]
            }
        ],
    )
    with pytest.raises(InvalidArguments, match="Step 'Mixed'"):
        mixed.body({"pagePath"})
