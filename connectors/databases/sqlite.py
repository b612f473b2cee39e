"""The only module that talks to ``sqlite3``: read-only connections, catalog queries and
the translation of SQLite errors into ACP errors.

Read-only in depth (spec 10.4), every layer on every connection:

1. ``mode=ro`` URI open and ``PRAGMA query_only``;
2. an authorizer that allows only reads, read-only pragmas and harmless functions — it
   denies every write, ``ATTACH``/``DETACH``, transactions and ``load_extension``;
3. ``SQLITE_LIMIT_ATTACHED`` at 0, because ``mode=ro`` alone still lets ``ATTACH`` and
   ``VACUUM INTO`` create files;
4. the driver runs one statement per ``execute`` (``sqlite3`` refuses several);
5. the caller's sqlglot check (:func:`shared.sql.check_query_only`) before any of this.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from shared import (
    AcpError,
    CredentialsInvalid,
    InvalidArguments,
    ReadOnlyViolation,
    ResourceNotFound,
    TableWriter,
    UpstreamError,
)
from shared.sql import SEVERAL_STATEMENTS

FORBIDDEN_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})
_ALLOWED_ACTIONS = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
)
# Pragmas that take a table or index name and only describe it.
_DESCRIBING_PRAGMAS = frozenset(
    {"table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo", "foreign_key_list"}
)
# Pragmas that are read-only when queried without a value.
_QUERY_PRAGMAS = frozenset(
    {
        "database_list",
        "collation_list",
        "function_list",
        "pragma_list",
        "module_list",
        "compile_options",
        "page_count",
        "page_size",
        "freelist_count",
        "user_version",
        "application_id",
        "schema_version",
        "encoding",
        "data_version",
        "query_only",
    }
)
_PROGRESS_STEPS = 5000
EXACT_COUNT_MAX_ROWS = 5_000_000  # counting this many rows takes tens of milliseconds


class TimeBudgetExceeded(Exception):
    """A query ran past its time budget (statement timeout or a block's budget)."""


def _authorize(action: int, arg1: str | None, arg2: str | None, _db: str | None, _trigger: str | None) -> int:
    if action in _ALLOWED_ACTIONS:
        if action == sqlite3.SQLITE_FUNCTION and arg2 and arg2.lower() in FORBIDDEN_FUNCTIONS:
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and arg1:
        name = arg1.lower()
        if name in _DESCRIBING_PRAGMAS or (name in _QUERY_PRAGMAS and arg2 is None):
            return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def database_name(path: str) -> str:
    """The resource name of a database file: its stem (``shop.sqlite`` → ``shop``)."""
    return Path(path).stem


def identity(path: str) -> str:
    return f"sqlite:{os.path.realpath(path)}"


def validate_path(path: str) -> None:
    if not os.path.isabs(path):
        raise CredentialsInvalid(
            "The SQLite credentials need an absolute file path. Ask the user to fix the source credentials."
        )


class Database:
    """A read-only SQLite connection with a time budget and a cancel switch."""

    def __init__(self, path: str, cancelled: threading.Event | None = None) -> None:
        validate_path(path)
        if not os.path.isfile(path):
            raise CredentialsInvalid(
                "The SQLite file in the credentials does not exist or is not a file. "
                "Ask the user to fix the source credentials."
            )
        self.path = path
        self.name = database_name(path)
        self._cancelled = cancelled or threading.Event()
        self._deadline = float("inf")
        self.conn = sqlite3.connect(
            Path(path).as_uri() + "?mode=ro", uri=True, isolation_level=None, check_same_thread=False
        )
        try:
            self.conn.execute("PRAGMA query_only = 1")
            self.conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
            self.conn.set_authorizer(_authorize)
            self.conn.set_progress_handler(self._progress, _PROGRESS_STEPS)
            self.conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()  # fails on a non-database file
        except BaseException:
            self.conn.close()
            raise

    def _progress(self) -> int:
        # A non-zero return makes SQLite stop with "interrupted": time budget or cancelled call.
        return int(self._cancelled.is_set() or time.monotonic() > self._deadline)

    def interrupt(self) -> None:
        self._cancelled.set()
        self.conn.interrupt()

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def budget(self, seconds: float) -> Iterator[None]:
        """Bound the queries inside by ``seconds``; raises TimeBudgetExceeded past it."""
        previous = self._deadline
        self._deadline = min(previous, time.monotonic() + seconds)
        try:
            yield
        except sqlite3.OperationalError as exc:
            if "interrupted" in str(exc) and not self._cancelled.is_set():
                raise TimeBudgetExceeded from exc
            raise
        finally:
            self._deadline = previous

    # -- queries -----------------------------------------------------------------------------
    def stream(self, sql: str, writer: TableWriter, batch: int = 2000) -> None:
        """Run one query and stream its rows into ``writer``."""
        cursor = self.conn.execute(sql)
        writer.set_columns([d[0] for d in cursor.description or ()])
        while rows := cursor.fetchmany(batch):
            writer.extend(rows)

    def tables(self) -> list[tuple[str, str]]:
        rows = self.conn.execute(
            "SELECT name, type FROM sqlite_schema WHERE type IN ('table', 'view') "
            "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
        ).fetchall()
        return [(str(name), str(kind)) for name, kind in rows]

    def has_table(self, table: str) -> bool:
        return any(name == table for name, _ in self.tables())

    def columns(self, table: str) -> list[dict[str, Any]]:
        # PRAGMA statements, not pragma_* table functions: those make SQLite authorize an
        # UPDATE of sqlite_master on first use, which the authorizer rightly denies.
        rows = self.conn.execute(f"PRAGMA table_info({quote(table)})").fetchall()
        return [{"name": r[1], "type": r[2] or "", "nullable": not r[3], "pk": r[5]} for r in rows]

    def foreign_keys(self, table: str) -> list[dict[str, Any]]:
        rows = sorted(
            self.conn.execute(f"PRAGMA foreign_key_list({quote(table)})").fetchall(), key=lambda r: (r[0], r[1])
        )
        keys: dict[int, dict[str, Any]] = {}
        for key_id, _seq, target, column, target_column, *_ in rows:
            entry = keys.setdefault(key_id, {"columns": [], "references": target, "referenced_columns": []})
            entry["columns"].append(column)
            entry["referenced_columns"].append(target_column)
        return list(keys.values())

    def row_count(
        self, table: str, kind: str, budget_s: float, exact_up_to: int = EXACT_COUNT_MAX_ROWS
    ) -> tuple[int | None, bool]:
        """Rows of a table or view, and whether the figure is an estimate.

        SQLite counts a table in one internal step that no time budget can interrupt, so a table
        whose largest rowid passes ``exact_up_to`` is estimated (``sqlite_stat1``, else that
        rowid) without counting. Views are counted under the budget; past it, the count is unknown.
        """
        largest = self._largest_rowid(table) if kind == "table" else None
        if largest is not None and largest > exact_up_to:
            return self._analyzed_rows(table) or largest, True
        try:
            with self.budget(budget_s):
                return int(self.conn.execute(f"SELECT count(*) FROM {quote(table)}").fetchone()[0]), False
        except TimeBudgetExceeded:
            return self._analyzed_rows(table) or largest, True

    def _largest_rowid(self, table: str) -> int | None:
        try:
            row = self.conn.execute(f"SELECT max(rowid) FROM {quote(table)}").fetchone()
        except sqlite3.OperationalError:
            return None  # a WITHOUT ROWID table
        return int(row[0] or 0)

    def _analyzed_rows(self, table: str) -> int | None:
        try:
            row = self.conn.execute("SELECT stat FROM sqlite_stat1 WHERE tbl = ? AND idx IS NULL", (table,)).fetchone()
        except sqlite3.DatabaseError:
            return None  # no ANALYZE statistics in this file
        return int(str(row[0]).split()[0]) if row else None

    def scalar_rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return list(self.conn.execute(sql, params).fetchall())


def quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


@contextmanager
def opened(path: str, cancelled: threading.Event | None = None) -> Iterator[Database]:
    database = Database(path, cancelled)
    try:
        yield database
    finally:
        database.close()


def translate(exc: BaseException) -> AcpError | None:
    """SQLite errors as ACP errors with a next step (the connector's one translation table)."""
    message = str(exc)
    lowered = message.lower()
    if isinstance(exc, TimeBudgetExceeded):
        return UpstreamError(
            "The query ran past statement_timeout_s and was stopped. Add filters, aggregate, or add LIMIT."
        )
    if not isinstance(exc, sqlite3.Error):
        return None
    if any(
        s in lowered for s in ("not authorized", "authorization denied", "readonly", "read-only", "may not be modified")
    ):
        return ReadOnlyViolation(
            "This ACP is read-only: SQLite refused the statement because it writes or attaches files. "
            "Rewrite it as a single SELECT."
        )
    if "too many attached databases" in lowered:
        return ReadOnlyViolation(
            "This ACP is read-only: ATTACH and VACUUM INTO are not allowed. Query the configured database only."
        )
    if "one statement at a time" in lowered:
        return ReadOnlyViolation(SEVERAL_STATEMENTS)
    if "no such table" in lowered or "no such column" in lowered or "no such function" in lowered:
        return InvalidArguments(
            f"SQLite: {message}. Call autocontext with this database to see its tables and columns, then fix the query."
        )
    if "syntax error" in lowered or "incomplete input" in lowered or "unrecognized token" in lowered:
        return InvalidArguments(f"SQLite rejected the SQL: {message}. Fix the syntax (SQLite dialect) and call again.")
    if "interrupted" in lowered:
        return UpstreamError("The query was interrupted (the call was cancelled or timed out). Call again if needed.")
    if "unable to open" in lowered or "not a database" in lowered or "file is encrypted" in lowered:
        return CredentialsInvalid(
            "The SQLite file in the credentials cannot be opened as a database. Ask the user to check the path."
        )
    if isinstance(exc, sqlite3.OperationalError | sqlite3.ProgrammingError):
        return InvalidArguments(f"SQLite rejected the query: {message}. Fix it and call again.")
    return UpstreamError(f"SQLite failed: {message}. Try again or simplify the query.")


def not_found(kind: str, name: str, available: list[str]) -> ResourceNotFound:
    listed = ", ".join(available[:25]) or "none"
    return ResourceNotFound(
        f"No {kind} '{name}' in this source. Available: {listed}. Call autocontext without arguments to list them."
    )
