"""PostgreSQL: the only module that imports ``psycopg``.

Read-only in depth (spec 10.4), on every read:

1. the sqlglot parser layer (:meth:`PostgresEngine.check_sql`): the engine runs the SQL it
   regenerates, and calls only the functions on the allow-list ``shared/sql_functions/postgres.txt``
   (no ``pg_read_file``, ``lo_import``, ``ts_stat`` or ``query_to_xml`` that run SQL text,
   advisory locks, ``set_config``, sequences, …); the system views that read the server's
   configuration files (``pg_hba_file_rules``) are refused by name;
2. a ``READ ONLY`` transaction that is always rolled back — verified: ``COPY … TO PROGRAM``
   and ``pg_read_file`` still work in one for a superuser, hence layer 1 and least privilege;
3. the extended query protocol through a server-side (named) cursor: it accepts exactly one
   statement — verified: psycopg's simple protocol ran ``SELECT 1; COMMIT; DROP TABLE t``
   *inside* a read-only transaction;
4. one deadline per call whose timer cancels the query at the server (:meth:`Connection.deadline`),
   with ``statement_timeout`` per statement as a second layer, and a server-side cancel for
   cancelled calls; ``standard_conforming_strings`` on, so the server reads string literals as
   layer 1 does.

Rows stream from the server-side cursor in the writer's byte-bounded batches, so memory stays flat
on large results. A session goes back to the pool only after ``DISCARD ALL`` (:meth:`reset`).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Collection, Iterable, Sequence
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg import postgres, sql
from psycopg.conninfo import conninfo_to_dict

from shared import (
    AcpError,
    ColumnType,
    CredentialsInvalid,
    Header,
    InvalidArguments,
    Principal,
    ReadOnlyViolation,
    ResourceNotFound,
    TableWriter,
    UpstreamError,
)
from shared.error_policy import Failure, Rule, first_match
from shared.sql import SEVERAL_STATEMENTS

from .dsn import require_agreement, split_url, userinfo_secrets
from .engine import (
    MIN_COUNT_S,
    STATEMENT_TIMED_OUT,
    ColumnInfo,
    Connection,
    Engine,
    ForeignKey,
    QueryOutcome,
    Relation,
    TableInfo,
    TimeBudgetExceeded,
)

# System views that read the server's configuration files (pg_hba.conf, pg_ident.conf,
# postgresql.conf) for a superuser, with no function call in the query text.
FORBIDDEN_RELATIONS = frozenset({"pg_hba_file_rules", "pg_ident_file_mappings", "pg_file_settings"})
_SYSTEM_SCHEMAS = ("pg_catalog", "information_schema", "pg_toast")
_INTEGER = {"int2", "int4", "int8", "oid"}
_NUMBER = {"numeric", "float4", "float8", "money"}
_TEMPORAL: dict[str, ColumnType] = {"date": "date", "timestamp": "datetime", "timestamptz": "datetime"}
_JSON = {"json", "jsonb"}
_SQL_TYPES = {
    "integer": "bigint",
    "number": "numeric",
    "boolean": "boolean",
    "date": "date",
    "datetime": "timestamp",
    "json": "jsonb",
}
_EXACT_COUNT_UNDER = 100_000  # rows (by the catalog's estimate) that are still cheap to count


def _column_type(oid: int) -> ColumnType | None:
    info = postgres.types.get(oid)
    if info is None:
        return None  # a user type (enum, domain): inferred from the values
    if info.array_oid == oid:
        return "json"
    name = info.name
    if name in _INTEGER:
        return "integer"
    if name in _NUMBER:
        return "number"
    if name == "bool":
        return "boolean"
    if name in _TEMPORAL:
        return _TEMPORAL[name]
    if name in _JSON:
        return "json"
    return "string"


_DSN_SHAPE = "postgresql://user:password@host:5432/database"


def _unreadable_dsn() -> CredentialsInvalid:
    return CredentialsInvalid(
        "The PostgreSQL connection string cannot be read. Ask the user to re-enter it as "
        f"{_DSN_SHAPE} (or as host=… port=… user=… password=… dbname=…)."
    )


def _dsn_params(dsn: str) -> dict[str, Any]:
    """libpq parameters of a connection string, refused unless libpq reads its user and password
    where they end at the last "@" (see .dsn); errors are fixed words, never the string's text."""
    url = split_url(dsn)
    if url is not None and url.scheme not in ("postgresql", "postgres"):
        raise CredentialsInvalid(
            "The PostgreSQL connection string must start with postgresql://. Ask the user to re-enter it as "
            f"{_DSN_SHAPE}."
        )
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        raise _unreadable_dsn() from None  # libpq's message quotes the string
    if url is not None:
        user, password = (str(params[k]) if params.get(k) else None for k in ("user", "password"))
        require_agreement(url, user, password, "PostgreSQL", _DSN_SHAPE)
    return params


