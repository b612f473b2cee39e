"""``acp_query``: one SQLite SELECT over the datasets of ``acp-data/``, run on DuckDB (spec 16.4, 16.6).

A query goes through these steps, each of which can only refuse; none writes anything:

1. :func:`shared.sql.check_query_only` in the SQLite dialect, with SQLite's function allow-list
   (``shared/sql_functions/sqlite.txt``): one SELECT or WITH … SELECT, nothing else
   (``ACP_READ_ONLY_VIOLATION``), and no function that reads files or settings.
2. The tables it names, CTEs aside, must be dataset ids, looked up with the store's ``lookup``
   (``ACP_TABLE_NOT_FOUND`` names the closest ids). A path, a quoted file name, a qualified name
   or a table function is not a dataset.
3. SQLite itself reads the query over empty tables of the datasets' columns: that is the reference
   for what is valid (its errors come back as ``ACP_INVALID_ARGUMENTS``) and for the names of the
   result columns.
4. :mod:`bridge.sqlite_dialect` writes the DuckDB form, which is checked again with DuckDB's
   allow-list (``shared/sql_functions/duckdb.txt``) and run on a fresh in-memory DuckDB: only the
   named datasets, as views over ``read_csv`` with the column types of their headers; then, before
   the query, external access off except for those CSV files (``allowed_paths``), extension
   loading and installing off, Python replacement scans off, and the configuration locked.
5. A query without a faithful DuckDB form, or that DuckDB refuses, runs on SQLite instead (the
   reference approach: an in-memory database of typed columns, only the named datasets, values
   inserted as Python values), under an authorizer that allows reads of those tables and the
   allow-listed functions only, and no ATTACH. ``QueryResult.notes`` says why.

The CSV files are only ever opened for reading: DuckDB reads them through views, SQLite through
:func:`load_sqlite`.
"""

from __future__ import annotations

import atexit
import contextlib
import csv
import functools
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from shared.errors import AcpError, InvalidArguments, ReadOnlyViolation, TableNotFound, UpstreamError
from shared.protocol import ColumnType, Header

from .datasets import Dataset
from .sqlite_dialect import DUCKDB_MACROS, DUCKDB_TYPES, SQLITE_TYPES, Kind, Translation

__all__ = ["QueryEngine", "QueryResult", "load_sqlite"]

RUNNER = "acp_query"
READ_ONLY_NOTE = (
    "acp_query runs only queries (one SELECT, or WITH … SELECT) and never changes a dataset: the CSV files "
    "in acp-data are read-only. To keep a result, run the SELECT with save_as."
)
_DATASET_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_FIRST_BATCH = 2048  # rows fetched before the result is handed over, so an engine error can still fall back
_SQLITE_CHUNK = 10_000
# The dry run that reads the query over empty tables stops after this many SQLite VM steps (a
# recursive CTE can loop without any data); the result names then come from a LIMIT 0 wrapper.
_DRY_RUN_STEPS = 200_000


@dataclass
class QueryResult:
    """One running query: typed ``headers`` (result names as SQLite gives them), the ``engine`` that
    runs it (``duckdb`` or ``sqlite``), ``notes`` for the model (why it runs on SQLite), and
    ``sql_run``, the text the engine runs. :meth:`batches` streams the rows, once."""

    headers: list[Header]
    engine: str
    notes: list[str]
    sql_run: str
    _fetch: Callable[[int], list[tuple[Any, ...]]] = field(repr=False)
    _pending: list[tuple[Any, ...]] = field(repr=False, default_factory=list)
    _convert: Callable[[tuple[Any, ...]], tuple[Any, ...]] | None = field(repr=False, default=None)
    _done: bool = field(repr=False, default=False)

    def batches(self, size: int = 10_000) -> Iterator[list[tuple[Any, ...]]]:
        """The rows, ``size`` at most per list, fetched from the engine as they are consumed (a
        result of millions of rows is never held whole in Python). Values are Python values in
        header order: booleans as ``bool``, dates and datetimes as their ISO text."""
        if size < 1:
            raise ValueError("size must be at least 1")
        while True:
            if not self._done and len(self._pending) < size:
                more = self._fetch(size - len(self._pending))
                if len(more) < size - len(self._pending):
                    self._done = True
                self._pending.extend(more)
            if not self._pending:
                return
            batch, self._pending = self._pending[:size], self._pending[size:]
            yield batch if self._convert is None else [self._convert(row) for row in batch]


