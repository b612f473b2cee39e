"""``AcpHost.in_process``: a connector served in this process over in-memory MCP streams, as stdio serves it."""

from __future__ import annotations

import json
import logging

import pytest
from toy_connector import CONNECTOR as TOY
from toy_connector import TEST_CREDENTIALS

from shared import _redaction
from shared.host import AcpHost

pytestmark = pytest.mark.anyio


async def test_it_serves_the_handshake_era_like_stdio(toy_host) -> None:
    async with toy_host() as host:
        assert host.initialize_result["protocolVersion"] in {"2025-03-26", "2025-06-18", "2025-11-25"}
        assert host.server_info["name"] == "toy" and (host.server_capability or {})["version"] == "1.0"


async def test_the_server_logs_to_its_own_file_and_leaves_logging_as_it_was(toy_host) -> None:
    root = logging.getLogger()
    before = (root.level, list(root.handlers), logging.getLogger("mcp").level)
    async with toy_host(env={"ACP_LOG_LEVEL": "debug"}) as host:
        assert root.level == logging.DEBUG
        result = await host.call("crash", {}, {"credentials": TEST_CREDENTIALS})
        assert result.error_name == "ACP_UPSTREAM_ERROR"
    assert (root.level, list(root.handlers), logging.getLogger("mcp").level) == before
    lines = [json.loads(line) for line in host.stderr().splitlines()]
    assert any(line["logger"] == "acp" and "ACP_UPSTREAM_ERROR" in line["msg"] for line in lines)
    assert not any(line["logger"].startswith("mcp.client") for line in lines)  # the host's side is not the server's


async def test_the_server_reads_its_settings_from_the_env_it_is_given(tmp_path, monkeypatch) -> None:
    """Only what ``env`` holds, as a launched server gets only what it is given."""
    given, ambient = tmp_path / "given", tmp_path / "ambient"
    monkeypatch.setenv("ACP_TMP_DIR", str(ambient))
    monkeypatch.setattr(_redaction, "SECRETS", _redaction.SecretRegistry())  # as the in_process fixture does
    meta = {"credentials": TEST_CREDENTIALS, "autocontext_delivered": True, "inline_max_bytes": 100}
    report = {"resource_id": "acc_1", "start_date": "2026-03-01", "end_date": "2026-03-31", "rows": 40}
    async with AcpHost.in_process(TOY, env={"ACP_TMP_DIR": str(given)}) as host:
        result = await host.call("report", report, meta)
    assert result.system_data["format"] == "file"
    assert [p.name for p in given.iterdir()] and not ambient.exists()


def test_a_host_needs_exactly_one_way_to_reach_its_server() -> None:
    for ways in ({}, {"command": ["x"], "url": "http://127.0.0.1:1/mcp"}, {"url": "http://x", "connector": TOY}):
        with pytest.raises(ValueError, match="in process"):
            AcpHost(**ways)
