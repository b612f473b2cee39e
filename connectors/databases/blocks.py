"""Autocontext blocks of the databases connector (spec 7.1).

Blocks stay fast on large databases: counts and scans run under small time budgets,
samples read a bounded number of rows, and a database-level call covers at most
:data:`MAX_TABLES` tables.
"""

from __future__ import annotations

import re
from typing import Any

from shared import Block, CallContext, ResourceRef
from shared.values import parse_temporal_string

from . import sqlite
from .resources import database_path, format_id

MAX_TABLES = 25
COUNT_BUDGET_S = 0.5
COLUMN_BUDGET_S = 1.0
SAMPLE_ROWS = 10_000
LOW_CARDINALITY = 20
TOP_VALUES = 10
_DATE_NAME = re.compile(r"(date|time|day|month|_at$|_on$|timestamp)", re.IGNORECASE)
_TEXT_TYPE = re.compile(r"(char|text|clob|string)", re.IGNORECASE)


def _table_names(db: sqlite.Database, ref: ResourceRef) -> list[str]:
    names = [name for name, _ in db.tables()]
    if ref.level == "table":
        if ref.parts[1] not in names:
            raise sqlite.not_found("table", ref.id, [format_id((ref.parts[0], n)) for n in names])
        return [ref.parts[1]]
    return names[:MAX_TABLES]


async def _with_database(ref: ResourceRef, ctx: CallContext, read: Any) -> Any:
    path = database_path(ref, ctx)

    def run() -> Any:
        with sqlite.opened(path, ctx.cancelled) as db:
            return read(db)

    return await ctx.run_blocking(run)


async def fetch_tables(ref: ResourceRef, ctx: CallContext) -> Any:
    def read(db: sqlite.Database) -> list[dict[str, Any]]:
        out = []
        for name, kind in db.tables():
            count, estimated = db.row_count(name, kind, COUNT_BUDGET_S)
            entry: dict[str, Any] = {"table": name, "type": kind, "rows": count}
            if estimated:
                entry["rows_estimated"] = True
            out.append(entry)
        return out

    return await _with_database(ref, ctx, read)


async def fetch_table_schemas(ref: ResourceRef, ctx: CallContext) -> Any:
    def read(db: sqlite.Database) -> list[dict[str, Any]]:
        out = []
        for table in _table_names(db, ref):
            columns = []
            for column in db.columns(table):
                entry: dict[str, Any] = {"name": column["name"], "type": column["type"] or "ANY"}
                if column["pk"]:
                    entry["primary_key"] = True
                if not column["nullable"]:
                    entry["not_null"] = True
                columns.append(entry)
            schema: dict[str, Any] = {"table": table, "columns": columns}
            keys = db.foreign_keys(table)
            if keys:
                schema["foreign_keys"] = keys
            out.append(schema)
        return out

    return await _with_database(ref, ctx, read)


def _is_date_like(db: sqlite.Database, table: str, column: dict[str, Any]) -> bool:
    declared = str(column["type"]).upper()
    if "DATE" in declared or "TIME" in declared:
        return True
    if not _DATE_NAME.search(column["name"]) or (declared and not _TEXT_TYPE.search(declared)):
        return False
    sample = db.scalar_rows(
        f"SELECT {sqlite.quote(column['name'])} FROM {sqlite.quote(table)} "
        f"WHERE typeof({sqlite.quote(column['name'])}) = 'text' LIMIT 1"
    )
    return bool(sample) and parse_temporal_string(str(sample[0][0])) is not None


async def fetch_date_ranges(ref: ResourceRef, ctx: CallContext) -> Any:
    def read(db: sqlite.Database) -> list[dict[str, Any]]:
        out = []
        for table in _table_names(db, ref):
            for column in db.columns(table):
                try:
                    with db.budget(COLUMN_BUDGET_S):
                        if not _is_date_like(db, table, column):
                            continue
                        name = sqlite.quote(column["name"])
                        low, high = db.scalar_rows(f"SELECT min({name}), max({name}) FROM {sqlite.quote(table)}")[0]
                except sqlite.TimeBudgetExceeded:
                    continue  # a huge unindexed column: skip it rather than stall the block
                if low is not None:
                    out.append({"table": table, "column": column["name"], "min": low, "max": high})
        return out

    return await _with_database(ref, ctx, read)


async def fetch_sample_values(ref: ResourceRef, ctx: CallContext) -> Any:
    def read(db: sqlite.Database) -> list[dict[str, Any]]:
        out = []
        for table in _table_names(db, ref):
            for column in db.columns(table):
                declared = str(column["type"])
                if column["pk"] or (declared and not _TEXT_TYPE.search(declared)):
                    continue
                name = sqlite.quote(column["name"])
                try:
                    with db.budget(COLUMN_BUDGET_S):
                        if _is_date_like(db, table, column):
                            continue
                        rows = db.scalar_rows(
                            f"SELECT v, count(*) AS n FROM (SELECT {name} AS v FROM {sqlite.quote(table)} "
                            f"LIMIT {SAMPLE_ROWS}) WHERE typeof(v) = 'text' GROUP BY v ORDER BY n DESC, v "
                            f"LIMIT {LOW_CARDINALITY + 1}"
                        )
                except sqlite.TimeBudgetExceeded:
                    continue
                if 0 < len(rows) <= LOW_CARDINALITY:
                    out.append(
                        {
                            "table": table,
                            "column": column["name"],
                            "values": [r[0] for r in rows[:TOP_VALUES]],
                            "distinct": len(rows),
                        }
                    )
        return out

    return await _with_database(ref, ctx, read)


BLOCKS = (
    Block(
        id="tables",
        description="Tables and views of the database with their row counts (estimated on very large tables).",
        fetch=fetch_tables,
        applies_to=("database",),
        ttl_s=3600,
    ),
    Block(
        id="table_schemas",
        description=f"Columns of the table, or of the first {MAX_TABLES} tables: type, primary key, "
        "NOT NULL, and foreign keys.",
        fetch=fetch_table_schemas,
        ttl_s=21600,
    ),
    Block(
        id="date_ranges",
        description="First and last value of each date-like column, to pick a date window that has data.",
        fetch=fetch_date_ranges,
        ttl_s=3600,
    ),
    Block(
        id="sample_values",
        description=f"Most frequent values of low-cardinality text columns (at most {LOW_CARDINALITY} distinct "
        f"in a sample of the first {SAMPLE_ROWS} rows), for exact filters.",
        fetch=fetch_sample_values,
        ttl_s=21600,
    ),
)
