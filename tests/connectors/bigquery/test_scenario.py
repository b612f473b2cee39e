"""Spec 15.3 end to end through the test host: validate → refused by cost → narrowed with
_TABLE_SUFFIX and run → DELETE refused → dataset autocontext.

The fake plays a 412-shard GA4 export of about 600 GB: each stored row stands for many rows in
byte accounting (``bytes_scale``), so the dry runs give real-sized figures computed from the
columns and shards each query reads.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator

import pytest
from bigquery_support import service_account
from fakes.bigquery import FakeBigQuery

from connectors.bigquery.cost import TIB

pytestmark = pytest.mark.anyio
PROJECT, DATASET = "mi-proyecto", "analytics_123"
LATEST = dt.date(2026, 9, 23)
SHARDS = 412
BYTES_SCALE = 5_000_000
COUNT_QUERY = f"SELECT event_name, COUNT(*) n FROM `{PROJECT}.{DATASET}.events_*` GROUP BY 1"
NARROW_QUERY = (
    f"SELECT event_date, event_name, user_pseudo_id FROM `{PROJECT}.{DATASET}.events_*` "
    "WHERE _TABLE_SUFFIX BETWEEN '20260901' AND '20260907'"
)


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeBigQuery]:
    with FakeBigQuery() as server:
        server.add_project(PROJECT)
        server.add_ga4_export(
            PROJECT,
            DATASET,
            start=LATEST - dt.timedelta(days=SHARDS - 1),
            days=SHARDS,
            events_per_day=30,
            bytes_scale=BYTES_SCALE,
        )
        yield server


async def test_spec_15_3_scenario(bq_host, fake: FakeBigQuery) -> None:
    credentials = service_account(fake, PROJECT)
    meta = {"credentials": credentials, "cost_limit_usd": 1}
    window = [row for day in range(1, 8) for row in fake.rows(PROJECT, DATASET, f"events_202609{day:02d}")]
    async with bq_host() as host:
        # 1. The model validates the SQL: valid, SELECT, too expensive for the $1 limit.
        validated = await host.call(
            "validate_query", {"resource_id": f"{PROJECT}.{DATASET}", "query": COUNT_QUERY}, meta
        )
        info = validated.model_response
        dry = fake.dry_runs[-1]
        assert validated.kind == "info"
        assert (info["valid"], info["statement_type"], info["read_only"]) == (True, "SELECT", True)
        assert info["total_bytes_processed"] == dry.total_bytes_processed
        assert info["estimated_cost_usd"] == pytest.approx(dry.total_bytes_processed / TIB * 6.25, abs=1e-6)
        assert info["estimated_cost_usd"] > 1 and info["within_cost_limit"] is False
        assert info["cost_limit_usd"] == 1 and info["human_bytes"].endswith("GB")
        assert info["referenced_tables"] == [f"{PROJECT}.{DATASET}.events_*"]
        assert info["result_schema"] == [{"name": "event_name", "type": "STRING"}, {"name": "n", "type": "INTEGER"}]
        assert validated.system_info["cost_estimate_usd"] == 0  # a dry run is free

        # 2. It runs it anyway: the preflight stops it and the query never reaches BigQuery as a job.
        executed_before = len(fake.executed)
        refused = await host.call(
            "execute_query", {"query": COUNT_QUERY}, {**meta, "default_resource_id": f"{PROJECT}.{DATASET}"}
        )
        error = refused.error
        assert refused.is_error and error["code"] == -32010 and error["name"] == "ACP_COST_LIMIT_EXCEEDED"
        estimate = error["data"]["estimate_usd"]
        assert error["message"] == (
            f"The query would cost about ${estimate:,.2f} and the limit is $1.00. Narrow the query (fewer columns, "
            "shorter date range, filter by partition) or ask the user to raise the limit."
        )
        assert error["data"]["limit_usd"] == 1 and error["data"]["price_per_tib_usd"] == 6.25
        assert error["data"]["total_bytes_processed"] == info["total_bytes_processed"]
        assert refused.system_info["cost_estimate_usd"] == estimate
        assert json.loads(refused.text) == {"error": error}
        assert len(fake.executed) == executed_before

        # 3. Narrowed with _TABLE_SUFFIX to a week, it passes and runs once, capped by maximum_bytes_billed.
        narrowed = await host.call(
            "execute_query",
            {"query": NARROW_QUERY},
            {
                **meta,
                "default_resource_id": f"{PROJECT}.{DATASET}",
                "autocontext_delivered": True,
                "sampling": "spread",
                "inline_max_bytes": 4096,  # the spec's 5 MiB, scaled down: the full table travels as table_uri
            },
        )
        assert narrowed.kind == "extraction", narrowed.error
        model, system = narrowed.model_response, narrowed.system_info
        assert model["total_rows"] == len(window) and model["returned_rows"] == 25 and model["truncated"] is True
        assert model["notice"] == f"Showing 25 of {len(window)} extracted rows."
        assert model["columns"] == ["event_date", "event_name", "user_pseudo_id"]
        assert model["extra"]["cache_hit"] is False and model["extra"]["bytes_processed"] > 0
        job = fake.executed[-1]
        assert len(fake.executed) == executed_before + 1 and job.sql == NARROW_QUERY
        assert job.maximum_bytes_billed == int(1 / 6.25 * TIB)
        assert job.labels["acp-connector"] == "bigquery" and job.labels["acp-tool"] == "execute_query"
        assert system["cost_estimate_usd"] == pytest.approx(job.total_bytes_processed / TIB * 6.25, abs=1e-6)
        assert system["cost_actual_usd"] == pytest.approx(job.total_bytes_billed / TIB * 6.25, abs=1e-6)
        assert 0 < system["cost_estimate_usd"] < 1
        source = system["source"]
        assert source["job_id"] == job.job_id and source["location"] == "EU"
        assert source["total_bytes_billed"] == job.total_bytes_billed
        data = narrowed.system_data
        assert data["format"] == "file" and data["row_count"] == len(window)
        assert [h["type"] for h in data["headers"]] == ["string", "string", "string"]
        stored = narrowed.rows()
        assert sorted((r["event_date"], r["event_name"], r["user_pseudo_id"]) for r in stored) == sorted(
            (r["event_date"], r["event_name"], r["user_pseudo_id"]) for r in window
        )

        # 4. A write is refused by the dry run's statement type, and never runs.
        deleted = await host.call(
            "execute_query",
            {"query": f"DELETE FROM `{PROJECT}.{DATASET}.tmp` WHERE true"},
            {**meta, "default_resource_id": f"{PROJECT}.{DATASET}"},
        )
        assert deleted.error == {
            "code": -32019,
            "name": "ACP_READ_ONLY_VIOLATION",
            "message": "This ACP is read-only: only SELECT statements are executed (the query is DELETE).",
        }
        assert len(fake.executed) == executed_before + 1

        # 5. Dataset autocontext: the 412 shards are one events_* entry; its schema is the latest shard's.
        context = await host.call(
            "autocontext", {"resource_id": f"{PROJECT}.{DATASET}", "request_data": ["tables", "table_schemas"]}, meta
        )
        blocks = {b["id"]: b for b in context.model_response}
        assert list(blocks) == ["tables", "table_schemas"]
        assert blocks["tables"]["data"] == [
            {
                "table": f"{PROJECT}.{DATASET}.events_*",
                "type": "TABLE",
                "shards": SHARDS,
                "first_shard": f"events_{(LATEST - dt.timedelta(days=SHARDS - 1)):%Y%m%d}",
                "latest_shard": "events_20260923",
                "query_hint": f"FROM `{PROJECT}.{DATASET}.events_*` WHERE _TABLE_SUFFIX BETWEEN 'YYYYMMDD' AND "
                "'YYYYMMDD'",
                "partitioning": None,
            }
        ]
        schema = blocks["table_schemas"]["data"][0]
        assert schema["table"] == "events_*" and schema["schema_of"] == "events_20260923"
        columns = {c["name"]: c for c in schema["columns"]}
        assert columns["event_date"]["type"] == "STRING" and "mode" not in columns["event_date"]  # NULLABLE
        assert (columns["event_params"]["type"], columns["event_params"]["mode"]) == ("RECORD", "REPEATED")
        assert columns["event_params.key"]["type"] == "STRING"
        assert columns["event_params.value.int_value"]["type"] == "INTEGER"
        assert len(fake.executed) == executed_before + 1  # autocontext never runs a query job
