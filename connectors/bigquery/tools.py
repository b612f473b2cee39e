"""Tools of the BigQuery connector: ``execute_query`` (extraction), ``validate_query`` and
``get_table`` (info) and ``load_rows`` (write, from a host table).

Every query is dry-run first (free): the dry run's ``statementType`` decides read-only
(spec 10.4), its bytes decide cost (spec 9.2), its referenced tables and routines (with the
parser's) decide ``allowed_datasets``. Only then does a job run, capped by ``maximum_bytes_billed``.
"""

from __future__ import annotations

import re
import threading
import uuid
from typing import Any

from shared import (
    CallContext,
    CostLimitExceeded,
    Extraction,
    Info,
    InvalidArguments,
    ReadOnlyViolation,
    ResourceNotFound,
    ResourceRef,
    TableData,
    Tool,
    table_ref_input,
)
from shared.access import AccessRules, require_known_columns
from shared.sql import date_literals

from . import api
from .cost import (
    RESERVED_KEY,
    SPENT_KEY,
    Preflight,
    estimated_bytes_billed,
    human_bytes,
    maximum_bytes_billed,
    usd,
)
from .fields import flatten, headers, load_schema
from .resources import api_settings, date_shards
from .sqlcheck import allowed_patterns, check_allowed, reads_in_sql, split_table

DEFAULT_JOB_TIMEOUT_S = 600
MAX_ROWS = 5_000_000
PAGE_SIZE = 20_000  # rows per getQueryResults page: bounded memory, few round trips
_SQL_IN_DESCRIPTION = 300
_LABEL_VALUE = re.compile(r"[^a-z0-9_-]")


# -- shared steps -------------------------------------------------------------------------------
def labels(ctx: CallContext, tool: str) -> dict[str, str]:
    """Job labels, so users can attribute BigQuery cost to the connector, the tool and the call."""
    return {
        "acp-connector": "bigquery",
        "acp-tool": tool,
        "acp-call": _LABEL_VALUE.sub("-", ctx.call_id.lower())[:63],
    }


def _price(ctx: CallContext) -> float:
    return float(ctx.config["price_per_tib_usd"])


def _job_timeout_s(ctx: CallContext) -> float:
    return float(ctx.config["job_timeout_s"])


def _default_dataset(ref: ResourceRef) -> str | None:
    return f"{ref.parts[0]}.{ref.parts[1]}" if len(ref.parts) >= 2 else None


def _require_select(statement_type: str) -> None:
    if statement_type == "SELECT":
        return
    if statement_type == "SCRIPT":
        raise ReadOnlyViolation(
            "This ACP is read-only: only SELECT statements are executed (the query is a script of several "
            "statements). Send one SELECT."
        )
    raise ReadOnlyViolation(
        f"This ACP is read-only: only SELECT statements are executed (the query is {statement_type})."
    )


def _preflight(ctx: CallContext, dry: api.DryRun) -> Preflight:
    budget = ctx.config.get("session_budget_usd")
    return Preflight(
        total_bytes_processed=dry.total_bytes_processed,
        estimated_bytes_billed=estimated_bytes_billed(dry.total_bytes_processed, len(dry.referenced_tables)),
        estimate_usd=usd(dry.total_bytes_processed, _price(ctx)),
        limit_usd=ctx.settings.cost_limit_usd,
        price_per_tib_usd=_price(ctx),
        statement_type=dry.statement_type,
        accuracy=dry.accuracy,
        budget_usd=float(budget) if budget is not None else None,
        spent_usd=float(ctx.conversation.get(SPENT_KEY, 0.0)) + float(ctx.conversation.get(RESERVED_KEY, 0.0)),
    )


async def _dry_run(ctx: CallContext, sql: str, tool: str) -> tuple[ResourceRef, api.Settings, api.DryRun]:
    ref = ctx.require_resource()
    settings = api_settings(ctx, ref.parts[0])
    job_labels = labels(ctx, tool)
    dry = await ctx.run_blocking(
        lambda: api.dry_run(settings, sql, default_dataset=_default_dataset(ref), labels=job_labels)
    )
    return ref, settings, dry


async def _check_datasets(
    ctx: CallContext, ref: ResourceRef, settings: api.Settings, dry: api.DryRun, sql: str
) -> None:
    dataset = ref.parts[1] if len(ref.parts) >= 2 else None
    patterns = allowed_patterns(ctx.config.get("allowed_datasets"))

    def table_kind(name: str) -> str:
        return api.get_table(settings, *split_table(name)).kind

    await ctx.run_blocking(
        lambda: check_allowed(
            patterns, dry.referenced_tables, dry.referenced_routines, sql, ref.parts[0], dataset, table_kind
        )
    )


