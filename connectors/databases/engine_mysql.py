"""MySQL and MariaDB: the only module that imports ``pymysql``.

Read-only in depth (spec 10.4), on every read:

1. the parser layer (:meth:`MysqlEngine.check_sql`): the server's own lexing rules find
   executable comments (``/*! … */``, ``/*!50000 … */``, ``/*M! … */``) outside string
   literals, and they are refused — verified on MariaDB 10.11: ``/*!50000 CREATE TABLE t … */``
   runs inside a ``READ ONLY`` transaction (DDL commits implicitly), and parsers see only a
   comment. Then token rules (one statement, a query keyword first, no ``INTO``/``OUTFILE``/
   ``DUMPFILE``, no ``FOR UPDATE``/``LOCK IN SHARE MODE``, no ``NEXT VALUE FOR``) that hold
   even where sqlglot cannot parse MySQL (``SELECT … INTO OUTFILE``, ``HANDLER``, ``LOAD DATA``,
   ``DO``); then the sqlglot check, with sqlglot's MySQL grammar and a generator that writes
   SQL MariaDB runs (``dialect_mariadb``): the server runs the SQL regenerated from the checked
   tree, comments dropped, and only functions on the allow-list
   ``shared/sql_functions/mariadb.txt`` (no ``LOAD_FILE``, ``GET_LOCK``, ``SLEEP``, stored
   functions, …);
2. ``SET SESSION TRANSACTION READ ONLY`` and ``START TRANSACTION READ ONLY``, always rolled back.
   The transaction alone refuses DML (error 1792) but not DDL, which commits implicitly and
   runs outside it; the session default makes that implicit transaction read-only too —
   verified on MariaDB 10.11 as root: ``CREATE TABLE``, ``CREATE DATABASE``, ``GRANT``,
   ``CREATE USER`` and ``SET PASSWORD`` all fail with 1792 (``SELECT … INTO OUTFILE`` does not);
3. the driver: the client never sets ``CLIENT_MULTI_STATEMENTS``, so the server itself
   rejects ``SELECT 1; DROP TABLE t`` as a syntax error; ``LOAD DATA LOCAL`` is off;
4. the session's ``sql_mode`` loses ``ANSI_QUOTES``, ``NO_BACKSLASH_ESCAPES`` and
   ``HIGH_NOT_PRECEDENCE``, so the server reads literals and ``NOT`` exactly as layer 1 does (a
   mismatch could hide a comment in a "string");
5. one deadline per call whose timer runs ``KILL QUERY`` from a separate connection (PyMySQL has
   no cancel), with the server's statement timeout (MariaDB ``max_statement_time``, MySQL
   ``max_execution_time``) as a second layer; a cancelled call is killed the same way;
6. a connection serves one call and is closed (:meth:`MysqlConnection.reset`): PyMySQL cannot reset
   a session, and user variables and named locks would reach the next call.

A superuser with the ``FILE`` privilege is only held back by layer 1 — verified here:
``secure_file_priv`` is NULL on this MariaDB, so ``SELECT … INTO OUTFILE '/tmp/…'`` wrote a file
and ``LOAD_FILE('/etc/hostname')`` read one inside a read-only transaction. A least-privilege
user (``SELECT`` only) is the recommended last line of defence.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import logging
import re
import ssl
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pymysql
from pymysql import converters as pm_converters
from pymysql.constants import CLIENT, FIELD_TYPE
from pymysql.cursors import Cursor, SSCursor

from shared import (
    AcpError,
    CallCancelled,
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
from shared.sql import SEVERAL_STATEMENTS, CheckedQuery, check_sql_size

from .dialect_mariadb import DIALECT
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

log = logging.getLogger(__name__)

# information_schema tables that reset the InnoDB compression statistics when read (verified on
# MariaDB 10.11: a SELECT is enough).
FORBIDDEN_RELATIONS = frozenset({"innodb_cmp_reset", "innodb_cmpmem_reset", "innodb_cmp_per_index_reset"})

SYSTEM_DATABASES = frozenset({"information_schema", "performance_schema", "mysql", "sys"})
SSL_MODES = ("disabled", "preferred", "required", "verify_ca", "verify_identity")
DEFAULT_PORT = 3306
CONNECT_TIMEOUT_S = 10
CATALOG_TIMEOUT_S = 30.0  # catalog queries (information_schema) on a very large server
EXACT_COUNT_UNDER = 100_000  # InnoDB estimates below this are replaced by a COUNT(*) within the budget
INSERT_BATCH = 1000
INSERT_TIMEOUT_S = 300.0  # per INSERT statement of INSERT_BATCH rows (and the CREATE TABLE)
JSON_CACHE_S = 60.0
JSON_CACHE_ENTRIES = 4096
# sql_mode flags that change how the server lexes literals, and the combination modes that imply one;
# HIGH_NOT_PRECEDENCE changes how it reads the "NOT a = b" that sqlglot writes ((NOT a) = b).
_LEXING_MODES = frozenset(
    {"ANSI_QUOTES", "NO_BACKSLASH_ESCAPES", "HIGH_NOT_PRECEDENCE", "ANSI", "ORACLE", "POSTGRESQL", "MSSQL", "DB2",
     "MAXDB"}
)  # fmt: skip
_INTEGER_TYPES = frozenset(
    {FIELD_TYPE.TINY, FIELD_TYPE.SHORT, FIELD_TYPE.LONG, FIELD_TYPE.INT24, FIELD_TYPE.LONGLONG, FIELD_TYPE.YEAR,
     FIELD_TYPE.BIT}
)  # fmt: skip
_NUMBER_TYPES = frozenset({FIELD_TYPE.DECIMAL, FIELD_TYPE.NEWDECIMAL, FIELD_TYPE.FLOAT, FIELD_TYPE.DOUBLE})
_DATE_TYPES = frozenset({FIELD_TYPE.DATE, FIELD_TYPE.NEWDATE})
_DATETIME_TYPES = frozenset({FIELD_TYPE.DATETIME, FIELD_TYPE.TIMESTAMP})
_BYTES_TYPES = frozenset(
    {FIELD_TYPE.BLOB, FIELD_TYPE.TINY_BLOB, FIELD_TYPE.MEDIUM_BLOB, FIELD_TYPE.LONG_BLOB, FIELD_TYPE.VAR_STRING,
     FIELD_TYPE.VARCHAR, FIELD_TYPE.STRING, FIELD_TYPE.GEOMETRY}
)  # fmt: skip
_BINARY_CHARSET = 63
# Host column types as MySQL columns. number → DOUBLE: it keeps every value a JSON number can
# carry at any scale (DECIMAL(38,10) would round ratios and tiny values and overflow past 28
# integer digits); string → LONGTEXT: TEXT stops at 64 KB and strict mode would fail the insert.
_SQL_TYPES = {
    "integer": "BIGINT",
    "number": "DOUBLE",
    "boolean": "BOOLEAN",
    "date": "DATE",
    "datetime": "DATETIME(6)",
    "json": "JSON",
    "string": "LONGTEXT",
}
_JSON_CHECK = re.compile(r"CHECK \(json_valid\(`((?:[^`]|``)+)`\)\)", re.IGNORECASE)
MAX_TABLES_FOR_TYPES = 20  # tables of one query whose definition is read for JSON columns (MariaDB)


# -- the parser layer -------------------------------------------------------------------------------
def _refuse(what: str) -> ReadOnlyViolation:
    return ReadOnlyViolation(
        f"This ACP is read-only: only SELECT queries are executed (the statement is {what}). "
        "Rewrite it as a single SELECT."
    )


def _executable_comment(body: str) -> bool:
    return body.startswith("!") or body[:2].upper() == "M!"


def _line_comment_starts(sql: str, i: int) -> bool:
    """``#``, or ``--`` followed by a space, a control character or the end (the server's rule)."""
    if sql[i] == "#":
        return True
    if not sql.startswith("--", i):
        return False
    return i + 2 >= len(sql) or ord(sql[i + 2]) <= 32 or sql[i + 2] == "\x7f"


