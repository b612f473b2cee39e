"""The bridge's MCP server (spec 16.4, 16.5): plain MCP upward, an ACP host downward.

Upward, an MCP client (Claude Desktop, Cursor, VS Code…) sees ordinary tools:

* ``<source>__<tool>`` for every tool of every usable source, its description prefixed with
  ``[<label> · <ACP name>]``, ``table_ref`` arguments described as acp-data dataset ids, a date
  template argument joined by ``start_date``/``end_date`` (resolved and substituted here, spec 8.9),
  and extraction tools saying that the full table lands in acp-data;
* ``acp_sources``, ``acp_datasets`` and ``acp_query``, the bridge's own.

Downward, one :class:`~shared.host.AcpHost` per connector (:class:`ConnectorProcess`) serves every
source of that connector, with the source's credentials, config and limits in ``_meta.acp`` of each
call and ``session_id`` = ``conversation_id`` = ``bridge-<uuid>:<source>`` (spec 16.5). The host
declares ``stores_system_data``, ``multi_table``, ``host_tables`` and ``autocontext_delivery:
"on_first_call"``, and answers ``acp/read_table`` from the :class:`~bridge.datasets.DatasetStore`.

Each non-empty table of an extraction is streamed into a dataset (one per table of a multi-table
answer); the model gets the connector's ``model_response`` plus a note naming the dataset (spec
16.7 step 1), an image for a ``screenshot_path`` and acp-data paths for ``pdf_path`` and
``download_path`` (spec 8.10). Every failure reaches the model as an ACP error (spec 12.1):
``{"error": {code, name, message}}`` with ``isError``; nothing here lets an exception reach the
SDK, which would put its text on the wire.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import logging
import re
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp_types.jsonrpc import CONNECTION_CLOSED, REQUEST_TIMEOUT

from shared._budget import cut_value
from shared._jsonio import dumps_text
from shared._redaction import redact, register_secrets
from shared._settings import secret_values
from shared.cli import _leave
from shared.dates import TEMPLATE_MARKERS, date_properties, local_today, resolve_date
from shared.errors import (
    AcpError,
    CredentialsInvalid,
    InvalidArguments,
    InvalidLimit,
    TableNotFound,
    UpstreamError,
    error_from_code,
)
from shared.host import AcpHost, HostProtocolError, TableReadError, ToolResponse, uri_path
from shared.protocol import (
    ACP_VERSION,
    INPUT_ANNOTATION,
    INPUT_TABLE_REF,
    MODEL_MAX_VALUE_CHARS,
    MODEL_ROWS_SINGLE,
    JsonObject,
)

from .datasets import Dataset, DatasetStore
from .sources import (
    InstalledConnector,
    Source,
    SourcesFile,
    connector_environment,
    find_connectors,
    load_sources,
)

__all__ = ["BRIDGE_VERSION", "CLIENT_CAPABILITY", "Bridge", "ConnectorProcess", "build_server", "serve_stdio"]

log = logging.getLogger("acp.bridge")

BRIDGE_VERSION = "0.1.0"
# Spec 16.5: what the bridge declares to every connector as a host.
CLIENT_CAPABILITY: JsonObject = {
    "version": ACP_VERSION,
    "stores_system_data": True,
    "multi_table": True,
    "host_tables": True,
    "autocontext_delivery": "on_first_call",
}
OWN_TOOLS = ("acp_sources", "acp_datasets", "acp_query")
SEPARATOR = "__"
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")  # MCP's tool name rule
MAX_IMAGE_BYTES = 4 * 1024 * 1024  # spec 8.10: screenshots above this are not attached
START_TIMEOUT_S = 30.0  # a connector that has not answered initialize and tools/list by then failed to start
CALL_TIMEOUT_S = 3600.0  # the connectors bound their own work (statement timeouts, fit caps); this only ends a hang
DATASETS_LISTED = 200  # acp_datasets lists at most this many; a filter narrows the rest
_NOTE_ERRORS = ("ACP_CREDENTIALS_MISSING", "ACP_CREDENTIALS_INVALID", "ACP_COST_LIMIT_EXCEEDED")
_IMAGE_TYPES = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"))

INSTRUCTIONS = (
    "ACP Bridge. Tools named <source>__<tool> reach the data sources configured in sources.json "
    "(acp_sources lists them, their status and their tools). An extraction shows you a sample and saves "
    "the full table in the project's acp-data folder as a dataset: compute totals, filters and joins with "
    "acp_query (SQLite SQL, dataset ids as table names) over the whole table rather than from the sample, "
    "and pass a dataset id as table_ref to tools that read a table (never paste rows). acp_datasets lists "
    "the datasets. Credentials live in sources.json and never reach you: if a source lacks them, tell the user."
)


# -- connectors -----------------------------------------------------------------------------------
class ConnectorProcess:
    """One connector's process, shared by all of its sources.

    It is launched by :meth:`ensure` (at start-up, then on the next call after it failed or
    died) in a task of the bridge's task group, which keeps the :class:`AcpHost` entered for
    as long as the process serves. ``error`` says why the last launch failed; ``tools`` and
    ``capability`` are what it declared (kept after it dies, for ``tools/list``).
    """

    def __init__(self, installed: InstalledConnector, make_host: Callable[[], AcpHost]) -> None:
        self.installed = installed
        self._make_host = make_host
        self._group: anyio.abc.TaskGroup | None = None
        self._lock = anyio.Lock()
        self._host: AcpHost | None = None
        self._stop: anyio.Event | None = None
        self._done: anyio.Event | None = None
        self._closed = False
        self.error: str | None = None
        self.tools: list[JsonObject] | None = None
        self.capability: JsonObject = {}

    def attach(self, group: anyio.abc.TaskGroup) -> None:
        self._group = group

    @property
    def running(self) -> bool:
        return self._host is not None

    async def ensure(self) -> AcpHost:
        """The running host, launching the connector first if it is not running.

        Raises :class:`UpstreamError` saying why it could not start.
        """
        async with self._lock:
            if self._host is not None:
                return self._host
            await self._wait_stopped()
            if self._closed:  # checked after the wait: close() may have run meanwhile
                raise UpstreamError("The bridge is stopping; it serves no more calls.")
            assert self._group is not None, "attach() the connector to the bridge's task group first"
            ready, stop, done = anyio.Event(), anyio.Event(), anyio.Event()
            self._stop, self._done = stop, done
            self._group.start_soon(self._serve, ready, stop, done)
            await ready.wait()
            if self._host is None:
                raise UpstreamError(
                    f"The {self.installed.name} connector ({self.installed.id}) could not start: {self.error} "
                    "The bridge tries again on the next call; if this persists, tell the user (the bridge's log "
                    "in the MCP client has the details)."
                )
            return self._host

    def mark_dead(self) -> None:
        """The connection failed: stop this run, so that the next :meth:`ensure` launches it again."""
        self._host = None
        if self._stop is not None:
            self._stop.set()

    async def close(self) -> None:
        """Stop the process for good: a launch in progress stops once started, and none follows."""
        self._closed = True
        self.mark_dead()
        await self._wait_stopped()

    async def _wait_stopped(self) -> None:
        if self._done is not None:
            await self._done.wait()

    async def _serve(self, ready: anyio.Event, stop: anyio.Event, done: anyio.Event) -> None:
        host = self._make_host()
        try:
            with anyio.CancelScope() as scope:
                scope.deadline = anyio.current_time() + START_TIMEOUT_S
                async with host:
                    tools = await host.list_tools()
                    scope.deadline = float("inf")
                    self.tools, self.capability = tools, host.server_capability or {}
                    self._host, self.error = host, None
                    log.info("connector %s started (%d tools)", self.installed.id, len(tools))
                    ready.set()
                    await stop.wait()
            if scope.cancelled_caught and not ready.is_set():
                self.error = f"it did not answer within {START_TIMEOUT_S:.0f} s."
        except Exception as exc:  # the launch or the connection failed: say so, keep the bridge serving
            if ready.is_set():
                log.warning("connector %s stopped (%s)", self.installed.id, type(exc).__name__)
            else:
                self.error = _start_failure(exc, host.stderr())
        finally:
            self._host = None
            if not ready.is_set() and self.error is None:
                self.error = "it exited during start-up."
            if self.error and not ready.is_set():
                log.warning("connector %s could not start: %s", self.installed.id, self.error)
            ready.set()
            done.set()


def _connection_lost(process: ConnectorProcess, published: PublishedTool, reason: str) -> NoReturn:
    process.mark_dead()
    log.warning("connector %s failed during %s (%s)", process.installed.id, published.name, reason)
    raise UpstreamError(
        f"The {process.installed.name} connector stopped answering during the call (it may have crashed). "
        "The bridge starts it again on the next call: call again, and if it keeps failing tell the user."
    )


def _start_failure(exc: Exception, stderr: str) -> str:
    """Why a launch failed, for the person: the exception's kind and the last line the process wrote.

    No credentials have been sent before a connector has started, so its start-up output holds none.
    """
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1 and isinstance(exc.exceptions[0], Exception):
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError):
        reason = f"its command was not found ({exc.filename})."
    elif isinstance(exc, PermissionError):
        reason = f"its command cannot be run ({exc.filename}: permission denied)."
    else:
        reason = f"{type(exc).__name__}."
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    if lines:
        reason += f" Its last output: {cut_value(lines[-1], 300)}"
    return reason


# -- published tools ------------------------------------------------------------------------------
@dataclass(frozen=True)
class PublishedTool:
    """A connector tool as one source publishes it."""

    name: str
    source: Source
    tool: str
    mcp: types.Tool
    templates: tuple[str, ...] = ()  # arguments marked x-acp-date: "template" (spec 8.9)
    extraction: bool = False


def _publish(
    source: Source, connector: InstalledConnector, tool: JsonObject, extraction_tools: set[str]
) -> PublishedTool:
    """The tool ``tool`` of ``connector`` as ``source`` publishes it (spec 16.4)."""
    name = f"{source.id}{SEPARATOR}{tool['name']}"
    schema: JsonObject = copy.deepcopy(tool.get("inputSchema") or {"type": "object", "properties": {}})
    properties: JsonObject = schema.setdefault("properties", {})
    templates = tuple(n for n, role in date_properties(schema).items() if role == "template")
    for prop_name, prop in properties.items():
        if not isinstance(prop, dict):
            continue
        if prop.get(INPUT_ANNOTATION) == INPUT_TABLE_REF:
            prop["description"] = (
                "Id of a dataset in acp-data (acp_datasets lists them; an extraction's answer names its own). "
                "The bridge hands the connector its rows: never paste rows."
            )
        elif prop_name in templates:
            prop["description"] = (
                f"{prop.get('description', '')} The bridge replaces {{{{start_date}}}} and {{{{end_date}}}} with the "
                "start_date and end_date arguments."
            ).strip()
        elif prop_name == "resource_id" and source.default_resource_id:
            prop["description"] = f"{prop.get('description', '')} This source's default: {source.default_resource_id}."
    if templates:
        for role, which in (("start_date", "First"), ("end_date", "Last")):
            properties[role] = {
                "type": "string",
                "description": f"{which} day of the date window, put where the SQL says {{{{{role}}}}}: "
                "YYYY-MM-DD, NdaysAgo, yesterday or today.",
            }
    extraction = tool["name"] in extraction_tools
    description = f"[{source.label} · {connector.name}] {tool.get('description', '')}".rstrip()
    if extraction:
        description += (
            " The full table is saved in acp-data as a new dataset (the answer names it): compute totals and "
            "filters over it with acp_query, or pass its id as table_ref."
        )
    title = tool.get("title")
    annotations = tool.get("annotations")
    return PublishedTool(
        name=name,
        source=source,
        tool=str(tool["name"]),
        mcp=types.Tool(
            name=name,
            title=f"{source.label}: {title}" if title else None,
            description=description,
            input_schema=schema,
            annotations=types.ToolAnnotations.model_validate(annotations) if isinstance(annotations, dict) else None,
        ),
        templates=templates,
        extraction=extraction,
    )


def _own_tools() -> list[types.Tool]:
    read_only = types.ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
    return [
        types.Tool(
            name="acp_sources",
            title="ACP sources",
            description=(
                "The configured sources: each one's status (ok, or what is wrong and how to fix it), whether it "
                "has credentials (never the credentials themselves), its limits and its tools, plus the installed "
                "ACP connectors that no source uses. Call it when a source's tool is missing or fails."
            ),
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
            annotations=read_only,
        ),
        types.Tool(
            name="acp_datasets",
            title="ACP datasets",
            description=(
                "The datasets in the project's acp-data folder (every extraction, acp_query result and CSV the "
                "user dropped there): id (its table name in acp_query and its table_ref), file, rows, typed "
                "columns, origin, source and tool, description, key dates and when it was created."
            ),
            input_schema={
                "type": "object",
                "properties": {
                    "filter": {
                        "type": "string",
                        "description": "Only datasets whose id, source, tool, title or description contain this "
                        "text (any case).",
                    }
                },
                "additionalProperties": False,
            },
            annotations=read_only,
        ),
        types.Tool(
            name="acp_query",
            title="Query acp-data with SQL",
            description=(
                "Runs one SQLite SELECT (or WITH … SELECT) over the datasets of acp-data, each dataset id being "
                "a table name (acp_datasets lists them and their columns). Only SELECT and WITH: anything else is "
                "refused and no dataset ever changes. You see at most 50 rows; the full result is saved as a new "
                "dataset whose id the answer gives. Use it for totals, filters and joins over whole tables "
                "instead of adding up sample rows."
            ),
            input_schema={
                "type": "object",
                "properties": {
                    "sql": {"type": "string", "description": "One SELECT or WITH … SELECT in SQLite's dialect."},
                    "save_as": {
                        "type": "string",
                        "description": "Optional dataset id for the result (lowercase letters, digits and _, "
                        "starting with a letter); an earlier acp_query result with that id is replaced.",
                    },
                },
                "required": ["sql"],
                "additionalProperties": False,
            },
            annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False),
        ),
    ]


# -- the bridge -----------------------------------------------------------------------------------
@dataclass
class _SourceState:
    source: Source
    tools: dict[str, PublishedTool] = field(default_factory=dict)
    problem: str | None = None


class Bridge:
    """Everything one ``python -m bridge`` serves: sources, connectors, acp-data and the tools.

    Use inside ``async with bridge.running():``, which launches the connectors some source
    uses (concurrently, in the background) and stops them on exit.
    """

    def __init__(self, project: Path, sources_path: Path, root: Path, environ: Mapping[str, str] | None = None) -> None:
        self.project = project
        self.sources_path = sources_path
        self.root = root
        self.store = DatasetStore(project / "acp-data")
        self.installed = find_connectors(root)
        self.sources: SourcesFile = load_sources(sources_path, project, self.installed, environ)
        self.session_prefix = f"bridge-{uuid.uuid4()}"
        env = connector_environment(root, self.installed)
        self.processes = {
            acp: ConnectorProcess(self.installed[acp], self._host_factory(self.installed[acp], env))
            for acp in dict.fromkeys(s.acp for s in self.sources.sources.values())
        }
        self._started = anyio.Event()
        self._registered: set[str] = set()
        self._in_flight: set[anyio.CancelScope] = set()
        self._idle = anyio.Event()  # set while no call is in flight
        self._idle.set()
        if not self.installed:
            log.warning("no connector found in %s (nor in %s): check --root", root / "acps", root / "connectors")

    def _host_factory(self, installed: InstalledConnector, env: Mapping[str, str]) -> Callable[[], AcpHost]:
        def make() -> AcpHost:
            return installed.host(
                env,
                capability=CLIENT_CAPABILITY,
                tables=self.store.resolver(),
                read_timeout_s=CALL_TIMEOUT_S,
                client_name="acp-bridge",
            )

        return make

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Bridge]:
        async with anyio.create_task_group() as group:
            for process in self.processes.values():
                process.attach(group)
            group.start_soon(self._start_all)
            try:
                yield self
            finally:
                with anyio.CancelScope(shield=True):
                    async with anyio.create_task_group() as closing:
                        for process in self.processes.values():
                            closing.start_soon(process.close)

    async def _start_all(self) -> None:
        async def start(process: ConnectorProcess) -> None:
            with contextlib.suppress(UpstreamError):  # recorded in process.error, shown by acp_sources
                await process.ensure()

        async with anyio.create_task_group() as group:
            for process in self.processes.values():
                group.start_soon(start, process)
        self._started.set()
        log.info(
            "serving %d source(s) of %s; %d problem(s) in %s",
            len(self.sources.sources),
            ", ".join(self.processes) or "no connector",
            len(self.sources.problems),
            self.sources_path,
        )

    async def started(self) -> None:
        """Wait until every connector's first launch has finished (or failed)."""
        await self._started.wait()

    def session_id(self, source: Source) -> str:
        return f"{self.session_prefix}:{source.id}"

    # -- the tool catalog -------------------------------------------------------------------------
    def _states(self) -> dict[str, _SourceState]:
        states: dict[str, _SourceState] = {}
        for source in self.sources.sources.values():
            state = _SourceState(source)
            states[source.id] = state
            process = self.processes[source.acp]
            if process.tools is None:
                state.problem = process.error or "its connector is starting."
                continue
            self._register_secrets(source, process)
            extraction = set(process.capability.get("extraction_tools") or [])
            published = [_publish(source, process.installed, t, extraction) for t in process.tools]
            too_long = [p.name for p in published if not TOOL_NAME.match(p.name)]
            if too_long:
                longest = max(len(t["name"]) for t in process.tools)
                state.problem = (
                    f"its tool names would be too long for MCP (64 characters at most; for example {too_long[0]!r}). "
                    f"Give the source an id of at most {64 - len(SEPARATOR) - longest} characters in "
                    f"{self.sources_path} and restart the bridge."
                )
                continue
            state.tools = {p.name: p for p in published}
        return states

    def _register_secrets(self, source: Source, process: ConnectorProcess) -> None:
        """Scrub the source's secret credential fields from every answer and log line (defence in depth)."""
        if source.id in self._registered or not source.credentials:
            return
        schema = process.capability.get("credentials_schema")
        if isinstance(schema, dict):
            register_secrets(secret_values(schema, source.credentials))
            self._registered.add(source.id)

    async def list_tools(self) -> list[types.Tool]:
        with anyio.move_on_after(START_TIMEOUT_S + 5):
            await self.started()
        tools = _own_tools()
        for state in self._states().values():
            tools.extend(p.mcp for p in state.tools.values())
        return tools

    # -- calls ------------------------------------------------------------------------------------
    async def call(
        self, name: str, arguments: JsonObject | None, tools_changed: Callable[[], Awaitable[None]] | None = None
    ) -> types.CallToolResult:
        """Answer one ``tools/call``; never raises (an exception would reach the client as text, code 0)."""
        with anyio.CancelScope() as scope:
            self._in_flight.add(scope)
            if self._idle.is_set():
                self._idle = anyio.Event()
            try:
                return await self._call(name, arguments, tools_changed)
            finally:
                self._in_flight.discard(scope)
                if not self._in_flight:
                    self._idle.set()
        return error_result(UpstreamError("The bridge is stopping, so this call was cancelled.").payload())

    async def stop_calls(self, timeout_s: float) -> None:
        """Cancel every call in flight and wait (at most ``timeout_s``) until they have unwound."""
        for scope in list(self._in_flight):
            scope.cancel()
        with anyio.move_on_after(timeout_s):
            await self._idle.wait()

    async def _call(
        self, name: str, arguments: JsonObject | None, tools_changed: Callable[[], Awaitable[None]] | None
    ) -> types.CallToolResult:
        started = time.monotonic()
        try:
            if not isinstance(arguments, dict):
                arguments = {}
            if name == "acp_sources":
                _only(arguments, set())
                return _text_result(await self._acp_sources())
            if name == "acp_datasets":
                return _text_result(await self._acp_datasets(arguments))
            if name == "acp_query":
                return _text_result(await self._acp_query(arguments))
            await self.started()
            published = await self._find(name, tools_changed)
            result = await self._call_source(published, arguments)
            log.info("%s answered in %.0f ms", name, 1000 * (time.monotonic() - started))
            return result
        except AcpError as exc:
            log.info("%s: %s", name, exc.name)
            return error_result(exc.payload())
        except Exception:
            log.exception("the bridge failed on %s", name)
            return error_result(
                UpstreamError(
                    "The bridge failed on this call (an internal error, written to its log). Try again; if it "
                    "persists, tell the user."
                ).payload()
            )

    async def _find(self, name: str, tools_changed: Callable[[], Awaitable[None]] | None) -> PublishedTool:
        states = self._states()
        for state in states.values():
            if name in state.tools:
                return state.tools[name]
        source_id = _source_of(name, list(states) + list(self.sources.refused_ids))
        if source_id is None:
            raise InvalidArguments(
                f"Unknown tool '{name}'. Source tools are named <source>{SEPARATOR}<tool>; the sources are: "
                f"{', '.join(states) or 'none'}. Call acp_sources for each source's tools."
            )
        if source_id not in states:
            problems = " ".join(p.message for p in self.sources.problems_of(source_id))
            raise _source_error(
                self.sources.problems_of(source_id)[0].kind if self.sources.problems_of(source_id) else "source",
                f"The source '{source_id}' cannot be used: {problems} Tell the user to fix it in "
                f"{self.sources_path} and restart the bridge from the MCP client.",
            )
        state = states[source_id]
        process = self.processes[state.source.acp]
        if process.tools is None:
            await process.ensure()  # relaunch: raises UpstreamError if it still cannot start
            state = self._states()[source_id]
            if tools_changed is not None:
                with contextlib.suppress(Exception):  # a client that cannot take the notification still works
                    await tools_changed()
        if name in state.tools:
            return state.tools[name]
        if state.problem:
            raise InvalidArguments(
                f"The source '{source_id}' cannot be used: {state.problem} Tell the user (sources file: "
                f"{self.sources_path})."
            )
        tool = name[len(source_id) + len(SEPARATOR) :]
        raise InvalidArguments(
            f"The source '{source_id}' has no tool '{tool}'. Its tools are: "
            f"{', '.join(p.tool for p in state.tools.values())}."
        )

    async def _call_source(self, published: PublishedTool, arguments: JsonObject) -> types.CallToolResult:
        source = published.source
        process = self.processes[source.acp]
        sent = _substitute_dates(published, arguments)
        host = await process.ensure()
        try:
            response = await host.call(published.tool, sent, source.acp_meta(self.session_id(source)))
        except HostProtocolError as exc:
            if -32049 <= exc.code <= -32010:
                raise error_from_code(exc.code, exc.message) from None
            if exc.code not in (CONNECTION_CLOSED, REQUEST_TIMEOUT):
                raise UpstreamError(
                    f"The {process.installed.name} connector refused the call (JSON-RPC {exc.code}: "
                    f"{cut_value(exc.message, 300)})."
                ) from None
            _connection_lost(process, published, exc.message)
        except Exception as exc:  # the pipe or the process failed under the SDK
            _connection_lost(process, published, type(exc).__name__)
        if response.is_error:
            result = self._connector_error(source, response)
            log.info("%s: the connector answered %s", published.name, response.error_name)
            return result
        return await _Answer(self, published, sent, response, host).build()

    def _connector_error(self, source: Source, response: ToolResponse) -> types.CallToolResult:
        error = dict(response.error or {})
        if not error:
            try:
                error = dict(response.model_response.get("error") or {})
            except (ValueError, AttributeError):
                error = {}
        if not error:
            error = UpstreamError("The connector answered with an error it did not describe.").payload()  # type: ignore[assignment]
        name = error.get("name")
        if name in _NOTE_ERRORS:
            error["note"] = _sources_note(str(name), source, self.sources_path)
        return error_result(error)

    # -- the bridge's own tools -----------------------------------------------------------------
    async def _acp_sources(self) -> JsonObject:
        with anyio.move_on_after(START_TIMEOUT_S + 5):
            await self.started()
        states = self._states()
        listed: list[JsonObject] = []
        for declared in self.sources.declared:
            state = states.get(declared.id)
            entry: JsonObject = {
                "id": declared.id,
                "acp": declared.acp,
                "acp_name": self.installed[declared.acp].name if declared.acp in self.installed else None,
                "label": state.source.label if state is not None else declared.label,
                "has_credentials": declared.has_credentials,
            }
            errors = [p.message for p in self.sources.problems_of(declared.id)]
            if state is not None:
                source = state.source
                entry["default_resource_id"] = source.default_resource_id
                entry["limits"] = source.limits
                if state.problem:
                    errors.append(state.problem)
                entry["tools"] = sorted(state.tools)
            entry["status"] = "error" if errors else "ok"
            if errors:
                entry["errors"] = errors
            listed.append(entry)
        used = {s.acp for s in self.sources.sources.values()}
        answer: JsonObject = {
            "sources_file": str(self.sources_path),
            "project": str(self.project),
            "sources": listed,
            "problems": [p.message for p in self.sources.problems if p.source_id is None],
            "installed_without_source": [
                {"id": c.id, "name": c.name} for c in self.installed.values() if c.id not in used
            ],
        }
        if any(entry["status"] == "error" for entry in listed) or answer["problems"]:
            answer["note"] = (
                f"Sources with errors cannot be used until the user fixes {self.sources_path} and restarts the "
                "bridge from the MCP client; explain the errors to the user."
            )
        return answer

    async def _acp_datasets(self, arguments: JsonObject) -> JsonObject:
        _only(arguments, {"filter"})
        text = arguments.get("filter")
        if text is not None and not isinstance(text, str):
            raise InvalidArguments("filter must be a string (text to look for in the datasets' ids and descriptions).")
        datasets, problems = await anyio.to_thread.run_sync(self._list_datasets)
        wanted = [d for d in datasets if not text or _matches(d, text.lower())]
        answer: JsonObject = {
            "acp_data": str(self.store.root),
            "datasets": [_describe(d) for d in wanted[:DATASETS_LISTED]],
        }
        if len(wanted) > DATASETS_LISTED:
            answer["notice"] = f"Showing {DATASETS_LISTED} of {len(wanted)} datasets; pass a filter to narrow them."
        elif not wanted:
            answer["notice"] = "No dataset matches." if text else "acp-data holds no dataset yet."
        if problems:
            answer["problems"] = problems
        return answer

    def _list_datasets(self) -> tuple[list[Dataset], list[str]]:
        return self.store.list(), self.store.problems

    async def _acp_query(self, arguments: JsonObject) -> JsonObject:
        _only(arguments, {"sql", "save_as"})
        sql, save_as = arguments.get("sql"), arguments.get("save_as")
        if not isinstance(sql, str) or not sql.strip():
            raise InvalidArguments("sql is required: one SELECT (or WITH … SELECT) with dataset ids as table names.")
        if save_as is not None and not isinstance(save_as, str):
            raise InvalidArguments("save_as must be a dataset id (a string), or left out.")
        dataset, rows, engine, notes = await anyio.to_thread.run_sync(self._run_query, sql, save_as)
        names = [h["name"] for h in dataset.headers]
        shown = [{n: cut_value(v, MODEL_MAX_VALUE_CHARS) for n, v in zip(names, row, strict=False)} for row in rows]
        relative = f"acp-data/{dataset.csv_path.name}"
        answer: JsonObject = {
            "notice": f"The full result was saved as dataset «{dataset.id}» in {relative}. "
            f"You saw {len(shown)} of {dataset.row_count} rows.",
            "dataset": dataset.id,
            "file": relative,
            "row_count": dataset.row_count,
            "headers": dataset.headers,
            "rows": shown,
            "engine": engine,
        }
        if notes:
            answer["notes"] = notes
        return answer

    def _run_query(self, sql: str, save_as: str | None) -> tuple[Dataset, list[tuple[Any, ...]], str, list[str]]:
        """Run, save and sample one query (blocking: a worker thread)."""
        from .query import QueryEngine

        if save_as is not None:
            self._check_replaceable(save_as)
        sample: list[tuple[Any, ...]] = []
        with QueryEngine(self.store.get).run(sql) as result:
            dataset_id = save_as if save_as is not None else self.store.new_id("acp", "query")
            meta: JsonObject = {
                "origin": "query",
                "tool": "acp_query",
                "sql": sql,
                "description": f"acp_query result ({result.engine}): {cut_value(' '.join(sql.split()), 300)}",
                "dates": [local_today().isoformat()],
            }
            with self.store.create(dataset_id, result.headers, meta, replace=save_as is not None) as writer:
                for batch in result.batches():
                    writer.add(batch)
                    if len(sample) < MODEL_ROWS_SINGLE:
                        sample.extend(batch[: MODEL_ROWS_SINGLE - len(sample)])
            engine, notes = result.engine, list(result.notes)
        return writer.dataset, sample, engine, notes

    def _check_replaceable(self, save_as: str) -> None:
        """save_as replaces earlier acp_query results only: extractions and the user's CSVs are not the model's."""
        try:
            existing = self.store.get(save_as)
        except TableNotFound:
            return
        origin = existing.meta.get("origin")
        if existing.id == save_as.lower() and origin != "query":
            what = "an extraction" if origin == "acp" else "a file the user put in acp-data"
            raise InvalidArguments(
                f"«{existing.id}» is {what}; save_as only replaces an earlier acp_query result. Choose another name."
            )


