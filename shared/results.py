"""What a tool returns, and how the core turns it into the three-part result (spec 8).

A tool returns :class:`Extraction` (one or more :class:`~shared.tables.TableData`) or
:class:`Info`. :func:`extraction_parts` builds ``model_response``, the extraction fields
of ``system_info`` and ``system_data``: sampling, notices, model views, catalog
selection and the single-table fallback for hosts without ``multi_table``. The model's rows
go through the value cap and the ``model_max_chars`` budget of :mod:`._budget`;
``system_data`` never does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _jsonio as jsonio
from ._budget import MARKER, Fitted, SampledRows, cut_text, fit_extraction
from .protocol import (
    MODEL_MAX_VALUE_CHARS,
    MODEL_ROWS_MULTI,
    MODEL_ROWS_SINGLE,
    BlockResult,
    JsonObject,
    JsonValue,
    Sampling,
)
from .tables import TableData

_SHORT_TYPES = frozenset({"integer", "number", "boolean", "date", "datetime"})


@dataclass
class Extraction:
    """The output of an extraction tool.

    ``multi=True`` asks for the multi-table shape of spec 8.2.1; a host without
    ``multi_table`` then receives only the primary table in the shape of 8.2.

    ``screenshot_path`` is an image the tool wrote on the server's machine (spec 8.10), made
    with :meth:`~shared.context.CallContext.artifact`: ``model_response`` carries its absolute
    path, never its bytes, and the host shows the picture. Over HTTP the core leaves it out,
    since a remote host cannot read the server's files.
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
    screenshot_path: Path | None = None


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
    model_max_chars: int | None = None  # characters of content[0].text; None: no budget
    max_value_chars: int = MODEL_MAX_VALUE_CHARS  # each value of the model's rows, cut with "…"
    acp_client: bool = True  # False: the client declared no ACP capability (spec 2.2)


@dataclass
class ExtractionParts:
    model_response: JsonObject
    info: JsonObject  # the extraction fields of system_info
    system_data: JsonObject | None
    messages: list[str]
    warnings: list[str]
    fitted: Fitted  # model_response as content[0].text, and what the value cap and the budget cut


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


def _view_value(value: Any, max_chars: int) -> Any:
    # spec 8.2.1: objects and arrays are serialized to JSON first, then cut with "…".
    if isinstance(value, (dict, list)):
        value = jsonio.dumps_text(value)
    return cut_text(value, max_chars) if isinstance(value, str) else value


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
            shown[name] = _view_value(value, view.max_value_chars)
        rows.append(shown)
    return fields, rows


def extraction_parts(
    result: Extraction, delivery: Delivery, autocontext: list[BlockResult] | None = None
) -> ExtractionParts:
    """Build model_response (with ``autocontext`` attached, spec 7.5), the extraction part of
    system_info and system_data, under the value cap and the ``model_max_chars`` budget."""
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

    extras: JsonObject = {"description": result.description}
    for key, value in (("manifest", result.manifest), ("totals", result.totals), ("extra", result.extra)):
        if value is not None:
            extras[key] = value
    if warnings:
        extras["warnings"] = warnings
    if autocontext:
        extras["autocontext"] = autocontext
    if result.multi and delivery.multi_table:
        parts = _multi_parts(result, tables, delivery, not_extracted, extras)
    else:
        extras.pop("manifest", None)  # spec 8.2: the single-table shape has no manifest
        primary = next((t for t in tables if t.primary), tables[0] if tables else None)
        for table in tables:
            if table is not primary:
                _drop(table)
        parts = _single_parts(result, primary, delivery, extras)
    parts.warnings = warnings
    if not delivery.stores_system_data:
        # spec 2.2, 4.1: a plain MCP client ignores system_data and a host that said it does not store
        # it gets none; an answer of one table in full would only fill the transport.
        parts.system_data = None
        for table in tables:
            _drop(table)
        parts.messages.append(
            "system_data is left out: the host declared stores_system_data false (spec 4.1)."
            if delivery.acp_client
            else "system_data is left out: the client declared no ACP capability (spec 2.2, 4.1)."
        )
    return parts


def _drop(table: TableData) -> None:
    if table.path is not None:
        table.path.unlink(missing_ok=True)


def _optional_parts(model: JsonObject, extras: JsonObject, keys: Sequence[str]) -> None:
    for key in keys:
        if extras.get(key) is not None:
            model[key] = extras[key]


def _artifact(model: JsonObject, result: Extraction) -> None:
    # spec 8.10: the path whole, outside the parts the budget shrinks (a cut path names no file).
    if result.screenshot_path is not None:
        model["screenshot_path"] = str(result.screenshot_path)


def _text_columns(table: TableData | None) -> list[str] | None:
    """The columns that can hold long values: texts and JSON (spec 8.6); numbers, booleans and ISO
    dates are short by their type."""
    if table is None:
        return None
    return [h["name"] for h in table.headers if h["type"] not in _SHORT_TYPES]


def _values_cut(cut_to: int | None) -> str:
    return f" Longer values are cut to {cut_to} characters (ending in {MARKER})." if cut_to is not None else ""


