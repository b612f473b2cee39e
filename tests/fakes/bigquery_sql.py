"""BigQuery Standard SQL executed on DuckDB: the SQL layer of ``FakeBigQuery``.

How a query runs (see /work/shared/notes/bigquery-fake.md for the probe behind each step):

1. ``classify`` parses the text with sqlglot's BigQuery dialect and names its ``statementType``. It fails
   closed: only exactly one Select/Union with no DML/DDL node anywhere inside counts as ``SELECT``.
2. Table names are resolved: an unqualified name takes the job's ``defaultDataset``, a 2-part name the
   job's project. Views are inlined as subqueries; missing datasets and tables raise ``NotFound``.
   A dataset-qualified call (``ds.f(x)``, ``p.ds.f(x)``) must name a function added with
   ``add_function`` (run as a DuckDB macro); the plan lists it as a referenced routine.
3. Dry-run bytes: ``qualify`` + ``traverse_scope`` attribute every column to its source table, and the
   bytes of the referenced top-level columns are summed with BigQuery's logical sizes (INT64 8, BOOL 1,
   NUMERIC 16, STRING 2 + UTF-8 bytes, STRUCT/ARRAY the sum of their parts, NULL 0), computed by DuckDB.
4. Rewrites that make DuckDB answer what BigQuery would:
   R1 a wildcard table ``p.d.events_*`` becomes ``(SELECT *, '<sfx>' AS _TABLE_SUFFIX FROM shard …
      UNION ALL BY NAME …)`` over the matching shards, pruned by the ``_TABLE_SUFFIX`` conjuncts of the
      WHERE clause (the same pruning that dry-run bytes use); ``SELECT *`` leaves the pseudo-column out;
   R2 ``DATE_ADD``/``DATE_SUB`` are cast back to DATE (DuckDB's DATE ± INTERVAL is a TIMESTAMP);
   R3 ``ARRAY_AGG(x ORDER BY y LIMIT n)`` becomes ``LIST_SLICE(ARRAY_AGG(x ORDER BY y), 1, n)``;
   R4 an un-aliased ``UNNEST(arr)`` in FROM becomes ``(SELECT UNNEST(arr, max_depth := 2))`` so that
      struct fields are columns, as BigQuery exposes them;
   and ``APPROX_COUNT_DISTINCT`` → ``COUNT(DISTINCT)`` (deterministic answers), float literals are
   FLOAT64 (DuckDB reads ``1.5`` as DECIMAL), NUMERIC is DECIMAL(38, 9), ``TIMESTAMP_MICROS`` and
   ``PARSE_TIMESTAMP`` return TIMESTAMP (not DuckDB's naive TIMESTAMP), and unnamed result columns are
   named ``f0_``, ``f1_``… as BigQuery names them.
5. The result schema comes from binding the DuckDB query without running it (dry runs use that too).
   A real run stores the result in a DuckDB table; pages are encoded to BigQuery's row JSON by DuckDB
   itself (``{"f":[{"v":"…"}]}``), so paging a million rows costs no Python work per cell.

One DuckDB database holds everything: one attached in-memory catalog per BigQuery project, one schema
per dataset. DuckDB is not thread-safe per connection and the HTTP server is, so every DuckDB call
holds one lock. External file access is disabled except for one private staging directory (bulk loads
go through JSON files there), so SQL sent to the fake cannot read the host's files.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime as dt
import decimal
import itertools
import logging
import math
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import orjson
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

# --------------------------------------------------------------------------------------------- errors


class BigQuerySqlError(Exception):
    """An error BigQuery would report for a query: ``reason`` and HTTP status as BigQuery sends them."""

    reason = "invalidQuery"
    http_status = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.location: str | None = None  # where the failing query would have run, once known


class InvalidQuery(BigQuerySqlError):
    reason = "invalidQuery"
    http_status = 400


class NotFound(BigQuerySqlError):
    reason = "notFound"
    http_status = 404


class AccessDenied(BigQuerySqlError):
    reason = "accessDenied"
    http_status = 403


class InvalidData(BigQuerySqlError):
    """Rows that do not fit a table's schema (a load job's ``invalid``)."""

    reason = "invalid"
    http_status = 400


# ---------------------------------------------------------------------------------------- references


@dataclass(frozen=True, order=True)
class TableRef:
    project: str
    dataset: str
    table: str

    def __str__(self) -> str:
        return f"{self.project}.{self.dataset}.{self.table}"

    @property
    def legacy_id(self) -> str:
        """``project:dataset.table``, the form BigQuery uses in ``id`` fields and error messages."""
        return f"{self.project}:{self.dataset}.{self.table}"

    def to_api(self) -> dict[str, str]:
        return {"projectId": self.project, "datasetId": self.dataset, "tableId": self.table}

    @classmethod
    def parse(cls, text: str) -> TableRef:
        parts = text.replace(":", ".").split(".")
        if len(parts) != 3 or not all(parts):
            raise ValueError(f"expected 'project.dataset.table', got {text!r}")
        return cls(*parts)


@dataclass(frozen=True, order=True)
class RoutineRef:
    project: str
    dataset: str
    routine: str

    def __str__(self) -> str:
        return f"{self.project}.{self.dataset}.{self.routine}"

    def to_api(self) -> dict[str, str]:
        return {"projectId": self.project, "datasetId": self.dataset, "routineId": self.routine}


# --------------------------------------------------------------------------------------------- types

# Legacy names are what the REST API returns in schemas; the aliases are what people also write.
_TYPE_ALIASES = {
    "INT64": "INTEGER",
    "INT": "INTEGER",
    "SMALLINT": "INTEGER",
    "BIGINT": "INTEGER",
    "FLOAT64": "FLOAT",
    "BOOL": "BOOLEAN",
    "STRUCT": "RECORD",
    "DECIMAL": "NUMERIC",
    "BIGDECIMAL": "BIGNUMERIC",
}
_DUCKDB_TYPE_FOR_BQ = {
    "INTEGER": "BIGINT",
    "FLOAT": "DOUBLE",
    "NUMERIC": "DECIMAL(38, 9)",
    "BIGNUMERIC": "DECIMAL(38, 9)",  # DuckDB's widest decimal; BIGNUMERIC's 76 digits do not fit
    "BOOLEAN": "BOOLEAN",
    "STRING": "VARCHAR",
    "BYTES": "BLOB",
    "DATE": "DATE",
    "DATETIME": "TIMESTAMP",
    "TIMESTAMP": "TIMESTAMPTZ",
    "TIME": "TIME",
    "JSON": "VARCHAR",
    "GEOGRAPHY": "VARCHAR",
    "INTERVAL": "INTERVAL",
}
_SQLGLOT_TYPE_FOR_BQ = {
    "INTEGER": "INT64",
    "FLOAT": "FLOAT64",
    "BOOLEAN": "BOOL",
    "NUMERIC": "NUMERIC",
    "BIGNUMERIC": "BIGNUMERIC",
    "STRING": "STRING",
    "BYTES": "BYTES",
    "DATE": "DATE",
    "DATETIME": "DATETIME",
    "TIMESTAMP": "TIMESTAMP",
    "TIME": "TIME",
    "JSON": "JSON",
    "GEOGRAPHY": "GEOGRAPHY",
    "INTERVAL": "INTERVAL",
}
# BigQuery's logical sizes for billing, per non-null value.
_FIXED_LOGICAL_BYTES = {
    "INTEGER": 8,
    "FLOAT": 8,
    "DATE": 8,
    "DATETIME": 8,
    "TIMESTAMP": 8,
    "TIME": 8,
    "BOOLEAN": 1,
    "NUMERIC": 16,
    "BIGNUMERIC": 32,
    "INTERVAL": 16,
}
_VARIABLE_LOGICAL_TYPES = {"STRING", "BYTES", "JSON", "GEOGRAPHY"}  # 2 + bytes
_MODES = {"NULLABLE", "REQUIRED", "REPEATED"}

ACCURACIES = ("PRECISE", "LOWER_BOUND", "UPPER_BOUND", "UNKNOWN")

_DUCKDB_INTEGER_IDS = {
    "tinyint",
    "smallint",
    "integer",
    "bigint",
    "hugeint",
    "utinyint",
    "usmallint",
    "uinteger",
    "ubigint",
    "uhugeint",
}
_DUCKDB_NAIVE_TIMESTAMP_IDS = {"timestamp", "timestamp_s", "timestamp_ms", "timestamp_ns"}


def normalize_schema(fields: Sequence[Mapping[str, Any]], *, _path: str = "") -> list[dict[str, Any]]:
    """REST schema fields with canonical (legacy) type names and explicit modes; validated."""
    normalized: list[dict[str, Any]] = []
    seen: set[str] = set()
    for raw in fields:
        name = raw.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"invalid field name {name!r} in schema {_path or '(top level)'}")
        if name.lower() in seen:
            raise ValueError(f"duplicate field name {name!r} in schema {_path or '(top level)'}")
        seen.add(name.lower())
        type_name = str(raw.get("type", "")).upper()
        type_name = _TYPE_ALIASES.get(type_name, type_name)
        mode = str(raw.get("mode") or "NULLABLE").upper()
        if mode not in _MODES:
            raise ValueError(f"invalid mode {mode!r} for field {_path}{name}")
        field_out: dict[str, Any] = {"name": name, "type": type_name, "mode": mode}
        if raw.get("description") is not None:
            field_out["description"] = raw["description"]
        if type_name == "RECORD":
            if not raw.get("fields"):
                raise ValueError(f"RECORD field {_path}{name} needs 'fields'")
            field_out["fields"] = normalize_schema(raw["fields"], _path=f"{_path}{name}.")
        elif type_name not in _DUCKDB_TYPE_FOR_BQ:
            raise ValueError(f"unsupported type {raw.get('type')!r} for field {_path}{name}")
        elif type_name == "BYTES" and _path:
            # Bulk loads decode base64 only for top-level columns (see DuckDBWarehouse._load).
            raise ValueError(f"nested BYTES field {_path}{name} is not supported by the fake")
        normalized.append(field_out)
    return normalized


def quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _duckdb_type(field_spec: Mapping[str, Any]) -> str:
    if field_spec["type"] == "RECORD":
        inner = ", ".join(f"{quote_identifier(f['name'])} {_duckdb_type(f)}" for f in field_spec["fields"])
        base = f"STRUCT({inner})"
    else:
        base = _DUCKDB_TYPE_FOR_BQ[field_spec["type"]]
    return base + "[]" if field_spec["mode"] == "REPEATED" else base


def _json_read_type(field_spec: Mapping[str, Any]) -> str:
    """The type ``read_json`` parses a column as: BYTES arrive base64-encoded, so as text."""
    if field_spec["type"] == "BYTES":
        return "VARCHAR[]" if field_spec["mode"] == "REPEATED" else "VARCHAR"
    return _duckdb_type(field_spec)


def _sqlglot_type(field_spec: Mapping[str, Any]) -> str:
    if field_spec["type"] == "RECORD":
        inner = ", ".join(f"`{f['name']}` {_sqlglot_type(f)}" for f in field_spec["fields"])
        base = f"STRUCT<{inner}>"
    else:
        base = _SQLGLOT_TYPE_FOR_BQ[field_spec["type"]]
    return f"ARRAY<{base}>" if field_spec["mode"] == "REPEATED" else base


def _logical_size_sql(expr: str, field_spec: Mapping[str, Any], depth: int = 0) -> str:
    """DuckDB SQL for the logical bytes of one value of ``field_spec`` (0 for NULL)."""
    if field_spec["mode"] == "REPEATED":
        var = f"__e{depth}"
        element = _logical_size_sql(var, {**field_spec, "mode": "NULLABLE"}, depth + 1)
        return f"coalesce(list_sum(list_transform({expr}, LAMBDA {var} : {element})), 0)"
    type_name = field_spec["type"]
    if type_name == "RECORD":
        parts = [
            _logical_size_sql(f"struct_extract({expr}, {_sql_string(sub['name'])})", sub, depth)
            for sub in field_spec["fields"]
        ]
        return "(" + " + ".join(parts) + ")"
    if type_name in _VARIABLE_LOGICAL_TYPES:
        length = f"octet_length({expr})" if type_name == "BYTES" else f"strlen({expr})"
        return f"coalesce(2 + {length}, 0)"
    return f"(CASE WHEN {expr} IS NULL THEN 0 ELSE {_FIXED_LOGICAL_BYTES[type_name]} END)"


def bq_field_from_duckdb(name: str, dtype: duckdb.DuckDBPyType) -> dict[str, Any]:
    """A BigQuery REST schema field for a DuckDB result column."""
    type_id = dtype.id
    if type_id in ("list", "array"):
        element = bq_field_from_duckdb(name, dtype.children[0][1])
        # BigQuery has no ARRAY<ARRAY<…>>; a nested list is reported (and encoded) as one level.
        element["mode"] = "REPEATED"
        return element
    if type_id == "struct":
        sub_fields = [bq_field_from_duckdb(sub_name, sub_type) for sub_name, sub_type in dtype.children]
        return {"name": name, "type": "RECORD", "mode": "NULLABLE", "fields": sub_fields}
    return {"name": name, "type": _bq_scalar_type(dtype), "mode": "NULLABLE"}


def _bq_scalar_type(dtype: duckdb.DuckDBPyType) -> str:
    type_id = dtype.id
    if type_id in _DUCKDB_INTEGER_IDS or type_id == "null":  # BigQuery types a bare NULL as INT64
        return "INTEGER"
    if type_id in ("double", "float"):
        return "FLOAT"
    if type_id == "decimal":
        precision, scale = (value for _, value in dtype.children)
        return "NUMERIC" if scale <= 9 and precision - scale <= 29 else "BIGNUMERIC"
    if type_id == "boolean":
        return "BOOLEAN"
    if type_id == "date":
        return "DATE"
    if type_id == "timestamp with time zone":
        return "TIMESTAMP"
    if type_id in _DUCKDB_NAIVE_TIMESTAMP_IDS:
        return "DATETIME"
    if type_id in ("time", "time with time zone"):
        return "TIME"
    if type_id == "blob":
        return "BYTES"
    if type_id == "interval":
        return "INTERVAL"
    return "STRING"  # VARCHAR, UUID, ENUM, MAP, JSON…: encoded as their text


def _cell_sql(expr: str, dtype: duckdb.DuckDBPyType, int64_timestamps: bool, depth: int = 0) -> str:
    """DuckDB SQL producing the wire JSON of one cell: ``{"v": …}`` with every scalar a string."""
    null_cell = "'{\"v\":null}'"
    type_id = dtype.id
    if type_id in ("list", "array"):
        var = f"__c{depth}"
        element = _cell_sql(var, dtype.children[0][1], int64_timestamps, depth + 1)
        items = f"coalesce(array_to_string(list_transform({expr}, LAMBDA {var} : {element}), ','), '')"
        # BigQuery sends an empty array for a NULL array.
        return f"('{{\"v\":[' || {items} || ']}}')"
    if type_id == "struct":
        parts = " || ',' || ".join(
            _cell_sql(f"struct_extract({expr}, {_sql_string(sub_name)})", sub_type, int64_timestamps, depth)
            for sub_name, sub_type in dtype.children
        )
        return f"(CASE WHEN {expr} IS NULL THEN {null_cell} ELSE '{{\"v\":{{\"f\":[' || {parts} || ']}}}}' END)"
    if type_id == "null":
        return null_cell
    if type_id == "varchar":
        return f"coalesce('{{\"v\":' || to_json({expr}) || '}}', {null_cell})"
    if type_id == "boolean":
        text = f"(CASE WHEN {expr} THEN 'true' WHEN NOT {expr} THEN 'false' END)"  # NULL stays NULL
    elif type_id == "timestamp with time zone":
        micros = f"CAST(epoch_us({expr}) AS VARCHAR)"
        text = micros if int64_timestamps else f"CAST(epoch_us({expr}) / 1000000 AS VARCHAR)"
    elif type_id in _DUCKDB_NAIVE_TIMESTAMP_IDS:
        text = f"strftime(CAST({expr} AS TIMESTAMP), '%Y-%m-%dT%H:%M:%S.%f')"
    elif type_id == "blob":
        text = f"to_base64({expr})"
    elif type_id in ("time", "time with time zone"):
        # The client accepts HH:MM:SS or HH:MM:SS.ffffff (six digits), not DuckDB's "01:02:03.45".
        text = f"strftime(DATE '1970-01-01' + CAST({expr} AS TIME), '%H:%M:%S.%f')"
    elif type_id in _DUCKDB_INTEGER_IDS or type_id in ("double", "float", "decimal", "date"):
        text = f"CAST({expr} AS VARCHAR)"
    else:
        # Text of any other type may need JSON escaping.
        return f"coalesce('{{\"v\":' || to_json(CAST({expr} AS VARCHAR)) || '}}', {null_cell})"
    return f"coalesce('{{\"v\":\"' || {text} || '\"}}', {null_cell})"


def _row_sql(columns: Sequence[tuple[str, duckdb.DuckDBPyType]], int64_timestamps: bool) -> str:
    cells = " || ',' || ".join(_cell_sql(quote_identifier(name), dtype, int64_timestamps) for name, dtype in columns)
    return f"'{{\"f\":[' || {cells} || ']}}'"


# ------------------------------------------------------------------------------------ classification

SELECT = "SELECT"
SCRIPT = "SCRIPT"
PARSE_ERROR = "PARSE_ERROR"

# Nodes that make a statement more than a read, wherever they appear inside it.
_WRITE_NODE_TYPES: tuple[type[exp.Expression], ...] = (
    exp.Insert,
    exp.Update,
    exp.Delete,
    exp.Merge,
    exp.Create,
    exp.Drop,
    exp.Alter,
    exp.Command,
    exp.Export,
    exp.Grant,
    exp.Revoke,
    exp.TruncateTable,
    exp.LoadData,
    exp.Transaction,
    exp.Commit,
    exp.Rollback,
    exp.Set,
    exp.Declare,
)
_SCRIPT_COMMANDS = {
    "BEGIN",
    "IF",
    "EXECUTE",
    "DECLARE",
    "LOOP",
    "WHILE",
    "REPEAT",
    "FOR",
    "RAISE",
    "RETURN",
    "BREAK",
    "CONTINUE",
    "LEAVE",
    "ITERATE",
    "CASE",
    "END",
    "EXCEPTION",
}

_sqlglot_logger = logging.getLogger("sqlglot")


def _parse_statements(sql: str) -> list[exp.Expression]:
    """sqlglot's statements of ``sql`` (BigQuery dialect); raises SqlglotError on a syntax error."""
    # sqlglot logs "unsupported syntax" when it falls back to exp.Command (BEGIN, IF, CALL…); the
    # classification below handles that fallback, so the warning is noise.
    previous = _sqlglot_logger.level
    _sqlglot_logger.setLevel(logging.ERROR)
    try:
        return [statement for statement in sqlglot.parse(sql, read="bigquery") if statement is not None]
    finally:
        _sqlglot_logger.setLevel(previous)