def server_comments(sql: str) -> list[str]:
    """Block comments as MySQL's lexer finds them (strings with backslash escapes, backtick
    identifiers, ``#`` and ``-- `` line comments); returns each comment's body."""
    found: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        char = sql[i]
        if char in "'\"`":
            i += 1
            while i < n:
                if sql[i] == "\\" and char != "`":
                    i += 2
                elif sql[i] == char:
                    if i + 1 < n and sql[i + 1] == char:
                        i += 2
                        continue
                    break
                else:
                    i += 1
            i += 1
        elif _line_comment_starts(sql, i):
            end = sql.find("\n", i)
            i = n if end < 0 else end + 1
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            found.append(sql[i + 2 : n if end < 0 else end])
            i = n if end < 0 else end + 2
        else:
            i += 1
    return found


_QUOTED_TOKENS = ("STRING", "IDENTIFIER")


def _masked(sql: str, tokens: Sequence[Any]) -> str:
    """The SQL with every string literal and quoted identifier (as sqlglot reads them) blanked."""
    chars = list(sql)
    for token in tokens:
        if token.token_type.name.endswith(_QUOTED_TOKENS):
            chars[token.start : token.end + 1] = " " * (token.end + 1 - token.start)
    return "".join(chars)


_EXEC_COMMENT = re.compile(r"/\*(!|m!)", re.IGNORECASE)
_TIMEOUT_HINT = re.compile(r"\b(MAX_EXECUTION_TIME|SET_VAR)\b", re.IGNORECASE)
_FIRST_KEYWORDS = frozenset({"SELECT", "WITH", "VALUES", "TABLE", "L_PAREN"})
_LOCKING = (("FOR", "UPDATE"), ("FOR", "SHARE"), ("LOCK", "IN"))


def check_mysql_specifics(sql: str) -> None:
    """What MySQL hides from sqlglot's AST: executable comments, INTO, locking reads, several statements."""
    from sqlglot import TokenType
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.errors import TokenError

    executable = "Executable comments (/*! … */, /*M! … */) are not allowed: the server runs their content"
    bodies = server_comments(sql)
    if any(_executable_comment(body) for body in bodies):
        raise ReadOnlyViolation(f"{executable}, out of the read-only checks' sight. Remove them and call again.")
    if any(body.startswith("+") and _TIMEOUT_HINT.search(body) for body in bodies):
        raise InvalidArguments(
            "Optimizer hints that change MAX_EXECUTION_TIME or session variables (SET_VAR) are not allowed: "
            "the connector sets the statement timeout. Remove the hint and call again."
        )
    try:
        tokens = Dialect.get_or_raise("mysql").tokenize(sql)
    except TokenError:
        if _EXEC_COMMENT.search(sql):  # cannot tell strings from comments: refuse any look-alike
            raise ReadOnlyViolation(f"{executable}. Remove them and call again.") from None
        return  # the AST check refuses what it cannot read
    if _EXEC_COMMENT.search(_masked(sql, tokens)):
        raise ReadOnlyViolation(f"{executable}, out of the read-only checks' sight. Remove them and call again.")
    if not tokens:
        return  # only comments: the AST check says the SQL is empty
    words = [t for t in tokens if not t.token_type.name.endswith(_QUOTED_TOKENS)]
    for position, token in enumerate(tokens):
        if token.token_type == TokenType.SEMICOLON and any(
            t.token_type != TokenType.SEMICOLON for t in tokens[position + 1 :]
        ):
            raise ReadOnlyViolation(SEVERAL_STATEMENTS)
    first = tokens[0]
    if first.token_type.name not in _FIRST_KEYWORDS:
        raise _refuse("not a query" if first.token_type.name.endswith(_QUOTED_TOKENS) else first.text.upper())
    texts = [t.text.upper() for t in words]
    for position, text in enumerate(texts):
        if text in ("INTO", "OUTFILE", "DUMPFILE"):
            raise _refuse(f"SELECT … {text}")
        following = texts[position + 1] if position + 1 < len(texts) else ""
        if (text, following) in _LOCKING:
            raise _refuse("SELECT … LOCK IN SHARE MODE" if text == "LOCK" else f"SELECT … {text} {following}")
        if text == "NEXT" and texts[position + 1 : position + 3] == ["VALUE", "FOR"]:
            raise _refuse("NEXT VALUE FOR, which advances a sequence")


# -- credentials ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Settings:
    host: str
    port: int
    user: str
    password: str
    database: str
    ssl_mode: str = "preferred"
    ssl_ca: str | None = None

    @property
    def identity(self) -> str:
        return f"mysql:{self.user}@{self.host}:{self.port}/{self.database}"


def _invalid(detail: str) -> CredentialsInvalid:
    return CredentialsInvalid(f"The MySQL credentials {detail}. Ask the user to fix the source credentials.")


def _port(value: Any) -> int:
    try:
        port = int(value)
    except (TypeError, ValueError):
        raise _invalid("have a port that is not a number") from None
    if not 1 <= port <= 65535:
        raise _invalid("have a port outside 1-65535")
    return port