def _single_parts(
    result: Extraction, table: TableData | None, delivery: Delivery, extras: JsonObject
) -> ExtractionParts:
    if table is None:
        total, columns, sample, data = 0, [], [], None
    else:
        total = table.row_count
        columns = table.columns
        sample = table.model_rows(delivery.row_limit, delivery.sampling)
        data = system_table(table)
    budget = delivery.model_max_chars

    def render(counts: list[int], cut_to: int | None, parts: JsonObject) -> tuple[JsonObject, list[JsonObject]]:
        returned = counts[0]
        notice = notice_single(total, returned)
        if returned < len(sample):
            notice = f"{notice[:-1]} (model budget {budget} characters)."
        model: JsonObject = {
            "notice": notice + _values_cut(cut_to),
            "description": parts["description"],
            "dates": result.dates or [],
            "total_rows": total,
            "returned_rows": returned,
            "truncated": returned < total,
            "columns": columns,
            "rows": [],
        }
        _artifact(model, result)
        _optional_parts(model, parts, ("totals", "extra", "warnings", "autocontext"))
        return model, [model]

    spread = delivery.sampling == "spread"
    sampled = SampledRows(sample, delivery.max_value_chars, spread, _text_columns(table))
    fitted = fit_extraction([sampled], extras, render, budget, delivery.max_value_chars)
    model = fitted.model
    returned = len(model.get("rows", ()))
    info: JsonObject = {"total_rows": total, "returned_rows": returned, "truncated": returned < total}
    if data is None:
        data = {"format": "inline", "row_count": 0, "headers": [], "table": []}
    return ExtractionParts(model, info, data, [model["notice"]], [], fitted)


def _multi_parts(
    result: Extraction,
    tables: Sequence[TableData],
    delivery: Delivery,
    not_extracted: dict[str, int],
    extras: JsonObject,
) -> ExtractionParts:
    multi = len(tables) > 1
    budget = delivery.model_max_chars
    samples: list[SampledRows] = []
    fields_of: list[list[str]] = []
    system_tables = []
    for table in tables:
        if table.model_view is not None:
            fields, rows = _view_rows(table, delivery.field_limit, multi)
            samples.append(SampledRows(rows, min(table.model_view.max_value_chars, delivery.max_value_chars)))
        else:
            fields = table.columns
            rows = table.model_rows(delivery.row_limit, delivery.sampling)
            spread = delivery.sampling == "spread"
            samples.append(SampledRows(rows, delivery.max_value_chars, spread, _text_columns(table)))
        fields_of.append(fields)
        extras[f"tables.{table.name}.description"] = table.description or result.description
        body = {"name": table.name, **({"title": table.title} if table.title else {}), **system_table(table)}
        if table.model_view is not None:
            body["model_view"] = table.model_view.as_json()
        system_tables.append(body)
    total = sum(t.row_count for t in tables)

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

    def render(counts: list[int], cut_to: int | None, parts: JsonObject) -> tuple[JsonObject, list[JsonObject]]:
        entries: JsonObject = {}
        over = False
        for table, fields, sample, returned in zip(tables, fields_of, samples, counts, strict=True):
            entry: JsonObject = {}
            if table.title:
                entry["title"] = table.title
            line = table_notice(table.name, table.row_count, returned, len(fields), len(table.headers))
            if returned < len(sample.rows):
                over = True
                line = f"{line[:-1]} (model budget {budget} characters)."
            entry.update(
                {
                    "description": parts[f"tables.{table.name}.description"],
                    "dates": table.dates or result.dates or [],
                    "notice": line,
                    "total_rows": table.row_count,
                    "returned_rows": returned,
                    "fields": fields,
                    "fields_total": len(table.headers),
                    "rows": [],
                }
            )
            entries[table.name] = entry
        top = notice + (f" The reduced view fits a model budget of {budget} characters." if over else "")
        model: JsonObject = {
            "notice": top + _values_cut(cut_to),
            "description": parts["description"],
            "dates": result.dates or [],
        }
        _optional_parts(model, parts, ("manifest",))
        model["tables"] = entries
        if not_extracted:
            model["not_extracted"] = not_extracted
        _artifact(model, result)
        _optional_parts(model, parts, ("totals", "extra", "warnings", "autocontext"))
        return model, list(entries.values())

    fitted = fit_extraction(samples, extras, render, budget, delivery.max_value_chars)
    model = fitted.model
    shown_entries = model.get("tables") or {}
    info_tables = []
    returned = 0
    for table, fields in zip(tables, fields_of, strict=True):
        entry = shown_entries.get(table.name)
        count = len(entry.get("rows", ())) if isinstance(entry, dict) else 0
        summary: JsonObject = {"name": table.name}
        if table.title:
            summary["title"] = table.title
        summary.update(
            {
                "total_rows": table.row_count,
                "returned_rows": count,
                "fields_total": len(table.headers),
                "fields_shown": len(fields),
            }
        )
        info_tables.append(summary)
        returned += count
    info: JsonObject = {
        "total_rows": total,
        "returned_rows": returned,
        "truncated": returned < total,
        "field_limit": delivery.field_limit,
        "tables": info_tables,
    }
    data = {"format": "tables", "row_count": total, "headers": [], "tables": system_tables}
    return ExtractionParts(model, info, data, [model["notice"]], [], fitted)
