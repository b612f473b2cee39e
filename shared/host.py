"""A small ACP host (the client side of the core).

It launches a connector (from its ``acp.json`` folder or ``python -m``), declares the
client capability (spec 4.1), configures, calls tools with ``_meta.acp``, answers
``acp/read_table`` from in-memory tables, reads ``table_uri`` files and exposes the three
parts of each result. Tests, the build's zip verification and the bridge use it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client
from mcp.shared.exceptions import MCPError
from pydantic import ConfigDict

from ._tablefiles import uri_path
from .protocol import ACP_KEY, ACP_VERSION, METHOD_CONFIGURE, METHOD_READ_TABLE, JsonObject

if TYPE_CHECKING:
    from .declaration import Connector

ACP_HOST_CAPABILITY: JsonObject = {
    "version": ACP_VERSION,
    "stores_system_data": True,
    "autocontext_delivery": "inject",
    "multi_table": True,
    "host_tables": True,
}


class _OpenResult(types.Result):
    model_config = ConfigDict(extra="allow")  # keep every key of a custom method's result


class HostProtocolError(Exception):
    """A JSON-RPC error answer (for example ``-32016`` from ``acp/configure``)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.data = code, message, data


@dataclass
class HostTable:
    """What the host answers to ``acp/read_table`` for one ref.

    ``error_code`` makes the host refuse (-32021 not found, -32022 truncated);
    ``as_file`` answers with ``format: "file"`` and a ``table_uri``.
    """

    headers: list[JsonObject] = field(default_factory=list)
    rows: list[JsonObject] = field(default_factory=list)
    as_file: bool = False
    error_code: int | None = None
    error_message: str = ""


@dataclass
class ToolResponse:
    """One ``tools/call`` answer, split into the parts of spec 8."""

    raw: JsonObject
    download_headers: dict[str, str] = field(default_factory=dict)
    _downloaded: dict[str, bytes] = field(default_factory=dict, repr=False)

    @property
    def is_error(self) -> bool:
        return bool(self.raw.get("isError"))

    @property
    def text(self) -> str:
        content = self.raw.get("content") or [{}]
        return str(content[0].get("text", ""))

    @property
    def model_response(self) -> Any:
        return json.loads(self.text)

    @property
    def acp(self) -> JsonObject:
        return dict((self.raw.get("_meta") or {}).get(ACP_KEY) or {})

    @property
    def kind(self) -> str | None:
        return self.acp.get("kind")

    @property
    def system_info(self) -> JsonObject:
        return dict(self.acp.get("system_info") or {})

    @property
    def system_data(self) -> JsonObject | None:
        return self.acp.get("system_data")

    @property
    def error(self) -> JsonObject | None:
        return self.acp.get("error")

    @property
    def error_name(self) -> str | None:
        return (self.error or {}).get("name")

    def rows(self, exact: bool = False) -> list[JsonObject]:
        """The full table of a single-table extraction (inline, a file, or a single-use URL)."""
        data = self.system_data
        if data is None:
            raise ValueError("this response has no system_data")
        return self._table_rows(data, exact)

    def tables(self, exact: bool = False) -> dict[str, list[JsonObject]]:
        """Every table of a multi-table extraction, by name."""
        data = self.system_data or {}
        return {t["name"]: self._table_rows(t, exact) for t in data.get("tables", [])}

    def _table_rows(self, data: Mapping[str, Any], exact: bool) -> list[JsonObject]:
        if data.get("format") != "file":
            rows = data.get("table", [])
        else:
            uri = str(data["table_uri"])
            if uri not in self._downloaded:  # an HTTP link works once: keep what it gave
                self._downloaded[uri] = _read_table_uri(uri, self.download_headers)
            text = self._downloaded[uri]
            rows = json.loads(text, parse_float=Decimal) if exact else json.loads(text)
        if not isinstance(rows, list):
            raise ValueError("table is not a JSON array")
        return rows


def _read_table_uri(uri: str, headers: Mapping[str, str]) -> bytes:
    if uri.startswith(("http://", "https://")):
        request = urllib.request.Request(uri, headers=dict(headers))  # noqa: S310 - the server's own link
        with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310
            return bytes(answer.read())
    return uri_path(uri).read_bytes()