@dataclass(frozen=True)
class _Plan:
    """A checked query: its text, the datasets it reads, the names of its CTEs (which SQLite's
    authorizer sees read as tables), the SQLite names of its columns and its DuckDB form."""

    sql: str
    datasets: dict[str, Dataset]
    ctes: frozenset[str]
    names: list[str]
    translation: Translation


class QueryEngine:
    """Runs ``acp_query`` SQL over the datasets that ``lookup`` finds (``DatasetStore.get``, which
    raises ``TableNotFound`` naming the closest ids)."""

    def __init__(self, lookup: Callable[[str], Dataset]) -> None:
        self._lookup = lookup

    @contextmanager
    def run(self, sql: str) -> Iterator[QueryResult]:
        """Check ``sql`` and start it; the result's engine resources close when the block ends.

        Blocking: call it in a worker thread. Raises ``ReadOnlyViolation`` (anything but a query,
        a function or relation that is not allowed), ``TableNotFound`` (an unknown dataset or a
        path) and ``InvalidArguments`` (syntax, unknown column or function: the message says what
        to write).
        """
        plan = self._plan(sql)
        with contextlib.ExitStack() as stack:
            result = None
            reason = plan.translation.reason
            if plan.translation.sql is not None:
                try:
                    result = _run_duckdb(plan, plan.translation.sql, stack)
                except _DuckdbRefused as exc:
                    reason = exc.reason
            if result is None:
                result = _run_sqlite(plan, reason or "DuckDB could not run it", stack)
            yield result

    def _plan(self, sql: str) -> _Plan:
        from sqlglot import exp

        from shared.sql import FunctionRules, check_query_only, function_allow_list

        from .sqlite_dialect import translate

        rules = FunctionRules(builtin=function_allow_list("sqlite"), runner=RUNNER)
        try:
            checked = check_query_only(sql, "sqlite", rules, columns_named_by_text=True)
        except ReadOnlyViolation as exc:
            raise ReadOnlyViolation(f"{exc.message} {READ_ONLY_NOTE}") from None
        datasets = self._datasets(checked.tree)
        ctes = frozenset(cte.alias_or_name.lower() for cte in checked.tree.find_all(exp.CTE))
        names = _sqlite_names(sql, datasets, ctes)
        translation = translate(_as_written(sql), {name: d.headers for name, d in datasets.items()})
        return _Plan(sql, datasets, ctes, names, translation)

    def _datasets(self, tree: Any) -> dict[str, Dataset]:
        """The datasets the query reads, by the lower-case name it uses (CTE names aside)."""
        from sqlglot import exp
        from sqlglot.errors import SqlglotError
        from sqlglot.optimizer.scope import traverse_scope

        for table in tree.find_all(exp.Table):
            if not isinstance(table.this, exp.Identifier):
                raise InvalidArguments(
                    f"acp_query reads datasets only, by id; {table.this.sql('sqlite')} is a table function. Call "
                    "acp_datasets to see the dataset ids and use one as a table name."
                )
            if table.args.get("db") or table.args.get("catalog"):
                raise TableNotFound(
                    f"{table.sql('sqlite')} is not a dataset id: write the id alone, with no schema or database "
                    "before it. Call acp_datasets to see the ids."
                )
        names: dict[str, str] = {}
        try:
            scopes = traverse_scope(tree)
        except (SqlglotError, RecursionError) as exc:  # on a query it parsed: report it, do not guess
            raise InvalidArguments(
                f"The query's tables could not be read ({exc}). Simplify the FROM clauses."
            ) from None
        for scope in scopes:
            for source in scope.sources.values():
                if isinstance(source, exp.Table):
                    names.setdefault(source.name.lower(), source.name)
        datasets: dict[str, Dataset] = {}
        for key, written in names.items():
            if not _DATASET_ID.match(written):
                raise TableNotFound(
                    f"{written!r} is not a dataset id: acp_query reads the datasets of acp-data by id (a plain name "
                    "such as ventas_execute_sql_20261012_101630), never files or paths. Call acp_datasets to see "
                    "the ids."
                )
            datasets[key] = self._lookup(written)
        return datasets