def settings_of(credentials: dict[str, Any]) -> Settings:
    """Connection settings from either credentials variant; errors never quote a secret."""
    if credentials.get("type") == "mysql_dsn":
        return _from_dsn(credentials.get("dsn"))
    values = {
        "host": credentials.get("host"),
        "user": credentials.get("user"),
        "database": credentials.get("database"),
    }
    for key, value in values.items():
        if not isinstance(value, str) or not value.strip():
            raise _invalid(f"need a {key}")
    password = credentials.get("password")
    if password is not None and not isinstance(password, str):
        raise _invalid("have a password that is not text")
    ssl_mode = str(credentials.get("ssl_mode") or "preferred")
    if ssl_mode not in SSL_MODES:
        raise _invalid(f"have ssl_mode '{ssl_mode[:40]}'; use one of {', '.join(SSL_MODES)}")
    ssl_ca = credentials.get("ssl_ca") or None
    return Settings(
        host=str(values["host"]).strip(),
        port=_port(credentials.get("port", DEFAULT_PORT)),
        user=str(values["user"]),
        password=password or "",
        database=str(values["database"]),
        ssl_mode=ssl_mode,
        ssl_ca=str(ssl_ca) if ssl_ca else None,
    )


_DSN_SHAPE = "mysql://user:password@host:3306/database?ssl_mode=required&ssl_ca=/path/ca.pem"


def _from_dsn(dsn: Any) -> Settings:
    if not isinstance(dsn, str) or not dsn.strip():
        raise _invalid(f"need a connection string such as {_DSN_SHAPE}")
    url = split_url(dsn.strip())
    if url is None or url.scheme not in ("mysql", "mariadb", "mysql+pymysql"):
        raise _invalid(f"hold a connection string that does not start with mysql://; use {_DSN_SHAPE}")
    try:
        parts = urlsplit(dsn.strip())
    except ValueError:  # an unclosed "[" of an IPv6 host
        raise _invalid(f"hold a connection string that cannot be read; use {_DSN_SHAPE}") from None
    # Errors are fixed words from here on: what urlsplit calls the host, port or database may be a
    # piece of a password written without percent-encoding, unless its reading agrees (see .dsn).
    user = unquote(parts.username) if parts.username else None
    require_agreement(url, user, unquote(parts.password) if parts.password else None, "MySQL", _DSN_SHAPE)
    try:
        port = parts.port
    except ValueError:
        raise _invalid("have a port that is not a number from 1 to 65535") from None
    database = unquote(parts.path.lstrip("/"))
    if not parts.hostname or not parts.username or not database or "/" in database:
        raise _invalid(f"hold a connection string without a host, user or database; use {_DSN_SHAPE}")
    query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
    options = {k.replace("-", "_").lower(): v for k, v in query.items()}
    unknown = sorted(set(options) - {"ssl_mode", "ssl_ca"})
    if unknown:
        raise _invalid(f"hold unknown connection-string options ({', '.join(unknown)[:80]}); use ssl_mode and ssl_ca")
    return settings_of(
        {
            "type": "mysql",
            "host": parts.hostname,
            "port": port or DEFAULT_PORT,
            "user": unquote(parts.username),
            "password": unquote(parts.password or ""),
            "database": database,
            "ssl_mode": options.get("ssl_mode", "preferred").lower(),
            "ssl_ca": options.get("ssl_ca"),
        }
    )


def _tls_options(settings: Settings) -> dict[str, Any]:
    """PyMySQL's TLS arguments for an ssl_mode (MySQL client semantics)."""
    if settings.ssl_mode == "disabled":
        return {"ssl_disabled": True}
    if settings.ssl_mode == "preferred":
        return {}  # PyMySQL tries TLS when the server offers it, else goes on in clear text
    try:
        context = ssl.create_default_context(cafile=settings.ssl_ca)
    except (OSError, ssl.SSLError):
        raise _invalid("name a CA certificate file (ssl_ca) that cannot be read") from None
    if settings.ssl_mode == "required":  # encrypted, the certificate is not checked
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif settings.ssl_mode == "verify_ca":
        context.check_hostname = False
    return {"ssl": context}