def _shown_sql(sql: str) -> str:
    text = " ".join(sql.split())
    return text if len(text) <= _SQL_IN_DESCRIPTION else text[: _SQL_IN_DESCRIPTION - 1] + "…"


# -- execute_query ----------------------------------------------------------------------------
async def execute_query(arguments: dict[str, Any], ctx: CallContext) -> Extraction:
    sql = str(arguments["query"])
    ref, settings, dry = await _dry_run(ctx, sql, "execute_query")
    _require_select(dry.statement_type)
    await _check_datasets(ctx, ref, settings, dry, sql)
    preflight = _preflight(ctx, dry)
    preflight.check()

    cap = maximum_bytes_billed(preflight.allowance_usd, preflight.price_per_tib_usd)
    job_id = f"acp_{uuid.uuid4().hex}"
    job_labels = labels(ctx, "execute_query")

    def run() -> tuple[TableData, api.JobOutcome]:
        writer = ctx.table(title=f"BigQuery · {ref.id}")  # stops at max_rows, with its warning

        def on_page(rows: Any, seen: int, total: int) -> bool:
            # The writer reports the rows as they arrive (progress), out of the job's total.
            writer.expected_rows, writer.pages = total, (writer.pages or 0) + 1
            writer.extend(rows)
            return not writer.capped

        outcome = api.run_query(
            settings,
            sql,
            job_id=job_id,
            default_dataset=_default_dataset(ref),
            maximum_bytes_billed=cap,
            labels=job_labels,
            job_timeout_s=_job_timeout_s(ctx),
            page_size=PAGE_SIZE,
            cancelled=ctx.cancelled,
            on_schema=lambda fields: writer.set_columns(headers(fields)),
            on_page=on_page,
        )
        return writer.finish(result_rows=outcome.total_rows), outcome

    def cancel_job() -> None:
        # Called on the event loop when the call is cancelled: the HTTP call goes to a thread.
        threading.Thread(target=api.cancel, args=(settings, job_id, settings.location), daemon=True).start()

    ctx.conversation[RESERVED_KEY] = ctx.conversation.get(RESERVED_KEY, 0.0) + preflight.estimate_usd
    try:
        table, outcome = await ctx.run_blocking(run, cancel=cancel_job)
    except Exception as exc:
        if api.error_reason(exc) == "bytesBilledLimitExceeded":
            raise CostLimitExceeded(
                f"BigQuery stopped the query: it would bill more than the {cap} bytes the limit allows. "
                "Narrow the query (fewer columns, shorter date range, filter by partition) or ask the user to "
                "raise the limit.",
                {**preflight.data(), "maximum_bytes_billed": cap},
            ) from None
        raise
    finally:
        ctx.conversation[RESERVED_KEY] = max(ctx.conversation.get(RESERVED_KEY, 0.0) - preflight.estimate_usd, 0.0)

    actual_usd = usd(outcome.total_bytes_billed, preflight.price_per_tib_usd)
    ctx.conversation[SPENT_KEY] = ctx.conversation.get(SPENT_KEY, 0.0) + actual_usd
    source: dict[str, Any] = {
        "api": "bigquery.jobs",
        "job_id": outcome.job_id,
        "location": outcome.location,
        "statement_type": dry.statement_type,
        "total_bytes_processed": outcome.total_bytes_processed,
        "total_bytes_billed": outcome.total_bytes_billed,
        "cache_hit": outcome.cache_hit,
        "maximum_bytes_billed": cap,
        "price_per_tib_usd": preflight.price_per_tib_usd,
    }
    if preflight.budget_usd is not None:
        source.update(session_budget_usd=preflight.budget_usd, session_spent_usd=round(ctx.conversation[SPENT_KEY], 6))
    return Extraction(
        tables=[table],
        description=f"BigQuery query billed to {settings.project}. SQL: {_shown_sql(sql)}",
        dates=date_literals(sql, "bigquery") or None,
        title=f"BigQuery · {ref.id}",
        extra={"bytes_processed": outcome.total_bytes_processed, "cache_hit": outcome.cache_hit},
        source=source,
        cost_estimate_usd=round(preflight.estimate_usd, 6),
        cost_actual_usd=round(actual_usd, 6),
    )


