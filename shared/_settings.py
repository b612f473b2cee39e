"""Limits, credentials and configuration: ``acp/configure``, ``_meta.acp`` and precedence (spec 5).

Values are validated when they arrive, so an invalid ``acp/configure`` leaves the session
untouched and an invalid ``_meta.acp`` fails only its call. The effective value of each
variable comes from ``_meta.acp`` first, then the session, then the server defaults
(spec 5.3); ``config`` merges key by key in the same order.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from .errors import CredentialsInvalid, InvalidArguments, InvalidLimit

if TYPE_CHECKING:
    from .declaration import Defaults
from .protocol import (
    DEFAULT_FIELD_LIMIT,
    INLINE_MAX_BYTES,
    MAX_FIELD_LIMIT,
    MAX_ROW_LIMIT,
    MIN_MODEL_MAX_CHARS,
    JsonObject,
    Sampling,
)


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = _Unset()

SYSTEM_CHANNEL_KEYS: Final = frozenset(
    {
        "row_limit",
        "cost_limit_usd",
        "field_limit",
        "model_max_chars",
        "credentials",
        "config",
        "default_resource_id",
        "session_id",
        "conversation_id",
        "autocontext_delivered",
        "autocontext_blocks",
        "sampling",
        "inline_max_bytes",
        "call_id",
    }
)
_HOST_SETS_IT = "The host sets it through acp/configure or _meta.acp."


@dataclass(frozen=True)
class Settings:
    """Values set by ``acp/configure`` (accumulated per session) or by one call's ``_meta.acp``."""

    row_limit: int | None = None
    cost_limit_usd: float | None = None
    field_limit: int | None = None
    model_max_chars: int | None = None
    tables: tuple[str, ...] | None = None
    credentials: JsonObject | _Unset | None = UNSET
    config: JsonObject = field(default_factory=dict)
    default_resource_id: str | _Unset | None = UNSET

    def over(self, base: Settings) -> Settings:
        """These settings on top of ``base``: a field set here wins; config merges by key."""
        return Settings(
            row_limit=self.row_limit if self.row_limit is not None else base.row_limit,
            cost_limit_usd=self.cost_limit_usd if self.cost_limit_usd is not None else base.cost_limit_usd,
            field_limit=self.field_limit if self.field_limit is not None else base.field_limit,
            model_max_chars=self.model_max_chars if self.model_max_chars is not None else base.model_max_chars,
            tables=self.tables if self.tables is not None else base.tables,
            credentials=self.credentials if self.credentials is not UNSET else base.credentials,
            config={**base.config, **self.config},
            default_resource_id=(
                self.default_resource_id if self.default_resource_id is not UNSET else base.default_resource_id
            ),
        )


@dataclass(frozen=True)
class CallMeta:
    """``params._meta.acp`` of one ``tools/call`` (spec 5.2)."""

    settings: Settings = field(default_factory=Settings)
    session_id: str | None = None
    conversation_id: str | None = None
    call_id: str | None = None
    autocontext_delivered: bool | None = None
    autocontext_blocks: tuple[str, ...] = ()
    sampling: Sampling | None = None
    inline_max_bytes: int | None = None


@dataclass(frozen=True)
class Effective:
    """The values a call runs with."""

    row_limit: int
    cost_limit_usd: float
    field_limit: int
    tables: tuple[str, ...] | None
    credentials: JsonObject | None
    config: JsonObject
    default_resource_id: str | None
    sampling: Sampling = "head"
    inline_max_bytes: int = INLINE_MAX_BYTES
    model_max_chars: int | None = None  # characters of content[0].text; None: no budget


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) and math.isfinite(value)


def _describe(value: Any) -> str:
    """A short, safe rendering of a limit value for error messages."""
    text = json.dumps(value) if isinstance(value, (int, float, bool)) or value is None else type(value).__name__
    return text[:40]


