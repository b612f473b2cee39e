"""What a tool returns, and how the core turns it into the three-part result (spec 8).

A tool returns :class:`Extraction` (one or more :class:`~shared.tables.TableData`) or
:class:`Info`. :func:`extraction_parts` builds ``model_response``, the extraction fields
of ``system_info`` and ``system_data``: sampling, notices, model views, catalog
selection and the single-table fallback for hosts without ``multi_table``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from . import _jsonio as jsonio
from .protocol import (
    MODEL_ROWS_MULTI,
    MODEL_ROWS_SINGLE,
    JsonObject,
    JsonValue,
    Sampling,
)
from .tables import TableData


@dataclass
class Extraction:
    """The output of an extraction tool.

    ``multi=True`` asks for the multi-table shape of spec 8.2.1; a host without
    ``multi_table`` then receives only the primary table in the shape of 8.2.
    """

    tables: list[TableData]
    description: str
    dates: list[str] | None = None
    title: str | None = None
    totals: JsonObject | None = None
    extra: JsonValue = None
    warnings: list[str] = field(default_factory=list)
    manifest: JsonValue = None
    source: JsonObject | None = None
    cost_estimate_usd: float = 0.0
    cost_actual_usd: float | None = 0.0
    multi: bool = False
    applied_arguments: JsonObject | None = None  # defaults the tool applied, for repeatability


@dataclass
class Info:
    """The output of an info (or write) tool: free JSON for the model, kept small."""

    data: JsonValue
    title: str | None = None
    warnings: list[str] = field(default_factory=list)
    source: JsonObject | None = None
    cost_estimate_usd: float = 0.0
    cost_actual_usd: float | None = 0.0
    applied_arguments: JsonObject | None = None


@dataclass(frozen=True)
class Delivery:
    """Effective delivery settings of one call."""

    row_limit: int
    field_limit: int
    sampling: Sampling
    multi_table: bool
    stores_system_data: bool
    selection: list[str] | None  # effective catalog selection, or None without a catalog
    catalog_names: frozenset[str]
    required_tables: frozenset[str]


@dataclass
class ExtractionParts:
    model_response: JsonObject
    info: JsonObject  # the extraction fields of system_info
    system_data: JsonObject | None
    messages: list[str]
    warnings: list[str]


def notice_single(total: int, returned: int) -> str:
    """The normative notice phrases of spec 8.2."""
    if total == 0:
        return "The query returned no rows."
    if returned >= total:
        return f"Showing all {total} extracted rows."
    return f"Showing {returned} of {total} extracted rows."


def table_notice(name: str, total: int, returned: int, fields_shown: int, fields_total: int) -> str:
    """``tables.*.notice`` of spec 8.2.1."""
    if total == 0:
        return f"{name}: no rows."
    rows = f"{total} rows" if returned >= total else f"{returned} of {total} rows"
    fields = "all fields" if fields_shown >= fields_total else f"{fields_shown} of {fields_total} fields"
    return f"{name}: {rows}, {fields}."


def system_table(table: TableData) -> JsonObject:
    """The ``system_data`` of one table: inline rows or a ``table_uri`` file."""
    body: JsonObject = {"format": "inline", "row_count": table.row_count, "headers": table.headers}
    if table.rows is not None:
        body["table"] = table.rows
    else:
        assert table.path is not None
        body["format"] = "file"
        body["table_uri"] = table.path.as_uri()
    return body


def _truncate(value: Any, max_chars: int) -> Any:
    # spec 8.2.1: objects and arrays are serialized to JSON first, then cut with "…".
    if isinstance(value, (dict, list)):
        value = jsonio.dumps_text(value)
    if isinstance(value, str) and len(value) > max_chars:
        return value[: max(max_chars - 1, 0)] + "…"
    return value


def _view_rows(table: TableData, field_limit: int, multi: bool) -> tuple[list[str], list[JsonObject]]:
    view = table.model_view
    if view is None:
        return table.columns, []
    existing = set(table.columns)
    fields = [f for f in view.fields if f in existing][:field_limit]
    cap = MODEL_ROWS_MULTI if multi else MODEL_ROWS_SINGLE
    if view.max_rows is not None:
        cap = min(cap, view.max_rows)
    rows = []
    for row in table.head[:cap]:
        shown = {}
        for name in fields:
            value = row.get(name)
            if value is None or value == "":
                continue  # spec 8.2.1: null and "" cells are left out
            shown[name] = _truncate(value, view.max_value_chars)
        rows.append(shown)
    return fields, rows


def extraction_parts(result: Extraction, delivery: Delivery) -> ExtractionParts:
    """Build model_response, the extraction part of system_info and system_data."""
    warnings = list(result.warnings)
    for table in result.tables:
        warnings.extend(table.warnings)
    tables = list(result.tables)
    not_extracted: dict[str, int] = {}
    if delivery.selection is not None:
        wanted = set(delivery.selection) | delivery.required_tables
        kept = []
        for table in tables:
            if table.name in delivery.catalog_names and table.name not in wanted:
                if table.row_count:
                    not_extracted[table.name] = table.row_count
                _drop(table)
            else:
                kept.append(table)
        tables = kept

    if result.multi and delivery.multi_table:
        parts = _multi_parts(result, tables, delivery, not_extracted)
    else:
        primary = next((t for t in tables if t.primary), tables[0] if tables else None)
        for table in tables:
            if table is not primary:
                _drop(table)
        parts = _single_parts(result, primary, delivery)
    parts.warnings = warnings
    if warnings:
        parts.model_response["warnings"] = warnings
    if not delivery.stores_system_data:
        parts.system_data = None  # spec 4.1: the host said it does not store it
    return parts


def _drop(table: TableData) -> None:
    if table.path is not None:
        table.path.unlink(missing_ok=True)


def _single_parts(result: Extraction, table: TableData | None, delivery: Delivery) -> ExtractionParts:
    if table is None:
        total, columns, rows, data = 0, [], [], None
    else:
        total = table.row_count
        columns = table.columns
        rows = table.model_rows(delivery.row_limit, delivery.sampling)
        data = system_table(table)
    notice = notice_single(total, len(rows))
    model: JsonObject = {
        "notice": notice,
        "description": result.description,
        "dates": result.dates or [],
        "total_rows": total,
        "returned_rows": len(rows),
        "truncated": len(rows) < total,
        "columns": columns,
        "rows": rows,
    }
    if result.totals is not None:
        model["totals"] = result.totals
    if result.extra is not None:
        model["extra"] = result.extra
    info: JsonObject = {"total_rows": total, "returned_rows": len(rows), "truncated": len(rows) < total}
    if data is None:
        data = {"format": "inline", "row_count": 0, "headers": [], "table": []}
    return ExtractionParts(model, info, data, [notice], [])


def _multi_parts(
    result: Extraction, tables: Sequence[TableData], delivery: Delivery, not_extracted: dict[str, int]
) -> ExtractionParts:
    multi = len(tables) > 1
    model_tables: JsonObject = {}
    info_tables = []
    system_tables = []
    total = returned = 0
    for table in tables:
        if table.model_view is not None:
            fields, rows = _view_rows(table, delivery.field_limit, multi)
        else:
            fields, rows = table.columns, table.model_rows(delivery.row_limit, delivery.sampling)
        entry: JsonObject = {}
        if table.title:
            entry["title"] = table.title
        entry.update(
            {
                "description": table.description or result.description,
                "dates": table.dates or result.dates or [],
                "notice": table_notice(table.name, table.row_count, len(rows), len(fields), len(table.headers)),
                "total_rows": table.row_count,
                "returned_rows": len(rows),
                "fields": fields,
                "fields_total": len(table.headers),
                "rows": rows,
            }
        )
        model_tables[table.name] = entry
        summary: JsonObject = {"name": table.name}
        if table.title:
            summary["title"] = table.title
        summary.update(
            {
                "total_rows": table.row_count,
                "returned_rows": len(rows),
                "fields_total": len(table.headers),
                "fields_shown": len(fields),
            }
        )
        info_tables.append(summary)
        body = {"name": table.name, **({"title": table.title} if table.title else {}), **system_table(table)}
        if table.model_view is not None:
            body["model_view"] = table.model_view.as_json()
        system_tables.append(body)
        total += table.row_count
        returned += len(rows)

    with_data = [t for t in tables if t.row_count]
    if delivery.selection is not None and not delivery.selection and not with_data:
        notice = "No tables were requested, so no data was extracted."
    elif with_data:
        listed = ", ".join(f"{t.name} ({t.row_count})" for t in with_data)
        notice = (
            f"Extracted {len(with_data)} table(s) with data: {listed}. "
            "You see a reduced view; the host stores every table in full."
        )
    else:
        notice = "No data was extracted."
    if not_extracted:
        listed = ", ".join(f"{name} ({rows})" for name, rows in not_extracted.items())
        notice += (
            f" Not extracted because they were not requested: {listed}. "
            "Ask for them with tables only if the analysis needs them."
        )
    model: JsonObject = {"notice": notice, "description": result.description, "dates": result.dates or []}
    if result.manifest is not None:
        model["manifest"] = result.manifest
    model["tables"] = model_tables
    if not_extracted:
        model["not_extracted"] = not_extracted
    if result.totals is not None:
        model["totals"] = result.totals
    if result.extra is not None:
        model["extra"] = result.extra
    info: JsonObject = {
        "total_rows": total,
        "returned_rows": returned,
        "truncated": returned < total,
        "field_limit": delivery.field_limit,
        "tables": info_tables,
    }
    data = {"format": "tables", "row_count": total, "headers": [], "tables": system_tables}
    return ExtractionParts(model, info, data, [notice], [])