# -- an extraction's answer -----------------------------------------------------------------------
class _Answer:
    """What the model gets for one successful connector call, and the datasets saved on the way."""

    def __init__(
        self, bridge: Bridge, published: PublishedTool, sent: JsonObject, response: ToolResponse, host: AcpHost
    ) -> None:
        self.bridge = bridge
        self.published = published
        self.sent = sent
        self.response = response
        self.host = host
        self.model: Any = _parse(response.text)
        self.extra: list[types.ContentBlock] = []

    async def build(self) -> types.CallToolResult:
        lines: list[str] = []
        data = self.response.system_data
        if self.response.kind == "extraction" and isinstance(data, dict):
            lines = await self._save(data)
        text = self.response.text
        if isinstance(self.model, dict):
            changed = await self._artifacts(self.model, lines)
            if changed:
                text = dumps_text(self.model)
        content: list[types.ContentBlock] = [_text(text)]
        if lines:
            content.append(_text("\n".join(lines)))
        content.extend(self.extra)
        content.extend(_passed_through(self.response.raw.get("content") or []))
        return types.CallToolResult(content=content, is_error=False)

    # -- datasets ---------------------------------------------------------------------------
    async def _save(self, data: JsonObject) -> list[str]:
        if data.get("format") == "tables":
            entries = [t for t in data.get("tables") or [] if isinstance(t, dict)]
            views = self.model.get("tables") if isinstance(self.model, dict) else None
            lines = ["The full extraction was saved in acp-data, one dataset per table:"]
            for entry in entries:
                name = str(entry.get("name") or "table")
                view = views.get(name) if isinstance(views, dict) else None
                line = await self._save_table(entry, name, view if isinstance(view, dict) else {})
                lines.append(f"- {line}" if line.startswith("No data") else f"- {name}: {line}")
            return lines
        return [await self._save_table(data, None, self.model if isinstance(self.model, dict) else {})]

    async def _save_table(self, entry: JsonObject, table: str | None, view: JsonObject) -> str:
        """Save one table; the note line for the model."""
        row_count = entry.get("row_count")
        if not row_count:
            return f"No data: {table}" if table else "No data: the extraction returned no rows, so nothing was saved."
        published, info = self.published, self.response.system_info
        source = published.source
        meta: JsonObject = {
            "origin": "acp",
            "source": source.id,
            "acp": source.acp,
            "tool": published.tool,
            "table": table,
            "resource_id": info.get("resource_id"),
            "arguments": info.get("arguments", self.sent),
            "title": entry.get("title") or view.get("title") or info.get("title"),
            "description": view.get("description") or _get(self.model, "description"),
            "dates": view.get("dates") or _get(self.model, "dates"),
        }
        meta = {k: v for k, v in meta.items() if v is not None}
        try:
            dataset = await self._stream(entry, source.id, published.tool, table, meta)
        except (TableReadError, AcpError, OSError) as exc:
            reason = (
                exc.message
                if isinstance(exc, AcpError)
                else str(exc)
                if isinstance(exc, TableReadError)
                else (exc.strerror or type(exc).__name__)
            )
            log.warning("%s: a table was not saved: %s", published.name, reason)
            what = f"The table {table}" if table else "The full extraction"
            return f"{what} could not be saved in acp-data ({reason}); only the rows above are available."
        seen = view.get("returned_rows")
        if not isinstance(seen, int):
            rows = view.get("rows")
            seen = len(rows) if isinstance(rows, list) else 0
        relative = f"acp-data/{dataset.csv_path.name}"
        if table:
            return f"dataset «{dataset.id}» in {relative}. You saw {seen} of {dataset.row_count} rows."
        return (
            f"The full extraction was saved as dataset «{dataset.id}» in {relative}. "
            f"You saw {seen} of {dataset.row_count} rows."
        )

    async def _stream(self, entry: JsonObject, source: str, tool: str, table: str | None, meta: JsonObject) -> Dataset:
        """Stream the table into a new dataset, the file work off the event loop."""
        store = self.bridge.store
        async with self.host.open_table(entry, exact=True) as reader:
            headers = reader.headers
            names = [h["name"] for h in headers]
            dataset_id = await anyio.to_thread.run_sync(store.new_id, source, tool, table)
            writer = await anyio.to_thread.run_sync(store.create, dataset_id, headers, meta)
            await anyio.to_thread.run_sync(writer.__enter__)
            try:
                async for batch in reader.batches():
                    rows = [tuple(row.get(n) for n in names) for row in batch]
                    await anyio.to_thread.run_sync(writer.add, rows)
            except BaseException as exc:
                with anyio.CancelScope(shield=True):  # nothing half-written stays behind, even when cancelled
                    await anyio.to_thread.run_sync(writer.__exit__, type(exc), exc, exc.__traceback__)
                raise
            await anyio.to_thread.run_sync(writer.__exit__, None, None, None)
        uri = str(entry.get("table_uri") or "")
        if entry.get("format") == "file" and uri.startswith("file:"):
            # Spec 8.5: the host may delete a table file once read; the connector's sweep would only do it later.
            with contextlib.suppress(OSError, ValueError):
                await anyio.to_thread.run_sync(uri_path(uri).unlink)
        return writer.dataset

    # -- artifacts (spec 8.10) --------------------------------------------------------------
    async def _artifacts(self, model: JsonObject, lines: list[str]) -> bool:
        changed = False
        screenshot = model.get("screenshot_path")
        if isinstance(screenshot, str):
            image = await anyio.to_thread.run_sync(_image, Path(screenshot))
            if isinstance(image, types.ImageContent):
                self.extra.append(image)
            else:
                lines.append(image)
        for key in ("pdf_path", "download_path"):
            path = model.get(key)
            if not isinstance(path, str):
                continue
            del model[key]
            changed = True
            try:
                size = await anyio.to_thread.run_sync(lambda p=path: Path(p).stat().st_size)  # type: ignore[misc]
                relative = await anyio.to_thread.run_sync(self.bridge.store.copy_artifact, Path(path))
            except (OSError, AcpError) as exc:
                reason = exc.message if isinstance(exc, AcpError) else exc.strerror or type(exc).__name__
                model.update({"export_path": None, "saved": False})
                lines.append(f"The exported file could not be copied into acp-data ({reason}).")
                continue
            model.update({"export_path": relative, "bytes": size, "saved": True})
            if model.get("download_as") == "markdown":
                lines.append(f"The document was saved as Markdown in {relative}.")
            else:
                lines.append(f"The file was saved in {relative}.")
        return changed


