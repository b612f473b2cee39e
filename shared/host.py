"""The client side of ACP: a host that talks to one connector (spec 4.1, 8, 11, 16.5).

It launches a connector (from its ``acp.json`` folder or ``python -m``) or reaches one at an
HTTP URL, declares the client capability, configures, calls tools with ``_meta.acp``,
answers ``acp/read_table`` through a resolver and streams result tables. The ACP bridge
stands on it; the tests, the build's zip verification and the bench scripts use it too.

Public surface:

``AcpHost``
    One connection to one connector. ``AcpHost(command)``, ``AcpHost.for_module(id)`` and
    ``AcpHost.for_folder(path)`` launch it over stdio; ``AcpHost(url=…, token=…)`` reaches
    it over Streamable HTTP. Inside ``async with``: ``configure(**settings)``,
    ``call(tool, arguments, meta)``, ``list_tools()``, ``request(method, params)`` and
    ``open_table(table)``; ``server_capability``, ``server_info``, ``initialize_result``
    and ``stderr()`` describe the server. ``tables=`` takes the :class:`TableResolver`;
    every ACP call gets a ``call_id`` when ``meta`` has none, so that its ``acp/read_table``
    requests find its conversation. ``client_name`` names the host in ``clientInfo``.
``ToolResponse``
    One ``tools/call`` answer split into the parts of spec 8 (``model_response``,
    ``system_info``, ``system_data``, ``error``…). ``rows()`` and ``tables()`` load whole
    tables into memory, blocking: conveniences for tests and small results.
``open_table(table)``
    Streams the rows of a ``system_data`` (or of one entry of its ``tables``): inline rows,
    a ``file://`` table file or a server's single-use link, parsed incrementally, off the
    event loop, with exact integers and (``exact=True``) exact decimals. Yields a
    :class:`TableReader`: ``headers``, ``row_count``, ``async for row in reader`` and
    ``batches()``. ``AcpHost.open_table`` adds the connection's bearer token for the
    server's own links, and only for links on the endpoint's origin. The caller may delete a
    ``file://`` table once read (spec 8.5); a link works once.
``TableResolver``, ``InlineTable``, ``TableFile``
    How ``acp/read_table`` is answered (spec 8.8): the resolver gets the ref, the
    ``call_id`` and the conversation of the call in flight (spec 8.8.1: ``None`` when the
    call named none, or the ``call_id`` is unknown), and returns one of the two tables or
    raises a refusal: :class:`~shared.errors.TableNotFound` (-32021),
    :class:`~shared.errors.TableTruncated` (-32022) or
    :class:`~shared.errors.HostTablesUnsupported` (-32020).
``HostProtocolError``, ``TableReadError``
    A JSON-RPC error answer; a table that could not be read.
``ACP_HOST_CAPABILITY``, ``MAX_EVENT_BYTES``, ``uri_path``
    The capability declared by default; the largest server-sent event accepted over HTTP;
    the local path of a ``file://`` ``table_uri``.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import logging
import os
import re
import secrets
import shutil
import sys
import tempfile
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

import anyio
import httpx2
import mcp_types as types
from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from . import _sdk
from ._tablefiles import uri_path
from .errors import HostTablesUnsupported, TableNotFound, TableTruncated
from .protocol import ACP_KEY, ACP_VERSION, METHOD_CONFIGURE, Header, JsonObject

__all__ = [
    "ACP_HOST_CAPABILITY",
    "MAX_EVENT_BYTES",
    "AcpHost",
    "HostProtocolError",
    "InlineTable",
    "TableFile",
    "TableReadError",
    "TableReader",
    "TableResolver",
    "ToolResponse",
    "open_table",
    "uri_path",
]

log = logging.getLogger("acp.host")

if TYPE_CHECKING:
    from .declaration import Connector

ACP_HOST_CAPABILITY: JsonObject = {
    "version": ACP_VERSION,
    "stores_system_data": True,
    "autocontext_delivery": "inject",
    "multi_table": True,
    "host_tables": True,
}
# The mcp client refuses server-sent events above 1 MiB by default. ACP servers send tables
# of up to inline_max_bytes (5 MiB by default, spec 8.5) inline plus the model's rows, so
# the host accepts far more; the bound still keeps a runaway server from filling memory.
MAX_EVENT_BYTES = 64 * 1024 * 1024
_CHUNK_BYTES = 64 * 1024  # one read (and one parse, off the event loop) of a streamed table
_REFUSALS = (HostTablesUnsupported, TableNotFound, TableTruncated)
_INTERNAL_ERROR = -32603


class HostProtocolError(Exception):
    """A JSON-RPC error answer (for example ``-32016`` from ``acp/configure``)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.data = code, message, data


