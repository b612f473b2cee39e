"""A bare MCP low-level server: the yardstick the connector benchmarks compare against.

    python bench/baseline_server.py noop           # one tool, ``noop``, returning an empty text
    python bench/baseline_server.py sqlite PATH    # one tool, ``query(sql)``, on a SQLite file

It imports only the SDK and the standard library (never ``shared``), and serves stdio
the way the connectors do: the handshake-era loop (``mcp.server.runner.serve_loop``)
inside ``stdio_server()``, with the server lifespan entered, so start-up and per-call
figures differ from the connector's only by what ACP adds.

In ``sqlite`` mode each call opens the file read-only (``mode=ro``) and runs the query in a
worker thread, as the connector does, and answers ``{"columns": [...], "rows": [...]}``
as JSON in ``content[0].text``.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server

USAGE = "usage: baseline_server.py noop | sqlite PATH"


def _text(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


def noop_server() -> Server[Any]:
    tool = types.Tool(name="noop", description="Does nothing.", input_schema={"type": "object", "properties": {}})

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return _text("")

    return Server("baseline-noop", version="0.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


def run_query(path: str, sql: str) -> dict[str, Any]:
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
    try:
        cursor = conn.execute(sql)
        columns = [d[0] for d in cursor.description or ()]
        rows = [list(row) for row in cursor.fetchall()]
    finally:
        conn.close()
    return {"columns": columns, "rows": rows}


def sqlite_server(path: str) -> Server[Any]:
    tool = types.Tool(
        name="query",
        description="Runs one SQL query on the SQLite file and returns the rows.",
        input_schema={"type": "object", "properties": {"sql": {"type": "string"}}, "required": ["sql"]},
    )

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        sql = str((params.arguments or {}).get("sql", ""))
        try:
            table = await anyio.to_thread.run_sync(run_query, path, sql)
        except sqlite3.Error as exc:
            return _text(f"{type(exc).__name__}: {exc}", error=True)
        return _text(json.dumps(table, default=str, ensure_ascii=False))

    return Server("baseline-sqlite", version="0.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(server: Server[Any]) -> None:
    """stdio in the handshake era: the same loop ``shared._sdk.serve_stdio_handshake_era`` drives."""
    async with stdio_server() as (read_stream, write_stream), server.lifespan(server) as lifespan_state:
        await serve_loop(
            server,
            read_stream,
            write_stream,
            lifespan_state=lifespan_state,
            init_options=server.create_initialization_options(),
        )


def main(argv: list[str]) -> None:
    if argv[:1] == ["noop"] and len(argv) == 1:
        server = noop_server()
    elif argv[:1] == ["sqlite"] and len(argv) == 2:
        server = sqlite_server(argv[1])
    else:
        sys.exit(USAGE)
    anyio.run(serve, server)


if __name__ == "__main__":
    main(sys.argv[1:])
