"""Unit tests for shared/dates.py: the x-acp-date window (spec 8.9)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from shared.dates import date_properties, resolve_date, resolve_date_arguments
from shared.errors import InvalidArguments

TODAY = dt.date(2024, 3, 10)
ROLES = {"start_date": "start", "end_date": "end"}


# -- resolve_date: the five accepted forms (spec 8.9) ---------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-01-31", dt.date(2024, 1, 31)),
        ("20240131", dt.date(2024, 1, 31)),
        ("2024-02-29", dt.date(2024, 2, 29)),  # leap day
        ("20240229", dt.date(2024, 2, 29)),
        ("today", TODAY),
        ("yesterday", TODAY - dt.timedelta(days=1)),
        ("0daysAgo", TODAY),
        ("1daysAgo", TODAY - dt.timedelta(days=1)),
        ("7daysAgo", TODAY - dt.timedelta(days=7)),
        ("30daysAgo", TODAY - dt.timedelta(days=30)),
        ("365daysAgo", TODAY - dt.timedelta(days=365)),
    ],
)
def test_resolve_date_accepted_forms(text: str, expected: dt.date) -> None:
    assert resolve_date(text, TODAY) == expected


def test_resolve_date_is_relative_to_the_given_today() -> None:
    other = dt.date(2023, 1, 1)
    assert resolve_date("today", other) == other
    assert resolve_date("yesterday", other) == dt.date(2022, 12, 31)  # crosses a year
    assert resolve_date("1daysAgo", dt.date(2024, 3, 1)) == dt.date(2024, 2, 29)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "tomorrow",
        "2023-02-29",  # not a leap year
        "20230229",
        "2024-13-01",
        "20241301",
        "2024-00-10",
        "2024-1-5",
        "2024/01/05",
        "05-01-2024",
        "202401015",
        "2024-01-05T00:00:00",
        "daysAgo",
        "-1daysAgo",
        "1dayAgo",
        "1 daysAgo",
        "NdaysAgo",
        "2024-W01-1",  # an ISO week date is not YYYY-MM-DD
        "\u0661\u0662\u0663daysAgo",  # Arabic-Indic digits are not N
    ],
)
def test_resolve_date_rejects_other_forms(text: str) -> None:
    with pytest.raises(ValueError):
        resolve_date(text, TODAY)


# -- date_properties ------------------------------------------------------------------------------


def test_date_properties_maps_annotated_properties_to_roles() -> None:
    schema = {
        "properties": {
            "start_date": {"type": "string", "x-acp-date": "start"},
            "end_date": {"type": "string", "x-acp-date": "end"},
            "query": {"type": "string", "x-acp-date": "template"},
            "metrics": {"type": "array"},
        }
    }
    assert date_properties(schema) == {"start_date": "start", "end_date": "end", "query": "template"}
    assert date_properties({}) == {}


# -- resolve_date_arguments (spec 8.9) ------------------------------------------------------------


def test_arguments_are_resolved_in_place_to_iso_dates() -> None:
    args: dict[str, Any] = {"start_date": "7daysAgo", "end_date": "yesterday", "metrics": ["sessions"]}
    window = resolve_date_arguments(args, ROLES, TODAY)
    assert args == {"start_date": "2024-03-03", "end_date": "2024-03-09", "metrics": ["sessions"]}
    assert window == ["2024-03-03", "2024-03-09"]


def test_compact_dates_are_rewritten_as_yyyy_mm_dd() -> None:
    args: dict[str, Any] = {"start_date": "20240101", "end_date": "20240131"}
    assert resolve_date_arguments(args, ROLES, TODAY) == ["2024-01-01", "2024-01-31"]
    assert args == {"start_date": "2024-01-01", "end_date": "2024-01-31"}


def test_single_day_window_is_valid() -> None:
    args: dict[str, Any] = {"start_date": "today", "end_date": "2024-03-10"}
    assert resolve_date_arguments(args, ROLES, TODAY) == ["2024-03-10", "2024-03-10"]


def test_reversed_window_is_invalid_arguments_naming_both_dates() -> None:
    args: dict[str, Any] = {"start_date": "2024-03-09", "end_date": "2024-03-01"}
    with pytest.raises(InvalidArguments) as info:
        resolve_date_arguments(args, ROLES, TODAY)
    assert info.value.code == -32017
    assert "2024-03-09" in info.value.message
    assert "2024-03-01" in info.value.message


def test_reversed_relative_window_is_detected_after_resolution() -> None:
    # "yesterday" (2024-03-09) is after "30daysAgo" (2024-02-09): start/end swapped.
    with pytest.raises(InvalidArguments):
        resolve_date_arguments({"start_date": "yesterday", "end_date": "30daysAgo"}, ROLES, TODAY)


def test_reversed_window_is_compared_as_dates_not_as_input_text() -> None:
    # As raw text "2024-03-05" sorts before "20240301"; as dates the window is reversed.
    with pytest.raises(InvalidArguments):
        resolve_date_arguments({"start_date": "2024-03-05", "end_date": "20240301"}, ROLES, TODAY)


def test_invalid_date_argument_names_the_argument_and_the_accepted_forms() -> None:
    with pytest.raises(InvalidArguments) as info:
        resolve_date_arguments({"start_date": "last week", "end_date": "today"}, ROLES, TODAY)
    message = info.value.message
    assert "start_date" in message
    for form in ("YYYY-MM-DD", "YYYYMMDD", "today", "yesterday", "NdaysAgo"):
        assert form in message


def test_only_one_bound_gives_a_one_element_window() -> None:
    args: dict[str, Any] = {"start_date": "yesterday"}
    assert resolve_date_arguments(args, ROLES, TODAY) == ["2024-03-09"]
    assert args == {"start_date": "2024-03-09"}


def test_no_date_arguments_gives_no_window() -> None:
    args: dict[str, Any] = {"metrics": ["sessions"]}
    assert resolve_date_arguments(args, ROLES, TODAY) is None
    assert args == {"metrics": ["sessions"]}
    assert resolve_date_arguments({"start_date": "today"}, {}, TODAY) is None


def test_non_string_date_values_are_left_to_schema_validation() -> None:
    args: dict[str, Any] = {"start_date": None, "end_date": "today"}
    assert resolve_date_arguments(args, ROLES, TODAY) == ["2024-03-10"]
    assert args["start_date"] is None


@pytest.mark.parametrize(
    ("query", "markers"),
    [
        ("SELECT * FROM t WHERE d BETWEEN '{{start_date}}' AND '{{end_date}}'", ["{{start_date}}", "{{end_date}}"]),
        ("SELECT * FROM t WHERE d >= '{{start_date}}'", ["{{start_date}}"]),
        ("SELECT * FROM t WHERE d <= '{{end_date}}'", ["{{end_date}}"]),
    ],
)
def test_leftover_template_markers_are_invalid_arguments_explaining_the_host_substitutes_them(
    query: str, markers: list[str]
) -> None:
    # spec 8.9: "el host los sustituye [...] El servidor recibe el SQL ya sustituido."
    with pytest.raises(InvalidArguments) as info:
        resolve_date_arguments({"query": query}, {"query": "template"}, TODAY)
    message = info.value.message
    assert "query" in message
    for marker in markers:
        assert marker in message
    assert "host" in message.lower()
    assert "substitut" in message.lower()


def test_substituted_template_passes_and_is_not_a_window() -> None:
    args: dict[str, Any] = {"query": "SELECT * FROM t WHERE d BETWEEN '2024-03-01' AND '2024-03-09'"}
    before = dict(args)
    assert resolve_date_arguments(args, {"query": "template"}, TODAY) is None
    assert args == before


def test_template_without_markers_passes() -> None:
    # spec 8.9: without the markers the query simply has no window.
    assert resolve_date_arguments({"query": "SELECT 1"}, {"query": "template"}, TODAY) is None