class TableReadError(Exception):
    """A result table could not be read: a used or expired link, a missing or malformed file."""


# -- acp/read_table (spec 8.8) --------------------------------------------------------------------
@dataclass(frozen=True)
class InlineTable:
    """A host table answered inline: typed headers and every row."""

    headers: list[Header]
    rows: list[JsonObject]


@dataclass(frozen=True)
class TableFile:
    """A host table answered by reference: a JSON file (an array of objects, spec 8.5) the server reads.

    With ``remove_after_call`` the host deletes the file once the tool call that asked for
    it has finished (the server reads it during the call).
    """

    path: Path
    headers: list[Header]
    row_count: int
    remove_after_call: bool = False


class TableResolver(Protocol):
    """Answers ``acp/read_table`` (spec 8.8) for the host.

    ``conversation`` is the ``conversation_id`` (else ``session_id``) of the call in flight,
    or ``None``: then, per 8.8.1, tables private to a conversation must not resolve. Raise
    ``TableNotFound`` for an unknown, invisible or query id, ``TableTruncated`` for a
    report that only keeps a sample (name its source dataset in the message), and
    ``HostTablesUnsupported`` when the host has no table store.
    """

    async def __call__(self, ref: str, *, call_id: str | None, conversation: str | None) -> InlineTable | TableFile:
        """The table behind ``ref``, or a refusal."""
        ...


def _read_table_answer(table: InlineTable | TableFile) -> JsonObject:
    """The answer of 8.8: the shape of a single-table ``system_data``."""
    if isinstance(table, TableFile):
        return {
            "format": "file",
            "row_count": table.row_count,
            "headers": table.headers,
            "table_uri": table.path.absolute().as_uri(),
        }
    return {"format": "inline", "row_count": len(table.rows), "headers": table.headers, "table": table.rows}


# -- reading result tables -----------------------------------------------------------------------
_NOT_WHITESPACE = re.compile(r"[^ \t\n\r]")
_ROW_SEPARATOR = re.compile(r"[ \t\n\r]*,[ \t\n\r]*(?=\{)")  # between two rows, the next one begun