def connection_params(credentials: dict[str, Any]) -> dict[str, Any]:
    """libpq parameters from either credentials variant; raises CredentialsInvalid without the secret."""
    if credentials.get("type") == "postgres_dsn":
        dsn = credentials.get("dsn")
        if not isinstance(dsn, str) or not dsn.strip():
            raise _unreadable_dsn()
        params = _dsn_params(dsn.strip())
    else:
        params = {
            "host": credentials.get("host"),
            "port": credentials.get("port", 5432),
            "user": credentials.get("user"),
            "password": credentials.get("password"),
            "dbname": credentials.get("database"),
            "sslmode": credentials.get("sslmode", "prefer"),
            "sslrootcert": credentials.get("sslrootcert"),
        }
    for required in ("host", "user", "dbname"):
        if not params.get(required):
            raise CredentialsInvalid(
                f"The PostgreSQL credentials need a {required.replace('dbname', 'database')}. "
                "Ask the user to complete them."
            )
    ports = str(params.get("port") or 5432).split(",")
    if not all(p.strip().isdigit() and 1 <= int(p) <= 65535 for p in ports):
        raise CredentialsInvalid(
            "The PostgreSQL credentials have a port that is not a number from 1 to 65535. Ask the user to fix it."
        )
    return {k: v for k, v in params.items() if v not in (None, "")}


def _where(params: dict[str, Any]) -> str:
    """Where a connection goes, from parsed parts that hold no secret (see .dsn)."""
    return f"{params.get('host')}:{params.get('port', 5432)}, database {params.get('dbname')}"


def connect_error(exc: psycopg.OperationalError, params: dict[str, Any]) -> AcpError:
    """A connection that never opened, in words built from the parsed, non-secret parts: libpq's
    text (which quotes the host, port and options it was given) only chooses among fixed answers."""
    text = str(exc).lower()
    where = _where(params)
    if (
        "authentication failed" in text
        or "no password supplied" in text
        or ("role" in text and "does not exist" in text)
    ):
        return CredentialsInvalid(_BAD_LOGIN)
    if "database" in text and ("does not exist" in text or "permission denied" in text):
        return ResourceNotFound(
            f"PostgreSQL has no database {params.get('dbname')} that these credentials may connect to. "
            "Call autocontext without arguments to list the ones they can use."
        )
    if "pg_hba.conf" in text:
        return CredentialsInvalid(
            f"PostgreSQL ({where}) does not accept this user from this machine (no pg_hba.conf entry, or one that "
            "needs TLS). Ask the user to check the user, sslmode and the server's access rules."
        )
    if "ssl" in text or "certificate" in text:
        return CredentialsInvalid(
            f"The TLS connection to PostgreSQL ({where}) failed. Ask the user to check sslmode and sslrootcert."
        )
    if "invalid" in text and ("value" in text or "option" in text):
        return CredentialsInvalid(
            "The PostgreSQL credentials hold a connection option PostgreSQL does not accept. "
            "Ask the user to check the options (sslmode, port, …)."
        )
    return UpstreamError(
        f"Cannot reach PostgreSQL ({where}). Try again; if it persists, ask the user to check the server, "
        "host and port."
    )


