"""BigQuery schemas (REST field shapes) as ACP headers, flattened columns and load schemas."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from shared import Header
from shared.protocol import ColumnType

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
