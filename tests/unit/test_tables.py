"""TableWriter and TableData (spec 8.5 inline/file delivery, 8.6 headers, types and normalization)."""

from __future__ import annotations

import base64
import datetime as dt
import itertools
import json
import stat
import threading
from decimal import Decimal
from pathlib import Path

import pytest

from shared import _jsonio as jsonio
from shared import tables
from shared.tables import CallCancelled, ModelView, TableData, read_table_file

CET = dt.timezone(dt.timedelta(hours=2))
LOSSY = "0.1000000000000000055511151231257827"  # no float has exactly these digits


def load_exact(path: Path):
    """Parse a table file keeping every digit (ints exact, fractions as Decimal)."""
    return json.loads(path.read_text(encoding="utf-8"), parse_float=Decimal)


def types_of(table: TableData) -> dict[str, str]:
    return {h["name"]: h["type"] for h in table.headers}


def column(table: TableData, name: str) -> list:
    return [row[name] for row in table.iter_rows()]


def spilled(make_writer, rows, **kwargs) -> TableData:
    """A table forced into a file from its first row, then finished."""
    writer = make_writer(inline_max_bytes=1, **kwargs)
    writer.extend(rows)
    table = writer.finish()
    assert table.path is not None
    assert table.rows is None
    return table


# -- declared columns ---------------------------------------------------------------------


def test_declared_headers_keep_order_type_role_and_description(make_writer):
    """Spec 8.6: headers carry name, type and the optional role and description."""
    writer = make_writer(
        columns=[
            {"name": "date", "type": "date", "role": "dimension"},
            {"name": "channel", "type": "string", "role": "dimension", "description": "Session default channel"},
            {"name": "sessions", "type": "integer", "role": "metric"},
        ]
    )
    writer.append(["2026-09-01", "Organic Search", 1830])
    table = writer.finish()
    assert table.headers == [
        {"name": "date", "type": "date", "role": "dimension"},
        {"name": "channel", "type": "string", "role": "dimension", "description": "Session default channel"},
        {"name": "sessions", "type": "integer", "role": "metric"},
    ]
    assert table.columns == ["date", "channel", "sessions"]


def test_declared_types_convert_values(make_writer):
    """Spec 8.6: the server converts values to the declared type (text numbers, YYYYMMDD, timestamps)."""
    writer = make_writer(
        columns=[
            {"name": "day", "type": "date"},
            {"name": "sessions", "type": "integer"},
            {"name": "rate", "type": "number"},
            {"name": "active", "type": "boolean"},
            {"name": "at", "type": "datetime"},
            {"name": "payload", "type": "json"},
            {"name": "code", "type": "string"},
        ]
    )
    writer.append(["20260901", "1830", "0.0421", "yes", dt.datetime(2026, 9, 1, 10, 15, tzinfo=CET), '{"k": 1}', 42])
    table = writer.finish()
    assert types_of(table) == {
        "day": "date",
        "sessions": "integer",
        "rate": "number",
        "active": "boolean",
        "at": "datetime",
        "payload": "json",
        "code": "string",
    }
    assert table.rows == [
        {
            "day": "2026-09-01",
            "sessions": 1830,
            "rate": 0.0421,
            "active": True,
            "at": "2026-09-01T08:15:00Z",
            "payload": {"k": 1},
            "code": "42",
        }
    ]
    assert table.warnings == []


def test_declared_type_wins_over_what_values_look_like(make_writer):
    writer = make_writer(columns=[{"name": "n", "type": "number"}])
    writer.extend([[1], [2], [3]])
    table = writer.finish()
    assert types_of(table) == {"n": "number"}
    assert column(table, "n") == [1, 2, 3]


def test_declared_type_that_does_not_fit_becomes_string_with_warning(make_writer):
    writer = make_writer(columns=[{"name": "n", "type": "integer"}])
    writer.extend([[1], ["abc"], [3]])
    table = writer.finish()
    assert types_of(table) == {"n": "string"}
    assert column(table, "n") == ["1", "abc", "3"]
    assert any("'n'" in w and "integer" in w for w in table.warnings)


def test_declared_nulls_stay_null(make_writer):
    """Spec 8.6: any cell may be null."""
    writer = make_writer(columns=[{"name": "d", "type": "date"}, {"name": "i", "type": "integer"}])
    writer.append([None, None])
    writer.append(["2026-01-02", 5])
    table = writer.finish()
    assert table.rows == [{"d": None, "i": None}, {"d": "2026-01-02", "i": 5}]
    assert types_of(table) == {"d": "date", "i": "integer"}


def test_unknown_declared_type_is_rejected(make_writer):
    with pytest.raises(ValueError, match="unknown type"):
        make_writer(columns=[{"name": "x", "type": "decimal"}])


def test_columns_can_only_be_set_once(make_writer):
    writer = make_writer(columns=["a"])
    with pytest.raises(ValueError):
        writer.set_columns(["b"])


def test_sequence_row_must_match_column_count(make_writer):
    writer = make_writer(columns=["a", "b"])
    with pytest.raises(ValueError):
        writer.append([1])
    with pytest.raises(ValueError):
        writer.append([1, 2, 3])


