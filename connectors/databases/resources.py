"""``resource_id`` of the databases connector: ``<database>[.<schema>][.<table>]``.

Two parts mean ``database.schema`` on engines with schemas (PostgreSQL, DuckDB) and
``database.table`` on the others (SQLite, MySQL/MariaDB, where a database is a schema).
Reasonable variants are normalized: quotes, backticks and brackets around parts, and ``/``
as a separator. A part that itself holds a dot is double-quoted in canonical ids.
"""

from __future__ import annotations

from typing import Any

from shared import CallContext, InvalidArguments, ResourceRef, ResourceSummary

from .access import engine_of, locate, with_connection
from .engine import HAS_SCHEMAS, Connection

LEVELS = ("database", "schema", "table")


def _strip(part: str) -> str:
    part = part.strip()
    for left, right in (('"', '"'), ("`", "`"), ("[", "]"), ("'", "'")):
        if len(part) >= 2 and part.startswith(left) and part.endswith(right):
            inner = part[1:-1]
            return inner.replace('""', '"') if left == '"' else inner
    return part


def format_id(parts: tuple[str, ...] | list[str]) -> str:
    """The canonical id: parts joined by '.', a part that holds '.', '/' or a quote double-quoted."""
    return ".".join('"' + p.replace('"', '""') + '"' if any(c in p for c in './"`') else p for p in parts)


def _split(text: str) -> list[str]:
    """Split on '.' or '/' outside quotes."""
    parts, current, quote_char = [], "", ""
    closing = {'"': '"', "`": "`", "[": "]", "'": "'"}
    for char in text.strip():
        if quote_char:
            current += char
            if char == closing[quote_char]:
                quote_char = ""
        elif char in closing:
            quote_char = char
            current += char
        elif char in "./":
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [_strip(p) for p in parts]


def normalize(text: str, credentials: dict[str, Any] | None = None) -> ResourceRef:
    schemas = HAS_SCHEMAS.get(str((credentials or {}).get("type")), False)
    parts = _split(text)
    most = 3 if schemas else 2
    if not parts or any(not p for p in parts) or len(parts) > most:
        shape = "<database>[.<schema>][.<table>]" if schemas else "<database>[.<table>]"
        raise InvalidArguments(
            f"Invalid resource_id '{text[:80]}'. Use {shape}, for example shop or shop.orders. "
            "Call autocontext without arguments to list them."
        )
    level = LEVELS[len(parts) - 1] if schemas else "database" if len(parts) == 1 else "table"
    return ResourceRef(id=format_id(parts), level=level, parts=tuple(parts))


async def check(ref: ResourceRef, ctx: CallContext) -> None:
    """The database (and schema, and table) exist and are not hidden."""
    from .blocks import policy_of

    engine, location = locate(ctx, ref)
    policy = policy_of(ctx)

    def verify(conn: Connection) -> None:
        if location.schema is not None and location.schema not in conn.schemas():
            raise _missing("schema", ref, [format_id([location.database, s]) for s in conn.schemas()])
        if location.table is not None:
            hidden = policy.on(conn, engine)
            names = [t.name for t in conn.tables(location.schema, 0)]
            hidden.preload(location.schema, names)
            if location.table not in names or hidden.table(location.schema, location.table):
                prefix = [location.database] + ([location.schema] if location.schema else [])
                visible = [n for n in names if not hidden.table(location.schema, n)]
                raise _missing("table", ref, [format_id([*prefix, n]) for n in visible])

    await with_connection(ctx, location.database, verify)


def _missing(kind: str, ref: ResourceRef, available: list[str]) -> Exception:
    from shared import ResourceNotFound

    listed = ", ".join(available[:25]) or "none"
    return ResourceNotFound(
        f"No {kind} '{ref.id}' in this source. Available: {listed}. Call autocontext without arguments to list them."
    )


async def list_resources(ctx: CallContext) -> list[ResourceSummary]:
    """Databases, then their schemas (engines with schemas), then a single file's tables."""
    from .blocks import policy_of

    engine = engine_of(ctx)
    credentials = ctx.require_credentials()
    policy = policy_of(ctx)

    def read(conn: Connection) -> list[ResourceSummary]:
        out: list[ResourceSummary] = []
        databases = conn.databases()
        for database in databases:
            out.append({"resource_id": format_id([database]), "name": database, "group": engine.title})
        if engine.has_schemas:
            for schema in conn.schemas():
                out.append({"resource_id": format_id([conn.database, schema]), "name": schema, "group": conn.database})
        elif len(databases) == 1:
            hidden = policy.on(conn, engine)
            tables = conn.tables(None, 0)
            hidden.preload(None, [t.name for t in tables])
            for table in tables:
                if not hidden.table(None, table.name):
                    out.append(
                        {
                            "resource_id": format_id([conn.database, table.name]),
                            "name": table.name,
                            "group": conn.database,
                            "description": table.kind,
                        }
                    )
        return out

    return await with_connection(ctx, engine.default_database(credentials), read)
