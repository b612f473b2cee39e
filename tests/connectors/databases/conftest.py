"""Helpers for the databases connector tests: direct sqlite3 reads, state snapshots, hosts.

Every expectation in these tests is computed with a direct ``sqlite3`` connection opened
read-only (``mode=ro``), never with the connector's own code.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from shared.host import AcpHost


def connect_ro(path: Path) -> sqlite3.Connection:
    """A direct read-only connection: reading through it can never change the file."""
    return sqlite3.connect(f"{Path(path).as_uri()}?mode=ro", uri=True)


def query(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Rows of ``sql`` as dicts, straight from sqlite3."""
    conn = connect_ro(path)
    try:
        cursor = conn.execute(sql, params)
        names = [d[0] for d in cursor.description or ()]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    finally:
        conn.close()


def scalar(path: Path, sql: str, params: tuple[Any, ...] = ()) -> Any:
    conn = connect_ro(path)
    try:
        return conn.execute(sql, params).fetchone()[0]
    finally:
        conn.close()


def first_row(path: Path, sql: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...]:
    conn = connect_ro(path)
    try:
        return tuple(conn.execute(sql, params).fetchone())
    finally:
        conn.close()


def quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def table_checksums(path: Path) -> dict[str, str]:
    """sha256 of every table's rows (``ORDER BY rowid``), internal tables included."""
    conn = connect_ro(path)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")]
        out = {}
        for name in names:
            digest = hashlib.sha256()
            for row in conn.execute(f"SELECT rowid, * FROM {quote(name)} ORDER BY rowid"):
                digest.update(repr(row).encode())
            out[name] = digest.hexdigest()
        return out
    finally:
        conn.close()


def database_state(path: Path) -> dict[str, Any]:
    """Everything a write could change: rows, schema, header pragmas and the file's bytes."""
    conn = connect_ro(path)
    try:
        pragmas = {
            name: conn.execute(f"PRAGMA {name}").fetchone()[0]
            for name in (
                "user_version",
                "schema_version",
                "application_id",
                "journal_mode",
                "page_count",
                "freelist_count",
            )
        }
        schema = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY type, name").fetchall()
    finally:
        conn.close()
    return {
        "tables": table_checksums(path),
        "pragmas": pragmas,
        "schema": schema,
        "file_sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest(),
    }


def file_tree(root: Path) -> set[str]:
    """Every file and folder under ``root``, relative to it."""
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


def sqlite_meta(path: Path | str, **extra: Any) -> dict[str, Any]:
    """``_meta.acp`` with the SQLite credentials; the autocontext counts as delivered."""
    return {"credentials": {"type": "sqlite", "path": str(path)}, "autocontext_delivered": True, **extra}


@pytest.fixture
def databases_host(runtime_dirs: dict[str, str]) -> Callable[..., AbstractAsyncContextManager[AcpHost]]:
    """Start the databases connector over stdio: ``async with databases_host() as host``."""

    @asynccontextmanager
    async def start(**kwargs: Any) -> AsyncIterator[AcpHost]:
        env = {**runtime_dirs, **kwargs.pop("env", {})}
        async with AcpHost.for_module("databases", env=env, **kwargs) as host:
            yield host

    return start


@pytest.fixture(scope="session")
def direct() -> Any:
    """The helpers above, for test modules (conftest modules are not importable by name)."""

    class Helpers:
        connect_ro = staticmethod(connect_ro)
        query = staticmethod(query)
        scalar = staticmethod(scalar)
        first_row = staticmethod(first_row)
        quote = staticmethod(quote)
        table_checksums = staticmethod(table_checksums)
        database_state = staticmethod(database_state)
        file_tree = staticmethod(file_tree)
        sqlite_meta = staticmethod(sqlite_meta)

    return Helpers