def test_plain_names_infer_types_next_to_declared_ones(make_writer):
    writer = make_writer(columns=[{"name": "d", "type": "string"}, "x"])
    writer.extend([["a", 1], ["b", 2.5]])
    table = writer.finish()
    assert types_of(table) == {"d": "string", "x": "number"}


# -- inferred columns (spec 8.6 mixing rules) ----------------------------------------------


def infer(make_writer, values):
    writer = make_writer()
    for value in values:
        writer.append({"c": value})
    table = writer.finish()
    return types_of(table)["c"], column(table, "c")


def test_infer_integer(make_writer):
    assert infer(make_writer, [1, 2, None, 3]) == ("integer", [1, 2, None, 3])


def test_infer_integer_and_number_is_number(make_writer):
    """Spec 8.6: a column mixing integer and number is number."""
    assert infer(make_writer, [1, 2.5, 3]) == ("number", [1, 2.5, 3])


def test_infer_boolean(make_writer):
    assert infer(make_writer, [True, False, None]) == ("boolean", [True, False, None])


def test_infer_date_from_dates_and_date_strings(make_writer):
    assert infer(make_writer, [dt.date(2026, 9, 1), "2026-09-02"]) == ("date", ["2026-09-01", "2026-09-02"])


def test_infer_datetime(make_writer):
    assert infer(make_writer, [dt.datetime(2026, 9, 1, 10, 0), "2026-09-02 11:30:00"]) == (
        "datetime",
        ["2026-09-01T10:00:00", "2026-09-02T11:30:00"],
    )


def test_infer_date_and_datetime_is_datetime_with_midnight_dates(make_writer):
    """Spec 8.6: date + datetime is datetime; dates become YYYY-MM-DDT00:00:00."""
    column_type, values = infer(make_writer, [dt.date(2026, 9, 1), dt.datetime(2026, 9, 2, 8, 30), "2026-09-03"])
    assert column_type == "datetime"
    assert values == ["2026-09-01T00:00:00", "2026-09-02T08:30:00", "2026-09-03T00:00:00"]


def test_infer_json(make_writer):
    assert infer(make_writer, [{"a": 1}, [1, 2]]) == ("json", [{"a": 1}, [1, 2]])


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([1, True], ["1", "true"]),
        ([1, "x"], ["1", "x"]),
        ([2.5, dt.date(2026, 9, 1)], ["2.5", "2026-09-01"]),
        ([False, "no"], ["false", "no"]),
        (["2026-09-01", "not a date"], ["2026-09-01", "not a date"]),
    ],
)
def test_infer_other_mixes_are_string(make_writer, values, expected):
    """Spec 8.6: any other mix is string, and every value is delivered as text."""
    assert infer(make_writer, values) == ("string", expected)


def test_infer_json_mixed_with_text_is_string_with_json_text(make_writer):
    column_type, values = infer(make_writer, [{"a": 1}, "plain"])
    assert column_type == "string"
    assert json.loads(values[0]) == {"a": 1}
    assert values[1] == "plain"


def test_infer_all_null_is_string(make_writer):
    assert infer(make_writer, [None, None]) == ("string", [None, None])


def test_infer_plain_string_keeps_date_looking_text_as_is(make_writer):
    """Once a column holds free text it is string; later date-like text is not rewritten."""
    column_type, values = infer(make_writer, ["hello", "2026-09-01 10:15"])
    assert column_type == "string"
    assert values == ["hello", "2026-09-01 10:15"]


def test_column_order_is_declared_then_appearance(make_writer):
    """Spec 8.6: declared headers first, then in order of appearance."""
    writer = make_writer(columns=["b", "a"])
    writer.append({"z": 1, "a": 2})
    writer.append({"y": 3, "b": 4})
    table = writer.finish()
    assert table.columns == ["b", "a", "z", "y"]
    assert table.rows == [{"b": None, "a": 2, "z": 1, "y": None}, {"b": 4, "a": None, "z": None, "y": 3}]


def test_duplicate_column_names_are_renamed_with_warning(make_writer):
    """Spec 8.6: a header name is unique."""
    writer = make_writer(columns=["id", "id", "name", "id"])
    writer.append([1, 2, "x", 3])
    table = writer.finish()
    names = table.columns
    assert len(set(names)) == 4
    assert names[0] == "id"
    assert names[2] == "name"
    assert all(n.startswith("id") for n in (names[1], names[3]))
    assert table.rows == [{names[0]: 1, names[1]: 2, "name": "x", names[3]: 3}]
    renamed = [w for w in table.warnings if "'id'" in w]
    assert len(renamed) == 2
    assert any(names[1] in w for w in renamed)
    assert any(names[3] in w for w in renamed)


def test_dict_rows_with_late_keys_give_earlier_rows_null(make_writer):
    writer = make_writer()
    writer.append({"a": 1})
    writer.append({"a": 2, "b": "x"})
    writer.append({"b": "y"})
    table = writer.finish()
    assert table.columns == ["a", "b"]
    assert table.rows == [{"a": 1, "b": None}, {"a": 2, "b": "x"}, {"a": None, "b": "y"}]
    assert table.head == table.rows


