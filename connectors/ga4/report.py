"""``run_report`` (spec 4.2, 15.1): a GA4 report, every row of it, typed, with GA4's totals.

The report is read in pages (``limit``/``offset``, ``page_size`` rows each, the API's maximum by
default) until the API's ``rowCount`` or the extraction cap, the next page asked for while this one is
stored, so ``system_data`` holds the whole table while the model sees ``row_limit`` rows. Values arrive
as strings and leave typed by the response's headers (:func:`headers`, :func:`row_converter`). The
response's metadata becomes warnings (:func:`response_warnings`), the property's quota goes to
``system_info.source.property_quota`` and ``extra.quota`` with a warning when it runs low
(:func:`quota_warnings`). Names are checked first (:mod:`.names`); a combination GA4 refuses as
incompatible is explained from ``checkCompatibility``.

The helpers here are shared with the other report tools (realtime, pivot, clusters, attribution).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
from collections.abc import Callable, Generator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from shared import CallCancelled, CallContext, Extraction, Header, InvalidArguments, TableData, TableWriter, Tool
from shared.dates import DATE_FORMS, resolve_date

from . import api, names
from .filters import FILTER_SCHEMA, FilterKind, filter_fields, to_filter_expression
from .resources import settings

DEFAULT_WINDOW_DAYS = 28
QUOTA_LOW_SHARE = 0.10  # a warning when less than this share of a token quota remains
QUOTA_REFILLS = {
    "tokensPerDay": "tokens per day (they refill at midnight Pacific Time)",
    "tokensPerHour": "tokens per hour (they refill within the hour)",
}
API = "analyticsdata.v1beta.runReport"
MAX_METRICS = 10  # runReport's limits
MAX_DIMENSIONS = 9

_INTEGER_TYPE = "TYPE_INTEGER"
_UNIT_NOTES = {
    "TYPE_CURRENCY": "Amount in the report's currency",
    "TYPE_SECONDS": "Seconds",
    "TYPE_MILLISECONDS": "Milliseconds",
    "TYPE_MINUTES": "Minutes",
    "TYPE_HOURS": "Hours",
    "TYPE_FEET": "Feet",
    "TYPE_MILES": "Miles",
    "TYPE_METERS": "Meters",
    "TYPE_KILOMETERS": "Kilometers",
}


# -- the property's calendar -------------------------------------------------------------------------
def default_window(today: dt.date) -> tuple[dt.date, dt.date]:
    """The last 28 days ending yesterday (``today`` is the property's)."""
    end = today - dt.timedelta(days=1)
    return end - dt.timedelta(days=DEFAULT_WINDOW_DAYS - 1), end


def day(text: str, today: dt.date, argument: str) -> dt.date:
    """A date argument the core does not resolve itself (the comparison range): the forms of
    ``x-acp-date`` (spec 8.9) in the property's calendar."""
    try:
        return resolve_date(text, today)
    except ValueError:
        raise InvalidArguments(f"Argument '{argument}' must be a date: {DATE_FORMS}. Fix it and call again.") from None


# -- typed columns -------------------------------------------------------------------------------------
def headers(
    dimension_names: Sequence[str], metric_names: Sequence[str], metric_types: Sequence[str], time_zone: str | None
) -> list[Header]:
    """The table's headers: dimensions (``date`` a date; ``dateHour``/``dateHourMinute`` naive
    datetimes in the property's time zone; the rest strings), then metrics (``TYPE_INTEGER`` an
    integer, every other type a number); each with its ``role``."""
    zone = f" ({time_zone})" if time_zone else ""
    out: list[Header] = []
    for name in dimension_names:
        if name == "date":
            out.append(
                {
                    "name": name,
                    "type": "date",
                    "role": "dimension",
                    "description": f"Day in the property's time zone{zone}",
                }
            )
        elif name in ("dateHour", "dateHourMinute"):
            unit = "hour" if name == "dateHour" else "minute"
            out.append(
                {
                    "name": name,
                    "type": "datetime",
                    "role": "dimension",
                    "description": f"Start of the {unit}, local time in the property's time zone{zone}, without offset",
                }
            )
        else:
            out.append({"name": name, "type": "string", "role": "dimension"})
    for name, metric_type in zip(metric_names, metric_types, strict=True):
        header: Header = {
            "name": name,
            "type": "integer" if metric_type == _INTEGER_TYPE else "number",
            "role": "metric",
        }
        if metric_type in _UNIT_NOTES:
            header["description"] = _UNIT_NOTES[metric_type]
        out.append(header)
    return out


def _date(text: str) -> dt.date:
    return dt.date(int(text[:4]), int(text[4:6]), int(text[6:8]))


def _date_hour(text: str) -> dt.datetime:
    return dt.datetime(int(text[:4]), int(text[4:6]), int(text[6:8]), int(text[8:10]))


def _date_hour_minute(text: str) -> dt.datetime:
    return dt.datetime(int(text[:4]), int(text[4:6]), int(text[6:8]), int(text[8:10]), int(text[10:12]))


_DIMENSION_PARSERS: Mapping[str, Callable[[str], Any]] = {
    "date": _date,
    "dateHour": _date_hour,
    "dateHourMinute": _date_hour_minute,
}


def _metric_parser(metric_type: str) -> Callable[[str], Any]:
    return int if metric_type == _INTEGER_TYPE else float


def row_converter(dimension_names: Sequence[str], metric_types: Sequence[str]) -> Callable[[list[str]], list[Any]]:
    """A function typing one API row (dimension values, then metric values, all strings) in place, as
    :func:`headers` declares; a value that does not parse (GA4's ``(other)`` row in a date column)
    becomes null."""
    parsers: list[tuple[int, Callable[[str], Any]]] = [
        (i, _DIMENSION_PARSERS[name]) for i, name in enumerate(dimension_names) if name in _DIMENSION_PARSERS
    ]
    first_metric = len(dimension_names)
    parsers += [(first_metric + i, _metric_parser(t)) for i, t in enumerate(metric_types)]

    def careful(row: list[Any]) -> list[Any]:
        for index, parse in parsers:
            value = row[index]
            if isinstance(value, str):
                try:
                    row[index] = parse(value)
                except ValueError:
                    row[index] = None
        return row

    def convert(row: list[Any]) -> list[Any]:
        try:
            for index, parse in parsers:
                row[index] = parse(row[index])
        except ValueError:
            return careful(row)
        return row

    return convert


def typed_totals(report: api.Report) -> list[list[Any]]:
    """The report's TOTAL rows (one per date range), their metrics typed."""
    parsers = [_metric_parser(t) for t in report.metric_types]
    out: list[list[Any]] = []
    for values in report.totals:
        row: list[Any] = []
        for parse, value in zip(parsers, values, strict=False):
            try:
                row.append(parse(value))
            except ValueError:
                row.append(None)
        out.append(row)
    return out


# -- paging ---------------------------------------------------------------------------------------------
@dataclass
class ReadResult:
    """What :func:`read_all` read: the table, and the first page's headers, metadata and totals."""

    table: TableData
    first: api.Report  # the first page (its rows are in the table): names, types, metadata, totals
    pages: int
    row_count: int  # rows the report has (the API's rowCount), whatever was read
    rows_read: int  # rows the API sent and the writer was offered
    property_quota: dict[str, Any] | None  # the last page's: the freshest token count
    capped: bool  # the writer's cap stopped the table before the rows read

    @property
    def metadata(self) -> dict[str, Any]:
        return self.first.metadata

    @property
    def totals(self) -> list[list[str]]:
        return self.first.totals

    @property
    def time_zone(self) -> str | None:
        zone = self.first.metadata.get("timeZone")
        return str(zone) if zone else None


def pages(
    config: api.Settings,
    request: Mapping[str, Any],
    *,
    stop_at: int | None = None,
    cancelled: threading.Event | None = None,
) -> Generator[api.Report, None, None]:
    """Every page of a runReport request, ``config.page_size`` rows each, until the API's ``rowCount``
    or ``stop_at`` rows. The next page is asked for while the caller handles this one; once
    ``cancelled`` is set no other page is asked for and ``CallCancelled`` is raised. Close the
    iterator (``contextlib.closing``) when leaving it early."""

    def fetch(offset: int) -> api.Report:
        size = config.page_size if stop_at is None else max(min(config.page_size, stop_at - offset), 1)
        page = {**request, "offset": offset, "limit": size}
        if offset:  # totals come with the first page; later pages spend no tokens on them
            page.pop("metric_aggregations", None)
        return api.run_report(config, page)

    ahead = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ga4-page")
    try:
        page, offset = fetch(0), 0
        while True:
            offset += len(page.rows)
            more = bool(page.rows) and offset < page.row_count and (stop_at is None or offset < stop_at)
            if more and cancelled is not None and cancelled.is_set():
                raise CallCancelled
            pending = ahead.submit(fetch, offset) if more else None
            yield page
            if pending is None:
                return
            page = pending.result()
    finally:
        ahead.shutdown(wait=False, cancel_futures=True)


def read_all(
    config: api.Settings,
    request: Mapping[str, Any],
    writer: TableWriter,
    *,
    cancelled: threading.Event | None = None,
) -> ReadResult:
    """Every row of a runReport request into ``writer`` (:func:`pages`).

    ``request["limit"]``, if set, is the most rows wanted (not a page size). Paging stops at the API's
    ``rowCount``, at that limit, or one row past the writer's cap (the writer keeps the cap and says
    the table is capped). The writer (made without columns) gets them from the first page.
    """
    wanted = request.get("limit")
    caps = [c for c in (wanted, None if writer.max_rows is None else writer.max_rows - writer.row_count + 1) if c]
    stop_at = min(caps) if caps else None
    first: api.Report | None = None
    convert: Callable[[list[str]], list[Any]] = list
    count = offset = 0
    quota: dict[str, Any] | None = None
    with contextlib.closing(pages(config, request, stop_at=stop_at, cancelled=cancelled)) as answers:
        for page in answers:
            if first is None:
                first = page
                writer.set_columns(headers(page.dimension_names, page.metric_names, page.metric_types, _zone(page)))
                convert = row_converter(page.dimension_names, page.metric_types)
                writer.expected_rows = page.row_count if stop_at is None else min(page.row_count, stop_at)
            count += 1
            writer.pages = count
            offset += len(page.rows)
            quota = page.property_quota or quota
            writer.extend([convert(row) for row in page.rows])
            page.rows = []  # the first page stays in the result without its rows
            if writer.capped:
                break
    assert first is not None  # pages() yields at least one page
    return ReadResult(writer.finish(), first, count, first.row_count, offset, quota, writer.capped)


def _zone(report: api.Report) -> str | None:
    zone = report.metadata.get("timeZone")
    return str(zone) if zone else None


# -- warnings --------------------------------------------------------------------------------------------
def response_warnings(metadata: Mapping[str, Any]) -> list[str]:
    """What GA4's response metadata says about the figures: sampling, thresholding, the ``(other)``
    row, restricted metrics, and why a report is empty."""
    out: list[str] = []
    samplings = metadata.get("samplingMetadatas") or []
    for index, sampling in enumerate(samplings):
        read, space = int(sampling.get("samplesReadCount", 0)), int(sampling.get("samplingSpaceSize", 0))
        share = f"{100 * read / space:.1f}% of the events ({read:,} of {space:,})" if space else f"{read:,} events"
        which = f" for date range {index + 1}" if len(samplings) > 1 else ""
        out.append(
            f"GA4 sampled this report{which}: the figures are estimated from {share}. Ask for a shorter window or "
            "fewer dimensions for unsampled figures."
        )
    if metadata.get("subjectToThresholding"):
        out.append(
            "GA4 applied thresholding: rows with few users may be withheld (Google signals or demographics), so rows "
            "and totals can fall short of the property's figures. Widen the window or drop demographic dimensions."
        )
    if metadata.get("dataLossFromOtherRow"):
        out.append(
            "Some values were grouped into an '(other)' row: the report went past GA4's cardinality limits. Narrow "
            "it (filters, fewer dimensions, a shorter window) to see them."
        )
    restrictions = (metadata.get("schemaRestrictionResponse") or {}).get("activeMetricRestrictions") or []
    for restriction in restrictions:
        kinds = ", ".join(restriction.get("restrictedMetricTypes", [])) or "restricted data"
        out.append(
            f"Metric '{restriction.get('metricName', '?')}' is restricted for these credentials ({kinds}): GA4 "
            "returns it empty or zero. Ask the property's administrator for access to that data."
        )
    reason = metadata.get("emptyReason")
    if reason:
        out.append(f"GA4 returned no rows: {reason}.")
    return out


def quota_warnings(quota: Mapping[str, Any] | None) -> list[str]:
    """A warning for each token quota (per day, per hour) with less than 10% left."""
    out: list[str] = []
    for key, what in QUOTA_REFILLS.items():
        status = (quota or {}).get(key)
        if not status:
            continue
        consumed, remaining = int(status.get("consumed", 0)), int(status.get("remaining", 0))
        total = consumed + remaining
        if total and remaining < QUOTA_LOW_SHARE * total:
            out.append(
                f"The property's quota is running low: {remaining:,} of {total:,} {what} remain. Keep further "
                "reports small (shorter windows, fewer dimensions) or wait for the refill."
            )
    return out


# -- the tool --------------------------------------------------------------------------------------------
@dataclass
class Ranges:
    """The report's window and the optional comparison window."""

    start: dt.date
    end: dt.date
    compare: tuple[dt.date, dt.date] | None

    def spans(self) -> list[tuple[dt.date, dt.date]]:
        return [(self.start, self.end), *([self.compare] if self.compare else [])]

    def names(self) -> list[str]:
        """What the ``dateRange`` column says for each range: its dates."""
        return [f"{a}..{b}" for a, b in self.spans()]

    def request(self) -> list[dict[str, Any]]:
        ranges = [{"start_date": a.isoformat(), "end_date": b.isoformat()} for a, b in self.spans()]
        if self.compare is not None:  # named, so that the dateRange column and the totals say which is which
            for found, name in zip(ranges, self.names(), strict=True):
                found["name"] = name
        return ranges


def date_ranges(arguments: Mapping[str, Any], today: dt.date) -> Ranges:
    default_end = default_window(today)[1]
    # The core resolved start_date and end_date (x-acp-date) to ISO days in the property's calendar.
    start = dt.date.fromisoformat(arguments["start_date"]) if arguments.get("start_date") else None
    end = dt.date.fromisoformat(arguments["end_date"]) if arguments.get("end_date") else None
    if end is None:  # with start_date alone: up to yesterday, or today for a start of today
        end = default_end if start is None or start <= default_end else today
    if start is None:  # the 28 days ending on end_date
        start = end - dt.timedelta(days=DEFAULT_WINDOW_DAYS - 1)
    if start > end:
        raise InvalidArguments(f"start_date {start} is after end_date {end}. Swap them, or pass both.")
    compare = None
    compare_start, compare_end = arguments.get("compare_start_date"), arguments.get("compare_end_date")
    if compare_start or compare_end:
        if not (compare_start and compare_end):
            raise InvalidArguments(
                "A comparison needs both compare_start_date and compare_end_date (the second date range). Pass both, "
                "or neither."
            )
        compare = (day(compare_start, today, "compare_start_date"), day(compare_end, today, "compare_end_date"))
        if compare[0] > compare[1]:
            raise InvalidArguments(
                f"compare_start_date {compare[0]} is after compare_end_date {compare[1]}. Swap them and call again."
            )
    return Ranges(start, end, compare)


def build_order_bys(
    order_bys: Sequence[Mapping[str, Any]], catalog: names.Catalog, dimensions: Sequence[str], metrics: Sequence[str]
) -> tuple[list[dict[str, Any]], list[str]]:
    """``[{"field": "sessions", "desc": true}]`` as the API's OrderBy list: a metric or a dimension of
    the report, decided by the (checked) name; and the warnings of names fixed on the way."""
    out: list[dict[str, Any]] = []
    warnings: list[str] = []
    for index, order in enumerate(order_bys):
        asked = str(order.get("field", ""))
        field = catalog.metrics.find(asked) or catalog.dimensions.find(asked)
        desc = order.get("desc") is True
        if field in metrics:
            out.append({"metric": {"metric_name": field}, "desc": desc})
        elif field in dimensions:
            out.append({"dimension": {"dimension_name": field}, "desc": desc})
        else:
            raise InvalidArguments(
                f"order_bys[{index}] sorts by '{asked}', which is not in the report. Sort by one of its metrics "
                f"({', '.join(metrics)}) or dimensions ({', '.join(dimensions) or 'none'}), or add it to the report."
            )
        if field != asked:
            warnings.append(f"order_bys field '{asked}' mapped to '{field}'.")
    return out, warnings


@dataclass
class Checked:
    """The request, its names as GA4 knows them, and the warnings of the names fixed."""

    request: dict[str, Any]
    dimensions: list[str]
    metrics: list[str]
    warnings: list[str]


FILTER_ARGUMENTS: tuple[tuple[str, FilterKind], ...] = (("dimension_filter", "dimension"), ("metric_filter", "metric"))


def checked_filters(catalog: names.Catalog, arguments: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``dimension_filter`` and ``metric_filter`` as the API's ``FilterExpression``s, their fields checked
    against ``catalog`` (the property's names, or the realtime list); names fixed go back as warnings."""
    expressions: dict[str, Any] = {}
    warnings: list[str] = []
    for argument, kind in FILTER_ARGUMENTS:
        spec = arguments.get(argument)
        if not spec:
            continue
        fields = filter_fields(spec)
        asked = (fields, []) if kind == "dimension" else ([], fields)
        found_dimensions, found_metrics, fixed = catalog.check(*asked, unique=False)
        found = found_dimensions if kind == "dimension" else found_metrics
        warnings += [f"{argument}: {w}" for w in fixed]
        expression = to_filter_expression(spec, kind, rename=dict(zip(fields, found, strict=True)))
        if expression:
            expressions[argument] = expression
    return expressions, warnings


def build_request(
    config: api.Settings, property_id: str, arguments: Mapping[str, Any], ranges: Ranges, limit: int | None
) -> Checked:
    """The runReport request of ``run_report``'s arguments, names checked (blocking: metadata)."""
    catalog = names.catalog(config, property_id)
    dimensions, metrics, warnings = catalog.check(arguments.get("dimensions") or [], arguments["metrics"])
    request: dict[str, Any] = {
        "property": f"properties/{property_id}",
        "date_ranges": ranges.request(),
        "dimensions": [{"name": d} for d in dimensions],
        "metrics": [{"name": m} for m in metrics],
        "metric_aggregations": ["TOTAL"],
        "keep_empty_rows": arguments.get("keep_empty_rows") is True,
        "return_property_quota": True,
    }
    expressions, fixed = checked_filters(catalog, arguments)
    request.update(expressions)
    warnings += fixed
    if arguments.get("order_bys"):
        order_bys, fixed = build_order_bys(arguments["order_bys"], catalog, dimensions, metrics)
        request["order_bys"] = order_bys
        warnings += fixed
    if arguments.get("currency_code"):
        request["currency_code"] = str(arguments["currency_code"]).upper()
    if limit is not None:
        request["limit"] = limit
    return Checked(request, dimensions, metrics, warnings)


def read_checked(
    config: api.Settings, request: Mapping[str, Any], writer: TableWriter, cancelled: threading.Event | None = None
) -> ReadResult:
    """:func:`read_all`, and when GA4 refuses the request as invalid, the incompatible fields named."""
    try:
        return read_all(config, request, writer, cancelled=cancelled)
    except Exception as exc:
        if not api.is_invalid_argument(exc):
            raise
        try:
            explained = names.explain_incompatible(config, request)
        except Exception:  # the explanation is an extra: the API's own refusal stands
            explained = None
        if explained is None:
            raise
        raise explained from exc


def totals_by_range(result: ReadResult, metrics: Sequence[str], range_names: Sequence[str]) -> dict[str, Any] | None:
    """``{metric: value}``; per date range name when there are several."""
    rows = typed_totals(result.first)
    if not rows:
        return None
    if len(range_names) <= 1:
        return dict(zip(metrics, rows[0], strict=False))
    return {name: dict(zip(metrics, row, strict=False)) for name, row in zip(range_names, rows, strict=False)}


def source(property_id: str, api_name: str, result: ReadResult) -> dict[str, Any]:
    """``system_info.source`` of a report (spec 8.4): the property, the API, pages, the quota."""
    out: dict[str, Any] = {"property": f"properties/{property_id}", "api": api_name, "pages": result.pages}
    if result.time_zone:
        out["time_zone"] = result.time_zone
    if result.metadata.get("currencyCode"):
        out["currency_code"] = result.metadata["currencyCode"]
    if result.property_quota is not None:
        out["property_quota"] = result.property_quota
    return out


def quota_extra(quota: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The daily and hourly tokens, for ``extra.quota`` (spec 8.2's example)."""
    kept = {k: quota[k] for k in QUOTA_REFILLS if quota and k in quota}
    return kept or None


async def run_report(arguments: dict[str, Any], ctx: CallContext) -> Extraction:
    property_id = ctx.require_resource().id
    config = settings(ctx)
    ranges = date_ranges(arguments, ctx.today)
    limit = arguments.get("limit")
    title = f"GA4 {property_id} · {ranges.start}→{ranges.end}"
    range_names = ranges.names()

    def pull() -> tuple[Checked, ReadResult]:
        checked = build_request(config, property_id, arguments, ranges, limit)
        writer = ctx.table(title=title, dates=[ranges.start.isoformat(), ranges.end.isoformat()])
        result = read_checked(config, checked.request, writer, ctx.cancelled)
        if ranges.compare:
            describe_ranges(result.table, range_names)
        return checked, result

    checked, result = await ctx.run_blocking(pull)
    warnings = [*checked.warnings, *response_warnings(result.metadata), *quota_warnings(result.property_quota)]
    if limit is not None and result.row_count > result.rows_read and not result.capped:
        warnings.append(
            f"Stopped at limit={limit} rows; the report has {result.row_count:,}. The totals cover all of them. Raise "
            "limit (or leave it out) for every row."
        )
    applied: dict[str, Any] = {
        "metrics": checked.metrics,
        "dimensions": checked.dimensions,
        "start_date": ranges.start.isoformat(),
        "end_date": ranges.end.isoformat(),
    }
    dates = [ranges.start.isoformat(), ranges.end.isoformat()]
    if ranges.compare:
        applied["compare_start_date"], applied["compare_end_date"] = (d.isoformat() for d in ranges.compare)
        dates += [d.isoformat() for d in ranges.compare]
    quota = quota_extra(result.property_quota)
    return Extraction(
        tables=[result.table],
        description=describe(property_id, arguments, checked, ranges, result),
        dates=dates,
        title=title,
        totals=totals_by_range(result, checked.metrics, range_names),
        extra={"quota": quota} if quota else None,
        warnings=warnings,
        source=source(property_id, API, result),
        applied_arguments=applied,
    )


def describe_ranges(table: TableData, range_names: Sequence[str]) -> None:
    """The ``dateRange`` column's header says what its values mean."""
    for header in table.headers:
        if header["name"] == "dateRange":
            header["description"] = (
                f"The date range of the row: {range_names[0]} (the report's window) or {range_names[1]} "
                "(the comparison)"
            )


def describe(
    property_id: str, arguments: Mapping[str, Any], checked: Checked, ranges: Ranges, result: ReadResult
) -> str:
    """How the data was obtained (spec 8.2): property, metrics, dimensions, window, filters."""
    zone = f" ({result.time_zone} days)" if result.time_zone else ""
    text = (
        f"GA4 property {property_id}, runReport. Metrics: {', '.join(checked.metrics)}. "
        f"Dimensions: {', '.join(checked.dimensions) or 'none (property totals)'}. "
        f"Dates: {ranges.start} to {ranges.end}{zone}"
    )
    if ranges.compare:
        text += f", compared with {ranges.compare[0]} to {ranges.compare[1]} (column dateRange)"
    text += "."
    for argument in ("dimension_filter", "metric_filter"):
        if arguments.get(argument):
            text += f" Filter: {argument} {_compact(arguments[argument])}."
    if arguments.get("order_bys"):
        text += f" Order: {_compact(arguments['order_bys'])}."
    return text


def _compact(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


DATE_DESCRIPTION = "YYYY-MM-DD, NdaysAgo, yesterday or today, in the property's time zone."

INPUT_SCHEMA: dict[str, Any] = {
    "properties": {
        "metrics": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "maxItems": MAX_METRICS,
            "description": "GA4 API metric names, e.g. sessions, totalUsers, keyEvents:purchase, totalRevenue "
            "(common aliases such as users or purchases are mapped, with a warning).",
        },
        "dimensions": {
            "type": "array",
            "items": {"type": "string"},
            "maxItems": MAX_DIMENSIONS,
            "description": "GA4 API dimension names, e.g. date, sessionDefaultChannelGroup, pagePath, country, "
            "customEvent:form_name. None: one row of property totals.",
        },
        "start_date": {"type": "string", "x-acp-date": "start", "description": DATE_DESCRIPTION},
        "end_date": {"type": "string", "x-acp-date": "end", "description": DATE_DESCRIPTION},
        "compare_start_date": {
            "type": "string",
            "description": "Start of a second date range to compare with (same forms); adds a dateRange column.",
        },
        "compare_end_date": {"type": "string", "description": "End of the second date range."},
        "dimension_filter": {**FILTER_SCHEMA, "description": "Filter on dimensions. " + FILTER_SCHEMA["description"]},
        "metric_filter": {
            **FILTER_SCHEMA,
            "description": "Filter on metric values after aggregation (numeric matches only), e.g. "
            '[{"field": "sessions", "match": "greater_than", "value": 100}].',
        },
        "order_bys": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "field": {"type": "string", "description": "A metric or dimension of the report."},
                    "desc": {"type": "boolean", "default": False},
                },
                "required": ["field"],
                "additionalProperties": False,
            },
            "description": 'Sort order, e.g. [{"field": "sessions", "desc": true}].',
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "description": "Most rows to extract (the max_rows setting caps it too). Default: every row.",
        },
        "keep_empty_rows": {
            "type": "boolean",
            "default": False,
            "description": "true: also rows whose metrics are all zero.",
        },
        "currency_code": {
            "type": "string",
            "pattern": "^[A-Za-z]{3}$",
            "description": "ISO 4217 code for currency metrics (default: the property's currency).",
        },
    },
    "required": ["metrics"],
}

RUN_REPORT = Tool(
    name="run_report",
    title="Run a GA4 report",
    description=(
        "A Google Analytics 4 report (Data API runReport) for one property: metrics split by dimensions, filtered "
        "and sorted, for a date range (default: the last 28 days ending yesterday, in the property's time zone), "
        "optionally compared with a second range. Every row is extracted; you see a sample, the host keeps the full "
        "table, and totals come from GA4 over all rows."
    ),
    kind="extraction",
    run=run_report,
    input_schema=INPUT_SCHEMA,
    idempotent=True,
)
