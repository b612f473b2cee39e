"""The acp-data store (spec 16.6): ids, the CSV format, hand-dropped CSVs, refs, acp/read_table, artifacts."""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path
from typing import Any, cast

import pytest

from bridge import datasets as datasets_module
from bridge.datasets import MAX_ID_LENGTH, SQL_KEYWORDS, Dataset, DatasetStore, validate_dataset_id
from shared.errors import InvalidArguments, TableNotFound
from shared.host import TableFile
from shared.protocol import ColumnType, Header

NOW = dt.datetime(2026, 10, 12, 10, 16, 30)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


@pytest.fixture
def store(project: Path) -> DatasetStore:
    return DatasetStore(project / "acp-data")


@pytest.fixture
def table_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the resolver's table files go (the system temporary folder, here a private one)."""
    folder = tmp_path / "system-tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def headers(**types: str) -> list[Header]:
    return [{"name": name, "type": cast(ColumnType, column_type)} for name, column_type in types.items()]


def save(store: DatasetStore, dataset_id: str, columns: list[Header], rows: Iterable[Any], **kwargs: Any) -> Dataset:
    with store.create(dataset_id, columns, {"origin": "acp"}, **kwargs) as writer:
        writer.add(rows)
    return writer.dataset


def drop(store: DatasetStore, name: str, text: str) -> Path:
    """A CSV a person puts into acp-data by hand."""
    store.root.mkdir(parents=True, exist_ok=True)
    path = store.root / name
    path.write_bytes(text.encode("utf-8"))
    return path


def read_table(store: DatasetStore, ref: str) -> tuple[TableFile, list[dict[str, Any]]]:
    import anyio

    async def ask() -> Any:
        return await store.resolver()(ref, call_id="call-1", conversation=None)

    table = anyio.run(ask)
    assert isinstance(table, TableFile)
    return table, json.loads(table.path.read_bytes())


def files_in(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir()) if folder.exists() else []


# -- ids ------------------------------------------------------------------------------------------
def test_new_id_is_source_tool_table_and_local_time(store: DatasetStore) -> None:
    assert store.new_id("ventas", "execute_sql", now=NOW) == "ventas_execute_sql_20261012_101630"
    assert store.new_id("ga4", "run_report", "by_day", now=NOW) == "ga4_run_report_by_day_20261012_101630"


def test_new_id_sanitizes_every_character_outside_the_rule(store: DatasetStore) -> None:
    assert (
        store.new_id("Ventas Web", "execute-sql", "Hoja 1", now=NOW) == "ventas_web_execute_sql_hoja_1_20261012_101630"
    )
    assert store.new_id("café", "x", now=NOW) == "caf__x_20261012_101630"
    assert store.new_id("2026", "tool", now=NOW) == "t_2026_tool_20261012_101630"
    assert store.new_id("_src", "tool", now=NOW) == "t__src_tool_20261012_101630"


def test_new_id_takes_an_aware_now_in_local_time(store: DatasetStore) -> None:
    aware = dt.datetime(2026, 10, 12, 8, 16, 30, tzinfo=dt.UTC)
    local = aware.astimezone()
    assert store.new_id("s", "t", now=aware) == f"s_t_{local:%Y%m%d_%H%M%S}"


def test_new_id_clashes_get_numbered_suffixes(store: DatasetStore) -> None:
    first = store.new_id("s", "t", now=NOW)
    save(store, first, headers(a="integer"), [[1]])
    drop(store, "s_t_20261012_101630_2.csv", "a\r\n1\r\n")  # a hand-dropped CSV takes its id too
    # The third is only reserved by new_id (its extraction has not written yet): still taken.
    assert store.new_id("s", "t", now=NOW) == "s_t_20261012_101630_3"
    assert store.new_id("s", "t", now=NOW) == "s_t_20261012_101630_4"


def test_new_id_of_long_names_stays_a_valid_id(store: DatasetStore) -> None:
    dataset_id = store.new_id("s" * 300, "tool", "table", now=NOW)
    assert len(dataset_id) <= MAX_ID_LENGTH
    assert dataset_id.endswith("_20261012_101630")
    assert validate_dataset_id(dataset_id) == dataset_id


