"""FakeBigQuery driven only by the real google-cloud-bigquery client and google-auth credentials.

Expected answers are computed in Python from the generator's rows (``fakes.ga4_export``), never from
the SQL under test, and never hard-coded.
"""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import decimal
import math
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

import google.oauth2.credentials
import psutil
import pytest
import requests
from google.api_core import exceptions as api_exceptions
from google.auth import exceptions as auth_exceptions
from google.cloud import bigquery
from google.oauth2 import service_account

from fakes import bigquery_sql, ga4_export
from fakes.bigquery import MIB, ROUTE_NAMES, FakeBigQuery
from fakes.google_oauth import JWT_BEARER_GRANT, REFRESH_TOKEN_GRANT

pytestmark = pytest.mark.slow  # the fake's own checks, with real clients and a 412-shard export

PROJECT = "my-proj"
GA4 = "analytics_123"
START = dt.date(2024, 1, 1)
DAYS = 7
EVENTS_PER_DAY = 300
SEED = 7
LONG_EXPORT = "analytics_long"  # 412 daily shards: more than BigQuery lists as referenced tables
LONG_DAYS = 412
SCALED = "analytics_scaled"  # the same data as GA4, each row counting for SCALE rows
SCALE = 100_000
BIGQUERY_SCOPE = "https://www.googleapis.com/auth/bigquery"
# Fault tests must fail fast: DEFAULT_RETRY would keep retrying for 10 minutes.
FAST_RETRY = bigquery.DEFAULT_RETRY.with_deadline(5).with_delay(initial=0.01, maximum=0.05)
EVENTS_TABLE = f"{PROJECT}.{GA4}.events_20240101"

LOGICAL_BYTES = {"INTEGER": 8, "FLOAT": 8, "BOOLEAN": 1, "DATE": 8, "TIMESTAMP": 8, "NUMERIC": 16}


# ------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeBigQuery]:
    with FakeBigQuery(require_auth=True) as server:
        server.add_project(PROJECT, friendly_name="My project")
        server.add_ga4_export(PROJECT, GA4, start=START, days=DAYS, events_per_day=EVENTS_PER_DAY, seed=SEED)
        server.add_ga4_export(PROJECT, LONG_EXPORT, start=START, days=LONG_DAYS, events_per_day=50, seed=SEED)
        server.add_ga4_export(
            PROJECT, SCALED, start=START, days=DAYS, events_per_day=EVENTS_PER_DAY, seed=SEED, bytes_scale=SCALE
        )
        server.add_dataset(PROJECT, "shop", location="EU", description="Orders", labels={"team": "web"})
        server.add_table(
            PROJECT,
            "shop",
            "orders",
            [
                {"name": "order_id", "type": "INTEGER", "mode": "REQUIRED", "description": "Order number"},
                {"name": "placed_at", "type": "TIMESTAMP"},
                {"name": "amount", "type": "NUMERIC"},
                {"name": "paid", "type": "BOOLEAN"},
                {"name": "tags", "type": "STRING", "mode": "REPEATED"},
            ],
            [
                {
                    "order_id": n,
                    "placed_at": dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(hours=n),
                    "amount": f"{n}.25",
                    "paid": n % 2 == 0,
                    "tags": ["gift"] * (n % 3),
                }
                for n in range(1, 11)
            ],
            description="One row per order",
            partitioning={"type": "DAY", "field": "placed_at"},
            clustering=["paid"],
            accuracy="UPPER_BOUND",
        )
        server.add_table(
            PROJECT,
            "shop",
            "paid_orders",
            None,
            kind="VIEW",
            view_query=f"SELECT order_id, amount FROM `{PROJECT}.shop.orders` WHERE paid",
        )
        server.add_project("other-proj")
        server.add_dataset("other-proj", "secret", location="US")
        server.add_table("other-proj", "secret", "t", [{"name": "x", "type": "INTEGER"}], [{"x": 1}])
        server.add_dataset("other-proj", "open", location="US")
        server.forbid("other-proj", "secret")
        server.add_project("locked-proj")
        server.forbid("locked-proj")
        yield server


@pytest.fixture(scope="module")
def export() -> dict[str, list[dict[str, Any]]]:
    """The GA4 shards, regenerated independently of the fake."""
    return ga4_export.generate_export(START, DAYS, events_per_day=EVENTS_PER_DAY, seed=SEED)


def _service_account(fake: FakeBigQuery) -> service_account.Credentials:
    info = fake.oauth.service_account_info(PROJECT)
    return service_account.Credentials.from_service_account_info(info, scopes=[BIGQUERY_SCOPE])


def _client(fake: FakeBigQuery, credentials: Any) -> bigquery.Client:
    return bigquery.Client(project=PROJECT, credentials=credentials, client_options={"api_endpoint": fake.url})


@pytest.fixture(scope="module")
def client(fake: FakeBigQuery) -> bigquery.Client:
    return _client(fake, _service_account(fake))


@pytest.fixture(autouse=True)
def clean_fake(request: pytest.FixtureRequest) -> Iterator[None]:
    """Leave no injected fault or slow job behind, and fail any test during which the fake crashed."""
    if "fake" not in request.fixturenames:
        yield
        return
    fake: FakeBigQuery = request.getfixturevalue("fake")
    crashes_before = len(fake.server.handler_errors)
    yield
    fake.server.clear_faults()
    fake.job_duration_s = 0.0
    fake.long_poll_s = 1.0
    assert fake.server.handler_errors[crashes_before:] == []


def _run(client: bigquery.Client, sql: str, api: str, **config: Any) -> list[dict[str, Any]]:
    job_config = bigquery.QueryJobConfig(**config) if config else None
    if api == "jobs.insert":
        rows = client.query(sql, job_config=job_config, retry=FAST_RETRY, job_retry=None).result(retry=FAST_RETRY)
    else:
        rows = client.query_and_wait(sql, job_config=job_config, retry=FAST_RETRY, job_retry=None)
    return [dict(row.items()) for row in rows]


def _dry_run(client: bigquery.Client, sql: str, **config: Any) -> bigquery.QueryJob:
    job_config = bigquery.QueryJobConfig(dry_run=True, use_query_cache=False, **config)
    return client.query(sql, job_config=job_config, retry=FAST_RETRY, job_retry=None)


def _logical_bytes(value: Any, field: dict[str, Any]) -> int:
    """BigQuery's logical size of one value, in plain Python (the reference for dry-run bytes)."""
    if field.get("mode") == "REPEATED":
        return sum(_logical_bytes(item, {**field, "mode": "NULLABLE"}) for item in value or [])
    if value is None:
        return 0
    if field["type"] == "RECORD":
        return sum(_logical_bytes(value.get(sub["name"]), sub) for sub in field["fields"])
    if field["type"] == "STRING":
        return 2 + len(value.encode("utf-8"))
    return LOGICAL_BYTES[field["type"]]


def _column_bytes(rows: list[dict[str, Any]], columns: list[str]) -> int:
    fields = {field["name"]: field for field in ga4_export.GA4_EXPORT_SCHEMA}
    return sum(_logical_bytes(row[name], fields[name]) for row in rows for name in columns)


APIS = ["jobs.insert", "jobs.query"]


# ------------------------------------------------------------------------------------ GA4 queries


