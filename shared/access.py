"""Access modes and per-table rules for connectors that can write (spec 10.6).

``access_mode`` is the source-wide mode; ``table_rules`` is JSON text, a list of
``{"pattern": "<regex>", "mode": "<access_mode>"}`` where the first pattern matching the
table wins. A write tool calls :meth:`AccessRules.require` before touching anything.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import InvalidArguments, ReadOnlyViolation
from .protocol import JsonObject

ACCESS_MODES = ("onlyRead", "readAndOnlyAdd")
DEFAULT_ACCESS_MODE = "onlyRead"  # the schema default, and the mode of a config that names none
_RANK = {"onlyRead": 0, "readAndOnlyAdd": 1}


def config_properties(read_tool: str, write_tool: str) -> dict[str, JsonObject]:
    """The ``access_mode`` and ``table_rules`` properties of a ``config_schema``."""
    return {
        "access_mode": {
            "type": "string",
            "title": "Access mode",
            "description": f"What {write_tool} may do. {read_tool} is read-only in every mode.",
            "enum": list(ACCESS_MODES),
            "enumNames": ["Read only", "Read and add rows"],
            "default": DEFAULT_ACCESS_MODE,
        },
        "table_rules": {
            "type": "string",
            "title": "Per-table access",
            "description": 'JSON list of {"pattern": "<regex>", "mode": "onlyRead" | "readAndOnlyAdd"}; the first '
            "pattern matching (whole, ignoring case) the table's name, bare or qualified, wins.",
            "contentMediaType": "application/json",
        },
    }


def json_list(text: Any, key: str) -> list[Any]:
    """A config field holding a JSON array as text (or already parsed); empty when unset."""
    if text in (None, ""):
        return []
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        raise InvalidArguments(f"Config '{key}' must be JSON text. Ask the user to fix the source settings.") from None
    if not isinstance(value, list):
        raise InvalidArguments(f"Config '{key}' must be a JSON array. Ask the user to fix the source settings.")
    return value


def compile_pattern(pattern: Any, key: str, flags: int = re.IGNORECASE) -> re.Pattern[str]:
    """A regular expression from the source settings, with a message that names the field."""
    if not isinstance(pattern, str):
        raise InvalidArguments(f"Config '{key}' holds a pattern that is not a string. Ask the user to fix it.")
    try:
        return re.compile(pattern, flags)
    except re.error:
        raise InvalidArguments(f"Config '{key}' holds an invalid regular expression. Ask the user to fix it.") from None


@dataclass(frozen=True)
class AccessRules:
    """The effective write permissions of a source."""

    access_mode: str = DEFAULT_ACCESS_MODE
    table_rules: tuple[tuple[re.Pattern[str], str], ...] = ()

    @classmethod
    def from_config(cls, config: JsonObject) -> AccessRules:
        """The rules of a config; one that names no ``access_mode`` (not merged with the schema
        defaults) gets the schema's default, the read-only mode."""
        mode = config.get("access_mode", DEFAULT_ACCESS_MODE)
        if mode not in ACCESS_MODES:
            raise InvalidArguments(
                f"Config 'access_mode' must be one of: {', '.join(ACCESS_MODES)}. "
                "Ask the user to fix the source settings."
            )
        rules = []
        for rule in json_list(config.get("table_rules"), "table_rules"):
            if not isinstance(rule, dict) or rule.get("mode") not in ACCESS_MODES:
                raise InvalidArguments(
                    'Config \'table_rules\' is a JSON array of {"pattern": "<regex>", "mode": "onlyRead" or '
                    '"readAndOnlyAdd"}. Ask the user to fix the source settings.'
                )
            rules.append((compile_pattern(rule.get("pattern"), "table_rules"), str(rule["mode"])))
        return cls(access_mode=str(mode), table_rules=tuple(rules))

    def mode_for(self, names: Sequence[str]) -> str:
        """The mode for a table known by ``names`` (bare and qualified): the first matching rule wins."""
        for pattern, mode in self.table_rules:
            if any(pattern.fullmatch(name) for name in names):
                return mode
        return self.access_mode

    def require(self, needed: str, names: Sequence[str]) -> None:
        """Refuse with ACP_READ_ONLY_VIOLATION unless the table's mode allows ``needed``."""
        mode = self.mode_for(names)
        if _RANK[mode] < _RANK[needed]:
            raise ReadOnlyViolation(
                f"Writing to {names[-1]} needs access mode {needed}, and the source allows {mode} there. "
                "Ask the user to change the source's access_mode or table_rules if this write is intended."
            )


def require_known_columns(names: Sequence[str], existing: Sequence[str], target: str) -> None:
    """A write into an existing table may not bring columns it lacks: say which, and which it has."""
    unknown = [name for name in names if name not in set(existing)]
    if unknown:
        raise InvalidArguments(
            f"The host table has column(s) {', '.join(unknown)} that {target} does not have. Its columns: "
            f"{', '.join(existing)}. Rename or drop them in the host table first."
        )