def parse_settings(raw: Mapping[str, Any], catalog: frozenset[str]) -> Settings:
    """Validate the fields shared by ``acp/configure`` and ``_meta.acp``."""
    values: dict[str, Any] = {}
    if "row_limit" in raw:
        value = raw["row_limit"]
        if not (_is_int(value) and 0 <= value <= MAX_ROW_LIMIT):
            raise InvalidLimit(
                f"row_limit must be an integer between 0 and {MAX_ROW_LIMIT} (got {_describe(value)}). "
                + _HOST_SETS_IT,
                {"field": "row_limit"},
            )
        values["row_limit"] = value
    if "cost_limit_usd" in raw:
        value = raw["cost_limit_usd"]
        if not (_is_number(value) and value >= 0):
            raise InvalidLimit(
                f"cost_limit_usd must be a number greater than or equal to 0 (got {_describe(value)}). "
                + _HOST_SETS_IT,
                {"field": "cost_limit_usd"},
            )
        values["cost_limit_usd"] = float(value)
    if "field_limit" in raw:
        value = raw["field_limit"]
        if not (_is_int(value) and 1 <= value <= MAX_FIELD_LIMIT):
            raise InvalidLimit(
                f"field_limit must be an integer between 1 and {MAX_FIELD_LIMIT} (got {_describe(value)}). "
                + _HOST_SETS_IT,
                {"field": "field_limit"},
            )
        values["field_limit"] = value
    if raw.get("model_max_chars") is not None:
        value = raw["model_max_chars"]
        if not (_is_int(value) and value >= MIN_MODEL_MAX_CHARS):
            raise InvalidLimit(
                f"model_max_chars must be an integer of at least {MIN_MODEL_MAX_CHARS} characters "
                f"(got {_describe(value)}). " + _HOST_SETS_IT,
                {"field": "model_max_chars"},
            )
        values["model_max_chars"] = value
    if "tables" in raw:
        values["tables"] = _parse_tables(raw["tables"], catalog, "tables")
    if "credentials" in raw:
        value = raw["credentials"]
        if value is not None and not isinstance(value, dict):
            raise CredentialsInvalid("credentials must be a JSON object (or null to clear them).")
        values["credentials"] = value
    if "config" in raw:
        value = raw["config"]
        if not isinstance(value, dict):
            raise InvalidArguments("config must be a JSON object of the source's settings (see config_schema).")
        values["config"] = dict(value)
    if "default_resource_id" in raw:
        value = raw["default_resource_id"]
        if value is not None and not isinstance(value, str):
            raise InvalidArguments("default_resource_id must be a string or null.")
        values["default_resource_id"] = value
    return Settings(**values)


def _parse_tables(value: Any, catalog: frozenset[str], where: str) -> tuple[str, ...]:
    """Spec 5.1, 8.7: a name outside the table_catalog is ACP_INVALID_ARGUMENTS, and a
    connector without a catalog has no names at all (``[]`` selects nothing, so it passes)."""
    valid = (
        f"Valid names: {', '.join(sorted(catalog))}."
        if catalog
        else "This connector declares no table_catalog, so it takes no table names: leave tables out."
    )
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidArguments(f"{where} must be a list of table names. {valid}")
    unknown = [v for v in value if v not in catalog]
    if unknown:
        raise InvalidArguments(f"Unknown table(s) in {where}: {', '.join(unknown)}. {valid}")
    return tuple(dict.fromkeys(value))


