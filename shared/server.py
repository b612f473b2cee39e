"""The ACP runtime: turns a :class:`~shared.declaration.Connector` into an MCP server.

It owns the capability (spec 4.2), ``acp/configure`` (5.1), the per-call precedence
(5.3), argument checks, the reserved autocontext tools (7), the three-part result (8)
and the single mapping from exceptions to tool errors (12.1).
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from . import _sdk, jsonio
from .autocontext import (
    applicable,
    autocontext_data_schema,
    autocontext_description,
    autocontext_schema,
    descriptor,
    not_applicable_error,
    rank_suggestions,
    requested_blocks,
    resource_argument,
    should_attach,
    suggestions_notice,
)
from .cache import MISS, BlockCache, ProvenCredentials, RecencyStore
from .context import CallContext
from .dates import date_properties, local_today, resolve_date_arguments
from .declaration import ANONYMOUS, Block, Connector, Principal, ResourceRef, Tool
from .errors import (
    CREDENTIALS_MISSING_MESSAGE,
    AcpError,
    CredentialsMissing,
    HostTablesUnsupported,
    InvalidArguments,
    InvalidLimit,
    ResourceRequired,
    UpstreamError,
    error_from_code,
)
from .protocol import (
    ACP_KEY,
    ACP_VERSION,
    METHOD_CONFIGURE,
    RESOURCE_LIST_TTL_S,
    TOOL_AUTOCONTEXT,
    TOOL_AUTOCONTEXT_DATA,
    BlockResult,
    JsonObject,
    ResultKind,
)
from .redaction import redact, register_secrets
from .results import Delivery, Extraction, Info, extraction_parts
from .settings import (
    SYSTEM_CHANNEL_KEYS,
    CallMeta,
    Effective,
    Settings,
    check_config,
    check_credentials,
    effective,
    parse_call_meta,
    parse_settings,
    schema_defaults,
    secret_values,
)
from .tablefiles import TableFiles, TableLinks, uri_path

log = logging.getLogger("acp")
_READ_TABLE_TIMEOUT_S = 120.0
NO_BACK_CHANNEL = (
    "This tool reads a host table through acp/read_table, which needs a session with a back-channel; this "
    "connection (MCP 2026-07-28 or stateless HTTP) has none. Use a stdio or session-based HTTP connection."
)
_RESOURCES_BLOCK = "__resources__"
_CONVERSATIONS_KEPT = 1024
# The stateless record serves every 2026-07-28 conversation of the process, so it sees far more
# pairs than a session; forgetting one only means its autocontext is attached once more.
_DELIVERIES_KEPT = 8192
DeliveryKey = tuple[str, str, str]  # (identity, session_id, resource)
_K = TypeVar("_K")
_V = TypeVar("_V")


@dataclass
class SessionState:
    """ACP state of one transport session (a stdio process or an HTTP session).

    Bounded: a long-running HTTP server forgets the least recently used conversations and
    on_first_call deliveries instead of growing with every new conversation id.
    """

    settings: Settings = field(default_factory=Settings)
    delivered: OrderedDict[DeliveryKey, None] = field(default_factory=OrderedDict)
    conversations: OrderedDict[tuple[str, str], dict[str, Any]] = field(default_factory=OrderedDict)

    def conversation(self, identity: str, conversation: str) -> dict[str, Any]:
        """Connector state of one conversation (spec 5.2 conversation_id), per credential identity."""
        key = (identity, conversation)
        state = self.conversations.get(key, {})
        _keep_recent(self.conversations, key, state, _CONVERSATIONS_KEPT)
        return state

    def was_delivered(self, key: DeliveryKey) -> bool:
        """Spec 7.5: whether this session already received the resource's autocontext."""
        if key not in self.delivered:
            return False
        self.delivered.move_to_end(key)  # an active conversation is not the one forgotten
        return True

    def mark_delivered(self, key: DeliveryKey) -> None:
        _keep_recent(self.delivered, key, None, _DELIVERIES_KEPT)


def _keep_recent(entries: OrderedDict[_K, _V], key: _K, value: _V, kept: int) -> None:
    """Store ``key`` as the most recently used entry, dropping the least recently used past ``kept``."""
    entries[key] = value
    entries.move_to_end(key)
    while len(entries) > kept:
        entries.popitem(last=False)


