"""shared.context pieces that need no server: a host table's columns."""

from __future__ import annotations

from shared.context import HostTableData


def test_declared_headers_are_the_columns() -> None:
    table = HostTableData(ref="t", headers=[{"name": "b", "type": "integer"}], rows=[{"a": 1, "b": 2}])
    assert table.columns == [{"name": "b", "type": "integer"}]


def test_without_headers_the_rows_name_string_columns_in_first_seen_order() -> None:
    table = HostTableData(ref="t", headers=[], rows=[{"b": 1}, {"a": 2, "b": 3}, {"c": None}])
    assert table.columns == [
        {"name": "b", "type": "string"},
        {"name": "a", "type": "string"},
        {"name": "c", "type": "string"},
    ]
    assert HostTableData(ref="t", headers=[], rows=[]).columns == []