def test_dict_rows_with_non_string_keys_use_their_text(make_writer):
    writer = make_writer()
    writer.append({1: "a"})
    writer.append({"1": "b"})
    table = writer.finish()
    assert table.columns == ["1"]
    assert column(table, "1") == ["a", "b"]


# -- exact numbers ----------------------------------------------------------------------------

BIG_INTS = [2**63 - 1, -(2**63), 2**64, 2**100 + 7, -(10**30) - 1]


def test_big_integers_stay_exact_inline(make_writer):
    """Spec 8.6 (core rule): 64-bit and larger integers stay exact JSON integers."""
    writer = make_writer()
    for number in BIG_INTS:
        writer.append({"n": number})
    table = writer.finish()
    assert types_of(table) == {"n": "integer"}
    assert table.rows is not None
    assert [r["n"] for r in table.rows] == BIG_INTS
    assert all(type(r["n"]) is int for r in table.rows)
    assert [r["n"] for r in json.loads(jsonio.dumps(table.rows))] == BIG_INTS  # exact once serialized


def test_big_integers_stay_exact_in_file(make_writer):
    table = spilled(make_writer, [{"n": n} for n in BIG_INTS])
    assert [r["n"] for r in load_exact(table.path)] == BIG_INTS
    assert types_of(table) == {"n": "integer"}


def test_lossless_decimals_stay_inline_as_int_and_float(make_writer):
    writer = make_writer()
    writer.extend([{"d": Decimal("10")}, {"d": Decimal("0.0421")}, {"d": Decimal("-2.5")}])
    table = writer.finish()
    assert table.path is None
    assert table.rows == [{"d": 10}, {"d": 0.0421}, {"d": -2.5}]
    assert [type(r["d"]) for r in table.rows] == [int, float, float]
    assert types_of(table) == {"d": "number"}


def test_lossy_decimal_forces_a_file_that_keeps_the_digits(make_writer, table_files):
    """Spec 8.6 (core rule): a decimal a float would change is delivered in a file with its exact digits."""
    writer = make_writer()
    writer.extend([{"id": 1, "d": Decimal("1.5")}, {"id": 2, "d": Decimal(LOSSY)}])
    table = writer.finish()
    assert table.rows is None
    assert table.path is not None
    assert table.path.parent == table_files.directory
    assert LOSSY in table.path.read_text(encoding="utf-8")
    assert load_exact(table.path) == [{"id": 1, "d": Decimal("1.5")}, {"id": 2, "d": Decimal(LOSSY)}]
    assert table.row_count == 2
    assert types_of(table) == {"id": "integer", "d": "number"}
    assert stat.S_IMODE(table.path.stat().st_mode) == 0o600


def test_lossy_decimal_in_declared_number_column_forces_a_file(make_writer):
    writer = make_writer(columns=[{"name": "amount", "type": "number"}])
    writer.append(["12345678901234567890.123456789"])
    table = writer.finish()
    assert table.rows is None
    assert "12345678901234567890.123456789" in table.path.read_text(encoding="utf-8")


# -- temporal values ----------------------------------------------------------------------------


def test_naive_datetime_stays_naive_and_aware_becomes_utc_z(make_writer):
    writer = make_writer()
    writer.append({"naive": dt.datetime(2026, 9, 1, 10, 15), "aware": dt.datetime(2026, 9, 1, 10, 15, tzinfo=CET)})
    table = writer.finish()
    assert table.rows == [{"naive": "2026-09-01T10:15:00", "aware": "2026-09-01T08:15:00Z"}]
    assert types_of(table) == {"naive": "datetime", "aware": "datetime"}


# -- binary and non-finite values ------------------------------------------------------------------


def test_bytes_become_base64_string_with_warning(make_writer):
    writer = make_writer()
    writer.append({"blob": b"\x00\x01\xfe", "ok": 1})
    writer.append({"blob": bytearray(b"hi"), "ok": 2})
    table = writer.finish()
    assert types_of(table)["blob"] == "string"
    assert column(table, "blob") == [
        base64.b64encode(b"\x00\x01\xfe").decode("ascii"),
        base64.b64encode(b"hi").decode("ascii"),
    ]
    blob_warnings = [w for w in table.warnings if "'blob'" in w]
    assert len(blob_warnings) == 1
    assert "base64" in blob_warnings[0]
    assert not any("'ok'" in w for w in table.warnings)


def test_nan_becomes_null_with_warning(make_writer):
    writer = make_writer()
    writer.extend([{"x": 1.5}, {"x": float("nan")}, {"x": float("inf")}, {"x": 2}])
    table = writer.finish()
    assert column(table, "x") == [1.5, None, None, 2]
    assert types_of(table) == {"x": "number"}  # the NaN does not change the inferred type
    assert len([w for w in table.warnings if "'x'" in w]) == 1


def test_nan_in_declared_number_column_is_null_and_keeps_the_type(make_writer):
    """Spec 8.6: values take the declared type and any cell may be null; a NaN is a null, not a type clash."""
    writer = make_writer(columns=[{"name": "x", "type": "number"}])
    writer.extend([[1.5], [float("nan")], [2]])
    table = writer.finish()
    assert types_of(table) == {"x": "number"}
    assert column(table, "x") == [1.5, None, 2]
    assert any("'x'" in w and "NaN" in w for w in table.warnings)