class _AcpClientSession(ClientSession):
    """ClientSession with the two hooks the SDK keeps private (notes §5, §8)."""

    def __init__(self, *args: Any, experimental: dict[str, Any] | None, host: AcpHost, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._acp_experimental = experimental
        self._acp_host = host

    def _build_capabilities(self, version: str) -> types.ClientCapabilities:
        caps = super()._build_capabilities(version)
        return caps.model_copy(update={"experimental": self._acp_experimental})

    async def _on_request(self, dctx: Any, method: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
        if method == METHOD_READ_TABLE:
            return self._acp_host.answer_read_table(dict(params or {}))
        return await super()._on_request(dctx, method, params)


class AcpHost:
    """Talk ACP to one connector: launched over stdio, reached at an HTTP URL, or served in this process.

    ``capability=None`` behaves as a plain MCP client that declares no ACP capability.
    ``protocol_version`` picks the MCP revision: a handshake version (2025-03-26, 2025-06-18,
    2025-11-25; default the SDK's latest) or ``"2026-07-28"``, the stateless revision.
    """

    def __init__(
        self,
        command: Sequence[str] | None = None,
        *,
        url: str | None = None,
        connector: Connector | None = None,
        token: str | None = None,
        server_stderr: Path | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        capability: JsonObject | None = ACP_HOST_CAPABILITY,
        tables: Mapping[str, HostTable] | None = None,
        protocol_version: str | None = None,
        read_timeout_s: float = 120.0,
    ) -> None:
        if [command, url, connector].count(None) != 2:
            raise ValueError("give a command (stdio), a url (HTTP) or a connector (in process)")
        self.command = list(command or [])
        self.url = url
        self.connector = connector
        self.token = token
        self.env = dict(env or {})
        self.cwd = cwd
        self.capability = capability
        self.tables: dict[str, HostTable] = dict(tables or {})
        self.read_table_requests: list[JsonObject] = []
        self.protocol_version = protocol_version
        self.read_timeout_s = read_timeout_s
        self.initialize_result: JsonObject = {}
        self.stderr_path: Path | None = server_stderr
        self._session: _AcpClientSession | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._tmp = tempfile.TemporaryDirectory(prefix="acp-host-")

    @classmethod
    def for_module(cls, connector_id: str, **kwargs: Any) -> AcpHost:
        """Run ``python -m connectors.<id>`` with this interpreter."""
        return cls([sys.executable, "-m", f"connectors.{connector_id}"], **kwargs)

    @classmethod
    def in_process(cls, connector: Connector, **kwargs: Any) -> AcpHost:
        """Serve ``connector`` in this process over in-memory MCP streams, as stdio serves it.

        ``env`` is the server's environment for the core's settings (``ACP_TMP_DIR``,
        ``ACP_CACHE_DIR``, ``ACP_TABLE_TTL_S``, ``ACP_LOG_LEVEL``): only what it holds, as a
        launched server gets only what it is given. Connector code that reads ``os.environ``
        itself sees this process's. The server's log lines go to the file :meth:`stderr` reads.
        """
        return cls(connector=connector, **kwargs)

    @classmethod
    def for_folder(cls, folder: str | os.PathLike[str], **kwargs: Any) -> AcpHost:
        """Launch a server folder the way a host does, from its ``acp.json`` (spec 13.2)."""
        root = Path(folder)
        manifest = json.loads((root / "acp.json").read_text("utf-8-sig"))
        transport = manifest["transport"]
        if transport.get("type") != "stdio":
            raise ValueError("only stdio transports can be launched from a folder")
        program = transport["command"]
        search_path = (kwargs.get("env") or {}).get("PATH")
        if search_path and os.sep not in program:
            # The program is looked up on the PATH the server is given, as a host's shell would.
            program = shutil.which(program, path=search_path) or program
        return cls([program, *transport.get("args", [])], cwd=root, **kwargs)

    # -- lifecycle ---------------------------------------------------------------------------
    async def __aenter__(self) -> AcpHost:
        stack = contextlib.AsyncExitStack()
        await stack.__aenter__()
        try:
            if self.url is not None:
                read, write = await self._open_http(stack)
            elif self.connector is not None:
                read, write = await self._open_in_process(stack, self.connector)
            else:
                read, write = await self._open_stdio(stack)
            experimental = {ACP_KEY: self.capability} if self.capability is not None else None
            session = _AcpClientSession(read, write, experimental=experimental, host=self)
            self._session = await stack.enter_async_context(session)
            self.initialize_result = await self._initialize()
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def _open_stdio(self, stack: contextlib.AsyncExitStack) -> Any:
        self.stderr_path = Path(self._tmp.name) / "server-stderr.log"
        errlog = stack.enter_context(self.stderr_path.open("w", encoding="utf-8"))
        # The SDK's list of variables safe to inherit (on Windows Python needs several of them, e.g.
        # PROCESSOR_ARCHITECTURE for platform.machine()), plus PYTHONPATH for development runs.
        env = get_default_environment()
        if "PYTHONPATH" in os.environ:
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        env.update(self.env)
        params = StdioServerParameters(
            command=self.command[0], args=self.command[1:], env=env, cwd=str(self.cwd) if self.cwd else None
        )
        return await stack.enter_async_context(stdio_client(params, errlog=errlog))

    async def _open_in_process(self, stack: contextlib.AsyncExitStack, connector: Connector) -> Any:
        from . import _sdk
        from ._redaction import logging_to
        from ._runtime import AcpRuntime

        self.stderr_path = Path(self._tmp.name) / "server-stderr.log"
        errlog = stack.enter_context(self.stderr_path.open("w", encoding="utf-8"))
        stack.enter_context(logging_to(errlog, self.env.get("ACP_LOG_LEVEL") or "warning"))
        runtime = AcpRuntime(connector, environ=self.env)
        # A server process writes its recently used resources at exit; this one ends with the connection.
        stack.callback(runtime.autocontext.recency.flush)
        return await stack.enter_async_context(_sdk.in_memory_connection(runtime.build_server()))

    async def _open_http(self, stack: contextlib.AsyncExitStack) -> Any:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        assert self.url is not None
        http = await stack.enter_async_context(create_mcp_http_client(headers=self._auth_headers()))
        read, write = await stack.enter_async_context(streamable_http_client(self.url, http_client=http))
        return read, write

    def _auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    async def __aexit__(self, *exc: object) -> None:
        if self._stack is not None:
            await self._stack.aclose()
            self._stack = None
        # The temporary folder (stderr log, table files) stays until this object is collected.

    @property
    def session(self) -> _AcpClientSession:
        if self._session is None:
            raise RuntimeError("use 'async with AcpHost(...)' first")
        return self._session

    async def _initialize(self) -> JsonObject:
        session = self.session
        if self.protocol_version == "2026-07-28":
            # The stateless revision has no initialize: discover the server instead.
            discovered = (await session.discover()).model_dump(by_alias=True, exclude_none=True)
            stamp = (discovered.get("_meta") or {}).get("io.modelcontextprotocol/serverInfo", {})
            return {**discovered, "serverInfo": stamp, "protocolVersion": self.protocol_version}
        if self.protocol_version is None:
            result = await session.initialize()
        else:
            result = await session.send_request(
                types.InitializeRequest(
                    params=types.InitializeRequestParams(
                        protocol_version=self.protocol_version,
                        capabilities=session._build_capabilities(self.protocol_version),
                        client_info=types.Implementation(name="acp-test-host", version="1.0"),
                    )
                ),
                types.InitializeResult,
            )
            session.adopt(result)
            await session.send_notification(types.InitializedNotification())
        return result.model_dump(by_alias=True, exclude_none=True)

    # -- what the server declared ---------------------------------------------------------------
    @property
    def server_capability(self) -> JsonObject | None:
        experimental = (self.initialize_result.get("capabilities") or {}).get("experimental") or {}
        acp = experimental.get(ACP_KEY)
        return dict(acp) if isinstance(acp, dict) else None

    @property
    def server_info(self) -> JsonObject:
        return dict(self.initialize_result.get("serverInfo") or {})

    def stderr(self) -> str:
        return self.stderr_path.read_text("utf-8", errors="replace") if self.stderr_path else ""

    # -- requests ------------------------------------------------------------------------------
    async def request(
        self, method: str, params: JsonObject | None = None, progress: list[JsonObject] | None = None
    ) -> JsonObject:
        """Any JSON-RPC request; a JSON-RPC error raises :class:`HostProtocolError`.

        With a ``progress`` list the request carries a progress token, and each
        ``notifications/progress`` the server sends is appended to it.
        """

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            assert received is not None
            received.append({"progress": progress, "total": total, "message": message})

        received = progress

        try:
            result = await self.session.send_request(
                types.Request[dict[str, Any] | None, str](method=method, params=params),
                _OpenResult,
                request_read_timeout_seconds=self.read_timeout_s,
                progress_callback=on_progress if progress is not None else None,
            )
            raw: JsonObject = result.model_dump(by_alias=True)
            if raw.get("_meta") is None:
                raw.pop("_meta", None)  # the model's own empty field, not something the server sent
            return raw
        except MCPError as exc:
            raise HostProtocolError(exc.code, exc.message, exc.data) from None

    async def configure(self, **params: Any) -> JsonObject:
        return await self.request(METHOD_CONFIGURE, params)

    async def list_tools(self) -> list[JsonObject]:
        result = await self.session.list_tools()
        return [t.model_dump(by_alias=True, exclude_none=True) for t in result.tools]

    async def call(
        self,
        name: str,
        arguments: JsonObject | None = None,
        meta: JsonObject | None = None,
        progress: list[JsonObject] | None = None,
    ) -> ToolResponse:
        """``tools/call`` with ``_meta.acp`` = ``meta``; ``progress`` collects progress notifications."""
        result = await self.request(
            "tools/call",
            {"name": name, "arguments": arguments or {}, **({"_meta": {ACP_KEY: meta}} if meta is not None else {})},
            progress=progress,
        )
        return ToolResponse(result, download_headers=self._auth_headers())

    # -- acp/read_table (spec 8.8) ---------------------------------------------------------------
    def answer_read_table(self, params: JsonObject) -> JsonObject:
        self.read_table_requests.append(params)
        ref = str(params.get("ref", ""))
        table = self.tables.get(ref)
        if table is None:
            raise MCPError(code=-32021, message=f"No dataset or report '{ref}' in this conversation.")
        if table.error_code is not None:
            raise MCPError(code=table.error_code, message=table.error_message or "refused")
        answer: JsonObject = {"format": "inline", "row_count": len(table.rows), "headers": table.headers}
        if table.as_file:
            path = Path(self._tmp.name) / f"read-table-{len(self.read_table_requests)}.json"
            path.write_text(json.dumps(table.rows), "utf-8")
            answer.update(format="file", table_uri=path.as_uri())
        else:
            answer["table"] = table.rows
        return answer