def _statement_type(statement: exp.Expression) -> str:
    while isinstance(statement, exp.Subquery) and isinstance(statement.this, exp.Query):
        statement = statement.this
    if isinstance(statement, exp.Query):
        inner_write = next(iter(statement.find_all(*_WRITE_NODE_TYPES)), None)
        return SELECT if inner_write is None else _statement_type(inner_write)
    if isinstance(statement, exp.Insert):
        return "INSERT"
    if isinstance(statement, exp.Update):
        return "UPDATE"
    if isinstance(statement, exp.Delete):
        return "DELETE"
    if isinstance(statement, exp.Merge):
        return "MERGE"
    if isinstance(statement, exp.Create):
        kind = str(statement.args.get("kind") or "").upper()
        materialized = any(isinstance(p, exp.MaterializedProperty) for p in statement.find_all(exp.Property))
        if kind == "TABLE":
            return "CREATE_TABLE_AS_SELECT" if statement.expression is not None else "CREATE_TABLE"
        if kind == "VIEW":
            return "CREATE_MATERIALIZED_VIEW" if materialized else "CREATE_VIEW"
        return f"CREATE_{kind or 'UNKNOWN'}"
    if isinstance(statement, exp.Drop):
        kind = str(statement.args.get("kind") or "").upper()
        if kind == "VIEW" and statement.args.get("materialized"):
            return "DROP_MATERIALIZED_VIEW"
        return f"DROP_{kind or 'UNKNOWN'}"
    if isinstance(statement, exp.TruncateTable):
        return "TRUNCATE_TABLE"
    if isinstance(statement, exp.Alter):
        kind = str(statement.args.get("kind") or "TABLE").upper()
        return f"ALTER_{kind}"
    if isinstance(statement, exp.Export):
        return "EXPORT_DATA"
    if isinstance(statement, exp.Grant):
        return "GRANT"
    if isinstance(statement, exp.Revoke):
        return "REVOKE"
    if isinstance(statement, exp.LoadData):
        return "LOAD_DATA"
    if isinstance(statement, exp.Transaction):
        return "BEGIN_TRANSACTION"
    if isinstance(statement, exp.Commit):
        return "COMMIT_TRANSACTION"
    if isinstance(statement, exp.Rollback):
        return "ROLLBACK_TRANSACTION"
    if isinstance(statement, exp.Command):
        command = str(statement.this).upper()
        if command == "CALL":
            return "CALL"
        return SCRIPT if command in _SCRIPT_COMMANDS else command.replace(" ", "_")
    # DECLARE, SET, and anything sqlglot parses as something else: not a read, so fail closed.
    return SCRIPT


