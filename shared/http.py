"""MCP Streamable HTTP transport for every connector (spec 3.2)."""

from __future__ import annotations

from typing import Any

from mcp.server.lowlevel import Server


def serve_http(server: Server[Any], *, host: str, port: int, log_level: str) -> None:
    """Serve ``/mcp`` with stateful sessions (``acp/configure`` state is per session)."""
    import uvicorn

    app = server.streamable_http_app(streamable_http_path="/mcp", json_response=False, stateless_http=False, host=host)
    uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=False)
