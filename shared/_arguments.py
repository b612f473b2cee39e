"""Argument resolution for one ``tools/call``: schema checks, credentials, resource and tables.

Each step raises the ACP error the spec names, with a message that tells the model (or the
person) what to do next, and never echoes an argument's value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ._redaction import register_secrets
from ._settings import SYSTEM_CHANNEL_KEYS, Effective, check_credentials
from .declaration import ANONYMOUS, Connector, Principal, ResourceRef, Tool
from .errors import CREDENTIALS_MISSING_MESSAGE, CredentialsMissing, InvalidArguments, ResourceRequired
from .protocol import JsonObject


class ArgumentResolver:
    """Validates arguments against published schemas and resolves who, where and which tables."""

    def __init__(self, connector: Connector) -> None:
        self.connector = connector
        # Per tool: a quick test for the usual flat schema (or None), and the full jsonschema validator.
        self._validators: dict[str, tuple[Callable[[Any], bool] | None, Any]] = {}

    def check(self, name: str, schema: JsonObject, validation: JsonObject | None, arguments: JsonObject) -> JsonObject:
        """The arguments, checked against the tool's schema (``validation`` when it differs)."""
        declared = schema.get("properties", {})
        for key in arguments:
            if key in SYSTEM_CHANNEL_KEYS and key not in declared:
                raise InvalidArguments(
                    f"'{key}' is not a tool argument: limits, credentials and configuration are set by the "
                    "host through the ACP system channel (acp/configure or _meta.acp). Remove it and call again."
                )
        checks = self._validators.get(name)
        if checks is None:
            from jsonschema import Draft202012Validator  # lazy: keeps start-up fast

            full = Draft202012Validator(validation or schema)
            checks = self._validators[name] = (flat_check(validation or schema, full.TYPE_CHECKER), full)
        quick, validator = checks
        if quick is not None and quick(arguments):
            return dict(arguments)
        errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
        if errors:
            raise InvalidArguments(argument_message(errors[0], declared))
        return dict(arguments)

    def principal(self, credentials: JsonObject | None) -> Principal:
        """Who the credentials are (spec 7.4); ACP_CREDENTIALS_MISSING when a source needs some."""
        spec = self.connector.credentials
        if not spec.required:
            return ANONYMOUS
        if not credentials:
            raise CredentialsMissing(CREDENTIALS_MISSING_MESSAGE)
        check_credentials(spec.schema, credentials)
        principal = spec.identify(credentials)
        register_secrets(principal.secrets)
        return principal

    def resource(self, tool: Tool, raw: Any, eff: Effective) -> ResourceRef | None:
        """The call's resource (spec 6.1): the argument, else the default, else ACP_RESOURCE_REQUIRED."""
        if not (tool.requires_resource and self.connector.resources.used):
            return None
        text = raw if isinstance(raw, str) and raw.strip() else eff.default_resource_id
        if not text:
            spec = self.connector.resources
            raise ResourceRequired(
                f"Missing resource_id ({spec.format}). Call autocontext without arguments to list the "
                "available resources, then pass one as resource_id."
            )
        return self.check_level(tool, self.normalize(text, eff.credentials))

    def check_level(self, tool: Tool, ref: ResourceRef) -> ResourceRef:
        """``ref``, when it is at a level ``tool`` works on; ACP_INVALID_ARGUMENTS otherwise."""
        if tool.levels is not None and ref.level not in tool.levels:
            raise InvalidArguments(
                f"{tool.name} works on {', '.join(tool.levels)} resources; '{ref.id}' is a {ref.level}. "
                f"Pass a resource_id of the form {self.connector.resources.format}."
            )
        return ref

    def normalize(self, text: str, credentials: JsonObject | None) -> ResourceRef:
        normalize = self.connector.resources.normalize
        if normalize is None:
            return ResourceRef(id=text.strip(), level=(self.connector.resources.levels or ("resource",))[0])
        return normalize(text, credentials)

    def selection(self, tool: Tool, requested: Any, eff: Effective) -> list[str] | None:
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


# Keywords that assert nothing in draft 2020-12 (format too, without a format checker).
_ANNOTATIONS = frozenset(
    {"title", "description", "examples", "default", "contentMediaType", "contentEncoding", "format", "deprecated"}
)
_PROPERTY_KEYWORDS = frozenset({"type", "enum", "minimum", "maximum", "minLength", "maxLength"}) | _ANNOTATIONS


def flat_check(schema: JsonObject, types: Any) -> Callable[[Any], bool] | None:
    """A quick test that says True only for arguments the full validator accepts, for the usual
    tool schema: an object of typed scalar properties. None for any other schema.

    It runs every call, in a few microseconds where jsonschema takes tens; anything it does not
    accept goes to jsonschema, which accepts it or gives the error. ``types`` is the validator's
    own type checker, so "integer", "number" and the rest mean exactly what they mean there.
    """
    if set(schema) - {"type", "properties", "required", "additionalProperties"} or schema.get("type") != "object":
        return None
    closed = schema.get("additionalProperties", True)
    if not isinstance(closed, bool):
        return None
    required = list(schema.get("required", []))
    checks: dict[str, Callable[[Any], bool]] = {}
    for key, prop in schema.get("properties", {}).items():
        check = _property_check(prop, types)
        if check is None:
            return None
        checks[key] = check

    def quick(arguments: Any) -> bool:
        if not isinstance(arguments, dict) or any(key not in arguments for key in required):
            return False
        for key, value in arguments.items():
            check = checks.get(key)
            if check is None:
                if closed is False:
                    return False
            elif not check(value):
                return False
        return True

    return quick


def _property_check(prop: Any, types: Any) -> Callable[[Any], bool] | None:
    if not isinstance(prop, dict) or not isinstance(prop.get("type"), str):
        return None
    if any(k not in _PROPERTY_KEYWORDS and not k.startswith("x-") for k in prop):
        return None
    kind: str = prop["type"]
    enum = prop.get("enum")
    if enum is not None and not (isinstance(enum, list) and all(isinstance(e, str) for e in enum)):
        return None
    low, high = prop.get("minimum"), prop.get("maximum")
    shortest, longest = prop.get("minLength"), prop.get("maxLength")

    def check(value: Any) -> bool:
        if not types.is_type(value, kind):
            return False
        if enum is not None and not (isinstance(value, str) and value in enum):
            return False
        if isinstance(value, (int, float)) and not isinstance(value, bool):  # minimum and maximum: numbers only
            return (low is None or value >= low) and (high is None or value <= high)
        if isinstance(value, str):  # minLength and maxLength: strings only
            return (shortest is None or len(value) >= shortest) and (longest is None or len(value) <= longest)
        return True

    return check


def argument_message(error: Any, declared: Mapping[str, Any]) -> str:
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
