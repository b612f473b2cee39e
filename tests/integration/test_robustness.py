"""Bad input, cancellation, concurrency, redaction and a clean stdio wire."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from process_support import server_process
from toy_connector import COMMAND as TOY
from toy_connector import TEST_CREDENTIALS

from shared.host import uri_path

pytestmark = pytest.mark.anyio
META = {"credentials": TEST_CREDENTIALS, "autocontext_delivered": True}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}


def _raw_session(lines: list[str], env: dict[str, str], ids: set[int]) -> list[dict]:
    """Pipe raw lines to a server and read stdout until every id in ``ids`` is answered (each line is JSON-RPC).

    stdin stays open until then: at EOF the SDK drops requests still in flight.
    """
    process = subprocess.Popen(
        TOY,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**env, "PATH": "/usr/bin:/bin"},
    )
    assert process.stdin is not None and process.stdout is not None
    replies = []
    try:
        process.stdin.write("\n".join(lines) + "\n")
        process.stdin.flush()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            replies.append(json.loads(line))
            ids.discard(replies[-1].get("id"))
            if not ids:
                break
    finally:
        process.stdin.close()
        process.wait(timeout=30)
    return replies


def _line(obj: dict) -> str:
    return json.dumps(obj)


def test_malformed_json_and_invalid_requests_get_jsonrpc_errors(runtime_dirs) -> None:
    lines = [
        _line(INIT),
        _line({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        '{"jsonrpc": "2.0", "id": 2, "method": "tools/list"',  # truncated JSON
        "not json at all",
        _line({"hello": "world"}),  # JSON, but not JSON-RPC
        _line({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
        _line({"jsonrpc": "2.0", "id": 4, "method": "acp/unknown", "params": {}}),
        _line({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "screenshot", "arguments": {}}}),
    ]
    replies = _raw_session(lines, runtime_dirs, ids={1, 3, 4, 5})
    errors = [r for r in replies if r.get("id") is None]
    assert [e["error"]["code"] for e in errors] == [-32700, -32700, -32600]
    by_id = {r["id"]: r for r in replies if r.get("id") is not None}
    assert [t["name"] for t in by_id[3]["result"]["tools"]][:2] == ["autocontext", "autocontext_data"]
    assert by_id[4]["error"]["code"] == -32601
    assert by_id[5]["result"]["_meta"]["acp"]["kind"] == "info"  # still serving after all of it


async def test_unknown_tool_and_wrong_argument_types(toy_host) -> None:
    async with toy_host() as host:
        unknown = await host.call("drop_everything", {})
        assert (
            unknown.error_name == "ACP_INVALID_ARGUMENTS" and "Available tools: autocontext" in unknown.error["message"]
        )
        cases = [
            ({"resource_id": "acc_1", "start_date": 20260101, "end_date": "today"}, "start_date"),
            ({"resource_id": "acc_1", "start_date": "today", "end_date": "today", "rows": "ten"}, "rows"),
            ({"resource_id": "acc_1", "start_date": "today", "end_date": "today", "rows": -1}, "rows"),
            ({"resource_id": "acc_1", "start_date": "today"}, "end_date"),
            ({"resource_id": "acc_1", "start_date": "today", "end_date": "today", "extra": 1}, "extra"),
            ({"resource_id": "acc_1", "start_date": "the 5th", "end_date": "today"}, "start_date"),
            ({"resource_id": "acc_1", "start_date": "today", "end_date": "3daysAgo"}, "reversed"),
            ({"resource_id": 7, "start_date": "today", "end_date": "today"}, "resource_id"),
        ]
        for arguments, mention in cases:
            result = await host.call("report", arguments, META)
            assert result.error_name == "ACP_INVALID_ARGUMENTS", arguments
            assert mention in result.error["message"], (arguments, result.error["message"])
            assert (
                "call again" in result.error["message"].lower() or "valid arguments" in result.error["message"].lower()
            )


async def test_template_markers_left_in_sql_are_explained(tmp_path, runtime_dirs, in_process) -> None:
    import sqlite3

    from connectors.databases import CONNECTOR

    database = tmp_path / "t.sqlite"
    sqlite3.connect(database).execute("CREATE TABLE t (d TEXT)").connection.commit()
    async with in_process(CONNECTOR, env=runtime_dirs) as host:
        result = await host.call(
            "execute_sql",
            {"resource_id": "t", "sql": "SELECT * FROM t WHERE d BETWEEN '{{start_date}}' AND '{{end_date}}'"},
            {"credentials": {"type": "sqlite", "path": str(database)}},
        )
        assert result.error_name == "ACP_INVALID_ARGUMENTS"
        assert "host substitutes" in result.error["message"]


async def test_cancellation_stops_the_work_at_the_source(toy_host, toy_state) -> None:
    async with toy_host() as host:
        with anyio.move_on_after(1.0) as waiting:
            await host.call("sleep", {"resource_id": "acc_1", "seconds": 30}, META)
        assert waiting.cancelled_caught  # the client gave up on the call, which had not answered
        log = toy_state / "cancel.log"
        with anyio.fail_after(5):
            while not log.exists():
                await anyio.sleep(0.05)
        assert "stopped at source after cancel" in log.read_text("utf-8")
        # And the server is still serving.
        assert not (await host.call("screenshot", {})).is_error


async def test_a_long_call_does_not_stall_other_requests(toy_host, toy_state) -> None:
    """Other requests are answered while a long call is still running (not after it)."""
    long_call: list[object] = []

    async def sleep_long() -> None:
        long_call.append(await host.call("sleep", {"resource_id": "acc_1", "seconds": 30}, META))

    async with toy_host() as host, anyio.create_task_group() as group:
        group.start_soon(sleep_long)
        await anyio.sleep(0.3)
        tools = await host.list_tools()
        quick = await host.call("screenshot", {})
        assert tools and not quick.is_error
        assert long_call == []  # still running at the source
        group.cancel_scope.cancel()
    with anyio.fail_after(30):
        while not (toy_state / "cancel.log").exists():
            await anyio.sleep(0.05)  # the long call stopped at the source, rather than sleeping on


async def test_untyped_failures_are_upstream_errors_without_secrets(toy_host, runtime_dirs) -> None:
    async with toy_host(env={"ACP_LOG_LEVEL": "debug"}) as host:
        result = await host.call("crash", {}, META)
        assert result.error_name == "ACP_UPSTREAM_ERROR" and result.error["code"] == -32018
        assert "RuntimeError" in result.error["message"] and "[REDACTED]" in result.error["message"]
        assert TEST_CREDENTIALS["api_key"] not in json.dumps(result.raw)
        assert not (await host.call("screenshot", {})).is_error
    stderr = host.stderr()
    assert "ACP_UPSTREAM_ERROR" in stderr and TEST_CREDENTIALS["api_key"] not in stderr
    for line in stderr.splitlines():
        json.loads(line)  # structured logs: one JSON object per line


def test_version_flag_and_help() -> None:
    out = subprocess.run([*TOY, "--version"], capture_output=True, text=True, timeout=30, check=True)
    assert out.stdout.strip() == "toy 9.9.9 (ACP 1.0)"
    out = subprocess.run(
        [sys.executable, "-m", "connectors.databases", "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert "--http" in out.stdout and "--log-level" in out.stdout


async def test_table_files_expire_without_further_calls(toy_stdio, tmp_path: Path) -> None:
    """Spec 8.5 / issue: table_uri files are removed after a TTL even if no other call comes,
    and the private folder used without ACP_TMP_DIR goes away with the server."""
    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    env = {"ACP_TMP_DIR": "", "TMPDIR": str(system_tmp), "ACP_TABLE_TTL_S": "1"}
    report = {"resource_id": "acc_1", "start_date": "2026-03-01", "end_date": "2026-03-31", "rows": 500}
    async with toy_stdio(env=env) as host:
        result = await host.call("report", report, {**META, "inline_max_bytes": 1000})
        path = uri_path(result.system_data["table_uri"])
        assert path.exists() and path.parent.parent == system_tmp.resolve()
        assert path.parent.name.startswith("acp-results-")
        with anyio.move_on_after(10):
            while path.exists():
                await anyio.sleep(0.1)
        assert not path.exists()
        assert path.parent.exists()  # the folder lives as long as the server
    assert not path.parent.exists()


async def test_sigterm_exits_in_order_and_removes_the_private_table_folder(toy_stdio, tmp_path: Path) -> None:
    """A host may stop a stdio server with SIGTERM rather than by closing stdin: exit handlers still run."""
    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    env = {"ACP_TMP_DIR": "", "TMPDIR": str(system_tmp)}
    report = {"resource_id": "acc_1", "start_date": "2026-03-01", "end_date": "2026-03-31", "rows": 500}
    async with toy_stdio(env=env) as host:
        result = await host.call("report", report, {**META, "inline_max_bytes": 1000})
        folder = uri_path(result.system_data["table_uri"]).parent
        assert folder.exists() and folder.name.startswith("acp-results-")
        server = server_process("toy_connector")
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=10)  # its exit code belongs to the SDK's client, which spawned it
        assert not folder.exists()  # with Python's default SIGTERM the folder stays behind


def test_a_stdio_client_that_goes_away_mid_answer_is_left_quietly(tmp_path: Path) -> None:
    """The client closes its end of stdout before reading the answers (it exited, or gave up): the server
    leaves by itself, even with stdin still open, with code 0, one JSON log line, no traceback, and its
    exit handlers run (the private table folder goes)."""
    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    env = {"PATH": "/usr/bin:/bin", "TMPDIR": str(system_tmp), "TOY_STATE_DIR": str(tmp_path)}
    if "PYTHONPATH" in os.environ:  # a server started from a worktree imports that worktree's core
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    process = subprocess.Popen(TOY, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    try:
        process.stdin.write(json.dumps(INIT).encode() + b"\n")
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["id"] == 1
        calls = [
            {"name": "stream", "arguments": {"rows": 500}, "_meta": {"acp": {"inline_max_bytes": 1000}}},  # a file
            {"name": "stream", "arguments": {"rows": 50_000}},  # about 1.5 MB inline
        ]
        lines = [{"jsonrpc": "2.0", "method": "notifications/initialized"}]
        lines += [{"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": p} for i, p in enumerate(calls, 2)]
        process.stdin.write(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
        process.stdin.flush()
        process.stdout.close()
        code = process.wait(timeout=30)  # stdin stays open: the server must not wait for its EOF
        stderr = process.stderr.read().decode()
    finally:
        process.kill()
        process.wait()
    assert code == 0, stderr
    [line] = stderr.splitlines()
    record = json.loads(line)
    assert record["level"] == "warning" and "client went away" in record["msg"]
    assert list(system_tmp.iterdir()) == []