def classify(sql: str) -> str:
    """BigQuery's ``statementType`` for ``sql``; ``SELECT`` only for one read-only query.

    Several statements (even ``SELECT 1; SELECT 2``), scripting (DECLARE, SET, BEGIN…END, IF,
    EXECUTE IMMEDIATE) and temporary functions are ``SCRIPT``; a syntax error is ``PARSE_ERROR``.
    """
    stripped = re.sub(r"(--|#)[^\n]*|/\*.*?\*/", " ", sql, flags=re.DOTALL).strip()
    if re.match(r"ASSERT\b", stripped, flags=re.IGNORECASE):
        return "ASSERT"  # sqlglot parses ASSERT's condition as a bare expression
    try:
        statements = _parse_statements(sql)
    except SqlglotError:
        return PARSE_ERROR
    if not statements:
        return PARSE_ERROR
    if len(statements) > 1:
        return SCRIPT
    return _statement_type(statements[0])


# ------------------------------------------------------------------------------------------ catalog


@dataclass
class DatasetInfo:
    project: str
    dataset: str
    location: str
    description: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    created_ms: int = 0
    modified_ms: int = 0


@dataclass
class TableInfo:
    ref: TableRef
    schema: list[dict[str, Any]]
    kind: str = "TABLE"
    view_query: str | None = None
    description: str | None = None
    partitioning: dict[str, Any] | None = None
    clustering: list[str] | None = None
    accuracy: str = "PRECISE"
    bytes_scale: float = 1.0
    labels: dict[str, str] = field(default_factory=dict)
    created_ms: int = 0
    modified_ms: int = 0
    version: int = 0  # bumped on every write: invalidates cached sizes and encoders

    @property
    def has_storage(self) -> bool:
        return self.kind != "VIEW"

    @property
    def duckdb_name(self) -> str:
        return ".".join(quote_identifier(part) for part in (self.ref.project, self.ref.dataset, self.ref.table))


@dataclass(frozen=True)
class QueryPlan:
    """What BigQuery knows about a query before running it (everything a dry run reports)."""

    sql: str
    statement_type: str
    referenced_tables: tuple[TableRef, ...]  # sorted; wildcard tables as their matched shards
    referenced_routines: tuple[RoutineRef, ...]  # sorted; the persistent functions the query calls
    total_bytes_processed: int
    accuracy: str
    schema: list[dict[str, Any]] | None  # the result schema of a SELECT
    duckdb_sql: str | None  # None unless the statement is a SELECT
    location: str | None


@dataclass
class QueryResult:
    """A query's result, stored in DuckDB until the fake forgets it."""

    relation: str
    schema: list[dict[str, Any]]
    total_rows: int
    columns: list[tuple[str, duckdb.DuckDBPyType]]
    _row_sql: dict[bool, str] = field(default_factory=dict)


_RESERVED_CATALOGS = {"memory", "system", "temp", "main"}
_WILDCARD_PLACEHOLDER = "__fake_wildcard_{}"
_MAX_VIEW_DEPTH = 16
PAGE_BYTE_BUDGET = 10 * 1024 * 1024  # BigQuery caps one page of rows at about 10 MB of JSON


def _now_ms() -> int:
    return int(time.time() * 1000)


