"""execute_query, validate_query, get_table and load_rows against the fake BigQuery."""

from __future__ import annotations

import base64
import json
import re
from collections import Counter
from decimal import Decimal

import anyio
import pytest
from bigquery_support import DATASET, PROJECT, daily_rows, ga4_rows, meta
from fakes.bigquery import FakeBigQuery
from host_tables import StaticTable, StaticTables

from connectors.bigquery.cost import TIB
from connectors.bigquery.tools import PAGE_SIZE

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # a server process per test, timed faults
EVENTS = f"`{PROJECT}.{DATASET}.events_*`"


async def test_result_types_follow_the_bigquery_schema(bq_host, credentials) -> None:
    async with bq_host() as host:
        result = await host.call(
            "execute_query",
            {"query": f"SELECT * FROM `{PROJECT}.reporting.daily` ORDER BY sessions"},
            meta(credentials),
        )
        assert result.kind == "extraction", result.error
        data = result.system_data
        types = {h["name"]: h["type"] for h in data["headers"]}
        assert types == {
            "day": "date",
            "country": "string",
            "sessions": "integer",
            "revenue": "number",
            "conversion_rate": "number",
            "is_weekend": "boolean",
            "updated_at": "datetime",
            "raw": "string",
            "tags": "json",
            "device": "json",
        }
        rows = result.rows(exact=True)
        expected = daily_rows()
        assert len(rows) == len(expected) == result.model_response["total_rows"]
        first, source = rows[0], expected[0]
        assert first["day"] == source["day"] and first["sessions"] == source["sessions"]
        assert Decimal(str(first["revenue"])) == Decimal(source["revenue"])  # NUMERIC stays exact
        assert first["updated_at"] == "2026-08-01T12:30:00Z"
        assert base64.b64decode(first["raw"]) == b"\x00\x01\x02"
        assert first["tags"] == ["a", "b"] and first["device"] == {"category": "mobile"}
        assert result.model_response["dates"] == [result.system_info["fetched_at"][:10]]


async def test_ga4_queries_as_users_write_them(bq_host, fake: FakeBigQuery, credentials) -> None:
    sql = (
        "SELECT event_name, COUNT(*) AS events, "
        "COUNTIF((SELECT value.string_value FROM UNNEST(event_params) WHERE key = 'page_location') IS NOT NULL) "
        f"AS with_page FROM {EVENTS} WHERE _TABLE_SUFFIX BETWEEN '20260902' AND '20260904' GROUP BY 1"
    )
    rows = ga4_rows(fake, "20260902", "20260904")
    expected_events = Counter(r["event_name"] for r in rows)
    expected_pages = Counter(
        r["event_name"] for r in rows if any(p["key"] == "page_location" for p in r["event_params"] or [])
    )
    async with bq_host() as host:
        result = await host.call("execute_query", {"query": sql}, meta(credentials))
        got = {r["event_name"]: (r["events"], r["with_page"]) for r in result.rows()}
        assert got == {name: (count, expected_pages[name]) for name, count in expected_events.items()}
        assert result.model_response["dates"] == ["2026-09-02", "2026-09-04"]  # the _TABLE_SUFFIX window


async def test_labels_cap_and_max_rows(bq_host, fake: FakeBigQuery, credentials) -> None:
    sql = f"SELECT event_name, user_pseudo_id FROM {EVENTS} WHERE _TABLE_SUFFIX BETWEEN '20260901' AND '20260902'"
    total = len(ga4_rows(fake, "20260901", "20260902"))
    async with bq_host() as host:
        capped = await host.call(
            "execute_query", {"query": sql}, meta(credentials, cost_limit_usd=0.5, config={"max_rows": 50})
        )
        job = fake.executed[-1]
        assert job.maximum_bytes_billed == int(0.5 / 6.25 * TIB)
        assert job.labels == {
            "acp-connector": "bigquery",
            "acp-tool": "execute_query",
            "acp-call": job.labels["acp-call"],
        }
        assert re.fullmatch(r"call-[0-9a-f]{12}", job.labels["acp-call"])
        assert capped.model_response["total_rows"] == 50 == capped.system_data["row_count"]
        assert any("more than max_rows (50)" in w for w in capped.model_response["warnings"])
        assert str(total) in capped.model_response["warnings"][0]


