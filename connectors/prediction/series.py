"""From a host table to regular time series, in pure Python: columns checked, times parsed,
duplicates aggregated, the frequency and its seasonal period inferred, gaps filled.

Times are ISO text only: ``YYYY-MM-DD`` dates and ISO 8601 datetimes (what spec 8.6 makes of
``date`` and ``datetime`` columns). Numbers such as ``202401`` or ``20240115`` are never read as
dates: their meaning is a guess, and the error says how to convert them.

Gap rule (stated in the README): with ``aggregate: "sum"`` a missing period counts as zero (a
``GROUP BY`` over events emits no row for a period without any); otherwise the value is
interpolated linearly between its neighbours (a level or a mean does not drop to zero because a
row is missing). Filled points are fitted but never shown as actuals.
"""

from __future__ import annotations

import calendar
import datetime as dt
import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from shared import HostTableData, InvalidArguments
from shared.values import parse_temporal_string

Aggregate = Literal["sum", "mean"]
MIN_POINTS = 3  # fewer observed points give no interval and no backtest at all
MAX_GROUPS = 25  # each group is fitted in turn: more would pass any sensible time per call
_SHOWN = 5  # examples of bad cells or filled periods named in a message


@dataclass(frozen=True)
class Frequency:
    """A supported frequency: its name, the seasonal period that goes with it, and how to step."""

    name: str
    period: int
    horizon: (
        int  # a backtest's default horizon (M4's: 6 yearly, 8 quarterly, 18 monthly, 13 weekly, 14 daily, 48 hourly)
    )
    months: int = 0  # calendar step for monthly and coarser
    seconds: int = 0  # fixed step for hourly, daily, weekly

    @property
    def has_time_of_day(self) -> bool:
        return self.seconds == 3600


HOURLY = Frequency("hourly", 24, 48, seconds=3600)
DAILY = Frequency("daily", 7, 14, seconds=86400)
WEEKLY = Frequency("weekly", 52, 13, seconds=7 * 86400)
MONTHLY = Frequency("monthly", 12, 18, months=1)
QUARTERLY = Frequency("quarterly", 4, 8, months=3)
YEARLY = Frequency("yearly", 1, 6, months=12)
FREQUENCIES = (HOURLY, DAILY, WEEKLY, MONTHLY, QUARTERLY, YEARLY)
SUPPORTED = "hourly, daily, weekly, monthly, quarterly or yearly"


@dataclass(frozen=True)
class Series:
    """One regular series: ``values`` on consecutive periods from ``start``; ``filled`` are the
    indexes that had no row and were filled by the gap rule."""

    group: str | None
    start: dt.datetime
    values: list[float]
    filled: tuple[int, ...]
    observed: int

    def time(self, frequency: Frequency, index: int) -> dt.datetime:
        return step(frequency, self.start, index)


@dataclass(frozen=True)
class Panel:
    """Every series of a call, with the frequency and the seasonal period they share."""

    series: list[Series]
    frequency: Frequency
    period: int
    warnings: list[str]

    def iso(self, moment: dt.datetime) -> str:
        """A time as the output's ``time`` column holds it: a date, or a datetime when hourly."""
        if self.frequency.has_time_of_day:
            return moment.isoformat()
        return moment.date().isoformat()


def step(frequency: Frequency, start: dt.datetime, count: int) -> dt.datetime:
    """``start`` moved by ``count`` periods; monthly steps keep the day of the month (month ends stay month ends)."""
    if frequency.seconds:
        return start + dt.timedelta(seconds=frequency.seconds * count)
    month = start.year * 12 + start.month - 1 + frequency.months * count
    year, month = divmod(month, 12)
    last = calendar.monthrange(year, month + 1)[1]
    month_end = start.day == calendar.monthrange(start.year, start.month)[1]
    return start.replace(year=year, month=month + 1, day=last if month_end else min(start.day, last))


def _slot(frequency: Frequency, origin: dt.datetime, moment: dt.datetime) -> int | None:
    """The period index of ``moment`` counted from ``origin``, or None when it is off the grid."""
    if frequency.seconds:
        seconds = (moment - origin).total_seconds()
        index = round(seconds / frequency.seconds)
        return index if seconds == index * frequency.seconds else None
    months = (moment.year - origin.year) * 12 + moment.month - origin.month
    return months // frequency.months if months % frequency.months == 0 else None


def parse_time(value: Any) -> dt.datetime | None:
    """An ISO date or datetime cell as a naive datetime (aware ones in UTC); None when it is not one."""
    if not isinstance(value, str):
        return None
    parsed = parse_temporal_string(value.strip())
    if parsed is None:
        return None
    moment = dt.datetime.fromisoformat(parsed[1])
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.UTC).replace(tzinfo=None)
    return moment


