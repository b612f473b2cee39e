"""``execute_sql`` on SQLite, in process, under the model budget: a wide table reaches a gateway that cuts
at 3,000 characters as valid JSON, and the host still gets every value whole."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from connectors.databases import CONNECTOR

pytestmark = pytest.mark.anyio
COLUMNS = [f"note_{c:02d}" for c in range(40)]


def _cell(row: int, column: int) -> str:
    """Wide text with what JSON escapes and what is not ASCII, so characters and bytes differ."""
    return f'row {row} col {column}: "quoted" \\ línea\n' + "texto ancho " * 400


@pytest.fixture
def wide_database(tmp_path: Path) -> Path:
    path = tmp_path / "wide.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(f"CREATE TABLE wide (id INTEGER PRIMARY KEY, {', '.join(f'{c} TEXT' for c in COLUMNS)})")
        conn.executemany(
            f"INSERT INTO wide VALUES (?, {', '.join('?' for _ in COLUMNS)})",
            [(r, *(_cell(r, c) for c in range(40))) for r in range(30)],
        )
    return path


def _call(database: Path, **meta: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    sql = f"SELECT {', '.join(COLUMNS)} FROM wide ORDER BY id"  # the description repeats the whole SQL
    arguments = {"resource_id": "wide", "sql": sql}
    return arguments, {"credentials": {"type": "sqlite", "path": str(database)}, "autocontext_delivered": True, **meta}


async def test_forty_wide_text_columns_fit_a_3000_character_budget(in_process, runtime_dirs, wide_database) -> None:
    arguments, meta = _call(wide_database, model_max_chars=3000)
    async with in_process(CONNECTOR, env=runtime_dirs) as host:
        result = await host.call("execute_sql", arguments, meta)
    assert not result.is_error, result.text[:300]
    assert len(result.text) <= 3000
    model = json.loads(result.text)
    assert model["columns"] == COLUMNS and model["total_rows"] == 30
    assert 1 <= model["returned_rows"] == len(model["rows"]) < 25
    assert model["notice"].startswith(f"Showing {model['returned_rows']} of 30 extracted rows (model budget 3000")
    assert model["rows"][0]["note_00"].startswith('row 0 col 0: "quoted" \\ línea\n')
    rows = result.rows()
    assert len(rows) == 30 and rows[29]["note_39"] == _cell(29, 39)  # system_data: every value whole


async def test_a_plain_client_gets_the_same_text_as_structured_content_and_no_table(
    in_process, runtime_dirs, wide_database
) -> None:
    arguments, meta = _call(wide_database, model_max_chars=3000)
    async with in_process(CONNECTOR, env=runtime_dirs, capability=None) as host:
        result = await host.call("execute_sql", arguments, meta)
    assert len(result.text) <= 3000
    assert result.raw["structuredContent"] == json.loads(result.text)
    assert result.system_data is None and result.system_info["total_rows"] == 30