def parse_call_meta(raw: Any, catalog: frozenset[str]) -> CallMeta:
    """Validate ``_meta.acp`` of a call; unknown fields are ignored (spec 12.2)."""
    if raw is None:
        return CallMeta()
    if not isinstance(raw, dict):
        raise InvalidArguments("_meta.acp must be a JSON object. It is set by the host, not by the model.")
    settings = parse_settings(raw, catalog)
    extra: dict[str, Any] = {}
    for key in ("session_id", "conversation_id", "call_id"):
        if key in raw and raw[key] is not None:
            if not isinstance(raw[key], str):
                raise InvalidArguments(f"_meta.acp.{key} must be a string.")
            extra[key] = raw[key]
    if "autocontext_delivered" in raw and raw["autocontext_delivered"] is not None:
        if not isinstance(raw["autocontext_delivered"], bool):
            raise InvalidArguments("_meta.acp.autocontext_delivered must be a boolean.")
        extra["autocontext_delivered"] = raw["autocontext_delivered"]
    if raw.get("autocontext_blocks") is not None:
        blocks = raw["autocontext_blocks"]
        if not isinstance(blocks, list) or not all(isinstance(b, str) for b in blocks):
            raise InvalidArguments("_meta.acp.autocontext_blocks must be a list of block ids.")
        extra["autocontext_blocks"] = tuple(blocks)
    if raw.get("sampling") is not None:
        if raw["sampling"] not in ("head", "spread"):
            raise InvalidLimit(
                f'sampling must be "head" or "spread" (got {_describe(raw["sampling"])}). ' + _HOST_SETS_IT,
                {"field": "sampling"},
            )
        extra["sampling"] = raw["sampling"]
    if raw.get("inline_max_bytes") is not None:
        value = raw["inline_max_bytes"]
        if not (_is_int(value) and value >= 0):
            raise InvalidLimit(
                f"inline_max_bytes must be a non-negative integer (got {_describe(value)}). " + _HOST_SETS_IT,
                {"field": "inline_max_bytes"},
            )
        extra["inline_max_bytes"] = value
    return CallMeta(settings=settings, **extra)


def effective(meta: CallMeta, session: Settings, defaults: Defaults, config_defaults: JsonObject) -> Effective:
    """Apply spec 5.3: ``_meta.acp`` > ``acp/configure`` > the connector's defaults."""
    merged = meta.settings.over(session)
    credentials = merged.credentials
    default_resource = merged.default_resource_id
    return Effective(
        row_limit=merged.row_limit if merged.row_limit is not None else defaults.row_limit,
        cost_limit_usd=merged.cost_limit_usd if merged.cost_limit_usd is not None else defaults.cost_limit_usd,
        field_limit=merged.field_limit or defaults.field_limit or DEFAULT_FIELD_LIMIT,
        tables=merged.tables if merged.tables is not None else defaults.tables,
        credentials=None if isinstance(credentials, _Unset) else credentials,
        config={**config_defaults, **merged.config},
        default_resource_id=None if isinstance(default_resource, _Unset) else default_resource,
        sampling=meta.sampling or "head",
        inline_max_bytes=meta.inline_max_bytes if meta.inline_max_bytes is not None else INLINE_MAX_BYTES,
        model_max_chars=merged.model_max_chars if merged.model_max_chars is not None else defaults.model_max_chars,
    )


# -- setup schemas (spec 5.5) -----------------------------------------------------------------
_JSON_TYPES: Final[dict[str, Any]] = {
    "string": lambda v: isinstance(v, str),
    "number": _is_number,
    "integer": _is_int,
    "boolean": lambda v: isinstance(v, bool),
}


def schema_defaults(schema: JsonObject | None) -> JsonObject:
    if not schema:
        return {}
    return {k: p["default"] for k, p in schema.get("properties", {}).items() if "default" in p}


def check_config(schema: JsonObject | None, config: Mapping[str, Any]) -> None:
    """Validate ``config`` against the flat ``config_schema`` (ACP_INVALID_ARGUMENTS, spec 5.5.3)."""
    properties: dict[str, JsonObject] = (schema or {}).get("properties", {})
    for key, value in config.items():
        prop = properties.get(key)
        if prop is None:
            valid = ", ".join(properties) or "none"
            raise InvalidArguments(
                f"Unknown config key '{key}'. Valid keys: {valid}. Ask the user to fix the source settings."
            )
        problem = _property_problem(prop, value)
        if problem:
            raise InvalidArguments(f"Config '{key}' {problem}. Ask the user to fix the source settings.")