class DuckDBWarehouse:
    """BigQuery projects, datasets and tables stored in one DuckDB database, and queries over them."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._staging_dir = tempfile.mkdtemp(prefix="fake-bigquery-")
        self._con = duckdb.connect(":memory:")
        self._con.execute("SET TimeZone = 'UTC'")
        self._con.execute(f"SET allowed_directories = [{_sql_string(self._staging_dir + os.sep)}]")
        self._con.execute("SET enable_external_access = false")
        self._con.execute("SET lock_configuration = true")
        self._projects: set[str] = set()
        self._datasets: dict[tuple[str, str], DatasetInfo] = {}
        self._tables: dict[TableRef, TableInfo] = {}
        self._routines: set[RoutineRef] = set()
        self._column_bytes_cache: dict[tuple[TableRef, int], dict[str, int]] = {}
        self._table_columns_cache: dict[tuple[TableRef, int], list[tuple[str, duckdb.DuckDBPyType]]] = {}
        self._result_ids = itertools.count(1)
        self._file_ids = itertools.count(1)
        self._closed = False

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._con.close()
                shutil.rmtree(self._staging_dir, ignore_errors=True)

    # ------------------------------------------------------------------------------ catalog writes

    def add_project(self, project: str) -> None:
        if project.lower() in _RESERVED_CATALOGS:
            raise ValueError(f"project id {project!r} collides with a DuckDB catalog name")
        with self._lock:
            if project in self._projects:
                return
            self._con.execute(f"ATTACH ':memory:' AS {quote_identifier(project)}")
            self._projects.add(project)

    def add_dataset(
        self,
        project: str,
        dataset: str,
        *,
        location: str = "EU",
        description: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> DatasetInfo:
        with self._lock:
            self.add_project(project)
            if (project, dataset) in self._datasets:
                raise ValueError(f"dataset {project}.{dataset} already exists")
            self._con.execute(f"CREATE SCHEMA {quote_identifier(project)}.{quote_identifier(dataset)}")
            now = _now_ms()
            info = DatasetInfo(project, dataset, location, description, dict(labels or {}), now, now)
            self._datasets[(project, dataset)] = info
            return info

    def add_table(
        self,
        ref: TableRef,
        schema: Sequence[Mapping[str, Any]] | None,
        rows: Iterable[Mapping[str, Any]] = (),
        *,
        kind: str = "TABLE",
        view_query: str | None = None,
        description: str | None = None,
        partitioning: Mapping[str, Any] | None = None,
        clustering: Sequence[str] | None = None,
        accuracy: str = "PRECISE",
        bytes_scale: float = 1.0,
        labels: Mapping[str, str] | None = None,
    ) -> TableInfo:
        """Create a table (and load ``rows``), or a view when ``kind="VIEW"``."""
        info = self._new_table_info(
            ref, schema, kind, view_query, description, partitioning, clustering, accuracy, bytes_scale, labels
        )
        with self._lock:
            self._register_tables([info])
            if info.has_storage:
                try:
                    rows_list = list(rows)
                    _check_top_level_keys(info, rows_list)
                    self._load({info.ref: rows_list}, info.schema, replace=False)
                except InvalidData as exc:
                    self._unregister_tables([info])
                    raise ValueError(f"rows of {ref} do not fit its schema: {exc.message}") from exc
                except Exception:
                    self._unregister_tables([info])
                    raise
        return info

    def add_function(self, ref: RoutineRef, arguments: Sequence[str], body: str) -> None:
        """A persistent SQL function, ``CREATE FUNCTION dataset.routine(arguments) AS (body)``, run as a
        DuckDB macro. Its body may use only its arguments: one reading tables or calling routines would
        read what the dry run's bytes and referenced tables do not account for."""
        try:
            tree = sqlglot.parse_one(body, read="bigquery")
        except SqlglotError as exc:
            raise ValueError(f"function {ref} has a syntax error: {_first_line(str(exc))}") from exc
        if tree.find(exp.Table, exp.Select) or any(isinstance(d.expression, exp.Func) for d in tree.find_all(exp.Dot)):
            raise ValueError(f"function {ref}: the fake runs only bodies that read no table and call no routine")
        parameters = ", ".join(quote_identifier(name) for name in arguments)
        with self._lock:
            if (ref.project, ref.dataset) not in self._datasets:
                raise ValueError(f"dataset {ref.project}.{ref.dataset} does not exist")
            name = ".".join(quote_identifier(part) for part in (ref.project, ref.dataset, ref.routine))
            self._con.execute(f"CREATE OR REPLACE MACRO {name}({parameters}) AS ({tree.sql(dialect='duckdb')})")
            self._routines.add(ref)

    def add_tables_with_shared_schema(
        self,
        schema: Sequence[Mapping[str, Any]],
        rows_by_table: Mapping[TableRef, Sequence[Mapping[str, Any]]],
        *,
        bytes_scale: float = 1.0,
        accuracy: str = "PRECISE",
        description: str | None = None,
        partitioning: Mapping[str, Any] | None = None,
        clustering: Sequence[str] | None = None,
    ) -> list[TableInfo]:
        """Create many tables of one schema in one bulk load (date-sharded exports: hundreds of shards)."""
        template = self._new_table_info(
            TableRef("", "", ""),
            schema,
            "TABLE",
            None,
            description,
            partitioning,
            clustering,
            accuracy,
            bytes_scale,
            None,
        )
        # Validated once, and shared: hundreds of shards have one schema (a schema is replaced, never mutated).
        infos = [dataclasses.replace(template, ref=ref) for ref in rows_by_table]
        with self._lock:
            self._register_tables(infos)
            try:
                self._load({ref: list(rows) for ref, rows in rows_by_table.items()}, infos[0].schema, replace=False)
            except Exception:
                self._unregister_tables(infos)
                raise
        return infos

    def _new_table_info(
        self,
        ref: TableRef,
        schema: Sequence[Mapping[str, Any]] | None,
        kind: str,
        view_query: str | None,
        description: str | None,
        partitioning: Mapping[str, Any] | None,
        clustering: Sequence[str] | None,
        accuracy: str,
        bytes_scale: float,
        labels: Mapping[str, str] | None,
    ) -> TableInfo:
        kind = kind.upper()
        if kind not in ("TABLE", "VIEW", "MATERIALIZED_VIEW", "EXTERNAL", "SNAPSHOT"):
            raise ValueError(f"unknown table kind {kind!r}")
        if (kind == "VIEW") != (view_query is not None):
            raise ValueError("a VIEW needs view_query, and only a VIEW takes one")
        if accuracy not in ACCURACIES:
            raise ValueError(f"accuracy must be one of {ACCURACIES}, not {accuracy!r}")
        if bytes_scale <= 0:
            raise ValueError("bytes_scale must be positive")
        if kind != "VIEW" and not schema:
            raise ValueError(f"table {ref} needs a schema")
        normalized = normalize_schema(schema) if schema else []
        top_names = {f["name"] for f in normalized}
        for name in clustering or ():
            if name not in top_names:
                raise ValueError(f"clustering field {name!r} is not a column of {ref}")
        if partitioning and partitioning.get("field") and partitioning["field"] not in top_names:
            raise ValueError(f"partitioning field {partitioning['field']!r} is not a column of {ref}")
        now = _now_ms()
        return TableInfo(
            ref=ref,
            schema=normalized,
            kind=kind,
            view_query=view_query,
            description=description,
            partitioning=dict(partitioning) if partitioning else None,
            clustering=list(clustering) if clustering else None,
            accuracy=accuracy,
            bytes_scale=float(bytes_scale),
            labels=dict(labels or {}),
            created_ms=now,
            modified_ms=now,
        )

    def _register_tables(self, infos: Sequence[TableInfo]) -> None:
        taken = {str(ref).lower(): ref for ref in self._tables}
        for info in infos:
            if (info.ref.project, info.ref.dataset) not in self._datasets:
                raise ValueError(f"dataset {info.ref.project}.{info.ref.dataset} does not exist")
            if info.ref in self._tables:
                raise ValueError(f"table {info.ref} already exists")
            other = taken.get(str(info.ref).lower())
            if other is not None:
                # DuckDB identifiers are case-insensitive, BigQuery table names are not.
                raise ValueError(f"table {info.ref} differs from {other} only by case; the fake cannot hold both")
            taken[str(info.ref).lower()] = info.ref
        for info in infos:
            if info.has_storage:
                columns = ", ".join(f"{quote_identifier(f['name'])} {_duckdb_type(f)}" for f in info.schema)
                self._con.execute(f"CREATE TABLE {info.duckdb_name} ({columns})")
            self._tables[info.ref] = info

    def _unregister_tables(self, infos: Sequence[TableInfo]) -> None:
        """Undo ``_register_tables`` when the first load fails: setup is all or nothing."""
        for info in infos:
            if info.has_storage:
                self._con.execute(f"DROP TABLE IF EXISTS {info.duckdb_name}")
            self._tables.pop(info.ref, None)

    def write_rows(
        self,
        ref: TableRef,
        rows: Sequence[Mapping[str, Any]],
        *,
        schema: Sequence[Mapping[str, Any]] | None = None,
        truncate: bool = False,
    ) -> TableInfo:
        """Append (or, with ``truncate``, replace) rows atomically; creates the table given ``schema``.

        The rows must already fit the schema (``validate_rows``): this is the write step of a load job.
        """
        with self._lock:
            info = self._tables.get(ref)
            if info is None:
                if schema is None:
                    raise ValueError(f"table {ref} does not exist and no schema was given")
                info = self._new_table_info(ref, schema, "TABLE", None, None, None, None, "PRECISE", 1.0, None)
                self._register_tables([info])
                try:
                    self._load({ref: list(rows)}, info.schema, replace=False)
                except Exception:
                    self._unregister_tables([info])
                    raise
            else:
                # WRITE_TRUNCATE takes the job's schema, as BigQuery does.
                new_schema = normalize_schema(schema) if truncate and schema is not None else info.schema
                self._load({ref: list(rows)}, new_schema, replace=truncate)
                info.schema = new_schema
            info.version += 1
            info.modified_ms = _now_ms()
            return info

    def _load(
        self,
        rows_by_table: Mapping[TableRef, Sequence[Mapping[str, Any]]],
        schema: Sequence[Mapping[str, Any]],
        *,
        replace: bool,
    ) -> None:
        """Bulk-load rows through one JSON file read by DuckDB's ``read_json`` (no per-row INSERT)."""
        if not rows_by_table:
            return
        multi = len(rows_by_table) > 1
        read_columns = {f["name"]: _json_read_type(f) for f in schema}
        if multi:
            read_columns["__fake_target"] = "INTEGER"
        columns_sql = "{" + ", ".join(f"{_sql_string(k)}: {_sql_string(v)}" for k, v in read_columns.items()) + "}"
        projection = ", ".join(
            f"from_base64({quote_identifier(f['name'])})"
            if f["type"] == "BYTES" and f["mode"] != "REPEATED"
            else (
                f"list_transform({quote_identifier(f['name'])}, LAMBDA __b : from_base64(__b))"
                if f["type"] == "BYTES"
                else quote_identifier(f["name"])
            )
            for f in schema
        )
        targets = list(rows_by_table)
        if multi:
            payload = [
                {**row, "__fake_target": index} for index, ref in enumerate(targets) for row in rows_by_table[ref]
            ]
        else:
            payload = list(rows_by_table[targets[0]])
        path = os.path.join(self._staging_dir, f"load-{next(self._file_ids)}.json")
        with open(path, "wb") as handle:
            handle.write(orjson.dumps(payload, default=_json_default))
        source = f"read_json({_sql_string(path)}, format = 'array', columns = {columns_sql})"
        try:
            self._con.execute("BEGIN TRANSACTION")
            try:
                if multi and payload:
                    # Sorted by target, each INSERT below reads only its own row groups (zone maps).
                    self._con.execute(
                        f"CREATE TEMP TABLE __fake_staging AS SELECT * FROM {source} ORDER BY __fake_target"
                    )
                for index, ref in enumerate(targets):
                    target = self._tables[ref].duckdb_name
                    if replace:
                        columns = ", ".join(f"{quote_identifier(f['name'])} {_duckdb_type(f)}" for f in schema)
                        self._con.execute(f"CREATE OR REPLACE TABLE {target} ({columns})")
                    if not rows_by_table[ref]:
                        continue
                    if multi:
                        self._con.execute(
                            f"INSERT INTO {target} SELECT {projection} FROM __fake_staging "
                            f"WHERE __fake_target = {index}"
                        )
                    else:
                        self._con.execute(f"INSERT INTO {target} SELECT {projection} FROM {source}")
                if multi and payload:
                    self._con.execute("DROP TABLE __fake_staging")
                self._con.execute("COMMIT")
            except Exception:
                self._con.execute("ROLLBACK")
                raise
        except duckdb.Error as exc:
            raise InvalidData(f"Error while reading data: {exc}") from exc
        finally:
            os.unlink(path)

    # ------------------------------------------------------------------------------- catalog reads

    @property
    def projects(self) -> list[str]:
        with self._lock:
            return sorted(self._projects)

    def datasets(self, project: str) -> list[DatasetInfo]:
        with self._lock:
            return sorted((d for d in self._datasets.values() if d.project == project), key=lambda d: d.dataset)

    def dataset(self, project: str, dataset: str) -> DatasetInfo | None:
        with self._lock:
            return self._datasets.get((project, dataset))

    def tables(self, project: str, dataset: str) -> list[TableInfo]:
        with self._lock:
            return sorted(
                (t for t in self._tables.values() if (t.ref.project, t.ref.dataset) == (project, dataset)),
                key=lambda t: t.ref.table,
            )

    def table(self, ref: TableRef) -> TableInfo | None:
        with self._lock:
            return self._tables.get(ref)

    def table_schema(self, ref: TableRef) -> list[dict[str, Any]]:
        """The schema of a table, or of a view (bound from its query)."""
        with self._lock:
            info = self._tables[ref]
            if info.schema or info.view_query is None:
                return info.schema
            plan = self.plan_query(info.view_query, project=ref.project)
            return plan.schema or []

    def num_rows(self, ref: TableRef) -> int:
        with self._lock:
            info = self._tables[ref]
            if not info.has_storage:
                return 0
            row = self._con.execute(f"SELECT count(*) FROM {info.duckdb_name}").fetchone()
            return int(row[0]) if row else 0

    def logical_bytes(self, ref: TableRef) -> int:
        """BigQuery's ``numBytes``: the logical size of every column, times the table's bytes_scale."""
        with self._lock:
            info = self._tables[ref]
            if not info.has_storage:
                return 0
            return sum(self._scaled_column_bytes(info).values())

    def rows(self, ref: TableRef) -> list[dict[str, Any]]:
        """Every stored row of a table as Python values, in storage order."""
        with self._lock:
            info = self._tables[ref]
            cursor = self._con.execute(f"SELECT * FROM {info.duckdb_name} ORDER BY rowid")
            names = [column[0] for column in cursor.description or []]
            return [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]

    def _scaled_column_bytes(self, info: TableInfo) -> dict[str, int]:
        """Logical bytes per top-level column (lowercased name), scaled; cached per table version."""
        key = (info.ref, info.version)
        cached = self._column_bytes_cache.get(key)
        if cached is None:
            if not info.schema:
                cached = {}
            else:
                sums = ", ".join(
                    f"CAST(coalesce(sum({_logical_size_sql(quote_identifier(f['name']), f)}), 0) AS BIGINT)"
                    for f in info.schema
                )
                row = self._con.execute(f"SELECT {sums} FROM {info.duckdb_name}").fetchone() or ()
                cached = {
                    f["name"].lower(): round(int(raw) * info.bytes_scale)
                    for f, raw in zip(info.schema, row, strict=True)
                }
            self._column_bytes_cache[key] = cached
        return cached

    # ------------------------------------------------------------------------------------- planning

    def plan_query(
        self,
        sql: str,
        *,
        project: str,
        default_dataset: tuple[str, str] | None = None,
        parameters: Sequence[Mapping[str, Any]] | None = None,
        authorize: Callable[[str, str], None] | None = None,
    ) -> QueryPlan:
        """Parse, classify, resolve and rewrite ``sql``; bind (not run) it on DuckDB for its schema.

        ``authorize(project, dataset)`` is called for every dataset the query reads and may raise
        ``AccessDenied``; it runs before existence checks, as BigQuery does not reveal what exists
        where one has no access.
        """
        try:
            statements = _parse_statements(sql)
        except SqlglotError as exc:
            raise InvalidQuery(f"Syntax error: {_first_line(str(exc))}") from exc
        if not statements:
            raise InvalidQuery("Syntax error: Unexpected end of script")
        statement_type = SCRIPT if len(statements) > 1 else _statement_type(statements[0])
        if statement_type != SELECT:
            return self._plan_non_select(sql, statements, statement_type, project, default_dataset, authorize)
        tree = statements[0]
        with self._lock:
            resolver = _Resolver(self, project, default_dataset, authorize)
            try:
                tree = resolver.resolve(_bind_parameters(tree, parameters or ()))
                bytes_processed, referenced, accuracy = self._estimate(tree, resolver)
                duckdb_sql = _to_duckdb_sql(tree, resolver)
                try:
                    relation = self._con.sql(duckdb_sql)
                    columns = list(zip(relation.columns, relation.types, strict=True))
                except duckdb.Error as exc:
                    raise InvalidQuery(_explain_duckdb_error(exc)) from exc
            except BigQuerySqlError as exc:
                exc.location = exc.location or resolver.location
                raise
            schema = [bq_field_from_duckdb(name, dtype) for name, dtype in columns]
            return QueryPlan(
                sql=sql,
                statement_type=SELECT,
                referenced_tables=tuple(sorted(referenced)),
                referenced_routines=tuple(sorted(resolver.routines)),
                total_bytes_processed=bytes_processed,
                accuracy=accuracy,
                schema=schema,
                duckdb_sql=duckdb_sql,
                location=resolver.location,
            )

    def _plan_non_select(
        self,
        sql: str,
        statements: Sequence[exp.Expression],
        statement_type: str,
        project: str,
        default_dataset: tuple[str, str] | None,
        authorize: Callable[[str, str], None] | None,
    ) -> QueryPlan:
        """DML, DDL and scripts are classified and their existing tables listed; never executed."""
        referenced: set[TableRef] = set()
        location = None
        with self._lock:
            for statement in statements:
                cte_names = {cte.alias_or_name for cte in statement.find_all(exp.CTE)}
                for node in statement.find_all(exp.Table):
                    if not node.name or (not node.db and node.name in cte_names):
                        continue
                    dataset = node.db or (default_dataset[1] if default_dataset else "")
                    table_project = node.catalog or (default_dataset[0] if default_dataset and not node.db else project)
                    ref = TableRef(table_project, dataset, node.name)
                    if authorize is not None and dataset:
                        authorize(ref.project, ref.dataset)
                    if ref in self._tables:
                        referenced.add(ref)
                        location = location or self._datasets[(ref.project, ref.dataset)].location
        return QueryPlan(
            sql=sql,
            statement_type=statement_type,
            referenced_tables=tuple(sorted(referenced)),
            referenced_routines=(),
            total_bytes_processed=0,
            accuracy="PRECISE",
            schema=None,
            duckdb_sql=None,
            location=location,
        )

    def _estimate(self, tree: exp.Expression, resolver: _Resolver) -> tuple[int, set[TableRef], str]:
        """(bytes processed, referenced tables, accuracy) from the columns each table contributes."""
        referenced: set[TableRef] = set(resolver.tables)
        for wildcard in resolver.wildcards:
            referenced.update(wildcard.selected)
        used = _columns_by_source(tree, resolver)
        total = 0
        for source_key, columns in used.items():
            for ref in resolver.sources_for_key(source_key):
                info = self._tables[ref]
                sizes = self._scaled_column_bytes(info)
                total += sum(sizes.get(column, 0) for column in columns)
        accuracies = {self._tables[ref].accuracy for ref in referenced}
        if "UNKNOWN" in accuracies or {"UPPER_BOUND", "LOWER_BOUND"} <= accuracies:
            accuracy = "UNKNOWN"
        elif "UPPER_BOUND" in accuracies:
            accuracy = "UPPER_BOUND"
        elif "LOWER_BOUND" in accuracies:
            accuracy = "LOWER_BOUND"
        else:
            accuracy = "PRECISE"
        return total, referenced, accuracy

    # ------------------------------------------------------------------------------------ execution

    def execute(self, plan: QueryPlan) -> QueryResult:
        """Run a planned SELECT and keep its result in DuckDB (in the query's order)."""
        if plan.duckdb_sql is None:
            raise ValueError(f"only SELECT plans run, not {plan.statement_type}")
        with self._lock:
            relation = f"memory.main.__fake_result_{next(self._result_ids)}"
            try:
                # preserve_insertion_order (DuckDB's default) keeps the query's ORDER BY as rowid order.
                self._con.execute(f"CREATE TABLE {relation} AS {plan.duckdb_sql}")
            except duckdb.Error as exc:
                raise InvalidQuery(_explain_duckdb_error(exc)) from exc
            stored = self._con.sql(f"SELECT * FROM {relation}")
            columns = list(zip(stored.columns, stored.types, strict=True))
            count_row = self._con.execute(f"SELECT count(*) FROM {relation}").fetchone()
            total_rows = int(count_row[0]) if count_row else 0
        return QueryResult(relation, plan.schema or [], total_rows, columns)

    def forget(self, result: QueryResult) -> None:
        with self._lock:
            if not self._closed:
                self._con.execute(f"DROP TABLE IF EXISTS {result.relation}")

    def result_rows_json(
        self, result: QueryResult, start: int, max_rows: int | None, *, int64_timestamps: bool
    ) -> tuple[list[str], int]:
        """(wire-encoded rows from ``start``, how many) — at most ``max_rows`` and about 10 MB."""
        row_sql = result._row_sql.get(int64_timestamps)
        if row_sql is None:
            row_sql = result._row_sql[int64_timestamps] = _row_sql(result.columns, int64_timestamps)
        return self._page(result.relation, row_sql, start, max_rows, by_rowid_range=True)

    def table_rows_json(
        self,
        ref: TableRef,
        start: int,
        max_rows: int | None,
        *,
        selected_fields: Sequence[str] | None,
        int64_timestamps: bool,
    ) -> tuple[list[str], int, list[dict[str, Any]]]:
        """(wire-encoded rows, how many, their schema) of a stored table, for tabledata.list."""
        with self._lock:
            info = self._tables[ref]
            key = (ref, info.version)
            columns = self._table_columns_cache.get(key)
            if columns is None:
                relation = self._con.sql(f"SELECT * FROM {info.duckdb_name}")
                columns = self._table_columns_cache[key] = list(zip(relation.columns, relation.types, strict=True))
            schema = info.schema
            if selected_fields:
                by_name = {name.lower(): (name, dtype) for name, dtype in columns}
                fields_by_name = {f["name"].lower(): f for f in schema}
                missing = [name for name in selected_fields if name.lower() not in by_name]
                if missing:
                    raise InvalidQuery(f"Unrecognized name in selectedFields: {', '.join(missing)}")
                columns = [by_name[name.lower()] for name in selected_fields]
                schema = [fields_by_name[name.lower()] for name in selected_fields]
            rows, count = self._page(
                info.duckdb_name, _row_sql(columns, int64_timestamps), start, max_rows, by_rowid_range=False
            )
            return rows, count, schema

    def _page(
        self, relation: str, row_sql: str, start: int, max_rows: int | None, *, by_rowid_range: bool
    ) -> tuple[list[str], int]:
        # Without maxResults BigQuery still stops at ~10 MB; fetching 100k rows bounds the work.
        limit = max_rows if max_rows is not None else 100_000
        if limit <= 0:
            return [], 0
        if by_rowid_range:
            # A stored result was written once in order: its rowids are exactly 0..n-1.
            query = (
                f"SELECT {row_sql} FROM {relation} WHERE rowid >= {int(start)} AND rowid < {int(start) + int(limit)} "
                "ORDER BY rowid"
            )
        else:
            query = f"SELECT {row_sql} FROM {relation} ORDER BY rowid LIMIT {int(limit)} OFFSET {int(start)}"
        with self._lock:
            fetched = [row[0] for row in self._con.execute(query).fetchall()]
        size = 0
        for index, encoded in enumerate(fetched):
            size += len(encoded) + 1
            if size > PAGE_BYTE_BUDGET and index > 0:
                return fetched[:index], index
        return fetched, len(fetched)