@dataclass
class _Call:
    """What system_info reports, filled in as the call proceeds."""

    tool: str
    arguments: JsonObject
    started: float
    call_id: str
    kind: ResultKind = "info"
    resource_id: str | None = None
    row_limit: int = 25
    cost_limit_usd: float = 0.0
    warnings: list[str] = field(default_factory=list)


class AcpRuntime:
    """Serves one connector declaration over MCP."""

    def __init__(self, connector: Connector, environ: Mapping[str, str] | None = None) -> None:
        import os

        env = os.environ if environ is None else environ
        self.connector = connector
        self.files = TableFiles.from_environment(connector.id, env)
        cache_root = Path(env["ACP_CACHE_DIR"]) / connector.id if env.get("ACP_CACHE_DIR") else None
        self.cache = BlockCache(cache_root / "autocontext" if cache_root else None)
        self.recency = RecencyStore(cache_root / "recent" if cache_root else None)
        self.proven = ProvenCredentials()
        self.table_links = TableLinks()
        self._stateless = SessionState()
        self.http_scheme = "http"  # "https" when serving TLS or behind a TLS proxy (set by shared.http)
        self._tools = {t.name: t for t in connector.tools}
        self._catalog_names = frozenset(e.name for e in connector.table_catalog)
        self._config_defaults = schema_defaults(connector.config_schema)
        self._published: list[types.Tool] | None = None
        self._schemas: dict[str, JsonObject] = {}
        self._validators: dict[str, Any] = {}
        self._validate_declaration()

    def _validate_declaration(self) -> None:
        c = self.connector
        names = [t.name for t in c.tools]
        if len(set(names)) != len(names) or set(names) & {TOOL_AUTOCONTEXT, TOOL_AUTOCONTEXT_DATA}:
            raise ValueError("tool names must be unique and must not reuse the reserved autocontext tools")
        if c.credentials.required and c.credentials.authenticate is None:
            raise ValueError("a connector with credentials must declare authenticate (spec 7.4 cache rule)")
        if not 0 <= c.defaults.row_limit <= 5000:
            raise ValueError("defaults.row_limit must be between 0 and 5000")

    # -- capability (spec 4.2) -------------------------------------------------------------
    def capability(self) -> JsonObject:
        c = self.connector
        defaults: JsonObject = {"row_limit": c.defaults.row_limit, "cost_limit_usd": c.defaults.cost_limit_usd}
        if c.defaults.field_limit is not None:
            defaults["field_limit"] = c.defaults.field_limit
        if c.defaults.tables is not None:
            defaults["tables"] = list(c.defaults.tables)
        resource: JsonObject = {}
        if c.resources.title:
            resource["title"] = c.resources.title
        resource.update({"description": c.resources.description, "format": c.resources.format})
        if c.resources.separators:
            resource["separators"] = list(c.resources.separators)
        resource["examples"] = list(c.resources.examples)
        if c.resources.levels:
            resource["levels"] = list(c.resources.levels)
        capability: JsonObject = {
            "version": ACP_VERSION,
            "defaults": defaults,
            "credentials_schema": c.credentials.schema,
        }
        if c.config_schema is not None:
            capability["config_schema"] = c.config_schema
        capability.update(
            {
                "resource_id": resource,
                "autocontext": {"cache_ttl_s": c.autocontext_ttl_s, "delivery": list(c.delivery)},
                "cost": {"currency": "USD", "model": c.cost.model, "description": c.cost.description},
                "extraction_tools": c.extraction_tools,
            }
        )
        if c.table_catalog:
            capability["table_catalog"] = [
                {k: v for k, v in vars(e).items() if v not in (None, False)} for e in c.table_catalog
            ]
        return capability

    # -- tools/list ----------------------------------------------------------------------------
    def published_tools(self) -> list[types.Tool]:
        if self._published is None:
            c = self.connector
            published, _ = autocontext_schema(c)
            tools = [
                _sdk_tool(TOOL_AUTOCONTEXT, "Autocontext", autocontext_description(c), published, c.open_world),
                _sdk_tool(
                    TOOL_AUTOCONTEXT_DATA,
                    "Autocontext blocks",
                    "Lists the autocontext blocks (id and what each contains) you can request from autocontext.",
                    autocontext_data_schema(c),
                    open_world=False,
                ),
            ]
            tools.extend(self._publish(tool) for tool in c.tools)
            self._published = tools
        return self._published

    def _input_schema(self, tool: Tool) -> JsonObject:
        """The published input schema: closed, with resource_id and tables where the spec says."""
        cached = self._schemas.get(tool.name)
        if cached is not None:
            return cached
        properties = dict(tool.input_schema.get("properties", {}))
        if tool.requires_resource and self.connector.resources.used:
            properties = {"resource_id": resource_argument(self.connector), **properties}
        catalog = self.connector.catalog_for(tool)
        if catalog:
            listed = "; ".join(f"{e.name} ({e.title})" for e in catalog)
            properties["tables"] = {
                "type": "array",
                "items": {"type": "string", "enum": [e.name for e in catalog]},
                "uniqueItems": True,
                "description": "Datasets to extract. If omitted, the source defaults are used. "
                f"Request only what the analysis needs. Tables: {listed}.",
            }
        schema: JsonObject = {"type": "object", "properties": properties, "additionalProperties": False}
        if tool.input_schema.get("required"):
            schema["required"] = list(tool.input_schema["required"])
        self._schemas[tool.name] = schema
        return schema

    def _publish(self, tool: Tool) -> types.Tool:
        annotations = types.ToolAnnotations(
            title=tool.title,
            read_only_hint=tool.read_only,
            destructive_hint=tool.destructive,
            idempotent_hint=tool.read_only if tool.idempotent is None else tool.idempotent,
            open_world_hint=self.connector.open_world,
        )
        return types.Tool(
            name=tool.name,
            title=tool.title,
            description=tool.description,
            input_schema=self._input_schema(tool),
            annotations=annotations,
        )

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

    def _session(self, ctx: ServerRequestContext[Any, Any]) -> SessionState:
        if not _sdk.has_session(ctx):
            # Stateless requests share one record: it holds no settings (configure is refused there)
            # and its on_first_call pairs are keyed by credential identity and session_id.
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
        raw = dict(params.model_extra or {})
        session = self._session(ctx)
        try:
            if isinstance(raw.get("credentials"), dict):
                register_secrets(secret_values(self.connector.credentials.schema, raw["credentials"]))
            update = parse_settings(raw, self._catalog_names)
            check_config(self.connector.config_schema, update.config)
            if isinstance(update.credentials, dict):
                self._principal(update.credentials)
        except InvalidLimit as exc:
            raise MCPError(code=exc.code, message=redact(exc.message), data=exc.data) from None
        except AcpError as exc:
            # ACP codes travel only inside tool results; a bad configure is Invalid params.
            raise MCPError(
                code=-32602, message=redact(exc.message), data={"acp_code": exc.code, "acp_name": exc.name}
            ) from None
        session.settings = update.over(session.settings)
        merged = session.settings
        c = self.connector
        eff = effective(
            CallMeta(),
            merged,
            c.defaults.row_limit,
            c.defaults.cost_limit_usd,
            c.defaults.field_limit,
            c.defaults.tables,
            self._config_defaults,
        )
        out: JsonObject = {
            "row_limit": eff.row_limit,
            "cost_limit_usd": eff.cost_limit_usd,
            "field_limit": eff.field_limit,
            "has_credentials": bool(eff.credentials),
            "default_resource_id": eff.default_resource_id,
            "config": eff.config,
        }
        if c.table_catalog:
            out["tables"] = list(eff.tables) if eff.tables is not None else [e.name for e in c.table_catalog]
        return {"ok": True, "effective": out}

    # -- tools/call ----------------------------------------------------------------------------
    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        call = _Call(
            tool=params.name,
            arguments={k: v for k, v in arguments.items() if k not in SYSTEM_CHANNEL_KEYS},
            started=time.perf_counter(),
            call_id=f"call-{secrets.token_hex(6)}",
            row_limit=self.connector.defaults.row_limit,
            cost_limit_usd=self.connector.defaults.cost_limit_usd,
        )
        extra = {"call_id": call.call_id, "tool": params.name, "session": _sdk.session_label(ctx)}
        try:
            result = await self._dispatch(ctx, params, arguments, call)
        except AcpError as exc:
            log.info("call failed: %s", exc.name, extra=extra)
            return self._error_result(call, exc)
        except Exception as exc:
            mapped = self._translate(exc)
            log.warning("call failed: %s (%s)", mapped.name, type(exc).__name__, exc_info=True, extra=extra)
            return self._error_result(call, mapped)
        log.info("call ok in %d ms", _elapsed_ms(call), extra=extra)
        return result

    def _translate(self, exc: BaseException) -> AcpError:
        if isinstance(exc, AcpError):
            return exc
        translate = self.connector.translate_error
        mapped = translate(exc) if translate is not None else None
        if mapped is not None:
            return mapped
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
        call: _Call,
    ) -> types.CallToolResult:
        session = self._session(ctx)
        raw_meta = (params.meta or {}).get(ACP_KEY)
        if isinstance(raw_meta, dict) and isinstance(raw_meta.get("credentials"), dict):
            register_secrets(secret_values(self.connector.credentials.schema, raw_meta["credentials"]))
        meta = parse_call_meta(raw_meta, self._catalog_names)
        if meta.call_id:
            call.call_id = meta.call_id
        check_config(self.connector.config_schema, meta.settings.config)
        c = self.connector
        eff = effective(
            meta,
            session.settings,
            c.defaults.row_limit,
            c.defaults.cost_limit_usd,
            c.defaults.field_limit,
            c.defaults.tables,
            self._config_defaults,
        )
        call.row_limit, call.cost_limit_usd = eff.row_limit, eff.cost_limit_usd

        if params.name == TOOL_AUTOCONTEXT:
            call.kind = "autocontext"
            return await self._autocontext(ctx, session, meta, eff, arguments, call)
        if params.name == TOOL_AUTOCONTEXT_DATA:
            call.kind = "autocontext_data"
            return self._autocontext_data(arguments, eff, call)
        tool = self._tools.get(params.name)
        if tool is None:
            available = ", ".join(t.name for t in self.published_tools())
            raise InvalidArguments(f"Unknown tool '{params.name}'. Available tools: {available}.")
        call.kind = tool.kind
        args = self._check_arguments(tool.name, self._input_schema(tool), tool.validation_schema, arguments)
        window = resolve_date_arguments(args, date_properties(tool.input_schema), local_today())
        principal = self._principal(eff.credentials) if tool.requires_credentials else None
        resource = self._resource(tool, args.pop("resource_id", None), eff)
        call.resource_id = resource.id if resource else None
        selection = self._selection(tool, args.pop("tables", None), eff)
        call.arguments = dict(args)
        if selection is not None:
            call.arguments["tables"] = selection
        conversation = session.conversation(
            principal.identity if principal else "", meta.conversation_id or meta.session_id or ""
        )
        cctx = self._context(ctx, tool.name, eff, principal, resource, call, selection, conversation)
        completed = False
        try:
            output = await tool.run(args, cctx)
            completed = True
        finally:
            if not completed:
                cctx.discard_tables()
        if tool.requires_credentials and eff.credentials:
            self.proven.prove(eff.credentials)
        if resource is not None and principal is not None:
            self.recency.record(principal.identity, resource.id)
        if output.applied_arguments:
            call.arguments.update(output.applied_arguments)
        call.warnings.extend(cctx.warnings)
        if isinstance(output, Info):
            return self._info_result(call, output)
        attached = await self._first_call_autocontext(ctx, session, meta, cctx, principal, resource)
        return self._extraction_result(ctx, call, output, eff, tool, selection, window, attached)

    # -- argument checks -----------------------------------------------------------------------
    def _check_arguments(
        self, name: str, schema: JsonObject, validation: JsonObject | None, arguments: JsonObject
    ) -> JsonObject:
        declared = schema.get("properties", {})
        for key in arguments:
            if key in SYSTEM_CHANNEL_KEYS and key not in declared:
                raise InvalidArguments(
                    f"'{key}' is not a tool argument: limits, credentials and configuration are set by the "
                    "host through the ACP system channel (acp/configure or _meta.acp). Remove it and call again."
                )
        validator = self._validators.get(name)
        if validator is None:
            from jsonschema import Draft202012Validator  # lazy: keeps start-up fast

            validator = self._validators[name] = Draft202012Validator(validation or schema)
        errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
        if errors:
            raise InvalidArguments(_argument_message(errors[0], declared))
        return dict(arguments)

    def _principal(self, credentials: JsonObject | None) -> Principal:
        spec = self.connector.credentials
        if not spec.required:
            return ANONYMOUS
        if not credentials:
            raise CredentialsMissing(CREDENTIALS_MISSING_MESSAGE)
        check_credentials(spec.schema, credentials)
        principal = spec.identify(credentials)
        register_secrets(principal.secrets)
        return principal

    def _resource(self, tool: Tool, raw: Any, eff: Effective) -> ResourceRef | None:
        if not (tool.requires_resource and self.connector.resources.used):
            return None
        text = raw if isinstance(raw, str) and raw.strip() else eff.default_resource_id
        if not text:
            spec = self.connector.resources
            raise ResourceRequired(
                f"Missing resource_id ({spec.format}). Call autocontext without arguments to list the "
                "available resources, then pass one as resource_id."
            )
        ref = self._normalize(text, eff.credentials)
        if tool.levels is not None and ref.level not in tool.levels:
            raise InvalidArguments(
                f"{tool.name} works on {', '.join(tool.levels)} resources; '{ref.id}' is a {ref.level}. "
                f"Pass a resource_id of the form {self.connector.resources.format}."
            )
        return ref

    def _normalize(self, text: str, credentials: JsonObject | None) -> ResourceRef:
        normalize = self.connector.resources.normalize
        if normalize is None:
            return ResourceRef(id=text.strip(), level=(self.connector.resources.levels or ("resource",))[0])
        return normalize(text, credentials)

    def _selection(self, tool: Tool, requested: Any, eff: Effective) -> list[str] | None:
        """Effective catalog selection (spec 8.7): arguments > _meta/configure > defaults > all."""
        catalog = self.connector.catalog_for(tool)
        if not catalog:
            return None
        names = [e.name for e in catalog]
        if requested is not None:
            chosen = list(requested)
        elif eff.tables is not None:
            chosen = [t for t in eff.tables if t in names]
        elif self.connector.defaults.tables is not None:
            chosen = [t for t in self.connector.defaults.tables if t in names]
        else:
            chosen = names
        required = [e.name for e in catalog if e.required and e.name not in chosen]
        return chosen + required

    def _context(
        self,
        ctx: ServerRequestContext[Any, Any],
        tool: str,
        eff: Effective,
        principal: Principal | None,
        resource: ResourceRef | None,
        call: _Call,
        selection: list[str] | None = None,
        conversation: dict[str, Any] | None = None,
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

        credentials = eff.credentials
        wants_progress = (ctx.meta or {}).get("progress_token") is not None

        def on_proven() -> None:
            if credentials:
                self.proven.prove(credentials)

        return CallContext(
            connector=self.connector,
            tool=tool,
            settings=eff,
            principal=principal,
            resource=resource,
            call_id=call.call_id,
            files=self.files,
            host_tables=bool(caps.get("host_tables")),
            read_host_table=read_host_table,
            today=local_today(),
            tables_selected=selection,
            on_proven=on_proven,
            report_progress=ctx.session.report_progress if wants_progress else None,
            conversation=conversation,
        )

    # -- autocontext (spec 6.3, 7) ---------------------------------------------------------------
    def _autocontext_data(self, arguments: JsonObject, eff: Effective, call: _Call) -> types.CallToolResult:
        args = self._check_arguments(TOOL_AUTOCONTEXT_DATA, autocontext_data_schema(self.connector), None, arguments)
        ref = self._normalize(args["resource_id"], eff.credentials) if args.get("resource_id") else None
        call.resource_id = ref.id if ref else None
        blocks = [descriptor(b) for b in applicable(self.connector.blocks, ref)]
        return self._result(call, "autocontext_data", blocks, self._system_info(call))

    async def _autocontext(
        self,
        ctx: ServerRequestContext[Any, Any],
        session: SessionState,
        meta: CallMeta,
        eff: Effective,
        arguments: JsonObject,
        call: _Call,
    ) -> types.CallToolResult:
        published, validation = autocontext_schema(self.connector)
        args = self._check_arguments(TOOL_AUTOCONTEXT, published, validation, arguments)
        raw_resource = args.get("resource_id")
        principal = self._principal(eff.credentials)
        if not (isinstance(raw_resource, str) and raw_resource.strip()):
            cctx = self._context(ctx, TOOL_AUTOCONTEXT, eff, principal, None, call)
            return await self._suggestions(cctx, principal, eff, args.get("query"), call)
        ref = self._normalize(raw_resource, eff.credentials)
        call.resource_id = ref.id
        requested = args.get("request_data") or []
        chosen = requested_blocks(self.connector.blocks, requested) if requested else None
        cctx = self._context(ctx, TOOL_AUTOCONTEXT, eff, principal, ref, call)
        await self._ensure_proven(cctx)
        if self.connector.resources.check is not None:
            await self.connector.resources.check(ref, cctx)
        results, cached = await self._run_blocks(cctx, principal, ref, chosen)
        failed = sum(1 for r in results if "error" in r)
        if failed:
            call.warnings.append(f"{failed} of {len(results)} autocontext blocks failed; see their error field.")
        if meta.session_id:
            session.mark_delivered((principal.identity, meta.session_id, ref.id))
        self.recency.record(principal.identity, ref.id)
        return self._result(call, "autocontext", results, self._system_info(call, cached=cached))

    async def _ensure_proven(self, cctx: CallContext) -> None:
        credentials = cctx.credentials
        authenticate = self.connector.credentials.authenticate
        if not self.connector.credentials.required or not credentials or self.proven.is_proven(credentials):
            return
        if authenticate is not None:
            await authenticate(credentials, cctx)
            self.proven.prove(credentials)

    async def _cached(
        self,
        cctx: CallContext,
        principal: Principal,
        resource_id: str,
        key: str,
        ttl_s: float,
        fetch: Callable[[], Awaitable[Any]],
    ) -> tuple[Any, bool]:
        credentials = cctx.credentials
        # The source configuration can change what a block holds (hidden columns, say): an entry
        # made under one configuration is never served under another.
        key = f"{key}#{_config_tag(cctx.config)}"
        usable = not self.connector.credentials.required or (credentials and self.proven.is_proven(credentials))
        if usable:
            hit = self.cache.get(principal.identity, resource_id, key)
            if hit is not MISS:
                return hit, True
        from .values import json_safe

        data = json_safe(await fetch())
        self.cache.put(principal.identity, resource_id, key, data, ttl_s)
        return data, False

    async def _suggestions(
        self, cctx: CallContext, principal: Principal, eff: Effective, query: Any, call: _Call
    ) -> types.CallToolResult:
        lister = self.connector.resources.list
        resources: list[Any] = []
        cached = False
        if lister is not None:
            await self._ensure_proven(cctx)

            async def fetch() -> Any:
                return list(await lister(cctx))

            resources, cached = await self._cached(cctx, principal, "", _RESOURCES_BLOCK, RESOURCE_LIST_TTL_S, fetch)
        text_query = query if isinstance(query, str) and query.strip() else None
        page, matching = rank_suggestions(
            resources, self.recency.ranked(principal.identity), eff.default_resource_id, text_query
        )
        notice = suggestions_notice(len(page), matching, len(resources), text_query, eff.default_resource_id)
        model = {"notice": notice, "total_available": len(resources), "resources": page}
        return self._result(call, "autocontext", model, self._system_info(call, cached=cached))

    async def _run_blocks(
        self, cctx: CallContext, principal: Principal, ref: ResourceRef, chosen: list[Block] | None
    ) -> tuple[list[BlockResult], bool]:
        blocks = chosen if chosen is not None else applicable(self.connector.blocks, ref)
        results: list[BlockResult | None] = [None] * len(blocks)
        hits: list[bool] = [False] * len(blocks)

        async def run(index: int, block: Block) -> None:
            entry: BlockResult = {"id": block.id, "description": block.description}
            if block.applies_to and ref.level not in block.applies_to:
                entry["error"] = not_applicable_error(block, ref)
                results[index] = entry
                return
            ttl = block.ttl_s if block.ttl_s is not None else self.connector.autocontext_ttl_s
            try:
                with anyio.fail_after(self.connector.block_timeout_s):
                    data, hits[index] = await self._cached(
                        cctx, principal, ref.id, block.id, ttl, lambda: block.fetch(ref, cctx)
                    )
                entry["data"] = data
            except TimeoutError:
                entry["error"] = (
                    f"Timed out after {self.connector.block_timeout_s:g} s; the other blocks are unaffected."
                )
            except Exception as exc:
                entry["error"] = redact(self._translate(exc).message)
            results[index] = entry

        async with anyio.create_task_group() as group:
            for index, block in enumerate(blocks):
                group.start_soon(run, index, block)
        done = [r for r in results if r is not None]
        return done, bool(blocks) and all(hits)

    async def _first_call_autocontext(
        self,
        ctx: ServerRequestContext[Any, Any],
        session: SessionState,
        meta: CallMeta,
        cctx: CallContext,
        principal: Principal | None,
        resource: ResourceRef | None,
    ) -> list[BlockResult] | None:
        """Spec 7.5: attach autocontext to an extraction when the table says so."""
        if "on_first_call" not in self.connector.delivery or resource is None or not self.connector.blocks:
            return None
        identity = (principal or ANONYMOUS).identity
        key = (identity, meta.session_id or "", resource.id)
        if not should_attach(meta, not session.was_delivered(key)):
            return None
        known = {b.id: b for b in self.connector.blocks}
        wanted = [known[b] for b in meta.autocontext_blocks if b in known]
        blocks = applicable(wanted or self.connector.blocks, resource)
        try:
            results, _ = await self._run_blocks(cctx, principal or ANONYMOUS, resource, blocks)
        except Exception:
            log.warning("on_first_call autocontext failed", exc_info=True)
            return None
        if not results or all("error" in r for r in results):
            return None
        if meta.session_id:
            session.mark_delivered(key)
        return results

    # -- results (spec 8) ---------------------------------------------------------------------
    def _system_info(self, call: _Call, *, cached: bool | None = None, **fields: Any) -> JsonObject:
        info: JsonObject = {
            "acp": self.connector.id,
            "acp_version": ACP_VERSION,
            "tool": call.tool,
            "kind": call.kind,
            "resource_id": call.resource_id,
            "arguments": call.arguments,
        }
        info.update(fields)
        info.setdefault("row_limit", call.row_limit)
        info.setdefault("cost_limit_usd", call.cost_limit_usd)
        info.setdefault("cost_estimate_usd", 0)
        info.setdefault("cost_actual_usd", 0)
        info["duration_ms"] = _elapsed_ms(call)
        info["fetched_at"] = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        info.setdefault("autocontext_attached", False)
        if cached is not None:
            info["cached"] = cached
        info.setdefault("messages", [])
        info["warnings"] = [redact(w) for w in call.warnings + info.get("warnings", [])]
        return _ordered_info(info)

    def _result(
        self,
        call: _Call,
        kind: ResultKind,
        model_response: Any,
        system_info: JsonObject,
        system_data: JsonObject | None = None,
        error: JsonObject | None = None,
    ) -> types.CallToolResult:
        meta: JsonObject = {"version": ACP_VERSION, "kind": kind, "system_info": system_info}
        if system_data is not None:
            meta["system_data"] = system_data
        if error is not None:
            meta["error"] = error
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=jsonio.dumps_text(model_response))],
            is_error=error is not None,
            _meta={ACP_KEY: meta},
        )

    def _error_result(self, call: _Call, exc: AcpError) -> types.CallToolResult:
        payload = exc.payload()
        payload["message"] = redact(payload["message"])
        if "data" in payload:
            payload["data"] = jsonio.loads(redact(jsonio.dumps_text(payload["data"])))
        call.kind = "error"
        fields: JsonObject = {}
        if isinstance(payload.get("data"), dict) and "estimate_usd" in payload["data"]:
            fields["cost_estimate_usd"] = payload["data"]["estimate_usd"]
        info = self._system_info(call, **fields)
        return self._result(call, "error", {"error": payload}, info, error=dict(payload))

    def _info_result(self, call: _Call, output: Info) -> types.CallToolResult:
        call.warnings.extend(output.warnings)
        fields: JsonObject = {
            "cost_estimate_usd": output.cost_estimate_usd,
            "cost_actual_usd": output.cost_actual_usd,
        }
        if output.title:
            fields["title"] = output.title
        if output.source is not None:
            fields["source"] = output.source
        return self._result(call, "info", output.data, self._system_info(call, **fields))

    def _extraction_result(
        self,
        ctx: ServerRequestContext[Any, Any],
        call: _Call,
        output: Info | Extraction,
        eff: Effective,
        tool: Tool,
        selection: list[str] | None,
        window: list[str] | None,
        attached: list[BlockResult] | None,
    ) -> types.CallToolResult:
        assert isinstance(output, Extraction)
        caps = _sdk.client_acp_capability(ctx) or {}
        catalog = self.connector.catalog_for(tool)
        if output.dates is None:
            output.dates = window or [local_today().isoformat()]
        delivery = Delivery(
            row_limit=eff.row_limit,
            field_limit=eff.field_limit,
            sampling=eff.sampling,
            multi_table=bool(caps.get("multi_table")),
            stores_system_data=caps.get("stores_system_data") is not False,
            selection=selection,
            catalog_names=frozenset(e.name for e in catalog),
            required_tables=frozenset(e.name for e in catalog if e.required),
        )
        parts = extraction_parts(output, delivery)
        if parts.system_data is not None and ctx.request is not None:
            self._link_table_files(ctx.request.headers.get("host", "127.0.0.1"), parts.system_data)
        if attached:
            parts.model_response["autocontext"] = attached
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
        info = self._system_info(call, **fields)
        return self._result(call, "extraction", parts.model_response, info, parts.system_data)

    def _link_table_files(self, host: str, system_data: JsonObject) -> None:
        """Over HTTP a ``file://`` path is useless to a remote host: swap in a single-use URL (spec 8.5).

        ``host`` is the request's Host header, already validated by the transport's Host check.
        """
        for body in [system_data, *system_data.get("tables", [])]:
            if body.get("format") == "file":
                path = uri_path(body["table_uri"])
                body["table_uri"] = f"{self.http_scheme}://{host}/tables/{self.table_links.publish(path)}"