def _image(path: Path) -> types.ImageContent | str:
    """The screenshot as an MCP image block, or why it was not attached."""
    try:
        size = path.stat().st_size
        if size > MAX_IMAGE_BYTES:
            return f"The image ({size} bytes) is larger than 4 MiB, so it was not attached; its path is in the answer."
        data = path.read_bytes()
    except OSError as exc:
        return f"The image could not be read ({exc.strerror or type(exc).__name__}), so it was not attached."
    for magic, mime in _IMAGE_TYPES:
        if data.startswith(magic):
            return types.ImageContent(type="image", data=base64.b64encode(data).decode("ascii"), mime_type=mime)
    # Only images are read out to the model: a path to anything else stays a path.
    return "The screenshot is not a PNG or JPEG file, so it was not attached."


def _passed_through(blocks: list[Any]) -> list[types.ContentBlock]:
    """The connector's content after content[0] (spec 8: a server may add an image)."""
    out: list[types.ContentBlock] = []
    for block in blocks[1:]:
        if isinstance(block, dict) and block.get("type") == "image":
            out.append(types.ImageContent.model_validate(block))
        elif isinstance(block, dict) and block.get("type") == "text":
            out.append(_text(str(block.get("text", ""))))
    return out


# -- arguments ------------------------------------------------------------------------------------
def _substitute_dates(published: PublishedTool, arguments: JsonObject) -> JsonObject:
    """Spec 8.9 as a host: resolve start_date/end_date, put them in the template, forward neither."""
    sent = dict(arguments)
    if not published.templates:
        return sent
    given = {key: sent.pop(key) for key in ("start_date", "end_date") if key in sent}
    markers = {
        marker
        for name in published.templates
        if isinstance(sent.get(name), str)
        for marker in TEMPLATE_MARKERS
        if marker in sent[name]
    }
    if not markers:
        if given:
            raise InvalidArguments(
                f"start_date and end_date go where the {' or '.join(published.templates)} argument says "
                "{{start_date}} and {{end_date}}, and it has neither: add the markers (for example "
                "WHERE day BETWEEN '{{start_date}}' AND '{{end_date}}') or leave the dates out."
            )
        return sent
    today = local_today()
    resolved: dict[str, str] = {}
    for key in ("start_date", "end_date"):
        if "{{" + key + "}}" not in markers:
            continue
        value = given.get(key)
        if value is None:
            raise InvalidArguments(
                f"The query uses {{{{{key}}}}}: pass {key} (YYYY-MM-DD, NdaysAgo, yesterday or today)."
            )
        if not isinstance(value, str):
            raise InvalidArguments(f"{key} must be a string: YYYY-MM-DD, NdaysAgo, yesterday or today.")
        try:
            resolved[key] = resolve_date(value, today).isoformat()
        except ValueError:
            raise InvalidArguments(
                f"{key} '{cut_value(value, 40)}' is not a date: write YYYY-MM-DD, NdaysAgo, yesterday or today."
            ) from None
    if len(resolved) == 2 and resolved["start_date"] > resolved["end_date"]:
        raise InvalidArguments(
            f"The date window is reversed: start_date {resolved['start_date']} is after end_date "
            f"{resolved['end_date']}. Swap them."
        )
    for name in published.templates:
        value = sent.get(name)
        if isinstance(value, str):
            for key, date in resolved.items():
                value = value.replace("{{" + key + "}}", date)
            sent[name] = value
    return sent


