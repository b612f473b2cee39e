"""Autocontext blocks of the BigQuery connector (spec 7.2, 15.3 §5). All of them are free:
catalog calls and ``tabledata.list``, never a query job."""

from __future__ import annotations

import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from shared import Block, CallContext, ResourceRef

from . import api
from .fields import flatten
from .resources import api_settings, date_shards, shard_prefix

_GA4_DATASET = re.compile(r"analytics_(?P<property>\d+)")
TABLES_LISTED = 10_000
TABLES_SHOWN = 200
SCHEMAS_SHOWN = 15
GA4_SAMPLE_ROWS = 2_000
GA4_KEYS_SHOWN = 40
GA4_EVENTS_SHOWN = 25


@dataclass
class TableGroup:
    """A table, or date-sharded tables ``name_YYYYMMDD`` grouped as ``name_*``."""

    name: str
    kind: str
    item: api.TableItem
    shards: list[str] = field(default_factory=list)

    @property
    def latest(self) -> str:
        return self.shards[-1] if self.shards else self.name


def group_tables(items: list[api.TableItem]) -> list[TableGroup]:
    """Date shards (two or more with a valid YYYYMMDD suffix) become one wildcard entry."""
    by_prefix: dict[str, list[api.TableItem]] = {}
    for item in items:
        prefix = shard_prefix(item.table_id)
        if prefix is not None:
            by_prefix.setdefault(prefix, []).append(item)
    groups: dict[str, TableGroup] = {}
    for item in sorted(items, key=lambda i: i.table_id):
        prefix = shard_prefix(item.table_id)
        if prefix is not None and len(by_prefix[prefix]) >= 2:
            name = prefix + "*"
            group = groups.setdefault(name, TableGroup(name=name, kind=item.kind, item=item))
            group.shards.append(item.table_id)
            group.item = item  # sorted ids: the last one seen is the latest shard
        else:
            groups[item.table_id] = TableGroup(name=item.table_id, kind=item.kind, item=item)
    return sorted(groups.values(), key=lambda g: g.name)


def _dataset_of(ref: ResourceRef) -> tuple[str, str]:
    return ref.parts[0], ref.parts[1]


async def _groups(ref: ResourceRef, ctx: CallContext) -> list[TableGroup]:
    project, dataset = _dataset_of(ref)
    settings = api_settings(ctx, project)
    items = await ctx.run_blocking(lambda: api.list_tables(settings, project, dataset, TABLES_LISTED))
    return group_tables(items)


# -- datasets ----------------------------------------------------------------------------------
async def fetch_datasets(ref: ResourceRef, ctx: CallContext) -> Any:
    project = ref.parts[0]
    settings = api_settings(ctx, project)
    found = await ctx.run_blocking(lambda: api.list_datasets(settings, project, 1000))
    return [
        {"dataset": f"{project}.{d['dataset']}", "location": d.get("location")}
        | ({"labels": d["labels"]} if d.get("labels") else {})
        for d in found
    ]


# -- tables ------------------------------------------------------------------------------------
async def fetch_tables(ref: ResourceRef, ctx: CallContext) -> Any:
    project, dataset = _dataset_of(ref)
    groups = await _groups(ref, ctx)
    out: list[dict[str, Any]] = []
    for group in groups[:TABLES_SHOWN]:
        qualified = f"{project}.{dataset}.{group.name}"
        entry: dict[str, Any] = {"table": qualified, "type": group.kind}
        if group.shards:
            entry.update(
                shards=len(group.shards),
                first_shard=group.shards[0],
                latest_shard=group.latest,
                query_hint=f"FROM `{qualified}` WHERE _TABLE_SUFFIX BETWEEN 'YYYYMMDD' AND 'YYYYMMDD'",
            )
        entry["partitioning"] = group.item.partitioning
        if group.item.partitioning and group.item.partitioning.get("field"):
            # Its own key: partitioned shards need both filters, _TABLE_SUFFIX and the partition column.
            column = group.item.partitioning["field"]
            entry["partition_hint"] = f"Filter on {column} so BigQuery reads (and bills) only the partitions you need."
        if group.item.clustering:
            entry["clustering"] = group.item.clustering
        out.append(entry)
    if len(groups) > TABLES_SHOWN:
        out.append({"note": f"{len(groups) - TABLES_SHOWN} more tables are not listed; name them in queries."})
    return out


