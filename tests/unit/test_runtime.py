"""The runtime's size rule for HTTP answers (spec 8.5): inline tables past a budget move to files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from shared._runtime import HTTP_INLINE_MAX_BYTES, spill_inline_tables
from shared._tablefiles import TableFiles, uri_path


def _inline(rows: int, width: int = 100, **extra: Any) -> dict[str, Any]:
    table = [{"i": i, "s": "x" * width} for i in range(rows)]
    return {
        **extra,
        "format": "inline",
        "row_count": rows,
        "headers": [{"name": "i", "type": "integer"}],
        "table": table,
    }


def _size(body: dict[str, Any]) -> int:
    return len(json.dumps(body["table"], separators=(",", ":")))


def test_the_budget_leaves_room_under_the_sdk_clients_event_limit() -> None:
    assert HTTP_INLINE_MAX_BYTES <= 768 * 1024 < 1024 * 1024


def test_a_single_table_past_the_budget_moves_to_a_file_with_the_same_rows(tmp_path: Path) -> None:
    files = TableFiles("unit", str(tmp_path))
    data = _inline(300)
    rows = data["table"]
    spill_inline_tables(data, files, _size(data) - 1)
    assert data["format"] == "file" and "table" not in data and data["row_count"] == 300
    path = uri_path(data["table_uri"])
    assert json.loads(path.read_bytes()) == rows and path.parent == tmp_path.resolve()
    small = _inline(3)
    spill_inline_tables(small, files, _size(small))  # exactly at the budget: stays inline
    assert small["format"] == "inline" and len(small["table"]) == 3


def test_the_budget_bounds_the_sum_of_the_tables_largest_first(tmp_path: Path) -> None:
    """Each table fits on its own, three together do not: the largest go until the rest fit."""
    files = TableFiles("unit", str(tmp_path))
    big, middle, small = _inline(200, name="big"), _inline(120, name="middle"), _inline(10, name="small")
    data = {"format": "tables", "row_count": 330, "headers": [], "tables": [small, big, middle]}
    budget = _size(big) + _size(small)  # room for big and small, not for all three
    spill_inline_tables(data, files, budget)
    assert [t["format"] for t in data["tables"]] == ["inline", "file", "inline"]
    assert json.loads(uri_path(big["table_uri"]).read_bytes())[199]["i"] == 199
    spill_inline_tables(data, files, 0)
    assert all(t["format"] == "file" for t in data["tables"])
