"""Result envelopes: every tool answer as the three-part ``CallToolResult`` of spec 8.

``content[0].text`` carries ``model_response``; ``_meta.acp`` carries ``version``, ``kind``,
``system_info`` (8.4) and, for extractions, ``system_data`` (8.5) or, for errors, the typed
error (12.1). A :class:`CallRecord` collects what ``system_info`` reports while a call runs.
Every message and warning is redacted on its way out. The bridge builds its own tools'
answers with these too.

``content[0].text`` fits the call's ``model_max_chars`` budget (:mod:`._budget`), and
``system_info.model_trim`` says what was cut for it. A client that declared no ACP capability
also gets ``structuredContent``, the same ``model_response`` as an object, as the MCP tools
spec and gateways expect; an array answer (the autocontext tools) has none, since
``structuredContent`` is an object and wrapping it would make it differ from the text.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from . import _jsonio as jsonio
from ._budget import Fitted, fit_error, fit_json
from ._redaction import redact
from .errors import AcpError
from .protocol import ACP_KEY, ACP_VERSION, JsonObject, ResultKind

if TYPE_CHECKING:
    import mcp_types as types

    from .results import Info

__all__ = ["CallRecord", "Envelopes"]

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
    "model_max_chars",
    "model_trim",
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


@dataclass
class CallRecord:
    """What ``system_info`` reports about one call, filled in as the call proceeds."""

    tool: str
    arguments: JsonObject
    call_id: str
    started: float = field(default_factory=time.perf_counter)
    kind: ResultKind = "info"
    resource_id: str | None = None
    row_limit: int = 25
    cost_limit_usd: float = 0.0
    model_max_chars: int | None = None  # the budget of content[0].text (an extension); None: none
    acp_client: bool = True  # False: the client declared no ACP capability (spec 2.2)
    warnings: list[str] = field(default_factory=list)

    @property
    def elapsed_ms(self) -> int:
        return int((time.perf_counter() - self.started) * 1000)


class Envelopes:
    """Builds the results of one server, whose ``serverInfo.name`` is ``acp``."""

    def __init__(self, acp: str) -> None:
        self.acp = acp

    def system_info(self, call: CallRecord, *, cached: bool | None = None, **fields: Any) -> JsonObject:
        """``system_info`` (spec 8.4): every required field, in the spec's order."""
        info: JsonObject = {
            "acp": self.acp,
            "acp_version": ACP_VERSION,
            "tool": call.tool,
            "kind": call.kind,
            "resource_id": call.resource_id,
            "arguments": call.arguments,
        }
        info.update(fields)
        info.setdefault("row_limit", call.row_limit)
        info.setdefault("cost_limit_usd", call.cost_limit_usd)
        if call.model_max_chars is not None:
            info.setdefault("model_max_chars", call.model_max_chars)
        info.setdefault("cost_estimate_usd", 0)
        info.setdefault("cost_actual_usd", 0)
        info["duration_ms"] = call.elapsed_ms
        info["fetched_at"] = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        info.setdefault("autocontext_attached", False)
        if cached is not None:
            info["cached"] = cached
        info.setdefault("messages", [])
        info["warnings"] = [redact(w) for w in call.warnings + info.get("warnings", [])]
        ordered = {k: info[k] for k in _INFO_ORDER if k in info}
        ordered.update({k: v for k, v in info.items() if k not in ordered})
        return ordered

    def result(
        self,
        kind: ResultKind,
        model_response: Any,
        system_info: JsonObject,
        system_data: JsonObject | None = None,
        error: JsonObject | None = None,
        *,
        text: str | None = None,
        structured: bool = False,
    ) -> types.CallToolResult:
        """The ``CallToolResult``: model_response as text, the rest in ``_meta.acp`` (spec 8).

        ``text`` is ``model_response`` already serialized; ``structured`` adds it as
        ``structuredContent`` too when it is an object (for clients without ACP).
        """
        import mcp_types as types

        meta: JsonObject = {"version": ACP_VERSION, "kind": kind, "system_info": system_info}
        if system_data is not None:
            meta["system_data"] = system_data
        if error is not None:
            meta["error"] = error
        if text is None:
            text = jsonio.dumps_text(model_response)
        # Parsed back from the text, so that its numbers are the text's: the SDK would write an exact
        # Decimal as a JSON string. The standard parser keeps integers past 64 bits, as a client's does.
        mirrored = json.loads(text) if structured and isinstance(model_response, dict) else None
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=mirrored,
            is_error=error is not None,
            _meta={ACP_KEY: meta},
        )

    def answer(
        self,
        call: CallRecord,
        kind: ResultKind,
        fitted: Fitted,
        system_data: JsonObject | None = None,
        *,
        cached: bool | None = None,
        **fields: Any,
    ) -> types.CallToolResult:
        """A fitted ``model_response`` with its ``system_info`` (``model_trim`` when something was cut)."""
        trim = fitted.trim.report(len(fitted.text))
        if trim is not None:
            fields["model_trim"] = trim
        info = self.system_info(call, cached=cached, **fields)
        return self.result(kind, fitted.model, info, system_data, text=fitted.text, structured=not call.acp_client)

    def error(self, call: CallRecord, exc: AcpError) -> types.CallToolResult:
        """A tool error (spec 12.1): ``{"error": …}`` as text and in ``_meta.acp.error``, redacted.

        The text fits the budget (its message and data cut, code and name whole); ``_meta.acp.error``
        keeps them whole for the host.
        """
        payload = exc.payload()
        payload["message"] = redact(payload["message"])
        if "data" in payload:
            payload["data"] = jsonio.loads(redact(jsonio.dumps_text(payload["data"])))
        call.kind = "error"
        fields: JsonObject = {}
        if isinstance(payload.get("data"), dict) and "estimate_usd" in payload["data"]:
            fields["cost_estimate_usd"] = payload["data"]["estimate_usd"]
        fitted = fit_error(payload, call.model_max_chars)
        trim = fitted.trim.report(len(fitted.text))
        if trim is not None:
            fields["model_trim"] = trim
        info = self.system_info(call, **fields)
        return self.result(
            "error", fitted.model, info, error=dict(payload), text=fitted.text, structured=not call.acp_client
        )

    def info(self, call: CallRecord, output: Info) -> types.CallToolResult:
        """An info (or write) tool's answer (spec 8.3), within the budget."""
        call.warnings.extend(output.warnings)
        fields: JsonObject = {
            "cost_estimate_usd": output.cost_estimate_usd,
            "cost_actual_usd": output.cost_actual_usd,
        }
        if output.title:
            fields["title"] = output.title
        if output.source is not None:
            fields["source"] = output.source
        return self.answer(call, "info", fit_json(output.data, call.model_max_chars), **fields)