class _JsonRowsParser:
    """Incremental parser of a JSON array of objects (a table file, spec 8.5): bytes in, rows out.

    Only the unparsed tail is kept, so memory follows the chunk size, not the table. A row
    cut by a chunk boundary is retried once the buffer has doubled, which keeps a single
    huge row linear rather than quadratic.
    """

    _START, _FIRST, _NEXT, _VALUE, _END = range(5)

    def __init__(self, exact: bool) -> None:
        self._decoder = json.JSONDecoder(parse_float=Decimal) if exact else json.JSONDecoder()
        self._text = codecs.getincrementaldecoder("utf-8-sig")()
        self._buffer = ""
        self._state = self._START
        self._wanted = 0

    def feed(self, data: bytes) -> list[JsonObject]:
        return self._parse(data, final=False)

    def finish(self) -> list[JsonObject]:
        """The last rows; raises if the array is not complete."""
        rows = self._parse(b"", final=True)
        if self._state != self._END:
            raise TableReadError("The table ends before its closing ']': the file or download is incomplete.")
        return rows

    def _parse(self, data: bytes, final: bool) -> list[JsonObject]:
        try:
            self._buffer += self._text.decode(data, final)
        except UnicodeDecodeError:
            raise TableReadError("The table is not UTF-8 JSON.") from None
        if not final and len(self._buffer) < self._wanted:
            return []
        self._wanted = 0
        rows: list[JsonObject] = []
        text, pos = self._buffer, 0
        while True:
            found = _NOT_WHITESPACE.search(text, pos)
            if found is None:
                pos = len(text)
                break
            pos = found.start()
            char = text[pos]
            if self._state == self._START:
                if char != "[":
                    raise TableReadError(
                        "A table file holds a JSON array of objects; this one does not start with '['."
                    )
                self._state, pos = self._FIRST, pos + 1
                continue
            if self._state == self._END:
                raise TableReadError("The table has data after its closing ']'.")
            if self._state in (self._FIRST, self._NEXT) and char == "]":
                self._state, pos = self._END, pos + 1
                continue
            if self._state == self._NEXT:
                if char != ",":
                    raise TableReadError(f"Malformed table: expected ',' or ']' between rows, found {char!r}.")
                self._state, pos = self._VALUE, pos + 1
                continue
            if char != "{":
                raise TableReadError("Malformed table: every row of a table is a JSON object.")
            pos, complete = self._rows(text, pos, rows)
            if not complete:
                if final:
                    raise TableReadError("Malformed table: a row is not valid JSON.")
                self._wanted = 2 * (len(text) - pos)  # the row is cut by the chunk: wait for more
                break
            self._state = self._NEXT
        self._buffer = text[pos:]
        return rows

    def _rows(self, text: str, pos: int, rows: list[JsonObject]) -> tuple[int, bool]:
        """Rows from ``pos`` (a ``{``) for as long as they follow one another (the hot loop).

        Returns where it stopped and whether the last row was complete; an incomplete row
        stays unread, from its ``{``.
        """
        decode, separator = self._decoder.raw_decode, _ROW_SEPARATOR.match
        while True:
            try:
                row, after = decode(text, pos)
            except json.JSONDecodeError:
                return pos, False
            rows.append(row)
            following = separator(text, after)
            if following is None:
                return after, True
            pos = following.end()


def _file_batches(handle: IO[bytes], exact: bool) -> Generator[list[JsonObject]]:
    """The rows of an open table file, one list per chunk read."""
    parser = _JsonRowsParser(exact)
    while chunk := handle.read(_CHUNK_BYTES):
        rows = parser.feed(chunk)
        if rows:
            yield rows
    last = parser.finish()
    if last:
        yield last


async def _thread_batches(batches: Generator[list[JsonObject]]) -> AsyncGenerator[list[JsonObject]]:
    """A blocking batch iterator driven from worker threads, one chunk per hop."""
    while (batch := await anyio.to_thread.run_sync(next, batches, None)) is not None:
        yield batch


async def _stream_batches(chunks: AsyncIterator[bytes], exact: bool) -> AsyncGenerator[list[JsonObject]]:
    """Rows of a downloaded table: bytes gathered into chunks, each parsed in a worker thread."""
    parser = _JsonRowsParser(exact)
    pending = bytearray()
    async for data in chunks:
        pending += data
        if len(pending) >= _CHUNK_BYTES:
            rows = await anyio.to_thread.run_sync(parser.feed, bytes(pending))
            pending.clear()
            if rows:
                yield rows
    rows = await anyio.to_thread.run_sync(parser.feed, bytes(pending))
    rows += parser.finish()
    if rows:
        yield rows


async def _inline_batches(rows: list[JsonObject]) -> AsyncIterator[list[JsonObject]]:
    yield rows


class TableReader:
    """The rows of one table, streamed: ``async for row in reader``; ``batches()`` gives lists."""

    def __init__(self, headers: list[Header], row_count: int, batches: AsyncIterator[list[JsonObject]]) -> None:
        self.headers = headers
        self.row_count = row_count
        self._batches = batches

    def batches(self) -> AsyncIterator[list[JsonObject]]:
        """The rows in lists, as they were read (cheaper per row than iterating one by one)."""
        return self._batches

    async def __aiter__(self) -> AsyncIterator[JsonObject]:
        async for batch in self._batches:
            for row in batch:
                yield row


