"""shared.declaration helpers."""

from __future__ import annotations

from shared import table_ref_input


def test_table_ref_input_declares_one_required_host_table_argument() -> None:
    schema = table_ref_input("A host table.")
    assert schema == {
        "properties": {"table_ref": {"type": "string", "x-acp-input": "table_ref", "description": "A host table."}},
        "required": ["table_ref"],
    }
    first, second = table_ref_input(), table_ref_input()
    assert first == second and first is not second  # a fresh dict per tool: no declaration shares mutable state
    assert "host" in first["properties"]["table_ref"]["description"]