# ------------------------------------------------------------------------------ resolution & rewrites


@dataclass
class _Wildcard:
    """One ``dataset.prefix*`` reference in a query: every matching shard, and the ones its filter keeps."""

    node: exp.Table
    project: str
    dataset: str
    name: str  # "events_*"
    shards: dict[str, TableRef]  # suffix → shard, sorted by suffix
    selected: list[TableRef]
    # The node's table name becomes this unique placeholder, so that two references to one wildcard
    # table (with different filters) stay apart through lineage and SQL generation.
    placeholder: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.project, self.dataset, self.placeholder)

    @property
    def duckdb_placeholder(self) -> str:
        return ".".join(quote_identifier(part) for part in self.key)


class _Resolver:
    """Qualifies table and routine names, checks access and existence, inlines views, finds wildcard tables."""

    def __init__(
        self,
        warehouse: DuckDBWarehouse,
        project: str,
        default_dataset: tuple[str, str] | None,
        authorize: Callable[[str, str], None] | None,
    ) -> None:
        self.warehouse = warehouse
        self.project = project
        self.default_dataset = default_dataset
        self.authorize = authorize
        self.tables: set[TableRef] = set()
        self.routines: set[RoutineRef] = set()
        self.wildcards: list[_Wildcard] = []
        self.location: str | None = None
        self._view_depth = 0

    def resolve(self, tree: exp.Expression) -> exp.Expression:
        return self._resolve_tree(tree, self.project, self.default_dataset)

    def sources_for_key(self, key: tuple[str, str, str]) -> list[TableRef]:
        """The stored tables behind a lineage key: a wildcard's kept shards, or the table itself."""
        for wildcard in self.wildcards:
            if wildcard.key == key:
                return list(wildcard.selected)
        ref = TableRef(*key)
        return [ref] if ref in self.tables else []

    def schema_mapping(self) -> dict[str, Any]:
        """The sqlglot schema of every table the query reads (wildcards as their shards' union)."""
        mapping: dict[str, Any] = {}
        for ref in self.tables:
            columns = {f["name"]: _sqlglot_type(f) for f in self.warehouse._tables[ref].schema}
            mapping.setdefault(ref.project, {}).setdefault(ref.dataset, {})[ref.table] = columns
        for wildcard in self.wildcards:
            columns = {}
            for shard in wildcard.shards.values():
                for f in self.warehouse._tables[shard].schema:
                    columns.setdefault(f["name"], _sqlglot_type(f))
            columns["_TABLE_SUFFIX"] = "STRING"
            mapping.setdefault(wildcard.project, {}).setdefault(wildcard.dataset, {})[wildcard.placeholder] = columns
        return mapping

    def _resolve_tree(
        self, tree: exp.Expression, project: str, default_dataset: tuple[str, str] | None
    ) -> exp.Expression:
        cte_names = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
        for node in list(tree.find_all(exp.Table)):
            if not node.name:
                continue  # a table function such as UNNEST in some positions
            if not node.db and node.name in cte_names:
                continue
            replacement = self._resolve_table(node, project, default_dataset)
            if replacement is not None:
                if node is tree:
                    tree = replacement
                else:
                    node.replace(replacement)
        for call in list(tree.find_all(exp.Dot)):
            if isinstance(call.expression, exp.Anonymous):  # ds.f(x) or p.ds.f(x): a persistent function
                self._resolve_routine(call, project)
        return tree

    def _resolve_routine(self, call: exp.Dot, project: str) -> None:
        *qualifier, function = call.flatten()
        names = [part.name for part in qualifier if isinstance(part, exp.Identifier)]
        if len(names) != len(qualifier) or len(names) not in (1, 2):
            raise InvalidQuery(f"Function not found: {call.sql(dialect='bigquery')}")
        ref = RoutineRef(names[0] if len(names) == 2 else project, names[-1], function.name)
        if self.authorize is not None:
            self.authorize(ref.project, ref.dataset)
        if ref not in self.warehouse._routines:
            raise InvalidQuery(f"Function not found: {'.'.join(names)}.{function.name}")
        self.routines.add(ref)
        project_id, dataset = (exp.to_identifier(part, quoted=True) for part in (ref.project, ref.dataset))
        call.set("this", exp.Dot(this=project_id, expression=dataset))
        function.set("this", exp.to_identifier(ref.routine, quoted=True))

    def _resolve_table(
        self, node: exp.Table, project: str, default_dataset: tuple[str, str] | None
    ) -> exp.Expression | None:
        name, dataset, table_project = node.name, node.db, node.catalog
        if not dataset:
            if default_dataset is None:
                raise InvalidQuery(f'Table "{name}" must be qualified with a dataset (e.g. dataset.table).')
            table_project, dataset = default_dataset
        table_project = table_project or project
        if name.upper().startswith("INFORMATION_SCHEMA") or dataset.upper() == "INFORMATION_SCHEMA":
            raise InvalidQuery("INFORMATION_SCHEMA views are not supported by the fake")
        if self.authorize is not None:
            self.authorize(table_project, dataset)
        warehouse = self.warehouse
        dataset_info = warehouse._datasets.get((table_project, dataset))
        if dataset_info is None:
            location = self.location or "US"
            raise NotFound(f"Not found: Dataset {table_project}:{dataset} was not found in location {location}")
        self.location = self.location or dataset_info.location
        for part, value in (("catalog", table_project), ("db", dataset), ("this", name)):
            node.set(part, exp.to_identifier(value, quoted=True))
        if name.endswith("*"):
            self._add_wildcard(node, table_project, dataset, name, dataset_info.location)
            return None
        ref = TableRef(table_project, dataset, name)
        info = warehouse._tables.get(ref)
        if info is None:
            raise NotFound(f"Not found: Table {ref.legacy_id} was not found in location {dataset_info.location}")
        if info.kind != "VIEW":
            self.tables.add(ref)
            return None
        return self._inline_view(node, info)

    def _inline_view(self, node: exp.Table, info: TableInfo) -> exp.Expression:
        if self._view_depth >= _MAX_VIEW_DEPTH:
            raise InvalidQuery(f"View {info.ref.legacy_id} nests views too deeply (or refers to itself)")
        try:
            view_statements = _parse_statements(info.view_query or "")
        except SqlglotError as exc:
            raise InvalidQuery(f"View {info.ref.legacy_id} has a syntax error: {_first_line(str(exc))}") from exc
        if len(view_statements) != 1 or _statement_type(view_statements[0]) != SELECT:
            raise InvalidQuery(f"View {info.ref.legacy_id} is not a single SELECT")
        self._view_depth += 1
        try:
            # A view's own names resolve in the view's project, without the job's default dataset.
            view_tree = self._resolve_tree(view_statements[0], info.ref.project, None)
        finally:
            self._view_depth -= 1
        alias = node.alias or info.ref.table
        return exp.Subquery(this=view_tree, alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True)))

    def _add_wildcard(self, node: exp.Table, project: str, dataset: str, name: str, location: str) -> None:
        prefix = name[:-1]
        shards = {
            info.ref.table[len(prefix) :]: info.ref
            for info in sorted(self.warehouse._tables.values(), key=lambda t: t.ref.table)
            if (info.ref.project, info.ref.dataset) == (project, dataset)
            and info.ref.table.startswith(prefix)
            and info.kind != "VIEW"
        }
        if not shards:
            raise NotFound(f"Not found: Table {project}:{dataset}.{name} was not found in location {location}")
        wildcard = _Wildcard(node, project, dataset, name, shards, selected=[])
        wildcard.selected = self._prune(wildcard)
        wildcard.placeholder = _WILDCARD_PLACEHOLDER.format(len(self.wildcards))
        self.wildcards.append(wildcard)
        select = node.find_ancestor(exp.Select)
        if select is not None:
            _exclude_table_suffix_from_stars(select)
        if not node.alias:
            node.set("alias", exp.TableAlias(this=exp.to_identifier(name, quoted=True)))
        node.set("this", exp.to_identifier(wildcard.placeholder, quoted=True))

    def _prune(self, wildcard: _Wildcard) -> list[TableRef]:
        """The shards whose suffix passes the WHERE conjuncts that test only ``_TABLE_SUFFIX``."""
        node = wildcard.node
        select = node.find_ancestor(exp.Select)
        everything = list(wildcard.shards.values())
        if select is None or not _is_inner_source(node, select):
            return everything
        where = select.args.get("where")
        if where is None:
            return everything
        alias = node.alias_or_name
        conditions = []
        for conjunct in _conjuncts(where.this):
            columns = list(conjunct.find_all(exp.Column))
            if not columns or conjunct.find(exp.Query) is not None:
                continue
            if all(
                column.name.upper() == "_TABLE_SUFFIX" and column.table in ("", alias, wildcard.name)
                for column in columns
            ):
                condition = conjunct.copy()
                for column in list(condition.find_all(exp.Column)):
                    column.replace(exp.column("_TABLE_SUFFIX"))
                conditions.append(condition)
        if not conditions:
            return everything
        condition_tree = exp.and_(*conditions)
        condition_sql = _rewrite_for_duckdb(exp.select("x").where(condition_tree)).args["where"].this.sql("duckdb")
        suffixes = list(wildcard.shards)
        query = (
            f"SELECT _TABLE_SUFFIX FROM (SELECT unnest(?::VARCHAR[]) AS _TABLE_SUFFIX) WHERE {condition_sql} "
            "ORDER BY _TABLE_SUFFIX"
        )
        try:
            kept = [row[0] for row in self.warehouse._con.execute(query, [suffixes]).fetchall()]
        except duckdb.Error:
            return everything  # the query itself will report the problem when it runs
        return [wildcard.shards[suffix] for suffix in kept]