@pytest.mark.parametrize("api", APIS)
def test_q1_counts_events_of_the_shards_selected_by_table_suffix(
    fake: FakeBigQuery, client: bigquery.Client, export: dict[str, Any], api: str
) -> None:
    sql = f"""
        SELECT event_name, COUNT(*) AS events
        FROM `{PROJECT}.{GA4}.events_*`
        WHERE _TABLE_SUFFIX BETWEEN '20240102' AND '20240104'
        GROUP BY event_name"""
    expected = Counter(
        row["event_name"] for suffix, row in ga4_export.iter_rows(export) if "20240102" <= suffix <= "20240104"
    )
    assert {row["event_name"]: row["events"] for row in _run(client, sql, api)} == expected
    assert fake.executed[-1].api == api and fake.executed[-1].outcome == "done"


@pytest.mark.parametrize("api", APIS)
def test_q2_scalar_subquery_over_unnest_reads_event_params(
    client: bigquery.Client, export: dict[str, Any], api: str
) -> None:
    sql = f"""
        SELECT (SELECT value.string_value FROM UNNEST(event_params) WHERE key = 'page_location') AS page,
               COUNT(*) AS views
        FROM `{PROJECT}.{GA4}.events_20240102`
        WHERE event_name = 'page_view'
        GROUP BY page"""
    expected = Counter(
        ga4_export.event_param(row, "page_location")["string_value"]
        for row in export["events_20240102"]
        if row["event_name"] == "page_view"
    )
    assert {row["page"]: row["views"] for row in _run(client, sql, api)} == expected


@pytest.mark.parametrize("api", APIS)
def test_q3_purchase_rate_by_day_and_country(client: bigquery.Client, export: dict[str, Any], api: str) -> None:
    sql = f"""
        SELECT PARSE_DATE('%Y%m%d', event_date) AS day,
               geo.country,
               COUNTIF(event_name = 'purchase') AS purchases,
               SAFE_DIVIDE(COUNTIF(event_name = 'purchase'), COUNT(DISTINCT user_pseudo_id)) AS purchase_rate,
               APPROX_COUNT_DISTINCT(user_pseudo_id) AS users
        FROM `{PROJECT}.{GA4}.events_*`
        WHERE PARSE_DATE('%Y%m%d', event_date) >= DATE_SUB(DATE '2024-01-07', INTERVAL 2 DAY)
        GROUP BY day, country"""
    groups: dict[tuple[dt.date, str], list[dict[str, Any]]] = defaultdict(list)
    for _, row in ga4_export.iter_rows(export):
        day = dt.datetime.strptime(row["event_date"], "%Y%m%d").date()
        if day >= dt.date(2024, 1, 5):
            groups[(day, row["geo"]["country"])].append(row)
    expected = {}
    for key, rows in groups.items():
        purchases = sum(row["event_name"] == "purchase" for row in rows)
        users = len({row["user_pseudo_id"] for row in rows})
        expected[key] = (purchases, pytest.approx(purchases / users), users)
    actual = {
        (r["day"], r["country"]): (r["purchases"], r["purchase_rate"], r["users"]) for r in _run(client, sql, api)
    }
    assert actual == expected


@pytest.mark.parametrize("api", APIS)
def test_q4_first_event_of_each_visitor_over_all_shards(
    client: bigquery.Client, export: dict[str, Any], api: str
) -> None:
    sql = f"""
        WITH ranked AS (
          SELECT user_pseudo_id, event_name,
                 ROW_NUMBER() OVER (PARTITION BY user_pseudo_id ORDER BY event_timestamp) AS rn
          FROM `{PROJECT}.{GA4}.events_*`)
        SELECT event_name, COUNT(*) AS visitors FROM ranked WHERE rn = 1 GROUP BY event_name"""
    first: dict[str, tuple[int, str]] = {}
    for _, row in ga4_export.iter_rows(export):
        current = first.get(row["user_pseudo_id"])
        if current is None or row["event_timestamp"] < current[0]:
            first[row["user_pseudo_id"]] = (row["event_timestamp"], row["event_name"])
    expected = Counter(name for _, name in first.values())
    assert {row["event_name"]: row["visitors"] for row in _run(client, sql, api)} == expected


@pytest.mark.parametrize("api", APIS)
def test_q4b_array_agg_with_limit_picks_each_visitors_first_event(
    client: bigquery.Client, export: dict[str, Any], api: str
) -> None:
    sql = f"""
        SELECT user_pseudo_id, ARRAY_AGG(event_name ORDER BY event_timestamp LIMIT 1)[OFFSET(0)] AS first_event
        FROM `{PROJECT}.{GA4}.events_20240103` GROUP BY user_pseudo_id"""
    expected: dict[str, str] = {}
    for row in sorted(export["events_20240103"], key=lambda r: r["event_timestamp"], reverse=True):
        expected[row["user_pseudo_id"]] = row["event_name"]
    assert {row["user_pseudo_id"]: row["first_event"] for row in _run(client, sql, api)} == expected


def test_table_suffix_is_a_column_and_each_wildcard_reference_keeps_its_own_shards(
    client: bigquery.Client, export: dict[str, Any]
) -> None:
    wildcard = f"`{PROJECT}.{GA4}.events_*`"
    per_day = _run(client, f"SELECT _TABLE_SUFFIX AS day, COUNT(*) AS n FROM {wildcard} GROUP BY day", "jobs.query")
    assert {row["day"]: row["n"] for row in per_day} == {
        name[len("events_") :]: len(rows) for name, rows in export.items()
    }
    sql = f"""
        SELECT (SELECT COUNT(*) FROM {wildcard} WHERE _TABLE_SUFFIX = '20240101') AS first_day,
               (SELECT COUNT(user_id) FROM {wildcard} WHERE _TABLE_SUFFIX BETWEEN '20240102' AND '20240103') AS next"""
    expected_next = sum(row["user_id"] is not None for day in ("02", "03") for row in export[f"events_202401{day}"])
    assert _run(client, sql, "jobs.insert") == [{"first_day": EVENTS_PER_DAY, "next": expected_next}]
    job = _dry_run(client, sql)
    assert [t.table_id for t in job.referenced_tables] == ["events_20240101", "events_20240102", "events_20240103"]
    assert job.total_bytes_processed == sum(
        _column_bytes(export[f"events_202401{day}"], ["user_id"]) for day in ("02", "03")
    )


def test_revenue_through_an_aliased_unnest_matches_ecommerce(client: bigquery.Client, export: dict[str, Any]) -> None:
    sql = f"""
        SELECT SUM(ep.value.double_value) AS revenue, COUNT(*) AS purchases
        FROM `{PROJECT}.{GA4}.events_*`, UNNEST(event_params) AS ep
        WHERE event_name = 'purchase' AND ep.key = 'value'"""
    purchases = [row for _, row in ga4_export.iter_rows(export) if row["event_name"] == "purchase"]
    [row] = _run(client, sql, "jobs.insert")
    assert row["purchases"] == len(purchases)
    assert row["revenue"] == pytest.approx(sum(r["ecommerce"]["purchase_revenue"] for r in purchases))