@functools.cache
def _preferred_tls_context() -> ssl.SSLContext:
    """What PyMySQL builds for ssl_mode preferred: TLS when the server offers it, nothing verified."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return context


class _Client(pymysql.connections.Connection):
    """PyMySQL's connection with one TLS context for ssl_mode preferred, built once.

    PyMySQL builds that context anew for every connection, and loading the system's CA certificates
    into it took 16 of the 17 ms a connection cost here, although preferred verifies nothing. It
    matters since a MySQL connection serves one call (see MysqlConnection.reset). PyMySQL takes a
    context only as "TLS required", so the hook is its context factory.
    """

    def _create_ssl_ctx(self, sslp: Any) -> ssl.SSLContext:
        if isinstance(sslp, dict) and not sslp:
            return _preferred_tls_context()
        context: ssl.SSLContext = super()._create_ssl_ctx(sslp)  # type: ignore[misc]
        return context


def lexing_safe_sql_mode(current: str) -> str | None:
    """``current`` without the modes that change how literals are lexed, or None when it has none."""
    modes = [m for m in current.split(",") if m]
    kept = [m for m in modes if m.upper() not in _LEXING_MODES]
    return None if kept == modes else ",".join(kept)


def quote(identifier: str) -> str:
    return "`" + identifier.replace("`", "``") + "`"


def _as_int(data: bytes) -> int:
    return int.from_bytes(data, "big")


# MariaDB's JSON columns of a table, by (host, port, user, database, table): kept by the process, not
# the connection, since a connection serves one call (MysqlConnection.reset). Dict reads and writes are
# atomic; two calls racing for the same entry only read the definition twice.
_JSON_COLUMNS: dict[tuple[str, int, str, str, str], tuple[float, frozenset[str]]] = {}


# -- the connection -----------------------------------------------------------------------------------
class MysqlConnection(Connection):
    """A PyMySQL connection: reads in a rolled-back READ ONLY transaction, writes only when ``write``."""

    def __init__(self, settings: Settings, database: str, write: bool = False) -> None:
        super().__init__()
        self.settings = settings
        self.database = database
        self.write = write
        self._raw: pymysql.Connection[Any] | None = None
        self._timeout: float | None = None
        self._thread_id = 0
        self._zero_dates = 0
        self.exact_count_under = EXACT_COUNT_UNDER
        conversions = dict(pm_converters.conversions)
        conversions[FIELD_TYPE.BIT] = _as_int  # BIT(n) as an integer, not bytes
        conversions[FIELD_TYPE.TIME] = str  # TIME can pass 24 h or be negative: keep the server's text
        conversions[FIELD_TYPE.DATE] = self._date
        conversions[FIELD_TYPE.NEWDATE] = self._date
        conversions[FIELD_TYPE.DATETIME] = self._datetime
        conversions[FIELD_TYPE.TIMESTAMP] = self._datetime
        self._conversions = conversions
        self._raw = self._open()
        self.mariadb = "mariadb" in str(self._raw.get_server_info()).lower()  # type: ignore[no-untyped-call]

    # -- zero dates ('0000-00-00') are not dates: null, with a warning -------------------------
    def _date(self, text: str) -> Any:
        value = pm_converters.convert_date(text)
        if isinstance(value, str):
            self._zero_dates += 1
            return None
        return value

    def _datetime(self, text: str) -> Any:
        value = pm_converters.convert_datetime(text)
        if isinstance(value, str):
            self._zero_dates += 1
            return None
        return value

    # -- lifecycle ------------------------------------------------------------------------------
    def _connect_args(self, database: str | None) -> dict[str, Any]:
        settings = self.settings
        return {
            "host": settings.host,
            "port": settings.port,
            "user": settings.user,
            "password": settings.password.encode("utf-8"),
            "database": database,
            "charset": "utf8mb4",
            "connect_timeout": CONNECT_TIMEOUT_S,
            "autocommit": False,
            "client_flag": 0,  # never CLIENT.MULTI_STATEMENTS: the server runs one statement per query
            "local_infile": False,  # LOAD DATA LOCAL would read this machine's files
            "program_name": "acp-databases",
            **_tls_options(settings),
        }

    def _open(self) -> pymysql.Connection[Any]:
        raw: pymysql.Connection[Any] = _Client(
            **self._connect_args(self.database), conv=self._conversions, cursorclass=Cursor
        )
        try:
            if raw.client_flag & CLIENT.MULTI_STATEMENTS:
                raise RuntimeError("MULTI_STATEMENTS must never be set on a MySQL connection of this connector")
            with raw.cursor() as cursor:
                cursor.execute("SELECT @@SESSION.sql_mode")
                safe = lexing_safe_sql_mode(str(cursor.fetchone()[0] or ""))
                if safe is not None:
                    cursor.execute("SET SESSION sql_mode = %s", (safe,))
                    cursor.execute("SELECT @@SESSION.sql_mode")
                    if lexing_safe_sql_mode(str(cursor.fetchone()[0] or "")) is not None:
                        raise RuntimeError("the server kept a sql_mode that changes how literals are read")
                if not self.write:
                    cursor.execute("SET SESSION TRANSACTION READ ONLY")
            raw.rollback()
        except BaseException:
            raw.close()
            raise
        self._timeout = None
        return raw

    def _live(self) -> pymysql.Connection[Any]:
        if self._raw is None:
            self._raw = self._open()
        return self._raw

    def _abandon(self) -> None:
        """Drop the socket without reading the rest of a result (the server stops sending)."""
        raw, self._raw = self._raw, None
        if raw is not None:
            with contextlib.suppress(Exception):  # already closed or broken: nothing left to release
                raw.close()

    def close(self) -> None:
        self._abandon()

    def alive(self) -> bool:
        if self._raw is None or not self._raw.open:
            return False
        try:
            self._raw.ping(reconnect=False)
        except Exception:
            return False
        return True

    def reset(self) -> bool:
        """PyMySQL has no public way to reset a session (COM_RESET_CONNECTION), and user variables
        (``@v := 'x'``), named locks and session settings would outlive the call: never pooled."""
        return False

    def interrupt(self) -> None:
        """``KILL QUERY`` of the running statement, from a second connection (PyMySQL has no cancel)."""
        thread_id = self._thread_id
        if thread_id:
            self._kill_query(thread_id)

    def cancel(self) -> None:
        """The call was cancelled: stop its statement in a thread (this may run on the event loop)."""
        self.cancelled.set()
        threading.Thread(target=self.interrupt, name="acp-mysql-cancel", daemon=True).start()

    def _kill_query(self, thread_id: int) -> None:
        try:
            side = _Client(**{**self._connect_args(None), "connect_timeout": 5})
            try:
                with side.cursor() as cursor:
                    cursor.execute(f"KILL QUERY {int(thread_id)}")
            finally:
                side.close()
        except Exception:
            log.warning("KILL QUERY %s failed", thread_id, exc_info=True)

    # -- transactions and budgets ------------------------------------------------------------------
    def _set_timeout(self, cursor: Cursor, seconds: float) -> None:
        if self._timeout == seconds:
            return
        if self.mariadb:
            cursor.execute(f"SET SESSION max_statement_time = {max(seconds, 0.001):.3f}")
        else:
            cursor.execute(f"SET SESSION max_execution_time = {max(round(seconds * 1000), 1)}")
        self._timeout = seconds

    def _rollback(self) -> None:
        if self._raw is not None:
            try:
                self._raw.rollback()
            except pymysql.err.MySQLError:
                self._abandon()

    def _read(self, query: str, params: Sequence[Any] | None = None, budget_s: float = CATALOG_TIMEOUT_S) -> list[Any]:
        """A small buffered read in a READ ONLY transaction under a time budget."""
        raw = self._live()
        try:
            with raw.cursor() as cursor:
                self._set_timeout(cursor, budget_s)
                cursor.execute("START TRANSACTION READ ONLY")
                try:
                    cursor.execute(query, params)
                except pymysql.err.OperationalError as exc:
                    if exc.args and exc.args[0] in (1969, 3024):
                        raise TimeBudgetExceeded from exc
                    raise
                return list(cursor.fetchall())
        finally:
            self._rollback()

    # -- queries ----------------------------------------------------------------------------------
    def stream(
        self, sql: str, writer: TableWriter, *, schema: str | None, timeout_s: float, batch: int = 5000
    ) -> QueryOutcome:
        """Run one read-only query on a server-side (unbuffered) cursor into ``writer``.

        The deadline's ``KILL QUERY`` bounds the whole call; the server's own statement timeout
        (MariaDB ``max_statement_time``, MySQL ``max_execution_time``) is a second layer.
        """
        outcome = QueryOutcome()
        with self.deadline(timeout_s):
            raw = self._live()
            self._thread_id = int(raw.thread_id())  # type: ignore[no-untyped-call]
            self._zero_dates = 0
            database = schema or self.database
            cursor: SSCursor | None = None
            finished = False  # the whole result was read: the connection can take another statement
            try:
                with raw.cursor() as setup:
                    self._set_timeout(setup, timeout_s)
                    setup.execute("START TRANSACTION READ ONLY")
                    json_columns = self._json_columns(setup, sql, database) if self.mariadb else frozenset()
                if self.cancelled.is_set():
                    finished = True
                    raise CallCancelled
                cursor = SSCursor(raw)
                started = time.monotonic()
                cursor.execute(sql)
                headers, binary = _headers(cursor, json_columns)
                writer.set_columns(headers)
                while not finished and (size := writer.fetch_size(batch)):
                    rows = cursor.fetchmany(size)
                    finished = len(rows) < size
                    writer.extend(rows)
                    self.check_deadline()
                if finished and time.monotonic() - started >= 0.9 * timeout_s:
                    self._check_interrupted(cursor)
            except pymysql.err.MySQLError as exc:
                code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
                finished = 0 < code < 2000  # a server error ends the result; client errors break the link
                if code in (1969, 3024):
                    raise TimeBudgetExceeded from exc
                if code in (1044, 1045):  # a statement-level access refusal (INTO OUTFILE without FILE…)
                    raise ReadOnlyViolation(
                        "This ACP is read-only, and MySQL refused the statement for lack of privilege "
                        f"({exc.args[1]}). Rewrite it as a single SELECT."
                    ) from exc
                raise
            finally:
                self._thread_id = 0
                if finished:
                    self._rollback()  # reads never commit
                else:
                    if cursor is not None:
                        _detach(cursor)
                    self._abandon()  # capped or failed mid-result: never drain the rest of it
        for name in binary:
            outcome.warnings.append(f"Column '{name}' holds binary data; it is delivered as base64 text.")
        if self._zero_dates:
            outcome.warnings.append(f"{self._zero_dates} zero or invalid dates ('0000-00-00') are delivered as null.")
        return outcome

    def _check_interrupted(self, cursor: SSCursor) -> None:
        """Raise if the server stopped the statement but still answered OK: ``DO SLEEP(…)`` ends
        without an error past max_statement_time, the interruption only among its warnings
        (verified on MariaDB 10.11; BENCHMARK() even returns 0 with no warning at all, one more
        reason the parser layer refuses it)."""
        cursor.execute("SHOW WARNINGS")
        codes = {int(row[1]) for row in cursor.fetchall()}
        if codes & {1969, 3024}:
            raise TimeBudgetExceeded
        if 1317 in codes:
            raise pymysql.err.OperationalError(1317, "Query execution was interrupted")

    def _json_columns(self, cursor: Cursor, sql: str, database: str) -> frozenset[tuple[str, str, str]]:
        """MariaDB's JSON columns (LONGTEXT with a json_valid check) of the tables a query names.

        Read from SHOW CREATE TABLE, which any privilege on the table allows: a user granted
        SELECT on tables sees no rows in information_schema.CHECK_CONSTRAINTS (verified).
        """
        found: set[tuple[str, str, str]] = set()
        for schema, table in _referenced_tables(sql, database):
            key = (self.settings.host, self.settings.port, self.settings.user, schema, table)
            cached = _JSON_COLUMNS.get(key)
            if cached is None or time.monotonic() - cached[0] > JSON_CACHE_S:
                try:
                    cursor.execute(f"SHOW CREATE TABLE {quote(schema)}.{quote(table)}")
                    row = cursor.fetchone()
                    ddl = str(row[1]) if row else ""
                except pymysql.err.MySQLError:
                    ddl = ""  # a missing table or a CTE name: the query itself says what is wrong
                cached = (time.monotonic(), _json_in_ddl(ddl))
                if len(_JSON_COLUMNS) >= JSON_CACHE_ENTRIES:
                    _JSON_COLUMNS.clear()
                _JSON_COLUMNS[key] = cached
            found.update((schema, table, column) for column in cached[1])
        return frozenset(found)

    # -- catalog -----------------------------------------------------------------------------------
    def databases(self) -> list[str]:
        rows = self._read("SHOW DATABASES")
        return sorted(str(r[0]) for r in rows if str(r[0]).lower() not in SYSTEM_DATABASES)

    def schemas(self) -> list[str]:
        return [self.database]

    def tables(self, schema: str | None, budget_s: float, only: str | None = None) -> list[TableInfo]:
        database = schema or self.database
        rows = self._read(
            "SELECT TABLE_NAME, TABLE_TYPE, TABLE_ROWS, ENGINE, TABLE_COMMENT FROM information_schema.TABLES "
            "WHERE TABLE_SCHEMA = %s AND (%s IS NULL OR TABLE_NAME = %s) ORDER BY TABLE_NAME",
            (database, only, only),
        )
        deadline = time.monotonic() + budget_s
        out = []
        # Sorted here, by code point: the server's collation would put order_items after orders.
        for name, table_type, table_rows, engine, comment in sorted(rows, key=lambda r: str(r[0])):
            kind = "view" if "VIEW" in str(table_type).upper() else "table"
            count: int | None = None
            estimated = False
            if budget_s > 0:
                # InnoDB's TABLE_ROWS is an estimate; MyISAM, Aria and MEMORY keep exact counts.
                exact_engine = str(engine or "").upper() in ("MYISAM", "ARIA", "MEMORY")
                if kind == "table" and exact_engine and table_rows is not None:
                    count = int(table_rows)
                else:
                    cheap = kind == "view" or table_rows is None or int(table_rows) < self.exact_count_under
                    remaining = deadline - time.monotonic()
                    if cheap and remaining > MIN_COUNT_S:
                        count = self._count(database, str(name), remaining)
                    if count is None and kind == "table" and table_rows is not None:
                        count, estimated = int(table_rows), True
            text = str(comment or "")
            out.append(
                TableInfo(
                    name=str(name),
                    kind=kind,
                    rows=count,
                    estimated=estimated,
                    comment=text if text and not (kind == "view" and text == "VIEW") else None,
                )
            )
        return out

    def find_relations(self, names: Collection[str], schemas: Collection[str]) -> list[Relation]:
        wanted = sorted({name.lower() for name in names})
        databases = sorted({self.database, *schemas})
        if not wanted:
            return []
        # TABLE_SCHEMA as written: MariaDB opens only those databases (a LOWER() would open every one).
        # A UNION, not a join: joining information_schema tables costs ten times more (measured).
        where = (
            f"TABLE_SCHEMA IN ({', '.join('%s' for _ in databases)}) "
            f"AND LOWER(TABLE_NAME) IN ({', '.join('%s' for _ in wanted)})"
        )
        rows = self._read(
            f"SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, NULL, 0 FROM information_schema.TABLES WHERE {where} "
            f"UNION ALL SELECT TABLE_SCHEMA, TABLE_NAME, NULL, COLUMN_NAME, ORDINAL_POSITION "
            f"FROM information_schema.COLUMNS WHERE {where} ORDER BY 1, 2, 5",
            (*databases, *wanted, *databases, *wanted),
        )
        kinds: dict[tuple[str, str], str] = {}
        columns: dict[tuple[str, str], list[str]] = {}
        for schema, name, table_type, column, _position in rows:
            key = (_text(schema), _text(name))
            if column is None:
                kinds[key] = "view" if "VIEW" in _text(table_type).upper() else "table"
            else:
                columns.setdefault(key, []).append(_text(column))
        return [
            Relation(schema, name, kind, tuple(columns.get((schema, name), ())))
            for (schema, name), kind in kinds.items()
        ]

    def search_path(self, schema: str | None) -> list[str]:
        return [schema or self.database]

    def view_sql(self, schema: str | None, name: str) -> str | None:
        rows = self._read(
            "SELECT VIEW_DEFINITION FROM information_schema.VIEWS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
            (schema or self.database, name),
        )
        return str(rows[0][0] or "") if rows else None  # empty without the SHOW VIEW privilege

    def user_functions(self) -> frozenset[str]:
        rows = self._read(
            "SELECT DISTINCT LOWER(ROUTINE_NAME) FROM information_schema.ROUTINES WHERE ROUTINE_TYPE = 'FUNCTION'"
        )
        return frozenset(str(r[0]) for r in rows)

    def _count(self, database: str, table: str, budget_s: float) -> int | None:
        try:
            rows = self._read(f"SELECT COUNT(*) FROM {quote(database)}.{quote(table)}", budget_s=budget_s)
        except (TimeBudgetExceeded, pymysql.err.MySQLError):
            return None  # past the budget, or a view that cannot be read: the count stays unknown
        return int(rows[0][0])

    def columns(self, schema: str | None, table: str) -> list[ColumnInfo]:
        database = schema or self.database
        rows = self._read(
            "SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_COMMENT FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
            (database, table),
        )
        primary = {
            str(r[0])
            for r in self._read(
                "SELECT COLUMN_NAME FROM information_schema.STATISTICS "
                "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND INDEX_NAME = 'PRIMARY'",
                (database, table),
            )
        }
        json_columns: frozenset[str] = frozenset()
        if self.mariadb:
            # The columns query above already answered: without the definition the types stay as declared.
            with contextlib.suppress(pymysql.err.MySQLError, IndexError):
                ddl = self._read(f"SHOW CREATE TABLE {self._target(database, table)}")[0][1]
                json_columns = _json_in_ddl(str(ddl))
        out = []
        for name, column_type, nullable, comment in rows:
            declared = "json" if str(name) in json_columns else str(column_type)
            out.append(
                ColumnInfo(
                    name=str(name),
                    type=declared,
                    nullable=str(nullable).upper() == "YES",
                    primary_key=str(name) in primary,
                    comment=str(comment) if comment else None,
                )
            )
        return out

    def foreign_keys(self, schema: str | None, table: str) -> list[ForeignKey]:
        # KEY_COLUMN_USAGE alone: a user granted SELECT on tables sees no rows in
        # REFERENTIAL_CONSTRAINTS on MariaDB (verified), and REFERENCED_* already name the target.
        database = schema or self.database
        rows = self._read(
            "SELECT k.CONSTRAINT_NAME, k.COLUMN_NAME, k.REFERENCED_TABLE_SCHEMA, k.REFERENCED_TABLE_NAME, "
            "k.REFERENCED_COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE k "
            "WHERE k.TABLE_SCHEMA = %s AND k.TABLE_NAME = %s AND k.REFERENCED_TABLE_NAME IS NOT NULL "
            "ORDER BY k.CONSTRAINT_NAME, k.ORDINAL_POSITION",
            (database, table),
        )
        keys: dict[str, tuple[str | None, str, list[str], list[str]]] = {}
        for constraint, column, ref_schema, ref_table, ref_column in rows:
            other = str(ref_schema) if ref_schema and str(ref_schema) != database else None
            entry = keys.setdefault(str(constraint), (other, str(ref_table), [], []))
            entry[2].append(str(column))
            entry[3].append(str(ref_column))
        return [
            ForeignKey(tuple(cols), ref_table, tuple(refs), other) for other, ref_table, cols, refs in keys.values()
        ]

    def _target(self, schema: str | None, table: str) -> str:
        return f"{quote(schema or self.database)}.{quote(table)}"

    def min_max(self, schema: str | None, table: str, column: str, budget_s: float) -> tuple[Any, Any] | None:
        name = quote(column)
        rows = self._read(f"SELECT MIN({name}), MAX({name}) FROM {self._target(schema, table)}", budget_s=budget_s)
        low, high = rows[0]
        return None if low is None else (low, high)

    def first_text(self, schema: str | None, table: str, column: str, budget_s: float) -> str | None:
        name = quote(column)
        rows = self._read(
            f"SELECT {name} FROM {self._target(schema, table)} WHERE {name} IS NOT NULL AND {name} <> '' LIMIT 1",
            budget_s=budget_s,
        )
        return None if not rows else str(rows[0][0])

    def top_values(
        self, schema: str | None, table: str, column: str, sample_rows: int, limit: int, budget_s: float
    ) -> list[tuple[Any, int]]:
        sample = f"SELECT {quote(column)} AS v FROM {self._target(schema, table)} LIMIT {int(sample_rows)}"
        rows = self._read(
            f"SELECT v, COUNT(*) AS n FROM ({sample}) AS sample WHERE v IS NOT NULL "
            f"GROUP BY v ORDER BY n DESC, v LIMIT {int(limit)}",
            budget_s=budget_s,
        )
        return [(r[0], int(r[1])) for r in rows]

    # -- writes -------------------------------------------------------------------------------------
    def insert(
        self, schema: str | None, table: str, headers: Sequence[Header], rows: Iterable[Sequence[Any]], create: bool
    ) -> tuple[int, bool]:
        """Append rows in one transaction, creating the table first when ``create`` and it is missing.

        CREATE TABLE commits implicitly in MySQL, so it runs before the transaction; if the
        insert then fails, the table this call created (still empty) is dropped again.
        """
        if not self.write:
            raise ReadOnlyViolation("This connection is read-only. Use insert_rows on a source that allows adding.")
        database = schema or self.database
        target = self._target(database, table)
        types = [h["type"] for h in headers]
        raw = self._live()
        created = False
        with raw.cursor() as cursor:
            self._set_timeout(cursor, INSERT_TIMEOUT_S)  # not whatever a catalog read left on the session
            cursor.execute(
                "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
                (database, table),
            )
            exists = bool(cursor.fetchone()[0])
            raw.rollback()
            if not exists:
                if not create:
                    raise ResourceNotFound(f"No table {table}. Pass an existing table as resource_id.")
                columns = ", ".join(f"{quote(h['name'])} {_SQL_TYPES.get(h['type'], 'LONGTEXT')}" for h in headers)
                cursor.execute(f"CREATE TABLE {target} ({columns}) DEFAULT CHARSET = utf8mb4")
                created = True
            names = ", ".join(quote(h["name"]) for h in headers).replace("%", "%%")
            placeholders = ", ".join("%s" for _ in headers)
            statement = f"INSERT INTO {target.replace('%', '%%')} ({names}) VALUES ({placeholders})"
            inserted = 0
            try:
                cursor.execute("START TRANSACTION")
                for chunk in _chunks(rows, INSERT_BATCH):
                    inserted += cursor.executemany(statement, [_db_values(row, types) for row in chunk]) or 0
                raw.commit()
            except BaseException:
                self._rollback()
                if created:
                    self._drop_if_empty(target)
                raise
        return inserted, created

    def _drop_if_empty(self, target: str) -> None:
        try:
            with self._live().cursor() as cursor:
                cursor.execute(f"SELECT 1 FROM {target} LIMIT 1")
                if cursor.fetchone() is None:
                    cursor.execute(f"DROP TABLE {target}")
        except Exception:
            log.warning("could not drop the table created by a failed insert", exc_info=True)


def _detach(cursor: SSCursor) -> None:
    """Forget an unfinished unbuffered result, so that neither the cursor nor the result tries
    to read the rest of it from a socket that is being closed."""
    result = getattr(cursor, "_result", None)
    if result is not None:
        result.unbuffered_active = False
    cursor.connection = None  # type: ignore[assignment]


def _chunks(rows: Iterable[Sequence[Any]], size: int) -> Iterator[list[Sequence[Any]]]:
    iterator = iter(rows)
    while chunk := list(islice(iterator, size)):
        yield chunk


def _db_value(value: Any, column_type: str) -> Any:
    """A host cell (JSON value) as the Python value PyMySQL sends for the column's type."""
    if value is None:
        return None
    if column_type == "json" or isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, default=str)
    if isinstance(value, str) and column_type in ("date", "datetime"):
        try:
            parsed = dt.datetime.fromisoformat(value)
        except ValueError:
            return value  # the server decides (and says what is wrong)
        if parsed.tzinfo is not None:
            parsed = parsed.astimezone(dt.UTC).replace(tzinfo=None)
        return parsed.date() if column_type == "date" and len(value) == 10 else parsed
    return value


