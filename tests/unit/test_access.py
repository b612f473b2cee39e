"""Access modes and table rules (spec 10.6)."""

from __future__ import annotations

import json

import pytest

from shared import InvalidArguments, ReadOnlyViolation
from shared.access import AccessRules, compile_pattern, config_properties, json_list, require_known_columns


def test_default_is_read_only_and_refuses_writes_with_a_way_forward() -> None:
    rules = AccessRules.from_config({})
    assert rules.mode_for(["events", "shop.events"]) == "onlyRead"
    with pytest.raises(ReadOnlyViolation) as caught:
        rules.require("readAndOnlyAdd", ["events", "shop.events"])
    assert "shop.events" in caught.value.message and "access_mode or table_rules" in caught.value.message


def test_first_matching_rule_wins_over_the_source_mode() -> None:
    rules = AccessRules.from_config(
        {
            "access_mode": "readAndOnlyAdd",
            "table_rules": json.dumps(
                [{"pattern": "shop\\.orders", "mode": "onlyRead"}, {"pattern": "shop\\..*", "mode": "readAndOnlyAdd"}]
            ),
        }
    )
    assert rules.mode_for(["orders", "shop.orders"]) == "onlyRead"
    assert rules.mode_for(["notes", "shop.notes"]) == "readAndOnlyAdd"
    rules.require("readAndOnlyAdd", ["notes", "shop.notes"])
    with pytest.raises(ReadOnlyViolation):
        rules.require("readAndOnlyAdd", ["orders", "shop.orders"])
    # Patterns match whole names, case-insensitively.
    assert rules.mode_for(["ORDERS", "SHOP.ORDERS"]) == "onlyRead"
    assert rules.mode_for(["orders_2024", "shop.orders_2024"]) == "readAndOnlyAdd"


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ({"access_mode": "full"}, "access_mode"),
        ({"table_rules": "[{"}, "JSON text"),
        ({"table_rules": '{"pattern": "x"}'}, "JSON array"),
        ({"table_rules": '[{"pattern": "x", "mode": "delete"}]'}, "table_rules"),
        ({"table_rules": '[{"pattern": "(", "mode": "onlyRead"}]'}, "invalid regular expression"),
        ({"table_rules": '[{"pattern": 3, "mode": "onlyRead"}]'}, "not a string"),
    ],
)
def test_bad_settings_are_invalid_arguments_naming_the_field(config: dict, fragment: str) -> None:
    with pytest.raises(InvalidArguments) as caught:
        AccessRules.from_config(config)
    assert fragment in caught.value.message and "Ask the user" in caught.value.message


def test_helpers_and_schema_properties() -> None:
    assert json_list(None, "x") == [] and json_list("", "x") == [] and json_list('["a"]', "x") == ["a"]
    assert compile_pattern("a.b", "x").fullmatch("A-B")
    props = config_properties("run_query", "load_rows")
    assert props["access_mode"]["enum"] == ["onlyRead", "readAndOnlyAdd"]
    assert props["access_mode"]["default"] == "onlyRead"
    assert "run_query is read-only" in props["access_mode"]["description"]
    assert props["table_rules"]["contentMediaType"] == "application/json"


def test_require_known_columns_names_the_extra_columns_and_the_existing_ones() -> None:
    require_known_columns(["a", "b"], ["b", "a", "c"], "db.t")  # a subset passes
    with pytest.raises(InvalidArguments) as caught:
        require_known_columns(["a", "x", "y"], ["a", "b"], "db.t")
    message = str(caught.value)
    assert "column(s) x, y that db.t does not have" in message and "Its columns: a, b." in message
