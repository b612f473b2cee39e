"""Tools of the databases connector."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shared import CallContext, Extraction, Tool
from shared.sql import check_query_only

from . import sqlite
from .resources import database_path

_SQL_IN_DESCRIPTION = 300


async def execute_sql(arguments: dict[str, Any], ctx: CallContext) -> Extraction:
    sql = str(arguments["sql"])
    ref = ctx.require_resource()
    path = database_path(ref, ctx)
    timeout_s = float(ctx.config.get("statement_timeout_s", 300))
    holder: list[sqlite.Database] = []

    def run() -> tuple[Any, list[str]]:
        dates = check_query_only(sql, "sqlite", sqlite.FORBIDDEN_FUNCTIONS)  # parser layer, off the event loop
        writer = ctx.table()
        with sqlite.opened(path, ctx.cancelled) as db:
            holder.append(db)
            with db.budget(timeout_s):
                db.stream(sql, writer)
        return writer.finish(), dates

    def cancel() -> None:
        if holder:
            holder[0].interrupt()

    table, dates = await ctx.run_blocking(run, cancel=cancel)
    file_name = Path(path).name
    shown_sql = sql if len(sql) <= _SQL_IN_DESCRIPTION else sql[: _SQL_IN_DESCRIPTION - 1] + "…"
    return Extraction(
        tables=[table],
        description=f"SQLite database {file_name} ({ref.parts[0]}). SQL: {' '.join(shown_sql.split())}",
        dates=dates or None,
        title=f"SQLite · {file_name}",
        source={"engine": "sqlite", "database": ref.parts[0]},
    )


EXECUTE_SQL = Tool(
    name="execute_sql",
    title="Run a SQL query",
    description=(
        "Runs one read-only SQL query (SQLite dialect) on the database and returns the rows: you see a sample, "
        "the host keeps the full table. Write {{start_date}} and {{end_date}} where the date window goes."
    ),
    kind="extraction",
    run=execute_sql,
    input_schema={
        "properties": {
            "sql": {
                "type": "string",
                "contentMediaType": "application/sql",
                "x-acp-date": "template",
                "description": "One SELECT (or WITH … SELECT). {{start_date}} and {{end_date}} mark the date window.",
            }
        },
        "required": ["sql"],
    },
)