def parse_number(value: Any) -> float | None:
    """A numeric cell (a host may send numbers as text, spec 8.8.1); None when it is not a finite number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _require_columns(table: HostTableData, names: Iterable[tuple[str, str]]) -> None:
    present = [h["name"] for h in table.columns]
    for argument, name in names:
        if name not in present:
            listed = ", ".join(present) or "none"
            raise InvalidArguments(
                f"{argument} '{name}' is not a column of table '{table.ref}'. Its columns are: {listed}. "
                f"Pass one of them as {argument}."
            )


def _examples(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_SHOWN])
    return shown + (f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else "")


def _infer_frequency(times: Sequence[dt.datetime], time_column: str) -> Frequency:
    """The frequency whose step the median gap between consecutive distinct times matches."""
    ordered = sorted(set(times))
    gaps = sorted((b - a).total_seconds() for a, b in itertools.pairwise(ordered))
    median = gaps[len(gaps) // 2]
    day = 86400.0
    if median == 3600:
        return HOURLY
    if median == day:
        return DAILY
    if median == 7 * day:
        return WEEKLY
    if 28 * day <= median <= 31 * day:
        return MONTHLY
    if 89 * day <= median <= 92 * day:
        return QUARTERLY
    if 365 * day <= median <= 366 * day:
        return YEARLY
    raise InvalidArguments(
        f"The times in '{time_column}' are {median / 3600:g} hours apart (median), which is not a supported "
        f"frequency: {SUPPORTED}. Aggregate the table to one of them (for example GROUP BY the day) and pass "
        "that table_ref."
    )


def load(
    table: HostTableData,
    *,
    time_column: str,
    value_column: str,
    group_column: str | None = None,
    aggregate: Aggregate | None = None,
    seasonality: int | None = None,
    max_groups: int = MAX_GROUPS,
) -> Panel:
    """The regular series of a host table, one per group, checked, with their frequency and period."""
    _require_columns(
        table,
        [("time_column", time_column), ("value_column", value_column)]
        + ([("group_column", group_column)] if group_column else []),
    )
    bad_times: list[str] = []
    bad_values: list[str] = []
    cells: dict[str | None, dict[dt.datetime, list[float]]] = {}
    for number, row in enumerate(table.rows, start=1):
        raw_time, raw_value = row.get(time_column), row.get(value_column)
        moment = parse_time(raw_time)
        if moment is None:
            bad_times.append(f"row {number}: {raw_time!r}")
            continue
        if raw_value is None:
            continue  # an empty cell is a missing value: the gap rule fills it
        value = parse_number(raw_value)
        if value is None:
            bad_values.append(f"row {number}: {raw_value!r}")
            continue
        group = None if not group_column else _group_name(row.get(group_column))
        cells.setdefault(group, {}).setdefault(moment, []).append(value)
    if bad_times:
        numbers = (
            " Numbers such as 202401 or 20240115 are not read as dates."
            if any(isinstance(row.get(time_column), (int, float)) for row in table.rows)
            else ""
        )
        raise InvalidArguments(
            f"time_column '{time_column}' has {len(bad_times)} cell(s) that are not ISO dates or datetimes "
            f"({_examples(bad_times)}). Accepted: YYYY-MM-DD, or ISO 8601 such as 2026-09-01T10:00:00Z.{numbers} "
            "Convert the column in the query that builds the table (or filter out empty times) and pass that "
            "table_ref."
        )
    if bad_values:
        raise InvalidArguments(
            f"value_column '{value_column}' has {len(bad_values)} non-numeric cell(s) ({_examples(bad_values)}). "
            "Pass a numeric column, or cast it to a number in the query that builds the table."
        )
    if not cells:
        raise InvalidArguments(
            f"Table '{table.ref}' has no rows with a value in '{value_column}'. Pass a table with at least "
            f"{MIN_POINTS} dated values."
        )
    if len(cells) > max_groups:
        raise InvalidArguments(
            f"group_column '{group_column}' has {len(cells)} groups; a call takes at most {max_groups}. Filter the "
            "table to the groups that matter (or group by a coarser column) and pass that table_ref."
        )
    duplicated = [
        (group, moment) for group, by_time in cells.items() for moment, values in by_time.items() if len(values) > 1
    ]
    if duplicated and aggregate is None:
        examples = [
            f"{moment.isoformat()}" + (f" in group {group!r}" if group is not None else "")
            for group, moment in duplicated
        ]
        hint = "" if group_column else " or pass the column that tells them apart as group_column"
        raise InvalidArguments(
            f"time_column '{time_column}' repeats {len(duplicated)} time(s) ({_examples(examples)}). Pass "
            f'aggregate "sum" or "mean" to combine rows that share a time{hint}.'
        )
    totals = {
        group: {moment: _combine(values, aggregate) for moment, values in by_time.items()}
        for group, by_time in cells.items()
    }
    frequency = _infer_frequency([m for by_time in totals.values() for m in by_time], time_column)
    end = max(m for by_time in totals.values() for m in by_time)
    warnings: list[str] = []
    series = [
        _regular(group, by_time, frequency, end, aggregate, time_column, warnings) for group, by_time in totals.items()
    ]
    period = _period(frequency, seasonality, min(s.observed for s in series), warnings)
    return Panel(series, frequency, period, warnings)


def _group_name(value: Any) -> str:
    return "(empty)" if value is None or value == "" else str(value)


def _combine(values: list[float], aggregate: Aggregate | None) -> float:
    total = math.fsum(values)
    return total / len(values) if aggregate == "mean" else total


def _regular(
    group: str | None,
    by_time: dict[dt.datetime, float],
    frequency: Frequency,
    end: dt.datetime,
    aggregate: Aggregate | None,
    time_column: str,
    warnings: list[str],
) -> Series:
    """One group on the regular grid from its first time to the table's last one, gaps filled."""
    start = min(by_time)
    slots: dict[int, float] = {}
    off_grid = []
    for moment, value in by_time.items():
        index = _slot(frequency, start, moment)
        if index is None:
            off_grid.append(moment.isoformat())
        elif index in slots:
            raise InvalidArguments(
                f"time_column '{time_column}' has several times in one {frequency.name} period (around "
                f'{moment.isoformat()}). Pass aggregate "sum" or "mean" after grouping the table by that '
                "period, or pass a table with one row per period."
            )
        else:
            slots[index] = value
    if off_grid:
        raise InvalidArguments(
            f"time_column '{time_column}' looks {frequency.name}, but {len(off_grid)} time(s) fall between periods "
            f"({_examples(off_grid)}). Truncate the times to the {frequency.name} period in the query that builds "
            "the table (and aggregate), then pass that table_ref."
        )
    label = f" of group {group!r}" if group is not None else ""
    if len(slots) < MIN_POINTS:
        raise InvalidArguments(
            f"The series{label} has {len(slots)} point(s); forecasting needs at least {MIN_POINTS}. Pass a table "
            "with a longer history, or a coarser group_column."
        )
    length = (_slot(frequency, start, end) or 0) + 1
    values, filled = _fill(slots, length, aggregate)
    if filled:
        rule = "zero (sum of no rows)" if aggregate == "sum" else "linear interpolation"
        times = [step(frequency, start, i).date().isoformat() for i in filled]
        warnings.append(
            f"{len(filled)} missing {frequency.name} period(s){label} filled by {rule}: {_examples(times)}. "
            "They are fitted but not shown as actuals."
        )
    return Series(group, start, values, tuple(filled), len(slots))