def _as_written(sql: str) -> Any:
    """The query as sqlglot reads the text that SQLite runs. The checked tree is read back from
    sqlglot's regenerated text, which can differ in meaning (``CAST(x AS DATE)`` comes back as
    ``date(x)``); the translation starts from the text itself, and its DuckDB form is checked again."""
    import sqlglot
    from sqlglot.errors import SqlglotError

    try:
        return sqlglot.parse_one(sql, read="sqlite")
    except SqlglotError:
        return None


# -- SQLite: the reference ----------------------------------------------------------------------------
_ALLOWED_OPERATORS = frozenset({"->", "->>"})  # JSON operators, authorized as functions


def _authorizer(tables: Iterable[str]) -> Callable[[int, str | None, str | None, str | None, str | None], int]:
    """Allow reading ``tables`` (the datasets, and the query's CTEs, which SQLite reports as read
    too) and calling the allow-listed functions; deny everything else (writes, ATTACH, PRAGMA,
    transactions, sqlite_schema, load_extension, readfile…)."""
    from shared.sql import function_allow_list

    readable = frozenset(t.lower() for t in tables)
    functions = function_allow_list("sqlite") | _ALLOWED_OPERATORS

    def authorize(action: int, arg1: str | None, arg2: str | None, _db: str | None, _trigger: str | None) -> int:
        if action in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_RECURSIVE):
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_READ and arg1 is not None and arg1.lower() in readable:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_FUNCTION and arg2 is not None and arg2.lower() in functions:
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY

    return authorize


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _sqlite_connection(datasets: Mapping[str, Dataset]) -> sqlite3.Connection:
    """An in-memory SQLite database with an empty table of typed columns for each dataset."""
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    for dataset in datasets.values():
        columns = ", ".join(f"{_quote(h['name'])} {SQLITE_TYPES[h['type']]}" for h in dataset.headers)
        conn.execute(f"CREATE TABLE {_quote(dataset.id)} ({columns})")
    return conn


def _sqlite_value_converters(headers: Sequence[Header]) -> list[Callable[[str], Any]]:
    def integer(cell: str) -> Any:
        try:
            return int(cell)
        except ValueError:
            return number(cell)

    def number(cell: str) -> Any:
        try:
            return float(cell)
        except ValueError:
            return cell  # SQLite keeps it as text, as the reference does

    def boolean(cell: str) -> Any:
        lowered = cell.lower()
        return 1 if lowered == "true" else 0 if lowered == "false" else cell

    by_type: dict[ColumnType, Callable[[str], Any]] = {"integer": integer, "number": number, "boolean": boolean}
    return [by_type.get(h["type"], str) for h in headers]


def load_sqlite(conn: sqlite3.Connection, dataset: Dataset) -> None:
    """Fill the dataset's table (see :func:`_sqlite_connection`) from its CSV, the reference way:
    ``csv`` reader, values converted by column type (empty cell = NULL), ``executemany``."""
    converters = _sqlite_value_converters(dataset.headers)
    placeholders = ", ".join("?" for _ in dataset.headers)
    insert = f"INSERT INTO {_quote(dataset.id)} VALUES ({placeholders})"
    width = len(converters)
    with dataset.csv_path.open("r", encoding="utf-8", newline="") as file:
        reader = csv.reader(file)
        next(reader, None)  # the header row
        chunk: list[list[Any]] = []
        for record in reader:
            cells = (record + [""] * width)[:width]
            chunk.append(
                [None if cell == "" else convert(cell) for convert, cell in zip(converters, cells, strict=True)]
            )
            if len(chunk) >= _SQLITE_CHUNK:
                conn.executemany(insert, chunk)
                chunk = []
        if chunk:
            conn.executemany(insert, chunk)


def _sqlite_error(exc: sqlite3.Error, datasets: Mapping[str, Dataset]) -> AcpError:
    message = str(exc)
    if "not authorized" in message or "prohibited" in message:
        return ReadOnlyViolation(
            f"SQLite refused the query ({message}): acp_query reads the named datasets only. {READ_ONLY_NOTE}"
        )
    columns = "; ".join(f"{d.id}({', '.join(h['name'] for h in d.headers)})" for d in datasets.values())
    where = f" The datasets it names have these columns: {columns}." if columns else ""
    return InvalidArguments(f"SQLite rejected the query: {message}.{where} Fix the query (SQLite SQL) and call again.")