# -- spilling to a file (spec 8.5) ------------------------------------------------------------------


def test_small_table_stays_inline(make_writer):
    writer = make_writer(inline_max_bytes=10_000)
    writer.extend({"i": i, "s": "x"} for i in range(5))
    table = writer.finish()
    assert table.path is None
    assert table.rows == [{"i": i, "s": "x"} for i in range(5)]
    assert table.row_count == 5


def test_table_of_exactly_inline_max_bytes_stays_inline(make_writer):
    """Spec 8.5: inline up to inline_max_bytes of serialized UTF-8."""
    rows = [{"i": i, "s": "value"} for i in range(20)]
    size = len(jsonio.dumps(rows))
    writer = make_writer(inline_max_bytes=size)
    writer.extend(rows)
    table = writer.finish()
    assert table.path is None
    assert table.rows == rows


def test_table_one_byte_over_inline_max_bytes_goes_to_file(make_writer):
    rows = [{"i": i, "s": "value"} for i in range(20)]
    size = len(jsonio.dumps(rows))
    writer = make_writer(inline_max_bytes=size - 1)
    writer.extend(rows)
    table = writer.finish()
    assert table.rows is None
    assert load_exact(table.path) == rows


def test_spilled_file_is_json_array_with_header_keys_in_order(make_writer, table_files):
    """Spec 8.5: table_uri holds a JSON array of objects with exactly the header keys."""
    rows = [{"id": i, "name": f"row {i}", "score": i / 4, "when": dt.date(2026, 1, 1 + i % 28)} for i in range(300)]
    writer = make_writer(inline_max_bytes=2_000)
    writer.extend(rows)
    table = writer.finish()
    assert table.rows is None
    assert table.path.parent == table_files.directory
    assert table.path.suffix == ".json"
    data = load_exact(table.path)
    assert isinstance(data, list)
    assert len(data) == table.row_count == 300
    header_keys = table.columns
    assert all(list(row) == header_keys for row in data)
    assert [row["id"] for row in data] == list(range(300))
    assert data[7] == {"id": 7, "name": "row 7", "score": Decimal("1.75"), "when": "2026-01-08"}
    assert types_of(table) == {"id": "integer", "name": "string", "score": "number", "when": "date"}


def test_spilled_file_has_owner_only_permissions(make_writer):
    table = spilled(make_writer, [{"a": 1}, {"a": 2}])
    assert stat.S_IMODE(table.path.stat().st_mode) == 0o600


def test_spilled_table_iter_rows_reads_the_file(make_writer):
    rows = [{"a": i} for i in range(10)]
    table = spilled(make_writer, rows)
    assert list(table.iter_rows()) == rows
    assert read_table_file(table.path) == rows


def test_late_key_after_spill_gives_earlier_file_rows_null(make_writer):
    writer = make_writer(inline_max_bytes=50)
    writer.extend({"a": i} for i in range(10))
    writer.append({"a": 10, "b": "late"})
    table = writer.finish()
    data = load_exact(table.path)
    assert table.columns == ["a", "b"]
    assert all(list(row) == ["a", "b"] for row in data)
    assert [row["b"] for row in data] == [None] * 10 + ["late"]


def test_late_key_before_spill_gives_earlier_file_rows_null(make_writer):
    """Spec 8.5: every object in the file has exactly the header keys, whenever the key first appeared."""
    writer = make_writer(inline_max_bytes=200)
    writer.append({"a": 0})
    writer.append({"a": 1, "b": 1})
    writer.extend({"a": i, "b": i} for i in range(2, 40))
    table = writer.finish()
    assert table.rows is None
    data = load_exact(table.path)
    assert len(data) == 40
    assert all(list(row) == ["a", "b"] for row in data)
    assert data[0] == {"a": 0, "b": None}


def test_type_change_after_spill_rewrites_the_file(make_writer):
    """Spec 8.6: integer then text is string; rows already in the file are rewritten as text."""
    writer = make_writer(inline_max_bytes=100)
    writer.extend({"i": i, "v": i} for i in range(30))
    writer.append({"i": 30, "v": "text"})
    table = writer.finish()
    assert types_of(table) == {"i": "integer", "v": "string"}
    data = load_exact(table.path)
    assert [row["v"] for row in data] == [str(i) for i in range(30)] + ["text"]
    assert [row["i"] for row in data] == list(range(31))
    assert stat.S_IMODE(table.path.stat().st_mode) == 0o600


def test_date_then_datetime_after_spill_rewrites_dates(make_writer):
    writer = make_writer(inline_max_bytes=100)
    writer.extend({"d": dt.date(2026, 9, 1 + i)} for i in range(20))
    writer.append({"d": dt.datetime(2026, 9, 30, 12, 0)})
    table = writer.finish()
    assert types_of(table) == {"d": "datetime"}
    values = [row["d"] for row in load_exact(table.path)]
    assert values[:20] == [f"2026-09-{1 + i:02d}T00:00:00" for i in range(20)]
    assert values[20] == "2026-09-30T12:00:00"


