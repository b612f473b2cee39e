"""BigQuery schemas (REST field shapes) as ACP headers, flattened columns and load schemas."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from typing import Any

from shared import ColumnType, Header

# BigQuery type (legacy and standard SQL names) → ACP column type (spec 8.4).
_HEADER_TYPES: dict[str, ColumnType] = {
    "INTEGER": "integer",
    "INT64": "integer",
    "FLOAT": "number",
    "FLOAT64": "number",
    "NUMERIC": "number",
    "BIGNUMERIC": "number",
    "BOOLEAN": "boolean",
    "BOOL": "boolean",
    "DATE": "date",
    "DATETIME": "datetime",
    "TIMESTAMP": "datetime",
    "RECORD": "json",
    "STRUCT": "json",
    "JSON": "json",
    "RANGE": "json",
}
# Everything else (STRING, BYTES as base64, TIME, GEOGRAPHY as WKT, INTERVAL) is a string.

# ACP column type → BigQuery type, for tables created by load_rows.
_LOAD_TYPES = {
    "integer": "INTEGER",
    "number": "FLOAT",
    "boolean": "BOOLEAN",
    "date": "DATE",
    "datetime": "TIMESTAMP",
    "json": "JSON",
    "string": "STRING",
}


def header(field: dict[str, Any]) -> Header:
    """The ACP header of a result field; a REPEATED field is a JSON array."""
    kind = str(field.get("type", "STRING")).upper()
    column_type: ColumnType = "json" if field.get("mode") == "REPEATED" else _HEADER_TYPES.get(kind, "string")
    out: Header = {"name": str(field["name"]), "type": column_type}
    if field.get("description"):
        out["description"] = str(field["description"])
    return out


def headers(fields: Iterable[dict[str, Any]]) -> list[Header]:
    return [header(f) for f in fields]


def flatten(fields: Iterable[dict[str, Any]], prefix: str = "") -> list[dict[str, Any]]:
    """Columns with nested RECORD fields as ``a.b`` (spec 15.3 §5); mode only when not NULLABLE."""
    out: list[dict[str, Any]] = []
    for field in fields:
        name = f"{prefix}{field['name']}"
        column: dict[str, Any] = {"name": name, "type": str(field.get("type", "STRING"))}
        if field.get("mode") and field["mode"] != "NULLABLE":
            column["mode"] = field["mode"]
        if field.get("description"):
            column["description"] = field["description"]
        out.append(column)
        if field.get("fields"):
            out.extend(flatten(field["fields"], f"{name}."))
    return out


def load_schema(columns: Sequence[Header]) -> list[dict[str, Any]]:
    """The schema of a table created from a host table's headers."""
    return [
        {"name": column["name"], "type": _LOAD_TYPES.get(str(column.get("type")), "STRING"), "mode": "NULLABLE"}
        for column in columns
    ]


# -- REST rows ------------------------------------------------------------------------------------
# A result page's rows are {"f": [{"v": cell}, …]} with every scalar as a string, RECORD as
# {"f": […]}, REPEATED as [{"v": …}] and TIMESTAMP as int64 microseconds (the client asks for
# formatOptions.useInt64Timestamp). Decoding them here, straight from the page, skips the
# client's per-row Row objects: the 1M-row benchmark spends half its time there otherwise.
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
Cell = Callable[[Any], Any]


def _timestamp(value: str) -> dt.datetime:
    try:
        micros = int(value)
    except ValueError:  # float seconds, from a server that ignores useInt64Timestamp
        micros = round(float(value) * 1_000_000)
    return _EPOCH + dt.timedelta(microseconds=micros)


def _boolean(value: str) -> bool:
    return value in ("true", "True", "1")


_SCALARS: dict[str, Cell] = {
    "INTEGER": int,
    "INT64": int,
    "FLOAT": float,
    "FLOAT64": float,
    "NUMERIC": Decimal,
    "BIGNUMERIC": Decimal,
    "BOOLEAN": _boolean,
    "BOOL": _boolean,
    "DATE": dt.date.fromisoformat,
    "DATETIME": dt.datetime.fromisoformat,
    "TIMESTAMP": _timestamp,
    "JSON": json.loads,
}
# STRING, BYTES (kept as the base64 text the API sends), TIME, GEOGRAPHY, INTERVAL, RANGE: as sent.


def cell_decoder(field: dict[str, Any]) -> Cell:
    """The decoder of one field's cell value (``None`` stays ``None``)."""
    kind = str(field.get("type", "STRING")).upper()
    if kind in ("RECORD", "STRUCT"):
        names = [str(f["name"]) for f in field.get("fields", [])]
        parts = [cell_decoder(f) for f in field.get("fields", [])]

        def scalar(value: Any) -> Any:
            if value is None:
                return None
            return {n: p(c["v"]) for n, p, c in zip(names, parts, value["f"], strict=True)}

    else:
        convert = _SCALARS.get(kind)

        def scalar(value: Any) -> Any:
            return value if value is None or convert is None else convert(value)

    if field.get("mode") == "REPEATED":
        return lambda value: None if value is None else [scalar(item["v"]) for item in value]
    return scalar


def _needs_decoding(field: dict[str, Any]) -> bool:
    kind = str(field.get("type", "STRING")).upper()
    return field.get("mode") == "REPEATED" or kind in _SCALARS or kind in ("RECORD", "STRUCT")


def row_decoder(fields: Sequence[dict[str, Any]]) -> Callable[[list[dict[str, Any]]], list[tuple[Any, ...]]]:
    """Decode a page of REST rows into tuples of Python values, in schema order."""
    # Cells sent as they are kept (strings, base64 bytes…) are not touched at all.
    pairs = [(i, cell_decoder(f)) for i, f in enumerate(fields) if _needs_decoding(f)]

    def decode(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        out = []
        for row in rows:
            cells = [cell["v"] for cell in row["f"]]
            for index, decoder in pairs:
                value = cells[index]
                if value is not None:
                    cells[index] = decoder(value)
            out.append(tuple(cells))
        return out

    return decode