def test_result_values_have_bigquery_types(client: bigquery.Client, export: dict[str, Any]) -> None:
    sql = f"""
        SELECT event_timestamp, TIMESTAMP_MICROS(event_timestamp) AS at, DATE_SUB(DATE '2024-01-07', INTERVAL 2 DAY) AS d,
               1.5 * 2 AS x, geo, items, user_id IS NULL AS anonymous
        FROM `{PROJECT}.{GA4}.events_20240101` ORDER BY event_timestamp LIMIT 1"""
    job = client.query(sql, retry=FAST_RETRY, job_retry=None)
    [row] = [dict(r.items()) for r in job.result(retry=FAST_RETRY)]
    first = min(export["events_20240101"], key=lambda r: r["event_timestamp"])
    assert row["at"] == dt.datetime.fromtimestamp(first["event_timestamp"] / 1e6, tz=dt.UTC)
    assert row["d"] == dt.date(2024, 1, 5)
    assert row["x"] == 3.0 and isinstance(row["x"], float)
    assert row["geo"] == first["geo"] and row["items"] == first["items"]
    assert row["anonymous"] is (first["user_id"] is None)
    types = {field.name: (field.field_type, field.mode) for field in job.schema}
    assert types["at"] == ("TIMESTAMP", "NULLABLE") and types["d"] == ("DATE", "NULLABLE")
    assert types["x"] == ("FLOAT", "NULLABLE") and types["items"] == ("RECORD", "REPEATED")


ALL_TYPES_SCHEMA = [
    {"name": "i", "type": "INT64"},
    {"name": "f", "type": "FLOAT64"},
    {"name": "n", "type": "NUMERIC"},
    {"name": "b", "type": "BOOL"},
    {"name": "s", "type": "STRING"},
    {"name": "raw", "type": "BYTES"},
    {"name": "d", "type": "DATE"},
    {"name": "dt", "type": "DATETIME"},
    {"name": "t", "type": "TIME"},
    {"name": "ts", "type": "TIMESTAMP"},
    {"name": "ints", "type": "INTEGER", "mode": "REPEATED"},
    {
        "name": "rec",
        "type": "STRUCT",
        "fields": [
            {"name": "label", "type": "STRING"},
            {"name": "parts", "type": "RECORD", "mode": "REPEATED", "fields": [{"name": "v", "type": "FLOAT"}]},
        ],
    },
]
ALL_TYPES_ROWS = [
    {
        "i": 2**62,
        "f": 0.1,
        "n": decimal.Decimal("123.456789"),
        "b": True,
        "s": 'é "quoted" \\ back\nslash',
        "raw": b"\x00\xffbin",
        "d": dt.date(2024, 2, 29),
        "dt": dt.datetime(2024, 2, 29, 13, 14, 15, 123456),
        "t": dt.time(1, 2, 3, 450000),
        "ts": dt.datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=dt.UTC),
        "ints": [3, 1, 2],
        "rec": {"label": "x", "parts": [{"v": 1.5}, {"v": -2.0}]},
    },
    {"i": None, "ints": [], "rec": None},
]


@pytest.mark.parametrize("api", [*APIS, "tabledata.list"])
def test_every_type_survives_the_wire_encoding(fake: FakeBigQuery, client: bigquery.Client, api: str) -> None:
    if fake.warehouse.table(bigquery_sql.TableRef(PROJECT, "shop", "all_types")) is None:
        fake.add_table(PROJECT, "shop", "all_types", ALL_TYPES_SCHEMA, ALL_TYPES_ROWS)
    if api == "tabledata.list":
        rows = [dict(r.items()) for r in client.list_rows(f"{PROJECT}.shop.all_types", retry=FAST_RETRY)]
    else:
        rows = _run(client, f"SELECT * FROM `{PROJECT}.shop.all_types` ORDER BY i NULLS LAST", api)
    assert rows[0] == ALL_TYPES_ROWS[0]
    assert rows[1] == {name: None for name in (f["name"] for f in ALL_TYPES_SCHEMA)} | {"ints": []}


def test_unnamed_columns_are_named_like_bigquery(client: bigquery.Client) -> None:
    job = client.query(f"SELECT event_name, COUNT(*), MAX(event_timestamp) FROM `{EVENTS_TABLE}` GROUP BY 1")
    job.result(retry=FAST_RETRY)
    assert [field.name for field in job.schema] == ["event_name", "f0_", "f1_"]


def test_default_dataset_and_query_parameters(client: bigquery.Client, export: dict[str, Any]) -> None:
    config = bigquery.QueryJobConfig(
        default_dataset=f"{PROJECT}.{GA4}",
        query_parameters=[
            bigquery.ScalarQueryParameter("name", "STRING", "purchase"),
            bigquery.ArrayQueryParameter("days", "STRING", ["20240101", "20240102"]),
        ],
    )
    sql = "SELECT COUNT(*) AS n FROM `events_*` WHERE event_name = @name AND _TABLE_SUFFIX IN UNNEST(@days)"
    rows = client.query_and_wait(sql, job_config=config, retry=FAST_RETRY, job_retry=None)
    expected = sum(
        row["event_name"] == "purchase"
        for suffix, row in ga4_export.iter_rows(export)
        if suffix in ("20240101", "20240102")
    )
    assert [row["n"] for row in rows] == [expected]


def test_views_run_their_query_over_the_underlying_table(fake: FakeBigQuery, client: bigquery.Client) -> None:
    rows = _run(client, f"SELECT SUM(amount) AS total, COUNT(*) AS n FROM `{PROJECT}.shop.paid_orders`", "jobs.query")
    paid = [n for n in range(1, 11) if n % 2 == 0]
    assert rows == [{"total": sum(decimal.Decimal(f"{n}.25") for n in paid), "n": len(paid)}]
    job = _dry_run(client, f"SELECT order_id FROM `{PROJECT}.shop.paid_orders`")
    assert [table.table_id for table in job.referenced_tables] == ["orders"]


def test_persistent_functions_run_and_dry_runs_list_them(fake: FakeBigQuery, client: bigquery.Client) -> None:
    fake.add_function(PROJECT, "shop", "plus_one", ["n"], "n + 1")
    sql = f"SELECT shop.plus_one(order_id) AS n FROM `{PROJECT}.shop.orders` ORDER BY n LIMIT 1"
    assert _run(client, sql, "jobs.query") == [{"n": 2}]
    statistics = _dry_run(client, sql)._properties["statistics"]["query"]
    assert statistics["referencedRoutines"] == [{"projectId": PROJECT, "datasetId": "shop", "routineId": "plus_one"}]
    assert fake.dry_runs[-1].referenced_routines == (f"{PROJECT}.shop.plus_one",)
    plain = _dry_run(client, f"SELECT SAFE_DIVIDE(order_id, 2) FROM `{PROJECT}.shop.orders`")
    assert "referencedRoutines" not in plain._properties["statistics"]["query"]
    with pytest.raises(api_exceptions.BadRequest, match=r"Function not found: shop\.nope"):
        _dry_run(client, f"SELECT shop.nope(order_id) FROM `{PROJECT}.shop.orders`")
    with pytest.raises(api_exceptions.Forbidden):
        _dry_run(client, "SELECT `other-proj`.secret.f(1)")
    # The fake cannot account for what a body reads, so it runs only bodies over their arguments.
    with pytest.raises(ValueError, match="read no table"):
        fake.add_function(PROJECT, "shop", "total", [], f"(SELECT SUM(amount) FROM `{PROJECT}.shop.orders`)")


# -------------------------------------------------------------------------------------- dry runs