def _is_inner_source(node: exp.Table, select: exp.Select) -> bool:
    """Whether filtering ``node``'s rows early cannot change an outer join's NULL-extended rows."""
    parent = node.parent
    if isinstance(parent, exp.From):
        return parent.parent is select
    if isinstance(parent, exp.Join):
        side = str(parent.args.get("side") or "").upper()
        kind = str(parent.args.get("kind") or "").upper()
        return parent.parent is select and not side and kind in ("", "INNER", "CROSS")
    return False


def _conjuncts(condition: exp.Expression) -> list[exp.Expression]:
    if isinstance(condition, exp.And):
        return _conjuncts(condition.this) + _conjuncts(condition.expression)
    if isinstance(condition, exp.Paren):
        return _conjuncts(condition.this)
    return [condition]


def _columns_by_source(tree: exp.Expression, resolver: _Resolver) -> dict[tuple[str, str, str], set[str]]:
    """Lowercased top-level columns read from each source table, keyed (project, dataset, table)."""
    from sqlglot.optimizer.qualify import qualify
    from sqlglot.optimizer.scope import traverse_scope

    used: dict[tuple[str, str, str], set[str]] = {}
    try:
        qualified = qualify(
            tree.copy(),
            dialect="bigquery",
            schema=resolver.schema_mapping(),
            validate_qualify_columns=False,
            quote_identifiers=False,
        )
        columns_of = {
            (project, dataset, table): {name.lower() for name in columns}
            for project, datasets in resolver.schema_mapping().items()
            for dataset, tables in datasets.items()
            for table, columns in tables.items()
        }
        for scope in traverse_scope(qualified):
            tables_in_scope = [s for s in scope.sources.values() if isinstance(s, exp.Table)]
            for column in scope.columns:
                source = scope.sources.get(column.table)
                if isinstance(source, exp.Table):
                    candidates = [source]
                elif column.table:
                    continue  # a CTE, subquery or UNNEST alias: its own scope reads the tables
                else:
                    # Unresolved: bill every table in scope that has such a column (never under-bill).
                    candidates = tables_in_scope
                for table in candidates:
                    key = (table.catalog, table.db, table.name)
                    if column.name.lower() in columns_of.get(key, ()):
                        used.setdefault(key, set()).add(column.name.lower())
    except (SqlglotError, KeyError, ValueError, AttributeError, TypeError):
        # Lineage failed: bill every column of every table read. Over-estimating keeps a budget safe.
        used = {}
        for ref in resolver.tables:
            used[(ref.project, ref.dataset, ref.table)] = {
                f["name"].lower() for f in resolver.warehouse._tables[ref].schema
            }
        for wildcard in resolver.wildcards:
            names = {f["name"].lower() for ref in wildcard.selected for f in resolver.warehouse._tables[ref].schema}
            used[wildcard.key] = names
    return used


