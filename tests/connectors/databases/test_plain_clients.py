"""What a plain MCP client gets from ``execute_sql`` over HTTP: the stock ``mcp`` SDK client, default settings,
no ACP capability (issue 12: the clients that met the connector)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import anyio
import pytest
from http_support import http_server, module_command

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # a real HTTP server and a million rows
ROWS = 1_000_000
EVENT_LIMIT = 1024 * 1024  # the mcp client's (and fastmcp's) default cap on one server-sent event


def _million_rows(path: Path) -> None:
    """One table of ROWS rows, generated inside SQLite (no Python loop)."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("CREATE TABLE visits (id INTEGER PRIMARY KEY, day TEXT, page TEXT, seconds REAL)")
        conn.execute(
            "INSERT INTO visits WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
            "SELECT i, date('2026-01-01', '+' || (i % 365) || ' days'), '/p/' || (i % 1000), (i % 600) / 10.0 FROM n",
            (ROWS,),
        )
        conn.commit()
    finally:
        conn.close()


async def test_a_stock_mcp_client_gets_a_useful_answer_for_a_million_row_extraction(
    tmp_path: Path, runtime_dirs: dict[str, str]
) -> None:
    """Done when (issue 12): a 1,000,000-row extraction answers a default ``mcp`` client over HTTP with a
    valid model_response (the notice and the sample) and no error, every message within the client's
    default limits. How the table itself travels (a link, or left out for a plain client) is not the
    subject here."""
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    database = tmp_path / "visits.sqlite"
    _million_rows(database)
    credentials = {"type": "sqlite", "path": str(database)}
    with http_server(module_command("databases"), runtime_dirs, tmp_path) as server:
        async with (
            streamable_http_client(server.url) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            with anyio.fail_after(120):
                result = await session.call_tool(
                    "execute_sql",
                    {"resource_id": "visits", "sql": "SELECT id, day, page, seconds FROM visits ORDER BY id"},
                    meta={"acp": {"credentials": credentials}},
                )
        log = server.read_stderr()
    assert not result.is_error, result.content
    assert len(result.model_dump_json(by_alias=True)) < EVENT_LIMIT
    model = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert model["notice"].startswith(f"Showing 25 of {ROWS} extracted rows")
    assert model["columns"] == ["id", "day", "page", "seconds"]
    conn = sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)
    try:
        conn.row_factory = sqlite3.Row
        first = [dict(row) for row in conn.execute("SELECT id, day, page, seconds FROM visits ORDER BY id LIMIT 25")]
    finally:
        conn.close()
    assert model["rows"] == first
    assert '"level": "error"' not in log and "Traceback" not in log, log