def test_dry_run_bytes_are_the_logical_size_of_the_referenced_columns(
    fake: FakeBigQuery, client: bigquery.Client, export: dict[str, Any]
) -> None:
    rows = export["events_20240101"]
    cases = {
        "SELECT event_name FROM `{t}`": ["event_name"],
        "SELECT event_name, geo.country FROM `{t}`": ["event_name", "geo"],
        "SELECT COUNT(DISTINCT user_pseudo_id) FROM `{t}` WHERE event_name = 'scroll'": [
            "event_name",
            "user_pseudo_id",
        ],
        "SELECT (SELECT value.int_value FROM UNNEST(event_params) WHERE key = 'ga_session_id') FROM `{t}`": [
            "event_params"
        ],
        "SELECT * FROM `{t}`": [field["name"] for field in ga4_export.GA4_EXPORT_SCHEMA],
    }
    measured = []
    for template, columns in cases.items():
        job = _dry_run(client, template.format(t=EVENTS_TABLE))
        assert job.total_bytes_processed == _column_bytes(rows, columns), template
        assert job.statement_type == "SELECT"
        assert job._properties["statistics"]["query"]["totalBytesProcessedAccuracy"] == "PRECISE"
        measured.append(job.total_bytes_processed)
    assert measured[0] < measured[1] < measured[-1]
    assert fake.dry_runs[-1].total_bytes_processed == measured[-1]
    assert job.job_id is None  # a dry run creates no job


def test_dry_run_of_a_count_reads_no_bytes(client: bigquery.Client) -> None:
    assert _dry_run(client, f"SELECT COUNT(*) FROM `{EVENTS_TABLE}`").total_bytes_processed == 0


def test_dry_run_bytes_and_referenced_tables_follow_the_shards_kept_by_table_suffix(
    client: bigquery.Client, export: dict[str, Any]
) -> None:
    template = (
        f"SELECT user_pseudo_id FROM `{PROJECT}.{GA4}.events_*` WHERE _TABLE_SUFFIX BETWEEN '20240101' AND '{{}}'"
    )
    three = _dry_run(client, template.format("20240103"))
    seven = _dry_run(client, template.format("20240107"))
    assert [t.table_id for t in three.referenced_tables] == ["events_20240101", "events_20240102", "events_20240103"]
    assert len(seven.referenced_tables) == 7
    expected_three = sum(_column_bytes(export[f"events_2024010{day}"], ["user_pseudo_id"]) for day in (1, 2, 3))
    assert three.total_bytes_processed == expected_three
    assert seven.total_bytes_processed == sum(_column_bytes(rows, ["user_pseudo_id"]) for rows in export.values())


def test_bytes_scale_multiplies_dry_run_bytes(client: bigquery.Client) -> None:
    sql = "SELECT event_name, geo FROM `{}.{}.events_20240101`"
    plain = _dry_run(client, sql.format(PROJECT, GA4)).total_bytes_processed
    scaled = _dry_run(client, sql.format(PROJECT, SCALED)).total_bytes_processed
    assert plain > 0 and scaled == plain * SCALE


def test_a_table_declared_upper_bound_makes_the_estimate_upper_bound(client: bigquery.Client) -> None:
    job = _dry_run(client, f"SELECT order_id, amount FROM `{PROJECT}.shop.orders`")
    assert job._properties["statistics"]["query"]["totalBytesProcessedAccuracy"] == "UPPER_BOUND"
    assert job.total_bytes_processed == 10 * (8 + 16)


def test_referenced_tables_are_truncated_at_50_like_bigquery(fake: FakeBigQuery, client: bigquery.Client) -> None:
    job = _dry_run(client, f"SELECT COUNT(*) FROM `{PROJECT}.{LONG_EXPORT}.events_*`")
    assert len(job.referenced_tables) == 50
    assert job.referenced_tables[0].table_id == "events_20240101"
    assert len(fake.dry_runs[-1].referenced_tables) == LONG_DAYS
    rows = _run(client, f"SELECT COUNT(*) AS n FROM `{PROJECT}.{LONG_EXPORT}.events_*`", "jobs.query")
    assert rows == [{"n": LONG_DAYS * 50}]


def test_ga4_intraday_table_follows_the_daily_shards_and_events_star_matches_it() -> None:
    with FakeBigQuery() as own:
        names = own.add_ga4_export(PROJECT, GA4, start=START, days=2, events_per_day=20, seed=SEED, intraday=True)
        assert names == ["events_20240101", "events_20240102", "events_intraday_20240103"]
        client = _client(own, _service_account(own))
        sql = f"SELECT _TABLE_SUFFIX AS suffix, COUNT(*) AS n FROM `{PROJECT}.{GA4}.events_*` GROUP BY 1"
        rows = _run(client, sql, "jobs.query")
    assert {r["suffix"]: r["n"] for r in rows} == {"20240101": 20, "20240102": 20, "intraday_20240103": 20}


@pytest.mark.parametrize(
    ("sql", "statement_type"),
    [
        (f"INSERT INTO `{EVENTS_TABLE}` (event_name) VALUES ('x')", "INSERT"),
        (f"UPDATE `{EVENTS_TABLE}` SET event_name = 'x' WHERE TRUE", "UPDATE"),
        (f"DELETE FROM `{EVENTS_TABLE}` WHERE TRUE", "DELETE"),
        (
            f"MERGE `{EVENTS_TABLE}` T USING `{PROJECT}.{GA4}.events_20240102` S ON FALSE "
            "WHEN NOT MATCHED THEN INSERT ROW",
            "MERGE",
        ),
        (f"CREATE TABLE `{PROJECT}.{GA4}.new_table` (x INT64)", "CREATE_TABLE"),
        (f"CREATE TABLE `{PROJECT}.{GA4}.copy` AS SELECT * FROM `{EVENTS_TABLE}`", "CREATE_TABLE_AS_SELECT"),
        (f"CREATE VIEW `{PROJECT}.{GA4}.v` AS SELECT 1 AS x", "CREATE_VIEW"),
        (f"DROP TABLE `{EVENTS_TABLE}`", "DROP_TABLE"),
        (f"TRUNCATE TABLE `{EVENTS_TABLE}`", "TRUNCATE_TABLE"),
        (f"ALTER TABLE `{EVENTS_TABLE}` ADD COLUMN x STRING", "ALTER_TABLE"),
        ("EXPORT DATA OPTIONS(uri='gs://b/*.csv', format='CSV') AS SELECT 1", "EXPORT_DATA"),
        (f"SELECT 1; DROP TABLE `{EVENTS_TABLE}`", "SCRIPT"),
        ("DECLARE x INT64 DEFAULT 1; SELECT x", "SCRIPT"),
        ("BEGIN SELECT 1; END", "SCRIPT"),
        ("EXECUTE IMMEDIATE 'SELECT 1'", "SCRIPT"),
        ("CALL `my-proj.ds.proc`()", "CALL"),
    ],
)
def test_dry_runs_report_the_statement_type_of_writes_and_scripts(
    fake: FakeBigQuery, client: bigquery.Client, sql: str, statement_type: str
) -> None:
    job = _dry_run(client, sql)
    assert job.statement_type == statement_type
    assert fake.dry_runs[-1].statement_type == statement_type