async def test_progress_notifications_while_pages_arrive(bq_host, fake: FakeBigQuery, credentials) -> None:
    sql = f"SELECT event_name FROM {EVENTS}"
    async with bq_host() as host:
        progress: list[dict] = []
        result = await host.call("execute_query", {"query": sql}, meta(credentials), progress=progress)
        total = result.model_response["total_rows"]
        assert progress and progress[-1]["progress"] == total == progress[-1]["total"]
        assert [p["progress"] for p in progress] == sorted(p["progress"] for p in progress)


async def test_read_only_by_statement_type_and_scripts(bq_host, fake: FakeBigQuery, credentials) -> None:
    before = len(fake.executed)
    async with bq_host() as host:
        for sql, kind in (
            (f"INSERT INTO `{PROJECT}.reporting.daily` (country) VALUES ('XX')", "INSERT"),
            (f"CREATE TABLE `{PROJECT}.reporting.copy` AS SELECT 1 AS x", "CREATE_TABLE_AS_SELECT"),
            (f"DROP TABLE `{PROJECT}.reporting.daily`", "DROP_TABLE"),
            (
                f"MERGE `{PROJECT}.reporting.daily` t USING (SELECT 1 AS x) s ON FALSE WHEN NOT MATCHED THEN "
                "INSERT (sessions) VALUES (1)",
                "MERGE",
            ),
        ):
            refused = await host.call("execute_query", {"query": sql}, meta(credentials))
            assert refused.error_name == "ACP_READ_ONLY_VIOLATION", (sql, refused.error)
            assert f"(the query is {kind})" in refused.error["message"]
        script = await host.call(
            "execute_query",
            {"query": f"SELECT 1; DELETE FROM `{PROJECT}.reporting.daily` WHERE TRUE"},
            meta(credentials),
        )
        assert script.error_name == "ACP_READ_ONLY_VIOLATION" and "script" in script.error["message"]
        checked = await host.call(
            "validate_query", {"query": f"DELETE FROM `{PROJECT}.reporting.daily` WHERE TRUE"}, meta(credentials)
        )
        assert checked.model_response["read_only"] is False and checked.model_response["statement_type"] == "DELETE"
    assert len(fake.executed) == before
    assert len(fake.rows(PROJECT, "reporting", "daily")) == len(daily_rows())


async def test_accuracy_bounds(bq_host, fake: FakeBigQuery, credentials) -> None:
    fake.add_dataset(PROJECT, "lake", location="EU")
    fake.add_table(
        PROJECT,
        "lake",
        "clustered",
        [{"name": "k", "type": "STRING"}],
        [{"k": "x" * 50}] * 10,
        accuracy="UPPER_BOUND",
        bytes_scale=10**9,
        clustering=["k"],
    )
    fake.add_table(PROJECT, "lake", "external", [{"name": "k", "type": "STRING"}], [{"k": "y"}], accuracy="LOWER_BOUND")
    before = len(fake.executed)
    async with bq_host() as host:
        upper = await host.call(
            "execute_query", {"query": f"SELECT k FROM `{PROJECT}.lake.clustered`"}, meta(credentials)
        )
        assert upper.error_name == "ACP_COST_LIMIT_EXCEEDED" and "often far lower" in upper.error["message"]
        assert upper.error["data"]["accuracy"] == "UPPER_BOUND"
        lower = await host.call(
            "execute_query",
            {"query": f"SELECT k FROM `{PROJECT}.lake.external`"},
            meta(credentials, cost_limit_usd=100),
        )
        assert lower.error_name == "ACP_COST_LIMIT_EXCEEDED" and "cannot be shown to fit" in lower.error["message"]
        validated = await host.call(
            "validate_query",
            {"query": f"SELECT k FROM `{PROJECT}.lake.external`"},
            meta(credentials, cost_limit_usd=100),
        )
        assert validated.model_response["within_cost_limit"] is False
        assert validated.model_response["accuracy"] == "LOWER_BOUND"
    assert len(fake.executed) == before


async def test_zero_limit_refuses_table_queries_but_not_free_ones(bq_host, fake: FakeBigQuery, credentials) -> None:
    async with bq_host() as host:
        refused = await host.call(
            "execute_query", {"query": f"SELECT event_name FROM {EVENTS}"}, meta(credentials, cost_limit_usd=0)
        )
        assert refused.error_name == "ACP_COST_LIMIT_EXCEEDED" and refused.error["data"]["limit_usd"] == 0
        free = await host.call(
            "execute_query",
            {"query": "SELECT x FROM UNNEST(GENERATE_ARRAY(1, 30)) AS x"},
            meta(credentials, cost_limit_usd=0),
        )
        assert free.model_response["total_rows"] == 30
        assert fake.executed[-1].maximum_bytes_billed == 1  # never 0: 0 would mean "no cap"
        assert free.system_info["cost_actual_usd"] == 0