@pytest.mark.parametrize("name", ["select", "order", "values", "table", "pivot", "glob", "current_date"])
def test_keywords_are_refused_as_ids(name: str) -> None:
    assert name in SQL_KEYWORDS
    with pytest.raises(InvalidArguments, match="SQL keyword") as refusal:
        validate_dataset_id(name)
    assert f"Try '{name}_data'" in refusal.value.message


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [("Sales", "sales"), ("monthly totals", "monthly_totals"), ("2026_sales", "t_2026_sales"), ("", "t_")],
)
def test_invalid_ids_are_refused_with_the_rule_and_a_suggestion(name: str, suggestion: str) -> None:
    with pytest.raises(InvalidArguments, match="lower case letters, digits and _") as refusal:
        validate_dataset_id(name)
    assert f"Try '{suggestion}'" in refusal.value.message


def test_valid_ids_pass_unchanged(store: DatasetStore) -> None:
    assert validate_dataset_id("monthly_totals_2026") == "monthly_totals_2026"
    assert validate_dataset_id("selected") == "selected"  # a keyword inside a name is fine
    with pytest.raises(InvalidArguments):
        validate_dataset_id("a" * (MAX_ID_LENGTH + 1))
    with pytest.raises(InvalidArguments, match="not a valid dataset id"):
        store.create("Monthly", headers(a="integer"), {})


# -- the CSV format ---------------------------------------------------------------------------------
def test_csv_is_rfc4180_utf8_with_crlf_and_every_value_rule(store: DatasetStore) -> None:
    columns = headers(
        text="string", count="integer", amount="number", flag="boolean", day="date", at="datetime", extra="json"
    )
    rows = [
        ["plain", 1, 2.5, True, dt.date(2026, 7, 1), dt.datetime(2026, 7, 1, 9, 30), {"k": [1, "ü"]}],
        ['say "hi", then\nleave', -7, Decimal("1.50"), False, "2026-07-02", "2026-07-02T10:00:00", [1, 2]],
        ["ñandú 🦤", 2**62, 3.0, None, None, dt.datetime(2026, 7, 1, 9, 30, tzinfo=dt.UTC), None],
        ["", 0, float("nan"), None, None, None, {}],
        [None, None, Decimal("1E+2"), None, None, None, None],
        ["x", None, 1e20, None, None, None, None],
    ]
    dataset = save(store, "values_check", columns, rows)
    raw = dataset.csv_path.read_bytes()
    assert not raw.startswith(b"\xef\xbb\xbf")
    assert raw.decode("utf-8") == (
        "text,count,amount,flag,day,at,extra\r\n"
        'plain,1,2.5,true,2026-07-01,2026-07-01T09:30:00,"{""k"":[1,""ü""]}"\r\n'
        '"say ""hi"", then\nleave",-7,1.50,false,2026-07-02,2026-07-02T10:00:00,"[1,2]"\r\n'
        "ñandú 🦤,4611686018427387904,3,,,2026-07-01T09:30:00Z,\r\n"
        ",0,,,,,{}\r\n"
        ",,100,,,,\r\n"
        "x,,1e+20,,,,\r\n"
    )
    assert dataset.row_count == 6
    assert dataset.headers == columns


def test_round_trip_through_the_resolver_gives_typed_values(store: DatasetStore, table_files: Path) -> None:
    columns = headers(text="string", count="integer", amount="number", flag="boolean", day="date", extra="json")
    save(
        store,
        "round_trip",
        columns,
        [
            ['quote " comma , newline \r\n end', 12, 0.1, True, dt.date(2026, 1, 31), {"a": {"b": None}}],
            ["", None, None, False, None, [1, "two"]],
            ["日本語", -3, 7, None, "2026-02-01", "not json"],
        ],
    )
    table, rows = read_table(store, "round_trip")
    assert table.remove_after_call
    assert table.path.parent == table_files  # never inside acp-data
    assert table.headers == columns and table.row_count == 3
    assert rows == [
        {
            "text": 'quote " comma , newline \r\n end',
            "count": 12,
            "amount": 0.1,
            "flag": True,
            "day": "2026-01-31",
            "extra": {"a": {"b": None}},
        },
        # None and the empty string are both an empty cell: both read back as null.
        {"text": None, "count": None, "amount": None, "flag": False, "day": None, "extra": [1, "two"]},
        # A json column's text that is not JSON stays text.
        {"text": "日本語", "count": -3, "amount": 7.0, "flag": None, "day": "2026-02-01", "extra": "not json"},
    ]