# -- table_schemas -----------------------------------------------------------------------------
async def fetch_table_schemas(ref: ResourceRef, ctx: CallContext) -> Any:
    project, dataset = _dataset_of(ref)
    settings = api_settings(ctx, project)
    if ref.level == "table":
        table = ref.parts[2]
        if table.endswith("*"):
            items = await ctx.run_blocking(lambda: api.list_tables(settings, project, dataset, TABLES_LISTED))
            matching = date_shards((i.table_id for i in items), table)
            targets = [(table, matching[-1])] if matching else []
        else:
            targets = [(table, table)]
    else:
        targets = [(g.name, g.latest) for g in (await _groups(ref, ctx))[:SCHEMAS_SHOWN]]

    def read() -> list[dict[str, Any]]:
        def one(target: tuple[str, str]) -> dict[str, Any]:
            shown, actual = target
            info = api.get_table(settings, project, dataset, actual)
            entry: dict[str, Any] = {"table": shown}
            if shown != actual:
                entry["schema_of"] = actual
            entry["columns"] = flatten(info.schema)
            return entry

        with ThreadPoolExecutor(max_workers=4) as pool:
            return list(pool.map(one, targets))

    return await ctx.run_blocking(read)


# -- ga4_export --------------------------------------------------------------------------------
async def fetch_ga4_export(ref: ResourceRef, ctx: CallContext) -> Any:
    project, dataset = _dataset_of(ref)
    match = _GA4_DATASET.fullmatch(dataset)
    groups = await _groups(ref, ctx) if match else []
    events = next((g for g in groups if g.name == "events_*"), None)
    if match is None or events is None:
        return {
            "detected": False,
            "note": "Not a GA4 export: GA4 exports are datasets named analytics_<property id> with events_* shards.",
        }
    settings = api_settings(ctx, project)
    shard = events.latest

    def read() -> dict[str, Any]:
        info = api.get_table(settings, project, dataset, shard)
        fields = [f for f in info.schema if f["name"] in ("event_name", "event_params")]
        names: Counter[str] = Counter()
        keys: Counter[str] = Counter()
        kinds: dict[str, Counter[str]] = {}
        examples: dict[str, list[str]] = {}
        rows = 0
        for row in api.read_rows(settings, project, dataset, shard, fields, GA4_SAMPLE_ROWS):
            rows += 1
            names[str(row.get("event_name"))] += 1
            for param in row.get("event_params") or []:
                key = str(param.get("key"))
                keys[key] += 1
                value = param.get("value") or {}
                kind = next((k for k in _VALUE_KINDS if value.get(k) is not None), None)
                if kind is None:
                    continue
                kinds.setdefault(key, Counter())[kind] += 1
                if kind == "string_value" and len(seen := examples.setdefault(key, [])) < 3:
                    text = str(value[kind])[:80]
                    if text not in seen:
                        seen.append(text)
        params = []
        for key, count in keys.most_common(GA4_KEYS_SHOWN):
            kind_counts = kinds.get(key, Counter())
            entry: dict[str, Any] = {
                "key": key,
                "value_field": kind_counts.most_common(1)[0][0] if kind_counts else None,
                "events_in_sample": count,
            }
            if examples.get(key):
                entry["examples"] = examples[key]
            params.append(entry)
        return {
            "detected": True,
            "property_id": match["property"],
            "sample": {
                "shard": shard,
                "events": rows,
                "note": f"A sample: the first {rows} events of the latest shard, read for free with tabledata.list. "
                "Counts are from the sample, not totals.",
            },
            "event_names": [{"event_name": n, "events_in_sample": c} for n, c in names.most_common(GA4_EVENTS_SHOWN)],
            "event_params": params,
            "query_hint": "(SELECT value.string_value FROM UNNEST(event_params) WHERE key = 'page_location') "
            "reads one parameter; use int_value, double_value or float_value as value_field says.",
        }

    return await ctx.run_blocking(read)


_VALUE_KINDS = ("string_value", "int_value", "double_value", "float_value")

BLOCKS = (
    Block(
        id="datasets",
        description="Datasets of the project, with their location.",
        fetch=fetch_datasets,
        applies_to=("project",),
    ),
    Block(
        id="tables",
        description="Dataset tables and views. Date-sharded tables (name_YYYYMMDD) are grouped as name_* with the "
        "shard count and the latest shard. Partitioning and clustering say how to filter cheaply.",
        fetch=fetch_tables,
        applies_to=("dataset",),
    ),
    Block(
        id="table_schemas",
        description="Schema (columns, type, mode and description) of the table or of the first 15 tables in the "
        "dataset. Nested fields appear as a.b. For sharded tables, the latest shard is used.",
        fetch=fetch_table_schemas,
        applies_to=("dataset", "table"),
    ),
    Block(
        id="ga4_export",
        description="For a GA4 export dataset (analytics_<id>): the usual event_params keys with their value field, "
        "and the top event names, from a sample of the latest shard.",
        fetch=fetch_ga4_export,
        applies_to=("dataset",),
    ),
)
