"""``search_analytics`` (spec 15.2): Search Analytics rows of a property, every page of them.

Search Console keeps its days in Pacific Time and publishes them 2–3 days late. The window a call
does not give ends on the property's **last reliable day**: the day before ``firstIncompleteDate``
in a ``dataState: all`` answer grouped by date (the README states the rule). Every page is read
with ``startRow`` at 25,000 rows until an answer has no ``rows`` key, or the extraction cap; the
totals (clicks, impressions, CTR and position weighted by impressions) are computed over that
whole table, and warnings say when they cannot be the property's totals and when recent days are
empty because they are not final yet.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from shared import CallContext, Extraction, Header, InvalidArguments, TableWriter, Tool
from shared.google_api import TimedCache

from . import api
from .countries import CODES, NAMES
from .resources import settings

DIMENSIONS = ("query", "page", "country", "device", "date", "hour", "searchAppearance")
FILTER_DIMENSIONS = ("query", "page", "country", "device", "searchAppearance")
OPERATORS = ("equals", "contains", "notEquals", "notContains", "includingRegex", "excludingRegex")
SEARCH_TYPES = ("web", "image", "video", "news", "discover", "googleNews")
AGGREGATIONS = ("auto", "byPage", "byProperty")
DATA_STATES = ("final", "all", "hourly_all")
METRICS = ("clicks", "impressions", "ctr", "position")
MAX_ROWS = 1_000_000
DATA_KEPT_MONTHS = 16  # Search Console keeps 16 months of data
DEFAULT_WINDOW_MONTHS = 1
HOURLY_WINDOW_DAYS = 3  # hourly data covers only the last days
FRESH_PROBE_DAYS = 10  # how far back the freshness probe looks for the first incomplete day
RECENT_DAYS = 7  # a window ending this close to today gets its freshness checked
PUBLISHING_DELAY_DAYS = 3  # the last reliable day when nothing better is known
RELIABLE_DAY_TTL_S = 600.0
log = logging.getLogger("acp.gsc")
DAILY_ROWS_CAP = "about 50,000"

_HEADERS: dict[str, Header] = {
    "query": {"name": "query", "type": "string", "role": "dimension"},
    "page": {"name": "page", "type": "string", "role": "dimension"},
    "country": {
        "name": "country",
        "type": "string",
        "role": "dimension",
        "description": "ISO 3166-1 alpha-3 code in lower case, as Search Console gives it",
    },
    "country_name": {
        "name": "country_name",
        "type": "string",
        "role": "attribute",
        "description": "Readable name of the country code",
    },
    "device": {"name": "device", "type": "string", "role": "dimension"},
    "date": {"name": "date", "type": "date", "role": "dimension", "description": "Day in Pacific Time"},
    "hour": {
        "name": "hour",
        "type": "datetime",
        "role": "dimension",
        "description": "Start of the hour (Search Console's hours are Pacific Time), in UTC",
    },
    "searchAppearance": {"name": "searchAppearance", "type": "string", "role": "dimension"},
    "clicks": {"name": "clicks", "type": "integer", "role": "metric"},
    "impressions": {"name": "impressions", "type": "integer", "role": "metric"},
    "ctr": {"name": "ctr", "type": "number", "role": "metric", "description": "Fraction 0-1"},
    "position": {
        "name": "position",
        "type": "number",
        "role": "metric",
        "description": "Average position weighted by impressions",
    },
}


# -- Search Console's calendar ---------------------------------------------------------------------
def pacific_today(now: dt.datetime | None = None) -> dt.date:
    """Today in Pacific Time, Search Console's calendar (US daylight time rules since 2007).

    Computed rather than read from a time-zone database, which a Windows Python lacks without tzdata.
    """
    utc = now or dt.datetime.now(dt.UTC)

    def sunday(month: int, nth: int) -> dt.date:
        first = dt.date(utc.year, month, 1)
        return first + dt.timedelta(days=(6 - first.weekday()) % 7 + 7 * (nth - 1))

    # Daylight time runs from 2:00 PST on March's second Sunday to 2:00 PDT on November's first.
    summer = dt.datetime.combine(sunday(3, 2), dt.time(10), dt.UTC) <= utc
    winter = dt.datetime.combine(sunday(11, 1), dt.time(9), dt.UTC) <= utc
    return (utc - dt.timedelta(hours=7 if summer and not winter else 8)).date()


def months_before(day: dt.date, months: int) -> dt.date:
    """The same day ``months`` calendar months earlier (the month's last day when it is shorter)."""
    year, month = divmod(day.year * 12 + day.month - 1 - months, 12)
    month += 1
    following = dt.date(year + month // 12, month % 12 + 1, 1)
    return dt.date(year, month, min(day.day, (following - dt.timedelta(days=1)).day))


def first_available_day(today: dt.date) -> dt.date:
    return months_before(today, DATA_KEPT_MONTHS)


_reliable_days: TimedCache[dt.date] = TimedCache(RELIABLE_DAY_TTL_S)


def last_reliable_day(config: api.Settings, site: str, search_type: str, today: dt.date) -> dt.date:
    """The property's last day of final data: the day before ``metadata.firstIncompleteDate`` of a
    ``dataState: all`` answer grouped by date; with every probed day final, the latest with rows; with
    no rows at all, ``today`` minus the usual publishing delay."""

    def probe() -> dt.date:
        body = {
            "startDate": (today - dt.timedelta(days=FRESH_PROBE_DAYS)).isoformat(),
            "endDate": today.isoformat(),
            "dimensions": ["date"],
            "type": search_type,
            "dataState": "all",
            "rowLimit": FRESH_PROBE_DAYS + 1,
        }
        answer = api.query(config, site, body)
        first = (answer.get("metadata") or {}).get("firstIncompleteDate")
        if first:
            return dt.date.fromisoformat(first) - dt.timedelta(days=1)
        days = [row["keys"][0] for row in answer.get("rows", [])]
        return dt.date.fromisoformat(max(days)) if days else today - dt.timedelta(days=PUBLISHING_DELAY_DAYS)

    return _reliable_days.get(api.cache_key(config, "reliable", site, search_type, today.isoformat()), probe)


# -- the request -------------------------------------------------------------------------------------
@dataclass
class Filter:
    dimension: str
    operator: str
    expression: str

    def shown(self) -> str:
        return f'{self.dimension} {self.operator} "{self.expression}"'


@dataclass
class SearchRequest:
    """A ``search_analytics`` call's arguments, checked, with their defaults."""

    dimensions: list[str]
    filters: list[Filter]
    search_type: str
    aggregation_type: str
    data_state: str
    start_date: dt.date | None
    end_date: dt.date | None
    notes: list[str] = field(default_factory=list)

    @classmethod
    def from_arguments(cls, arguments: dict[str, Any]) -> SearchRequest:
        dimensions = list(arguments.get("dimensions") or [])
        data_state = str(arguments.get("data_state") or "final")
        if "hour" in dimensions and data_state != "hourly_all":
            raise InvalidArguments(
                "The hour dimension needs data_state hourly_all (hourly data covers only the last few days). Add "
                'data_state: "hourly_all", or use the date dimension.'
            )
        request = cls(
            dimensions=dimensions,
            filters=[],
            search_type=str(arguments.get("search_type") or "web"),
            aggregation_type=str(arguments.get("aggregation_type") or "auto"),
            data_state=data_state,
            start_date=_day(arguments.get("start_date")),
            end_date=_day(arguments.get("end_date")),
        )
        request.filters = [request._filter(f) for f in arguments.get("filters") or []]
        return request

    def _filter(self, raw: dict[str, Any]) -> Filter:
        found = Filter(str(raw["dimension"]), str(raw["operator"]), str(raw["expression"]))
        exact = found.operator in ("equals", "notEquals")
        if found.dimension == "country" and exact:
            code = found.expression.strip().lower()
            if code not in NAMES and code in CODES:
                self.notes.append(f"Country filter '{found.expression}' read as the code '{CODES[code]}'.")
                code = CODES[code]
            elif code not in NAMES:
                self.notes.append(
                    f"Country filter '{found.expression}' is not an ISO 3166-1 alpha-3 code; Search Console's codes "
                    "look like esp, usa, gbr."
                )
            found.expression = code
        elif found.dimension == "device" and exact:
            found.expression = found.expression.strip().upper()  # DESKTOP, MOBILE, TABLET
        return found

    def body(self, start: dt.date, end: dt.date) -> dict[str, Any]:
        body: dict[str, Any] = {
            "startDate": start.isoformat(),
            "endDate": end.isoformat(),
            "dimensions": self.dimensions,
            "type": self.search_type,
            "dataState": self.data_state,
            "aggregationType": self.aggregation_type,
        }
        if self.filters:
            body["dimensionFilterGroups"] = [
                {
                    "groupType": "and",
                    "filters": [
                        {"dimension": f.dimension, "operator": f.operator, "expression": f.expression}
                        for f in self.filters
                    ],
                }
            ]
        return body

    def window(self, last_reliable: Callable[[], dt.date], today: dt.date) -> tuple[dt.date, dt.date]:
        """The window asked for, with the defaults of the README: final data ends on the last reliable
        day, fresh data (``all``, ``hourly_all``) today; it starts a month earlier (hourly: 3 days)."""
        end = self.end_date
        if end is None:
            end = last_reliable() if self.data_state == "final" else today
            if self.start_date is not None and self.start_date > end:
                why = "the property's last day of final data" if self.data_state == "final" else "today"
                raise InvalidArguments(
                    f"start_date {self.start_date} is after {end}, the default end_date ({why}). Pass end_date too, "
                    "or an earlier start_date."
                )
        start = self.start_date
        if start is None:
            hourly = self.data_state == "hourly_all"
            start = end - dt.timedelta(days=HOURLY_WINDOW_DAYS - 1) if hourly else months_before(end, 1)
        return start, end

    def touches(self, *dimensions: str) -> bool:
        """Whether a dimension or a filter uses any of ``dimensions``."""
        return any(d in self.dimensions for d in dimensions) or any(f.dimension in dimensions for f in self.filters)


def _day(value: Any) -> dt.date | None:
    return dt.date.fromisoformat(value) if isinstance(value, str) else None  # the core resolved it to ISO


# -- rows --------------------------------------------------------------------------------------------
def columns(dimensions: Sequence[str]) -> list[Header]:
    """The dimensions in the order asked (``country_name`` after ``country``), then the four metrics."""
    out: list[Header] = []
    for name in dimensions:
        out.append(_HEADERS[name])
        if name == "country":
            out.append(_HEADERS["country_name"])
    return out + [_HEADERS[m] for m in METRICS]


@dataclass
class Totals:
    """Sums over every row stored: clicks, impressions, and position × impressions (over the rows that
    have a position: Discover and Google News rows have none)."""

    clicks: int = 0
    impressions: int = 0
    weighted_position: float = 0.0
    positioned_impressions: int = 0

    def as_json(self) -> dict[str, Any]:
        ctr = round(self.clicks / self.impressions, 4) if self.impressions else None
        positioned = self.positioned_impressions
        position = round(self.weighted_position / positioned, 2) if positioned else None
        return {"clicks": self.clicks, "impressions": self.impressions, "ctr": ctr, "position": position}


def row_converter(dimensions: Sequence[str]) -> Callable[[list[dict[str, Any]], Totals], list[list[Any]]]:
    """A function turning one API page into table rows (in :func:`columns` order), adding to the totals.

    Dates become ``datetime.date`` objects: the table writer passes those through without parsing text.
    """
    country = dimensions.index("country") if "country" in dimensions else None
    day = dimensions.index("date") if "date" in dimensions else None
    parse_day = dt.date.fromisoformat

    def convert(rows: list[dict[str, Any]], totals: Totals) -> list[list[Any]]:
        out: list[list[Any]] = []
        append = out.append
        clicks_sum = impressions_sum = positioned = 0
        weighted = 0.0
        for row in rows:
            clicks, impressions, position = int(row["clicks"]), int(row["impressions"]), row.get("position")
            clicks_sum += clicks
            impressions_sum += impressions
            if position is not None:
                weighted += position * impressions
                positioned += impressions
            keys = row.get("keys") or []
            if day is not None:
                keys[day] = parse_day(keys[day])  # the page's own list, read once: it becomes the row
            if country is not None:
                keys.insert(country + 1, NAMES.get(keys[country]))
            keys.extend((clicks, impressions, row.get("ctr"), position))  # the row itself: no new sequence
            append(keys)
        totals.clicks += clicks_sum
        totals.impressions += impressions_sum
        totals.weighted_position += weighted
        totals.positioned_impressions += positioned
        return out

    return convert


# -- paging ------------------------------------------------------------------------------------------
def read_pages(
    config: api.Settings,
    site: str,
    body: dict[str, Any],
    writer: TableWriter,
    convert: Callable[[list[dict[str, Any]], Totals], list[list[Any]]],
    totals: Totals,
) -> tuple[int, str | None]:
    """Every page of a query into ``writer``: 25,000 rows from ``startRow`` 0, 25,000… until an answer has
    no ``rows`` key, or the writer's cap. Returns the requests made and the aggregation Search Console used.

    The next page is asked for while this one is stored (one request ahead, in a thread with its own
    connection), so Search Console's time and the conversion overlap; a page is never asked for past the cap.
    """

    def fetch(start_row: int, limit: int) -> dict[str, Any]:
        return api.query(config, site, {**body, "rowLimit": limit, "startRow": start_row})

    def limit_for(room: int | None) -> int:
        return api.PAGE_ROWS if room is None else max(min(api.PAGE_ROWS, room + 1), 1)  # one past the cap tells

    room = None if writer.max_rows is None else writer.max_rows - writer.row_count
    pages, start_row, aggregation = 0, 0, None
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="gsc-page") as ahead:
        pending: Future[dict[str, Any]] | None = ahead.submit(fetch, 0, limit_for(room))
        while pending is not None:
            answer = pending.result()
            pages += 1
            aggregation = answer.get("responseAggregationType", aggregation)
            rows = answer.get("rows")
            if not rows:  # Search Console's end of data: the key is absent
                break
            start_row += len(rows)
            capped = room is not None and len(rows) > room
            if room is not None:
                room -= min(len(rows), room)
            pending = None if capped else ahead.submit(fetch, start_row, limit_for(room))
            writer.pages = pages
            kept = rows if not capped else rows[: len(rows) - 1]
            batch = convert(kept, totals)
            if capped:  # the row past the cap: the writer drops it and says the table is capped
                batch += convert(rows[len(kept) :], Totals())
            writer.extend(batch)
    return pages, aggregation


# -- the tool ----------------------------------------------------------------------------------------
@dataclass
class Pulled:
    table: Any
    start: dt.date
    end: dt.date
    totals: Totals
    pages: int
    aggregation: str | None
    last_reliable: dt.date | None
    capped: bool


async def search_analytics(arguments: dict[str, Any], ctx: CallContext) -> Extraction:
    site = ctx.require_resource().id
    config = settings(ctx)
    request = SearchRequest.from_arguments(arguments)
    today = ctx.today
    title = f"Search Console · {site}"

    def pull() -> Pulled:
        reliable: list[dt.date] = []

        def reliable_day() -> dt.date:
            if not reliable:
                reliable.append(last_reliable_day(config, site, request.search_type, today))
            return reliable[0]

        start, end = request.window(reliable_day, today)
        writer = ctx.table(columns=columns(request.dimensions), title=f"{title} · {start}→{end}")
        convert = row_converter(request.dimensions)
        totals = Totals()
        pages, aggregation = read_pages(config, site, request.body(start, end), writer, convert, totals)
        table = writer.finish()
        if not reliable and (end >= today - dt.timedelta(days=RECENT_DAYS) or table.row_count == 0):
            try:
                reliable_day()
            except Exception:  # the freshness note is an extra: the rows are already here
                log.debug("the freshness probe failed; the answer goes without its note", exc_info=True)
        return Pulled(table, start, end, totals, pages, aggregation, reliable[0] if reliable else None, writer.capped)

    pulled = await ctx.run_blocking(pull)
    warnings = [*request.notes, *_warnings(request, pulled, today)]
    applied: dict[str, Any] = {
        "dimensions": request.dimensions,
        "start_date": pulled.start.isoformat(),
        "end_date": pulled.end.isoformat(),
        "search_type": request.search_type,
        "data_state": request.data_state,
        "aggregation_type": request.aggregation_type,
    }
    if request.filters:
        applied["filters"] = [
            {"dimension": f.dimension, "operator": f.operator, "expression": f.expression} for f in request.filters
        ]
    extra: dict[str, Any] = {"api_requests": pulled.pages}
    if pulled.aggregation:
        extra["response_aggregation_type"] = pulled.aggregation
    if pulled.last_reliable:
        extra["last_reliable_date"] = pulled.last_reliable.isoformat()
    return Extraction(
        tables=[pulled.table],
        description=_description(site, request, pulled),
        dates=[pulled.start.isoformat(), pulled.end.isoformat()],
        title=f"{title} · {pulled.start}→{pulled.end}",
        totals=pulled.totals.as_json(),
        extra=extra,
        warnings=warnings,
        source={
            "api": "searchconsole.searchanalytics.query",
            "site_url": site,
            "pages": pulled.pages,
            "response_aggregation_type": pulled.aggregation,
        },
        applied_arguments=applied,
    )


def _description(site: str, request: SearchRequest, pulled: Pulled) -> str:
    text = (
        f"Search Console property {site}, {request.search_type} search, {pulled.start} to {pulled.end} "
        f"({request.data_state} data, Pacific Time days). Metrics: {', '.join(METRICS)}. "
        f"Dimensions: {', '.join(request.dimensions) or 'none (property totals)'}."
    )
    if request.filters:
        text += f" Filter: {' and '.join(f.shown() for f in request.filters)}."
    answered = f" ({pulled.aggregation})" if pulled.aggregation else ""
    return text + f" Aggregation: {request.aggregation_type}{answered}."


def _warnings(request: SearchRequest, pulled: Pulled, today: dt.date) -> list[str]:
    out: list[str] = []
    first = first_available_day(today)
    if pulled.start < first:
        out.append(f"Search Console keeps 16 months of data: days before {first} have none.")
    if request.touches("query", "page"):
        why = []
        if request.touches("query"):
            why.append("Google leaves out anonymized (rare) queries when rows are split or filtered by query")
        if request.touches("page"):
            why.append("by page, each page shown in one search counts its own impression (byPage aggregation)")
        out.append(
            "Totals are computed over the rows returned, so they can differ from the property's totals in Search "
            f"Console: {'; '.join(why)}; and the API returns at most {DAILY_ROWS_CAP} rows a day per search type. "
            "For the property's totals ask without the query and page dimensions (aggregation_type byProperty)."
        )
    if pulled.capped:
        out.append(
            f"Totals cover the {pulled.table.row_count} rows extracted (the max_rows cap), not the whole result."
        )
    reliable = pulled.last_reliable
    if reliable is None:
        return out
    if pulled.end > reliable:
        late = max(pulled.start, reliable + dt.timedelta(days=1))
        if request.data_state == "final":
            out.append(
                f"The property's final data ends on {reliable} (Search Console publishes 2-3 days late): "
                f"{late} to {pulled.end} have no final data yet, so their rows are missing, not zero. Ask with "
                f'data_state "all" for fresh, incomplete numbers, or end the window on {reliable}.'
            )
        else:
            out.append(
                f"Days from {late} on are not final yet (the last reliable day is {reliable}): their numbers are "
                "incomplete and will still grow."
            )
    elif pulled.table.row_count == 0:
        out.append(
            f"No rows, and the window ends on or before {reliable}, the property's last day of final data: no search "
            "traffic matched (not a reporting delay)."
        )
    return out


DATE_DESCRIPTION = "YYYY-MM-DD, NdaysAgo, yesterday or today, in Pacific Time (Search Console's days)."

SEARCH_ANALYTICS = Tool(
    name="search_analytics",
    title="Search Analytics",
    description=(
        "Clicks, impressions, CTR (a fraction 0-1) and average position from Google Search, split by the dimensions "
        "asked and filtered, for one property. Every row is extracted (paged 25,000 at a time); you see a sample, "
        "the host keeps the full table, and totals cover all rows. Without dates: the month ending on the "
        "property's last day of final data (data arrives 2-3 days late)."
    ),
    kind="extraction",
    run=search_analytics,
    input_schema={
        "properties": {
            "dimensions": {
                "type": "array",
                "items": {"type": "string", "enum": list(DIMENSIONS)},
                "uniqueItems": True,
                "description": "Split rows by these, in this order. country is an ISO 3166-1 alpha-3 code (esp) "
                "and adds country_name; hour needs data_state hourly_all. None: one row of property totals.",
            },
            "filters": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "dimension": {"type": "string", "enum": list(FILTER_DIMENSIONS)},
                        "operator": {"type": "string", "enum": list(OPERATORS)},
                        "expression": {"type": "string"},
                    },
                    "required": ["dimension", "operator", "expression"],
                    "additionalProperties": False,
                },
                "description": 'All must hold, e.g. [{"dimension": "page", "operator": "contains", "expression": '
                '"/blog/"}]. Regexes are RE2. country takes esp, usa…; device DESKTOP, MOBILE or TABLET.',
            },
            "search_type": {
                "type": "string",
                "enum": list(SEARCH_TYPES),
                "default": "web",
                "description": "Which Google results: web (default), image, video, news, discover or googleNews.",
            },
            "aggregation_type": {
                "type": "string",
                "enum": list(AGGREGATIONS),
                "default": "auto",
                "description": "byProperty counts a result once per search; byPage once per page shown (used "
                "whenever page is a dimension or filter). auto lets Search Console choose.",
            },
            "data_state": {
                "type": "string",
                "enum": list(DATA_STATES),
                "default": "final",
                "description": "final (default): only finished days. all: also the last days, still incomplete. "
                "hourly_all: like all, and allows the hour dimension.",
            },
            "start_date": {"type": "string", "x-acp-date": "start", "description": DATE_DESCRIPTION},
            "end_date": {"type": "string", "x-acp-date": "end", "description": DATE_DESCRIPTION},
        },
        "required": [],
    },
    idempotent=True,
    today=pacific_today,
)
