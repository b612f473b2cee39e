"""The ACP runtime: serves a :class:`~shared.declaration.Connector` as an MCP server.

It wires the SDK (the capability in ``initialize`` and ``server/discover``, ``tools/list``,
``tools/call``, ``acp/configure``) and dispatches each call: system channel and precedence
(:mod:`._session`), argument resolution (:mod:`._arguments`), the reserved autocontext tools
(:mod:`._autocontext`), the connector's tool, and the answer (:mod:`.envelope`,
:mod:`.results`). Exceptions become tool errors here, in one place (spec 12.1).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from . import _jsonio as jsonio
from . import _sdk
from ._arguments import ArgumentResolver
from ._autocontext import (
    AutocontextRunner,
    applicable,
    autocontext_data_schema,
    autocontext_schema,
    descriptor,
    fit_suggestions,
    requested_blocks,
)
from ._budget import fit_blocks
from ._cache import BlockCache, ProvenCredentials, RecencyStore
from ._http import BOUND_SOURCE_SCOPE_KEY
from ._idempotency import IDEMPOTENCY_KEY, REPLAYED, IdempotentCalls, fingerprint, key_from_meta
from ._redaction import redact, register_secrets
from ._session import Limits, SessionState, configure
from ._settings import SYSTEM_CHANNEL_KEYS, CallMeta, Effective, SecretFields, check_config, parse_call_meta
from ._tablefiles import TableFiles, TableLinks, uri_path
from .context import HEARTBEAT_S, CallContext
from .dates import date_properties, local_today, resolve_date_arguments
from .declaration import ANONYMOUS, SOURCE_REF, Connector, Principal, ResourceRef, Tool
from .envelope import CallRecord, Envelopes
from .errors import (
    AcpError,
    HostTablesUnsupported,
    InvalidArguments,
    InvalidLimit,
    UpstreamError,
    error_from_code,
    missing_extra,
)
from .protocol import ACP_KEY, METHOD_CONFIGURE, TOOL_AUTOCONTEXT, TOOL_AUTOCONTEXT_DATA, BlockResult, JsonObject
from .publish import ToolCatalog, capability
from .results import Delivery, Extraction, Info, extraction_parts

if TYPE_CHECKING:
    from ._token_sources import BoundSource

log = logging.getLogger("acp")
_READ_TABLE_TIMEOUT_S = 120.0
# Over HTTP the inline tables of one answer stay under this many bytes of JSON, whatever
# inline_max_bytes says: clients cap a server-sent event (the mcp SDK at 1 MiB), and the rest
# of the message (the model's rows, system_info) needs room too. Larger tables go as links.
HTTP_INLINE_MAX_BYTES = 768 * 1024
# Over HTTP the model's text (content[0].text) stays under this many characters whatever
# model_max_chars says, for the same event limit: at most 4 bytes a character, it leaves room for
# the inline tables and, for a plain client, for structuredContent (the same JSON again). It is
# about 16k tokens, more than a model should get from one call anyway.
HTTP_MODEL_MAX_CHARS = 64 * 1024
NO_BACK_CHANNEL = (
    "This tool reads a host table through acp/read_table, which needs a session with a back-channel; this "
    "connection (MCP 2026-07-28 or stateless HTTP) has none. Use a stdio or session-based HTTP connection."
)


class AcpRuntime:
    """Serves one connector declaration over MCP."""

    def __init__(self, connector: Connector, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        _validate_declaration(connector)
        self.connector = connector
        self.files = TableFiles.from_environment(connector.id, env)
        self.heartbeat_s = float(env.get("ACP_PROGRESS_HEARTBEAT_S") or HEARTBEAT_S)
        cache_root = Path(env["ACP_CACHE_DIR"]) / connector.id if env.get("ACP_CACHE_DIR") else None
        self.proven = ProvenCredentials()
        self.autocontext = AutocontextRunner(
            connector,
            BlockCache(cache_root / "autocontext" if cache_root else None),
            RecencyStore(cache_root / "recent" if cache_root else None),
            self.proven,
            self.translate,
        )
        self.table_links = TableLinks()
        self.http_scheme = "http"  # "https" when serving TLS or behind a TLS proxy (set by shared._http)
        self.catalog = ToolCatalog(connector)
        self.limits = Limits(connector)
        self.arguments = ArgumentResolver(connector)
        self.envelopes = Envelopes(connector.id)
        self._stateless = SessionState()
        self._stateless_bound: dict[str, SessionState] = {}  # per token-bound source: nothing shared between them
        self.idempotent = IdempotentCalls()
        self._tools = {t.name: t for t in connector.tools}
        self._secret_fields = SecretFields(connector.credentials.schema)

    def capability(self) -> JsonObject:
        return capability(self.connector)

    def published_tools(self) -> list[types.Tool]:
        return self.catalog.tools()

    # -- SDK wiring --------------------------------------------------------------------------
    def build_server(self) -> Server[Any]:
        runtime = self

        class _AcpServer(Server[Any]):
            def get_capabilities(
                self,
                notification_options: Any = None,
                experimental_capabilities: Any = None,
                extensions: Any = None,
                *,
                protocol_version: str | None = None,
            ) -> Any:
                # notes §3: initialize and 2026's server/discover both read the capability from here.
                experimental = {**(experimental_capabilities or {}), ACP_KEY: runtime.capability()}
                return super().get_capabilities(
                    notification_options, experimental, extensions, protocol_version=protocol_version
                )

        server = _AcpServer(
            self.connector.id,
            version=self.connector.version,
            title=self.connector.title,
            instructions=self.connector.instructions,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        server.add_request_handler(METHOD_CONFIGURE, _sdk.OpenParams, self._configure)
        return server

    async def _list_tools(self, ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.published_tools())

    def _session(self, ctx: ServerRequestContext[Any, Any], bound: BoundSource | None) -> SessionState:
        if not _sdk.has_session(ctx):
            # Stateless requests share one record: it holds no settings (configure is refused there)
            # and its on_first_call pairs are keyed by credential identity and session_id. A
            # token-bound source gets a record of its own.
            if bound is not None:
                return self._stateless_bound.setdefault(bound.id, SessionState())
            return self._stateless
        state = _sdk.connection_state(ctx)
        session = state.get(ACP_KEY)
        if not isinstance(session, SessionState):
            session = state[ACP_KEY] = SessionState()
        return session

    # -- acp/configure (spec 5.1) ----------------------------------------------------------------
    async def _configure(self, ctx: ServerRequestContext[Any, Any], params: _sdk.OpenParams) -> JsonObject:
        if not _sdk.has_session(ctx):
            # 2026-07-28 has no session: an "ok" here would evaporate before the next call.
            raise MCPError(
                code=-32600,
                message="acp/configure needs a session, and this MCP revision (2026-07-28) has none. Send "
                "credentials, limits and config in params._meta.acp of every tools/call instead.",
            )
        bound = bound_source(ctx)
        try:
            return configure(
                self.limits, self._session(ctx, bound), dict(params.model_extra or {}), self.arguments.principal, bound
            )
        except InvalidLimit as exc:
            raise MCPError(code=exc.code, message=redact(exc.message), data=exc.data) from None
        except AcpError as exc:
            # ACP codes travel only inside tool results; a bad configure is Invalid params.
            raise MCPError(
                code=-32602, message=redact(exc.message), data={"acp_code": exc.code, "acp_name": exc.name}
            ) from None

    # -- tools/call ----------------------------------------------------------------------------
    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        defaults = self.connector.defaults
        call = CallRecord(
            tool=params.name,
            arguments={k: v for k, v in arguments.items() if k not in SYSTEM_CHANNEL_KEYS},
            call_id=f"call-{secrets.token_hex(6)}",
            row_limit=defaults.row_limit,
            cost_limit_usd=defaults.cost_limit_usd,
            model_max_chars=_model_budget(ctx, defaults.model_max_chars),
            acp_client=_sdk.client_acp_capability(ctx) is not None,
        )
        extra = {"call_id": call.call_id, "tool": params.name, "session": _sdk.session_label(ctx)}
        try:
            result = await self._dispatch(ctx, params, arguments, call)
        except AcpError as exc:
            log.info("call failed: %s", exc.name, extra=extra)
            return self.envelopes.error(call, exc)
        except Exception as exc:
            mapped = self.translate(exc)
            log.warning("call failed: %s (%s)", mapped.name, type(exc).__name__, exc_info=True, extra=extra)
            return self.envelopes.error(call, mapped)
        log.info("call ok in %d ms", call.elapsed_ms, extra=extra)
        return result

    def translate(self, exc: BaseException) -> AcpError:
        """Any exception as an ACP error: the connector's own table first, then the core's rules."""
        if isinstance(exc, AcpError):
            return exc
        translate = self.connector.translate_error
        mapped = translate(exc) if translate is not None else None
        if mapped is not None:
            return mapped
        if isinstance(exc, ImportError):  # a connector's extra is not installed on this server
            return missing_extra(exc, self.connector.id)
        detail = redact(str(exc))[:300]
        return UpstreamError(
            f"The source failed ({type(exc).__name__}: {detail}). Try again; if it keeps failing, "
            "simplify the request or ask the user to check the source."
        )

    async def _dispatch(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: types.CallToolRequestParams,
        arguments: JsonObject,
        call: CallRecord,
    ) -> types.CallToolResult:
        bound = bound_source(ctx)
        session = self._session(ctx, bound)
        raw_meta = (params.meta or {}).get(ACP_KEY)
        if isinstance(raw_meta, dict) and isinstance(raw_meta.get("credentials"), dict):
            register_secrets(self._secret_fields.values(raw_meta["credentials"]))
        meta = parse_call_meta(raw_meta, self.limits.catalog_names)
        if meta.call_id:
            call.call_id = meta.call_id
        if bound is not None:
            # The token's source stands in for the host's _meta.acp; the call may only lower limits.
            bound.check_overrides(meta.settings, "_meta.acp")
            eff = bound.effective(meta, session.settings, self.limits)
        else:
            check_config(self.connector.config_schema, meta.settings.config)
            eff = self.limits.effective(meta, session.settings)
        if ctx.request is not None:  # HTTP: big tables spill to a file (then a link) while they are written
            eff = replace(eff, inline_max_bytes=min(eff.inline_max_bytes, HTTP_INLINE_MAX_BYTES))
        call.row_limit, call.cost_limit_usd = eff.row_limit, eff.cost_limit_usd
        call.model_max_chars = _model_budget(ctx, eff.model_max_chars)

        if params.name == TOOL_AUTOCONTEXT:
            call.kind = "autocontext"
            return await self._autocontext(ctx, session, meta, eff, arguments, call, bound)
        if params.name == TOOL_AUTOCONTEXT_DATA:
            call.kind = "autocontext_data"
            return self._autocontext_data(arguments, eff, call, bound)
        tool = self._tools.get(params.name)
        if tool is None:
            available = ", ".join(t.name for t in self.published_tools())
            raise InvalidArguments(f"Unknown tool '{params.name}'. Available tools: {available}.")
        call.kind = tool.kind
        resolver = self.arguments
        args = resolver.check(tool.name, self.catalog.input_schema(tool), tool.validation_schema, arguments)
        idempotency_key = None if tool.read_only else args.pop(IDEMPOTENCY_KEY, None) or key_from_meta(params.meta)
        written = dict(args)
        today = (tool.today or local_today)()
        principal = self._principal(eff, bound) if tool.requires_credentials else None
        resource = resolver.resource(tool, args.pop("resource_id", None), eff)
        if bound is not None and resource is not None:
            bound.require_allowed(resource)
        call.resource_id = resource.id if resource else None
        selection = resolver.selection(tool, args.pop("tables", None), eff)
        call.arguments = dict(args)
        if selection is not None:
            call.arguments["tables"] = selection
        conversation = session.conversation(
            principal.identity if principal else "", meta.conversation_id or meta.session_id or ""
        )
        cctx = self._context(ctx, eff, principal, resource, call, selection, conversation, today)
        if resource is not None:
            resource = await self._resolve(resource, cctx, bound)
            cctx.resource = resolver.check_level(tool, resource)
            call.resource_id = resource.id
            if resource.today is not None:  # the resource keeps its own calendar (a GA4 property's time zone)
                today = cctx.today = resource.today
        dates = date_properties(tool.input_schema)
        window = resolve_date_arguments(args, dates, today)
        call.arguments.update({name: args[name] for name in dates if name in args})
        completed = False
        try:
            if idempotency_key is None:
                output = await tool.run(args, cctx)
            else:
                writer = principal or (bound.scoped(ANONYMOUS) if bound is not None else ANONYMOUS)
                scope = (writer.identity, tool.name, idempotency_key)
                digest = fingerprint({"arguments": written, "resource_id": call.resource_id})
                output, replayed = await self.idempotent.run(scope, digest, lambda: tool.run(args, cctx))
                if replayed:
                    call.warnings.append(REPLAYED)
            completed = True
        finally:
            if not completed:
                cctx.discard_tables()
        if tool.requires_credentials and eff.credentials:
            self.proven.prove(eff.credentials)
        if resource is not None and principal is not None:
            self.autocontext.recency.record(principal.identity, resource.id)
        if output.applied_arguments:
            call.arguments.update(output.applied_arguments)
        call.warnings.extend(cctx.warnings)
        if isinstance(output, Info):
            return self.envelopes.info(call, output)
        attached = await self.autocontext.first_call(session, meta, cctx, principal, resource)
        return self._extraction_result(ctx, call, output, eff, tool, selection, window or [today.isoformat()], attached)

    def _principal(self, eff: Effective, bound: BoundSource | None) -> Principal:
        """Who the call's credentials are; for a token-bound source, scoped to that source (spec 10.1.5)."""
        principal = self.arguments.principal(eff.credentials)
        return bound.scoped(principal) if bound is not None else principal

    def _resource_ref(self, text: str, eff: Effective, bound: BoundSource | None) -> ResourceRef:
        ref = self.arguments.normalize(text, eff.credentials)
        if bound is not None:
            bound.require_allowed(ref)
        return ref

    async def _resolve(self, ref: ResourceRef, cctx: CallContext, bound: BoundSource | None) -> ResourceRef:
        """The ref the source knows (``Resources.resolve``), still within a token-bound source's resources."""
        resolve = self.connector.resources.resolve
        if resolve is None:
            return ref
        resolved = await resolve(ref, cctx)
        if bound is not None:
            bound.require_allowed(resolved)
        return resolved

    def _visible(self, eff: Effective, bound: BoundSource | None) -> Callable[[str], bool] | None:
        """Which listed resources a token-bound source may see (None: every one)."""
        if bound is None or bound.resources is None:
            return None
        source = bound

        def visible(resource_id: str) -> bool:
            try:
                ref = self.arguments.normalize(resource_id, eff.credentials)
            except AcpError:
                return False
            return source.allows(ref)

        return visible

    def _context(
        self,
        ctx: ServerRequestContext[Any, Any],
        eff: Effective,
        principal: Principal | None,
        resource: ResourceRef | None,
        call: CallRecord,
        selection: list[str] | None = None,
        conversation: dict[str, Any] | None = None,
        today: dt.date | None = None,
    ) -> CallContext:
        caps = _sdk.client_acp_capability(ctx) or {}

        async def read_host_table(ref: str) -> JsonObject:
            # The client declared host_tables; what it lacks is a channel for acp/read_table (notes §5),
            # so the next step is another connection, not another declaration.
            if not _sdk.has_back_channel(ctx):
                raise HostTablesUnsupported(NO_BACK_CHANNEL)
            params: JsonObject = {"ref": ref}
            if call.call_id:
                params["call_id"] = call.call_id
            try:
                return await _sdk.read_table(ctx, params, _READ_TABLE_TIMEOUT_S)
            except MCPError as exc:
                if exc.code == -32600:  # the SDK's NoBackChannelError: no channel for server requests
                    raise HostTablesUnsupported(NO_BACK_CHANNEL) from None
                raise error_from_code(exc.code, exc.message or "The host could not resolve the table.") from None

        return CallContext(
            tool=call.tool,
            settings=eff,
            principal=principal,
            resource=resource,
            call_id=call.call_id,
            files=self.files,
            host_tables=bool(caps.get("host_tables")),
            read_host_table=read_host_table,
            today=today or local_today(),
            tables_selected=selection,
            report_progress=_sdk.progress_reporter(ctx),
            conversation=conversation,
            heartbeat_s=self.heartbeat_s,
        )

    # -- autocontext (spec 6.3, 7) ---------------------------------------------------------------
    def _autocontext_data(
        self, arguments: JsonObject, eff: Effective, call: CallRecord, bound: BoundSource | None
    ) -> types.CallToolResult:
        schema = autocontext_data_schema(self.connector)
        args = self.arguments.check(TOOL_AUTOCONTEXT_DATA, schema, None, arguments)
        ref = self._resource_ref(args["resource_id"], eff, bound) if args.get("resource_id") else None
        call.resource_id = ref.id if ref else None
        blocks: list[Any] = [descriptor(b) for b in applicable(self.connector.blocks, ref)]
        return self.envelopes.answer(call, "autocontext_data", fit_blocks(blocks, call.model_max_chars, mark=False))

    async def _autocontext(
        self,
        ctx: ServerRequestContext[Any, Any],
        session: SessionState,
        meta: CallMeta,
        eff: Effective,
        arguments: JsonObject,
        call: CallRecord,
        bound: BoundSource | None,
    ) -> types.CallToolResult:
        published, validation = autocontext_schema(self.connector)
        args = self.arguments.check(TOOL_AUTOCONTEXT, published, validation, arguments)
        raw_resource = args.get("resource_id")
        principal = self._principal(eff, bound)
        runner = self.autocontext
        requested = args.get("request_data") or []
        chosen = requested_blocks(self.connector.blocks, requested) if requested else None
        uses_resources = self.connector.resources.used
        if not uses_resources:
            # Spec 6.1: a source without remote resources has one context, the source itself; its
            # blocks are fetched for SOURCE_REF and system_info.resource_id stays null.
            ref = SOURCE_REF
        elif isinstance(raw_resource, str) and raw_resource.strip():
            ref = self._resource_ref(raw_resource, eff, bound)
        else:
            cctx = self._context(ctx, eff, principal, None, call)
            page, cached = await runner.suggestions(
                cctx, principal, eff.default_resource_id, args.get("query"), self._visible(eff, bound)
            )
            fitted = fit_suggestions(page, call.model_max_chars)
            return self.envelopes.answer(call, "autocontext", fitted, cached=cached)
        call.resource_id = ref.id if uses_resources else None
        cctx = self._context(ctx, eff, principal, ref if uses_resources else None, call)
        await runner.ensure_proven(cctx)
        if uses_resources:
            ref = await self._resolve(ref, cctx, bound)
            cctx.resource, call.resource_id = ref, ref.id
            if ref.today is not None:  # the blocks' windows end in the resource's own calendar
                cctx.today = ref.today
            if self.connector.resources.check is not None:
                await self.connector.resources.check(ref, cctx)
        results, cached = await runner.blocks(cctx, principal, ref, chosen)
        call.warnings.extend(cctx.warnings)  # what resolving the resource or a block had to say
        failed = sum(1 for r in results if "error" in r)
        if failed:
            call.warnings.append(f"{failed} of {len(results)} autocontext blocks failed; see their error field.")
        if meta.session_id:
            session.mark_delivered((principal.identity, meta.session_id, ref.id))
        if uses_resources:
            runner.recency.record(principal.identity, ref.id)
        fitted = fit_blocks(results, call.model_max_chars)
        return self.envelopes.answer(call, "autocontext", fitted, cached=cached)

    # -- extraction results (spec 8.2, 8.5) -------------------------------------------------------
    def _extraction_result(
        self,
        ctx: ServerRequestContext[Any, Any],
        call: CallRecord,
        output: Info | Extraction,
        eff: Effective,
        tool: Tool,
        selection: list[str] | None,
        window: list[str],
        attached: list[BlockResult] | None,
    ) -> types.CallToolResult:
        assert isinstance(output, Extraction)
        caps = _sdk.client_acp_capability(ctx)
        catalog = self.connector.catalog_for(tool)
        if output.dates is None:
            output.dates = window
        if output.screenshot_path is not None and ctx.request is not None:
            # spec 8.10: a remote host cannot read a path on this machine, so over HTTP it is not sent.
            output.screenshot_path.unlink(missing_ok=True)
            output.screenshot_path = None
            output.warnings.append(
                "The chart is left out: over HTTP the server does not send a path on its own machine (spec 8.10). "
                "Run the connector as a local (stdio) server to see it."
            )
        delivery = Delivery(
            row_limit=eff.row_limit,
            field_limit=eff.field_limit,
            sampling=eff.sampling,
            multi_table=bool(caps and caps.get("multi_table")),
            # spec 2.2, 4.1: a client without the ACP capability does not store system_data either.
            stores_system_data=caps is not None and caps.get("stores_system_data") is not False,
            selection=selection,
            catalog_names=frozenset(e.name for e in catalog),
            required_tables=frozenset(e.name for e in catalog if e.required),
            model_max_chars=call.model_max_chars,
            acp_client=caps is not None,
        )
        parts = extraction_parts(output, delivery, list(attached) if attached else None)
        if parts.system_data is not None and ctx.request is not None:
            self._link_table_files(ctx.request.headers.get("host", "127.0.0.1"), parts.system_data)
        call.warnings.extend(parts.warnings)
        fields: JsonObject = {
            "title": output.title or f"{self.connector.title} · {call.resource_id or tool.name}",
            **parts.info,
            "cost_estimate_usd": output.cost_estimate_usd,
            "cost_actual_usd": output.cost_actual_usd,
            "autocontext_attached": bool(attached),
            "messages": parts.messages,
        }
        if output.source is not None:
            fields["source"] = output.source
        if selection is not None:
            fields["tables_selected"] = selection
        return self.envelopes.answer(call, "extraction", parts.fitted, parts.system_data, **fields)

    def _link_table_files(self, host: str, system_data: JsonObject) -> None:
        """Over HTTP a ``file://`` path is useless to a remote host: swap in a single-use URL (spec 8.5).

        Inline tables past :data:`HTTP_INLINE_MAX_BYTES` together go to files first, so they
        travel as links too. ``host`` is the request's Host header, already validated by the
        transport's Host check.
        """
        spill_inline_tables(system_data, self.files, HTTP_INLINE_MAX_BYTES)
        for body in [system_data, *system_data.get("tables", [])]:
            if body.get("format") == "file":
                path = uri_path(body["table_uri"])
                body["table_uri"] = f"{self.http_scheme}://{host}/tables/{self.table_links.publish(path)}"