def _sqlite_names(sql: str, datasets: Mapping[str, Dataset], ctes: Iterable[str]) -> list[str]:
    """The result column names as SQLite gives them, from the query over empty tables (SQLite's
    own errors — no such column, misuse of an aggregate… — are the reference's, and are raised)."""
    conn = _sqlite_connection(datasets)
    try:
        conn.set_authorizer(_authorizer([*(d.id for d in datasets.values()), *ctes]))
        try:
            with _step_budget(conn, _DRY_RUN_STEPS):
                cursor = conn.execute(sql)
        except _OutOfSteps:
            # Work that needs no data (a recursive CTE): the names of a LIMIT 0 wrapper, which runs none
            # (it names duplicate columns x, x:1 where the query names them x, x).
            try:
                with _step_budget(conn, _DRY_RUN_STEPS):
                    cursor = conn.execute(f"SELECT * FROM ({sql}) LIMIT 0")
            except _OutOfSteps:
                raise InvalidArguments(
                    "SQLite could not even prepare this query in reasonable time (a recursive CTE without an end?). "
                    "Simplify it and call again."
                ) from None
        return [str(column[0]) for column in cursor.description or ()]
    except sqlite3.Error as exc:
        raise _sqlite_error(exc, datasets) from None
    finally:
        conn.close()


class _OutOfSteps(Exception):
    """The dry run went past its budget of SQLite steps."""


@contextmanager
def _step_budget(conn: sqlite3.Connection, steps: int) -> Iterator[None]:
    calls = [0]

    def progress() -> int:
        calls[0] += 1
        return int(calls[0] * 1000 > steps)

    conn.set_progress_handler(progress, 1000)
    try:
        yield
    except sqlite3.OperationalError as exc:
        if "interrupted" in str(exc) and calls[0] * 1000 > steps:
            raise _OutOfSteps from None
        raise
    finally:
        conn.set_progress_handler(None, 0)


def _run_sqlite(plan: _Plan, reason: str, stack: contextlib.ExitStack) -> QueryResult:
    conn = _sqlite_connection(plan.datasets)
    stack.callback(conn.close)
    for dataset in plan.datasets.values():
        load_sqlite(conn, dataset)
    conn.set_authorizer(_authorizer([*(d.id for d in plan.datasets.values()), *plan.ctes]))
    try:
        cursor = conn.execute(plan.sql)
        first = cursor.fetchmany(_FIRST_BATCH)
    except sqlite3.Error as exc:
        raise _sqlite_error(exc, plan.datasets) from None
    headers = _sqlite_headers(plan.names, plan.translation.kinds, first)
    note = f"This query ran on SQLite (correct, but slower on large datasets) because {reason}."
    return QueryResult(
        headers=headers,
        engine="sqlite",
        notes=[note],
        sql_run=plan.sql,
        _fetch=_fetcher(cursor, sqlite3.Error),
        _pending=list(first),
        _convert=_converter(headers, ["" for _ in headers]),
        _done=len(first) < _FIRST_BATCH,
    )


def _sqlite_headers(names: list[str], kinds: Sequence[Kind | None], rows: Sequence[tuple[Any, ...]]) -> list[Header]:
    """SQLite declares no result types: the translation's kinds say which columns hold dates,
    booleans or JSON, and the first rows' values say the rest."""
    headers: list[Header] = []
    for index, name in enumerate(names):
        kind = kinds[index] if index < len(kinds) else None
        column_type = _SEMANTIC_TYPES.get(kind or "")
        if column_type is None:
            values = [row[index] for row in rows if row[index] is not None]
            if values and all(isinstance(v, int) for v in values) and kind != "real":
                column_type = "integer"
            elif values and all(isinstance(v, (int, float)) for v in values):
                column_type = "number"
            elif not values and kind in ("integer", "real"):
                column_type = "integer" if kind == "integer" else "number"
            else:
                column_type = "string"
        headers.append({"name": name, "type": column_type})
    return headers


_SEMANTIC_TYPES: dict[str, ColumnType] = {
    "date": "date",
    "datetime": "datetime",
    "json": "json",
    "flag": "boolean",
    "bool": "boolean",
}