_INFO_ORDER = (
    "acp",
    "acp_version",
    "tool",
    "kind",
    "resource_id",
    "arguments",
    "title",
    "total_rows",
    "returned_rows",
    "truncated",
    "row_limit",
    "cost_limit_usd",
    "cost_estimate_usd",
    "cost_actual_usd",
    "duration_ms",
    "fetched_at",
    "autocontext_attached",
    "cached",
    "messages",
    "warnings",
    "source",
    "field_limit",
    "tables",
    "tables_selected",
)


def _ordered_info(info: JsonObject) -> JsonObject:
    ordered = {k: info[k] for k in _INFO_ORDER if k in info}
    ordered.update({k: v for k, v in info.items() if k not in ordered})
    return ordered


def _config_tag(config: JsonObject) -> str:
    canonical = jsonio.dumps({k: config[k] for k in sorted(config)})
    return hashlib.sha256(canonical).hexdigest()[:16]


def _elapsed_ms(call: _Call) -> int:
    return int((time.perf_counter() - call.started) * 1000)


def _sdk_tool(name: str, title: str, description: str, schema: JsonObject, open_world: bool) -> types.Tool:
    return types.Tool(
        name=name,
        title=title,
        description=description,
        input_schema=schema,
        annotations=types.ToolAnnotations(
            title=title,
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=open_world,
        ),
    )


def _argument_message(error: Any, declared: Mapping[str, Any]) -> str:
    """A jsonschema error as a next step for the model, without echoing argument values."""
    path = ".".join(str(p) for p in error.absolute_path)
    where = f"Argument '{path}'" if path else "The arguments"
    validator = error.validator
    if validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(declared)) if isinstance(error.instance, dict) else []
        valid = ", ".join(declared) or "none"
        return f"Unknown argument(s): {', '.join(extra)}. Valid arguments: {valid}. Remove the others and call again."
    if validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else "?"
        return f"Missing required argument '{missing}'. Add it and call again."
    if validator == "type":
        return f"{where} must be of type {error.validator_value}. Fix it and call again."
    if validator == "enum":
        allowed = ", ".join(map(str, error.validator_value))
        return f"{where} must be one of: {allowed}. Fix it and call again."
    if validator in ("minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems"):
        return f"{where} violates {validator} {error.validator_value}. Fix it and call again."
    if validator == "uniqueItems":
        return f"{where} has repeated items. Remove the duplicates and call again."
    return f"{where} is not valid ({validator}). Check the tool's input schema and call again."
