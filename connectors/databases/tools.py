"""Tools of the databases connector: ``execute_sql`` (extraction), ``describe_table`` (info)
and ``insert_rows`` (write, from a host table)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from shared import CallContext, Extraction, Info, InvalidArguments, Tool, table_ref_input
from shared.access import json_list, require_known_columns

from .access import locate, with_connection
from .blocks import COUNT_BUDGET_S, policy_of
from .engine import Connection, Engine, QueryOutcome, Relation
from .policy import Hidden, Policy, relation_names
from .resolve import ALL

_SQL_IN_DESCRIPTION = 300
DEFAULT_TIMEOUT_S = 300
MAX_ROWS = 2_000_000
MAX_RESULT_BYTES = 1024**3  # 1 GiB of JSON: past it an extraction stops politely, before memory is the limit


async def execute_sql(arguments: dict[str, Any], ctx: CallContext) -> Extraction:
    sql = str(arguments["sql"])
    ref = ctx.require_resource()
    engine, location = locate(ctx, ref)
    policy = policy_of(ctx)
    deadline = time.monotonic() + float(ctx.config["statement_timeout_s"])  # one for the whole call
    allowed_functions = allowed_functions_of(ctx.config)

    # The parser layer needs no connection: a query it refuses never takes one (a pooled connection that a
    # refused call held would be closed as a connection in doubt).
    checked = await ctx.run_blocking(lambda: engine.check_sql(sql, allowed_functions))
    approved: list[Hidden] = []  # the `hidden` check of a query it let through

    def run(conn: Connection) -> tuple[Any, list[str], QueryOutcome]:
        hidden = policy.on(conn, engine)
        hidden.check_query(checked, location.schema)
        approved.append(hidden)
        writer = ctx.table()  # stops at max_rows or max_result_bytes, with its warning
        # What runs is the SQL regenerated from the checked tree, never the raw text.
        outcome = conn.stream(checked.sql(), writer, schema=location.schema, timeout_s=deadline - time.monotonic())
        return writer.finish(), checked.dates, outcome

    try:
        table, dates, outcome = await with_connection(ctx, location.database, run)
    except Exception as exc:
        if approved and approved[0].names_hidden_data(exc):
            raise approved[0].refusal_for_named_error() from None
        raise
    source: dict[str, Any] = {"engine": engine.name, "database": location.database}
    if location.schema:
        source["schema"] = location.schema
    if table.capped_by is not None:
        source.update({"truncated": True, table.capped_by: table.capped_at})
    shown_sql = sql if len(sql) <= _SQL_IN_DESCRIPTION else sql[: _SQL_IN_DESCRIPTION - 1] + "…"
    path = ctx.require_credentials().get("path")
    where = f"{Path(str(path)).name} ({location.database})" if path else location.database
    if location.schema:
        where += f", schema {location.schema}"
    return Extraction(
        tables=[table],
        description=f"{engine.title} database {where}. SQL: {' '.join(shown_sql.split())}",
        dates=dates or None,
        title=f"{engine.title} · {ref.id}",
        warnings=outcome.warnings,
        source=source,
    )


def allowed_functions_of(config: dict[str, Any]) -> list[str]:
    """The source's ``allowed_functions``: names added to the engine's allow-list of functions."""
    names = json_list(config.get("allowed_functions"), "allowed_functions")
    if not all(isinstance(name, str) and name.strip() for name in names):
        raise InvalidArguments(
            "Config 'allowed_functions' must be a JSON array of function names, for example "
            '["my_udf", "analytics.score"]. Ask the user to fix the source settings.'
        )
    return [name.strip() for name in names]


async def describe_table(arguments: dict[str, Any], ctx: CallContext) -> Info:
    ref = ctx.require_resource()
    engine, location = locate(ctx, ref)
    policy = policy_of(ctx)
    assert location.table is not None  # the tool only accepts table-level resources
    table = location.table

    def read(conn: Connection) -> dict[str, Any]:
        from .blocks import _visible_keys

        infos = conn.tables(location.schema, COUNT_BUDGET_S, only=table)
        hidden = policy.on(conn, engine)
        if not infos or hidden.table(location.schema, table):
            from shared import ResourceNotFound

            raise ResourceNotFound(f"No table {ref.id}. Call autocontext with the database to list its tables.")
        info = infos[0]
        visible = hidden.visible(location.schema, table, conn.columns(location.schema, table))
        columns = []
        for column in visible:
            entry: dict[str, Any] = {"name": column.name, "type": column.type or "ANY", "nullable": column.nullable}
            if column.comment:
                entry["comment"] = column.comment
            columns.append(entry)
        described: dict[str, Any] = {"table": ref.id, "type": info.kind, "rows": info.rows}
        if info.estimated:
            described["rows_estimated"] = True
        if info.comment:
            described["comment"] = info.comment
        described["columns"] = columns
        primary = [c.name for c in visible if c.primary_key]
        if primary:
            described["primary_key"] = primary
        keys = _visible_keys(conn, hidden, location.schema, table)
        if keys:
            described["foreign_keys"] = keys
        return described

    data = await with_connection(ctx, location.database, read)
    return Info(data=data, title=f"{engine.title} · {ref.id}", source={"engine": engine.name})


async def insert_rows(arguments: dict[str, Any], ctx: CallContext) -> Info:
    ref = ctx.require_resource()
    engine, location = locate(ctx, ref)
    policy = policy_of(ctx)
    assert location.table is not None
    # A first refusal by the name as given, before the host table is read; the names the catalog
    # resolves the target to are checked again on the connection that writes.
    _require_writable(policy, relation_names(engine, location.database, location.schema, location.table), ref.id)
    source = await ctx.read_table(str(arguments["table_ref"]))
    headers = source.columns
    names = [h["name"] for h in headers]

    def write(conn: Connection) -> tuple[int, bool]:
        hidden = policy.on(conn, engine)
        schema, table, target = _target(conn, hidden, engine, location.schema, location.table or "", ref.id)
        _require_writable(policy, hidden.names(target) if target else relation_names(
            engine, location.database, schema, table), ref.id)  # fmt: skip
        if target is not None:
            # Hidden columns read as absent: the error lists only the columns this source shows.
            require_known_columns(names, hidden.visible_columns(target), ref.id)
        else:
            given = relation_names(engine, location.database, schema, table)
            hidden_names = [n for n in names if policy.column_hidden(given, n)]
            if hidden_names:
                raise InvalidArguments(
                    f"Column(s) {', '.join(hidden_names)} of {ref.id} are hidden by the source configuration; drop "
                    "them from the host table."
                )
        rows = ([row.get(n) for n in names] for row in source.rows)
        return conn.insert(schema, table, headers, rows, create=target is None)

    inserted, created = await with_connection(ctx, location.database, write, write=True)
    verb = "Created" if created else "Appended to"
    return Info(
        data={
            "table": ref.id,
            "inserted_rows": inserted,
            "created": created,
            "columns": names,
            "message": f"{verb} {ref.id}: {inserted} rows from {arguments['table_ref']}, in one transaction.",
        },
        title=f"{engine.title} · insert into {ref.id}",
        source={"engine": engine.name, "table_ref": arguments["table_ref"]},
    )


def _require_writable(policy: Policy, names: list[str], shown: str) -> None:
    if policy.table_hidden(names):
        raise InvalidArguments(f"{shown} is hidden by the source configuration; it cannot be written either.")
    policy.require("readAndOnlyAdd", names)


def _target(
    conn: Connection, hidden: Hidden, engine: Engine, schema: str | None, table: str, shown: str
) -> tuple[str, str, Relation | None]:
    """The canonical (schema, table) an insert writes to, and the existing table (None: it is created).

    The catalog decides, ignoring letter case as the engine does: SQLite and DuckDB write ``CUSTOMERS``
    into ``customers``, so the rules must see ``customers``. On PostgreSQL and MySQL a name that
    differs only in case from an existing table is refused rather than guessed. Views (updatable
    ones write into their base tables) and other relations that are not tables are refused."""
    schema = schema or hidden.search_path(None)[0]
    candidates = [
        r
        for r in hidden.relations({table}, {schema})
        if r.schema.lower() == schema.lower() and r.name.lower() == table.lower()
    ]
    exact = [r for r in candidates if r.schema == schema and r.name == table]
    if exact or (candidates and engine.name in ("sqlite", "duckdb")):
        target = (exact or candidates)[0]
    elif candidates:
        raise InvalidArguments(
            f"{shown} differs only in letter case from an existing table, and this engine tells them apart: pass the "
            "table's exact name as resource_id (autocontext lists the tables), or a clearly different name."
        )
    else:
        return schema, table, None
    if hidden.hidden_columns(target) is ALL:
        raise InvalidArguments(f"{shown} is hidden by the source configuration; it cannot be written either.")
    if target.kind != "table":
        raise InvalidArguments(
            f"{shown} is a view: insert_rows appends to tables only. Pass a table as resource_id (autocontext lists "
            "the tables and their types)."
        )
    return target.schema, target.name, target


SQL_DESCRIPTION = "One SELECT (or WITH … SELECT). {{start_date}} and {{end_date}} mark the date window."

EXECUTE_SQL = Tool(
    name="execute_sql",
    title="Run a SQL query",
    description=(
        "Runs one read-only SQL query, in the database's own dialect, and returns the rows: you see a sample, the "
        "host keeps the full table. Write {{start_date}} and {{end_date}} where the date window goes. Never writes."
    ),
    kind="extraction",
    run=execute_sql,
    input_schema={
        "properties": {
            "sql": {
                "type": "string",
                "contentMediaType": "application/sql",
                "x-acp-date": "template",
                "description": SQL_DESCRIPTION,
            }
        },
        "required": ["sql"],
    },
)

DESCRIBE_TABLE = Tool(
    name="describe_table",
    title="Describe a table",
    description="Columns (type, nullability, comment), primary and foreign keys and the row count of one table.",
    run=describe_table,
    levels=("table",),
)

INSERT_ROWS = Tool(
    name="insert_rows",
    title="Insert host rows into a table",
    description=(
        "Appends every row of a host dataset (pass its id as table_ref, not the rows) to the table in resource_id, "
        "creating it when missing. Only when the source's access mode allows adding."
    ),
    run=insert_rows,
    levels=("table",),
    read_only=False,
    destructive=False,
    idempotent=False,
    input_schema=table_ref_input(),
)

TOOLS = (EXECUTE_SQL, DESCRIBE_TABLE, INSERT_ROWS)