def _db_values(row: Sequence[Any], types: Sequence[str]) -> list[Any]:
    return [_db_value(v, t) for v, t in zip(row, types, strict=True)]


def _headers(cursor: SSCursor, json_columns: frozenset[tuple[str, str, str]]) -> tuple[list[Header | str], list[str]]:
    """Typed headers from the result's field packets, and the binary columns (base64 strings)."""
    fields: list[Any] = list(getattr(getattr(cursor, "_result", None), "fields", None) or [])
    headers: list[Header | str] = []
    binary = []
    for index, column in enumerate(cursor.description or ()):
        name, code = str(column[0]), int(column[1])
        field = fields[index] if index < len(fields) else None
        charset = getattr(field, "charsetnr", None)
        kind: ColumnType = "string"
        if code in _INTEGER_TYPES:
            kind = "integer"
        elif code in _NUMBER_TYPES:
            kind = "number"
        elif code in _DATE_TYPES:
            kind = "date"
        elif code in _DATETIME_TYPES:
            kind = "datetime"
        elif code == FIELD_TYPE.JSON:
            kind = "json"
        elif code in _BYTES_TYPES:
            if charset == _BINARY_CHARSET:
                binary.append(name)
            elif field is not None and (_text(field.db), _text(field.org_table), _text(field.org_name)) in json_columns:
                kind = "json"
        headers.append({"name": name, "type": kind})
    return headers, binary


