"""Autocontext of the BigQuery connector: resource suggestions and the four blocks, checked
against the fake's stored data. No block ever runs a query job."""

from __future__ import annotations

from collections import Counter

import pytest
from bigquery_support import DATASET, PROJECT, meta
from fakes.bigquery import FakeBigQuery

from connectors.bigquery.blocks import GA4_SAMPLE_ROWS

pytestmark = pytest.mark.anyio


async def test_suggestions_list_projects_and_their_datasets(bq_host, fake: FakeBigQuery, credentials) -> None:
    async with bq_host() as host:
        listing = (await host.call("autocontext", {}, {"credentials": credentials})).model_response
        ids = [r["resource_id"] for r in listing["resources"]]
        assert PROJECT in ids and f"{PROJECT}.{DATASET}" in ids and f"{PROJECT}.reporting" in ids
        project = next(r for r in listing["resources"] if r["resource_id"] == PROJECT)
        assert project["name"] == "ACP test project"
        found = await host.call("autocontext", {"query": "reporting"}, {"credentials": credentials})
        assert [r["resource_id"] for r in found.model_response["resources"]] == [f"{PROJECT}.reporting"]


async def test_project_and_dataset_blocks(bq_host, fake: FakeBigQuery, credentials) -> None:
    executed = len(fake.executed)
    async with bq_host() as host:
        project = await host.call("autocontext", {"resource_id": PROJECT}, meta(credentials))
        blocks = {b["id"]: b for b in project.model_response}
        assert set(blocks) == {"datasets"}
        datasets = {d["dataset"]: d for d in blocks["datasets"]["data"]}
        assert datasets[f"{PROJECT}.reporting"]["location"] == "EU" and f"{PROJECT}.{DATASET}" in datasets

        reporting = await host.call("autocontext", {"resource_id": f"{PROJECT}.reporting"}, meta(credentials))
        blocks = {b["id"]: b for b in reporting.model_response}
        assert blocks["tables"]["data"][0]["table"] == f"{PROJECT}.reporting.daily"
        schema = blocks["table_schemas"]["data"][0]
        assert schema["table"] == "daily" and {"name": "device.category", "type": "STRING"} in schema["columns"]
        assert blocks["ga4_export"]["data"]["detected"] is False

        table = await host.call("autocontext", {"resource_id": f"{PROJECT}.{DATASET}.events_*"}, meta(credentials))
        (only,) = table.model_response
        assert only["id"] == "table_schemas" and only["data"][0]["schema_of"] == "events_20260907"
    assert len(fake.executed) == executed


async def test_ga4_export_block_is_a_labelled_sample_of_the_latest_shard(
    bq_host, fake: FakeBigQuery, credentials
) -> None:
    sample = fake.rows(PROJECT, DATASET, "events_20260907")[:GA4_SAMPLE_ROWS]
    names = Counter(r["event_name"] for r in sample)
    keys = Counter(p["key"] for r in sample for p in r["event_params"] or [])
    async with bq_host() as host:
        result = await host.call(
            "autocontext", {"resource_id": f"{PROJECT}.{DATASET}", "request_data": ["ga4_export"]}, meta(credentials)
        )
        data = result.model_response[0]["data"]
    assert data["detected"] is True and data["property_id"] == "123"
    assert data["sample"]["shard"] == "events_20260907" and data["sample"]["events"] == len(sample)
    assert "sample" in data["sample"]["note"]
    assert {e["event_name"]: e["events_in_sample"] for e in data["event_names"]} == dict(names)
    params = {p["key"]: p for p in data["event_params"]}
    assert {k: p["events_in_sample"] for k, p in params.items()} == dict(keys)
    assert params["page_location"]["value_field"] == "string_value" and params["page_location"]["examples"]
    assert params["ga_session_id"]["value_field"] == "int_value"
    assert fake.server.requests_for("tabledata.list"), "the sample is read with tabledata.list (free)"


async def test_wildcard_schemas_and_resources_skip_the_intraday_table(
    bq_host, fake: FakeBigQuery, ga4_intraday: str, credentials
) -> None:
    fake.add_ga4_export(PROJECT, "analytics_789", start="2026-09-01", days=0, intraday=True)  # only today so far
    async with bq_host() as host:
        table = await host.call("autocontext", {"resource_id": f"{PROJECT}.{ga4_intraday}.events_*"}, meta(credentials))
        assert table.model_response[0]["data"][0]["schema_of"] == "events_20260903"
        dataset = await host.call(
            "autocontext", {"resource_id": f"{PROJECT}.{ga4_intraday}", "request_data": ["tables"]}, meta(credentials)
        )
        events = next(t for t in dataset.model_response[0]["data"] if t["table"].endswith(".events_*"))
        assert (events["shards"], events["latest_shard"]) == (3, "events_20260903")
        no_shard = await host.call(
            "autocontext", {"resource_id": f"{PROJECT}.analytics_789.events_*"}, meta(credentials)
        )
        assert no_shard.error_name == "ACP_RESOURCE_NOT_FOUND" and "name_YYYYMMDD" in no_shard.error["message"]


async def test_partitioned_shards_keep_both_the_table_suffix_and_the_partition_hint(
    bq_host, fake: FakeBigQuery, credentials
) -> None:
    fake.add_dataset(PROJECT, "sharded_parts")
    for day in ("20260901", "20260902"):
        schema = [{"name": "ts", "type": "TIMESTAMP"}, {"name": "amount", "type": "INTEGER"}]
        partitioning = {"type": "DAY", "field": "ts"}
        fake.add_table(PROJECT, "sharded_parts", f"sales_{day}", schema, partitioning=partitioning)
    async with bq_host() as host:
        result = await host.call(
            "autocontext", {"resource_id": f"{PROJECT}.sharded_parts", "request_data": ["tables"]}, meta(credentials)
        )
    (sales,) = result.model_response[0]["data"]
    assert sales["table"] == f"{PROJECT}.sharded_parts.sales_*" and sales["shards"] == 2
    assert "_TABLE_SUFFIX" in sales["query_hint"] and "ts" in sales["partition_hint"]