def test_a_null_in_a_one_column_dataset_is_still_a_row(store: DatasetStore, table_files: Path) -> None:
    dataset = save(store, "single", headers(n="integer"), [[1], [None], [3]])
    assert dataset.csv_path.read_bytes() == b'n\r\n1\r\n""\r\n3\r\n'  # not a blank line, which readers skip
    table, rows = read_table(store, "single")
    assert table.row_count == 3
    assert rows == [{"n": 1}, {"n": None}, {"n": 3}]


def test_duckdb_reads_the_csv_as_written(store: DatasetStore) -> None:
    import duckdb

    dataset = save(
        store,
        "for_duckdb",
        headers(text="string", n="integer"),
        [['a "quoted", multi\r\nline value', 1], [None, 2], ["ü", None]],
    )
    rows = (
        duckdb.connect()
        .execute(
            f"SELECT * FROM read_csv('{dataset.csv_path}', header = true, columns = {{'text': 'VARCHAR', 'n': 'BIGINT'}})"
        )
        .fetchall()
    )
    assert rows == [('a "quoted", multi\r\nline value', 1), (None, 2), ("ü", None)]


def test_meta_has_the_fields_of_16_6(store: DatasetStore) -> None:
    meta = {"origin": "acp", "source": "ventas", "acp": "databases", "tool": "execute_sql", "dates": ["2026-07-01"]}
    with store.create("ventas_execute_sql_20261012_101630", headers(fecha="date"), meta) as writer:
        writer.add([["2026-07-01"]])
    written = json.loads((store.root / "ventas_execute_sql_20261012_101630.meta.json").read_text("utf-8"))
    assert list(written) == ["id", "origin", "source", "acp", "tool", "dates", "headers", "row_count", "created_at"]
    assert written["id"] == "ventas_execute_sql_20261012_101630"
    assert written["headers"] == [{"name": "fecha", "type": "date"}]
    assert written["row_count"] == 1
    created = dt.datetime.fromisoformat(written["created_at"].replace("Z", "+00:00"))
    assert written["created_at"].endswith("Z") and created.utcoffset() == dt.timedelta(0)
    assert writer.dataset.meta == written
    assert meta == {
        "origin": "acp",
        "source": "ventas",
        "acp": "databases",
        "tool": "execute_sql",
        "dates": ["2026-07-01"],
    }


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ([], "at least one column"),
        ([{"name": "a", "type": "text"}], "use one of string, integer"),
        ([{"name": "", "type": "string"}], "non-empty name"),
        ([{"name": "Total", "type": "integer"}, {"name": "total", "type": "number"}], "'Total' and 'total' clash"),
    ],
)
def test_create_refuses_bad_headers(store: DatasetStore, columns: list[Any], message: str) -> None:
    with pytest.raises(InvalidArguments, match=message):
        store.create("bad_headers", columns, {})
    assert not store.root.exists()


def test_create_refuses_a_meta_json_cannot_hold_before_writing(store: DatasetStore) -> None:
    with pytest.raises(TypeError):
        store.create("bad_meta", headers(a="integer"), {"arguments": {"when": object()}})
    assert not store.root.exists()


