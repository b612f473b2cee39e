"""Report filters as a model writes them, and their translation into GA4's ``FilterExpression``.

A filter is a list of conditions that must all hold; a condition is
``{"field": "pagePath", "match": "begins_with", "value": "/blog/"}`` with optional ``"not": true`` and
``"case_sensitive": true``, and an item of the list may instead be a group ``{"any": [...]}`` (one of
them holds) or ``{"all": [...]}``, nested up to two levels::

    [{"field": "sessionDefaultChannelGroup", "match": "in_list", "value": ["Organic Search", "Direct"]},
     {"any": [{"field": "pagePath", "match": "begins_with", "value": "/blog/"},
              {"field": "pagePath", "match": "full_regexp", "value": "/shop/.*"}]}]

:data:`FILTER_SCHEMA` is that shape as JSON Schema (written out, without ``$ref``, so that every client
reads it; kept small, since each tool that filters publishes it twice); :func:`to_filter_expression`
gives the API's ``FilterExpression`` with the protos' snake_case field names (what ``RunReportRequest``
takes), after checking what the schema cannot say:
a regular expression that does not compile, a numeric match on a value that is not a number,
``between`` without two values, or a text match in a metric filter. Each refusal names the condition
and what to write instead.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from shared import InvalidArguments

FilterKind = Literal["dimension", "metric"]

STRING_MATCHES: Mapping[str, str] = {
    "exact": "EXACT",
    "begins_with": "BEGINS_WITH",
    "ends_with": "ENDS_WITH",
    "contains": "CONTAINS",
    "full_regexp": "FULL_REGEXP",
    "partial_regexp": "PARTIAL_REGEXP",
}
NUMERIC_MATCHES: Mapping[str, str] = {
    "equal": "EQUAL",
    "less_than": "LESS_THAN",
    "less_than_or_equal": "LESS_THAN_OR_EQUAL",
    "greater_than": "GREATER_THAN",
    "greater_than_or_equal": "GREATER_THAN_OR_EQUAL",
}
MATCHES = (*STRING_MATCHES, "in_list", *NUMERIC_MATCHES, "between", "empty")
NESTING = 2  # groups inside groups: a list → a group → a group → conditions

# RE2 (GA4's regex engine) has no lookaround and no backreferences; Python's re would accept them.
_NOT_RE2 = re.compile(r"\(\?<?[=!]|\\[1-9]")

_CONDITION: dict[str, Any] = {
    "type": "object",
    "properties": {
        "field": {"type": "string", "description": "A dimension (dimension_filter) or metric (metric_filter) name."},
        "match": {
            "type": "string",
            "enum": list(MATCHES),
            "description": "Text: exact, begins_with, ends_with, contains, full_regexp, partial_regexp (RE2), "
            "in_list (value: a list). Numbers: equal, less_than, less_than_or_equal, greater_than, "
            "greater_than_or_equal, between (value: [low, high]). empty: the value is empty or (not set).",
        },
        "value": {
            "type": ["string", "number", "array"],
            "items": {"type": ["string", "number"]},
            "description": "What to compare with: text, a number, or a list (in_list; between: [low, high]). "
            "Leave out for empty.",
        },
        "not": {"type": "boolean", "description": "true: keep the rows that do NOT match.", "default": False},
        "case_sensitive": {"type": "boolean", "description": "Text matches only.", "default": False},
    },
    "required": ["field", "match"],
    "additionalProperties": False,
}


def _group(items: dict[str, Any]) -> dict[str, Any]:
    # One pattern for both keys: the items' schema is published once, not once for all and once for any.
    return {
        "type": "object",
        "description": "all: every item holds; any: at least one does; not: true negates the group.",
        "properties": {"not": {"type": "boolean", "default": False}},
        "patternProperties": {"^(all|any)$": {"type": "array", "items": items, "minItems": 1}},
        "additionalProperties": False,
        "minProperties": 1,
    }


def _bare(schema: Any) -> Any:
    """``schema`` without its descriptions: a nested copy of a condition needs none (the outermost one
    says it all), and every tool that filters publishes the whole tree in ``tools/list``."""
    if isinstance(schema, dict):
        return {k: _bare(v) for k, v in schema.items() if k != "description"}
    return schema


_BARE_CONDITION = _bare(_CONDITION)


def _item(depth: int, condition: dict[str, Any] = _CONDITION) -> dict[str, Any]:
    """A condition, or a group whose items nest ``depth`` more levels (their conditions bare)."""
    if depth == 0:
        return condition
    return {"anyOf": [condition, _group(_item(depth - 1, _BARE_CONDITION))]}


FILTER_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": _item(NESTING),
    "description": "Conditions that must all hold, e.g. "
    '[{"field": "pagePath", "match": "begins_with", "value": "/blog/"}]; {"any": [...]} or {"all": [...]} '
    "group conditions (two levels deep at most); not: true negates a condition or a group.",
}


# -- translation -------------------------------------------------------------------------------------
def filter_fields(spec: Any) -> list[str]:
    """Every field the filter names, in order, each once (for checking the names before translating)."""
    return list(dict.fromkeys(condition["field"] for _, condition in _conditions(spec or [], "filter")))


def _conditions(items: Any, path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for index, item in enumerate(items):
        where = f"{path}[{index}]"
        if isinstance(item, Mapping) and ("all" in item or "any" in item):
            for key in ("all", "any"):
                if key in item:
                    yield from _conditions(item[key], f"{where}.{key}")
        elif isinstance(item, Mapping):
            yield where, item


def to_filter_expression(
    spec: Any, kind: FilterKind = "dimension", *, rename: Mapping[str, str] | None = None
) -> dict[str, Any] | None:
    """The ``FilterExpression`` for a filter list (None for an empty one); ``rename`` maps field names
    as written to the API's (names.py fixed their case or alias)."""
    if not spec:
        return None
    argument = f"{kind}_filter"
    if isinstance(spec, Mapping):  # a lone group or condition: the list of one
        spec = [spec]
    return _all([_expression(item, f"{argument}[{i}]", kind, rename or {}) for i, item in enumerate(spec)])