async def test_allowed_datasets_refuse_before_running(bq_host, fake: FakeBigQuery, credentials) -> None:
    config = {"allowed_datasets": json.dumps([r"analytics_\d+"])}
    before = len(fake.executed)
    async with bq_host() as host:
        refused = await host.call(
            "execute_query",
            {"query": f"SELECT country FROM `{PROJECT}.reporting.daily`"},
            meta(credentials, config=config),
        )
        assert refused.error_name == "ACP_INVALID_ARGUMENTS"
        assert f"{PROJECT}.reporting.daily" in refused.error["message"]
        joined = await host.call(
            "execute_query",
            {"query": f"SELECT e.event_name FROM {EVENTS} e JOIN `{PROJECT}.reporting.daily` d ON FALSE"},
            meta(credentials, config=config),
        )
        assert joined.error_name == "ACP_INVALID_ARGUMENTS"
        assert len(fake.executed) == before
        allowed = await host.call(
            "execute_query",
            {"query": f"SELECT event_name FROM {EVENTS} WHERE _TABLE_SUFFIX = '20260901'"},
            meta(credentials, config=config),
        )
        assert allowed.kind == "extraction"


async def test_allowed_datasets_refuse_a_routine_outside_them(bq_host, fake: FakeBigQuery, credentials) -> None:
    # A persistent SQL UDF may read tables of its own dataset: calling one is reading there.
    fake.add_function(PROJECT, "reporting", "bracketed", ["s"], "CONCAT('[', s, ']')")
    fake.add_function(PROJECT, DATASET, "doubled", ["n"], "n * 2")
    config = {"allowed_datasets": json.dumps([r"analytics_\d+"])}
    one_day = f"FROM {EVENTS} WHERE _TABLE_SUFFIX = '20260901'"
    async with bq_host() as host:
        before = len(fake.executed)
        outside = f"SELECT reporting.bracketed(event_name) AS e {one_day}"
        refused = await host.call("execute_query", {"query": outside}, meta(credentials, config=config))
        assert refused.error_name == "ACP_INVALID_ARGUMENTS"
        message = refused.error["message"]
        assert f"routine {PROJECT}.reporting.bracketed" in message and "built-in functions" in message
        assert fake.dry_runs[-1].referenced_routines == (f"{PROJECT}.reporting.bracketed",)
        assert len(fake.executed) == before
        validated = await host.call("validate_query", {"query": outside}, meta(credentials, config=config))
        assert validated.model_response["referenced_routines"] == [f"{PROJECT}.reporting.bracketed"]
        assert any("reporting.bracketed" in note for note in validated.model_response["notes"])

        inside = (
            f"SELECT {DATASET}.doubled(COUNT(*)) AS n, SAFE_DIVIDE(COUNT(*), 0) AS none, "
            f"MIN(PARSE_DATE('%Y%m%d', event_date)) AS day {one_day}"
        )
        allowed = await host.call("execute_query", {"query": inside}, meta(credentials, config=config))
        assert allowed.kind == "extraction", allowed.error
        [row] = allowed.rows()
        assert row["n"] == 2 * len(fake.rows(PROJECT, DATASET, "events_20260901")) and row["none"] is None
        assert row["day"] == "2026-09-01"
        # Without a restriction the same routine runs: the check is allowed_datasets', not BigQuery's.
        free = await host.call("execute_query", {"query": f"{outside} LIMIT 1"}, meta(credentials))
        assert free.kind == "extraction" and free.rows()[0]["e"].startswith("[")


