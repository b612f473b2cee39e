"""Argument checks (shared/_arguments.py): the quick test for flat tool schemas never accepts
what jsonschema refuses, and the errors still come from jsonschema."""

from __future__ import annotations

import importlib
import itertools
import math

import pytest
from jsonschema import Draft202012Validator

from shared import InvalidArguments, Tool
from shared._arguments import ArgumentResolver, flat_check
from shared.publish import ToolCatalog
from tests.discovery import connector_ids
from tests.toy_connector import CONNECTOR as TOY

VALUES = [
    None, True, False, 0, 1, -1, 7, 2**70, 1.0, 1.5, -0.5, math.inf, math.nan, "", "x", "shop",
    "shop.orders", "SELECT 1", "a" * 5000, [], ["shop"], {}, {"a": 1},
]  # fmt: skip
SYNTHETIC = {
    "type": "object",
    "properties": {
        "n": {"type": "integer", "minimum": 1, "maximum": 10, "description": "A count."},
        "x": {"type": "number", "minimum": -1, "x-acp-note": "annotation"},
        "s": {"type": "string", "minLength": 1, "maxLength": 6, "examples": ["abc"]},
        "e": {"type": "string", "enum": ["shop", "x"]},
        "b": {"type": "boolean", "default": False},
    },
    "required": ["s"],
    "additionalProperties": False,
}


def _published_schemas() -> list[tuple[str, dict]]:
    schemas = [("synthetic", SYNTHETIC), ("synthetic-open", {**SYNTHETIC, "additionalProperties": True})]
    for connector in [TOY, *(importlib.import_module(f"connectors.{i}").CONNECTOR for i in connector_ids())]:
        catalog = ToolCatalog(connector)
        schemas += [(f"{connector.id}.{t.name}", catalog.input_schema(t)) for t in connector.tools]
    return schemas


def _argument_sets(schema: dict) -> list[object]:
    names = [*schema.get("properties", {}), "extra"]
    sets: list[object] = [None, [], "x", {}]
    for name, value in itertools.product(names, VALUES):
        sets.append({name: value})
    for first, second in itertools.combinations(names, 2):
        for value in VALUES:
            sets.append({first: value, second: "shop"})
            sets.append({first: "shop", second: value})
    return sets


@pytest.mark.parametrize(("label", "schema"), _published_schemas(), ids=lambda v: v if isinstance(v, str) else "")
def test_quick_check_accepts_only_what_jsonschema_accepts(label: str, schema: dict) -> None:
    full = Draft202012Validator(schema)
    quick = flat_check(schema, full.TYPE_CHECKER)
    if quick is None:
        return  # not a flat schema: every call goes to jsonschema
    accepted = 0
    for arguments in _argument_sets(schema):
        if quick(arguments):
            accepted += 1
            assert full.is_valid(arguments), (label, arguments)
    assert accepted > 0, label  # the quick path is taken for valid arguments


def test_flat_schemas_of_the_connectors_take_the_quick_path() -> None:
    flat = [label for label, schema in _published_schemas() if flat_check(schema, Draft202012Validator.TYPE_CHECKER)]
    assert {"synthetic", "databases.execute_sql", "bigquery.execute_query"} <= set(flat)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"t": {"type": "array", "items": {"type": "string"}}}},
        {"type": "object", "properties": {"p": {"type": "string", "pattern": "^a"}}},
        {"type": "object", "properties": {"k": {"enum": [1, 2]}}},
        {"type": "object", "properties": {"c": {"type": "string", "const": "a"}}},
        {"type": "object", "properties": {}, "oneOf": [{"required": ["a"]}]},
        {"type": "object", "properties": {}, "additionalProperties": {"type": "string"}},
    ],
)
def test_schemas_with_other_keywords_always_use_jsonschema(schema: dict) -> None:
    assert flat_check(schema, Draft202012Validator.TYPE_CHECKER) is None


def test_refused_arguments_get_jsonschema_s_error_and_accepted_ones_a_copy() -> None:
    async def run(arguments, ctx):  # pragma: no cover - never called
        raise AssertionError

    tool = Tool(name="t", description="d", run=run, input_schema={"properties": {}})
    resolver = ArgumentResolver(TOY)
    with pytest.raises(InvalidArguments, match="violates maximum 10"):
        resolver.check(tool.name, SYNTHETIC, None, {"s": "a", "n": 11})
    with pytest.raises(InvalidArguments, match="Unknown argument"):
        resolver.check(tool.name, SYNTHETIC, None, {"s": "a", "other": 1})
    with pytest.raises(InvalidArguments, match="Missing required argument 's'"):
        resolver.check(tool.name, SYNTHETIC, None, {"n": 2})
    arguments = {"s": "abc", "n": 2.0}  # 2.0 is an integer for JSON Schema
    checked = resolver.check(tool.name, SYNTHETIC, None, arguments)
    assert checked == arguments and checked is not arguments
