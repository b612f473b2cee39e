"""initialize and tools/list as the core publishes them (spec 4, 6.2, 7.2, 7.3, 8.7, 8.9)."""

from __future__ import annotations

import pytest
from toy_connector import TOOLS

from shared._runtime import AcpRuntime
from shared.declaration import Connector, Credentials, Resources, Tool
from shared.results import Info

pytestmark = pytest.mark.anyio


async def test_capability_instructions_and_server_info(toy_host) -> None:
    async with toy_host() as host:
        cap = host.server_capability
        assert cap is not None
        assert cap["version"] == "1.0"
        assert cap["defaults"] == {"row_limit": 25, "cost_limit_usd": 0, "field_limit": 8, "tables": ["hits"]}
        assert cap["resource_id"]["title"] == "Account" and cap["resource_id"]["examples"] == ["acc_1", "acc_1.web"]
        assert cap["autocontext"] == {"cache_ttl_s": 21600, "delivery": ["inject", "suggest", "on_first_call"]}
        assert cap["cost"] == {"currency": "USD", "model": "free", "description": "Free."}
        assert cap["extraction_tools"] == ["report", "values", "browse", "chart", "sleep", "stream", "wide"]
        assert [e["name"] for e in cap["table_catalog"]] == ["hits", "cookies", "network"]
        assert cap["table_catalog"][2]["required"] is True
        # Unknown schema keywords travel untouched (spec 5.5.4, 5.5.5).
        portal = cap["credentials_schema"]["oneOf"][1]
        assert portal["x-acp-login"] == {"provider": "analytika", "scopes": ["toy.readonly"]}
        assert portal["properties"]["email"]["x-acp-filled"] is True
        assert cap["config_schema"]["properties"]["rules"]["contentMediaType"] == "application/json"
        assert host.server_info == {"name": "toy", "title": "Toy", "version": "9.9.9"}
        assert host.initialize_result["instructions"].startswith("Toy ACP")
        assert host.initialize_result["capabilities"]["tools"] == {"listChanged": False}


async def test_tools_list_is_stable_closed_and_annotated(toy_host) -> None:
    async with toy_host() as host:
        first = await host.list_tools()
        assert first == await host.list_tools()  # same order and content every time
        names = [t["name"] for t in first]
        assert names[:2] == ["autocontext", "autocontext_data"]
        tools = {t["name"]: t for t in first}
        for tool in first:
            schema = tool["inputSchema"]
            assert schema["type"] == "object" and schema["additionalProperties"] is False
            annotations = tool["annotations"]
            for hint in ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"):
                assert isinstance(annotations[hint], bool)
        # resource_id only where a tool needs a resource (spec 6.2), first, repeating the description.
        assert list(tools["report"]["inputSchema"]["properties"])[0] == "resource_id"
        assert "Toy account id" in tools["report"]["inputSchema"]["properties"]["resource_id"]["description"]
        assert "resource_id" not in tools["merge_table"]["inputSchema"]["properties"]
        assert "resource_id" not in tools["browse"]["inputSchema"]["properties"]
        # x-acp-* annotations pass through (8.8, 8.9, 8.11).
        report = tools["report"]["inputSchema"]["properties"]
        assert report["start_date"]["x-acp-date"] == "start" and report["end_date"]["x-acp-date"] == "end"
        assert tools["merge_table"]["inputSchema"]["properties"]["table_ref"]["x-acp-input"] == "table_ref"
        assert tools["open_url"]["inputSchema"]["properties"]["url"]["x-acp-url"] == ["^https?://docs\\.toy\\.example/"]
        # The catalog's tables argument (8.7) only on the tools it covers.
        tables = tools["browse"]["inputSchema"]["properties"]["tables"]
        assert tables["items"]["enum"] == ["hits", "cookies", "network"] and tables["uniqueItems"] is True
        assert "cookies (Cookies)" in tables["description"]
        assert "tables" not in tools["report"]["inputSchema"]["properties"]
        # The reserved tools (7.2, 7.3).
        auto = tools["autocontext"]["inputSchema"]["properties"]
        assert auto["request_data"]["items"]["enum"] == ["fields", "broken", "slow", "segment_info"]
        assert "first" in tools["autocontext"]["description"]
        assert tools["autocontext"]["annotations"]["readOnlyHint"] is True


async def test_plain_client_sees_the_same_tools(toy_host) -> None:
    async with toy_host(capability=None) as host:
        assert host.server_capability is not None  # announced whatever the client declares
        assert [t["name"] for t in await host.list_tools()][2:] == [t.name for t in TOOLS]


def _noop_connector(**overrides) -> Connector:
    async def run(arguments, ctx):
        return Info(data={})

    base = {
        "id": "local",
        "title": "Local",
        "version": "1.0.0",
        "description": "A source of host tables only.",
        "instructions": "Local ACP.",
        "credentials": Credentials.none(),
        "resources": Resources.none(),
        "tools": (
            Tool(
                name="forecast",
                description="Forecasts a host table.",
                run=run,
                requires_resource=False,
                requires_credentials=False,
            ),
        ),
    }
    return Connector(**{**base, **overrides})


def test_a_source_without_resources_or_credentials_declares_so() -> None:
    """Spec 4.2 and 6.1: format "none", no examples, empty credentials schema, no resource_id argument."""
    runtime = AcpRuntime(_noop_connector(), environ={})
    cap = runtime.capability()
    assert cap["resource_id"]["format"] == "none" and cap["resource_id"]["examples"] == []
    assert cap["credentials_schema"] == {"type": "object", "properties": {}}
    assert cap["defaults"]["cost_limit_usd"] == 0 and cap["extraction_tools"] == []
    tools = {t.name: t for t in runtime.published_tools()}
    assert "resource_id" not in tools["forecast"].input_schema["properties"]
    assert "resource_id" not in tools["autocontext"].input_schema["properties"]


def test_declaration_mistakes_fail_at_start() -> None:
    async def run(arguments, ctx):
        return Info(data={})

    with pytest.raises(ValueError, match="reserved"):
        AcpRuntime(_noop_connector(tools=(Tool(name="autocontext", description="x", run=run),)), environ={})
    with pytest.raises(ValueError, match="authenticate"):
        AcpRuntime(
            _noop_connector(
                credentials=Credentials(schema={"properties": {"k": {"type": "string"}}}, identify=lambda c: None)
            ),
            environ={},
        )


async def test_a_default_sdk_client_lands_in_the_handshake_era(runtime_dirs) -> None:
    """Notes §5/§7: stdio serves the handshake era, so a default ``mcp.Client`` keeps the back-channel."""
    import sys

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "connectors.databases"], env=runtime_dirs)
    async with Client(params) as client:
        assert client.session.initialize_result is not None
        assert client.session.initialize_result.protocol_version in {"2025-11-25", "2025-06-18", "2025-03-26"}
        tools = await client.list_tools()
        assert [t.name for t in tools.tools][:2] == ["autocontext", "autocontext_data"]


async def test_host_launches_a_server_folder_from_its_acp_json(runtime_dirs) -> None:
    """The host reads acp.json's transport and starts the command from the folder (spec 13.2)."""
    import os
    import sys
    from pathlib import Path

    from discovery import ROOT

    from shared.host import AcpHost

    env = {**runtime_dirs, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    async with AcpHost.for_folder(ROOT / "connectors" / "databases", env=env) as host:
        assert host.server_info["name"] == "databases"
        assert (host.server_capability or {})["version"] == "1.0"
