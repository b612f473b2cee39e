"""shared.declaration helpers."""

from __future__ import annotations

from shared import Connector, Credentials, Resources, table_ref_input
from shared.declaration import max_result_bytes_property, max_rows_property

_DECLARATION = {
    "id": "toy",
    "title": "Toy",
    "version": "0",
    "description": "A test declaration.",
    "instructions": "None.",
    "credentials": Credentials.none(),
    "resources": Resources.none(),
    "tools": (),
}


def test_table_ref_input_declares_one_required_host_table_argument() -> None:
    schema = table_ref_input("A host table.")
    assert schema == {
        "properties": {"table_ref": {"type": "string", "x-acp-input": "table_ref", "description": "A host table."}},
        "required": ["table_ref"],
    }
    first, second = table_ref_input(), table_ref_input()
    assert first == second and first is not second  # a fresh dict per tool: no declaration shares mutable state
    assert "host" in first["properties"]["table_ref"]["description"]


def test_max_rows_is_published_once_as_a_config_property_with_the_connectors_default() -> None:
    own = {"type": "object", "properties": {"region": {"type": "string", "default": "eu"}}, "required": []}
    capped = Connector(**_DECLARATION, config_schema=own, max_rows=1234)
    assert capped.config_schema is not None
    assert list(capped.config_schema["properties"]) == ["region", "max_rows"]
    assert capped.config_schema["properties"]["max_rows"] == max_rows_property(1234)
    assert max_rows_property(1234)["default"] == 1234 and max_rows_property(1234)["minimum"] == 1
    assert own["properties"] == {"region": {"type": "string", "default": "eu"}}  # the declaration is not changed
    bare = Connector(**_DECLARATION, max_rows=5)
    assert bare.config_schema == {"type": "object", "properties": {"max_rows": max_rows_property(5)}, "required": []}
    assert Connector(**_DECLARATION, config_schema=own).config_schema is own  # no cap declared: no property


def test_max_result_bytes_is_published_next_to_max_rows() -> None:
    both = Connector(**_DECLARATION, max_rows=10, max_result_bytes=2**30)
    assert both.config_schema is not None
    assert both.config_schema["properties"] == {
        "max_rows": max_rows_property(10),
        "max_result_bytes": max_result_bytes_property(2**30),
    }
    assert max_result_bytes_property(2**30)["default"] == 2**30 and max_result_bytes_property(1)["minimum"] == 1