def _all(expressions: list[dict[str, Any]]) -> dict[str, Any]:
    return expressions[0] if len(expressions) == 1 else {"and_group": {"expressions": expressions}}


def _expression(item: Any, where: str, kind: FilterKind, rename: Mapping[str, str]) -> dict[str, Any]:
    if not isinstance(item, Mapping):
        raise InvalidArguments(
            f"{where} must be an object: a condition {{field, match, value}} or a group {{any: [...]}}."
        )
    groups = [key for key in ("all", "any") if key in item]
    if len(groups) > 1:
        raise InvalidArguments(f"{where} has both all and any: put one of them in a group of its own.")
    if groups:
        key = groups[0]
        members = item[key]
        if not isinstance(members, list) or not members:
            raise InvalidArguments(f"{where}.{key} must be a non-empty list of conditions or groups.")
        expressions = [_expression(m, f"{where}.{key}[{i}]", kind, rename) for i, m in enumerate(members)]
        expression = _all(expressions) if key == "all" else _or(expressions)
    else:
        expression = {"filter": _filter(item, where, kind, rename)}
    return {"not_expression": expression} if item.get("not") is True else expression


def _or(expressions: list[dict[str, Any]]) -> dict[str, Any]:
    return expressions[0] if len(expressions) == 1 else {"or_group": {"expressions": expressions}}


def _filter(condition: Mapping[str, Any], where: str, kind: FilterKind, rename: Mapping[str, str]) -> dict[str, Any]:
    field = condition.get("field")
    match = condition.get("match")
    if not isinstance(field, str) or not field.strip():
        raise InvalidArguments(f"{where} needs a field: the {kind} to filter on.")
    name = f"{where} ({field} {match})"
    if match not in MATCHES:
        raise InvalidArguments(f"{name}: unknown match '{match}'. Use one of: {', '.join(MATCHES)}.")
    value = condition.get("value")
    out: dict[str, Any] = {"field_name": rename.get(field, field)}
    case_sensitive = condition.get("case_sensitive") is True
    if match in STRING_MATCHES or match == "in_list":
        if kind == "metric":
            raise InvalidArguments(
                f"{name}: a metric filter compares numbers. Use equal, less_than, less_than_or_equal, greater_than, "
                "greater_than_or_equal or between; to match text, filter a dimension in dimension_filter."
            )
        if match == "in_list":
            if not isinstance(value, list) or not value or any(isinstance(v, (list, dict, bool)) for v in value):
                raise InvalidArguments(f'{name}: in_list needs a non-empty list of values, e.g. "value": ["a", "b"].')
            out["in_list_filter"] = {"values": [str(v) for v in value], "case_sensitive": case_sensitive}
            return out
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise InvalidArguments(f'{name}: {match} needs one text value, e.g. "value": "/blog/".')
        text = str(value)
        if match in ("full_regexp", "partial_regexp"):
            _check_regex(text, name)
        out["string_filter"] = {"match_type": STRING_MATCHES[match], "value": text, "case_sensitive": case_sensitive}
        return out
    if match == "empty":
        out["empty_filter"] = {}
        return out
    if match == "between":
        if not isinstance(value, list) or len(value) != 2:
            raise InvalidArguments(f'{name}: between needs two numbers, low and high, e.g. "value": [10, 100].')
        low, high = (_number(v, name) for v in value)
        out["between_filter"] = {"from_value": low, "to_value": high}
        return out
    out["numeric_filter"] = {"operation": NUMERIC_MATCHES[match], "value": _number(value, name)}
    return out


def _number(value: Any, name: str) -> dict[str, Any]:
    """A GA4 ``NumericValue``: int64 for whole numbers, double otherwise."""
    number: int | float | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, (int, float)):
        number = value
    elif isinstance(value, str):
        try:
            number = int(value.strip())
        except ValueError:
            try:
                number = float(value.strip())
            except ValueError:
                number = None
    if number is None or not math.isfinite(number):
        raise InvalidArguments(
            f"{name}: '{value}' is not a number. Numeric matches compare numbers (\"value\": 10); to match text, "
            "use exact, contains, begins_with or a regexp on a dimension."
        )
    if isinstance(number, float) and number.is_integer() and abs(number) < 2**63:
        number = int(number)
    return {"int64_value": number} if isinstance(number, int) else {"double_value": number}


def _check_regex(pattern: str, name: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise InvalidArguments(
            f"{name}: the regular expression '{pattern}' does not compile ({exc}). Fix it (GA4 uses RE2 syntax) or "
            "use contains / begins_with for plain text."
        ) from None
    if _NOT_RE2.search(pattern):
        raise InvalidArguments(
            f"{name}: '{pattern}' uses lookaround or a backreference, which GA4's RE2 regular expressions do not "
            "support. Rewrite it without them, or combine conditions with not and any/all groups."
        )
