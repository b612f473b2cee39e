"""shared.context pieces that need no server: a host table's columns, the table writers' cap."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from shared import Connector, Credentials, Resources
from shared._session import Limits
from shared._settings import CallMeta, Settings
from shared._tablefiles import TableFiles
from shared.context import CallContext, HostTableData

_DECLARATION: dict[str, Any] = {
    "id": "toy",
    "title": "Toy",
    "version": "0",
    "description": "A test declaration.",
    "instructions": "None.",
    "credentials": Credentials.none(),
    "resources": Resources.none(),
    "tools": (),
}


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


def _context(connector: Connector, config: dict[str, Any], tmp_path: Path) -> CallContext:
    settings = Limits(connector).effective(CallMeta(settings=Settings(config=config)), Settings())
    return CallContext(
        tool="extract",
        settings=settings,
        principal=None,
        resource=None,
        call_id="call-1",
        files=TableFiles("unit", str(tmp_path)),
        host_tables=False,
        read_host_table=None,
        today=dt.date(2026, 1, 1),
    )


def test_ctx_table_stops_at_the_declared_cap_or_the_configured_one(tmp_path: Path) -> None:
    capped = Connector(**_DECLARATION, max_rows=4)
    default = _context(capped, {}, tmp_path).table()
    assert default.max_rows == 4  # the declared default reaches ctx.config through the schema
    configured = _context(capped, {"max_rows": 2}, tmp_path).table(columns=["n"])
    configured.extend([(1,), (2,), (3,)])
    assert configured.capped and configured.finish().row_count == 2
    assert _context(Connector(**_DECLARATION), {}, tmp_path).table().max_rows is None  # no cap declared


def test_ctx_table_stops_at_max_result_bytes_declared_or_configured(tmp_path: Path) -> None:
    sized = Connector(**_DECLARATION, max_result_bytes=10**6)
    assert _context(sized, {}, tmp_path).table().max_bytes == 10**6
    configured = _context(sized, {"max_result_bytes": 100}, tmp_path).table(columns=["text"])
    for text in ("x" * 40, "y" * 40, "z" * 40):  # a row loop: the second row passes 100 bytes of JSON
        configured.extend([(text,)])
    table = configured.finish()
    assert configured.capped and table.row_count == 2 and table.capped_by == "max_result_bytes"
    assert _context(Connector(**_DECLARATION), {}, tmp_path).table().max_bytes is None  # no cap declared
