"""From host rows to regular series (connectors/prediction/series.py): frequencies and their seasonal
periods, calendar steps, the gap rule, duplicates and short histories. Pure Python, no statistics."""

from __future__ import annotations

import datetime as dt

import pytest

from connectors.prediction import series as ts
from shared import HostTableData, InvalidArguments


def _table(times: list[str], values: list[object], groups: list[str] | None = None) -> HostTableData:
    rows = [
        {"t": t, "v": v, **({"g": groups[i]} if groups else {})}
        for i, (t, v) in enumerate(zip(times, values, strict=True))
    ]
    return HostTableData(ref="ds", headers=[], rows=rows)


def _months(count: int, day: int = 1) -> list[str]:
    return [dt.date(2020 + (m // 12), m % 12 + 1, day).isoformat() for m in range(count)]


@pytest.mark.parametrize(
    ("times", "frequency", "period"),
    [
        ([f"2026-03-0{1 + h // 24}T{h % 24:02d}:00:00Z" for h in range(72)], "hourly", 24),
        ([(dt.date(2026, 1, 1) + dt.timedelta(days=i)).isoformat() for i in range(30)], "daily", 7),
        ([(dt.date(2026, 1, 5) + dt.timedelta(weeks=i)).isoformat() for i in range(30)], "weekly", 1),
        ([(dt.date(2022, 1, 3) + dt.timedelta(weeks=i)).isoformat() for i in range(110)], "weekly", 52),
        (_months(36), "monthly", 12),
        ([f"{2015 + q // 4}-{3 * (q % 4) + 1:02d}-01" for q in range(20)], "quarterly", 4),
        ([f"{1990 + y}-01-01" for y in range(20)], "yearly", 1),
    ],
)
def test_frequency_and_its_seasonal_period(times, frequency, period) -> None:
    panel = ts.load(_table(times, list(range(len(times)))), time_column="t", value_column="v")
    assert (panel.frequency.name, panel.period) == (frequency, period)
    assert panel.series[0].values == [float(i) for i in range(len(times))] and not panel.series[0].filled


def test_month_ends_stay_month_ends() -> None:
    ends = ["2026-01-31", "2026-02-28", "2026-03-31", "2026-04-30"]
    panel = ts.load(_table(ends, [1, 2, 3, 4]), time_column="t", value_column="v")
    one = panel.series[0]
    assert [one.time(panel.frequency, i).date().isoformat() for i in range(4, 7)] == [
        "2026-05-31",
        "2026-06-30",
        "2026-07-31",
    ]


def test_gap_rule_zero_for_sums_and_interpolation_otherwise() -> None:
    days = ["2026-01-01", "2026-01-01", "2026-01-02", "2026-01-05", "2026-01-06"]
    summed = ts.load(_table(days, [1, 1, 4, 10, 12]), time_column="t", value_column="v", aggregate="sum")
    assert summed.series[0].values == [2, 4, 0, 0, 10, 12] and summed.series[0].filled == (2, 3)
    assert "filled by zero" in summed.warnings[0] and "2026-01-03, 2026-01-04" in summed.warnings[0]
    meaned = ts.load(_table(days, [1, 1, 4, 10, 12]), time_column="t", value_column="v", aggregate="mean")
    assert meaned.series[0].values == [1, 4, 6, 8, 10, 12]
    assert "linear interpolation" in meaned.warnings[0]


def test_groups_share_the_tables_end_and_trailing_gaps_follow_the_rule() -> None:
    days = ["2026-01-01", "2026-01-02", "2026-01-03", "2026-01-01", "2026-01-02", "2026-01-03", "2026-01-04"]
    panel = ts.load(_table(days, [1, 2, 3, 5, 5, 5, 5], ["a"] * 3 + ["b"] * 4), time_column="t", value_column="v",
                    group_column="g")  # fmt: skip
    by_group = {s.group: s for s in panel.series}
    assert by_group["a"].values == [1, 2, 3, 3] and by_group["a"].filled == (3,)
    assert by_group["b"].values == [5, 5, 5, 5]


def test_a_short_history_drops_the_season_with_a_warning() -> None:
    days = [(dt.date(2026, 1, 1) + dt.timedelta(days=i)).isoformat() for i in range(10)]
    panel = ts.load(_table(days, list(range(10))), time_column="t", value_column="v")
    assert panel.period == 1 and "two seasons" in panel.warnings[0]
    given = ts.load(_table(days, list(range(10))), time_column="t", value_column="v", seasonality=2)
    assert given.period == 2 and not given.warnings


@pytest.mark.parametrize(
    ("times", "values", "says"),
    [
        ([f"2026-01-0{d}" for d in range(1, 7)] + ["2026-01-02T12:00:00"], [1] * 7, "fall between periods"),
        ([*_months(6), "2020-03-15"], [1] * 7, "one monthly period"),
        (["2026-01-01", "2026-01-02", "2026-01-03"], [1, True, 3], "non-numeric"),
    ],
)
def test_rows_that_do_not_fit_the_grid_are_refused(times, values, says) -> None:
    with pytest.raises(InvalidArguments, match=says):
        ts.load(_table(times, values), time_column="t", value_column="v")


def test_too_many_groups_are_refused() -> None:
    days = ["2026-01-01", "2026-01-02", "2026-01-03"] * 4
    groups = [str(i // 3) for i in range(12)]
    with pytest.raises(InvalidArguments, match="at most 3"):
        ts.load(_table(days, list(range(12)), groups), time_column="t", value_column="v", group_column="g",
                max_groups=3)  # fmt: skip