@pytest.mark.parametrize("api", APIS)
def test_writes_never_run_and_are_recorded(fake: FakeBigQuery, client: bigquery.Client, api: str) -> None:
    before = fake.rows(PROJECT, GA4, "events_20240101")
    with pytest.raises(api_exceptions.Forbidden) as raised:
        _run(client, f"DELETE FROM `{EVENTS_TABLE}` WHERE TRUE", api)
    assert raised.value.errors[0]["reason"] == "accessDenied"
    assert fake.rows(PROJECT, GA4, "events_20240101") == before
    last = fake.executed[-1]
    assert (last.statement_type, last.outcome, last.total_bytes_billed) == ("DELETE", "accessDenied", 0)


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT 1", "SELECT"),
        ("SELECT 1;", "SELECT"),
        ("WITH a AS (SELECT 1 AS x) SELECT x FROM a", "SELECT"),
        ("SELECT 1 UNION ALL SELECT 2", "SELECT"),
        ("SELECT * FROM d.t FOR SYSTEM_TIME AS OF CURRENT_TIMESTAMP()", "SELECT"),
        ("SELECT ';'", "SELECT"),
        ("SELECT 1 -- ; DROP TABLE x", "SELECT"),
        ("SELECT 1; DELETE FROM d.t WHERE TRUE", "SCRIPT"),
        ("CREATE TEMP FUNCTION f(x INT64) AS (x + 1); SELECT f(1)", "SCRIPT"),
        ("IF TRUE THEN SELECT 1; END IF", "SCRIPT"),
        ("SET x = 1", "SCRIPT"),
        ("GRANT `roles/bigquery.dataViewer` ON TABLE d.t TO 'user:a@b.c'", "GRANT"),
        ("CREATE MATERIALIZED VIEW d.mv AS SELECT 1 AS a", "CREATE_MATERIALIZED_VIEW"),
        ("ASSERT (SELECT COUNT(*) FROM d.t) > 0", "ASSERT"),
        ("garbage here !!", "PARSE_ERROR"),
    ],
)
def test_classify_fails_closed(sql: str, expected: str) -> None:
    assert bigquery_sql.classify(sql) == expected


def test_syntax_and_binder_errors_are_invalid_query(fake: FakeBigQuery, client: bigquery.Client) -> None:
    with pytest.raises(api_exceptions.BadRequest) as raised:
        _run(client, f"SELECT no_such_column FROM `{EVENTS_TABLE}`", "jobs.insert")
    assert raised.value.errors[0]["reason"] == "invalidQuery"
    assert "Unrecognized name: no_such_column" in raised.value.errors[0]["message"]
    assert (fake.executed[-1].outcome, fake.executed[-1].total_bytes_billed) == ("invalidQuery", 0)
    with pytest.raises(api_exceptions.BadRequest) as raised:
        _dry_run(client, "SELEC 1")
    assert "Syntax error" in raised.value.errors[0]["message"]
    assert fake.dry_runs[-1].outcome == "invalidQuery"


@pytest.mark.parametrize("api", APIS)
def test_missing_tables_are_not_found(client: bigquery.Client, api: str) -> None:
    with pytest.raises(api_exceptions.NotFound) as raised:
        _run(client, f"SELECT 1 FROM `{PROJECT}.{GA4}.nope`", api)
    assert raised.value.errors[0]["reason"] == "notFound"
    assert f"Not found: Table {PROJECT}:{GA4}.nope was not found in location EU" in raised.value.errors[0]["message"]


def test_legacy_sql_is_refused(fake: FakeBigQuery, client: bigquery.Client) -> None:
    with pytest.raises(api_exceptions.BadRequest, match="Legacy SQL"):
        _run(client, f"SELECT event_name FROM [{PROJECT}:{GA4}.events_20240101]", "jobs.insert", use_legacy_sql=True)
    assert fake.executed[-1].outcome == "invalidQuery"


def test_a_job_in_the_wrong_location_does_not_find_the_dataset(client: bigquery.Client) -> None:
    with pytest.raises(api_exceptions.NotFound, match="was not found in location US"):
        client.query(f"SELECT 1 FROM `{EVENTS_TABLE}`", location="US", job_retry=None).result(retry=FAST_RETRY)


def test_sql_cannot_read_host_files(client: bigquery.Client) -> None:
    with pytest.raises(api_exceptions.BadRequest):
        _run(client, "SELECT * FROM read_text('/etc/hostname')", "jobs.query")


# --------------------------------------------------------------------------- billing and its limits


def test_ten_megabytes_are_billed_per_table_read(fake: FakeBigQuery, client: bigquery.Client) -> None:
    sql = f"SELECT event_name FROM `{PROJECT}.{GA4}.events_*` WHERE _TABLE_SUFFIX BETWEEN '20240101' AND '20240103'"
    job = client.query(sql, job_config=bigquery.QueryJobConfig(labels={"purpose": "test"}), job_retry=None)
    job.result(retry=FAST_RETRY)
    assert 0 < job.total_bytes_processed < MIB
    assert job.total_bytes_billed == 3 * 10 * MIB
    assert job.cache_hit is False and job.statement_type == "SELECT"
    last = fake.executed[-1]
    assert (last.job_id, last.labels, last.total_bytes_billed) == (job.job_id, {"purpose": "test"}, 30 * MIB)


def test_nothing_read_means_nothing_billed(client: bigquery.Client) -> None:
    job = client.query(f"SELECT COUNT(*) FROM `{EVENTS_TABLE}`", job_retry=None)
    job.result(retry=FAST_RETRY)
    assert (job.total_bytes_processed, job.total_bytes_billed) == (0, 0)


@pytest.mark.parametrize("api", APIS)
def test_maximum_bytes_billed_below_the_minimum_refuses_the_query(
    fake: FakeBigQuery, client: bigquery.Client, api: str
) -> None:
    sql = f"SELECT event_name FROM `{EVENTS_TABLE}`"
    with pytest.raises(api_exceptions.GoogleAPICallError) as raised:
        _run(client, sql, api, maximum_bytes_billed=10 * MIB - 1)
    assert raised.value.errors[0]["reason"] == "bytesBilledLimitExceeded"
    refused = fake.executed[-1]
    assert (refused.outcome, refused.maximum_bytes_billed, refused.total_bytes_billed) == (
        "bytesBilledLimitExceeded",
        10 * MIB - 1,
        0,
    )
    assert refused.total_bytes_processed > 0
    assert _run(client, sql, api, maximum_bytes_billed=10 * MIB)
    assert fake.executed[-1].outcome == "done"


def test_a_scaled_table_plays_a_huge_one(fake: FakeBigQuery, client: bigquery.Client, export: dict[str, Any]) -> None:
    sql = f"SELECT * FROM `{PROJECT}.{SCALED}.events_*`"
    processed = _dry_run(client, sql).total_bytes_processed
    all_columns = [field["name"] for field in ga4_export.GA4_EXPORT_SCHEMA]
    assert processed == sum(_column_bytes(rows, all_columns) for rows in export.values()) * SCALE
    assert processed > 50 * 1024**3
    with pytest.raises(api_exceptions.InternalServerError) as raised:
        _run(client, sql, "jobs.insert", maximum_bytes_billed=1024**3)
    assert raised.value.errors[0]["reason"] == "bytesBilledLimitExceeded"
    assert f"{math.ceil(processed / MIB) * MIB} or higher required" in raised.value.errors[0]["message"]


# -------------------------------------------------------------------------------------------- paging


def test_get_query_results_pages_return_every_row_once(
    fake: FakeBigQuery, client: bigquery.Client, export: dict[str, Any]
) -> None:
    job = client.query(
        f"SELECT event_timestamp, user_pseudo_id FROM `{PROJECT}.{GA4}.events_*` ORDER BY event_timestamp",
        job_retry=None,
    )
    rows = [(row["event_timestamp"], row["user_pseudo_id"]) for row in job.result(page_size=128, retry=FAST_RETRY)]
    expected = sorted((row["event_timestamp"], row["user_pseudo_id"]) for _, row in ga4_export.iter_rows(export))
    assert rows == expected
    pages = [r for r in fake.requests_for_job(job.job_id) if r.route == "jobs.getQueryResults"]
    assert len(pages) == math.ceil(len(expected) / 128)
    assert {r.param("maxResults") for r in pages} == {"128"}
    # The result also reads as the job's (anonymous) destination table.
    from_table = [row["event_timestamp"] for row in client.list_rows(job.destination, page_size=1000, retry=FAST_RETRY)]
    assert from_table == [timestamp for timestamp, _ in expected]


