"""Value normalization and type inference (spec 8.6), shared/values.py."""

from __future__ import annotations

import base64
import datetime as dt
import itertools
import json
from decimal import Decimal

import pytest

from shared import values as v
from shared.protocol import COLUMN_TYPES
from shared.values import (
    BINARY,
    BOOLEAN,
    DATE,
    DATETIME,
    INTEGER,
    JSON,
    NULL,
    NUMBER,
    STRING,
    ConversionError,
    convert,
    exact_number,
    format_datetime,
    infer_type,
    json_safe,
    normalize,
    parse_temporal_string,
)

KIND_NAMES = {
    INTEGER: "integer",
    NUMBER: "number",
    BOOLEAN: "boolean",
    DATE: "date",
    DATETIME: "datetime",
    STRING: "string",
    JSON: "json",
}
CET = dt.timezone(dt.timedelta(hours=2))


def spec_type(kinds: set[int]) -> str:
    """The spec 8.6 inference rule, written independently of the implementation."""
    names = {KIND_NAMES[k] for k in kinds}
    if not names:
        return "string"  # a column with no values at all
    if len(names) == 1:
        return next(iter(names))
    if names <= {"integer", "number"}:
        return "number"
    if names <= {"date", "datetime"}:
        return "datetime"
    return "string"


# -- infer_type ---------------------------------------------------------------------------


def test_kind_of_type_covers_every_column_type():
    assert set(v.KIND_OF_TYPE) == set(COLUMN_TYPES)
    assert {v.KIND_OF_TYPE[name] for name in KIND_NAMES.values()} == set(KIND_NAMES)


@pytest.mark.parametrize("kind", list(KIND_NAMES))
def test_infer_type_single_kind_is_that_type(kind):
    assert infer_type(kind) == KIND_NAMES[kind]


def test_infer_type_no_values_is_string():
    """Spec 8.6 (core rule): a column without values is string."""
    assert infer_type(NULL) == "string"


def test_infer_type_integer_and_number_is_number():
    assert infer_type(INTEGER | NUMBER) == "number"


def test_infer_type_date_and_datetime_is_datetime():
    assert infer_type(DATE | DATETIME) == "datetime"


@pytest.mark.parametrize(
    "kinds",
    [INTEGER | BOOLEAN, INTEGER | STRING, NUMBER | DATE, DATE | STRING, DATETIME | JSON, BOOLEAN | JSON],
)
def test_infer_type_other_pairs_are_string(kinds):
    assert infer_type(kinds) == "string"


def test_infer_type_every_combination_follows_spec_rule():
    """Spec 8.6: integer+number -> number, date+datetime -> datetime, any other mix -> string."""
    kinds = list(KIND_NAMES)
    for size in range(len(kinds) + 1):
        for combo in itertools.combinations(kinds, size):
            flags = 0
            for kind in combo:
                flags |= kind
            assert infer_type(flags) == spec_type(set(combo)), combo


def test_infer_type_binary_flag_counts_as_string():
    assert infer_type(STRING | BINARY) == "string"
    assert infer_type(INTEGER | STRING | BINARY) == "string"


# -- format_datetime ------------------------------------------------------------------------


def test_format_datetime_naive_stays_naive():
    """Spec 8.6 (core rule): no invented time zone for naive timestamps."""
    text = format_datetime(dt.datetime(2026, 9, 1, 10, 15, 30))
    assert text == "2026-09-01T10:15:30"
    assert not text.endswith("Z")


def test_format_datetime_aware_becomes_utc_with_z():
    assert format_datetime(dt.datetime(2026, 9, 1, 10, 15, tzinfo=CET)) == "2026-09-01T08:15:00Z"


def test_format_datetime_aware_utc_keeps_microseconds():
    value = dt.datetime(2026, 9, 1, 23, 59, 59, 123456, tzinfo=dt.UTC)
    assert format_datetime(value) == "2026-09-01T23:59:59.123456Z"


def test_format_datetime_crosses_day_boundary_when_converting_to_utc():
    value = dt.datetime(2026, 9, 1, 1, 0, tzinfo=CET)
    assert format_datetime(value) == "2026-08-31T23:00:00Z"


# -- parse_temporal_string ------------------------------------------------------------------


def test_parse_temporal_string_date():
    assert parse_temporal_string("2026-09-01") == (DATE, "2026-09-01")