async def test_allowed_datasets_refuse_a_view_hiding_a_table_past_the_dry_runs_50(
    bq_host, fake: FakeBigQuery, credentials
) -> None:
    # A view in an allowed dataset reads 50 allowed tables and a secret one; BigQuery lists only 50.
    schema = [{"name": "a", "type": "INTEGER"}]
    fake.add_dataset(PROJECT, "analytics_9")
    fake.add_dataset(PROJECT, "secret")
    allowed = [f"`{PROJECT}.analytics_9.t{i:02d}`" for i in range(50)]
    for i in range(50):
        fake.add_table(PROJECT, "analytics_9", f"t{i:02d}", schema, [{"a": i}])
    fake.add_table(PROJECT, "secret", "s", schema, [{"a": 999}])
    union = " UNION ALL ".join(f"SELECT a FROM {t}" for t in [*allowed, f"`{PROJECT}.secret.s`"])
    fake.add_table(PROJECT, "analytics_9", "v", None, kind="VIEW", view_query=union)
    fake.add_ga4_export(PROJECT, "analytics_60", start="2026-07-01", days=60, events_per_day=5)
    config = {"allowed_datasets": json.dumps([r"analytics_\d+"])}
    async with bq_host() as host:
        before = len(fake.executed)
        view = await host.call(
            "execute_query", {"query": f"SELECT a FROM `{PROJECT}.analytics_9.v`"}, meta(credentials, config=config)
        )
        assert f"{PROJECT}.secret.s" in fake.dry_runs[-1].referenced_tables  # read, but past the 50 listed
        assert view.error_name == "ACP_INVALID_ARGUMENTS" and "without naming it" in view.error["message"]
        assert len(fake.executed) == before
        validated = await host.call(
            "validate_query", {"query": f"SELECT a FROM `{PROJECT}.analytics_9.v`"}, meta(credentials, config=config)
        )
        assert any("without naming it" in note for note in validated.model_response["notes"])

        named = " UNION ALL ".join(f"SELECT a FROM {t}" for t in allowed)
        tables = await host.call("execute_query", {"query": named}, meta(credentials, config=config))
        assert tables.kind == "extraction" and tables.model_response["total_rows"] == 50
        shards = await host.call(
            "execute_query",
            {"query": f"SELECT COUNT(*) AS n FROM `{PROJECT}.analytics_60.events_*`"},
            meta(credentials, config=config),
        )
        assert shards.kind == "extraction" and shards.rows() == [{"n": 60 * 5}]


async def test_session_budget_accumulates_per_conversation(bq_host, fake: FakeBigQuery, credentials) -> None:
    sql = f"SELECT event_name, user_pseudo_id FROM {EVENTS} WHERE _TABLE_SUFFIX = '20260901'"
    async with bq_host() as host:
        probe = await host.call("validate_query", {"query": sql}, meta(credentials))
        billed = max(probe.model_response["total_bytes_processed"], 10 * 2**20)
        cost = billed / TIB * 6.25
        budget = cost * 2.5  # room for two runs, not three
        conv = meta(credentials, conversation_id="conv-budget", config={"session_budget_usd": budget})
        first = await host.call("execute_query", {"query": sql}, conv)
        second = await host.call("execute_query", {"query": sql}, conv)
        assert first.kind == second.kind == "extraction"
        spent = second.system_info["source"]["session_spent_usd"]
        both = first.system_info["cost_actual_usd"] + second.system_info["cost_actual_usd"]
        assert spent == pytest.approx(both, abs=2e-6)  # each figure is rounded to 6 decimals
        third = await host.call("execute_query", {"query": sql}, conv)
        assert third.error_name == "ACP_COST_LIMIT_EXCEEDED" and "session_budget_usd" in third.error["message"]
        other = await host.call("execute_query", {"query": sql}, {**conv, "conversation_id": "conv-other"})
        assert other.kind == "extraction"  # another conversation has its own budget


async def test_cancelling_a_call_cancels_its_job(bq_host, fake: FakeBigQuery, credentials) -> None:
    fake.job_duration_s = 30
    try:
        async with bq_host() as host:
            with anyio.move_on_after(1.5):
                await host.call("execute_query", {"query": f"SELECT event_name FROM {EVENTS}"}, meta(credentials))
            job_id = fake.executed[-1].job_id
            with anyio.fail_after(10):
                while job_id not in fake.cancelled:
                    await anyio.sleep(0.05)
            fake.job_duration_s = 0
            again = await host.call("validate_query", {"query": "SELECT 1"}, meta(credentials))
            assert again.model_response["valid"] is True  # the server keeps serving
    finally:
        fake.job_duration_s = 0


async def test_a_call_cancelled_while_pages_arrive_fetches_no_more_pages(
    bq_host, fake: FakeBigQuery, credentials
) -> None:
    pages = 5
    sql = f"SELECT x FROM UNNEST(GENERATE_ARRAY(1, {pages * PAGE_SIZE})) AS x"  # reads no table: free
    fake.slow("jobs.getQueryResults", 1.0, times=2 * pages)
    try:
        async with bq_host() as host:
            with anyio.move_on_after(2.5):
                await host.call("execute_query", {"query": sql}, meta(credentials))
            await anyio.sleep(pages)  # time enough to fetch every page, had the paging gone on
            job_id = fake.executed[-1].job_id
            fetched = [r for r in fake.requests_for_job(job_id) if r.route == "jobs.getQueryResults"]
            assert fake.executed[-1].outcome == "done" and 1 <= len(fetched) < pages
    finally:
        fake.server.clear_faults()