def _only(arguments: JsonObject, known: set[str]) -> None:
    unknown = sorted(set(arguments) - known)
    if unknown:
        raise InvalidArguments(
            f"Unknown argument(s) {', '.join(unknown)}; this tool takes {', '.join(sorted(known)) or 'none'}."
        )


def _source_of(name: str, source_ids: list[str]) -> str | None:
    """The source a ``<source>__<tool>`` name was meant for (the longest id that prefixes it)."""
    matches = [sid for sid in source_ids if name.startswith(sid + SEPARATOR)]
    return max(matches, key=len) if matches else None


def _source_error(kind: str, message: str) -> AcpError:
    if kind == "credentials":
        return CredentialsInvalid(message)
    if kind == "limits":
        return InvalidLimit(message)
    return InvalidArguments(message)


def _sources_note(name: str, source: Source, sources_path: Path) -> str:
    if name == "ACP_COST_LIMIT_EXCEEDED":
        return (
            f"The cost limit is cost_limit_usd of source '{source.id}' in {sources_path}. Narrow the query, or ask "
            "the user to raise that limit there and restart the bridge from the MCP client."
        )
    return (
        f"The credentials of source '{source.id}' are in {sources_path}. Ask the user to fix them in that source's "
        "entry and restart the bridge from the MCP client; you cannot fix them from here."
    )