def test_rewrite_after_spill_keeps_big_integers_and_decimals_exact(make_writer):
    """Spec 8.6 (core rule): exact integers and decimals survive the post-pass rewrite."""
    big = 2**70 + 3
    writer = make_writer(inline_max_bytes=100)
    writer.extend({"big": big + i, "dec": Decimal(LOSSY), "v": i} for i in range(10))
    writer.append({"big": 1, "dec": Decimal("1"), "v": "now text"})  # forces a rewrite of column v
    table = writer.finish()
    data = load_exact(table.path)
    assert [row["big"] for row in data[:10]] == [big + i for i in range(10)]
    assert all(row["dec"] == Decimal(LOSSY) for row in data[:10])
    assert LOSSY in table.path.read_text(encoding="utf-8")


def test_model_samples_get_the_final_types_after_a_type_change(make_writer):
    writer = make_writer(head=3)
    writer.extend([{"v": 1}, {"v": True}, {"v": None}])
    table = writer.finish()
    assert table.head == [{"v": "1"}, {"v": "true"}, {"v": None}]


# -- samples for the model (spec 8.2 sampling) ---------------------------------------------------


def test_head_keeps_the_first_rows(make_writer):
    writer = make_writer(head=5)
    writer.extend({"i": i} for i in range(100))
    table = writer.finish()
    assert table.head == [{"i": i} for i in range(5)]
    assert table.model_rows(3, "head") == [{"i": 0}, {"i": 1}, {"i": 2}]
    assert table.model_rows(5, "spread") == table.head  # no spread samples kept


def test_model_rows_zero_limit_is_empty(make_writer):
    """Spec 8.2: with row_limit 0, rows is empty."""
    writer = make_writer(head=5, spread=5)
    writer.extend({"i": i} for i in range(50))
    table = writer.finish()
    assert table.model_rows(0, "head") == []
    assert table.model_rows(0, "spread") == []


def test_model_rows_all_rows_when_table_fits(make_writer):
    writer = make_writer(head=10, spread=10)
    writer.extend({"i": i} for i in range(7))
    table = writer.finish()
    assert table.model_rows(10, "spread") == [{"i": i} for i in range(7)]
    assert table.model_rows(7, "head") == [{"i": i} for i in range(7)]


def test_spread_covers_first_and_last_row_evenly(make_writer):
    total, wanted = 10_000, 25
    writer = make_writer(head=wanted, spread=wanted, inline_max_bytes=1_000)
    writer.extend({"i": i} for i in range(total))
    table = writer.finish()
    rows = table.model_rows(wanted, "spread")
    picked = [row["i"] for row in rows]
    assert len(picked) == wanted
    assert picked[0] == 0
    assert picked[-1] == total - 1
    assert picked == sorted(set(picked))
    ideal = (total - 1) / (wanted - 1)
    gaps = [b - a for a, b in itertools.pairwise(picked)]
    assert all(ideal / 2 <= gap <= ideal * 2 for gap in gaps), gaps
    assert table.model_rows(wanted, "head") == [{"i": i} for i in range(wanted)]


@pytest.mark.parametrize(("total", "wanted"), [(26, 25), (101, 10), (1_000, 7), (5_000, 2)])
def test_spread_other_sizes_include_ends(make_writer, total, wanted):
    writer = make_writer(head=wanted, spread=wanted)
    writer.extend({"i": i} for i in range(total))
    picked = [row["i"] for row in writer.finish().model_rows(wanted, "spread")]
    assert len(picked) == wanted
    assert picked[0] == 0
    assert picked[-1] == total - 1
    assert picked == sorted(set(picked))


def test_samples_have_exactly_the_header_keys(make_writer):
    writer = make_writer(head=5, spread=5)
    writer.append({"a": 1})
    writer.extend({"a": i, "b": i} for i in range(1, 40))
    table = writer.finish()
    for row in table.head + table.spread:
        assert list(row) == ["a", "b"]
    assert table.head[0] == {"a": 1, "b": None}


# -- lifecycle ---------------------------------------------------------------------------------


def test_discard_removes_the_spilled_file(make_writer, table_files):
    writer = make_writer(inline_max_bytes=10)
    writer.extend({"i": i} for i in range(10))
    files_before = list(table_files.directory.iterdir())
    assert len(files_before) == 1
    writer.discard()
    assert list(table_files.directory.iterdir()) == []
    with pytest.raises(RuntimeError):
        writer.finish()


def test_discard_without_file_is_harmless(make_writer):
    writer = make_writer()
    writer.append({"a": 1})
    writer.discard()
    writer.discard()


def test_append_after_cancel_raises_call_cancelled(make_writer):
    cancelled = threading.Event()
    writer = make_writer(cancelled=cancelled)
    writer.append({"a": 1})
    cancelled.set()
    with pytest.raises(CallCancelled):
        writer.append({"a": 2})
    with pytest.raises(CallCancelled):
        writer.extend([{"a": 3}])


def test_finish_twice_raises(make_writer):
    writer = make_writer()
    writer.append({"a": 1})
    writer.finish()
    with pytest.raises(RuntimeError):
        writer.finish()