def _table_entry(table: Mapping[str, Any]) -> tuple[list[Header], int]:
    if table.get("format") == "tables":
        raise TableReadError("A multi-table system_data: open each entry of its 'tables' instead.")
    headers = table.get("headers")
    return (list(headers) if isinstance(headers, list) else []), int(table.get("row_count") or 0)


@contextlib.asynccontextmanager
async def open_table(
    table: Mapping[str, Any], *, exact: bool = False, http_client: httpx2.AsyncClient | None = None
) -> AsyncIterator[TableReader]:
    """Stream the rows of a single-table ``system_data`` or of one entry of its ``tables`` (spec 8.5).

    ``exact=True`` parses decimals as ``Decimal`` (integers are always exact). Links are
    fetched with ``http_client`` (configure its auth), else with a client of its own.
    Raises :class:`TableReadError` when the table cannot be read.
    """
    headers, row_count = _table_entry(table)
    if table.get("format") != "file":
        rows = table.get("table")
        if not isinstance(rows, list):
            raise TableReadError("An inline table has no 'table' array of rows.")
        yield TableReader(headers, row_count, _inline_batches(rows))
        return
    uri = str(table.get("table_uri") or "")
    scheme = urlsplit(uri).scheme
    if scheme == "file":
        try:
            handle = await anyio.to_thread.run_sync(uri_path(uri).open, "rb")
        except OSError as exc:
            raise TableReadError(f"Cannot read the table file {uri} ({exc.strerror}); call the tool again.") from None
        batches = _file_batches(handle, exact)
        reader = _thread_batches(batches)
        try:
            yield TableReader(headers, row_count, reader)
        finally:
            await reader.aclose()
            batches.close()
            handle.close()
        return
    if scheme not in ("http", "https"):
        raise TableReadError(f"Unsupported table_uri scheme '{scheme}': expected file, http or https.")
    async with contextlib.AsyncExitStack() as stack:
        client = http_client
        if client is None:
            client = await stack.enter_async_context(_sdk.http_client())
        response = await stack.enter_async_context(client.stream("GET", uri))
        if response.status_code != 200:
            raise TableReadError(_link_refused(response.status_code))
        stream = _stream_batches(response.aiter_bytes(), exact)
        try:
            yield TableReader(headers, row_count, stream)
        finally:
            await stream.aclose()


def _link_refused(status: int) -> str:
    if status == 404:
        return "The table link is unknown, expired or already used (links work once); call the tool again."
    return f"The server answered HTTP {status} to the table link; call the tool again."


def _same_origin(endpoint: str, link: str) -> bool:
    """Whether a link may carry the endpoint's credentials: same host and port, same scheme or https."""
    a, b = urlsplit(endpoint), urlsplit(link)
    default = {"http": 80, "https": 443}
    try:
        ports = (a.port or default.get(a.scheme), b.port or default.get(b.scheme))
    except ValueError:
        return False
    schemes_ok = a.scheme == b.scheme or (a.scheme == "http" and b.scheme == "https")
    return schemes_ok and a.hostname == b.hostname and ports[0] == ports[1]