def test_query_and_wait_pages_after_the_first_response(fake: FakeBigQuery, client: bigquery.Client) -> None:
    iterator = client.query_and_wait(
        f"SELECT event_timestamp FROM `{PROJECT}.{GA4}.events_*`", page_size=500, retry=FAST_RETRY, job_retry=None
    )
    timestamps = [row[0] for row in iterator]
    assert len(timestamps) == len(set(timestamps)) == DAYS * EVENTS_PER_DAY
    assert iterator.total_rows == DAYS * EVENTS_PER_DAY


def test_tabledata_list_pages_return_every_row_once(client: bigquery.Client, export: dict[str, Any]) -> None:
    table = client.get_table(EVENTS_TABLE, retry=FAST_RETRY)
    rows = [dict(row.items()) for row in client.list_rows(table, page_size=37, retry=FAST_RETRY)]
    assert [row["event_timestamp"] for row in rows] == [row["event_timestamp"] for row in export["events_20240101"]]
    assert rows[5]["event_params"] == export["events_20240101"][5]["event_params"]
    selected = client.list_rows(
        EVENTS_TABLE,
        selected_fields=[bigquery.SchemaField("geo", "RECORD", fields=[bigquery.SchemaField("country", "STRING")])],
        start_index=290,
        retry=FAST_RETRY,
    )
    assert [row["geo"]["country"] for row in selected] == [r["geo"]["country"] for r in export["events_20240101"][290:]]


def test_listing_pages_through_projects_datasets_and_tables(fake: FakeBigQuery, client: bigquery.Client) -> None:
    projects = [p.project_id for p in client.list_projects(page_size=1, retry=FAST_RETRY)]
    assert projects == ["my-proj", "other-proj"]  # locked-proj is forbidden, so not listed
    datasets = [d.dataset_id for d in client.list_datasets(page_size=1, retry=FAST_RETRY)]
    assert datasets == sorted([GA4, LONG_EXPORT, SCALED, "shop"])
    tables = list(client.list_tables(f"{PROJECT}.{LONG_EXPORT}", page_size=100, retry=FAST_RETRY))
    assert len(tables) == LONG_DAYS and len({t.table_id for t in tables}) == LONG_DAYS
    assert [d.dataset_id for d in client.list_datasets("other-proj", retry=FAST_RETRY)] == ["open"]


def test_table_and_dataset_metadata(client: bigquery.Client) -> None:
    table = client.get_table(f"{PROJECT}.shop.orders", retry=FAST_RETRY)
    assert (table.table_type, table.num_rows, table.location, table.description) == (
        "TABLE",
        10,
        "EU",
        "One row per order",
    )
    assert table.num_bytes == 10 * (8 + 8 + 16 + 1) + sum(2 + len("gift") for n in range(1, 11) for _ in range(n % 3))
    assert table.time_partitioning.type_ == "DAY" and table.time_partitioning.field == "placed_at"
    assert table.clustering_fields == ["paid"]
    assert table.schema[0].description == "Order number" and table.schema[0].mode == "REQUIRED"
    assert table.created is not None and table.modified is not None
    view = client.get_table(f"{PROJECT}.shop.paid_orders", retry=FAST_RETRY)
    assert view.table_type == "VIEW" and "WHERE paid" in view.view_query
    assert [field.name for field in view.schema] == ["order_id", "amount"]
    dataset = client.get_dataset(f"{PROJECT}.shop", retry=FAST_RETRY)
    assert (dataset.location, dataset.description, dataset.labels) == ("EU", "Orders", {"team": "web"})
    listed = {t.table_id: t for t in client.list_tables(f"{PROJECT}.shop", retry=FAST_RETRY)}
    assert listed["orders"].clustering_fields == ["paid"] and listed["paid_orders"].table_type == "VIEW"
    rows = [dict(r.items()) for r in client.list_rows(table, max_results=2, retry=FAST_RETRY)]
    assert rows[0]["placed_at"] == dt.datetime(2024, 1, 1, 1, tzinfo=dt.UTC)
    assert rows[0]["amount"] == decimal.Decimal("1.25") and rows[1]["tags"] == ["gift", "gift"]


# ------------------------------------------------------------------------------- running jobs


def test_a_running_job_is_polled_until_done(fake: FakeBigQuery, client: bigquery.Client) -> None:
    fake.job_duration_s = 0.3
    job = client.query(f"SELECT COUNT(*) AS n FROM `{EVENTS_TABLE}`", job_retry=None)
    assert job.state == "RUNNING"
    assert [row["n"] for row in job.result(retry=FAST_RETRY)] == [EVENTS_PER_DAY]
    polls = fake.requests_for_job(job.job_id)
    assert any(r.route == "jobs.get" for r in polls)
    assert fake.executed[-1].outcome == "done"


def test_a_running_job_can_be_cancelled(fake: FakeBigQuery, client: bigquery.Client) -> None:
    fake.job_duration_s = 30
    job = client.query(f"SELECT event_name FROM `{EVENTS_TABLE}`", job_retry=None)
    # The client checks its timeout only between polls, and a poll is held up to long_poll_s.
    fake.long_poll_s = 0.2
    with pytest.raises(concurrent.futures.TimeoutError):
        job.result(timeout=0.1, retry=FAST_RETRY)
    assert job.cancel(retry=FAST_RETRY)
    with pytest.raises(api_exceptions.GoogleAPICallError) as raised:
        job.result(retry=FAST_RETRY)
    assert raised.value.errors[0]["reason"] == "stopped"
    assert fake.cancelled[-1] == job.job_id
    cancelled = fake.executed[-1]
    assert (cancelled.job_id, cancelled.outcome, cancelled.total_bytes_billed) == (job.job_id, "cancelled", 0)


def test_a_job_exceeding_its_timeout_fails(fake: FakeBigQuery, client: bigquery.Client) -> None:
    fake.job_duration_s = 5
    config = bigquery.QueryJobConfig(job_timeout_ms=200)
    job = client.query(f"SELECT event_name FROM `{EVENTS_TABLE}`", job_config=config, job_retry=None)
    with pytest.raises(api_exceptions.GoogleAPICallError) as raised:
        job.result(retry=FAST_RETRY)
    assert raised.value.errors[0]["reason"] == "timeout"
    assert fake.executed[-1].outcome == "timeout"


# ------------------------------------------------------------------------------------------ faults


def test_a_403_is_forbidden_at_once(fake: FakeBigQuery, client: bigquery.Client) -> None:
    fake.fail("tables.get", 403)
    with pytest.raises(api_exceptions.Forbidden) as raised:
        client.get_table(EVENTS_TABLE, retry=FAST_RETRY)
    assert raised.value.errors[0]["reason"] == "accessDenied"
    assert [r.status for r in fake.server.requests_for("tables.get")][-1:] == [403]


def test_a_404_is_not_found(fake: FakeBigQuery, client: bigquery.Client) -> None:
    fake.fail("datasets.get", 404, message="Not found: Dataset my-proj:gone")
    with pytest.raises(api_exceptions.NotFound, match="my-proj:gone"):
        client.get_dataset(f"{PROJECT}.shop", retry=FAST_RETRY)