# -- DuckDB -------------------------------------------------------------------------------------------
class _DuckdbRefused(Exception):
    """DuckDB could not run the translated query: it runs on SQLite instead."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# Set when the connection opens, before any SQL (extensions are never loaded or installed, Python
# objects are never scanned as tables, no secrets persist).
_DUCKDB_CONFIG: dict[str, Any] = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "allow_persistent_secrets": False,
    "python_enable_replacements": False,
}
# SQLite's behaviour where DuckDB's default differs: a scalar subquery of several rows gives its
# first, times are UTC ('now', offsets). (Where NULLs sort, sqlglot writes out: NULLS FIRST.)
_DUCKDB_SQLITE_SETTINGS = (
    "SET scalar_subquery_error_on_multiple_rows = false",
    "SET TimeZone = 'UTC'",
)
_INTEGER_TYPES = frozenset(
    {"tinyint", "smallint", "integer", "bigint", "hugeint", "utinyint", "usmallint", "uinteger", "ubigint", "uhugeint"}
)


def _duckdb_type(kind: Any) -> ColumnType:
    type_id = str(getattr(kind, "id", kind)).lower()
    if type_id in _INTEGER_TYPES:
        return "integer"
    if type_id in ("double", "float", "decimal"):
        return "number"
    if type_id == "boolean":
        return "boolean"
    if type_id == "date":
        return "date"
    if type_id.startswith("timestamp"):
        return "datetime"
    if type_id in ("list", "struct", "map", "array") or str(kind) == "JSON":
        return "json"
    return "string"


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _read_csv(dataset: Dataset) -> str:
    columns = ", ".join(f"{_literal(h['name'])}: {_literal(DUCKDB_TYPES[h['type']])}" for h in dataset.headers)
    # The store's files: RFC 4180, a header row, empty cells NULL. No type is sniffed.
    return (
        f"read_csv({_literal(str(dataset.csv_path))}, header = true, auto_detect = false, delim = ',', quote = '\"', "
        f"escape = '\"', nullstr = '', columns = {{{columns}}}, max_line_size = 67108864)"
    )


def _flag_column(name: str) -> str:
    # SQLite's booleans are 0 and 1. A CASE rather than a CAST: DuckDB pushes a CAST down into the
    # CSV reader, which then parses "true" as an INTEGER and fails.
    column = _quote(name)
    return f"CASE WHEN {column} THEN 1 WHEN NOT {column} THEN 0 END AS {column}"


def _dataset_view(dataset: Dataset) -> str:
    columns = ", ".join(
        _flag_column(h["name"]) if h["type"] == "boolean" else _quote(h["name"]) for h in dataset.headers
    )
    return f"SELECT {columns} FROM {_read_csv(dataset)}"


@functools.cache
def _spill_directory() -> str:
    """Where DuckDB may spill a large sort or join: a private folder of this process. (An in-memory
    DuckDB spills to ``.tmp`` in the working directory by default: the user's project.)"""
    folder = tempfile.mkdtemp(prefix="acp-bridge-duckdb-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def _open_duckdb(datasets: Mapping[str, Dataset]) -> Any:
    """A fresh in-memory DuckDB with the datasets as views, the macros of the translation, and then
    locked down: external access off (but for the datasets' CSV files) and the configuration locked."""
    import duckdb

    conn = duckdb.connect(":memory:", config={**_DUCKDB_CONFIG, "temp_directory": _spill_directory()})
    try:
        for statement in _DUCKDB_SQLITE_SETTINGS:
            # A DuckDB without the setting (or without ICU for the time zone) fails the queries that
            # need it, and those then run on SQLite.
            with contextlib.suppress(duckdb.Error):
                conn.execute(statement)
        for name, body in DUCKDB_MACROS.items():
            conn.execute(f"CREATE MACRO {name}{body}")
        paths = sorted({str(d.csv_path) for d in datasets.values()})
        try:
            conn.execute(f"SET allowed_paths = [{', '.join(_literal(p) for p in paths)}]")
            lazy = True
        except duckdb.Error:
            lazy = False  # a DuckDB without allowed_paths (before 1.3): the data is read before the lock
        for dataset in datasets.values():
            kind = "VIEW" if lazy else "TABLE"
            conn.execute(f"CREATE {kind} {_quote(dataset.id)} AS {_dataset_view(dataset)}")
        conn.execute("SET enable_external_access = false")
        conn.execute("SET lock_configuration = true")
        settings = dict(
            conn.execute(
                "SELECT name, value FROM duckdb_settings() WHERE name IN "
                "('enable_external_access', 'lock_configuration', 'autoload_known_extensions', "
                "'autoinstall_known_extensions', 'allow_community_extensions')"
            ).fetchall()
        )
        expected = {
            "enable_external_access": "false",
            "lock_configuration": "true",
            "autoload_known_extensions": "false",
            "autoinstall_known_extensions": "false",
            "allow_community_extensions": "false",
        }
        wrong = [name for name, value in expected.items() if str(settings.get(name)).lower() != value]
        if wrong:
            raise UpstreamError(f"DuckDB did not apply {', '.join(wrong)}; the query was not run. Call again.")
    except BaseException:
        conn.close()
        raise
    return conn


def _run_duckdb(plan: _Plan, sql: str, stack: contextlib.ExitStack) -> QueryResult:
    import duckdb

    from shared.sql import FunctionRules, check_query_only, function_allow_list

    rules = FunctionRules(builtin=function_allow_list("duckdb"), extra=frozenset(DUCKDB_MACROS), runner=RUNNER)
    try:
        checked = check_query_only(sql, "duckdb", rules)
    except AcpError as exc:
        raise _DuckdbRefused(f"its DuckDB form did not pass the checks ({exc.message})") from None
    text = checked.sql()
    conn = _open_duckdb(plan.datasets)
    stack.callback(conn.close)
    try:
        statements = conn.extract_statements(text)
        if len(statements) != 1 or statements[0].type.name != "SELECT":
            raise _DuckdbRefused("DuckDB did not read its form as one SELECT")
        cursor = conn.execute(text)
        first = cursor.fetchmany(_FIRST_BATCH)
    except duckdb.PermissionException as exc:
        raise ReadOnlyViolation(f"DuckDB refused to read a file ({exc}). {READ_ONLY_NOTE}") from None
    except (duckdb.InterruptException, duckdb.OutOfMemoryException) as exc:
        raise UpstreamError(f"DuckDB stopped the query: {exc}. Filter or aggregate more, then call again.") from None
    except duckdb.Error as exc:
        raise _DuckdbRefused(f"DuckDB could not run its form ({_first_line(str(exc))})") from None
    description = cursor.description or []
    if len(description) != len(plan.names):
        raise _DuckdbRefused("DuckDB's result has other columns than SQLite's")
    kinds = plan.translation.kinds
    headers: list[Header] = []
    engine_types: list[str] = []
    for index, (name, column) in enumerate(zip(plan.names, description, strict=True)):
        engine_type = _duckdb_type(column[1])
        kind = kinds[index] if index < len(kinds) else None
        semantic = _SEMANTIC_TYPES.get(kind or "")
        headers.append({"name": name, "type": semantic or engine_type})
        engine_types.append(engine_type)
    return QueryResult(
        headers=headers,
        engine="duckdb",
        notes=[],
        sql_run=text,
        _fetch=_fetcher(cursor, duckdb.Error),
        _pending=list(first),
        _convert=_converter(headers, engine_types),
        _done=len(first) < _FIRST_BATCH,
    )


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def _fetcher(cursor: Any, errors: type[Exception]) -> Callable[[int], list[tuple[Any, ...]]]:
    def fetch(size: int) -> list[tuple[Any, ...]]:
        try:
            return list(cursor.fetchmany(size))
        except errors as exc:
            raise UpstreamError(
                f"The query failed while its rows were read ({_first_line(str(exc))}). Fix the query or filter it, "
                "then call again."
            ) from None

    return fetch


def _converter(
    headers: Sequence[Header], engine_types: Sequence[str]
) -> Callable[[tuple[Any, ...]], tuple[Any, ...]] | None:
    """Row conversion where the engine's values differ from the header's type: SQLite's and the
    datasets' 0/1 booleans become ``bool``, integers in a number column become floats."""
    plan: list[Callable[[Any], Any] | None] = []
    for header, engine_type in zip(headers, engine_types, strict=True):
        if header["type"] == "boolean" and engine_type != "boolean":
            plan.append(lambda v: None if v is None else bool(v))
        elif header["type"] == "number" and engine_type != "number":
            plan.append(lambda v: float(v) if isinstance(v, int) and not isinstance(v, bool) else v)
        else:
            plan.append(None)
    if not any(plan):
        return None
    steps = [(index, step) for index, step in enumerate(plan) if step is not None]

    def convert(row: tuple[Any, ...]) -> tuple[Any, ...]:
        values = list(row)
        for index, step in steps:
            values[index] = step(values[index])
        return tuple(values)

    return convert
