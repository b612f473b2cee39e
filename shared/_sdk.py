"""The few places the core reaches past the public ``mcp`` 2.3 API, kept together.

See ../shared/notes/mcp-sdk.md. Server side: per-connection state lives on a private
attribute, the stock stdio loop drops malformed JSON without the JSON-RPC -32700 answer,
``acp/read_table`` needs a request model of its own, and a stdio client that stops reading
needs the SDK's private stdout claim to be told apart from a crash. Client side (:mod:`shared.host`):
the SDK's ``ClientSession`` can neither declare an experimental capability nor answer a
custom server request, offering a chosen handshake version needs ``adopt``, and the SDK's
HTTP client factory lives in a private module. ``pyproject.toml`` pins ``mcp<2.4`` so these
seams are re-checked on every SDK upgrade.
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Literal, NoReturn

import anyio
import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.runner import serve_connection
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ConfigDict, ValidationError

from ._http import JSON_ONLY_HEADER
from .protocol import ACP_KEY, METHOD_READ_TABLE

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
_IN_MEMORY_SHUTDOWN_S = 2.0  # as the SDK's InMemoryTransport: a server stuck in teardown is then cancelled


class ReadTableRequest(types.Request[dict[str, Any], Literal["acp/read_table"]]):
    method: Literal["acp/read_table"] = "acp/read_table"
    params: dict[str, Any]


class OpenResult(types.Result):
    model_config = ConfigDict(extra="allow")  # the SDK's models drop unknown keys by default


class OpenParams(types.RequestParams):
    """Params of ``acp/configure``: every field is kept for the core to validate."""

    model_config = ConfigDict(extra="allow")


def connection_state(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
    """Per-connection scratch state (one per stdio process or HTTP session)."""
    connection: Connection = ctx.session._connection
    return connection.state


def has_session(ctx: ServerRequestContext[Any, Any]) -> bool:
    """False on the 2026-07-28 revision: every request stands alone, with no back-channel."""
    return ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS


def has_back_channel(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the server can send a request to the client during this call (notes §5)."""
    json_only = ctx.request is not None and ctx.request.headers.get(JSON_ONLY_HEADER.decode())
    return has_session(ctx) and not json_only