# -- writing safely ---------------------------------------------------------------------------------------
def test_an_existing_id_is_refused_without_replace(store: DatasetStore) -> None:
    save(store, "kept", headers(a="integer"), [[1]])
    with pytest.raises(InvalidArguments, match="already exists"):
        store.create("kept", headers(a="integer"), {})
    drop(store, "by_hand.csv", "a\r\n1\r\n")
    with pytest.raises(InvalidArguments, match="already exists"):
        store.create("by_hand", headers(a="integer"), {})


def test_replace_swaps_both_files(store: DatasetStore) -> None:
    save(store, "result", headers(a="integer"), [[1], [2]])
    replaced = save(store, "result", headers(b="string"), [["x"]], replace=True)
    assert replaced.csv_path.read_bytes() == b"b\r\nx\r\n"
    assert json.loads((store.root / "result.meta.json").read_text("utf-8"))["headers"] == [
        {"name": "b", "type": "string"}
    ]
    assert store.get("result") == replaced
    assert files_in(store.root) == ["result.csv", "result.meta.json"]


def test_replace_turns_a_hand_dropped_csv_into_a_dataset_with_meta(store: DatasetStore) -> None:
    drop(store, "notes.csv", "a\r\n1\r\n")
    assert store.get("notes").meta["origin"] == "csv"
    save(store, "notes", headers(a="string"), [["one"]], replace=True)
    assert store.get("notes").meta["origin"] == "acp"
    assert store.get("notes").headers == [{"name": "a", "type": "string"}]


def write_then_fail(store: DatasetStore, dataset_id: str, columns: list[Header], **kwargs: Any) -> None:
    """A writer whose block raises after rows went in (a connector dies, a query fails)."""
    with store.create(dataset_id, columns, {}, **kwargs) as writer:
        writer.add([["x"]] * 3)
        raise RuntimeError("the source failed mid-table")


def test_a_failed_writer_leaves_nothing(store: DatasetStore) -> None:
    with pytest.raises(RuntimeError, match="the source failed mid-table"):
        write_then_fail(store, "partial", headers(a="string"))
    assert files_in(store.root) == []


def test_a_failed_replace_leaves_the_existing_dataset_untouched(store: DatasetStore) -> None:
    original = save(store, "result", headers(a="integer"), [[1], [2]])
    before = {name: (store.root / name).read_bytes() for name in files_in(store.root)}
    with pytest.raises(RuntimeError):
        write_then_fail(store, "result", headers(b="string"), replace=True)
    assert {name: (store.root / name).read_bytes() for name in files_in(store.root)} == before
    assert store.get("result") == original


def test_a_row_of_the_wrong_width_fails_the_write(store: DatasetStore) -> None:
    with pytest.raises(ValueError, match="Row 2 has 1 values for 2 columns"):
        save(store, "ragged", headers(a="integer", b="integer"), [[1, 2], [3]])
    assert files_in(store.root) == []


def test_a_dataset_written_after_create_elsewhere_is_not_overwritten(store: DatasetStore) -> None:
    def race() -> None:
        with store.create("raced", headers(a="integer"), {}) as writer:
            writer.add([[1]])
            drop(store, "raced.csv", "a\r\n99\r\n")  # another bridge on the folder takes the id meanwhile

    with pytest.raises(InvalidArguments, match="already exists"):
        race()
    assert (store.root / "raced.csv").read_bytes() == b"a\r\n99\r\n"
    assert files_in(store.root) == ["raced.csv"]


# -- hand-dropped CSVs -----------------------------------------------------------------------------------
def test_inference_types_every_column(store: DatasetStore) -> None:
    drop(
        store,
        "clientes.csv",
        "\ufeffzip,n,price,ok,day,at,mixed_time,empty,big,comma,zero\r\n"
        '00501,1,0.5,TRUE,2026-01-01,2026-01-01T10:00:00,2026-01-01,,99999999999999999999,"1,5",0\r\n'
        "02134,-2,3,false,2026-01-02,2026-01-01 11:00,2026-01-01T10:00:00Z,,1,2,0.5\r\n"
        "90210,,1e3,,,,,,,,\r\n",
    )
    dataset = store.get("clientes")
    assert {h["name"]: h["type"] for h in dataset.headers} == {
        "zip": "string",  # leading zeros: a zip code stays text
        "n": "integer",
        "price": "number",
        "ok": "boolean",
        "day": "date",
        "at": "datetime",
        "mixed_time": "datetime",
        "empty": "string",  # nothing but empty cells decides nothing
        "big": "string",  # beyond 64 bits no engine keeps an integer
        "comma": "string",
        "zero": "number",  # "0" and "0.5" are not leading zeros
    }
    assert dataset.row_count == 3
    assert dataset.meta["origin"] == "csv" and dataset.meta["title"] == "clientes.csv"