# -- results --------------------------------------------------------------------------------------
def _text(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=redact(text))


def _text_result(value: JsonObject) -> types.CallToolResult:
    return types.CallToolResult(content=[_text(dumps_text(value))], is_error=False)


def error_result(error: Mapping[str, Any]) -> types.CallToolResult:
    """An ACP tool error (spec 12.1): ``{"error": {code, name, message, …}}`` with ``isError``."""
    return types.CallToolResult(content=[_text(dumps_text({"error": dict(error)}))], is_error=True)


def _parse(text: str) -> Any:
    import json

    try:
        return json.loads(text)
    except ValueError:
        return None


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None


def _matches(dataset: Dataset, text: str) -> bool:
    meta = dataset.meta
    fields = (dataset.id, meta.get("source"), meta.get("tool"), meta.get("title"), meta.get("description"))
    return any(isinstance(f, str) and text in f.lower() for f in fields)


def _describe(dataset: Dataset) -> JsonObject:
    meta = dataset.meta
    entry: JsonObject = {
        "id": dataset.id,
        "file": f"acp-data/{dataset.csv_path.name}",
        "rows": dataset.row_count,
        "columns": [{"name": h["name"], "type": h["type"]} for h in dataset.headers],
    }
    for key in ("origin", "source", "acp", "tool", "table", "title", "description", "dates", "created_at"):
        if meta.get(key) is not None:
            entry[key] = meta[key]
    return entry