async def test_job_timeout_cancels_the_job(bq_host, fake: FakeBigQuery, credentials) -> None:
    fake.job_duration_s = 30
    try:
        async with bq_host() as host:
            with anyio.fail_after(15):
                result = await host.call(
                    "execute_query",
                    {"query": f"SELECT event_name FROM {EVENTS}"},
                    meta(credentials, config={"job_timeout_s": 1}),
                )
            assert result.error_name == "ACP_UPSTREAM_ERROR" and "job_timeout_s" in result.error["message"]
            assert fake.executed[-1].job_id in fake.cancelled
    finally:
        fake.job_duration_s = 0


async def test_validate_query_reports_invalid_sql_as_an_answer(bq_host, credentials) -> None:
    async with bq_host() as host:
        bad = await host.call("validate_query", {"query": "SELECT nope FROM"}, meta(credentials))
        assert bad.kind == "info" and bad.model_response["valid"] is False and bad.model_response["error"]
        missing = await host.call(
            "validate_query", {"query": f"SELECT 1 FROM `{PROJECT}.{DATASET}.nope`"}, meta(credentials)
        )
        assert missing.model_response["valid"] is False and "nope" in missing.model_response["error"]
        run = await host.call("execute_query", {"query": "SELECT nope FROM"}, meta(credentials))
        assert run.error_name == "ACP_INVALID_ARGUMENTS" and "Fix the SQL" in run.error["message"]


async def test_get_table(bq_host, fake: FakeBigQuery, credentials) -> None:
    async with bq_host() as host:
        daily = await host.call("get_table", {"resource_id": f"{PROJECT}.reporting.daily"}, meta(credentials))
        data = daily.model_response
        assert data["rows"] == len(daily_rows()) and data["description"] == "Daily KPIs"
        assert data["columns"][0] == {"name": "day", "type": "DATE", "description": "Calendar day"}
        assert {"name": "device.category", "type": "STRING"} in data["columns"]
        wildcard = await host.call("get_table", {"resource_id": f"{PROJECT}.{DATASET}.events_*"}, meta(credentials))
        assert wildcard.model_response["shards"] == 7 and wildcard.model_response["latest_shard"] == "events_20260907"
        level = await host.call("get_table", {"resource_id": f"{PROJECT}.{DATASET}"}, meta(credentials))
        assert level.error_name == "ACP_INVALID_ARGUMENTS"
        missing = await host.call("get_table", {"resource_id": f"{PROJECT}.reporting.nope"}, meta(credentials))
        assert missing.error_name == "ACP_RESOURCE_NOT_FOUND"


async def test_get_table_on_a_wildcard_skips_the_intraday_table(bq_host, ga4_intraday: str, credentials) -> None:
    async with bq_host() as host:
        result = await host.call("get_table", {"resource_id": f"{PROJECT}.{ga4_intraday}.events_*"}, meta(credentials))
        data = result.model_response
        assert (data["shards"], data["first_shard"]) == (3, "events_20260901")
        assert data["latest_shard"] == data["schema_of"] == "events_20260903"
        intraday = await host.call(
            "get_table", {"resource_id": f"{PROJECT}.{ga4_intraday}.events_intraday_*"}, meta(credentials)
        )
        assert intraday.model_response["latest_shard"] == "events_intraday_20260904"


LOAD_HEADERS = [
    {"name": "day", "type": "date"},
    {"name": "visits", "type": "integer"},
    {"name": "note", "type": "string"},
]
LOAD_ROWS = [{"day": "2026-10-01", "visits": 5, "note": "a"}, {"day": "2026-10-02", "visits": 7, "note": None}]


