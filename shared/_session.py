"""Per-session ACP state and ``acp/configure`` (spec 5.1, 5.3, 7.5).

One :class:`SessionState` lives per transport session (a stdio process or an HTTP
session). :func:`configure` validates an ``acp/configure`` and merges it into the session
only when every field is valid, so a refused configure leaves the session untouched.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from ._redaction import register_secrets
from ._settings import (
    CallMeta,
    Effective,
    Settings,
    check_config,
    effective,
    parse_settings,
    schema_defaults,
    secret_values,
)
from .declaration import Connector, Principal
from .protocol import JsonObject

if TYPE_CHECKING:
    from ._token_sources import BoundSource

CONVERSATIONS_KEPT = 1024
# The stateless record serves every 2026-07-28 conversation of the process, so it sees far more
# pairs than a session; forgetting one only means its autocontext is attached once more.
DELIVERIES_KEPT = 8192
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
        _keep_recent(self.conversations, key, state, CONVERSATIONS_KEPT)
        return state

    def was_delivered(self, key: DeliveryKey) -> bool:
        """Spec 7.5: whether this session already received the resource's autocontext."""
        if key not in self.delivered:
            return False
        self.delivered.move_to_end(key)  # an active conversation is not the one forgotten
        return True

    def mark_delivered(self, key: DeliveryKey) -> None:
        _keep_recent(self.delivered, key, None, DELIVERIES_KEPT)


def _keep_recent(entries: OrderedDict[_K, _V], key: _K, value: _V, kept: int) -> None:
    """Store ``key`` as the most recently used entry, dropping the least recently used past ``kept``."""
    entries[key] = value
    entries.move_to_end(key)
    while len(entries) > kept:
        entries.popitem(last=False)


class Limits:
    """The connector's defaults, and the precedence ``_meta.acp`` > session > defaults (spec 5.3)."""

    def __init__(self, connector: Connector) -> None:
        self.connector = connector
        self.catalog_names = frozenset(e.name for e in connector.table_catalog)
        # Every config key with a schema default is always present in the effective config, so
        # connector code reads ctx.config[key] and the default lives in the declaration alone.
        self.config_defaults = schema_defaults(connector.config_schema)

    def effective(self, meta: CallMeta, session: Settings) -> Effective:
        return effective(meta, session, self.connector.defaults, self.config_defaults)


def configure(
    limits: Limits,
    session: SessionState,
    raw: JsonObject,
    identify: Callable[[JsonObject], Principal],
    bound: BoundSource | None = None,
) -> JsonObject:
    """Apply one ``acp/configure`` and return its ``effective`` answer (never the credentials).

    Raises the ACP error of the first invalid field, before anything changes. On a session
    whose bearer token is bound to a source, only lower limits are accepted, and the answer
    is that source's (without its config, which is the operator's).
    """
    connector = limits.connector
    if isinstance(raw.get("credentials"), dict):
        register_secrets(secret_values(connector.credentials.schema, raw["credentials"]))
    update = parse_settings(raw, limits.catalog_names)
    if bound is not None:
        bound.check_overrides(update, "acp/configure")
    check_config(connector.config_schema, update.config)
    if isinstance(update.credentials, dict):
        identify(update.credentials)
    session.settings = update.over(session.settings)
    if bound is not None:
        eff = bound.effective(CallMeta(), session.settings, limits)
    else:
        eff = limits.effective(CallMeta(), session.settings)
    out: JsonObject = {
        "row_limit": eff.row_limit,
        "cost_limit_usd": eff.cost_limit_usd,
        "field_limit": eff.field_limit,
        "model_max_chars": eff.model_max_chars,
        "has_credentials": bool(eff.credentials),
        "default_resource_id": eff.default_resource_id,
        "config": eff.config,
    }
    if bound is not None:
        del out["config"]
        out["bound_source"] = bound.id  # extension field (spec 12.2): the operator's source, not the host's
    if connector.table_catalog:
        out["tables"] = list(eff.tables) if eff.tables is not None else [e.name for e in connector.table_catalog]
    return {"ok": True, "effective": out}