# -- tools/call answers --------------------------------------------------------------------------
@dataclass
class ToolResponse:
    """One ``tools/call`` answer, split into the parts of spec 8."""

    raw: JsonObject
    host: AcpHost | None = field(default=None, repr=False)
    _downloads: dict[str, Path] = field(default_factory=dict, repr=False)

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
        """The whole table of a single-table extraction (inline, a file or a link), in memory.

        It blocks while it reads: a convenience for tests and small results. Stream with
        :meth:`AcpHost.open_table` instead.
        """
        data = self.system_data
        if data is None:
            raise ValueError("this response has no system_data")
        return self._table_rows(data, exact)

    def tables(self, exact: bool = False) -> dict[str, list[JsonObject]]:
        """Every table of a multi-table extraction, by name (in memory, like :meth:`rows`)."""
        data = self.system_data or {}
        return {t["name"]: self._table_rows(t, exact) for t in data.get("tables", [])}

    def _table_rows(self, data: Mapping[str, Any], exact: bool) -> list[JsonObject]:
        _table_entry(data)
        if data.get("format") != "file":
            rows = data.get("table")
            if not isinstance(rows, list):
                raise TableReadError("An inline table has no 'table' array of rows.")
            return list(rows)
        with self._local_file(str(data["table_uri"])).open("rb") as handle:
            return [row for batch in _file_batches(handle, exact) for row in batch]

    def _local_file(self, uri: str) -> Path:
        if urlsplit(uri).scheme == "file":
            return uri_path(uri)
        if uri not in self._downloads:  # a link works once: keep the one download
            if self.host is None:
                raise TableReadError("This response has no host to download its table link with.")
            self._downloads[uri] = self.host._download(uri)
        return self._downloads[uri]


