"""From a call to an engine connection: the engine of the credentials, the location of the
resource, and the pooled connection that runs the work off the event loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from shared import CallContext, ResourceNotFound, ResourceRef

from .engine import Connection, Engine, Location, engine_for
from .pool import POOL

T = TypeVar("T")


def engine_of(ctx: CallContext) -> Engine:
    return engine_for(ctx.require_credentials())


def locate(ctx: CallContext, ref: ResourceRef) -> tuple[Engine, Location]:
    """The engine and where the resource points; a file database must be the configured file."""
    credentials = ctx.require_credentials()
    engine = engine_for(credentials)
    location = engine.locate(ref.parts)
    if engine.name in ("sqlite", "duckdb"):
        name = engine.default_database(credentials)
        if location.database != name:
            raise ResourceNotFound(
                f"No database '{location.database}' in this source; it holds '{name}'. "
                "Call autocontext without arguments to list the resources."
            )
    return engine, location


async def with_connection(
    ctx: CallContext, database: str | None, work: Callable[[Connection], T], write: bool = False
) -> T:
    """Run ``work`` with a pooled connection in a worker thread; cancelling the call cancels the statement."""
    credentials = ctx.require_credentials()
    engine = engine_for(credentials)
    holder: list[Connection] = []

    def run() -> T:
        with POOL.connection(engine, credentials, database, ctx.cancelled, write=write) as conn:
            holder.append(conn)
            return work(conn)

    def cancel() -> None:
        if holder:
            holder[0].cancel()

    return await ctx.run_blocking(run, cancel=cancel)


def qualified(schema: str | None, table: str) -> str:
    return f"{schema}.{table}" if schema else table


def describe_value(value: Any) -> Any:
    """Catalog values (dates, decimals) as JSON-friendly text for blocks."""
    from shared.values import json_safe

    return json_safe(value)
