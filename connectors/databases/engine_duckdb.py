"""DuckDB: the only module that imports ``duckdb``.

Read-only in depth (spec 10.4), every layer on every read connection:

1. ``read_only=True``: DuckDB refuses every statement that would change the file;
2. ``enable_external_access = false`` (with extension autoload and autoinstall off, community
   extensions, persistent secrets and Python replacement scans disabled): ``read_only`` alone
   still lets ``COPY … TO`` write files, ``read_csv`` read any file and ``ATTACH`` open others;
3. ``SET lock_configuration = true``, so a statement cannot switch the two layers above off;
4. one statement per call, enforced with DuckDB's own parser (``extract_statements``; its
   ``execute`` would otherwise run every statement of a string), and that statement must be
   of DuckDB's type SELECT — the refusal names the type DuckDB sees;
5. the sqlglot check (:meth:`DuckdbEngine.check_sql`) before any of this: the engine runs the SQL
   it regenerates, only functions on the allow-list ``shared/sql_functions/duckdb.txt`` (no file
   readers, environment readers, ``query()`` or side-effect functions), and none of the views over
   the others (:data:`FORBIDDEN_RELATIONS`).

DuckDB has no statement timeout: a timer calls ``interrupt()``. Spilling goes to a private
directory outside the database's folder (DuckDB's default is ``<file>.tmp`` next to the file,
even for a read-only open). A write connection (``insert_rows`` only) is read-write with the
same external-access lock; DuckDB keeps one open mode per file and process, so opening one
mode closes the idle connections of the other, and a write connection closes right after its
transaction, which releases the file lock for other processes.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar, cast

import duckdb

from shared import (
    AcpError,
    ColumnType,
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

T = TypeVar("T")

# Views over functions off the allow-list (current_setting, duckdb_logs), which a query reads with no
# call in its text.
FORBIDDEN_RELATIONS = frozenset({"pg_settings", "duckdb_logs"})
_SETTINGS: dict[str, Any] = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "allow_persistent_secrets": False,
    "python_enable_replacements": False,
}
EXACT_COUNT_MAX_ROWS = 10_000_000  # DuckDB counts this many rows in well under the block budget
_BATCH = 2000
# What a session could hold for the next call: temporary tables and views, and variables.
_SESSION_STATE = (
    "SELECT (SELECT count(*) FROM duckdb_tables() WHERE temporary) "
    "+ (SELECT count(*) FROM duckdb_views() WHERE temporary AND NOT internal) "
    "+ (SELECT count(*) FROM duckdb_variables())"
)
_APPEND_CHUNK = 5000
_INTEGER_TYPES = frozenset({
    "tinyint", "smallint", "integer", "bigint", "hugeint", "utinyint", "usmallint", "uinteger", "ubigint",
    "uhugeint", "bignum", "varint",
})  # fmt: skip
_NUMBER_TYPES = frozenset({"float", "double", "decimal"})
_DATETIME_TYPES = frozenset(
    {"timestamp", "timestamp_s", "timestamp_ms", "timestamp_ns", "timestamp with time zone", "timestamptz_ns"}
)
_JSON_TYPES = frozenset({"list", "struct", "map", "array", "tuple"})
_STRING_TYPES = frozenset({"varchar", "uuid", "time", "time_ns", "time with time zone", "interval", "enum", "bit"})
_TEMPORAL_COLUMNS = frozenset(t.upper() for t in ("date", *_DATETIME_TYPES))
_SQL_TYPES = {
    "integer": "BIGINT",
    "number": "DOUBLE",
    "boolean": "BOOLEAN",
    "date": "DATE",
    "datetime": "TIMESTAMP",
    "json": "JSON",
}
_FILE_SUFFIXES = (".csv", ".tsv", ".txt", ".parquet", ".json", ".jsonl", ".ndjson", ".gz", ".zst", ".xlsx", ".db")


def quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def header_type(kind: Any) -> ColumnType | None:
    """The ACP column type of a DuckDB result type, or None to infer it from the values."""
    if str(kind) == "JSON":
        return "json"
    type_id = str(getattr(kind, "id", kind)).lower()
    if type_id in _INTEGER_TYPES:
        return "integer"
    if type_id in _NUMBER_TYPES:
        return "number"
    if type_id == "boolean":
        return "boolean"
    if type_id == "date":
        return "date"
    if type_id in _DATETIME_TYPES:
        return "datetime"
    if type_id in _JSON_TYPES:
        return "json"
    if type_id in _STRING_TYPES:
        return "string"
    return None  # BLOB (base64 with the writer's warning), UNION, VARIANT, NULL…: by value


def headers_of(description: Sequence[Sequence[Any]] | None) -> list[Header | str]:
    """Typed headers from ``cursor.description``; a bare name where the values decide."""
    out: list[Header | str] = []
    for column in description or ():
        name, kind = str(column[0]), header_type(column[1])
        out.append(name if kind is None else {"name": name, "type": kind})
    return out


def statement_type(statement: Any) -> str:
    try:
        return str(statement.type.name)
    except ValueError:  # a type the Python binding does not know (UPDATE EXTENSIONS in duckdb 2.0)
        return "UNKNOWN"


def single_select(conn: duckdb.DuckDBPyConnection, sql: str) -> Any:
    """The one statement of ``sql``, parsed by DuckDB itself, if it is a SELECT; else refuse."""
    statements = conn.extract_statements(sql)
    if not statements:
        raise InvalidArguments("The SQL is empty. Send one SELECT query.")
    if len(statements) > 1:
        raise ReadOnlyViolation(SEVERAL_STATEMENTS)
    kind = statement_type(statements[0])
    if kind != "SELECT":
        raise ReadOnlyViolation(
            f"This ACP is read-only: only SELECT queries are executed (DuckDB reads the statement as {kind}). "
            "Rewrite it as a single SELECT."
        )
    return statements[0]


# -- where DuckDB may spill, and which connections hold a file ------------------------------------
_SPILL_LOCK = threading.Lock()
_SPILL_ROOT: list[Path] = []


def _spill_directory(key: str) -> str:
    """A per-file temp directory outside the database's folder, the same for every connection
    of this process (DuckDB shares one instance per file and wants identical settings)."""
    with _SPILL_LOCK:
        if not _SPILL_ROOT:
            configured = os.environ.get("ACP_TMP_DIR")
            if configured:
                root = Path(configured)
                root.mkdir(parents=True, exist_ok=True, mode=0o700)
            else:
                root = Path(tempfile.mkdtemp(prefix="acp-duckdb-"))
                atexit.register(shutil.rmtree, root, ignore_errors=True)
            _SPILL_ROOT.append(root)
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        return str(_SPILL_ROOT[0] / f"duckdb-spill-{os.getpid()}-{digest}")


_REGISTRY_LOCK = threading.Lock()
_OPEN: dict[str, weakref.WeakSet[Database]] = {}
MAKE_ROOM_WAIT_S = 10.0


def _make_room(key: str, write: bool, wait_s: float = MAKE_ROOM_WAIT_S) -> None:
    """Close this process's idle connections of the other mode to the file (DuckDB allows one)."""
    deadline = time.monotonic() + wait_s
    while True:
        with _REGISTRY_LOCK:
            others = [d for d in _OPEN.get(key, ()) if d.write != write and not d.closed]
        busy = 0
        for other in others:
            if other.use.acquire(blocking=False):
                try:
                    other.close()
                finally:
                    other.use.release()
            else:
                busy += 1
        if not busy:
            return
        if time.monotonic() > deadline:
            doing = "reading" if write else "writing to"
            raise UpstreamError(
                f"The DuckDB file is busy: another call is {doing} it in this server. Call again in a moment."
            )
        time.sleep(0.05)