def test_a_429_is_retried_by_default_and_raised_without_retry(fake: FakeBigQuery, client: bigquery.Client) -> None:
    fake.fail("datasets.list", 429, times=2)
    before = len(fake.server.requests_for("datasets.list"))
    assert len(list(client.list_datasets(retry=FAST_RETRY))) == 4
    assert [r.status for r in fake.server.requests_for("datasets.list")[before:]] == [429, 429, 200]
    fake.fail("datasets.list", 429)
    with pytest.raises(api_exceptions.TooManyRequests):
        list(client.list_datasets(retry=None))


def test_a_500_while_paging_is_retried(fake: FakeBigQuery, client: bigquery.Client) -> None:
    job = client.query(f"SELECT event_timestamp FROM `{EVENTS_TABLE}`", job_retry=None)
    fake.fail("jobs.getQueryResults", 500, times=1)
    assert len(list(job.result(page_size=100, retry=FAST_RETRY))) == EVENTS_PER_DAY
    fake.fail("jobs.getQueryResults", 500, reason="internalError")
    job = client.query(f"SELECT event_timestamp FROM `{EVENTS_TABLE}`", job_retry=None)
    with pytest.raises(api_exceptions.InternalServerError):
        job.result(retry=None)


def test_a_slow_answer_times_out_the_call(fake: FakeBigQuery, client: bigquery.Client) -> None:
    fake.slow("tables.get", 1.0)
    with pytest.raises(requests.exceptions.Timeout):
        client.get_table(EVENTS_TABLE, retry=None, timeout=0.2)
    fake.slow("tables.get", 0.2)
    assert client.get_table(EVENTS_TABLE, retry=None, timeout=5).num_rows == EVENTS_PER_DAY


def test_forbidden_projects_and_datasets_answer_403(fake: FakeBigQuery, client: bigquery.Client) -> None:
    with pytest.raises(api_exceptions.Forbidden):
        client.get_dataset("other-proj.secret", retry=FAST_RETRY)
    with pytest.raises(api_exceptions.Forbidden):
        list(client.list_tables("other-proj.secret", retry=FAST_RETRY))
    with pytest.raises(api_exceptions.Forbidden) as raised:
        _run(client, "SELECT x FROM `other-proj.secret.t`", "jobs.insert")
    assert raised.value.errors[0]["reason"] == "accessDenied"
    assert fake.executed[-1].outcome == "accessDenied"
    with pytest.raises(api_exceptions.Forbidden):
        list(client.list_datasets("locked-proj", retry=FAST_RETRY))


def test_fault_route_names_are_checked(fake: FakeBigQuery) -> None:
    assert fake.server.route_names == set(ROUTE_NAMES)
    with pytest.raises(ValueError, match="no route named"):
        fake.fail("jobs.inserts", 500)


# -------------------------------------------------------------------------------------- credentials


def test_service_account_jwt_flow_gets_one_token_and_reuses_it(fake: FakeBigQuery) -> None:
    granted = fake.oauth.tokens_granted[JWT_BEARER_GRANT]
    own = _client(fake, _service_account(fake))
    list(own.list_datasets(retry=FAST_RETRY))
    list(own.list_datasets(retry=FAST_RETRY))
    assert fake.oauth.tokens_granted[JWT_BEARER_GRANT] == granted + 1
    authorization = fake.server.requests_for("datasets.list")[-1].headers["authorization"]
    assert authorization.startswith("Bearer ya29.fake-")


def test_oauth_refresh_token_flow(fake: FakeBigQuery) -> None:
    stored = fake.oauth.oauth_credentials(with_access_token=False)
    credentials = google.oauth2.credentials.Credentials(
        token=None,
        refresh_token=stored["refresh_token"],
        client_id=stored["client_id"],
        client_secret=stored["client_secret"],
        token_uri=stored["token_uri"],
        scopes=[BIGQUERY_SCOPE],
    )
    granted = fake.oauth.tokens_granted[REFRESH_TOKEN_GRANT]
    assert [d.dataset_id for d in _client(fake, credentials).list_datasets(retry=FAST_RETRY)]
    assert fake.oauth.tokens_granted[REFRESH_TOKEN_GRANT] == granted + 1


def test_a_stored_access_token_is_used_until_revoked_then_refreshed_and_replayed(fake: FakeBigQuery) -> None:
    stored = fake.oauth.oauth_credentials()
    assert stored["expiry_date"] > (dt.datetime.now(dt.UTC).timestamp() + 3000) * 1000
    credentials = google.oauth2.credentials.Credentials(
        token=stored["access_token"],
        refresh_token=stored["refresh_token"],
        client_id=stored["client_id"],
        client_secret=stored["client_secret"],
        token_uri=stored["token_uri"],
    )
    own = _client(fake, credentials)
    requested = sum(fake.oauth.token_requests.values())
    list(own.list_datasets(retry=FAST_RETRY))
    assert sum(fake.oauth.token_requests.values()) == requested  # the stored token was valid
    before = len(fake.server.requests_for("datasets.list"))
    fake.oauth.revoke_access_tokens()
    assert len(list(own.list_datasets(retry=FAST_RETRY))) == 4
    assert [r.status for r in fake.server.requests_for("datasets.list")[before:]] == [401, 200]
    assert fake.oauth.tokens_granted[REFRESH_TOKEN_GRANT] >= 1
    assert credentials.token != stored["access_token"]


def test_a_persistent_401_surfaces_as_unauthorized_after_two_refreshes(fake: FakeBigQuery) -> None:
    own = _client(fake, _service_account(fake))
    list(own.list_datasets(retry=FAST_RETRY))
    granted = fake.oauth.tokens_granted[JWT_BEARER_GRANT]
    fake.fail("datasets.list", 401, times=3)
    with pytest.raises(api_exceptions.Unauthorized):
        list(own.list_datasets(retry=FAST_RETRY))
    assert fake.oauth.tokens_granted[JWT_BEARER_GRANT] == granted + 2


def test_unissued_keys_and_wrong_secrets_are_refused_by_the_token_endpoint(fake: FakeBigQuery) -> None:
    info = fake.oauth.service_account_info(PROJECT)
    forged = service_account.Credentials.from_service_account_info(
        {**info, "private_key_id": "not-issued-here"}, scopes=[BIGQUERY_SCOPE]
    )
    with pytest.raises(auth_exceptions.RefreshError, match="invalid_grant"):
        list(_client(fake, forged).list_datasets(retry=FAST_RETRY))
    stored = fake.oauth.oauth_credentials(with_access_token=False)
    wrong_secret = google.oauth2.credentials.Credentials(
        token=None,
        refresh_token=stored["refresh_token"],
        client_id=stored["client_id"],
        client_secret="not-the-secret",
        token_uri=stored["token_uri"],
    )
    with pytest.raises(auth_exceptions.RefreshError, match="invalid_grant"):
        list(_client(fake, wrong_secret).list_datasets(retry=FAST_RETRY))
    fake.fail("token", 400, message="Account disabled")
    with pytest.raises(auth_exceptions.RefreshError, match="Account disabled"):
        list(_client(fake, _service_account(fake)).list_datasets(retry=FAST_RETRY))


def test_requests_without_a_token_are_unauthenticated(fake: FakeBigQuery) -> None:
    response = requests.get(f"{fake.url}/bigquery/v2/projects/{PROJECT}/datasets", timeout=5)
    assert response.status_code == 401
    assert response.json()["error"]["errors"][0]["reason"] == "authError"