class PostgresConnection(Connection):
    def __init__(self, params: dict[str, Any], write: bool) -> None:
        super().__init__()
        self.database = str(params["dbname"])
        self._conn = psycopg.connect(**params, autocommit=False, connect_timeout=10, application_name="acp-databases")
        # Every transaction psycopg opens on a read connection starts READ ONLY.
        self._conn.read_only = not write

    def interrupt(self) -> None:
        self._conn.cancel_safe(timeout=5)

    def close(self) -> None:
        self._conn.close()

    def alive(self) -> bool:
        if self._conn.closed:
            return False
        try:
            self._conn.execute("SELECT 1").fetchone()
            self._conn.rollback()
        except psycopg.Error:
            return False
        return True

    def reset(self) -> bool:
        """``DISCARD ALL`` outside a transaction: settings (``set_config``), ``SET ROLE`` and session
        authorization, temporary tables, prepared statements, cursors, ``LISTEN`` and session advisory
        locks (it runs ``pg_advisory_unlock_all()``) — nothing of one call reaches the next."""
        self._conn.rollback()
        self._conn.autocommit = True
        try:
            self._conn.execute("DISCARD ALL", prepare=False)  # never prepared: it deallocates itself
        finally:
            self._conn.autocommit = False
        return True

    def _begin(self, cursor: psycopg.Cursor[Any], timeout_s: float, schema: str | None = None) -> None:
        cursor.execute(sql.SQL("SET LOCAL statement_timeout = {}").format(sql.Literal(max(int(timeout_s * 1000), 1))))
        # The parser layer reads '…\' as a string ending in a backslash, and so must the server: with
        # standard_conforming_strings off (a role or database setting) it would read an escaped quote.
        cursor.execute("SET LOCAL standard_conforming_strings = on")
        if schema:
            cursor.execute("SELECT set_config('search_path', %s, true)", (sql.Identifier(schema).as_string(cursor),))

    def _read(
        self, query: str | sql.Composed, params: Sequence[Any] = (), budget_s: float = 30, qualify_all: bool = False
    ) -> list[Any]:
        """Rows of one catalog read in its own rolled-back transaction; ``qualify_all`` empties the
        search path first, so that names the server prints (pg_get_viewdef) carry their schema."""
        try:
            with self._conn.cursor() as cursor:
                self._begin(cursor, budget_s)
                if qualify_all:
                    cursor.execute("SELECT set_config('search_path', '', true)")
                cursor.execute(query, params)
                return list(cursor.fetchall())
        finally:
            self._conn.rollback()

    # -- queries ------------------------------------------------------------------------------
    def stream(
        self, sql_text: str, writer: TableWriter, *, schema: str | None, timeout_s: float, batch: int = 5000
    ) -> QueryOutcome:
        # statement_timeout is the engine's own second layer: it bounds each statement (the query,
        # then each FETCH of the cursor); the deadline bounds all of them together.
        with self.deadline(timeout_s):
            try:
                with self._conn.cursor() as setup:
                    self._begin(setup, timeout_s, schema)
                # A named cursor declares the query through the extended protocol: one statement only.
                # Rows stream from it in the batches the writer asks for, so memory stays bounded.
                with self._conn.cursor(name=f"acp_{secrets.token_hex(6)}") as cursor:
                    cursor.execute(sql_text)
                    columns: list[Header | str] = []
                    for column in cursor.description or []:
                        kind = _column_type(column.type_code)
                        columns.append({"name": column.name, "type": kind} if kind else column.name)
                    writer.set_columns(columns)
                    while (size := writer.fetch_size(batch)) and (rows := cursor.fetchmany(size)):
                        writer.extend(rows)
                        self.check_deadline()
            finally:
                self._conn.rollback()  # reads never commit
        return QueryOutcome()

    # -- catalog -------------------------------------------------------------------------------
    def databases(self) -> list[str]:
        rows = self._read(
            "SELECT datname FROM pg_database WHERE datallowconn AND NOT datistemplate "
            "AND has_database_privilege(datname, 'CONNECT') ORDER BY datname"
        )
        return [r[0] for r in rows]

    def schemas(self) -> list[str]:
        rows = self._read(
            "SELECT nspname FROM pg_namespace WHERE nspname !~ '^pg_' AND nspname <> 'information_schema' "
            "AND has_schema_privilege(nspname, 'USAGE') ORDER BY nspname"
        )
        return [r[0] for r in rows]

    def tables(self, schema: str | None, budget_s: float, only: str | None = None) -> list[TableInfo]:
        rows = self._read(
            "SELECT n.nspname, c.relname, c.relkind, c.reltuples::bigint, c.relpages, "
            "obj_description(c.oid, 'pg_class') FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND n.nspname !~ '^pg_' "
            "AND n.nspname <> 'information_schema' AND (%s::text IS NULL OR n.nspname = %s) "
            "AND (%s::text IS NULL OR c.relname = %s) AND has_table_privilege(c.oid, 'SELECT') "
            "ORDER BY n.nspname, c.relname",
            (schema, schema, only, only),
        )
        deadline = time.monotonic() + budget_s
        out = []
        for nspname, relname, relkind, reltuples, relpages, comment in rows:
            kind = "view" if relkind in ("v", "m") else "table"
            name = relname if schema is not None else f"{nspname}.{relname}"
            count: int | None = None
            estimated = True
            remaining = deadline - time.monotonic()
            if budget_s > 0:
                cheap = kind == "table" and (0 <= reltuples < _EXACT_COUNT_UNDER or (reltuples < 0 and relpages < 1000))
                if (cheap or kind == "view") and remaining > MIN_COUNT_S:
                    count = self._count(nspname, relname, remaining)
                    estimated = count is None
                if count is None and reltuples >= 0:
                    count = int(reltuples)  # the planner's estimate (pg_class.reltuples)
            out.append(TableInfo(name=name, kind=kind, rows=count, estimated=estimated and count is not None,
                                 comment=comment))  # fmt: skip
        return out

    def find_relations(self, names: Collection[str], schemas: Collection[str]) -> list[Relation]:
        rows = self._read(
            "SELECT n.nspname, c.relname, c.relkind IN ('v', 'm'), ARRAY(SELECT a.attname FROM pg_attribute a "
            "WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum), "
            "ARRAY(WITH RECURSIVE up(oid) AS (SELECT inhparent FROM pg_inherits WHERE inhrelid = c.oid UNION "
            "SELECT i.inhparent FROM pg_inherits i JOIN up ON i.inhrelid = up.oid) SELECT pn.nspname || '.' || "
            "pc.relname FROM up JOIN pg_class pc ON pc.oid = up.oid JOIN pg_namespace pn ON pn.oid = pc.relnamespace) "
            "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND lower(c.relname) = ANY(%s) "
            "AND n.nspname !~ '^pg_' AND n.nspname <> 'information_schema' ORDER BY 1, 2",
            (sorted({name.lower() for name in names}),),
        )
        return [
            Relation(
                str(schema), str(name), "view" if is_view else "table", tuple(str(c) for c in columns),
                tuple(str(p) for p in parents),
            )
            for schema, name, is_view, columns, parents in rows
        ]  # fmt: skip

    def search_path(self, schema: str | None) -> list[str]:
        if schema:
            return [schema]  # stream() sets the search path to the schema alone
        return [str(row[0]) for row in self._read("SELECT unnest(current_schemas(false))")]

    def view_sql(self, schema: str | None, name: str) -> str | None:
        rows = self._read(
            "SELECT c.relkind IN ('v', 'm'), CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid) END "
            "FROM pg_class c WHERE c.oid = to_regclass(format('%%I.%%I', %s::text, %s::text))",
            (schema or "public", name),
            qualify_all=True,
        )
        if not rows or not rows[0][0]:
            return None
        return str(rows[0][1] or "")

    def user_functions(self) -> frozenset[str]:
        rows = self._read(
            "SELECT DISTINCT lower(p.proname) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')"
        )
        return frozenset(str(r[0]) for r in rows)

    def _count(self, schema: str, table: str, budget_s: float) -> int | None:
        try:
            rows = self._read(
                sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(schema, table)), budget_s=budget_s
            )
        except pg_errors.QueryCanceled:
            return None
        return int(rows[0][0])

    def columns(self, schema: str | None, table: str) -> list[ColumnInfo]:
        rows = self._read(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull, "
            "col_description(a.attrelid, a.attnum), EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid "
            "AND i.indisprimary AND a.attnum = ANY(i.indkey)) FROM pg_attribute a "
            "WHERE a.attrelid = to_regclass(format('%%I.%%I', %s::text, %s::text)) AND a.attnum > 0 "
            "AND NOT a.attisdropped ORDER BY a.attnum",
            (schema or "public", table),
        )
        return [
            ColumnInfo(name=n, type=t, nullable=bool(nl), primary_key=bool(pk), comment=c) for n, t, nl, c, pk in rows
        ]

    def foreign_keys(self, schema: str | None, table: str) -> list[ForeignKey]:
        rows = self._read(
            "SELECT (SELECT array_agg(a.attname ORDER BY k.ord) FROM unnest(con.conkey) WITH ORDINALITY k(num, ord) "
            "JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.num), fn.nspname, fc.relname, "
            "(SELECT array_agg(a.attname ORDER BY k.ord) FROM unnest(con.confkey) WITH ORDINALITY k(num, ord) "
            "JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.num) "
            "FROM pg_constraint con JOIN pg_class fc ON fc.oid = con.confrelid "
            "JOIN pg_namespace fn ON fn.oid = fc.relnamespace WHERE con.contype = 'f' "
            "AND con.conrelid = to_regclass(format('%%I.%%I', %s::text, %s::text)) ORDER BY con.conname",
            (schema or "public", table),
        )
        return [
            ForeignKey(tuple(cols), ref_table, tuple(refs), ref_schema) for cols, ref_schema, ref_table, refs in rows
        ]

    def _target(self, schema: str | None, table: str) -> sql.Identifier:
        return sql.Identifier(schema or "public", table)

    def min_max(self, schema: str | None, table: str, column: str, budget_s: float) -> tuple[Any, Any] | None:
        name = sql.Identifier(column)
        query = sql.SQL("SELECT min({c}), max({c}) FROM {t}").format(c=name, t=self._target(schema, table))
        low, high = self._read(query, budget_s=budget_s)[0]
        return None if low is None else (low, high)

    def first_text(self, schema: str | None, table: str, column: str, budget_s: float) -> str | None:
        query = sql.SQL("SELECT {c}::text FROM {t} WHERE {c} IS NOT NULL LIMIT 1").format(
            c=sql.Identifier(column), t=self._target(schema, table)
        )
        rows = self._read(query, budget_s=budget_s)
        return None if not rows else str(rows[0][0])

    def top_values(
        self, schema: str | None, table: str, column: str, sample_rows: int, limit: int, budget_s: float
    ) -> list[tuple[Any, int]]:
        query = sql.SQL(
            "SELECT v, count(*) AS n FROM (SELECT {c} AS v FROM {t} LIMIT {s}) sample WHERE v IS NOT NULL "
            "GROUP BY v ORDER BY n DESC, v LIMIT {l}"
        ).format(
            c=sql.Identifier(column), t=self._target(schema, table), s=sql.Literal(sample_rows), l=sql.Literal(limit)
        )
        return [(r[0], int(r[1])) for r in self._read(query, budget_s=budget_s)]

    # -- writes ---------------------------------------------------------------------------------
    def insert(
        self, schema: str | None, table: str, headers: Sequence[Header], rows: Iterable[Sequence[Any]], create: bool
    ) -> tuple[int, bool]:
        target = self._target(schema, table)
        names = [h["name"] for h in headers]
        created = False
        count = 0
        try:
            with self._conn.cursor() as cursor:
                exists = cursor.execute(
                    "SELECT to_regclass(format('%%I.%%I', %s::text, %s::text))", (schema or "public", table)
                ).fetchone()
                if not (exists and exists[0]):
                    if not create:
                        raise ResourceNotFound(f"No table {table}. Pass an existing table as resource_id.")
                    columns = sql.SQL(", ").join(
                        sql.SQL("{} {}").format(sql.Identifier(h["name"]), sql.SQL(_SQL_TYPES.get(h["type"], "text")))
                        for h in headers
                    )
                    cursor.execute(sql.SQL("CREATE TABLE {} ({})").format(target, columns))
                    created = True
                copy_sql = sql.SQL("COPY {} ({}) FROM STDIN").format(
                    target, sql.SQL(", ").join(sql.Identifier(n) for n in names)
                )
                with cursor.copy(copy_sql) as copy:
                    for row in rows:
                        copy.write_row([json.dumps(v) if isinstance(v, (dict, list)) else v for v in row])
                        count += 1
            self._conn.commit()
        except BaseException:
            self._conn.rollback()
            raise
        return count, created