def _to_duckdb_sql(tree: exp.Expression, resolver: _Resolver) -> str:
    tree = _rewrite_for_duckdb(tree.copy())
    _alias_field_paths(tree)
    _name_anonymous_columns(tree)
    duckdb_sql = tree.sql(dialect="duckdb")
    duckdb_sql = _unnest_struct_fields(duckdb_sql)
    # R1: the union text goes in after generation; sqlglot would recurse once per shard through a
    # 400-branch UNION, and DuckDB's "UNION ALL BY NAME" needs no translation.
    for wildcard in resolver.wildcards:
        if wildcard.duckdb_placeholder not in duckdb_sql:
            raise InvalidQuery(f"The fake could not place the wildcard table {wildcard.name}")
        duckdb_sql = duckdb_sql.replace(wildcard.duckdb_placeholder, f"({_union_sql(wildcard)})")
    return duckdb_sql


def _union_sql(wildcard: _Wildcard) -> str:
    suffix_of = {ref: suffix for suffix, ref in wildcard.shards.items()}
    if not wildcard.selected:
        # No shard passes the filter: an empty relation that still has the shards' columns.
        any_shard = next(iter(wildcard.shards.values()))
        return f'SELECT *, CAST(NULL AS VARCHAR) AS "_TABLE_SUFFIX" FROM {_duckdb_table_name(any_shard)} WHERE false'
    return " UNION ALL BY NAME ".join(
        f'SELECT *, {_sql_string(suffix_of[ref])} AS "_TABLE_SUFFIX" FROM {_duckdb_table_name(ref)}'
        for ref in wildcard.selected
    )


def _duckdb_table_name(ref: TableRef) -> str:
    return ".".join(quote_identifier(part) for part in (ref.project, ref.dataset, ref.table))


def _exclude_table_suffix_from_stars(select: exp.Select) -> None:
    """``SELECT *`` over a wildcard table does not return the ``_TABLE_SUFFIX`` pseudo-column."""
    for projection in select.expressions:
        if isinstance(projection, exp.Star):
            excluded = list(projection.args.get("except_") or [])
            if not any(isinstance(e, exp.Column) and e.name.upper() == "_TABLE_SUFFIX" for e in excluded):
                excluded.append(exp.column("_TABLE_SUFFIX"))
                projection.set("except_", excluded)


def _rewrite_for_duckdb(tree: exp.Expression) -> exp.Expression:
    """The BigQuery-AST rewrites (R2, R3 and the type fixes); see the module docstring."""
    for node in list(tree.find_all(exp.DateAdd, exp.DateSub)):  # R2
        _wrap_in_cast(node, "DATE")
    for node in list(tree.find_all(exp.UnixToTime, exp.StrToTime)):
        _wrap_in_cast(node, "TIMESTAMP")
    for node in list(tree.find_all(exp.ArrayAgg)):  # R3
        limit = node.this
        if isinstance(limit, exp.Limit):
            node.set("this", limit.this)
            replacement = exp.Anonymous(
                this="LIST_SLICE", expressions=[node.copy(), exp.Literal.number(1), limit.expression]
            )
            node.replace(replacement)
    for node in list(tree.find_all(exp.ApproxDistinct)):
        node.replace(exp.Count(this=exp.Distinct(expressions=[node.this])))
    for node in list(tree.find_all(exp.DataType)):
        if node.this in (exp.DataType.Type.DECIMAL, exp.DataType.Type.BIGDECIMAL) and not node.expressions:
            node.replace(exp.DataType.build("DECIMAL(38, 9)"))
    for node in list(tree.find_all(exp.Literal)):
        if node.is_string or not re.search(r"[.eE]", node.this):
            continue
        parent = node.parent
        if isinstance(parent, exp.Cast) and parent.to.this in (
            exp.DataType.Type.DECIMAL,
            exp.DataType.Type.BIGDECIMAL,
        ):
            continue  # CAST(1.1 AS NUMERIC) stays exact
        _wrap_in_cast(node, "DOUBLE")
    return tree


def _wrap_in_cast(node: exp.Expression, type_name: str) -> None:
    cast = exp.Cast(to=exp.DataType.build(type_name, dialect="bigquery"))
    node.replace(cast)
    cast.set("this", node)


def _name_anonymous_columns(tree: exp.Expression) -> None:
    """BigQuery names unnamed result columns ``f0_``, ``f1_``… (DuckDB would use the expression text)."""
    select = tree
    while isinstance(select, exp.SetOperation):
        select = select.this
    while isinstance(select, exp.Subquery):
        select = select.this
    if not isinstance(select, exp.Select):
        return
    anonymous = 0
    for projection in list(select.expressions):
        if isinstance(projection, (exp.Alias, exp.Column, exp.Star, exp.Dot)):
            continue
        projection.replace(exp.alias_(projection.copy(), f"f{anonymous}_", quoted=True))
        anonymous += 1


def _alias_field_paths(tree: exp.Expression) -> None:
    """``SELECT geo.country`` is implicitly named ``country`` in BigQuery, and GROUP BY / ORDER BY may
    use that name; DuckDB names the column the same way but does not accept it as an alias."""
    for select in tree.find_all(exp.Select):
        for projection in list(select.expressions):
            if isinstance(projection, exp.Dot) or (
                isinstance(projection, exp.Column) and projection.table and not isinstance(projection.this, exp.Star)
            ):
                name = projection.name
                if name:
                    projection.replace(exp.alias_(projection.copy(), name, quoted=True))


def _unnest_struct_fields(duckdb_sql: str) -> str:
    """R4: an un-aliased ``UNNEST(arr)`` in FROM/JOIN exposes the elements' struct fields as columns."""
    if "UNNEST(" not in duckdb_sql.upper():
        return duckdb_sql
    try:
        tree = sqlglot.parse_one(duckdb_sql, read="duckdb")
    except SqlglotError:
        return duckdb_sql
    changed = False
    for node in list(tree.find_all(exp.Unnest)):
        if not isinstance(node.parent, (exp.From, exp.Join)) or node.args.get("alias") is not None:
            continue
        if len(node.expressions) != 1:
            continue
        array_sql = node.expressions[0].sql("duckdb")
        subquery = sqlglot.parse_one(f"SELECT * FROM (SELECT UNNEST({array_sql}, max_depth := 2))", read="duckdb")
        node.replace(subquery.args["from_"].this)
        changed = True
    return tree.sql("duckdb") if changed else duckdb_sql


# --------------------------------------------------------------------------------------- parameters


def _bind_parameters(tree: exp.Expression, parameters: Sequence[Mapping[str, Any]]) -> exp.Expression:
    """Replace ``@name`` and ``?`` with typed literals built from the request's ``queryParameters``."""
    named = {str(p["name"]).lower(): p for p in parameters if p.get("name")}
    positional = [p for p in parameters if not p.get("name")]
    position = 0
    for node in list(tree.find_all(exp.Parameter, exp.Placeholder)):
        if isinstance(node, exp.Parameter):
            name = node.name.lower()
            if name not in named:
                raise InvalidQuery(f"Query parameter '{node.name}' not found")
            parameter = named[name]
        else:
            if position >= len(positional):
                raise InvalidQuery("Not enough positional query parameters")
            parameter = positional[position]
            position += 1
        literal_sql = _parameter_sql(parameter.get("parameterType") or {}, parameter.get("parameterValue") or {})
        node.replace(sqlglot.parse_one(literal_sql, read="bigquery"))
    return tree


def _parameter_sql(parameter_type: Mapping[str, Any], parameter_value: Mapping[str, Any]) -> str:
    type_name = str(parameter_type.get("type", "STRING")).upper()
    if type_name == "ARRAY":
        element_type = parameter_type.get("arrayType") or {}
        elements = [_parameter_sql(element_type, value) for value in parameter_value.get("arrayValues") or []]
        bq_type = _parameter_bq_type(element_type)
        return f"ARRAY<{bq_type}>[{', '.join(elements)}]"
    if type_name == "STRUCT":
        raise InvalidQuery("STRUCT query parameters are not supported by the fake")
    value = parameter_value.get("value")
    bq_type = _parameter_bq_type(parameter_type)
    if value is None:
        return f"CAST(NULL AS {bq_type})"
    if type_name == "BYTES":
        return f"FROM_BASE64({_bq_string(str(value))})"
    return f"CAST({_bq_string(str(value))} AS {bq_type})"


def _parameter_bq_type(parameter_type: Mapping[str, Any]) -> str:
    type_name = str(parameter_type.get("type", "STRING")).upper()
    if type_name == "ARRAY":
        return f"ARRAY<{_parameter_bq_type(parameter_type.get('arrayType') or {})}>"
    canonical = _TYPE_ALIASES.get(type_name, type_name)
    return _SQLGLOT_TYPE_FOR_BQ.get(canonical, type_name)


def _bq_string(text: str) -> str:
    return exp.Literal.string(text).sql("bigquery")