def _property_problem(prop: JsonObject, value: Any) -> str | None:
    """What is wrong with a value for a setup-schema property, without echoing the value."""
    if value is None:
        return None
    expected = prop.get("type")
    if "const" in prop and value != prop["const"]:
        return f"must be {json.dumps(prop['const'])}"
    if expected in _JSON_TYPES and not _JSON_TYPES[expected](value):
        return f"must be {'an' if expected == 'integer' else 'a'} {expected}"
    if "enum" in prop and value not in prop["enum"]:
        return "must be one of: " + ", ".join(str(v) for v in prop["enum"])
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in prop and value < prop["minimum"]:
            return f"must be at least {prop['minimum']}"
        if "maximum" in prop and value > prop["maximum"]:
            return f"must be at most {prop['maximum']}"
    if isinstance(value, str):
        if "minLength" in prop and len(value) < prop["minLength"]:
            return f"must have at least {prop['minLength']} characters"
        if "maxLength" in prop and len(value) > prop["maxLength"]:
            return f"must have at most {prop['maxLength']} characters"
        if prop.get("contentMediaType") == "application/json":
            try:
                json.loads(value)
            except ValueError:
                return "must be valid JSON text"
    return None


def credential_variants(schema: JsonObject) -> list[JsonObject]:
    return list(schema.get("oneOf") or [schema])


def _discriminator(variants: list[JsonObject]) -> str | None:
    for name, prop in variants[0].get("properties", {}).items():
        if "const" in prop and all("const" in v.get("properties", {}).get(name, {}) for v in variants):
            return str(name)
    return None


class SecretFields:
    """Which credential fields hold secrets: every ``writeOnly`` field of any variant and every
    unknown field. Read from the schema once, since every call with credentials asks."""

    def __init__(self, schema: JsonObject) -> None:
        self._secret: dict[str, bool] = {}
        for variant in credential_variants(schema):
            for name, prop in variant.get("properties", {}).items():
                self._secret[name] = self._secret.get(name, False) or bool(prop.get("writeOnly"))

    def values(self, credentials: Mapping[str, Any]) -> list[str]:
        """Strings to redact."""
        out = []
        for name, value in credentials.items():
            if self._secret.get(name, True):
                out.extend(_strings(value))
        return out


def secret_values(schema: JsonObject, credentials: Mapping[str, Any]) -> list[str]:
    """Strings to redact: every ``writeOnly`` field of any variant and every unknown field."""
    return SecretFields(schema).values(credentials)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def check_credentials(schema: JsonObject, credentials: Mapping[str, Any]) -> JsonObject:
    """Pick the credentials variant and validate it; messages name fields, never values."""
    variants = credential_variants(schema)
    key = _discriminator(variants)
    variant = variants[0]
    if key is not None:
        consts = [v["properties"][key]["const"] for v in variants]
        chosen = credentials.get(key, consts[0] if len(variants) == 1 else None)
        matches = [v for v in variants if v["properties"][key]["const"] == chosen]
        if not matches:
            raise CredentialsInvalid(
                f"Unknown credentials {key}. Expected one of: {', '.join(map(str, consts))}. "
                "Ask the user to choose one of these variants in the source settings."
            )
        variant = matches[0]
    label = f" for {key} '{variant['properties'][key]['const']}'" if key else ""
    properties: dict[str, JsonObject] = variant.get("properties", {})
    for name in variant.get("required", []):
        if credentials.get(name) in (None, ""):
            raise CredentialsInvalid(
                f"Missing credential field '{name}'{label}. Ask the user to complete the source credentials."
            )
    for name, value in credentials.items():
        prop = properties.get(name)
        if prop is None:
            raise CredentialsInvalid(
                f"Unknown credential field '{name}'{label}. Valid fields: {', '.join(properties)}. "
                "Ask the user to fix the source credentials."
            )
        problem = _property_problem(prop, value)
        if problem:
            raise CredentialsInvalid(
                f"Credential field '{name}'{label} {problem}. Ask the user to fix the source credentials."
            )
    return variant