# -- the host -------------------------------------------------------------------------------------
class AcpHost:
    """Talk ACP to one connector: launched over stdio, reached at an HTTP URL, or served in this process.

    ``capability=None`` behaves as a plain MCP client that declares no ACP capability.
    ``protocol_version`` picks the MCP revision: a handshake version (2025-03-26, 2025-06-18,
    2025-11-25; default the SDK's latest) or ``"2026-07-28"``, the stateless revision.
    ``tables`` answers ``acp/read_table``; without it every ref is not found.
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
        tables: TableResolver | None = None,
        protocol_version: str | None = None,
        read_timeout_s: float = 120.0,
        client_name: str = "acp-host",
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
        self.tables = tables
        self.protocol_version = protocol_version
        self.read_timeout_s = read_timeout_s
        self.client_info = types.Implementation(name=client_name, version=ACP_VERSION)
        self.initialize_result: JsonObject = {}
        self.stderr_path: Path | None = server_stderr
        self._session: _sdk.AcpClientSession | None = None
        self._http: httpx2.AsyncClient | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._tmp = tempfile.TemporaryDirectory(prefix="acp-host-")
        # spec 8.8.1: the conversation of each call in flight, by call_id, forgotten when it ends.
        self._conversations: dict[str, str | None] = {}
        self._call_files: dict[str, list[Path]] = {}

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
            session = _sdk.AcpClientSession(
                read, write, experimental=experimental, read_table=self._answer_read_table, client_info=self.client_info
            )
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
        assert self.url is not None
        self._http = await stack.enter_async_context(_sdk.http_client(self._auth_headers()))
        return await stack.enter_async_context(
            streamable_http_client(self.url, http_client=self._http, max_sse_event_size=MAX_EVENT_BYTES)
        )

    def _auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    async def __aexit__(self, *exc: object) -> None:
        if self._stack is not None:
            await self._stack.aclose()
            self._stack = None
            self._http = None
        # The temporary folder (stderr log, downloaded links) stays until this object is collected.

    @property
    def session(self) -> _sdk.AcpClientSession:
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
            result = await session.initialize_at(self.protocol_version, self.client_info)
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
        """What a stdio server wrote to stderr so far."""
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
                _sdk.OpenResult,
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
        """``acp/configure`` (spec 5.1): the session's settings; the effective values come back."""
        return await self.request(METHOD_CONFIGURE, params)

    async def list_tools(self) -> list[JsonObject]:
        """``tools/list``: every tool the server publishes, as JSON."""
        result = await self.session.list_tools()
        return [t.model_dump(by_alias=True, exclude_none=True) for t in result.tools]

    async def call(
        self,
        name: str,
        arguments: JsonObject | None = None,
        meta: JsonObject | None = None,
        progress: list[JsonObject] | None = None,
    ) -> ToolResponse:
        """``tools/call`` with ``_meta.acp`` = ``meta``; ``progress`` collects progress notifications.

        An ACP host gives every call a ``call_id`` when ``meta`` has none, so that the
        ``acp/read_table`` requests of the call find its conversation (spec 8.8.1).
        """
        acp_meta = None if meta is None and self.capability is None else dict(meta or {})
        call_id = None
        if acp_meta is not None:
            if acp_meta.get("call_id") is None:
                acp_meta["call_id"] = f"call-{secrets.token_hex(6)}"  # the form the server gives its own ids
            call_id = acp_meta["call_id"]
            if not isinstance(call_id, str) or call_id in self._conversations:
                call_id = None  # not ours to track (malformed, or a caller reusing a live id)
            else:
                conversation = acp_meta.get("conversation_id") or acp_meta.get("session_id")
                self._conversations[call_id] = conversation if isinstance(conversation, str) else None
        params: JsonObject = {"name": name, "arguments": arguments or {}}
        if acp_meta is not None:
            params["_meta"] = {ACP_KEY: acp_meta}
        try:
            result = await self.request("tools/call", params, progress=progress)
        finally:
            if call_id is not None:
                del self._conversations[call_id]
                for path in self._call_files.pop(call_id, []):
                    path.unlink(missing_ok=True)
        return ToolResponse(result, host=self)

    async def _answer_read_table(self, params: JsonObject) -> JsonObject:
        """``acp/read_table`` from the server, answered through :attr:`tables` (spec 8.8)."""
        ref, call_id = params.get("ref"), params.get("call_id")
        if not isinstance(ref, str) or not ref:
            raise MCPError(code=-32602, message="acp/read_table needs params.ref, the id the tool received.")
        call_id = call_id if isinstance(call_id, str) else None
        conversation = self._conversations.get(call_id) if call_id is not None else None
        if self.tables is None:
            raise MCPError(code=TableNotFound.code, message=f"This host keeps no tables, so '{ref}' is not one.")
        try:
            table = await self.tables(ref, call_id=call_id, conversation=conversation)
        except _REFUSALS as refusal:
            raise MCPError(code=refusal.code, message=refusal.message) from None
        except Exception:
            log.exception("the table resolver failed on acp/read_table")
            raise MCPError(
                code=_INTERNAL_ERROR, message=f"The host failed to read table '{ref}'. Try again later."
            ) from None
        if isinstance(table, TableFile) and table.remove_after_call:
            if call_id in self._conversations:
                self._call_files.setdefault(call_id, []).append(table.path)
            else:
                log.warning("a table file to remove after its call came for no known call; it is kept")
        return _read_table_answer(table)

    # -- result tables ---------------------------------------------------------------------------
    def open_table(
        self, table: Mapping[str, Any], *, exact: bool = False
    ) -> contextlib.AbstractAsyncContextManager[TableReader]:
        """:func:`open_table` with this connection's credentials for the server's own links.

        A link on another origin is refused rather than handed the bearer token.
        """
        uri = str(table.get("table_uri") or "")
        if table.get("format") == "file" and urlsplit(uri).scheme in ("http", "https"):
            self._check_link(uri)
        return open_table(table, exact=exact, http_client=self._http)

    def _check_link(self, uri: str) -> None:
        if self.url is None or not _same_origin(self.url, uri):
            raise TableReadError("The table link is not on this server's origin; the host does not follow it.")

    def _download(self, uri: str) -> Path:
        """Fetch a link into this host's temporary folder, blocking (for :meth:`ToolResponse.rows`)."""
        self._check_link(uri)
        target = Path(self._tmp.name) / f"link-{secrets.token_hex(8)}.json"
        with (
            httpx2.Client(headers=self._auth_headers(), timeout=httpx2.Timeout(30.0, read=300.0)) as client,
            client.stream("GET", uri) as response,
        ):
            if response.status_code != 200:
                raise TableReadError(_link_refused(response.status_code))
            with target.open("wb") as handle:
                for data in response.iter_bytes(_CHUNK_BYTES):
                    handle.write(data)
        return target