def bound_source(ctx: ServerRequestContext[Any, Any]) -> BoundSource | None:
    """The source the request's bearer token is bound to (``--sources``), or None."""
    request = ctx.request
    return request.scope.get(BOUND_SOURCE_SCOPE_KEY) if request is not None else None


def spill_inline_tables(system_data: JsonObject, files: TableFiles, max_bytes: int) -> None:
    """Move inline tables to ``table_uri`` files, largest first, until the rest fit in ``max_bytes`` of JSON.

    The writer already spills one table past the limit while it writes; this also bounds
    the sum over the tables of a multi-table answer (spec 8.5 applies the limit per table).
    """
    inline = []
    for body in [system_data, *system_data.get("tables", [])]:
        if body.get("format") == "inline":
            inline.append((jsonio.dumps(body.get("table", [])), body))
    total = sum(len(encoded) for encoded, _ in inline)
    for encoded, body in sorted(inline, key=lambda pair: len(pair[0]), reverse=True):
        if total <= max_bytes:
            break
        path, handle = files.create()
        with handle:
            handle.write(encoded)
        del body["table"]
        body["format"], body["table_uri"] = "file", path.as_uri()
        total -= len(encoded)


def _model_budget(ctx: ServerRequestContext[Any, Any], configured: int | None) -> int | None:
    """The call's ``model_max_chars``: the configured budget, and over HTTP at most :data:`HTTP_MODEL_MAX_CHARS`."""
    if ctx.request is None:
        return configured
    return HTTP_MODEL_MAX_CHARS if configured is None else min(configured, HTTP_MODEL_MAX_CHARS)


def _validate_declaration(c: Connector) -> None:
    names = [t.name for t in c.tools]
    if len(set(names)) != len(names) or set(names) & {TOOL_AUTOCONTEXT, TOOL_AUTOCONTEXT_DATA}:
        raise ValueError("tool names must be unique and must not reuse the reserved autocontext tools")
    if c.credentials.required and c.credentials.authenticate is None:
        raise ValueError("a connector with credentials must declare authenticate (spec 7.4 cache rule)")
    if any(not t.read_only and t.kind != "info" for t in c.tools):
        # The idempotency key replays a writing call's Info answer; an extraction's tables are single-use.
        raise ValueError("a writing tool (read_only=False) must answer with Info (kind 'info')")
    if not 0 <= c.defaults.row_limit <= 5000:
        raise ValueError("defaults.row_limit must be between 0 and 5000")