def _json_in_ddl(ddl: str) -> frozenset[str]:
    return frozenset(m.group(1).replace("``", "`") for m in _JSON_CHECK.finditer(ddl))


def _referenced_tables(sql: str, database: str) -> list[tuple[str, str]]:
    """(database, table) of the tables a query names, CTEs left out; none when it does not parse."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        statement = sqlglot.parse_one(sql, read="mysql")
    except SqlglotError:
        return []
    ctes = {cte.alias_or_name.lower() for cte in statement.find_all(exp.CTE)}
    found: dict[tuple[str, str], None] = {}
    for node in statement.find_all(exp.Table):
        if node.name and (node.db or node.name.lower() not in ctes):
            found[(node.db or database, node.name)] = None
    return list(found)[:MAX_TABLES_FOR_TYPES]


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value or "")


def connect_error(exc: pymysql.err.OperationalError, settings: Settings, target: str) -> AcpError | None:
    """A connection that never opened, in words built from the parsed, non-secret parts (the
    server's and the driver's text quotes the user, host and port it was given); None for a server
    error after the login, which the translation table words."""
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
    if code in (1044, 1049) and target != settings.database:
        return ResourceNotFound(
            f"No database '{target}' that this user can read. Call autocontext without arguments to list the databases."
        )
    if code in (1045, 1698):
        sent = "with a password" if settings.password else "without a password"
        return CredentialsInvalid(
            f"MySQL denied access to user {settings.user} ({sent}). Ask the user to check the user, password and "
            "the hosts that user may connect from."
        )
    if code == 1044:
        return CredentialsInvalid(
            f"MySQL denied this user the database {target}. Ask the user for credentials with access to it."
        )
    if code == 1049:
        return ResourceNotFound(f"MySQL has no database {target}. Ask the user to check the database name.")
    if code == 2026 or "ssl" in str(exc).lower():
        return CredentialsInvalid(
            f"The TLS connection to MySQL at {settings.host}:{settings.port} failed. Ask the user to check "
            "ssl_mode and ssl_ca."
        )
    if code >= 2000 or code == 0:
        return UpstreamError(
            f"Cannot reach the MySQL server at {settings.host}:{settings.port}. Try again; if it persists, ask the "
            "user to check the server, host and port."
        )
    return None


# -- the engine -------------------------------------------------------------------------------------------
class MysqlEngine(Engine):
    name = "mysql"
    title = "MySQL"
    dialect = DIALECT  # sqlglot's MySQL, writing SQL that MariaDB runs too (dialect_mariadb)
    has_schemas = False  # a MySQL database is a schema
    catalog_schemas = frozenset({"information_schema", "mysql", "performance_schema", "sys"})
    text_types = ("char", "text", "enum", "set(")
    function_list = "mariadb"
    columns_named_by_text = True
    forbidden_relations = FORBIDDEN_RELATIONS

    def check_sql(self, sql: str, allowed_functions: Iterable[str] = ()) -> CheckedQuery:
        check_sql_size(sql)  # before the server's own lexing rules read it
        check_mysql_specifics(sql)
        return super().check_sql(sql, allowed_functions)

    def identify(self, credentials: dict[str, Any]) -> Principal:
        settings = settings_of(credentials)
        found = [settings.password] if settings.password else []
        dsn = credentials.get("dsn")
        if isinstance(dsn, str) and dsn:
            found += [dsn, *userinfo_secrets(dsn)]  # the password as written (percent-encoded), and its pieces
        return Principal(identity=settings.identity, secrets=tuple(found))

    def default_database(self, credentials: dict[str, Any]) -> str:
        return settings_of(credentials).database

    def connect(self, credentials: dict[str, Any], database: str | None, write: bool = False) -> Connection:
        settings = settings_of(credentials)
        target = database or settings.database
        try:
            return MysqlConnection(settings, target, write=write)
        except pymysql.err.OperationalError as exc:
            failure = connect_error(exc, settings, target)
            if failure is None:
                raise
            raise failure from None

    def translate(self, exc: BaseException) -> AcpError | None:
        return translate(exc)


_UNREACHABLE = (
    "Cannot reach the MySQL server ({message}). Try again; if it persists, ask the user to check the server, "
    "host and port."
)
_WRITE_COMMANDS = ("INSERT", "UPDATE", "DELETE", "DROP", "CREATE", "ALTER", "INDEX", "REFERENCES", "TRIGGER", "LOCK")


def _denies_a_write(failure: Failure) -> bool:
    """ER_TABLEACCESS_DENIED_ERROR names the commands refused: "INSERT, UPDATE command denied …"."""
    commands = {c.strip().upper() for c in failure.message.split(" command denied", 1)[0].split(",")}
    return bool(commands & set(_WRITE_COMMANDS))


# Keyed on the server's error number (client errors are 2000 and up).
_RULES = (
    Rule.fixed(STATEMENT_TIMED_OUT, classes=(TimeBudgetExceeded,)),
    Rule(
        CredentialsInvalid,
        "The TLS connection to MySQL failed ({message}). Ask the user to check ssl_mode and ssl_ca.",
        classes=(ssl.SSLError,),
    ),
    Rule(
        CredentialsInvalid,
        "MySQL rejected the login ({message}). Ask the user to check the user, password and allowed hosts.",
        codes=(1045, 1698),
    ),
    Rule(
        CredentialsInvalid,
        "MySQL denied this user the database ({message}). Ask the user for credentials with access to it, "
        "or pick another database.",
        codes=(1044,),
    ),
    Rule(
        ResourceNotFound,
        "MySQL: {message}. Call autocontext without arguments to list the databases.",
        codes=(1049,),
    ),
    Rule(
        ReadOnlyViolation,
        "This ACP is read-only: MySQL refused the statement ({message}). Rewrite it as a single SELECT.",
        codes=(1792,),
    ),
    Rule.fixed(STATEMENT_TIMED_OUT, codes=(1969, 3024)),
    Rule(
        UpstreamError,
        "The query was interrupted (the call was cancelled or timed out). Call again if needed.",
        codes=(1317,),
    ),
    Rule(
        ReadOnlyViolation,
        "MySQL refused the write ({message}): the database user has no privilege for it. "
        "Ask the user to change the grants or the source's access settings if this write is intended.",
        codes=(1142, 1143),
        when=_denies_a_write,
    ),
    Rule(
        InvalidArguments,
        "MySQL: {message}. The table does not exist or this database user cannot read it; call autocontext "
        "with this database to see the tables it can query.",
        codes=(1142, 1143),
    ),
    Rule(  # LOAD DATA LOCAL: the client never sends its files
        ReadOnlyViolation,
        "This ACP is read-only: LOAD DATA is not allowed, and this client never sends local files. "
        "Rewrite the query as a single SELECT.",
        codes=(1148, 3948, 4166),
    ),
    Rule(
        ReadOnlyViolation,
        "This ACP is read-only: MySQL refused the statement for lack of privilege ({message}). "
        "Rewrite it as a single SELECT.",
        codes=(1227, 1290, 1095, 1370),
    ),
    Rule(
        InvalidArguments,
        "MySQL: {message}. Call autocontext with this database to see its tables and columns, then fix the query.",
        codes=(1146, 1054, 1305, 1109),
    ),
    Rule(
        InvalidArguments,
        "MySQL rejected the SQL: {message}. Fix the syntax (MySQL dialect) and call again.",
        codes=(1064,),
    ),
    Rule(UpstreamError, _UNREACHABLE, codes=(2003, 2005, 2006, 2013, 2002, 2055)),
    Rule(UpstreamError, _UNREACHABLE, classes=(pymysql.err.InterfaceError,)),
    Rule(
        CredentialsInvalid,
        "MySQL TLS failed ({message}). Ask the user to check ssl_mode and ssl_ca.",
        codes=(2026,),
    ),
    Rule(
        UpstreamError,
        "MySQL is busy ({message}). Try again in a moment.",
        codes=(1040, 1203, 1205, 1213, 1226),
    ),
    Rule(
        InvalidArguments,
        "MySQL rejected the values: {message}. Fix the rows or the table and call again.",
        classes=(pymysql.err.IntegrityError, pymysql.err.DataError),
    ),
    Rule(
        InvalidArguments,
        "MySQL rejected the query: {message}. Fix it and call again.",
        classes=(pymysql.err.ProgrammingError, pymysql.err.OperationalError, pymysql.err.InternalError),
        when=lambda failure: isinstance(failure.code, int) and 1000 <= failure.code < 2000,  # the server's errors
    ),
    Rule(UpstreamError, "MySQL failed: {message}. Try again or simplify the query."),
)


def translate(exc: BaseException) -> AcpError | None:
    """MySQL and MariaDB errors as ACP errors with a next step (this engine's translation table)."""
    if isinstance(exc, pymysql.err.MySQLError):
        code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
        message = str(exc.args[1]) if len(exc.args) > 1 else str(exc)
        return first_match(_RULES, Failure(exc, message, code=code))
    if isinstance(exc, ssl.SSLError):
        return first_match(_RULES, Failure(exc, str(exc.reason or exc)))
    if isinstance(exc, TimeBudgetExceeded):
        return first_match(_RULES, Failure(exc, str(exc)))
    return None


__all__ = ["ENGINE", "MysqlConnection", "MysqlEngine", "Settings", "check_mysql_specifics", "settings_of"]

ENGINE = MysqlEngine()
