"""What every database engine provides, and the registry that picks one by credentials type.

Each engine lives in its own module (``engine_sqlite``, ``engine_duckdb``, ``engine_postgres``,
``engine_mysql``): the only module that imports its driver, translates its errors and knows
its catalog. Everything here is driver-free, so importing the connector stays fast and an
engine whose extra is not installed says what to install only when it is used.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from shared import AcpError, CredentialsInvalid, Header, Principal, TableWriter
from shared.errors import missing_extra, timed_out

if TYPE_CHECKING:
    from shared.sql import CheckedQuery

ENGINE_MODULES = {
    "sqlite": "engine_sqlite",
    "duckdb": "engine_duckdb",
    "postgres": "engine_postgres",
    "postgres_dsn": "engine_postgres",
    "mysql": "engine_mysql",
    "mysql_dsn": "engine_mysql",
}
# Whether an engine has schemas inside a database: it decides what a two-part resource id
# means (database.schema, or database.table), and is needed before any driver is imported.
HAS_SCHEMAS = {
    "sqlite": False,
    "duckdb": True,
    "postgres": True,
    "postgres_dsn": True,
    "mysql": False,
    "mysql_dsn": False,
}
log = logging.getLogger(__name__)

# What every engine answers when a query runs past its statement_timeout_s.
STATEMENT_TIMED_OUT = timed_out("statement_timeout_s")
# Below this much of a catalog read's time budget, counting another table is not even started.
MIN_COUNT_S = 0.01


@dataclass(frozen=True)
class TableInfo:
    name: str
    kind: str  # "table" or "view"
    rows: int | None
    estimated: bool = False
    comment: str | None = None


@dataclass(frozen=True)
class ColumnInfo:
    name: str
    type: str
    nullable: bool
    primary_key: bool = False
    comment: str | None = None


@dataclass(frozen=True)
class ForeignKey:
    columns: tuple[str, ...]
    ref_table: str
    ref_columns: tuple[str, ...]
    ref_schema: str | None = None


@dataclass(frozen=True)
class Relation:
    """A table or view as the catalog names it, with its columns in order: what a name in a query
    resolves to. ``schema`` is the database on MySQL and ``main`` on SQLite."""

    schema: str
    name: str
    kind: str  # "table" or "view"
    columns: tuple[str, ...]
    # "schema.table" of the tables whose rows it holds too (PostgreSQL partitions and inheritance).
    parents: tuple[str, ...] = ()


@dataclass(frozen=True)
class Location:
    """Where a resource points: a database, optionally a schema and a table."""

    database: str
    schema: str | None = None
    table: str | None = None


class TimeBudgetExceeded(Exception):
    """A query ran past its time budget (statement_timeout_s, or a block's budget)."""


@dataclass
class QueryOutcome:
    """What the extraction loop learnt beyond the rows: the engine's warnings."""

    warnings: list[str] = field(default_factory=list)


class Connection(ABC):
    """An open connection, used by one call at a time (the pool guarantees it).

    Reads run in a read-only transaction that is always rolled back; ``cancel`` may be
    called from another thread and stops the running statement at the server.
    """

    database: str

    def __init__(self) -> None:
        self.cancelled = threading.Event()
        self.expired = False  # a deadline fired: what runs on this connection is in doubt
        self._deadline_lock = threading.Lock()
        self._deadline_generation = 0  # the deadline a timer belongs to: a late timer never hits the next one
        self._deadline_armed = False

    def bind(self, cancelled: threading.Event) -> None:
        """Attach the current call's cancel switch (connections outlive calls)."""
        self.cancelled = cancelled

    @abstractmethod
    def interrupt(self) -> None:
        """Stop the running statement at the source (PostgreSQL cancel, MariaDB ``KILL QUERY``, SQLite
        and DuckDB ``interrupt()``). Called from another thread while the statement runs."""

    def cancel(self) -> None:
        """The call was cancelled: stop its statement at the source."""
        self.cancelled.set()
        self.interrupt()

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def alive(self) -> bool: ...

    def reset(self) -> bool:
        """Clear what one call may have left in the session before another call gets the connection
        (the pool asks when it takes the connection back). False: this connection cannot be reset
        and must be closed. An exception means the same."""
        return True

    # -- one wall-clock deadline ------------------------------------------------------------------
    @contextlib.contextmanager
    def deadline(self, seconds: float) -> Iterator[None]:
        """Bound everything inside by one wall-clock deadline, whatever the fetch pattern: past it, a
        timer interrupts the statement at the source and the block raises TimeBudgetExceeded.

        A statement timeout of the engine applies to each statement, and a cursor that fetches in
        batches runs one statement per batch: a 3 s timeout let one query run for 30 s while its rows
        trickled out. This deadline covers the query and every fetch together. A connection whose
        deadline fired is in doubt (an interrupt may still be on its way), so the block raises even
        when the statement finished, and the pool closes the connection.
        """
        with self._deadline_lock:
            self._deadline_generation += 1
            generation = self._deadline_generation
            self._deadline_armed, self.expired = True, False
        timer = threading.Timer(max(seconds, 0.0), self._expire, args=(generation,))
        timer.daemon = True
        timer.start()
        try:
            yield
        except Exception as exc:
            if self.expired and not self.cancelled.is_set():
                raise TimeBudgetExceeded from exc
            raise
        finally:
            # Under the lock: once disarmed, no timer of this deadline can interrupt what runs next.
            with self._deadline_lock:
                self._deadline_armed = False
            timer.cancel()
        self.check_deadline()

    def check_deadline(self) -> None:
        """Between two fetches: an interrupt that reached an idle session (Python held the rows, the
        server had nothing to stop) still ends the query here."""
        if self.expired and not self.cancelled.is_set():
            raise TimeBudgetExceeded

    def _expire(self, generation: int) -> None:
        with self._deadline_lock:
            if not self._deadline_armed or generation != self._deadline_generation:
                return
            self.expired = True
            try:
                self.interrupt()
            except Exception:
                log.warning("interrupting a query at its deadline failed", exc_info=True)

    @abstractmethod
    def stream(self, sql: str, writer: TableWriter, *, schema: str | None, timeout_s: float) -> QueryOutcome:
        """Run one read-only query and stream its rows (with typed headers) into ``writer``, within one
        deadline of ``timeout_s`` (:meth:`deadline`), reading no more than ``writer.fetch_size``
        allows: the writer owns the ``max_rows`` and ``max_result_bytes`` caps and the batch sizes."""

    # -- catalog ------------------------------------------------------------------------------
    @abstractmethod
    def databases(self) -> list[str]: ...

    @abstractmethod
    def schemas(self) -> list[str]: ...

    @abstractmethod
    def tables(self, schema: str | None, budget_s: float, only: str | None = None) -> list[TableInfo]:
        """Tables and views (of every visible schema when ``schema`` is None; just ``only`` when
        given), with row counts or catalog estimates. ``budget_s`` bounds all the counting
        together, so a schema of many slow views still answers in time; 0 skips the counts."""

    @abstractmethod
    def columns(self, schema: str | None, table: str) -> list[ColumnInfo]: ...

    @abstractmethod
    def foreign_keys(self, schema: str | None, table: str) -> list[ForeignKey]: ...

    @abstractmethod
    def min_max(self, schema: str | None, table: str, column: str, budget_s: float) -> tuple[Any, Any] | None: ...

    @abstractmethod
    def first_text(self, schema: str | None, table: str, column: str, budget_s: float) -> str | None:
        """One non-null text value of a column (to tell date-like text apart), or None."""

    @abstractmethod
    def top_values(
        self, schema: str | None, table: str, column: str, sample_rows: int, limit: int, budget_s: float
    ) -> list[tuple[Any, int]]: ...

    # -- what the `hidden` rules must see through -------------------------------------------------
    @abstractmethod
    def find_relations(self, names: Collection[str], schemas: Collection[str]) -> list[Relation]:
        """Every table and view whose name matches one of ``names`` ignoring letter case, with its
        canonical names and columns. ``schemas`` are the schemas a query names (as written) plus
        its search path; an engine may return matches from other schemas too."""

    @abstractmethod
    def search_path(self, schema: str | None) -> list[str]:
        """The schemas, in order, where an unqualified name is looked up by a query that runs with
        ``schema`` as its default (None: the connection's own default)."""

    @abstractmethod
    def view_sql(self, schema: str | None, name: str) -> str | None:
        """The defining query of a view or materialized view; ``""`` when this login may not read
        it, None when ``name`` is not a view."""

    @abstractmethod
    def user_functions(self) -> frozenset[str]:
        """Lower-case names of the functions and macros defined in the database (not built in):
        their bodies may read any table."""

    # -- writes ---------------------------------------------------------------------------------
    @abstractmethod
    def insert(
        self, schema: str | None, table: str, headers: Sequence[Header], rows: Iterable[Sequence[Any]], create: bool
    ) -> tuple[int, bool]:
        """Append rows in one transaction; create the table first when ``create`` and it is missing.

        Returns (rows inserted, table created). Runs on a write-capable connection.
        """


class Engine(ABC):
    """One database engine, chosen by the credentials ``type``."""

    name: ClassVar[str]
    title: ClassVar[str]
    dialect: ClassVar[str]  # sqlglot's name for the SQL dialect
    has_schemas: ClassVar[bool]
    text_types: ClassVar[tuple[str, ...]] = ("char", "text", "clob", "string")
    # The parser layer (shared.sql): the functions a query may call are the allow-list
    # shared/sql_functions/<function_list>.txt, also when qualified by one of function_schemas;
    # quoted_function_names_exact where a quoted name is case-sensitive. Relations that read
    # server files are refused by name (a name ending in "*" is a family).
    function_list: ClassVar[str]
    function_schemas: ClassVar[frozenset[str]] = frozenset()
    quoted_function_names_exact: ClassVar[bool] = False
    # Whether an unaliased result column is named after its text as written (SQLite, MariaDB).
    columns_named_by_text: ClassVar[bool] = False
    forbidden_relations: ClassVar[frozenset[str]] = frozenset()
    # The system catalog: schemas, and prefixes of unqualified names that resolve into it. A
    # source with `hidden` data refuses queries on it: statistics views hold column values.
    catalog_schemas: ClassVar[frozenset[str]] = frozenset()
    catalog_prefixes: ClassVar[tuple[str, ...]] = ()
    # Functions that read the catalog (names, comments, definitions), refused with `hidden` data like
    # every function whose name starts with one of the catalog prefixes (pg_get_viewdef).
    catalog_functions: ClassVar[frozenset[str]] = frozenset()

    @abstractmethod
    def identify(self, credentials: dict[str, Any]) -> Principal:
        """The stable principal (``user@host:port/db``, a file's real path), never the secret."""

    @abstractmethod
    def connect(self, credentials: dict[str, Any], database: str | None, write: bool = False) -> Connection:
        """Open a connection; ``database`` overrides the credentials' default database."""

    @abstractmethod
    def default_database(self, credentials: dict[str, Any]) -> str: ...

    @abstractmethod
    def translate(self, exc: BaseException) -> AcpError | None: ...

    def check_sql(self, sql: str, allowed_functions: Iterable[str] = ()) -> CheckedQuery:
        """The parser layer of read-only in depth: the query as it was checked, which is what runs.

        ``allowed_functions`` (the source configuration's) extends the engine's allow-list."""
        from shared.sql import FunctionRules, check_query_only, function_allow_list

        functions = FunctionRules(
            builtin=function_allow_list(self.function_list),
            extra=frozenset(allowed_functions),
            builtin_schemas=self.function_schemas,
            quoted_names_exact=self.quoted_function_names_exact,
        )
        return check_query_only(
            sql, self.dialect, functions, self.forbidden_relations, columns_named_by_text=self.columns_named_by_text
        )

    def locate(self, parts: Sequence[str]) -> Location:
        """Resource parts as (database, schema, table) for this engine's id shape."""
        if self.has_schemas:
            return Location(*parts) if len(parts) <= 3 else Location(parts[0], parts[1], ".".join(parts[2:]))
        if len(parts) == 3:
            return Location(parts[0], None, parts[2])  # database.<schema>.table: the schema is the database
        return Location(parts[0], None, parts[1] if len(parts) > 1 else None)


def database_name(path: str) -> str:
    """The resource name of a database file: its stem (``shop.sqlite`` → ``shop``)."""
    return os.path.splitext(os.path.basename(path))[0]


def validate_path(path: str) -> None:
    """The credentials of a file database name an existing file by its absolute path.

    Checked when the principal is derived, before the resource is resolved: a missing file
    would otherwise read as an unknown resource and send the model after the wrong fix.
    """
    if not os.path.isabs(path):
        raise CredentialsInvalid(
            "The database credentials need an absolute file path. Ask the user to fix the source credentials."
        )
    if not os.path.isfile(path):
        raise CredentialsInvalid(
            "The database file in the credentials does not exist or is not a file. "
            "Ask the user to fix the path in the source credentials."
        )


class FileEngine(Engine):
    """An engine whose credentials name a database file (SQLite, DuckDB): the file is the principal."""

    def identify(self, credentials: dict[str, Any]) -> Principal:
        path = str(credentials["path"])
        validate_path(path)
        return Principal(identity=f"{self.name}:{os.path.realpath(path)}")

    def default_database(self, credentials: dict[str, Any]) -> str:
        return database_name(str(credentials["path"]))


_ENGINES: dict[str, Engine] = {}
_LOCK = threading.Lock()


def engine_for(credentials: dict[str, Any]) -> Engine:
    """The engine of these credentials, imported on first use."""
    kind = str(credentials.get("type", ""))
    module_name = ENGINE_MODULES.get(kind)
    if module_name is None:
        raise CredentialsInvalid(
            f"Unknown database type. Expected one of: {', '.join(ENGINE_MODULES)}. Ask the user to fix the credentials."
        )
    with _LOCK:
        if module_name not in _ENGINES:
            try:
                module = importlib.import_module(f"{__package__}.{module_name}")
            except ImportError as missing:
                raise missing_extra(missing, "databases") from None
            _ENGINES[module_name] = module.ENGINE
        return _ENGINES[module_name]


def translate_any(exc: BaseException) -> AcpError | None:
    """The connector's one translation point: each loaded engine recognises its driver's errors."""
    if isinstance(exc, TimeBudgetExceeded):
        return STATEMENT_TIMED_OUT
    for engine in list(_ENGINES.values()):
        translated = engine.translate(exc)
        if translated is not None:
            return translated
    return None