# ------------------------------------------------------------------------------------------- errors


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def _explain_duckdb_error(exc: duckdb.Error) -> str:
    """DuckDB's message, with the common binder errors in BigQuery's words."""
    text = str(exc)
    missing_column = re.search(r'Referenced column "([^"]+)" not found', text)
    if missing_column:
        return f"Unrecognized name: {missing_column.group(1)}"
    missing_function = re.search(r"Scalar Function with name (\w+) does not exist", text)
    if missing_function:
        return f"Function not found: {missing_function.group(1)}"
    return _first_line(text)


# --------------------------------------------------------------------------------- row validation


def _check_top_level_keys(info: TableInfo, rows: Sequence[Mapping[str, Any]]) -> None:
    """Catch a misspelt column in test data: unknown keys would otherwise load as silent NULLs."""
    names = {f["name"] for f in info.schema}
    for index, row in enumerate(rows):
        unknown = row.keys() - names
        if unknown:
            raise ValueError(f"row {index} of {info.ref} has fields not in its schema: {sorted(unknown)}")


def _json_default(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode()
    raise TypeError(f"cannot store {type(value).__name__} values")


_TIMESTAMP_RE = re.compile(
    r"(\d{4}-\d{2}-\d{2})[T ](\d{1,2}:\d{2}:\d{2}(?:\.\d{1,9})?)\s*(Z|UTC|[+-]\d{2}(?::?\d{2})?)?",
    re.IGNORECASE,
)
_DATETIME_RE = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[T ](\d{1,2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?))?")
_TIME_RE = re.compile(r"\d{1,2}:\d{2}:\d{2}(?:\.\d{1,6})?")


def validate_rows(
    rows: Sequence[Mapping[str, Any]], schema: Sequence[Mapping[str, Any]], *, ignore_unknown_values: bool = False
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Check rows as a BigQuery JSON load would; return (normalized rows, errors).

    Every error is ``{"reason": "invalid", "message": …}`` naming the row; any error fails the load.
    """
    normalized: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []
    for index, row in enumerate(rows):
        try:
            if not isinstance(row, Mapping):
                raise _RowError("the row is not a JSON object")
            normalized.append(_normalize_record(row, schema, "", ignore_unknown_values))
        except _RowError as exc:
            message = f"Error while reading data, error message: JSON parsing error in row {index}: {exc}"
            errors.append({"reason": "invalid", "message": message})
    return normalized, errors


class _RowError(Exception):
    pass


def _normalize_record(
    record: Mapping[str, Any], fields: Sequence[Mapping[str, Any]], path: str, ignore_unknown: bool
) -> dict[str, Any]:
    by_lower = {f["name"].lower(): f for f in fields}
    out: dict[str, Any] = {}
    for key, value in record.items():
        field_spec = by_lower.get(str(key).lower())
        if field_spec is None:
            if ignore_unknown:
                continue
            raise _RowError(f"No such field: {path}{key}.")
        out[field_spec["name"]] = _normalize_value(value, field_spec, f"{path}{field_spec['name']}", ignore_unknown)
    for field_spec in fields:
        if field_spec["mode"] == "REQUIRED" and out.get(field_spec["name"]) is None:
            raise _RowError(f"Missing required field: {path}{field_spec['name']}.")
    return out


def _normalize_value(value: Any, field_spec: Mapping[str, Any], path: str, ignore_unknown: bool) -> Any:
    if field_spec["mode"] == "REPEATED":
        if value is None:
            return []
        if not isinstance(value, list):
            raise _RowError(f"Array specified for non-repeated field or a value for repeated field {path}.")
        element_spec = {**field_spec, "mode": "NULLABLE"}
        items = [_normalize_value(item, element_spec, path, ignore_unknown) for item in value]
        if any(item is None for item in items):
            raise _RowError(f"Array of field {path} cannot contain NULL elements.")
        return items
    if value is None:
        return None
    type_name = field_spec["type"]
    if isinstance(value, list):
        raise _RowError(f"Array specified for non-repeated field: {path}.")
    if type_name == "RECORD":
        if not isinstance(value, Mapping):
            raise _RowError(f"Cannot convert value to record for field {path}.")
        return _normalize_record(value, field_spec["fields"], f"{path}.", ignore_unknown)
    if isinstance(value, Mapping):
        raise _RowError(f"Cannot convert a JSON object to {type_name} for field {path}.")
    converter = _SCALAR_CONVERTERS[type_name]
    try:
        return converter(value)
    except (ValueError, TypeError, ArithmeticError, binascii.Error) as exc:
        raise _RowError(f"Could not convert value {value!r} to {type_name.lower()} for field {path}.") from exc


def _to_integer(value: Any) -> int:
    if isinstance(value, bool):
        raise TypeError("a boolean is not an integer")
    integral_text = isinstance(value, str) and re.fullmatch(r"[+-]?\d+", value.strip())
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()) or integral_text:
        result = int(value)
    else:
        raise ValueError("not an integer")
    if not -(2**63) <= result < 2**63:
        raise ValueError("out of INT64 range")
    return result


def _to_float(value: Any) -> float | str:
    if isinstance(value, bool):
        raise TypeError("a boolean is not a number")
    number = float(value)
    # JSON has no NaN or Infinity; DuckDB reads these spellings from text.
    if math.isnan(number):
        return "nan"
    if number in (float("inf"), float("-inf")):
        return "inf" if number > 0 else "-inf"
    return number


def _to_boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ValueError("not a boolean")


def _to_string(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("not a string")
    return value


def _to_numeric(value: Any) -> str:
    if isinstance(value, bool):
        raise TypeError("a boolean is not a number")
    number = decimal.Decimal(str(value))
    if not number.is_finite():
        raise ValueError("NUMERIC must be finite")
    return str(number)


def _to_bytes(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("BYTES must be base64 text")
    base64.b64decode(value, validate=True)
    return value


def _to_date(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("not a date string")
    return dt.date.fromisoformat(value.strip()).isoformat()


def _to_timestamp(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        # BigQuery reads a JSON number as seconds since the epoch.
        return dt.datetime.fromtimestamp(float(value), tz=dt.UTC).isoformat()
    if not isinstance(value, str):
        raise TypeError("not a timestamp")
    match = _TIMESTAMP_RE.fullmatch(value.strip())
    if match is None:
        date_only = dt.date.fromisoformat(value.strip())
        return f"{date_only.isoformat()}T00:00:00+00:00"
    day, clock, zone = match.groups()
    zone = (zone or "+00:00").upper()
    if zone in ("Z", "UTC"):
        zone = "+00:00"
    elif len(zone) == 3:
        zone += ":00"
    elif ":" not in zone:
        zone = zone[:3] + ":" + zone[3:]
    parsed = dt.datetime.fromisoformat(f"{day}T{_pad_clock(clock)}{zone}")
    return parsed.isoformat()


def _to_datetime(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("not a datetime")
    match = _DATETIME_RE.fullmatch(value.strip())
    if match is None:
        raise ValueError("not a datetime")
    day, clock = match.groups()
    return dt.datetime.fromisoformat(f"{day}T{_pad_clock(clock or '00:00:00')}").isoformat()


def _to_time(value: Any) -> str:
    if not isinstance(value, str) or not _TIME_RE.fullmatch(value.strip()):
        raise ValueError("not a time")
    return dt.time.fromisoformat(_pad_clock(value.strip())).isoformat()


def _pad_clock(clock: str) -> str:
    parts = clock.split(":")
    if len(parts) == 2:
        parts.append("00")
    hours, minutes, seconds = parts
    whole, _, fraction = seconds.partition(".")
    fraction = (fraction + "000000")[:6] if fraction else ""
    return f"{int(hours):02d}:{minutes}:{whole}" + (f".{fraction}" if fraction else "")


def _to_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise TypeError("not text")


_SCALAR_CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "INTEGER": _to_integer,
    "FLOAT": _to_float,
    "BOOLEAN": _to_boolean,
    "STRING": _to_string,
    "NUMERIC": _to_numeric,
    "BIGNUMERIC": _to_numeric,
    "BYTES": _to_bytes,
    "DATE": _to_date,
    "TIMESTAMP": _to_timestamp,
    "DATETIME": _to_datetime,
    "TIME": _to_time,
    "JSON": _to_text,
    "GEOGRAPHY": _to_text,
    "INTERVAL": _to_text,
}


def infer_schema(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A schema for ``autodetect`` loads: the JSON type of the first non-null value of each key."""
    fields: dict[str, dict[str, Any] | None] = {}
    for row in rows:
        for key, value in row.items():
            if fields.get(str(key)) is None:
                fields[str(key)] = _infer_field(str(key), value)
    return normalize_schema(
        [spec or {"name": name, "type": "STRING", "mode": "NULLABLE"} for name, spec in fields.items()]
    )


def _infer_field(name: str, value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, list):
        element = next((_infer_field(name, item) for item in value if item is not None), None)
        if element is None:
            return {"name": name, "type": "STRING", "mode": "REPEATED"}
        return {**element, "mode": "REPEATED"}
    if isinstance(value, Mapping):
        sub_fields = [
            _infer_field(str(k), v) or {"name": str(k), "type": "STRING", "mode": "NULLABLE"} for k, v in value.items()
        ]
        return {"name": name, "type": "RECORD", "mode": "NULLABLE", "fields": sub_fields}
    if isinstance(value, bool):
        return {"name": name, "type": "BOOLEAN", "mode": "NULLABLE"}
    if isinstance(value, int):
        return {"name": name, "type": "INTEGER", "mode": "NULLABLE"}
    if isinstance(value, float):
        return {"name": name, "type": "FLOAT", "mode": "NULLABLE"}
    return {"name": name, "type": "STRING", "mode": "NULLABLE"}


def schemas_compatible(table_schema: Sequence[Mapping[str, Any]], job_schema: Sequence[Mapping[str, Any]]) -> bool:
    """Whether an append with ``job_schema`` fits a table of ``table_schema`` (same names and types)."""

    def shape(fields: Sequence[Mapping[str, Any]]) -> list[tuple[Any, ...]]:
        return sorted(
            (f["name"].lower(), f["type"], f["mode"] == "REPEATED", tuple(shape(f.get("fields") or ()))) for f in fields
        )

    return shape(normalize_schema(table_schema)) == shape(normalize_schema(job_schema))