# -- serving --------------------------------------------------------------------------------------
def build_server(bridge: Bridge) -> Server[Any]:
    """The lowlevel MCP server over ``bridge``."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        try:
            return types.ListToolsResult(tools=await bridge.list_tools())
        except Exception:
            log.exception("tools/list failed; publishing the bridge's own tools only")
            return types.ListToolsResult(tools=_own_tools())

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        async def tools_changed() -> None:
            await ctx.session.send_tool_list_changed()

        return await bridge.call(params.name, params.arguments, tools_changed)

    return Server(
        "acp-bridge",
        version=BRIDGE_VERSION,
        title="ACP Bridge",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(bridge: Bridge) -> None:
    """Serve MCP over stdio until the client closes stdin; SIGTERM or a client gone ends the process.

    The handshake era is served (shared's stdio loop, which also answers malformed lines and
    notices a client that closed its end): clients of the stateless revision fall back to it.
    """
    from shared._sdk import serve_stdio_handshake_era

    server = build_server(bridge)
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with anyio.create_task_group() as group:
        group.start_soon(_stop_on_sigterm, bridge)
        async with bridge.running():
            await serve_stdio_handshake_era(server, options, _client_gone)
        group.cancel_scope.cancel()


async def _stop_on_sigterm(bridge: Bridge) -> None:
    """SIGTERM: the calls in flight unwind (no half-written dataset stays), then the process ends.

    It ends at once rather than by unwinding the server, which waits for the thread blocked reading
    stdin; the connectors see their stdin close and end as at a normal exit.
    """
    import signal

    if sys.platform == "win32":
        return
    with anyio.open_signal_receiver(signal.SIGTERM) as signals:
        async for signum in signals:
            log.info("SIGTERM: stopping")
            await bridge.stop_calls(timeout_s=5.0)
            _leave(128 + signum)


def _client_gone() -> NoReturn:
    # The client closed its end of stdout: nothing can reach it any more.
    log.warning("The client went away (stdout closed) while an answer was being written; exiting.")
    _leave(0)
