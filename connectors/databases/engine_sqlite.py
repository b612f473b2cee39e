"""SQLite: the only module that imports ``sqlite3``.

Read-only in depth (spec 10.4), every layer on every read connection:

1. ``mode=ro`` URI open and ``PRAGMA query_only``;
2. an authorizer that allows only reads, describing pragmas and harmless functions — it
   denies every write, ``ATTACH``/``DETACH``, transactions and ``load_extension``;
3. ``SQLITE_LIMIT_ATTACHED`` at 0, because ``mode=ro`` alone still lets ``ATTACH`` and
   ``VACUUM INTO`` create files;
4. the driver runs one statement per ``execute`` (``sqlite3`` refuses several);
5. the sqlglot check (:meth:`Engine.check_sql`) before any of this: the engine runs the SQL it
   regenerates, and only functions on the allow-list ``shared/sql_functions/sqlite.txt``.

A write connection (``insert_rows`` only) gets an authorizer that allows inserting into and
creating the one target table, and nothing else.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from shared import (
    AcpError,
    CredentialsInvalid,
    Header,
    InvalidArguments,
    ReadOnlyViolation,
    ResourceNotFound,
    TableWriter,
    UpstreamError,
)
from shared.error_policy import Failure, Rule, first_match
from shared.sql import SEVERAL_STATEMENTS

from .engine import (
    MIN_COUNT_S,
    STATEMENT_TIMED_OUT,
    ColumnInfo,
    Connection,
    FileEngine,
    ForeignKey,
    QueryOutcome,
    Relation,
    TableInfo,
    TimeBudgetExceeded,
    database_name,
    validate_path,
)

# The authorizer's own refusals, a layer under the parser layer's allow-list (shared/sql_functions/sqlite.txt):
# the functions that read or write files or load code, whatever text reached the engine.
FORBIDDEN_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})
_READ_ACTIONS = frozenset(
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
# The eponymous virtual tables a read may use (value generators over their arguments).
_EPONYMOUS_TABLES = "SELECT 1 FROM json_each('[]') UNION ALL SELECT 1 FROM json_tree('[]')"
_PROGRESS_STEPS = 5000
EXACT_COUNT_MAX_ROWS = 5_000_000  # counting this many rows takes tens of milliseconds
_SQL_TYPES = {"integer": "INTEGER", "number": "REAL", "boolean": "INTEGER", "date": "DATE", "datetime": "TIMESTAMP"}


def _authorize(action: int, arg1: str | None, arg2: str | None, _db: str | None, _trigger: str | None) -> int:
    if action in _READ_ACTIONS:
        if action == sqlite3.SQLITE_FUNCTION and arg2 and arg2.lower() in FORBIDDEN_FUNCTIONS:
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and arg1:
        name = arg1.lower()
        if name in _DESCRIBING_PRAGMAS or (name in _QUERY_PRAGMAS and arg2 is None):
            return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


class Database(Connection):
    """A SQLite connection with a time budget and a cancel switch (read-only unless ``write``)."""

    def __init__(self, path: str, cancelled: threading.Event | None = None, write: bool = False) -> None:
        super().__init__()
        validate_path(path)
        self.path = path
        self.database = database_name(path)
        if cancelled is not None:
            self.cancelled = cancelled
        self._deadline = float("inf")
        self._write_target: str | None = None
        mode = "rw" if write else "ro"
        self.conn = sqlite3.connect(
            Path(path).as_uri() + f"?mode={mode}", uri=True, isolation_level=None, check_same_thread=False
        )
        try:
            if not write:
                self.conn.execute("PRAGMA query_only = 1")
            self.conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
            # SQLite registers an eponymous virtual table on its first use in a connection by writing
            # to the in-memory schema, which the authorizer below denies: register the JSON ones
            # (value generators that read no table) before it is installed.
            with contextlib.suppress(sqlite3.OperationalError):  # a SQLite built without JSON has none
                self.conn.execute(_EPONYMOUS_TABLES).fetchall()
            self.conn.set_authorizer(_authorize if not write else self._authorize_write)
            self.conn.set_progress_handler(self._progress, _PROGRESS_STEPS)
            self.conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()  # fails on a non-database file
        except BaseException:
            self.conn.close()
            raise

    def _authorize_write(
        self, action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None
    ) -> int:
        target = self._write_target
        if action in (sqlite3.SQLITE_INSERT, sqlite3.SQLITE_CREATE_TABLE) and target is not None and arg1 == target:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_TRANSACTION:
            return sqlite3.SQLITE_OK
        if action in (sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_INSERT) and arg1 in ("sqlite_master", "sqlite_schema"):
            return sqlite3.SQLITE_OK if target is not None else sqlite3.SQLITE_DENY  # CREATE TABLE records itself
        return _authorize(action, arg1, arg2, db, trigger)

    def _progress(self) -> int:
        # A non-zero return makes SQLite stop with "interrupted": time budget or cancelled call.
        return int(self.cancelled.is_set() or time.monotonic() > self._deadline)

    def interrupt(self) -> None:
        self.conn.interrupt()

    def close(self) -> None:
        self.conn.close()

    def reset(self) -> bool:
        """Nothing to clear on a read connection: the authorizer denies every statement that leaves
        session state (temporary tables and views, ATTACH, pragmas that set a value, transactions).
        A connection still inside a transaction (an insert that did not end) is in doubt: closed."""
        return not self.conn.in_transaction

    def alive(self) -> bool:
        try:
            self.conn.execute("SELECT 1").fetchone()
        except sqlite3.Error:
            return False
        return os.path.isfile(self.path)

    @contextmanager
    def budget(self, seconds: float) -> Iterator[None]:
        """Bound the queries inside by ``seconds``; raises TimeBudgetExceeded past it."""
        previous = self._deadline
        self._deadline = min(previous, time.monotonic() + seconds)
        try:
            yield
        except sqlite3.OperationalError as exc:
            if "interrupted" in str(exc) and not self.cancelled.is_set():
                raise TimeBudgetExceeded from exc
            raise
        finally:
            self._deadline = previous

    # -- queries ------------------------------------------------------------------------------
    def stream(
        self, sql: str, writer: TableWriter, *, schema: str | None, timeout_s: float, batch: int = 2000
    ) -> QueryOutcome:
        """Run one query and stream its rows into ``writer`` (types inferred from the values)."""
        # The progress handler stops a statement at the deadline from inside SQLite; the deadline's
        # timer interrupts it from outside, and also ends the row loop between fetches.
        with self.deadline(timeout_s), self.budget(timeout_s):
            cursor = self.conn.execute(sql)
            writer.set_columns([d[0] for d in cursor.description or ()])
            while (size := writer.fetch_size(batch)) and (rows := cursor.fetchmany(size)):
                writer.extend(rows)
                self.check_deadline()
        return QueryOutcome()

    # -- catalog -------------------------------------------------------------------------------
    def databases(self) -> list[str]:
        return [self.database]

    def schemas(self) -> list[str]:
        return ["main"]

    def table_kinds(self) -> list[tuple[str, str]]:
        rows = self.conn.execute(
            "SELECT name, type FROM sqlite_schema WHERE type IN ('table', 'view') "
            "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
        ).fetchall()
        return [(str(name), str(kind)) for name, kind in rows]

    def tables(self, schema: str | None, budget_s: float, only: str | None = None) -> list[TableInfo]:
        deadline = time.monotonic() + budget_s
        out = []
        for name, kind in self.table_kinds():
            if only is not None and name != only:
                continue
            remaining = deadline - time.monotonic()
            rows, estimated = self.row_count(name, kind, remaining) if remaining > MIN_COUNT_S else (None, False)
            out.append(TableInfo(name=name, kind=kind, rows=rows, estimated=estimated))
        return out

    def columns(self, schema: str | None, table: str) -> list[ColumnInfo]:
        # PRAGMA statements, not pragma_* table functions: those make SQLite authorize an
        # UPDATE of sqlite_master on first use, which the authorizer rightly denies.
        rows = self.conn.execute(f"PRAGMA table_info({quote(table)})").fetchall()
        return [ColumnInfo(name=r[1], type=r[2] or "", nullable=not r[3], primary_key=bool(r[5])) for r in rows]

    def foreign_keys(self, schema: str | None, table: str) -> list[ForeignKey]:
        rows = sorted(
            self.conn.execute(f"PRAGMA foreign_key_list({quote(table)})").fetchall(), key=lambda r: (r[0], r[1])
        )
        keys: dict[int, tuple[str, list[str], list[str]]] = {}
        for key_id, _seq, target, column, target_column, *_ in rows:
            entry = keys.setdefault(key_id, (target, [], []))
            entry[1].append(column)
            entry[2].append(target_column)
        return [ForeignKey(tuple(cols), target, tuple(refs)) for target, cols, refs in keys.values()]

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

    def min_max(self, schema: str | None, table: str, column: str, budget_s: float) -> tuple[Any, Any] | None:
        with self.budget(budget_s):
            row = self.conn.execute(f"SELECT min({quote(column)}), max({quote(column)}) FROM {quote(table)}").fetchone()
        return None if row[0] is None else (row[0], row[1])

    def first_text(self, schema: str | None, table: str, column: str, budget_s: float) -> str | None:
        with self.budget(budget_s):
            row = self.conn.execute(
                f"SELECT {quote(column)} FROM {quote(table)} WHERE typeof({quote(column)}) = 'text' LIMIT 1"
            ).fetchone()
        return None if row is None else str(row[0])

    def top_values(
        self, schema: str | None, table: str, column: str, sample_rows: int, limit: int, budget_s: float
    ) -> list[tuple[Any, int]]:
        with self.budget(budget_s):
            sample = f"SELECT {quote(column)} AS v FROM {quote(table)} LIMIT {int(sample_rows)}"
            rows = self.conn.execute(
                f"SELECT v, count(*) AS n FROM ({sample}) WHERE typeof(v) = 'text' "
                f"GROUP BY v ORDER BY n DESC, v LIMIT {int(limit)}"
            ).fetchall()
        return [(r[0], int(r[1])) for r in rows]

    def find_relations(self, names: Collection[str], schemas: Collection[str]) -> list[Relation]:
        # One schema ("main"): ATTACH is refused and the temp schema cannot hold anything here.
        wanted = {name.lower() for name in names}
        return [
            Relation("main", name, kind, tuple(c.name for c in self.columns(None, name)))
            for name, kind in self.table_kinds()
            if name.lower() in wanted
        ]

    def search_path(self, schema: str | None) -> list[str]:
        return ["main"]

    def view_sql(self, schema: str | None, name: str) -> str | None:
        row = self.conn.execute("SELECT sql FROM sqlite_schema WHERE type = 'view' AND name = ?", (name,)).fetchone()
        return None if row is None else str(row[0] or "")

    def user_functions(self) -> frozenset[str]:
        return frozenset()  # SQLite functions come from the application, and this one registers none

    # -- writes ---------------------------------------------------------------------------------
    def insert(
        self, schema: str | None, table: str, headers: Sequence[Header], rows: Iterable[Sequence[Any]], create: bool
    ) -> tuple[int, bool]:
        names = [h["name"] for h in headers]
        self._write_target = table
        created = False
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            exists = any(name == table for name, _ in self.table_kinds())
            if not exists:
                if not create:
                    raise ResourceNotFound(f"No table {table}. Pass an existing table as resource_id.")
                columns = ", ".join(f"{quote(h['name'])} {_SQL_TYPES.get(h['type'], 'TEXT')}" for h in headers)
                self.conn.execute(f"CREATE TABLE {quote(table)} ({columns})")
                created = True
            placeholders = ", ".join("?" for _ in names)
            cursor = self.conn.executemany(
                f"INSERT INTO {quote(table)} ({', '.join(quote(n) for n in names)}) VALUES ({placeholders})", rows
            )
            self.conn.execute("COMMIT")
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise
        finally:
            self._write_target = None
        return cursor.rowcount, created


@contextmanager
def opened(path: str, cancelled: threading.Event | None = None) -> Iterator[Database]:
    database = Database(path, cancelled)
    try:
        yield database
    finally:
        database.close()


class SqliteEngine(FileEngine):
    name = "sqlite"
    title = "SQLite"
    dialect = "sqlite"
    has_schemas = False
    function_list = "sqlite"
    columns_named_by_text = True
    catalog_prefixes = ("sqlite_", "pragma_")  # pragma_table_info reads as a table without arguments too

    def connect(self, credentials: dict[str, Any], database: str | None, write: bool = False) -> Connection:
        return Database(str(credentials["path"]), write=write)

    def translate(self, exc: BaseException) -> AcpError | None:
        return translate(exc)


# SQLite's errors carry no code worth keying on (the driver exposes only the class): the text decides.
_RULES = (
    Rule.fixed(STATEMENT_TIMED_OUT, classes=(TimeBudgetExceeded,)),
    Rule(
        ReadOnlyViolation,
        "This ACP is read-only: SQLite refused the statement because it writes or attaches files. "
        "Rewrite it as a single SELECT.",
        contains=("not authorized", "authorization denied", "readonly", "read-only", "may not be modified"),
    ),
    Rule(
        ReadOnlyViolation,
        "This ACP is read-only: ATTACH and VACUUM INTO are not allowed. Query the configured database only.",
        contains=("too many attached databases",),
    ),
    Rule(ReadOnlyViolation, SEVERAL_STATEMENTS, contains=("one statement at a time",)),
    Rule(
        InvalidArguments,
        "SQLite: {message}. Call autocontext with this database to see its tables and columns, then fix the query.",
        contains=("no such table", "no such column", "no such function"),
    ),
    Rule(
        InvalidArguments,
        "SQLite rejected the SQL: {message}. Fix the syntax (SQLite dialect) and call again.",
        contains=("syntax error", "incomplete input", "unrecognized token"),
    ),
    Rule(
        UpstreamError,
        "The query was interrupted (the call was cancelled or timed out). Call again if needed.",
        contains=("interrupted",),
    ),
    Rule(
        CredentialsInvalid,
        "The SQLite file in the credentials cannot be opened as a database. Ask the user to check the path.",
        contains=("unable to open", "not a database", "file is encrypted"),
    ),
    Rule(
        InvalidArguments,
        "SQLite rejected the query: {message}. Fix it and call again.",
        classes=(sqlite3.OperationalError, sqlite3.ProgrammingError),
    ),
    Rule(UpstreamError, "SQLite failed: {message}. Try again or simplify the query."),
)


def translate(exc: BaseException) -> AcpError | None:
    """SQLite errors as ACP errors with a next step (this engine's translation table)."""
    if not isinstance(exc, sqlite3.Error | TimeBudgetExceeded):
        return None
    return first_match(_RULES, Failure(exc, str(exc)))


ENGINE = SqliteEngine()