# -- validate_query ---------------------------------------------------------------------------
async def validate_query(arguments: dict[str, Any], ctx: CallContext) -> Info:
    sql = str(arguments["query"])
    try:
        ref, settings, dry = await _dry_run(ctx, sql, "validate_query")
    except Exception as exc:
        # A query BigQuery rejects is an answer here, not a failure: the model fixes the SQL.
        mapped = exc if isinstance(exc, InvalidArguments) else api.translate(exc)
        if isinstance(mapped, (InvalidArguments, ResourceNotFound)):
            return Info(data={"valid": False, "error": mapped.message}, title="BigQuery · validate_query")
        raise
    preflight = _preflight(ctx, dry)
    notes: list[str] = []
    within = True
    try:
        preflight.check()
    except CostLimitExceeded as refusal:
        within = False
        notes.append(refusal.message)
    if dry.accuracy == "UPPER_BOUND" and within:
        notes.append("The estimate is an upper bound (clustered tables); the real cost is often lower.")
    read_only = dry.statement_type == "SELECT"
    if not read_only:
        notes.append(f"execute_query refuses it: only SELECT statements run (this is {dry.statement_type}).")
    try:
        await _check_datasets(ctx, ref, settings, dry, sql)
    except InvalidArguments as refusal:
        notes.append(refusal.message)
    data: dict[str, Any] = {
        "valid": True,
        "statement_type": dry.statement_type,
        "read_only": read_only,
        "total_bytes_processed": dry.total_bytes_processed,
        "human_bytes": human_bytes(dry.total_bytes_processed),
        "estimated_cost_usd": round(preflight.estimate_usd, 6),
        "cost_limit_usd": preflight.limit_usd,
        "within_cost_limit": within,
        "accuracy": dry.accuracy,
        "referenced_tables": _referenced(sql, ref, dry),
        "result_schema": [
            {"name": f["name"], "type": f.get("type"), **({"mode": f["mode"]} if f.get("mode") == "REPEATED" else {})}
            for f in dry.schema
        ],
    }
    if dry.referenced_routines:
        data["referenced_routines"] = sorted(dry.referenced_routines)
    if notes:
        data["notes"] = notes
    return Info(data=data, title="BigQuery · validate_query", source={"api": "bigquery.jobs (dry run)"})


def _referenced(sql: str, ref: ResourceRef, dry: api.DryRun) -> list[str]:
    """Tables as the SQL names them (wildcards kept), plus any the dry run adds (views' sources)."""
    reads = reads_in_sql(sql, ref.parts[0], ref.parts[1] if len(ref.parts) >= 2 else None)
    named = reads.tables if reads else set()
    wildcards = [n[:-1] for n in named if n.endswith("*")]
    extra = {t for t in dry.referenced_tables if t not in named and not any(t.startswith(w) for w in wildcards)}
    return sorted(named | extra)


# -- get_table --------------------------------------------------------------------------------
async def get_table(arguments: dict[str, Any], ctx: CallContext) -> Info:
    ref = ctx.require_resource()
    project, dataset, table = ref.parts
    settings = api_settings(ctx, project)

    def read() -> dict[str, Any]:
        shards: list[str] = []
        actual = table
        if table.endswith("*"):
            items = api.list_tables(settings, project, dataset, 10_000)
            shards = date_shards((i.table_id for i in items), table)
            if not shards:
                raise ResourceNotFound(
                    f"No date shard (name_YYYYMMDD) in {project}.{dataset} matches {table}. Call autocontext with "
                    "the dataset to list its tables."
                )
            actual = shards[-1]
        info = api.get_table(settings, project, dataset, actual)
        out: dict[str, Any] = {"table": ref.id, "type": info.kind}
        if shards:
            out.update(shards=len(shards), first_shard=shards[0], latest_shard=actual, schema_of=actual)
        out.update(
            {
                "description": info.description,
                "location": info.location,
                "rows": info.num_rows,
                "bytes": info.num_bytes,
                "human_bytes": human_bytes(info.num_bytes) if info.num_bytes is not None else None,
                "created": info.created,
                "modified": info.modified,
                "partitioning": info.partitioning,
                "require_partition_filter": info.require_partition_filter,
                "clustering": info.clustering,
                "columns": flatten(info.schema),
            }
        )
        if info.view_query:
            out["view_query"] = info.view_query
        return out

    data = await ctx.run_blocking(read)
    return Info(data=data, title=f"BigQuery · {ref.id}", source={"api": "bigquery.tables.get"})


