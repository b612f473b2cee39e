"""Autocontext blocks of the databases connector (spec 7.1), the same for every engine.

Blocks stay fast on large databases: row counts come from catalog statistics or run under one
time budget for the whole block, samples read a bounded number of rows under a budget per
column and one per block, and a database- or schema-level call covers at most
:data:`MAX_TABLES` tables. Hidden tables and columns never appear.
"""

from __future__ import annotations

import re
import time
from typing import Any

from shared import Block, CallContext, ResourceRef
from shared.values import parse_temporal_string

from .access import describe_value, locate, qualified, with_connection
from .engine import MIN_COUNT_S, ColumnInfo, Connection, Engine, Location, TableInfo
from .policy import Hidden, Policy

MAX_TABLES = 25
COUNT_BUDGET_S = 2.0  # all the row counts of one block together
COLUMN_BUDGET_S = 1.0
BLOCK_BUDGET_S = 5.0  # all the column reads of one date_ranges or sample_values block
SAMPLE_ROWS = 10_000
LOW_CARDINALITY = 20
TOP_VALUES = 10
_DATE_NAME = re.compile(r"(date|time|day|month|_at$|_on$|timestamp)", re.IGNORECASE)


def policy_of(ctx: CallContext) -> Policy:
    return Policy.from_config(ctx.config)


def _is_text(engine: Engine, column: ColumnInfo) -> bool:
    declared = column.type.lower()
    if "[]" in declared or declared.startswith(("array", "list", "struct", "map")):
        return False  # arrays of text are not text values
    return not declared or any(t in declared for t in engine.text_types)


def _declared_temporal(column: ColumnInfo) -> bool:
    declared = column.type.upper()
    return "DATE" in declared or ("TIME" in declared and "INTERVAL" not in declared)


class _Scope:
    """The tables a block covers at a location, without the hidden ones."""

    def __init__(
        self, engine: Engine, conn: Connection, location: Location, policy: Policy, budget_s: float = 0
    ) -> None:
        self.conn, self.location = conn, location
        self.schema = location.schema
        # At database level an engine with schemas names its tables "schema.table".
        self.qualified_names = engine.has_schemas and location.schema is None
        if location.table is not None:
            infos = conn.tables(location.schema, budget_s, only=location.table)
            if not infos:
                from shared import ResourceNotFound

                raise ResourceNotFound(f"No table '{location.table}'. Call autocontext without arguments.")
        else:
            infos = conn.tables(location.schema, budget_s)
        self.hidden = hidden = policy.on(conn, engine)
        by_schema: dict[str | None, list[str]] = {}
        for info in infos:
            schema, table = self.split(info.name)
            by_schema.setdefault(schema, []).append(table)
        for schema, tables in by_schema.items():
            hidden.preload(schema, tables)
        self.tables: list[TableInfo] = [t for t in infos if not hidden.table(*self.split(t.name))]

    def split(self, name: str) -> tuple[str | None, str]:
        """(schema, table) of a catalog name, which is schema-qualified at database level."""
        if self.qualified_names:
            schema, table = name.split(".", 1)
            return schema, table
        return self.schema, name

    def columns(self, name: str) -> list[ColumnInfo]:
        schema, table = self.split(name)
        return self.hidden.visible(schema, table, self.conn.columns(schema, table))


async def _run(ref: ResourceRef, ctx: CallContext, read: Any) -> Any:
    engine, location = locate(ctx, ref)
    policy = policy_of(ctx)
    return await with_connection(ctx, location.database, lambda conn: read(engine, conn, location, policy))


async def fetch_schemas(ref: ResourceRef, ctx: CallContext) -> Any:
    def read(engine: Engine, conn: Connection, location: Location, policy: Policy) -> Any:
        out = []
        hidden = policy.on(conn, engine)
        for schema in conn.schemas() if engine.has_schemas else [None]:
            listed = conn.tables(schema, 0)
            hidden.preload(schema, [t.name for t in listed])
            tables = [t for t in listed if not hidden.table(schema, t.name)]
            out.append({"schema": schema or location.database, "tables": len(tables)})
        return out

    return await _run(ref, ctx, read)