async def test_load_rows_follows_the_access_mode(bq_host, fake: FakeBigQuery, credentials) -> None:
    fake.add_dataset(PROJECT, "scratch", location="EU")
    target = f"{PROJECT}.scratch.visits"
    tables = StaticTables({"ds_visits": StaticTable(headers=LOAD_HEADERS, rows=LOAD_ROWS)})
    async with bq_host(tables=tables) as host:
        read_only = await host.call("load_rows", {"resource_id": target, "table_ref": "ds_visits"}, meta(credentials))
        assert read_only.error_name == "ACP_READ_ONLY_VIOLATION" and "access_mode" in read_only.error["message"]
        adding = meta(credentials, config={"access_mode": "readAndOnlyAdd"})
        created = await host.call("load_rows", {"resource_id": target, "table_ref": "ds_visits"}, adding)
        assert created.model_response["created"] is True and created.model_response["loaded_rows"] == 2
        appended = await host.call("load_rows", {"resource_id": target, "table_ref": "ds_visits"}, adding)
        assert appended.model_response["created"] is False
        assert [(str(r["day"]), r["visits"]) for r in fake.rows(PROJECT, "scratch", "visits")] == [
            ("2026-10-01", 5),
            ("2026-10-02", 7),
        ] * 2
        assert all(load.labels["acp-tool"] == "load_rows" for load in fake.loads)
        closed = meta(
            credentials,
            config={
                "access_mode": "readAndOnlyAdd",
                "table_rules": json.dumps([{"pattern": "scratch\\.visits", "mode": "onlyRead"}]),
            },
        )
        refused = await host.call("load_rows", {"resource_id": target, "table_ref": "ds_visits"}, closed)
        assert refused.error_name == "ACP_READ_ONLY_VIOLATION"
        assert len(fake.rows(PROJECT, "scratch", "visits")) == 4


async def test_load_rows_is_all_or_nothing(bq_host, fake: FakeBigQuery, credentials) -> None:
    fake.add_dataset(PROJECT, "scratch2", location="EU")
    fake.add_table(PROJECT, "scratch2", "counts", [{"name": "n", "type": "INTEGER"}], [{"n": 1}])
    bad = StaticTable(headers=[{"name": "n", "type": "string"}], rows=[{"n": "2"}, {"n": "not a number"}])
    extra = StaticTable(
        headers=[{"name": "n", "type": "integer"}, {"name": "m", "type": "integer"}], rows=[{"n": 1, "m": 2}]
    )
    adding = meta(credentials, config={"access_mode": "readAndOnlyAdd"})
    async with bq_host(tables=StaticTables({"bad": bad, "extra": extra})) as host:
        failed = await host.call("load_rows", {"resource_id": f"{PROJECT}.scratch2.counts", "table_ref": "bad"}, adding)
        assert failed.is_error and failed.error_name == "ACP_INVALID_ARGUMENTS"
        assert fake.rows(PROJECT, "scratch2", "counts") == [{"n": 1}]
        unknown = await host.call(
            "load_rows", {"resource_id": f"{PROJECT}.scratch2.counts", "table_ref": "extra"}, adding
        )
        assert unknown.error_name == "ACP_INVALID_ARGUMENTS"
        assert "column(s) m that" in unknown.error["message"] and "Its columns: n." in unknown.error["message"]
        assert fake.rows(PROJECT, "scratch2", "counts") == [{"n": 1}]
        wildcard = await host.call(
            "load_rows", {"resource_id": f"{PROJECT}.{DATASET}.events_*", "table_ref": "bad"}, adding
        )
        assert wildcard.error_name == "ACP_INVALID_ARGUMENTS"


async def test_maximum_bytes_billed_stops_a_job_that_outgrew_its_dry_run(
    bq_host, fake: FakeBigQuery, credentials
) -> None:
    """The second safety net (spec 9.2): BigQuery's bytesBilledLimitExceeded, raised by the client as a
    500, is ACP_COST_LIMIT_EXCEEDED, and nothing was billed."""
    sql = f"SELECT event_name FROM {EVENTS} WHERE _TABLE_SUFFIX = '20260901'"
    limit = 0.001  # ~176 MB at $6.25/TiB: the dry run fits, the grown table does not
    fake.growth_bytes = 10 * 2**30
    try:
        async with bq_host() as host:
            result = await host.call("execute_query", {"query": sql}, meta(credentials, cost_limit_usd=limit))
            job = fake.executed[-1]
            assert job.outcome == "bytesBilledLimitExceeded" and job.total_bytes_billed == 0
            assert result.error_name == "ACP_COST_LIMIT_EXCEEDED"
            assert result.error["data"]["maximum_bytes_billed"] == job.maximum_bytes_billed == int(limit / 6.25 * TIB)
            assert "Narrow the query" in result.error["message"]
    finally:
        fake.growth_bytes = 0