@pytest.mark.parametrize("text", ["2026-02-30", "2026-13-01", "2026-9-01", "20260901", "01/09/2026"])
def test_parse_temporal_string_rejects_invalid_dates(text):
    assert parse_temporal_string(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-09-01T10:15:00", "2026-09-01T10:15:00"),
        ("2026-09-01 10:15:00", "2026-09-01T10:15:00"),
        ("2026-09-01T10:15", "2026-09-01T10:15:00"),
        ("2026-09-01T10:15:00.5", "2026-09-01T10:15:00.500000"),
        ("2026-09-01T10:15:00Z", "2026-09-01T10:15:00Z"),
        ("2026-09-01T10:15:00+02:00", "2026-09-01T08:15:00Z"),
        ("2026-09-01T10:15:00-0130", "2026-09-01T11:45:00Z"),
    ],
)
def test_parse_temporal_string_datetime_forms(text, expected):
    assert parse_temporal_string(text) == (DATETIME, expected)


def test_parse_temporal_string_nanoseconds_are_accepted():
    """Some engines give 9 fractional digits; the value still parses as a datetime."""
    kind, text = parse_temporal_string("2026-09-01T10:15:00.123456789Z")
    assert kind == DATETIME
    assert text.startswith("2026-09-01T10:15:00.123456")
    assert text.endswith("Z")


@pytest.mark.parametrize(
    "text",
    ["2026-09-01T25:00:00", "2026-02-30T10:00:00", "hello world", "", "2026-09-01T", "2026-09-01X10:15:00"],
)
def test_parse_temporal_string_rejects_non_temporal_text(text):
    assert parse_temporal_string(text) is None


# -- exact_number ---------------------------------------------------------------------------


def test_exact_number_integral_decimal_becomes_int():
    result = exact_number(Decimal("12345678901234567890123"))
    assert type(result) is int
    assert result == 12345678901234567890123


def test_exact_number_integral_decimal_with_exponent_becomes_int():
    result = exact_number(Decimal("1E+2"))
    assert type(result) is int
    assert result == 100


def test_exact_number_float_representable_decimal_becomes_float():
    result = exact_number(Decimal("0.0421"))
    assert type(result) is float
    assert result == 0.0421


def test_exact_number_lossy_decimal_stays_decimal():
    value = Decimal("0.1000000000000000055511151231257827")
    result = exact_number(value)
    assert isinstance(result, Decimal)
    assert str(result) == "0.1000000000000000055511151231257827"


def test_exact_number_many_significant_digits_stay_decimal():
    value = Decimal("12345678901234567.89")
    assert exact_number(value) == value
    assert isinstance(exact_number(value), Decimal)


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "sNaN"])
def test_exact_number_non_finite_is_none(text):
    assert exact_number(Decimal(text)) is None


# -- json_safe ------------------------------------------------------------------------------


def test_json_safe_nested_values_become_plain_json():
    value = {
        1: (1, 2),
        "when": dt.datetime(2026, 9, 1, 10, 0, tzinfo=CET),
        "day": dt.date(2026, 9, 1),
        "time": dt.time(10, 15),
        "blob": b"\x00\xff",
        "nan": float("nan"),
        "inf": float("-inf"),
        "dec": Decimal("2.5"),
        "deep": [{"x": None, "ok": True}],
    }
    out = json_safe(value)
    assert out == {
        "1": [1, 2],
        "when": "2026-09-01T08:00:00Z",
        "day": "2026-09-01",
        "time": "10:15:00",
        "blob": base64.b64encode(b"\x00\xff").decode("ascii"),
        "nan": None,
        "inf": None,
        "dec": 2.5,
        "deep": [{"x": None, "ok": True}],
    }
    json.dumps(out, allow_nan=False)  # plain, strict JSON


def test_json_safe_keeps_lossy_decimal_exact():
    value = Decimal("3.14159265358979323846264338327950288")
    assert json_safe([value]) == [value]
    assert isinstance(json_safe([value])[0], Decimal)


def test_json_safe_unknown_objects_become_their_text():
    class Thing:
        def __str__(self) -> str:
            return "thing!"

    assert json_safe({"a": Thing()}) == {"a": "thing!"}


# -- normalize ------------------------------------------------------------------------------


def test_normalize_none_is_null():
    assert normalize(None, True) == (None, NULL)