# Catalog readers outside the pg_ prefix: comments, type and object names, privileges by name.
CATALOG_FUNCTIONS = frozenset({
    "obj_description", "col_description", "shobj_description", "format_type", "to_regclass", "to_regtype",
    "to_regproc", "to_regprocedure", "to_regoper", "to_regoperator", "to_regnamespace", "to_regrole",
    "to_regcollation", "has_table_privilege", "has_column_privilege", "has_any_column_privilege",
    "current_schemas", "table_to_xml", "table_to_xmlschema", "table_to_xml_and_xmlschema", "schema_to_xml",
    "database_to_xml", "query_to_xml", "cursor_to_xml",
})  # fmt: skip


class PostgresEngine(Engine):
    name = "postgres"
    title = "PostgreSQL"
    dialect = "postgres"
    has_schemas = True
    catalog_schemas = frozenset({"pg_catalog", "information_schema"})
    catalog_prefixes = ("pg_",)  # pg_catalog comes first in every search_path
    catalog_functions = CATALOG_FUNCTIONS
    text_types = ("char", "text", "citext")
    function_list = "postgres"
    function_schemas = frozenset({"pg_catalog"})
    quoted_function_names_exact = True  # "Upper"() is someone's own function, not upper()
    forbidden_relations = FORBIDDEN_RELATIONS

    def identify(self, credentials: dict[str, Any]) -> Principal:
        params = connection_params(credentials)
        secrets_found = [str(v) for k, v in params.items() if k == "password" and v]
        dsn = credentials.get("dsn")
        if isinstance(dsn, str) and dsn:
            secrets_found += [dsn, *userinfo_secrets(dsn)]
        identity = f"postgres:{params['user']}@{params['host']}:{params.get('port', 5432)}/{params['dbname']}"
        return Principal(identity=identity, secrets=tuple(secrets_found))

    def default_database(self, credentials: dict[str, Any]) -> str:
        return str(connection_params(credentials)["dbname"])

    def connect(self, credentials: dict[str, Any], database: str | None, write: bool = False) -> Connection:
        params = connection_params(credentials)
        if database:
            params["dbname"] = database
        try:
            return PostgresConnection(params, write)
        except psycopg.OperationalError as exc:
            raise connect_error(exc, params) from None

    def translate(self, exc: BaseException) -> AcpError | None:
        return translate(exc)