def test_empty_table(make_writer):
    table = make_writer(columns=[{"name": "a", "type": "integer"}, "b"]).finish()
    assert table.row_count == 0
    assert table.rows == []
    assert table.head == []
    assert table.headers == [{"name": "a", "type": "integer"}, {"name": "b", "type": "string"}]
    assert table.model_rows(25, "spread") == []


def test_metadata_is_passed_to_table_data(make_writer):
    view = ModelView(fields=("en", "dl"), max_value_chars=40, max_rows=3)
    writer = make_writer(
        "ga4_hits", title="GA4 hits", description="Hits.", dates=["2026-10-01"], model_view=view, primary=True
    )
    writer.append({"en": "page_view"})
    table = writer.finish()
    assert table.name == "ga4_hits"
    assert table.title == "GA4 hits"
    assert table.description == "Hits."
    assert table.dates == ["2026-10-01"]
    assert table.model_view is view
    assert table.primary is True


def test_model_view_as_json():
    """Spec 8.5 multi-table: model_view carries fields, max_value_chars and the optional max_rows."""
    assert ModelView(fields=("a", "b")).as_json() == {"fields": ["a", "b"], "max_value_chars": 80}
    assert ModelView(fields=("a",), max_value_chars=10, max_rows=0).as_json() == {
        "fields": ["a"],
        "max_value_chars": 10,
        "max_rows": 0,
    }


def test_read_table_file_rejects_non_array(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"a": 1}')
    with pytest.raises(ValueError):
        read_table_file(path)


# -- the extraction cap (max_rows) ------------------------------------------------------------


def _loop(writer, rows, batch):
    """The engines' row loop, over a list standing in for a cursor; returns how many rows it read."""
    cursor = iter(rows)
    read = 0
    while (size := writer.fetch_size(batch)) and (chunk := list(itertools.islice(cursor, size))):
        read += len(chunk)
        writer.extend(chunk)
    return read


@pytest.mark.parametrize("batch", [1, 3, 7, 100])
def test_max_rows_keeps_the_first_rows_reads_one_past_the_cap_and_warns(make_writer, batch):
    writer = make_writer(columns=["n"], max_rows=10)
    read = _loop(writer, [(i,) for i in range(1000)], batch)
    assert read == 11  # one row past the cap tells "more than max_rows" from "exactly max_rows"
    assert writer.capped and writer.fetch_size(batch) == 0
    table = writer.finish()
    assert column(table, "n") == list(range(10)) and table.row_count == 10
    assert table.capped_at == 10
    assert table.warnings[0] == (
        "The result has more than max_rows (10) rows; the extraction stopped there. Add filters or aggregate, "
        "or ask the user to raise max_rows."
    )


@pytest.mark.parametrize("total", [9, 10])
def test_a_result_that_fits_max_rows_is_not_capped(make_writer, total):
    writer = make_writer(columns=["n"], max_rows=10)
    assert _loop(writer, [(i,) for i in range(total)], 4) == total
    assert not writer.capped
    table = writer.finish()
    assert table.row_count == total and table.capped_at is None
    assert not any("max_rows" in w for w in table.warnings)


def test_max_rows_caps_append_mappings_and_generators(make_writer):
    writer = make_writer(max_rows=3)
    writer.append({"a": 1})
    writer.extend({"a": i} for i in range(2, 10))  # a generator is cut lazily, not read to the end
    assert writer.capped and writer.row_count == 3
    writer.append({"a": 99})
    table = writer.finish()
    assert column(table, "a") == [1, 2, 3]


def test_max_rows_warning_names_the_result_size_the_source_reported(make_writer):
    writer = make_writer(columns=["n"], max_rows=2)
    writer.extend([(1,), (2,), (3,)])
    table = writer.finish(result_rows=1234)
    assert table.warnings[0].startswith("The result has 1234 rows, more than max_rows (2);")


def _sizes(writer, rows, batch):
    """The engines' row loop over a list, returning the size of every fetch it asked for."""
    cursor = iter(rows)
    asked = []
    while (size := writer.fetch_size(batch)) and (chunk := list(itertools.islice(cursor, size))):
        asked.append(size)
        writer.extend(chunk)
    return asked


def test_without_a_cap_nothing_is_cut_and_fetches_grow_from_one_row_to_the_batch(make_writer):
    writer = make_writer(columns=["n"])
    asked = _sizes(writer, [(i,) for i in range(5000)], 500)
    # One row first, then at most eight times the rows measured so far, up to the engine's batch.
    assert asked[:4] == [1, 8, 72, 500] and set(asked[3:]) == {500}
    assert not writer.capped and writer.finish().row_count == 5000


def test_wide_rows_shrink_the_fetches_to_about_fetch_bytes(make_writer, monkeypatch):
    monkeypatch.setattr(tables, "FETCH_BYTES", 64 * 1024)
    writer = make_writer(columns=["id", "body"])
    wide = [(i, "x" * 10_000) for i in range(300)]  # about 10 KB of JSON a row
    asked = _sizes(writer, wide, 5000)
    assert asked[0] == 1  # nothing measured yet: one row
    assert max(asked) * 10_000 <= 64 * 1024  # never more than FETCH_BYTES of these rows in one fetch
    assert asked[-2] == 64 * 1024 // 10_020  # the steady size: FETCH_BYTES over the measured row width
    table = writer.finish()
    assert table.row_count == 300 and table.capped_by is None