@pytest.mark.parametrize(
    ("cells", "column_type"),
    [
        (["0", "10", ""], "integer"),
        (["007"], "string"),
        (["-01"], "string"),
        (["05.5"], "string"),
        (["0.25", "-.5", "+2"], "number"),
        (["true", "False"], "boolean"),
        (["true", "1"], "string"),
        (["2026-02-30"], "string"),
        (["nan"], "string"),
    ],
)
def test_inference_rules(store: DatasetStore, cells: list[str], column_type: str) -> None:
    drop(store, "cells.csv", "value\r\n" + "".join(f"{cell}\r\n" if cell else '""\r\n' for cell in cells))
    assert store.get("cells").headers == [{"name": "value", "type": column_type}]


def test_a_hand_dropped_csv_reads_back_typed(store: DatasetStore, table_files: Path) -> None:
    drop(store, "zips.csv", "zip,n,ok\n00501,1,TRUE\n02134,,false\n")
    _, rows = read_table(store, "zips.csv")
    assert rows == [{"zip": "00501", "n": 1, "ok": True}, {"zip": "02134", "n": None, "ok": False}]


def test_a_header_only_csv_is_an_empty_dataset(store: DatasetStore) -> None:
    drop(store, "empty_table.csv", "a,b\r\n")
    dataset = store.get("empty_table")
    assert dataset.row_count == 0
    assert dataset.headers == [{"name": "a", "type": "string"}, {"name": "b", "type": "string"}]


# -- listing and problems ---------------------------------------------------------------------------------
def test_list_is_sorted_and_skips_temporaries_folders_and_other_files(store: DatasetStore) -> None:
    save(store, "zeta", headers(a="integer"), [[1]])
    save(store, "alpha", headers(a="integer"), [[1]])
    drop(store, "middle.csv", "a\r\n1\r\n")
    drop(store, ".zeta.abc.csv.tmp", "a\r\n")
    drop(store, "readme.txt", "notes")
    (store.root / "files").mkdir()
    (store.root / "files" / "report.csv").write_text("a\r\n1\r\n")
    assert [d.id for d in store.list()] == ["alpha", "middle", "zeta"]
    assert store.problems == []


def test_a_missing_root_lists_nothing(store: DatasetStore) -> None:
    assert store.list() == [] and store.problems == []


def test_a_malformed_meta_is_a_problem_and_the_rest_still_lists(store: DatasetStore) -> None:
    save(store, "good", headers(a="integer"), [[1]])
    save(store, "broken", headers(a="integer"), [[1]])
    (store.root / "broken.meta.json").write_text('{"id": "broken", "headers": [', "utf-8")
    assert [d.id for d in store.list()] == ["good"]
    [problem] = store.problems
    assert problem.startswith("acp-data/broken.meta.json is not valid JSON")
    assert "delete it to have broken.csv read as a hand-dropped CSV" in problem
    with pytest.raises(TableNotFound, match=r"Dataset 'broken' cannot be used: acp-data/broken\.meta\.json"):
        store.get("broken")


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        ([1, 2], "is not a JSON object"),
        ({"headers": [{"name": "a", "type": "text"}], "row_count": 1}, "needs 'headers'"),
        ({"headers": [{"name": "a", "type": "integer"}], "row_count": "1"}, "needs 'row_count'"),
        ({"headers": [{"name": "b", "type": "integer"}], "row_count": 1}, "names other columns than the header row"),
    ],
)
def test_meta_problems(store: DatasetStore, meta: Any, message: str) -> None:
    save(store, "odd", headers(a="integer"), [[1]])
    (store.root / "odd.meta.json").write_text(json.dumps(meta), "utf-8")
    assert store.list() == []
    [problem] = store.problems
    assert message in problem