# -- load_rows --------------------------------------------------------------------------------
async def load_rows(arguments: dict[str, Any], ctx: CallContext) -> Info:
    ref = ctx.require_resource()
    project, dataset, table = ref.parts
    if table.endswith("*"):
        raise InvalidArguments(f"{ref.id} is a wildcard; load_rows writes one table. Name it in resource_id.")
    AccessRules.from_config(ctx.config).require("readAndOnlyAdd", [table, f"{dataset}.{table}", ref.id])
    source = await ctx.read_table(str(arguments["table_ref"]))
    columns = source.columns
    names = [c["name"] for c in columns]
    settings = api_settings(ctx, project)
    job_id = f"acp_{uuid.uuid4().hex}"
    job_labels = labels(ctx, "load_rows")

    def write() -> tuple[int, bool]:
        exists = api.table_exists(settings, project, dataset, table)
        schema = None
        if exists:
            existing = sorted({f["name"] for f in api.get_table(settings, project, dataset, table).schema})
            require_known_columns(names, existing, ref.id)
        else:
            schema = load_schema(columns)
        rows = [{n: row.get(n) for n in names} for row in source.rows]
        loaded = api.load_rows(
            settings,
            ref.id,
            rows,
            schema=schema,
            create=not exists,
            job_id=job_id,
            labels=job_labels,
            job_timeout_s=_job_timeout_s(ctx),
            cancelled=ctx.cancelled,
        )
        return loaded, not exists

    loaded, created = await ctx.run_blocking(write)
    verb = "Created" if created else "Appended to"
    return Info(
        data={
            "table": ref.id,
            "loaded_rows": loaded,
            "created": created,
            "columns": names,
            "message": f"{verb} {ref.id}: {loaded} rows from {arguments['table_ref']}, in one load job "
            "(free, all or nothing).",
        },
        title=f"BigQuery · load into {ref.id}",
        source={"api": "bigquery.jobs (load)", "job_id": job_id, "table_ref": arguments["table_ref"]},
    )


QUERY_DESCRIPTION = (
    "One GoogleSQL SELECT (or WITH … SELECT). Fully qualify tables as `project.dataset.table`; use "
    "`dataset.events_*` with _TABLE_SUFFIX BETWEEN 'YYYYMMDD' AND 'YYYYMMDD' for date-sharded tables. "
    "{{start_date}} and {{end_date}} (YYYY-MM-DD) mark the date window."
)

EXECUTE_QUERY = Tool(
    name="execute_query",
    title="Run a BigQuery query",
    description=(
        "Runs one read-only GoogleSQL query and returns the rows: you see a sample, the host keeps the full table. "
        "It is dry-run first: if the estimated cost is above the limit it does not run and says how to narrow it. "
        "Select only the columns you need and filter by partition or _TABLE_SUFFIX: BigQuery bills bytes read."
    ),
    kind="extraction",
    run=execute_query,
    input_schema={
        "properties": {
            "query": {
                "type": "string",
                "contentMediaType": "application/sql",
                "x-acp-date": "template",
                "description": QUERY_DESCRIPTION,
            }
        },
        "required": ["query"],
    },
    idempotent=True,
)

VALIDATE_QUERY = Tool(
    name="validate_query",
    title="Validate a query and estimate its cost",
    description=(
        "Dry-runs a query for free: whether it is valid, its statement type, the bytes it would read and their "
        "cost against the limit, the tables it reads and the result schema. Nothing runs."
    ),
    run=validate_query,
    input_schema={
        "properties": {
            "query": {"type": "string", "contentMediaType": "application/sql", "description": QUERY_DESCRIPTION}
        },
        "required": ["query"],
    },
    idempotent=True,
)

GET_TABLE = Tool(
    name="get_table",
    title="Describe a table",
    description=(
        "Schema (nested fields as a.b), partitioning, clustering, rows and bytes of one table; for a wildcard "
        "(events_*), of its latest shard with the shard count. Free."
    ),
    run=get_table,
    levels=("table",),
    idempotent=True,
)

LOAD_ROWS = Tool(
    name="load_rows",
    title="Load host rows into a table",
    description=(
        "Appends every row of a host dataset (pass its id as table_ref, not the rows) to the table in resource_id, "
        "creating it when missing, through one BigQuery load job (free, all or nothing). Only when the source's "
        "access mode allows adding."
    ),
    run=load_rows,
    levels=("table",),
    read_only=False,
    destructive=False,
    idempotent=False,
    input_schema=table_ref_input(),
)

TOOLS = (EXECUTE_QUERY, VALIDATE_QUERY, GET_TABLE, LOAD_ROWS)
