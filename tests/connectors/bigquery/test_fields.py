"""BigQuery schemas as ACP headers, flattened columns and load schemas; shard grouping."""

from __future__ import annotations

import pytest

from connectors.bigquery.api import TableItem
from connectors.bigquery.blocks import group_tables
from connectors.bigquery.fields import flatten, header, load_schema
from connectors.bigquery.resources import date_shards

NESTED = [
    {"name": "event_date", "type": "STRING"},
    {
        "name": "event_params",
        "type": "RECORD",
        "mode": "REPEATED",
        "fields": [
            {"name": "key", "type": "STRING", "mode": "NULLABLE"},
            {"name": "value", "type": "RECORD", "fields": [{"name": "int_value", "type": "INTEGER"}]},
        ],
    },
]


def test_headers_follow_the_issue_type_table() -> None:
    cases = {
        "INT64": "integer",
        "INTEGER": "integer",
        "NUMERIC": "number",
        "BIGNUMERIC": "number",
        "FLOAT64": "number",
        "DATE": "date",
        "TIMESTAMP": "datetime",
        "DATETIME": "datetime",
        "RECORD": "json",
        "BYTES": "string",
        "BOOL": "boolean",
        "GEOGRAPHY": "string",
    }
    for bq_type, acp_type in cases.items():
        assert header({"name": "c", "type": bq_type})["type"] == acp_type, bq_type
    assert header({"name": "tags", "type": "STRING", "mode": "REPEATED"})["type"] == "json"
    assert header({"name": "c", "type": "STRING", "description": "Why"})["description"] == "Why"


def test_nested_records_are_flattened_as_a_dot_b() -> None:
    assert flatten(NESTED) == [
        {"name": "event_date", "type": "STRING"},
        {"name": "event_params", "type": "RECORD", "mode": "REPEATED"},
        {"name": "event_params.key", "type": "STRING"},
        {"name": "event_params.value", "type": "RECORD"},
        {"name": "event_params.value.int_value", "type": "INTEGER"},
    ]


def test_load_schema_from_host_headers() -> None:
    schema = load_schema(
        [{"name": "d", "type": "date"}, {"name": "n", "type": "number"}, {"name": "j", "type": "json"}]
    )
    assert [(f["name"], f["type"]) for f in schema] == [("d", "DATE"), ("n", "FLOAT"), ("j", "JSON")]


def _items(*names: str) -> list[TableItem]:
    return [TableItem(table_id=n, kind="TABLE", partitioning=None, clustering=None) for n in names]


def test_date_shards_group_as_wildcards_with_the_latest_shard() -> None:
    groups = group_tables(
        _items("events_20260902", "events_20260901", "events_intraday_20260903", "events_intraday_20260904", "users")
    )
    by_name = {g.name: g for g in groups}
    assert set(by_name) == {"events_*", "events_intraday_*", "users"}
    assert by_name["events_*"].shards == ["events_20260901", "events_20260902"]
    assert by_name["events_*"].latest == "events_20260902"
    assert by_name["users"].shards == [] and by_name["users"].latest == "users"


def test_a_single_shard_or_an_invalid_date_is_a_plain_table() -> None:
    names = {g.name for g in group_tables(_items("backup_20260901", "log_20261399", "log_20261398"))}
    assert names == {"backup_20260901", "log_20261399", "log_20261398"}


def test_rest_rows_decode_to_python_values() -> None:
    import datetime as dt
    from decimal import Decimal

    from connectors.bigquery.fields import row_decoder

    fields = [
        {"name": "n", "type": "INTEGER"},
        {"name": "x", "type": "FLOAT"},
        {"name": "p", "type": "NUMERIC"},
        {"name": "b", "type": "BOOLEAN"},
        {"name": "d", "type": "DATE"},
        {"name": "ts", "type": "TIMESTAMP"},
        {"name": "local", "type": "DATETIME"},
        {"name": "raw", "type": "BYTES"},
        {"name": "tags", "type": "STRING", "mode": "REPEATED"},
        {
            "name": "rec",
            "type": "RECORD",
            "fields": [{"name": "k", "type": "INTEGER"}, {"name": "s", "type": "STRING"}],
        },
        {"name": "recs", "type": "RECORD", "mode": "REPEATED", "fields": [{"name": "v", "type": "FLOAT"}]},
        {"name": "j", "type": "JSON"},
    ]
    row = {
        "f": [
            {"v": "-9007199254740993"},
            {"v": "Infinity"},
            {"v": "12345678901234567890.123456789"},
            {"v": "false"},
            {"v": "2026-09-01"},
            {"v": "1788220800000001"},
            {"v": "2026-09-01T10:11:12.5"},
            {"v": "AAEC"},
            {"v": [{"v": "a"}, {"v": "b"}]},
            {"v": {"f": [{"v": "7"}, {"v": None}]}},
            {"v": [{"v": {"f": [{"v": "1.5"}]}}]},
            {"v": '{"a": [1, 2]}'},
        ]
    }
    nulls = {"f": [{"v": None}] * len(fields)}
    decoded, empty = row_decoder(fields)([row, nulls])
    assert decoded == (
        -9007199254740993,
        float("inf"),
        Decimal("12345678901234567890.123456789"),
        False,
        dt.date(2026, 9, 1),
        dt.datetime(2026, 9, 1, 0, 0, 0, 1, tzinfo=dt.UTC),
        dt.datetime(2026, 9, 1, 10, 11, 12, 500000),
        "AAEC",
        ["a", "b"],
        {"k": 7, "s": None},
        [{"v": 1.5}],
        {"a": [1, 2]},
    )
    assert empty == (None,) * len(fields)
    seconds = row_decoder([{"name": "ts", "type": "TIMESTAMP"}])([{"f": [{"v": "1.5E9"}]}])
    assert seconds == [(dt.datetime(2017, 7, 14, 2, 40, tzinfo=dt.UTC),)]


@pytest.mark.parametrize(
    ("wildcard", "expected"),
    [
        ("events_*", ["events_20260831", "events_20260901"]),
        ("events_202609*", ["events_20260901"]),
        ("events_intraday_*", ["events_intraday_20260902"]),
        ("ev*", []),  # not one shard group: its name_ is longer than the prefix
    ],
)
def test_a_wildcard_names_the_date_shards_of_its_own_group(wildcard: str, expected: list[str]) -> None:
    ids = ["events_20260901", "events_20260831", "events_intraday_20260902", "events_2026091x", "users"]
    assert date_shards(ids, wildcard) == expected