def test_normalize_plain_string_is_string():
    assert normalize("Organic Search", True) == ("Organic Search", STRING)


def test_normalize_date_string_detected_only_when_asked():
    assert normalize("2026-09-01", True) == ("2026-09-01", DATE)
    assert normalize("2026-09-01", False) == ("2026-09-01", STRING)


def test_normalize_datetime_string_detected_and_canonicalized():
    assert normalize("2026-09-01 10:15:00+02:00", True) == ("2026-09-01T08:15:00Z", DATETIME)


def test_normalize_integers_stay_exact_beyond_64_bits():
    """Spec 8.6 (core rule): 64-bit and larger integers stay exact."""
    for number in (2**63 - 1, -(2**63), 2**64, 2**200 + 1, -(2**130)):
        out, kind = normalize(number, True)
        assert kind == INTEGER
        assert type(out) is int
        assert out == number


def test_normalize_bool_is_boolean_not_integer():
    assert normalize(True, True) == (True, BOOLEAN)
    assert normalize(False, True) == (False, BOOLEAN)


def test_normalize_float_is_number():
    assert normalize(0.0421, True) == (0.0421, NUMBER)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), Decimal("NaN"), Decimal("-Infinity")])
def test_normalize_non_finite_becomes_null(value):
    assert normalize(value, True) == (None, NULL)


def test_normalize_decimal_stays_decimal_until_serialization():
    value = Decimal("0.1000000000000000055511151231257827")
    out, kind = normalize(value, True)
    assert kind == NUMBER
    assert out is value


def test_normalize_naive_datetime_stays_naive():
    assert normalize(dt.datetime(2026, 9, 1, 10, 15), True) == ("2026-09-01T10:15:00", DATETIME)


def test_normalize_aware_datetime_becomes_utc_z():
    assert normalize(dt.datetime(2026, 9, 1, 10, 15, tzinfo=CET), True) == ("2026-09-01T08:15:00Z", DATETIME)


def test_normalize_date_is_date():
    assert normalize(dt.date(2026, 9, 1), True) == ("2026-09-01", DATE)


@pytest.mark.parametrize("value", [{"key": "value"}, [1, 2, 3], (1, "a")])
def test_normalize_objects_and_arrays_are_json(value):
    out, kind = normalize(value, True)
    assert kind == JSON
    assert out == json_safe(value)
    assert isinstance(out, (dict, list))


@pytest.mark.parametrize("value", [b"\x00\x01binary", bytearray(b"\xfe\xff"), memoryview(b"abc")])
def test_normalize_binary_becomes_base64_string_flagged_binary(value):
    out, kind = normalize(value, True)
    assert out == base64.b64encode(bytes(value)).decode("ascii")
    assert kind & STRING
    assert kind & BINARY


def test_normalize_time_is_string():
    assert normalize(dt.time(10, 15), True) == ("10:15:00", STRING)


def test_normalize_int_subclass_is_plain_integer():
    class Code(int):
        pass

    out, kind = normalize(Code(7), True)
    assert kind == INTEGER
    assert type(out) is int
    assert out == 7


def test_normalize_unknown_object_is_its_text():
    class Thing:
        def __str__(self) -> str:
            return "thing"

    assert normalize(Thing(), True) == ("thing", STRING)


# -- convert (declared types, spec 8.6 "convert values to the declared type") ----------------


@pytest.mark.parametrize("column_type", COLUMN_TYPES)
def test_convert_none_stays_none_for_every_type(column_type):
    """Spec 8.6: any cell may be null."""
    assert convert(None, column_type) is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [(5, 5), ("1830", 1830), (" -12 ", -12), ("+7", 7), (3.0, 3), (Decimal("42"), 42), (True, 1), (2**70, 2**70)],
)
def test_convert_integer_accepts_integral_values(value, expected):
    out = convert(value, "integer")
    assert type(out) is int
    assert out == expected


@pytest.mark.parametrize("value", ["1.5", "abc", 1.5, Decimal("1.5"), "1e3", [1], dt.date(2026, 1, 1)])
def test_convert_integer_rejects_non_integral_values(value):
    with pytest.raises(ConversionError):
        convert(value, "integer")


def test_convert_number_from_text():
    """Spec 8.6: numbers the API returns as text are converted."""
    assert convert("0.0421", "number") == Decimal("0.0421")
    assert convert(" 1830 ", "number") == 1830
    assert type(convert("1830", "number")) is int