def test_a_wider_row_shrinks_the_next_fetch(make_writer, monkeypatch):
    monkeypatch.setattr(tables, "FETCH_BYTES", 64 * 1024)
    writer = make_writer(columns=["body"])
    writer.extend([("n",)] * 100)
    assert writer.fetch_size(5000) == 800  # narrow rows so far: eight times the rows measured
    writer.extend([("y" * 32_000,)])
    assert writer.fetch_size(5000) <= 2  # the widest rows seen decide from now on


def test_max_bytes_stops_at_the_first_row_that_reaches_it_and_warns(make_writer):
    writer = make_writer(columns=["n", "text"], max_bytes=5_000)
    rows = [(i, "z" * 80) for i in range(1_000)]  # about 100 bytes of JSON a row
    asked = _sizes(writer, rows, 5000)
    table = writer.finish()
    assert writer.capped and table.capped_by == "max_result_bytes" and table.capped_at == 5_000
    assert 5_000 <= writer.bytes_written < 5_000 + 2 * 110  # it stops about there, not a batch later
    assert [r["n"] for r in table.iter_rows()] == list(range(table.row_count))  # the first rows, in order
    assert sum(asked) == table.row_count + 1  # one row past the cap was read, to know there was more
    assert table.warnings[0] == (
        f"The result passed max_result_bytes (5,000 bytes of JSON) after {table.row_count:,} rows; the extraction "
        "stopped there. Narrow the query: select fewer or shorter columns, add filters, or aggregate; or ask the "
        "user to raise max_result_bytes."
    )


def test_a_result_that_ends_at_max_bytes_is_not_capped(make_writer):
    probe = make_writer(columns=["n"])
    probe.extend([(i,) for i in range(100)])
    size = probe.bytes_written
    writer = make_writer(columns=["n"], max_bytes=size)
    _sizes(writer, [(i,) for i in range(100)], 7)
    table = writer.finish()
    assert writer.bytes_written == size and not writer.capped
    assert table.row_count == 100 and table.capped_by is None and not table.warnings


def test_max_bytes_cuts_a_large_page_part_way(make_writer):
    writer = make_writer(columns=["n", "text"], max_bytes=1_000)
    writer.extend([(i, "w" * 500) for i in range(10_000)])  # one API page, not asked for by size
    assert writer.capped and writer.fetch_size(100) == 0
    assert writer.finish().row_count < 10_000


# -- the batched path: sampling, ISO texts, converters, file lines --------------------------------


def _reference_spread(total: int, budget: int) -> list[int]:
    """The spread candidates row by row: every index that is a multiple of the stride, the stride
    doubling (and the candidates halving) whenever they pass twice the budget."""
    picked: list[int] = []
    stride = 1
    for index in range(total):
        if index % stride == 0:
            picked.append(index)
            if len(picked) > 2 * budget:
                picked = picked[::2]
                stride *= 2
    return picked


@pytest.mark.parametrize(("total", "budget", "chunk"), [(10_000, 25, 2000), (7_777, 5, 333), (4_100, 7, 1)])
def test_spread_samples_are_the_same_however_the_rows_arrive(make_writer, total, budget, chunk):
    writer = make_writer(columns=["i"], head=1, spread=budget)
    rows = [(i,) for i in range(total)]
    for start in range(0, total, chunk):
        writer.extend(rows[start : start + chunk])
    table = writer.finish()
    expected = _reference_spread(total, budget)
    if expected[-1] != total - 1:
        expected.append(total - 1)  # the last row is always a candidate
    assert [row["i"] for row in table.spread] == expected


def _text_column(make_writer, texts, chunk=2000):
    writer = make_writer(columns=["t"])
    rows = [(t,) for t in texts]
    for start in range(0, len(rows), chunk):
        writer.extend(rows[start : start + chunk])
    return writer.finish()


@pytest.mark.parametrize("chunk", [1, 7, 2000])
def test_iso_texts_checked_a_batch_at_a_time_type_the_column_as_row_by_row(make_writer, chunk):
    days = [f"2024-{m:02d}-{d:02d}" for m in range(1, 13) for d in range(1, 29)]
    dates = _text_column(make_writer, [*days, None, *days], chunk)
    assert types_of(dates) == {"t": "date"}
    assert column(dates, "t") == [*days, None, *days]
    spaced = [f"{day} 12:{i % 60:02d}:00" for i, day in enumerate(days)]
    times = _text_column(make_writer, [spaced[0].replace(" ", "T"), *spaced], chunk)
    assert types_of(times) == {"t": "datetime"}
    assert column(times, "t") == [t.replace(" ", "T") for t in [spaced[0], *spaced]]