def test_a_meta_without_its_csv_is_a_problem(store: DatasetStore) -> None:
    save(store, "orphan", headers(a="integer"), [[1]])
    (store.root / "orphan.csv").unlink()
    assert store.list() == []
    assert store.problems == [
        "acp-data/orphan.meta.json has no orphan.csv beside it. Put orphan.csv back, or delete orphan.meta.json."
    ]


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("Ventas 2026.csv", "a\r\n1\r\n", "Rename it, for example to ventas_2026.csv"),
        ("select.csv", "a\r\n1\r\n", "it is an SQL keyword. Rename it, for example to select_data.csv"),
        ("upper.CSV", "a\r\n1\r\n", "its extension must be .csv in lower case"),
        ("blank.csv", "", "acp-data/blank.csv is empty"),
        ("ragged.csv", "a,b\r\n1,2\r\n3\r\n", "row 2 has 1 fields but the header has 2"),
        ("semicolons.csv", "a;b\r\n1;2\r\n", "looks separated by ';'"),
        ("twice.csv", "a,A\r\n1,2\r\n", "unique, non-empty name for every column"),
        ("latin1.csv", "", "is not UTF-8 text"),
    ],
)
def test_hand_dropped_csv_problems(store: DatasetStore, name: str, text: str, message: str) -> None:
    path = drop(store, name, text)
    if name == "latin1.csv":
        path.write_bytes("ciudad\r\nMálaga\r\n".encode("latin-1"))
    assert store.list() == []
    [problem] = store.problems
    assert message in problem


def test_a_symlink_leading_out_is_not_a_dataset(store: DatasetStore, tmp_path: Path) -> None:
    secret = tmp_path / "sources.json"
    secret.write_text("a\r\n1\r\n")
    store.root.mkdir()
    (store.root / "leak.csv").symlink_to(secret)
    (store.root / "inside.csv").symlink_to(drop(store, ".real.csv", "a\r\n1\r\n"))
    assert [d.id for d in store.list()] == ["inside"]
    [problem] = store.problems
    assert "acp-data/leak.csv is a link to a file outside acp-data" in problem
    with pytest.raises(TableNotFound, match="outside acp-data"):
        store.get("leak")


def test_list_caches_metas_and_inference_until_a_file_changes(
    store: DatasetStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    save(store, "saved", headers(a="integer"), [[1]])
    dropped = drop(store, "dropped.csv", "a\r\n1\r\n")
    calls: list[str] = []
    for name in ("_infer", "_parsed_meta"):
        real = getattr(datasets_module, name)

        def counted(*args: Any, _real: Any = real, _name: str = name) -> Any:
            calls.append(_name)
            return _real(*args)

        monkeypatch.setattr(datasets_module, name, counted)
    first = store.list()
    assert store.list() == first and store.get("dropped") == first[0]
    assert sorted(calls) == ["_infer", "_parsed_meta"]
    dropped.write_text("a\r\nx\r\n")
    os.utime(dropped, ns=(1, 1))  # even an equal size is a change
    assert store.get("dropped").headers == [{"name": "a", "type": "string"}]
    assert sorted(calls) == ["_infer", "_infer", "_parsed_meta"]


# -- get() ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "ref", ["sales_2026", "sales_2026.csv", "acp-data/sales_2026.csv", "Sales_2026", "SALES_2026.CSV"]
)
def test_get_takes_an_id_a_file_name_or_the_project_path(store: DatasetStore, ref: str) -> None:
    saved = save(store, "sales_2026", headers(a="integer"), [[1]])
    assert store.get(ref) == saved