async def fetch_tables(ref: ResourceRef, ctx: CallContext) -> Any:
    def read(engine: Engine, conn: Connection, location: Location, policy: Policy) -> Any:
        out = []
        for info in _Scope(engine, conn, location, policy, COUNT_BUDGET_S).tables:
            entry: dict[str, Any] = {"table": info.name, "type": info.kind, "rows": info.rows}
            if info.estimated:
                entry["rows_estimated"] = True
            if info.comment:
                entry["comment"] = info.comment
            out.append(entry)
        return out

    return await _run(ref, ctx, read)


async def fetch_table_schemas(ref: ResourceRef, ctx: CallContext) -> Any:
    def read(engine: Engine, conn: Connection, location: Location, policy: Policy) -> Any:
        scope = _Scope(engine, conn, location, policy)
        out = []
        for info in scope.tables[:MAX_TABLES]:
            schema, table = scope.split(info.name)
            columns = []
            for column in scope.columns(info.name):
                entry: dict[str, Any] = {"name": column.name, "type": column.type or "ANY"}
                if column.primary_key:
                    entry["primary_key"] = True
                if not column.nullable:
                    entry["not_null"] = True
                if column.comment:
                    entry["comment"] = column.comment
                columns.append(entry)
            described: dict[str, Any] = {"table": info.name, "columns": columns}
            if info.comment:
                described["comment"] = info.comment
            keys = _visible_keys(conn, scope.hidden, schema, table, scope.qualified_names)
            if keys:
                described["foreign_keys"] = keys
            out.append(described)
        return out

    return await _run(ref, ctx, read)


def _visible_keys(
    conn: Connection, hidden: Hidden, schema: str | None, table: str, qualify: bool = False
) -> list[dict[str, Any]]:
    """Foreign keys that touch no hidden table or column; ``qualify`` names every target schema.table
    (database-level blocks name their tables that way)."""
    keys = []
    for key in conn.foreign_keys(schema, table):
        ref_schema = key.ref_schema or schema
        if hidden.table(ref_schema, key.ref_table):
            continue
        if any(hidden.column_hidden(schema, table, c) for c in key.columns):
            continue
        if any(hidden.column_hidden(ref_schema, key.ref_table, c) for c in key.ref_columns):
            continue
        if qualify or (key.ref_schema and key.ref_schema != schema):
            target = qualified(ref_schema, key.ref_table)
        else:
            target = key.ref_table
        keys.append({"columns": list(key.columns), "references": target, "referenced_columns": list(key.ref_columns)})
    return keys


class _Clock:
    """One block's time budget, shared out to its column reads."""

    def __init__(self, total_s: float = BLOCK_BUDGET_S) -> None:
        self.deadline = time.monotonic() + total_s

    def budget(self) -> float:
        """Seconds for the next column read: at most :data:`COLUMN_BUDGET_S`, 0 when time is up."""
        remaining = self.deadline - time.monotonic()
        return min(COLUMN_BUDGET_S, remaining) if remaining > MIN_COUNT_S else 0.0


def _date_like(
    engine: Engine, conn: Connection, schema: str | None, table: str, column: ColumnInfo, budget_s: float
) -> bool:
    if _declared_temporal(column):
        return True
    if not _is_text(engine, column) or not _DATE_NAME.search(column.name):
        return False
    sample = conn.first_text(schema, table, column.name, budget_s)
    return sample is not None and parse_temporal_string(sample) is not None