@pytest.mark.parametrize(
    "odd",
    ["2021-02-30", "2020-W01-1", "2020-01-01x", "20200101", "2020-01-01 25:00:00", "2020/01/01", "first"],
)
def test_one_text_that_is_no_iso_date_makes_the_column_string(make_writer, odd):
    days = [f"2024-01-{d:02d}" for d in range(1, 29)] * 100
    table = _text_column(make_writer, [*days[:1500], odd, *days[1500:]])
    assert types_of(table) == {"t": "string"}
    assert column(table, "t")[1500] == odd


def test_row_converters_are_compiled_once_per_column_plan(make_writer):
    from shared.tables import _batch_converter

    columns = [{"name": "n", "type": "integer"}, "d", {"name": "s", "type": "string"}]
    first = make_writer(columns=columns)
    first.extend([(1, "2024-01-01", "a"), (2, "2024-01-02", "b")])
    compiled = _batch_converter.cache_info().misses
    second = make_writer(columns=columns)
    second.extend([(3, "2024-01-03", "c")])
    assert _batch_converter.cache_info().misses == compiled  # the second table compiled nothing
    assert column(second.finish(), "d") == ["2024-01-03"]


def test_spilled_file_holds_lines_of_rows_that_parse_one_by_one(make_writer):
    """The file is one JSON array; each line holds up to ROWS_PER_LINE rows, so the rewrite after a
    late type change can stream it line by line."""
    writer = make_writer(columns=["i", "s"], inline_max_bytes=100)
    writer.extend([(i, f"row {i}") for i in range(1000)])
    table = writer.finish()
    assert table.path is not None
    text = table.path.read_bytes()
    assert json.loads(text) == [{"i": i, "s": f"row {i}"} for i in range(1000)]
    lines = [line.strip().rstrip(b",") for line in text.splitlines()]
    assert lines[0] == b"[" and lines[-1] == b"]"
    parsed = [jsonio.loads_line(line) for line in lines[1:-1]]
    assert all(1 <= len(rows) <= jsonio.ROWS_PER_LINE for rows in parsed)
    assert [row for rows in parsed for row in rows] == [{"i": i, "s": f"row {i}"} for i in range(1000)]


@pytest.mark.parametrize("inline_max_bytes", [10**7, 1])
def test_declared_dates_and_times_from_a_driver_are_iso_text_inline_in_samples_and_in_the_file(
    make_writer, inline_max_bytes
):
    columns = [{"name": "d", "type": "date"}, {"name": "t", "type": "datetime"}]
    writer = make_writer(columns=columns, head=3, spread=3, inline_max_bytes=inline_max_bytes)
    rows = [(dt.date(999 + i, 1, 2), dt.datetime(2024, 5, 6, 7, 8, 9, (i % 1000) * 1000)) for i in range(3000)]
    writer.extend(rows)
    table = writer.finish()
    expected = [{"d": d.isoformat(), "t": t.isoformat()} for d, t in rows]
    assert list(table.iter_rows()) == expected
    assert table.head == expected[:3]
    assert all(row in expected for row in table.spread) and table.spread[-1] == expected[-1]
    if table.path is not None:
        assert json.loads(table.path.read_bytes()) == expected


def test_declared_datetime_column_that_fails_later_keeps_the_iso_text_of_earlier_values(make_writer):
    writer = make_writer(columns=[{"name": "t", "type": "datetime"}], inline_max_bytes=1)
    writer.extend([(dt.datetime(2024, 5, 6, 7, 8, 9),), (dt.datetime(2024, 5, 7),)])
    writer.extend([("not a time",)])
    table = writer.finish()
    assert types_of(table) == {"t": "string"}
    assert column(table, "t") == ["2024-05-06T07:08:09", "2024-05-07T00:00:00", "not a time"]
    assert table.head[0] == {"t": "2024-05-06T07:08:09"}


# -- progress --------------------------------------------------------------------------------
@pytest.mark.parametrize("inline_max_bytes", [1, 10**9], ids=["spilled", "inline"])
def test_the_writer_tells_its_listener_each_time_rows_are_stored(make_writer, inline_max_bytes: int) -> None:
    """What progress reporting reads: one call per stored batch, then one final call; the JSON bytes so far."""
    heard: list[tuple[int, int, bool]] = []
    writer = make_writer(
        inline_max_bytes=inline_max_bytes,
        columns=[{"name": "n", "type": "integer"}],
        on_rows=lambda w, final: heard.append((w.row_count, w.bytes_written, final)),
    )
    writer.extend([(n,) for n in range(5000)])  # the fast path: batches of 2000
    writer.append({"n": 5000})  # the row-by-row path
    table = writer.finish()
    assert [(rows, final) for rows, _, final in heard] == [(2000, False), (4000, False), (5000, False), (5001, False),
                                                           (5001, True)]  # fmt: skip
    sizes = [size for _, size, _ in heard]
    compact = len(json.dumps(list(table.iter_rows()), separators=(",", ":")))
    assert sizes == sorted(sizes) and sizes[-1] == pytest.approx(compact, rel=0.15)  # one newline a row aside


def test_a_writer_without_a_listener_reports_nothing_and_still_counts_bytes(make_writer) -> None:
    writer = make_writer()
    writer.extend({"n": n} for n in range(3))
    assert writer.bytes_written > 0 and writer.expected_rows is None and writer.pages is None
    writer.finish()