class Database(Connection):
    """A DuckDB connection with a time budget and a cancel switch (read-only unless ``write``)."""

    def __init__(self, path: str, cancelled: threading.Event | None = None, write: bool = False) -> None:
        super().__init__()
        validate_path(path)
        self.path = path
        self.key = os.path.realpath(path)
        self.database = database_name(path)
        self.write = write
        self.closed = False
        self.use = threading.RLock()  # held while a method talks to DuckDB
        if cancelled is not None:
            self.cancelled = cancelled
        self._schema: str | None = None
        self._catalog: dict[tuple[str, ...], Any] = {}  # catalog reads for `hidden`; see _remembered
        _make_room(self.key, write)
        settings = {**_SETTINGS, "temp_directory": _spill_directory(self.key)}
        try:
            self.conn = duckdb.connect(self.key, read_only=not write, config=settings)
        except duckdb.Error as exc:
            raise _open_error(exc) from None
        try:
            # The setting is global to the file's instance: the first connection locks it for all.
            if self._setting("lock_configuration") is not True:
                self.conn.execute("SET lock_configuration = true")
            self._verify()
            self.conn.execute("SELECT count(*) FROM duckdb_tables()").fetchall()
        except BaseException:
            self.conn.close()
            raise
        with _REGISTRY_LOCK:
            _OPEN.setdefault(self.key, weakref.WeakSet()).add(self)

    def _setting(self, name: str) -> Any:
        row = self.conn.execute("SELECT current_setting(?)", [name]).fetchone()
        return row[0] if row else None

    def _verify(self) -> None:
        """Read the layers back from DuckDB itself: a connection without them is never used."""
        expected: dict[str, Any] = {"lock_configuration": True, "enable_external_access": False}
        if not self.write:
            expected["access_mode"] = "read_only"
        wrong = [name for name, value in expected.items() if self._setting(name) != value]
        if wrong:
            raise UpstreamError(f"DuckDB did not apply {', '.join(wrong)}; the connection is not used. Call again.")

    def interrupt(self) -> None:
        if not self.closed:
            with contextlib.suppress(duckdb.Error):
                self.conn.interrupt()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(duckdb.Error):
            self.conn.close()

    def alive(self) -> bool:
        if self.closed:
            return False
        with self.use:
            try:
                self.conn.execute("SELECT 1").fetchall()
            except duckdb.Error:
                return False
        return os.path.isfile(self.path)

    def reset(self) -> bool:
        """Whether the session holds nothing a call could leave for the next one. A read-only DuckDB
        connection still accepts temporary tables, views and macros and ``SET VARIABLE`` (verified on
        DuckDB 1.x); no SELECT creates them and :func:`single_select` refuses every other statement,
        so this only confirms it: a session that holds one anyway is closed, not reused."""
        if self.write or self.closed:
            return False  # a write connection closes after its transaction (see insert)
        with self.use:
            row = self.conn.execute(_SESSION_STATE).fetchone()
        return row is not None and row[0] == 0

    # -- queries ------------------------------------------------------------------------------
    def _set_schema(self, schema: str | None) -> None:
        if schema == self._schema:
            return
        if schema is None:
            self.conn.execute("RESET search_path")
        else:
            self.conn.execute(f"SET search_path = {literal(quote(schema))}")
        self._schema = schema

    def stream(
        self,
        sql: str,
        writer: TableWriter,
        *,
        schema: str | None,
        timeout_s: float,
        batch: int = _BATCH,
    ) -> QueryOutcome:
        """Run one SELECT and stream its rows, with typed headers, into ``writer``."""
        with self.use:
            statement = single_select(self.conn, sql)  # the driver layer: DuckDB's own parser
            self._set_schema(schema)
            with self.deadline(timeout_s):  # DuckDB has no statement timeout: the deadline's timer interrupts
                cursor = self.conn.execute(statement)
                writer.set_columns(headers_of(cursor.description))
                while (size := writer.fetch_size(batch)) and (rows := cursor.fetchmany(size)):
                    writer.extend(rows)
                    self.check_deadline()
        return QueryOutcome()

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self.use:
            return list(self.conn.execute(sql, list(params)).fetchall())

    # -- catalog -------------------------------------------------------------------------------
    def databases(self) -> list[str]:
        return [self.database]

    def schemas(self) -> list[str]:
        rows = self.rows(
            "SELECT schema_name FROM duckdb_schemas() WHERE database_name = current_database() "
            "AND schema_name NOT IN ('information_schema', 'pg_catalog') ORDER BY schema_name"
        )
        return [str(r[0]) for r in rows]

    def _objects(self, schema: str | None) -> list[tuple[str, str, str, int | None, str | None]]:
        where = "database_name = current_database() AND NOT temporary AND NOT internal"
        where += " AND schema_name NOT IN ('information_schema', 'pg_catalog')"
        params: list[Any] = []
        if schema is not None:
            where += " AND schema_name = ?"
            params = [schema, schema]
        rows = self.rows(
            f"SELECT schema_name, table_name, 'table', estimated_size, comment FROM duckdb_tables() WHERE {where} "
            f"UNION ALL SELECT schema_name, view_name, 'view', NULL, comment FROM duckdb_views() WHERE {where} "
            "ORDER BY 1, 2",
            params,
        )
        return [(str(s), str(t), str(k), None if n is None else int(n), c or None) for s, t, k, n, c in rows]

    def tables(self, schema: str | None, budget_s: float, only: str | None = None) -> list[TableInfo]:
        deadline = time.monotonic() + budget_s
        out = []
        for table_schema, name, kind, size, comment in self._objects(schema):
            if only is not None and name != only:
                continue
            remaining = deadline - time.monotonic()
            if remaining > MIN_COUNT_S:
                rows, estimated = self.row_count(table_schema, name, kind, size, remaining)
            elif budget_s > 0 and kind == "table" and size is not None:
                rows, estimated = size, True  # out of time: the catalog's figure, flagged
            else:
                rows, estimated = None, False
            shown = name if schema is not None else f"{table_schema}.{name}"
            out.append(TableInfo(name=shown, kind=kind, rows=rows, estimated=estimated, comment=comment))
        return out

    def row_count(
        self,
        schema: str,
        table: str,
        kind: str,
        estimate: int | None,
        budget_s: float,
        exact_up_to: int = EXACT_COUNT_MAX_ROWS,
    ) -> tuple[int | None, bool]:
        """Rows of a table or view, and whether the figure is an estimate.

        A table larger than ``exact_up_to`` by the catalog's ``estimated_size`` is not counted;
        others are counted within ``budget_s`` (past it, the catalog figure, flagged). A view
        is counted within the budget; past it, its count is unknown.
        """
        if kind == "table" and estimate is not None and estimate > exact_up_to:
            return estimate, True
        try:
            with self.use, self.deadline(budget_s):
                row = self.conn.execute(f"SELECT count(*) FROM {quote(schema)}.{quote(table)}").fetchone()
        except TimeBudgetExceeded:
            return (estimate, True) if kind == "table" else (None, True)
        return int(row[0]) if row else 0, False

    def _remembered(self, key: tuple[str, ...], read: Callable[[], T]) -> T:
        """A catalog read, once per read-only connection: while one is open no process may write the
        file (DuckDB's lock), nor this one (the pool closes its readers before a write), so the
        catalog cannot change under it. Listing functions alone takes 10 ms or more."""
        if self.write:
            return read()
        if key not in self._catalog:
            self._catalog[key] = read()
        return cast(T, self._catalog[key])

    def find_relations(self, names: Collection[str], schemas: Collection[str]) -> list[Relation]:
        wanted = sorted({name.lower() for name in names})
        if not wanted:
            return []
        return self._remembered(("relations", *wanted), lambda: self._relations(wanted))

    def _relations(self, wanted: list[str]) -> list[Relation]:
        rows = self.rows(
            "SELECT c.schema_name, c.table_name, v.view_name IS NOT NULL, list(c.column_name ORDER BY c.column_index) "
            "FROM duckdb_columns() c LEFT JOIN duckdb_views() v ON v.database_name = c.database_name "
            "AND v.schema_name = c.schema_name AND v.view_name = c.table_name "
            "WHERE c.database_name = current_database() AND NOT c.internal AND lower(c.table_name) IN "
            f"({', '.join('?' for _ in wanted)}) GROUP BY ALL ORDER BY 1, 2",
            wanted,
        )
        return [
            Relation(str(schema), str(name), "view" if is_view else "table", tuple(str(c) for c in columns))
            for schema, name, is_view, columns in rows
        ]

    def search_path(self, schema: str | None) -> list[str]:
        return [schema or "main"]  # stream() resets the search path to DuckDB's default without a schema

    def view_sql(self, schema: str | None, name: str) -> str | None:
        def read() -> str | None:
            rows = self.rows(
                "SELECT sql FROM duckdb_views() WHERE database_name = current_database() AND NOT internal "
                "AND schema_name = ? AND view_name = ?",
                [self._schema_of(schema), name],
            )
            return str(rows[0][0] or "") if rows else None

        return self._remembered(("view", self._schema_of(schema), name), read)

    def user_functions(self) -> frozenset[str]:
        def read() -> frozenset[str]:
            rows = self.rows("SELECT DISTINCT lower(function_name) FROM duckdb_functions() WHERE NOT internal")
            return frozenset(str(r[0]) for r in rows)

        return self._remembered(("functions",), read)

    def _schema_of(self, schema: str | None) -> str:
        return schema if schema is not None else self._schema or "main"

    def column_types(self, schema: str | None, table: str) -> dict[str, str]:
        rows = self.rows(
            "SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = current_database() "
            "AND schema_name = ? AND table_name = ? ORDER BY column_index",
            [self._schema_of(schema), table],
        )
        return {str(name): str(kind) for name, kind in rows}

    def columns(self, schema: str | None, table: str) -> list[ColumnInfo]:
        schema = self._schema_of(schema)
        primary = {
            str(column)
            for (names,) in self.rows(
                "SELECT constraint_column_names FROM duckdb_constraints() WHERE database_name = current_database() "
                "AND schema_name = ? AND table_name = ? AND constraint_type = 'PRIMARY KEY'",
                [schema, table],
            )
            for column in names or ()
        }
        rows = self.rows(
            "SELECT column_name, data_type, is_nullable, comment FROM duckdb_columns() "
            "WHERE database_name = current_database() AND schema_name = ? AND table_name = ? ORDER BY column_index",
            [schema, table],
        )
        return [
            ColumnInfo(
                name=str(name),
                type=str(kind),
                nullable=bool(nullable) and name not in primary,
                primary_key=name in primary,
                comment=comment or None,
            )
            for name, kind, nullable, comment in rows
        ]

    def foreign_keys(self, schema: str | None, table: str) -> list[ForeignKey]:
        rows = self.rows(
            "SELECT constraint_column_names, referenced_table, referenced_column_names FROM duckdb_constraints() "
            "WHERE database_name = current_database() AND schema_name = ? AND table_name = ? "
            "AND constraint_type = 'FOREIGN KEY' ORDER BY constraint_index",
            [self._schema_of(schema), table],
        )
        # DuckDB refuses foreign keys across schemas: the referenced table is in the same schema.
        return [
            ForeignKey(tuple(str(c) for c in columns), str(target), tuple(str(c) for c in referenced))
            for columns, target, referenced in rows
        ]

    def _kind(self, schema: str | None, table: str, column: str) -> str:
        return self.column_types(schema, table).get(column, "").upper()

    def _source(self, schema: str | None, table: str) -> str:
        return f"{quote(self._schema_of(schema))}.{quote(table)}"

    def min_max(self, schema: str | None, table: str, column: str, budget_s: float) -> tuple[Any, Any] | None:
        kind = self._kind(schema, table, column)
        if kind not in _TEMPORAL_COLUMNS and not _is_text_type(kind):
            return None  # TIME, INTERVAL, lists of dates: not a date range
        with self.use, self.deadline(budget_s):
            row = self.conn.execute(
                f"SELECT min({quote(column)}), max({quote(column)}) FROM {self._source(schema, table)}"
            ).fetchone()
        return None if row is None or row[0] is None else (row[0], row[1])

    def first_text(self, schema: str | None, table: str, column: str, budget_s: float) -> str | None:
        if not _is_text_type(self._kind(schema, table, column)):
            return None
        with self.use, self.deadline(budget_s):
            row = self.conn.execute(
                f"SELECT CAST({quote(column)} AS VARCHAR) FROM {self._source(schema, table)} "
                f"WHERE {quote(column)} IS NOT NULL LIMIT 1"
            ).fetchone()
        return None if row is None else str(row[0])

    def top_values(
        self, schema: str | None, table: str, column: str, sample_rows: int, limit: int, budget_s: float
    ) -> list[tuple[Any, int]]:
        if not _is_text_type(self._kind(schema, table, column)):
            return []  # VARCHAR[] or STRUCT(… VARCHAR) look like text by name only
        sample = (
            f"SELECT CAST({quote(column)} AS VARCHAR) AS v FROM {self._source(schema, table)} LIMIT {int(sample_rows)}"
        )
        with self.use, self.deadline(budget_s):
            rows = self.conn.execute(
                f"SELECT v, count(*) AS n FROM ({sample}) WHERE v IS NOT NULL "
                f"GROUP BY v ORDER BY n DESC, v LIMIT {int(limit)}"
            ).fetchall()
        return [(r[0], int(r[1])) for r in rows]

    # -- writes ---------------------------------------------------------------------------------
    def insert(
        self, schema: str | None, table: str, headers: Sequence[Header], rows: Iterable[Sequence[Any]], create: bool
    ) -> tuple[int, bool]:
        """Append rows in one transaction, then close: the file lock is released right away."""
        if not self.write:
            raise ReadOnlyViolation("This connection is read-only. Use insert_rows with a write-enabled source.")
        schema = schema or "main"
        names = [h["name"] for h in headers]
        kinds = [h.get("type", "string") for h in headers]
        target = f"{quote(schema)}.{quote(table)}"
        created = False
        inserted = 0
        with self.use:
            try:
                self.conn.execute("BEGIN TRANSACTION")
                if not any(name == table for _, name, *_ in self._objects(schema)):
                    if not create:
                        raise ResourceNotFound(f"No table {schema}.{table}. Pass an existing table as resource_id.")
                    columns = ", ".join(
                        f"{quote(name)} {_SQL_TYPES.get(kind, 'VARCHAR')}"
                        for name, kind in zip(names, kinds, strict=True)
                    )
                    self.conn.execute(f"CREATE TABLE {target} ({columns})")
                    created = True
                inserted = self._append(target, names, kinds, rows)
                self.conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(duckdb.Error):
                    self.conn.execute("ROLLBACK")
                raise
            finally:
                self.close()
        return inserted, created

    def _append(self, target: str, names: list[str], kinds: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
        def cell(kind: str, value: Any) -> Any:
            if kind == "json" and value is not None and not isinstance(value, str):
                return json.dumps(value, ensure_ascii=False)
            return value

        prepared = ([cell(k, v) for k, v in zip(kinds, row, strict=True)] for row in rows)
        count = 0
        appender_of = getattr(self.conn, "appender", None)
        if appender_of is None:  # duckdb < 2.0: slower, same result
            placeholders = ", ".join("?" for _ in names)
            columns = ", ".join(quote(n) for n in names)
            batch = list(prepared)
            if batch:
                self.conn.executemany(f"INSERT INTO {target} ({columns}) VALUES ({placeholders})", batch)
            return len(batch)
        appender = appender_of(target, columns=names)
        chunk: list[list[Any]] = []
        for row in prepared:
            chunk.append(row)
            if len(chunk) >= _APPEND_CHUNK:
                appender.append_rows(chunk)
                count += len(chunk)
                chunk = []
        if chunk:
            appender.append_rows(chunk)
            count += len(chunk)
        appender.flush()
        return count


def _is_text_type(kind: str) -> bool:
    return kind == "VARCHAR" or kind.startswith(("VARCHAR(", "ENUM("))


_LOCKED = (
    "The DuckDB file is locked by another process that is writing to it. Call again when it has finished, "
    "or ask the user to close the program holding it."
)
_OTHER_MODE = "The DuckDB file is open in this server in another mode (a write is running). Call again in a moment."
_CANNOT_OPEN = Rule(
    CredentialsInvalid,
    "The file in the credentials cannot be opened as a DuckDB database ({line:.200}). Ask the user to check the path.",
)
_OPEN_RULES = (
    Rule(UpstreamError, _LOCKED, contains=("could not set lock", "conflicting lock")),
    Rule(UpstreamError, _OTHER_MODE, contains=("different configuration",)),
)


def _open_error(exc: duckdb.Error) -> AcpError:
    failure = _failure(exc)
    return first_match(_OPEN_RULES, failure) or _CANNOT_OPEN.build(failure)


def _dialect() -> str:
    """sqlglot's DuckDB dialect for the installed DuckDB: what it writes changes with the version
    (``a ~ 'x'`` matches anywhere from 2.0 on, the whole text before)."""
    version = re.match(r"\d+\.\d+\.\d+", duckdb.__version__)
    return f"duckdb, version={version.group()}" if version else "duckdb"


class DuckdbEngine(FileEngine):
    name = "duckdb"
    title = "DuckDB"
    dialect = _dialect()
    has_schemas = True
    catalog_schemas = frozenset({"information_schema", "pg_catalog"})
    # pg_catalog's views (pg_class, pg_attribute…) resolve unqualified in DuckDB too.
    catalog_prefixes = ("duckdb_", "pragma_", "sqlite_", "pg_")
    catalog_functions = frozenset({"obj_description", "col_description", "format_type", "current_schemas"})
    text_types = ("char", "text", "string", "enum")
    function_list = "duckdb"
    forbidden_relations = FORBIDDEN_RELATIONS

    def connect(self, credentials: dict[str, Any], database: str | None, write: bool = False) -> Connection:
        return Database(str(credentials["path"]), write=write)

    def translate(self, exc: BaseException) -> AcpError | None:
        return translate(exc)


def _looks_like_a_file(message: str) -> bool:
    """A replacement scan (``FROM 'data.csv'``) that external access off turned into a missing table."""
    if "Table with name " not in message:
        return False
    name = message.split("Table with name ", 1)[1].split(" does not exist", 1)[0].lower()
    return "/" in name or "\\" in name or "://" in name or name.endswith(_FILE_SUFFIXES)


def _failure(exc: BaseException) -> Failure:
    message = str(exc)
    line = (message.splitlines() or [""])[0]
    first = (line if message else type(exc).__name__).rstrip(".! ")  # DuckDB's first line, without its "!"
    return Failure(exc, message, fields={"line": line, "first": first})


_NO_FILES = (
    "This ACP is read-only and reads only the configured database: DuckDB refused to read or write files, "
    "extensions or other databases. Query the tables of this database with a single SELECT."
)
_RULES = (
    Rule.fixed(STATEMENT_TIMED_OUT, classes=(TimeBudgetExceeded,)),
    Rule(
        UpstreamError,
        "The query was cancelled before it finished. Call again if it is still needed.",
        classes=(duckdb.InterruptException,),
    ),
    Rule(ReadOnlyViolation, _NO_FILES, classes=(duckdb.PermissionException,)),
    Rule(ReadOnlyViolation, _NO_FILES, contains=("file system operations are disabled",)),
    Rule(
        ReadOnlyViolation,
        "This ACP is read-only: DuckDB refused the statement ({first:.200}). Rewrite it as a single SELECT.",
        contains=(
            "read-only mode",
            "cannot execute statement of type",
            "configuration has been locked",
            "in read-only",
        ),
    ),
    Rule(
        UpstreamError,
        "DuckDB: {first}. Another transaction changed the same rows; call again.",
        classes=(duckdb.TransactionException,),
        contains=("conflict",),
    ),
    Rule(
        ReadOnlyViolation,
        "This ACP is read-only: transactions are managed by the connector. Send a single SELECT.",
        classes=(duckdb.TransactionException,),
    ),
    Rule(
        ReadOnlyViolation,
        "This ACP reads only the configured database: a quoted file name in FROM would read a file, and file "
        "access is disabled. Query the database's tables instead.",
        classes=(duckdb.CatalogException,),
        when=lambda failure: _looks_like_a_file(failure.message),
    ),
    Rule(
        InvalidArguments,
        "DuckDB: {first}. Call autocontext with this database to see its schemas, tables and columns, "
        "then fix the query.",
        classes=(duckdb.CatalogException, duckdb.BinderException),
    ),
    Rule(
        InvalidArguments,
        "DuckDB rejected the SQL: {first}. Fix the syntax (DuckDB dialect) and call again.",
        classes=(duckdb.ParserException,),
    ),
    Rule(
        UpstreamError,
        "The DuckDB connection was closed (the file was reopened for a write, or the server is shutting down). "
        "Call again.",
        classes=(duckdb.ConnectionException,),
    ),
    # A lock message is the file's opening failing (see _open_error).
    Rule(UpstreamError, _LOCKED, classes=(duckdb.IOException,), contains=("could not set lock", "conflicting lock")),
    Rule(
        UpstreamError,
        _OTHER_MODE,
        classes=(duckdb.IOException,),
        contains=("lock",),
        when=lambda failure: "different configuration" in failure.lowered,
    ),
    replace(_CANNOT_OPEN, classes=(duckdb.IOException,), contains=("lock",)),
    Rule(
        UpstreamError,
        "DuckDB could not read the database file: {first}. Try again later.",
        classes=(duckdb.IOException,),
    ),
    Rule(
        UpstreamError,
        "DuckDB ran out of memory for this query. Aggregate, filter or select fewer columns, then call again.",
        classes=(duckdb.OutOfMemoryException,),
    ),
    Rule(
        InvalidArguments,
        "DuckDB: {first}. The rows break a constraint of the table; fix them first.",
        classes=(duckdb.ConstraintException,),
    ),
    Rule(
        InvalidArguments,
        "DuckDB rejected the query: {first}. Fix it and call again.",
        classes=(
            duckdb.ConversionException,
            duckdb.InvalidInputException,
            duckdb.OutOfRangeException,
            duckdb.TypeMismatchException,
            duckdb.NotImplementedException,
            duckdb.InvalidTypeException,
            duckdb.ProgrammingError,
            duckdb.DataError,
        ),
    ),
    Rule(UpstreamError, "DuckDB failed: {first}. Try again or simplify the query."),
)


def translate(exc: BaseException) -> AcpError | None:
    """DuckDB errors as ACP errors with a next step (this engine's translation table)."""
    if not isinstance(exc, duckdb.Error | TimeBudgetExceeded):
        return None
    return first_match(_RULES, _failure(exc))


ENGINE = DuckdbEngine()