async def fetch_date_ranges(ref: ResourceRef, ctx: CallContext) -> Any:
    def read(engine: Engine, conn: Connection, location: Location, policy: Policy) -> Any:
        scope = _Scope(engine, conn, location, policy)
        clock = _Clock()
        out: list[dict[str, Any]] = []
        for info in scope.tables[:MAX_TABLES]:
            schema, table = scope.split(info.name)
            for column in scope.columns(info.name):
                budget_s = clock.budget()
                if not budget_s:
                    return out  # the block's time is up: what was read so far
                try:
                    if not _date_like(engine, conn, schema, table, column, budget_s):
                        continue
                    bounds = conn.min_max(schema, table, column.name, budget_s)
                except Exception as exc:
                    if engine.translate(exc) is None and not _is_budget(exc):
                        raise
                    continue
                if bounds is not None:
                    low, high = (describe_value(v) for v in bounds)
                    out.append({"table": info.name, "column": column.name, "min": low, "max": high})
        return out

    return await _run(ref, ctx, read)


def _is_budget(exc: BaseException) -> bool:
    return type(exc).__name__ == "TimeBudgetExceeded"


async def fetch_sample_values(ref: ResourceRef, ctx: CallContext) -> Any:
    def read(engine: Engine, conn: Connection, location: Location, policy: Policy) -> Any:
        scope = _Scope(engine, conn, location, policy)
        clock = _Clock()
        out: list[dict[str, Any]] = []
        for info in scope.tables[:MAX_TABLES]:
            schema, table = scope.split(info.name)
            for column in scope.columns(info.name):
                if column.primary_key or not _is_text(engine, column):
                    continue
                budget_s = clock.budget()
                if not budget_s:
                    return out  # the block's time is up: what was read so far
                try:
                    if _date_like(engine, conn, schema, table, column, budget_s):
                        continue
                    rows = conn.top_values(schema, table, column.name, SAMPLE_ROWS, LOW_CARDINALITY + 1, budget_s)
                except Exception as exc:
                    if engine.translate(exc) is None and not _is_budget(exc):
                        raise
                    continue
                if 0 < len(rows) <= LOW_CARDINALITY:
                    out.append(
                        {
                            "table": info.name,
                            "column": column.name,
                            "values": [describe_value(r[0]) for r in rows[:TOP_VALUES]],
                            "distinct": len(rows),
                        }
                    )
        return out

    return await _run(ref, ctx, read)


async def fetch_relationships(ref: ResourceRef, ctx: CallContext) -> Any:
    def read(engine: Engine, conn: Connection, location: Location, policy: Policy) -> Any:
        scope = _Scope(engine, conn, location, policy)
        edges = []
        for info in scope.tables[: MAX_TABLES * 4]:
            schema, table = scope.split(info.name)
            for key in _visible_keys(conn, scope.hidden, schema, table, scope.qualified_names):
                source = ", ".join(f"{info.name}.{c}" for c in key["columns"])
                target = ", ".join(f"{key['references']}.{c}" for c in key["referenced_columns"])
                edges.append(f"{source} → {target}")
        return edges

    return await _run(ref, ctx, read)


BLOCKS = (
    Block(
        id="schemas",
        description="Schemas of the database with their number of tables (a MySQL or SQLite database is one schema).",
        fetch=fetch_schemas,
        applies_to=("database",),
        ttl_s=21600,
    ),
    Block(
        id="tables",
        description="Tables and views with their row counts (catalog estimates on large tables, flagged).",
        fetch=fetch_tables,
        applies_to=("database", "schema"),
        ttl_s=3600,
    ),
    Block(
        id="table_schemas",
        description=f"Columns of the table, or of the first {MAX_TABLES} tables: type, primary key, NOT NULL, "
        "comment, and foreign keys.",
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
        f"in a sample of {SAMPLE_ROWS} rows), for exact filters.",
        fetch=fetch_sample_values,
        ttl_s=21600,
    ),
    Block(
        id="relationships",
        description="Foreign-key joins between tables, as 'table.column → table.column'.",
        fetch=fetch_relationships,
        ttl_s=21600,
    ),
)
