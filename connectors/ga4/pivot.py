"""``run_pivot_report``: a GA4 pivot as one wide typed table.

The model says which dimensions make the rows and which the columns; the tool builds the two pivots
of ``runPivotReport`` (rows: every combination, paged with the row pivot's ``offset``; columns: the top
``columns_limit`` combinations) and turns the answer, where each API row is one cell, into one table row
per row combination with one column per column value and metric, named ``<value> · <metric>`` (values of
several column dimensions joined with `` / ``). A cell GA4 leaves out (no data) is 0.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from shared import CallCancelled, CallContext, Extraction, Header, InvalidArguments, TableData, Tool

from . import api, report
from .filters import FILTER_SCHEMA
from .resources import settings

API = "analyticsdata.v1beta.runPivotReport"

MAX_PIVOT_ROWS = 100_000  # one pivot's limit
MAX_CELLS = 250_000  # the product of the pivots' limits
DEFAULT_COLUMNS_LIMIT = 10
MAX_COLUMNS_LIMIT = 50
VALUE_SEPARATOR = " / "
METRIC_SEPARATOR = " · "
ORDERS = ("metric", "value")


@dataclass
class PivotRequest:
    """The pivot asked for, its names checked: row dimensions, column dimensions, metrics, order."""

    checked: report.Checked  # the same report as a runReport request: names, dates and filters checked
    rows: list[str]
    columns: list[str]
    columns_limit: int
    rows_order: str
    columns_order: str
    page_rows: int

    @property
    def metrics(self) -> list[str]:
        return self.checked.metrics

    def body(self, offset: int, limit: int) -> dict[str, Any]:
        kept = ("property", "date_ranges", "dimensions", "metrics", "dimension_filter", "metric_filter")
        body = {key: value for key, value in self.checked.request.items() if key in kept}
        body["pivots"] = [
            {
                "field_names": self.rows,
                "order_bys": self._order(self.rows_order, self.rows),
                "offset": offset,
                "limit": limit,
                "metric_aggregations": ["TOTAL"],  # the columns' totals (row dimensions RESERVED_TOTAL)
            },
            {
                "field_names": self.columns,
                "order_bys": self._order(self.columns_order, self.columns),
                "limit": self.columns_limit,
            },
        ]
        body["return_property_quota"] = True
        return body

    def _order(self, order: str, dimensions: list[str]) -> list[dict[str, Any]]:
        if order == "value":
            return [{"dimension": {"dimension_name": d, "order_type": "ALPHANUMERIC"}} for d in dimensions]
        return [{"metric": {"metric_name": self.metrics[0]}, "desc": True}]


def pivot_request(
    config: api.Settings, property_id: str, arguments: dict[str, Any], ranges: report.Ranges
) -> PivotRequest:
    """The arguments checked (blocking: the property's metadata)."""
    rows, columns = list(arguments.get("rows") or []), list(arguments.get("columns") or [])
    if not rows or not columns:
        raise InvalidArguments(
            'A pivot needs row and column dimensions, e.g. rows ["date"] and columns ["sessionDefaultChannelGroup"].'
        )
    asked = {**arguments, "dimensions": [*rows, *columns]}
    checked = report.build_request(config, property_id, asked, ranges, None)
    if len(checked.dimensions) < len(rows) + len(columns):
        raise InvalidArguments("A dimension is both a row and a column dimension. Use each dimension once.")
    columns_limit = int(arguments.get("columns_limit") or DEFAULT_COLUMNS_LIMIT)
    return PivotRequest(
        checked=checked,
        rows=checked.dimensions[: len(rows)],
        columns=checked.dimensions[len(rows) :],
        columns_limit=columns_limit,
        rows_order=str(arguments.get("rows_order") or "metric"),
        columns_order=str(arguments.get("columns_order") or "metric"),
        page_rows=min(config.page_size, MAX_PIVOT_ROWS, MAX_CELLS // columns_limit),
    )


def column_name(values: tuple[str, ...], metric: str) -> str:
    """The wide table's column of one column value combination and one metric: ``Organic Search · sessions``."""
    return f"{VALUE_SEPARATOR.join(values)}{METRIC_SEPARATOR}{metric}"


# -- reading the pivot -----------------------------------------------------------------------------------
def _values(cells: list[dict[str, Any]]) -> tuple[str, ...]:
    return tuple(cell.get("value", "") for cell in cells)  # proto3 JSON leaves "" out


@dataclass
class Wide:
    """The pivot read so far: the column combinations (from the first page) and the wide rows."""

    column_values: list[tuple[str, ...]]
    metric_types: list[str]
    metadata: dict[str, Any]
    row_combinations: int
    column_combinations: int
    rows: list[list[Any]] = field(default_factory=list)
    column_totals: dict[str, Any] = field(default_factory=dict)
    quota: dict[str, Any] | None = None
    pages: int = 0
    late_columns: set[tuple[str, ...]] = field(default_factory=set)


def read_pivot(config: api.Settings, request: PivotRequest, room: int | None, cancelled: threading.Event) -> Wide:
    """Every row combination, page by page of the row pivot (``offset``), as wide rows: the row
    dimensions' values, then one cell per column combination and metric (0 where GA4 has no row)."""
    width, metrics = len(request.rows), len(request.metrics)
    convert_key = report.row_converter(request.rows, [])
    wide: Wide | None = None
    offset = 0
    while True:
        limit = request.page_rows if room is None else max(min(request.page_rows, room + 1), 1)
        answer = api.run_pivot_report(config, request.body(offset, limit))
        row_header, column_header = answer.get("pivotHeaders") or [{}, {}]
        if wide is None:
            types = [h.get("type", "TYPE_FLOAT") for h in answer.get("metricHeaders", [])]
            wide = Wide(
                column_values=[
                    _values(h.get("dimensionValues", [])) for h in column_header.get("pivotDimensionHeaders", [])
                ],
                metric_types=types,
                metadata=answer.get("metadata") or {},
                row_combinations=int(row_header.get("rowCount") or 0),
                column_combinations=int(column_header.get("rowCount") or 0),
            )
            wide.column_totals = _column_totals(answer.get("aggregates") or [], width, request.metrics, wide)
        wide.pages += 1
        wide.quota = answer.get("propertyQuota") or wide.quota
        place = {values: i for i, values in enumerate(wide.column_values)}
        convert_cell = report.row_converter([], wide.metric_types)
        keys = [_values(h.get("dimensionValues", [])) for h in row_header.get("pivotDimensionHeaders", [])]
        cells = {key: [0] * (len(place) * metrics) for key in keys}
        for row in answer.get("rows") or []:
            dims = _values(row.get("dimensionValues", []))
            slot = place.get(dims[width:])
            if slot is None:  # a column combination the first page did not have
                wide.late_columns.add(dims[width:])
                continue
            values = convert_cell(list(_values(row.get("metricValues", []))))
            cells.setdefault(dims[:width], [0] * (len(place) * metrics))[slot * metrics : (slot + 1) * metrics] = values
        wide.rows.extend([*convert_key(list(key)), *values] for key, values in cells.items())
        offset += len(keys)
        if room is not None:
            room -= min(room, len(keys))
        if not keys or offset >= wide.row_combinations or room == 0:
            return wide
        if cancelled.is_set():
            raise CallCancelled


def _column_totals(aggregates: list[dict[str, Any]], width: int, metrics: list[str], wide: Wide) -> dict[str, Any]:
    """The TOTAL rows of the row pivot (its dimensions ``RESERVED_TOTAL``): one total per wide column."""
    convert = report.row_converter([], wide.metric_types)
    totals: dict[str, Any] = {}
    for row in aggregates:
        dims = _values(row.get("dimensionValues", []))
        column = dims[width:]
        if all(value == "RESERVED_TOTAL" for value in dims[:width]) and column in wide.column_values:
            figures = convert(list(_values(row.get("metricValues", []))))
            totals.update({column_name(column, m): v for m, v in zip(metrics, figures, strict=True)})
    return totals


# -- the tool ------------------------------------------------------------------------------------------
async def run_pivot_report(arguments: dict[str, Any], ctx: CallContext) -> Extraction:
    property_id = ctx.require_resource().id
    config = settings(ctx)
    ranges = report.date_ranges(arguments, ctx.today)
    cap = ctx.config.get("max_rows")

    def pull() -> tuple[TableData, PivotRequest, Wide]:
        request = pivot_request(config, property_id, arguments, ranges)
        wide = read_pivot(config, request, int(cap) if cap is not None else None, ctx.cancelled)
        zone = wide.metadata.get("timeZone")
        writer = ctx.table(
            columns=_columns(request, wide, str(zone) if zone else None), title=_title(property_id, request, ranges)
        )
        writer.expected_rows = wide.row_combinations
        writer.pages = wide.pages
        writer.extend(wide.rows)
        return writer.finish(), request, wide

    table, request, wide = await ctx.run_blocking(pull)
    warnings = [*request.checked.warnings, *_pivot_warnings(request, wide)]
    warnings += [*report.response_warnings(wide.metadata), *report.quota_warnings(wide.quota)]
    extra: dict[str, Any] = {
        "row_combinations": wide.row_combinations,
        "column_combinations": wide.column_combinations,
        "columns_shown": len(wide.column_values),
    }
    quota = report.quota_extra(wide.quota)
    if quota:
        extra["quota"] = quota
    source: dict[str, Any] = {"property": f"properties/{property_id}", "api": API, "pages": wide.pages}
    if wide.quota is not None:
        source["property_quota"] = wide.quota
    return Extraction(
        tables=[table],
        description=_description(property_id, request, ranges, arguments),
        dates=[ranges.start.isoformat(), ranges.end.isoformat()],
        title=_title(property_id, request, ranges),
        # Each page's aggregates cover that page's rows: totals only when one page holds them all.
        totals=(wide.column_totals or None) if wide.pages == 1 else None,
        extra=extra,
        warnings=warnings,
        source=source,
        applied_arguments={
            "rows": request.rows,
            "columns": request.columns,
            "metrics": request.metrics,
            "columns_limit": request.columns_limit,
            "rows_order": request.rows_order,
            "columns_order": request.columns_order,
            "start_date": ranges.start.isoformat(),
            "end_date": ranges.end.isoformat(),
        },
    )


def _columns(request: PivotRequest, wide: Wide, zone: str | None) -> list[Header]:
    out = report.headers(request.rows, [], [], zone)
    for values in wide.column_values:
        where = " and ".join(f"{d} = {v}" for d, v in zip(request.columns, values, strict=True))
        for header in report.headers([], request.metrics, wide.metric_types, zone):
            metric = header["name"]
            out.append({**header, "name": column_name(values, metric), "description": f"{metric} where {where}"})
    return out


def _pivot_warnings(request: PivotRequest, wide: Wide) -> list[str]:
    out = []
    hidden = wide.column_combinations - len(wide.column_values)
    if hidden > 0:
        out.append(
            f"{hidden} more {' / '.join(request.columns)} values exist beyond the {len(wide.column_values)} shown as "
            "columns (columns_limit); their figures are in no column. Raise columns_limit or filter to see them."
        )
    if wide.late_columns:
        out.append(
            f"{len(wide.late_columns)} column values appeared only on later pages and were left out; ask with a "
            "higher columns_limit."
        )
    if wide.pages > 1:
        out.append(
            f"The rows came in {wide.pages} pages, so GA4's column totals (per page) are not given; ask run_report "
            "for the totals."
        )
    return out


def _title(property_id: str, request: PivotRequest, ranges: report.Ranges) -> str:
    rows, columns = " × ".join(request.rows), " × ".join(request.columns)
    return f"GA4 {property_id} · pivot {rows} by {columns} · {ranges.start}→{ranges.end}"


def _description(property_id: str, request: PivotRequest, ranges: report.Ranges, arguments: dict[str, Any]) -> str:
    ranked = request.metrics[0] if request.columns_order == "metric" else "value"
    text = (
        f"GA4 property {property_id}, runPivotReport, {ranges.start} to {ranges.end}: one row per "
        f"{' × '.join(request.rows)}; one column per {' × '.join(request.columns)} value (the top "
        f"{request.columns_limit} by {ranked}) and metric, named '<value>{METRIC_SEPARATOR}<metric>'. "
        f"Metrics: {', '.join(request.metrics)}."
    )
    for key in ("dimension_filter", "metric_filter"):
        if arguments.get(key):
            text += f" Filter: {key} {json.dumps(arguments[key], separators=(',', ':'))}."
    return text


RUN_PIVOT_REPORT = Tool(
    name="run_pivot_report",
    title="Pivot report",
    description=(
        "A GA4 pivot as one wide table: one row per combination of the rows dimensions (all of them, paged) and "
        "one column per value of the columns dimensions (the top columns_limit) and metric, named "
        "'<value> · <metric>' (several column dimensions: '<value1> / <value2> · <metric>'), e.g. rows ['date'], "
        "columns ['deviceCategory'], metrics ['sessions'] gives date, 'desktop · sessions', 'mobile · sessions'... "
        "Empty cells are 0. Totals per column from GA4. Default window: the last 28 days ending yesterday."
    ),
    kind="extraction",
    run=run_pivot_report,
    input_schema={
        "properties": {
            "rows": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "uniqueItems": True,
                "description": "Dimensions of the rows, e.g. ['date'] or ['country', 'city'].",
            },
            "columns": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "maxItems": 2,
                "uniqueItems": True,
                "description": "Dimensions whose values become columns, e.g. ['sessionDefaultChannelGroup'].",
            },
            "metrics": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "uniqueItems": True,
                "description": "GA4 metric API names, e.g. ['sessions', 'keyEvents'].",
            },
            "columns_limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_COLUMNS_LIMIT,
                "default": DEFAULT_COLUMNS_LIMIT,
                "description": "How many column values (combinations) become columns.",
            },
            "columns_order": {
                "type": "string",
                "enum": list(ORDERS),
                "default": "metric",
                "description": "metric: the column values with the most of the first metric first (those are kept); "
                "value: alphabetical.",
            },
            "rows_order": {
                "type": "string",
                "enum": list(ORDERS),
                "default": "metric",
                "description": "metric: rows with the most of the first metric first; value: alphabetical "
                "(chronological for date).",
            },
            "dimension_filter": FILTER_SCHEMA,
            "metric_filter": FILTER_SCHEMA,
            "start_date": {"type": "string", "x-acp-date": "start", "description": report.DATE_DESCRIPTION},
            "end_date": {"type": "string", "x-acp-date": "end", "description": report.DATE_DESCRIPTION},
        },
        "required": ["rows", "columns", "metrics"],
    },
    idempotent=True,
)