def test_get_names_the_closest_ids(store: DatasetStore) -> None:
    save(store, "ventas_execute_sql_20261012_101630", headers(a="integer"), [[1]])
    save(store, "other", headers(a="integer"), [[1]])
    with pytest.raises(TableNotFound, match="closest ids are ventas_execute_sql_20261012_101630"):
        store.get("ventas_execute_sql_20261012_101631")
    with pytest.raises(TableNotFound, match="acp_datasets lists the 2 datasets"):
        store.get("zzz")


def test_get_on_an_empty_folder_says_how_datasets_appear(store: DatasetStore) -> None:
    with pytest.raises(TableNotFound, match="holds no datasets yet"):
        store.get("anything")


@pytest.mark.parametrize(
    "ref",
    [
        "../x",
        "/etc/passwd",
        "acp-data/../sources.json",
        "..",
        "",
        "files/report.csv",
        "a\0b",
        "acp-data\\x.csv",
        "x\\..\\y",
    ],
)
def test_get_refuses_paths_that_leave_the_folder(store: DatasetStore, ref: str) -> None:
    save(store, "x", headers(a="integer"), [[1]])
    with pytest.raises(TableNotFound, match="paths outside acp-data are refused"):
        store.get(ref)


# -- acp/read_table --------------------------------------------------------------------------------------
def test_resolver_refuses_unknown_and_escaping_refs(store: DatasetStore, table_files: Path) -> None:
    save(store, "known", headers(a="integer"), [[1]])
    with pytest.raises(TableNotFound, match="closest ids are known"):
        read_table(store, "knwon")
    with pytest.raises(TableNotFound, match="refused"):
        read_table(store, "../sources.json")
    assert files_in(table_files) == []


def test_resolver_refuses_a_csv_that_no_longer_fits_its_meta(store: DatasetStore, table_files: Path) -> None:
    dataset = save(store, "edited", headers(n="integer"), [[1], [2]])
    dataset.csv_path.write_text("n\r\n1\r\nabc\r\n")
    with pytest.raises(TableNotFound, match=r"row 2 does not fit the columns and types of edited\.meta\.json"):
        read_table(store, "edited")
    assert files_in(table_files) == []  # the partial table file is gone


def test_resolver_streams_more_rows_than_a_batch(store: DatasetStore, table_files: Path) -> None:
    count = datasets_module._READ_BATCH_ROWS + 5
    save(store, "many", headers(i="integer", s="string"), ([i, f"v{i}"] for i in range(count)))
    table, rows = read_table(store, "many")
    assert table.row_count == count == len(rows)
    assert rows[0] == {"i": 0, "s": "v0"} and rows[-1] == {"i": count - 1, "s": f"v{count - 1}"}


# -- artifacts ----------------------------------------------------------------------------------------------
def test_copy_artifact_keeps_the_name_and_numbers_clashes(store: DatasetStore, tmp_path: Path) -> None:
    paths = []
    for index in range(3):
        source = tmp_path / f"run{index}" / "report.pdf"
        source.parent.mkdir()
        source.write_bytes(b"%PDF-" + bytes([index]))
        paths.append(store.copy_artifact(source))
    assert paths == ["acp-data/files/report.pdf", "acp-data/files/report-2.pdf", "acp-data/files/report-3.pdf"]
    assert (store.root.parent / paths[2]).read_bytes() == b"%PDF-\x02"
    assert (store.root.parent / paths[0]).read_bytes() == b"%PDF-\x00"
    assert store.list() == []  # artifacts are not datasets


def test_copy_artifact_refuses_what_is_not_a_regular_file(store: DatasetStore, tmp_path: Path) -> None:
    target = tmp_path / "real.pdf"
    target.write_bytes(b"%PDF")
    link = tmp_path / "link.pdf"
    link.symlink_to(target)
    fifo = tmp_path / "pipe.pdf"
    os.mkfifo(fifo)
    for path in (tmp_path, link, fifo):
        with pytest.raises(InvalidArguments, match="is not a regular file"):
            store.copy_artifact(path)
    with pytest.raises(InvalidArguments, match="cannot be read"):
        store.copy_artifact(tmp_path / "missing.pdf")
    assert files_in(store.root / "files") == []