_BAD_LOGIN = "PostgreSQL rejected the user or password. Ask the user to check the source credentials."
_READ_ONLY = "This ACP is read-only: PostgreSQL refused the statement ({message}). Rewrite it as a single SELECT."
# Keyed on the SQLSTATE first; a connection that never opened has none, and its text decides.
_RULES = (
    Rule(ReadOnlyViolation, SEVERAL_STATEMENTS, contains=("multiple commands into a prepared statement",)),
    Rule(ReadOnlyViolation, _READ_ONLY, codes=("25006",)),
    Rule(ReadOnlyViolation, _READ_ONLY, contains=("read-only transaction",)),
    Rule.fixed(STATEMENT_TIMED_OUT, codes=("57014",), contains=("statement timeout",)),
    Rule(UpstreamError, "The query was cancelled. Call again if it is still needed.", codes=("57014",)),
    Rule(CredentialsInvalid, _BAD_LOGIN, codes=("28P01", "28000")),
    Rule(
        ResourceNotFound,
        "PostgreSQL: {message}. Call autocontext without arguments to list the databases.",
        codes=("3D000",),
    ),
    Rule(
        InvalidArguments,
        "PostgreSQL: {message}. The database user has no permission for that; query what autocontext lists.",
        codes=("42501",),
    ),
    Rule(
        InvalidArguments,
        "PostgreSQL: {message}. Call autocontext with this database or schema to see its tables and columns.",
        codes=("42P01", "42703", "42883", "3F000"),
    ),
    Rule(
        InvalidArguments,
        "PostgreSQL rejected the query: {message}. Fix it and call again.",
        when=lambda failure: str(failure.code).startswith(("42", "22")),  # syntax, access rule, data exception
    ),
    Rule(
        CredentialsInvalid,
        _BAD_LOGIN,
        classes=(psycopg.OperationalError,),
        when=lambda failure: (
            "authentication failed" in failure.lowered
            or ("role" in failure.lowered and "does not exist" in failure.lowered)
        ),
    ),
    Rule(
        ResourceNotFound,
        "PostgreSQL: {message}. These credentials have no access to that database; call autocontext without "
        "arguments to list the ones they can use.",
        classes=(psycopg.OperationalError,),
        contains=("permission denied for database",),
    ),
    Rule(
        ResourceNotFound,
        "PostgreSQL: {message}. Call autocontext without arguments to list them.",
        classes=(psycopg.OperationalError,),
        when=lambda failure: "does not exist" in failure.lowered and "database" in failure.lowered,
    ),
    Rule(
        UpstreamError,
        "Cannot reach PostgreSQL ({message}). Try again; if it persists, ask the user to check the server.",
        classes=(psycopg.OperationalError,),
    ),
    Rule(UpstreamError, "PostgreSQL failed: {message}. Try again or simplify the query."),
)


def translate(exc: BaseException) -> AcpError | None:
    """PostgreSQL errors as ACP errors with a next step (this engine's translation table)."""
    if isinstance(exc, TimeBudgetExceeded):
        return STATEMENT_TIMED_OUT
    if not isinstance(exc, psycopg.Error):
        return None
    message = (str(exc).strip().splitlines() or ["(no message)"])[0]
    return first_match(_RULES, Failure(exc, message, code=getattr(exc, "sqlstate", None) or ""))


ENGINE = PostgresEngine()