def session_label(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """A short, non-reversible label of the HTTP session for logs (the id itself is a capability)."""
    session_id = ctx.session._connection.session_id
    return hashlib.sha256(session_id.encode()).hexdigest()[:12] if session_id else None


def client_acp_capability(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any] | None:
    caps = ctx.session.client_capabilities
    acp = (caps.experimental or {}).get(ACP_KEY) if caps else None
    return acp if isinstance(acp, dict) else None


def progress_reporter(ctx: ServerRequestContext[Any, Any]) -> Any:
    """``report_progress`` of this request, or None when the client sent no progress token.

    (The SDK renames the wire's ``progressToken`` to ``progress_token`` in ``params._meta``, notes §2.)
    """
    wants_progress = (ctx.meta or {}).get("progress_token") is not None
    return ctx.session.report_progress if wants_progress else None


async def read_table(ctx: ServerRequestContext[Any, Any], params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """Send ``acp/read_table`` on the request's own channel; raises ``MCPError``."""
    result = await ctx.session.send_request(
        ReadTableRequest(method=METHOD_READ_TABLE, params=params),  # type: ignore[arg-type]
        OpenResult,
        request_read_timeout_seconds=timeout_s,
        metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
    )
    return result.model_dump(by_alias=True, exclude_none=True)


class _ClientWire(anyio.AsyncFile[str]):
    """The stdout the SDK writes answers to, where a client that went away (its end closed: a
    broken pipe) calls ``client_gone`` instead of failing the SDK's writer task, which ends the
    process with code 1 and an ExceptionGroup traceback once stdin closes (and never while the
    client keeps stdin open, as a thread stays blocked reading it)."""

    def __init__(self, fp: Any, client_gone: Callable[[], NoReturn]) -> None:
        super().__init__(fp)
        self._client_gone = client_gone

    async def write(self, text: str) -> int:
        try:
            return await super().write(text)
        except (BrokenPipeError, ConnectionResetError):
            self._client_gone()

    async def flush(self) -> None:
        try:
            await super().flush()
        except (BrokenPipeError, ConnectionResetError):
            self._client_gone()


async def serve_stdio_handshake_era(
    server: Server[Any], init_options: Any, client_gone: Callable[[], NoReturn]
) -> None:
    """Serve stdio in the handshake era (see :func:`serve_handshake_era`); ``client_gone`` runs
    on the event loop when an answer cannot be written because the client closed its end.

    stdout is claimed as ``stdio_server`` claims it (fd 1 then points at stderr, so stray output
    misses the wire), with the SDK's private helpers: an explicit stdout skips its claim.
    """
    from mcp.server import stdio

    buffer, release = stdio._claim_fd(1, sys.stdout, "wb", stdio._open_stdout_diversion)
    stdout = _ClientWire(stdio._UnownedTextWrapper(buffer, encoding="utf-8"), client_gone)
    try:
        async with stdio.stdio_server(stdout=stdout) as (read_stream, write_stream):
            await serve_handshake_era(server, init_options, read_stream, write_stream)
    finally:
        if release is not None:
            release()


async def serve_handshake_era(server: Server[Any], init_options: Any, read_stream: Any, write_stream: Any) -> None:
    """Serve one connection in the handshake era, answering unparsable input with JSON-RPC errors.

    ``Server.run`` would let a default SDK client negotiate 2026-07-28, which has no
    back-channel for ``acp/read_table`` (notes §5, §7); the stock loop also drops a
    malformed line silently, where JSON-RPC asks for -32700 / -32600 with ``id: null``.
    """

    async def answer_unparsable(exc: Exception) -> None:
        invalid_json = isinstance(exc, ValidationError) and any(e.get("type") == "json_invalid" for e in exc.errors())
        code, message = (
            (PARSE_ERROR, "Parse error: the line is not valid JSON.")
            if invalid_json
            else (INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 request or notification.")
        )
        error = types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=message))
        await write_stream.send(SessionMessage(error))

    dispatcher: JSONRPCDispatcher[Any] = JSONRPCDispatcher(
        read_stream,
        write_stream,
        inline_methods=frozenset({"initialize"}),
        on_stream_exception=answer_unparsable,
    )
    connection = Connection.for_loop(dispatcher, session_id=None)
    async with server.lifespan(server) as lifespan_state:
        await serve_connection(
            server, dispatcher, connection=connection, lifespan_state=lifespan_state, init_options=init_options
        )


@contextlib.asynccontextmanager
async def in_memory_connection(server: Server[Any]) -> AsyncIterator[tuple[Any, Any]]:
    """A client's ``(read, write)`` streams to ``server``, served in this process as over stdio.

    Closing follows ``mcp.client._memory.InMemoryTransport``: end of input first, so the server
    winds down as a stdio server does at EOF, then a bounded wait, and only then a cancel.
    """
    from mcp.shared.memory import create_client_server_memory_streams

    async with create_client_server_memory_streams() as (client_streams, (server_read, server_write)):
        finished = anyio.Event()

        async def serve() -> None:
            try:
                await serve_handshake_era(server, server.create_initialization_options(), server_read, server_write)
            finally:
                finished.set()

        async with anyio.create_task_group() as group:
            group.start_soon(serve)
            try:
                yield client_streams
            finally:
                await client_streams[1].aclose()
                await server_write.aclose()
                with anyio.move_on_after(_IN_MEMORY_SHUTDOWN_S):
                    await finished.wait()
                if not finished.is_set():
                    group.cancel_scope.cancel()


# -- client side (shared.host) -----------------------------------------------------------------
ReadTableHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


class AcpClientSession(ClientSession):
    """``ClientSession`` with the two hooks the SDK keeps private (notes §5, §8).

    ``_build_capabilities``: the SDK hard-codes ``experimental=None``, where ACP declares
    itself (spec 4.1). ``_on_request``: the stock client answers -32601 to any method it
    does not know, ``acp/read_table`` included (spec 8.8).
    """

    def __init__(
        self, *args: Any, experimental: dict[str, Any] | None, read_table: ReadTableHandler, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self._acp_experimental = experimental
        self._acp_read_table = read_table

    def _build_capabilities(self, version: str) -> types.ClientCapabilities:
        caps = super()._build_capabilities(version)
        return caps.model_copy(update={"experimental": self._acp_experimental})

    async def _on_request(self, dctx: Any, method: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
        if method == METHOD_READ_TABLE:
            return await self._acp_read_table(dict(params or {}))
        return await super()._on_request(dctx, method, params)

    async def initialize_at(self, version: str, client_info: types.Implementation) -> types.InitializeResult:
        """The handshake offering ``version`` (``initialize`` always offers the SDK's latest, notes §7)."""
        result = await self.send_request(
            types.InitializeRequest(
                params=types.InitializeRequestParams(
                    protocol_version=version, capabilities=self._build_capabilities(version), client_info=client_info
                )
            ),
            types.InitializeResult,
        )
        self.adopt(result)
        await self.send_notification(types.InitializedNotification())
        return result


def http_client(headers: Mapping[str, str] | None = None) -> httpx2.AsyncClient:
    """The SDK's HTTP client with its MCP timeouts (30 s, and 300 s to read a held-open stream)."""
    return create_mcp_http_client(headers=dict(headers or {}))