def _fill(slots: dict[int, float], length: int, aggregate: Aggregate | None) -> tuple[list[float], list[int]]:
    filled = [i for i in range(length) if i not in slots]
    if aggregate == "sum":
        return [slots.get(i, 0.0) for i in range(length)], filled
    known = sorted(slots)
    values = []
    position = 0  # the last known index at or before i
    for i in range(length):
        if i in slots:
            values.append(slots[i])
            continue
        while position + 1 < len(known) and known[position + 1] < i:
            position += 1
        before = known[position]
        after = next((k for k in known[position:] if k > i), None)
        if after is None:  # trailing periods (a group that stops before the table's end) carry the last value
            values.append(slots[before])
        else:
            weight = (i - before) / (after - before)
            values.append(slots[before] + weight * (slots[after] - slots[before]))
    return values, filled


def _period(frequency: Frequency, seasonality: int | None, shortest: int, warnings: list[str]) -> int:
    """The seasonal period: the one given, else the frequency's; 1 when the history holds fewer than two seasons."""
    period = seasonality if seasonality is not None else frequency.period
    if period > 1 and shortest < 2 * period:
        if seasonality is not None or frequency is not WEEKLY:
            warnings.append(
                f"Seasonality {period} needs at least two seasons ({2 * period} points); the shortest series has "
                f"{shortest}, so it is fitted without seasonality."
            )
        return 1
    return period