def test_convert_number_keeps_exact_digits_of_text():
    digits = "12345678901234567890.123456789"
    assert str(convert(digits, "number")) == digits


def test_convert_number_passes_numbers_through():
    assert convert(7, "number") == 7
    assert convert(0.5, "number") == 0.5
    assert convert(Decimal("1.25"), "number") == Decimal("1.25")


@pytest.mark.parametrize("value", [True, "abc", "NaN", "Infinity", float("nan"), float("inf"), Decimal("NaN"), [1]])
def test_convert_number_rejects_non_numbers(value):
    with pytest.raises(ConversionError):
        convert(value, "number")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True),
        (False, False),
        (1, True),
        (0, False),
        ("true", True),
        ("FALSE", False),
        (" yes ", True),
        ("n", False),
        ("t", True),
        ("0", False),
    ],
)
def test_convert_boolean(value, expected):
    assert convert(value, "boolean") is expected


@pytest.mark.parametrize("value", [2, "maybe", 1.0, "2", [True]])
def test_convert_boolean_rejects_other_values(value):
    with pytest.raises(ConversionError):
        convert(value, "boolean")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("20260901", "2026-09-01"),  # spec 8.6: YYYYMMDD dates become YYYY-MM-DD
        ("2026-09-01", "2026-09-01"),
        (" 2026-09-01 ", "2026-09-01"),
        (dt.date(2026, 9, 1), "2026-09-01"),
        (dt.datetime(2026, 9, 1), "2026-09-01"),
    ],
)
def test_convert_date(value, expected):
    assert convert(value, "date") == expected


@pytest.mark.parametrize(
    "value",
    ["20261301", "2026-02-30", "yesterday", dt.datetime(2026, 9, 1, 10, 0), dt.datetime(2026, 9, 1, tzinfo=dt.UTC), 5],
)
def test_convert_date_rejects_other_values(value):
    with pytest.raises(ConversionError):
        convert(value, "date")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (dt.datetime(2026, 9, 1, 10, 15), "2026-09-01T10:15:00"),
        (dt.datetime(2026, 9, 1, 10, 15, tzinfo=CET), "2026-09-01T08:15:00Z"),
        (dt.date(2026, 9, 1), "2026-09-01T00:00:00"),
        ("2026-09-01", "2026-09-01T00:00:00"),
        ("2026-09-01 10:15", "2026-09-01T10:15:00"),
        ("2026-09-01T10:15:00+02:00", "2026-09-01T08:15:00Z"),
    ],
)
def test_convert_datetime_to_iso_8601(value, expected):
    """Spec 8.6: timestamps become ISO 8601."""
    assert convert(value, "datetime") == expected


@pytest.mark.parametrize("value", ["not a time", 1700000000, "2026-09-01T25:00"])
def test_convert_datetime_rejects_other_values(value):
    with pytest.raises(ConversionError):
        convert(value, "datetime")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("text", "text"),
        (5, "5"),
        (1.5, "1.5"),
        (True, "true"),
        (False, "false"),
        (dt.date(2026, 9, 1), "2026-09-01"),
        (dt.datetime(2026, 9, 1, 10, 0, tzinfo=CET), "2026-09-01T08:00:00Z"),
        (b"\x01\x02", base64.b64encode(b"\x01\x02").decode("ascii")),
    ],
)
def test_convert_string(value, expected):
    assert convert(value, "string") == expected


def test_convert_string_serializes_objects_as_json():
    value = {"a": [1, "ñ"]}
    out = convert(value, "string")
    assert isinstance(out, str)
    assert json.loads(out) == value
    assert "ñ" in out  # not ASCII-escaped


def test_convert_json_accepts_objects_arrays_and_their_text():
    assert convert({"k": "v"}, "json") == {"k": "v"}
    assert convert((1, 2), "json") == [1, 2]
    assert convert('{"k": [1, 2]}', "json") == {"k": [1, 2]}
    assert convert("[true]", "json") == [True]


@pytest.mark.parametrize("value", ["not json", "5", '"text"', 5, 1.5])
def test_convert_json_rejects_scalars(value):
    with pytest.raises(ConversionError):
        convert(value, "json")


def test_conversion_error_is_a_value_error():
    assert issubclass(ConversionError, ValueError)
