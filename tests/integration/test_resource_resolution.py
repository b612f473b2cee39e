"""``Resources.resolve`` (a resource_id resolved against what the source holds, with I/O) and
``Tool.today`` (the calendar a tool's relative dates are resolved in), served in process."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from shared import (
    Block,
    CallContext,
    Connector,
    Credentials,
    Extraction,
    InvalidArguments,
    ResourceNotFound,
    ResourceRef,
    Resources,
    Tool,
)

pytestmark = pytest.mark.anyio
SHOPS = ("shop-3", "shop-9")
SOURCE_TODAY = dt.date(2031, 2, 3)  # the source's calendar, far from the server's own today
EAST_TODAY = dt.date(2031, 2, 4)  # shop-east keeps its own calendar, a day ahead (its time zone)
resolved_in: list[str] = []


def normalize(text: str, credentials: Any = None) -> ResourceRef:
    cleaned = text.strip().lower()
    if cleaned == "all-shops":
        return ResourceRef(id=cleaned, level="group")
    return ResourceRef(id=cleaned, level="shop")


async def resolve(ref: ResourceRef, ctx: CallContext) -> ResourceRef:
    resolved_in.append(ctx.tool)
    listed = await ctx.run_blocking(lambda: SHOPS)  # the I/O a real source does here
    if ref.id == "newest":
        ctx.warnings.append(f"newest is {listed[-1]} today.")
        return ResourceRef(id=listed[-1], level="shop")
    if ref.id == "shop-east":
        return ResourceRef(id=ref.id, level="shop", today=EAST_TODAY)
    if ref.id in listed or ref.level == "group":
        return ref
    raise ResourceNotFound(f"No shop '{ref.id}'; the closest are {', '.join(listed)}.")


async def report(arguments: dict[str, Any], ctx: CallContext) -> Extraction:
    def build() -> Any:
        writer = ctx.table()
        writer.append({"shop": ctx.require_resource().id, "today": ctx.today.isoformat()})
        return writer.finish()

    return Extraction(tables=[await ctx.run_blocking(build)], description="Shop report.")


async def where(ref: ResourceRef, ctx: CallContext) -> Any:
    return {"fetched_for": ref.id}


async def calendar(ref: ResourceRef, ctx: CallContext) -> Any:
    return {"today": ctx.today.isoformat()}


CONNECTOR = Connector(
    id="shops",
    title="Shops",
    version="0.0.1",
    description="A test source whose resource ids are resolved against its listing.",
    instructions="Test shops.",
    credentials=Credentials.none(),
    resources=Resources(
        description="A shop, or newest.",
        format="shop-<n>",
        examples=("shop-3",),
        levels=("shop", "group"),
        normalize=normalize,
        resolve=resolve,
    ),
    tools=(
        Tool(
            name="report",
            description="Report of one shop.",
            run=report,
            kind="extraction",
            levels=("shop",),
            requires_credentials=False,
            input_schema={
                "properties": {
                    "start_date": {"type": "string", "x-acp-date": "start"},
                    "end_date": {"type": "string", "x-acp-date": "end"},
                }
            },
            today=lambda: SOURCE_TODAY,
        ),
    ),
    blocks=(
        Block(id="where", description="Which shop the block was fetched for.", fetch=where),
        Block(id="calendar", description="The shop's today.", fetch=calendar),
    ),
)


async def test_a_resolved_resource_is_what_the_tool_the_answer_and_on_first_call_see(in_process) -> None:
    async with in_process(CONNECTOR) as host:
        first = await host.call("report", {"resource_id": "newest"}, {"session_id": "conv-1"})
        assert first.system_info["resource_id"] == "shop-9" and first.rows() == [
            {"shop": "shop-9", "today": "2031-02-03"}
        ]
        assert first.system_info["autocontext_attached"] is True
        assert first.model_response["autocontext"][0]["data"] == {"fetched_for": "shop-9"}
        # The same shop by its own id is the same (session, resource) pair: delivered already.
        again = await host.call("report", {"resource_id": "shop-9"}, {"session_id": "conv-1"})
        assert again.system_info["autocontext_attached"] is False and "autocontext" not in again.model_response


async def test_autocontext_runs_its_blocks_for_the_resolved_resource(in_process) -> None:
    resolved_in.clear()
    async with in_process(CONNECTOR) as host:
        result = await host.call("autocontext", {"resource_id": "NEWEST", "request_data": ["where"]}, {})
        assert result.system_info["resource_id"] == "shop-9"
        assert result.system_info["warnings"] == ["newest is shop-9 today."]  # what resolving said
        assert result.model_response == [
            {"id": "where", "description": "Which shop the block was fetched for.", "data": {"fetched_for": "shop-9"}}
        ]
        missing = await host.call("autocontext", {"resource_id": "shop-4", "request_data": ["where"]}, {})
        assert missing.error_name == ResourceNotFound.name and "shop-3, shop-9" in missing.error["message"]
    assert resolved_in == ["autocontext", "autocontext"]


async def test_an_unknown_resource_or_a_resolved_level_the_tool_refuses_fails_before_the_tool(in_process) -> None:
    async with in_process(CONNECTOR) as host:
        missing = await host.call("report", {"resource_id": "shop-4"}, {})
        assert missing.error_name == ResourceNotFound.name
        group = await host.call("report", {"resource_id": "all-shops"}, {})
        assert group.error_name == InvalidArguments.name and "works on shop resources" in group.error["message"]


async def test_relative_dates_are_resolved_in_the_tools_calendar(in_process) -> None:
    async with in_process(CONNECTOR) as host:
        result = await host.call("report", {"resource_id": "shop-3", "start_date": "7daysAgo", "end_date": "today"})
        assert result.system_info["arguments"] == {"start_date": "2031-01-27", "end_date": "2031-02-03"}
        assert result.model_response["dates"] == ["2031-01-27", "2031-02-03"]
        undated = await host.call("report", {"resource_id": "shop-3"})
        assert undated.model_response["dates"] == ["2031-02-03"]  # no window: the tool's today


async def test_a_resource_with_its_own_calendar_resolves_dates_and_blocks_in_it(in_process) -> None:
    async with in_process(CONNECTOR) as host:
        arguments = {"resource_id": "shop-east", "start_date": "yesterday", "end_date": "today"}
        result = await host.call("report", arguments)
        assert result.system_info["arguments"] == {"start_date": "2031-02-03", "end_date": "2031-02-04"}
        assert result.rows() == [{"shop": "shop-east", "today": "2031-02-04"}]
        undated = await host.call("report", {"resource_id": "shop-east"})
        assert undated.model_response["dates"] == ["2031-02-04"]
        blocks = await host.call("autocontext", {"resource_id": "shop-east", "request_data": ["calendar"]}, {})
        assert blocks.model_response[0]["data"] == {"today": "2031-02-04"}
        reversed_window = await host.call("report", {**arguments, "start_date": "today", "end_date": "yesterday"})
        assert reversed_window.error_name == InvalidArguments.name and "reversed" in reversed_window.error["message"]