# ---------------------------------------------------------------------------------------- loads

LOAD_SCHEMA = [
    bigquery.SchemaField("id", "INTEGER", mode="REQUIRED"),
    bigquery.SchemaField("name", "STRING"),
    bigquery.SchemaField("at", "TIMESTAMP"),
    bigquery.SchemaField("scores", "FLOAT", mode="REPEATED"),
    bigquery.SchemaField("address", "RECORD", fields=[bigquery.SchemaField("city", "STRING")]),
]


def _load(client: bigquery.Client, rows: list[dict[str, Any]], table: str, **config: Any) -> bigquery.LoadJob:
    job = client.load_table_from_json(
        rows, f"{PROJECT}.shop.{table}", job_config=bigquery.LoadJobConfig(schema=LOAD_SCHEMA, **config)
    )
    job.result(retry=FAST_RETRY)
    return job


def _people(first: int, count: int) -> list[dict[str, Any]]:
    return [
        {
            "id": n,
            "name": f"person {n}",
            "at": f"2024-02-{1 + n % 28:02d} 10:00:00 UTC",
            "scores": [n / 2, n / 4],
            "address": {"city": "Málaga" if n % 2 else "Paris"},
        }
        for n in range(first, first + count)
    ]


def test_load_jobs_create_then_append_and_rows_become_queryable(fake: FakeBigQuery, client: bigquery.Client) -> None:
    first = _load(client, _people(0, 3), "people", labels={"source": "test"})
    second = _load(client, _people(3, 2), "people", write_disposition="WRITE_APPEND")
    assert (first.output_rows, second.output_rows) == (3, 2)
    stored = fake.rows(PROJECT, "shop", "people")
    assert [row["id"] for row in stored] == [0, 1, 2, 3, 4]
    assert stored[1]["at"] == dt.datetime(2024, 2, 2, 10, tzinfo=dt.UTC)
    assert stored[1]["address"] == {"city": "Málaga"} and stored[1]["scores"] == [0.5, 0.25]
    rows = _run(client, f"SELECT COUNT(*) AS n, SUM(id) AS s FROM `{PROJECT}.shop.people`", "jobs.query")
    assert rows == [{"n": 5, "s": 10}]
    records = [load for load in fake.loads if load.destination == f"{PROJECT}.shop.people"]
    assert [(r.rows_loaded, r.outcome, r.write_disposition) for r in records] == [
        (3, "done", "WRITE_APPEND"),
        (2, "done", "WRITE_APPEND"),
    ]
    assert records[0].labels == {"source": "test"}
    assert fake.server.requests_for("upload")[-1].param("uploadType") == "multipart"


def test_a_bad_row_fails_the_whole_load_and_writes_nothing(fake: FakeBigQuery, client: bigquery.Client) -> None:
    _load(client, _people(0, 2), "atomic")
    batch = [*_people(10, 3), {"id": "not a number"}, *_people(20, 2)]
    with pytest.raises(api_exceptions.BadRequest) as raised:
        _load(client, batch, "atomic")
    assert raised.value.errors[0]["reason"] == "invalid"
    assert "row 3" in raised.value.errors[0]["message"]
    assert [row["id"] for row in fake.rows(PROJECT, "shop", "atomic")] == [0, 1]
    assert (fake.loads[-1].outcome, fake.loads[-1].rows_loaded) == ("invalid", 0)
    with pytest.raises(api_exceptions.BadRequest, match="No such field: nickname"):
        _load(client, [{"id": 1, "nickname": "x"}], "atomic")
    with pytest.raises(api_exceptions.BadRequest, match="Missing required field: id"):
        _load(client, [{"name": "no id"}], "atomic")


def test_write_and_create_dispositions(fake: FakeBigQuery, client: bigquery.Client) -> None:
    _load(client, _people(0, 3), "dispositions")
    _load(client, _people(7, 1), "dispositions", write_disposition="WRITE_TRUNCATE")
    assert [row["id"] for row in fake.rows(PROJECT, "shop", "dispositions")] == [7]
    with pytest.raises(api_exceptions.Conflict):
        _load(client, _people(8, 1), "dispositions", write_disposition="WRITE_EMPTY")
    with pytest.raises(api_exceptions.NotFound):
        _load(client, _people(0, 1), "never_created", create_disposition="CREATE_NEVER")
    assert [r.outcome for r in fake.loads[-2:]] == ["duplicate", "notFound"]


def test_write_truncate_replaces_the_schema_too(fake: FakeBigQuery, client: bigquery.Client) -> None:
    _load(client, _people(0, 2), "reshaped")
    config = bigquery.LoadJobConfig(schema=[bigquery.SchemaField("code", "STRING")], write_disposition="WRITE_TRUNCATE")
    client.load_table_from_json([{"code": "a"}], f"{PROJECT}.shop.reshaped", job_config=config).result(retry=FAST_RETRY)
    assert fake.rows(PROJECT, "shop", "reshaped") == [{"code": "a"}]
    assert [f.name for f in client.get_table(f"{PROJECT}.shop.reshaped", retry=FAST_RETRY).schema] == ["code"]


def test_table_setup_is_all_or_nothing(fake: FakeBigQuery) -> None:
    schema = [{"name": "x", "type": "INTEGER"}]
    with pytest.raises(ValueError, match="not in its schema"):
        fake.add_table(PROJECT, "shop", "half_made", schema, [{"x": 1}, {"y": 2}])
    with pytest.raises(ValueError, match="do not fit its schema"):
        fake.add_table(PROJECT, "shop", "half_made", schema, [{"x": "twelve"}])
    fake.add_table(PROJECT, "shop", "half_made", schema, [{"x": 1}])
    assert fake.rows(PROJECT, "shop", "half_made") == [{"x": 1}]


def test_a_large_load_uses_a_resumable_upload_in_chunks(
    fake: FakeBigQuery, client: bigquery.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Above 5 MB the client switches to a resumable upload; a smaller chunk size (a multiple of
    # 256 KiB, as the resumable protocol requires) makes it send several PUTs instead of one.
    monkeypatch.setattr("google.cloud.bigquery.client._DEFAULT_CHUNKSIZE", 1024 * 1024)
    rows = [{**person, "name": person["name"] * 40} for person in _people(0, 15_000)]
    before = len(fake.server.requests_for("upload"))
    job = _load(client, rows, "bulk")
    uploads = fake.server.requests_for("upload")[before:]
    assert uploads[0].method == "POST" and uploads[0].param("uploadType") == "resumable"
    puts = [r.status for r in uploads[1:]]
    assert len(puts) >= 5 and set(puts[:-1]) == {308} and puts[-1] == 200
    assert job.output_rows == 15_000
    assert _run(client, f"SELECT COUNT(DISTINCT id) AS n FROM `{PROJECT}.shop.bulk`", "jobs.query") == [{"n": 15_000}]


# --------------------------------------------------------------------------------------- network


def _listening() -> set[tuple[str, int]]:
    return {
        (connection.laddr.ip, connection.laddr.port)
        for connection in psutil.Process().net_connections(kind="inet")
        if connection.status == psutil.CONN_LISTEN
    }


def test_nothing_listens_beyond_loopback() -> None:
    before = _listening()
    with FakeBigQuery() as fresh:
        opened = _listening() - before
        assert opened == {("127.0.0.1", fresh.server.port)}
        assert fresh.url == f"http://127.0.0.1:{fresh.server.port}"
    assert _listening() - before == set()
