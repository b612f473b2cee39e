"""``resource_id`` of the databases connector: ``<database>[.<table>]``.

The database is the file's stem. Reasonable variants are normalized: quotes, backticks
and brackets around parts, and ``/`` as a separator.
"""

from __future__ import annotations

from typing import Any

from shared import CallContext, InvalidArguments, ResourceRef, ResourceSummary

from . import sqlite

LEVELS = ("database", "table")


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
    parts = _split(text)
    if not parts or any(not p for p in parts) or len(parts) > 2:
        raise InvalidArguments(
            f"Invalid resource_id '{text[:80]}'. Use <database> or <database>.<table>, for example shop or shop.orders."
        )
    return ResourceRef(id=format_id(parts), level=LEVELS[len(parts) - 1], parts=tuple(parts))


def database_path(ref: ResourceRef, ctx: CallContext) -> str:
    """The file behind a resource; the database part must name the configured file."""
    path = str(ctx.require_credentials()["path"])
    name = sqlite.database_name(path)
    if ref.parts[0] != name:
        raise sqlite.not_found("database", ref.parts[0], [name])
    return path


async def check(ref: ResourceRef, ctx: CallContext) -> None:
    path = database_path(ref, ctx)
    if ref.level != "table":
        return

    def missing() -> list[str] | None:
        with sqlite.opened(path, ctx.cancelled) as db:
            tables = [name for name, _ in db.tables()]
        return None if ref.parts[1] in tables else tables

    available = await ctx.run_blocking(missing)
    if available is not None:
        raise sqlite.not_found("table", ref.id, [format_id((ref.parts[0], t)) for t in available])


async def list_resources(ctx: CallContext) -> list[ResourceSummary]:
    """The database, then its tables and views."""
    path = str(ctx.require_credentials()["path"])

    def read() -> list[tuple[str, str]]:
        with sqlite.opened(path, ctx.cancelled) as db:
            return db.tables()

    tables = await ctx.run_blocking(read)
    name = sqlite.database_name(path)
    out: list[ResourceSummary] = [
        {
            "resource_id": format_id([name]),
            "name": name,
            "group": "SQLite",
            "description": f"SQLite database, {len(tables)} tables",
        }
    ]
    out.extend(
        {"resource_id": format_id([name, table]), "name": table, "group": name, "description": kind}
        for table, kind in tables
    )
    return out
