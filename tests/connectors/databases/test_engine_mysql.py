"""The MySQL/MariaDB engine of the databases connector, over stdio against a real server.

Every connector call goes through ``python -m connectors.databases`` and the real ``pymysql``
driver; every expectation is computed with direct ``pymysql`` queries as root (see
``mysql_server.py``) or taken from the spec. The module's databases and least-privilege user
are created for it and dropped at the end.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pymysql
import pytest
from host_tables import StaticTable, StaticTables
from loader import load_file

from connectors.databases import engine_mysql
from connectors.databases.engine_mysql import ENGINE, check_mysql_specifics
from shared import CredentialsInvalid, InvalidArguments, ReadOnlyViolation, ResourceNotFound, UpstreamError
from shared._tablefiles import TableFiles
from shared.host import AcpHost, ToolResponse, uri_path
from shared.tables import SampleBudget, TableWriter

pytestmark = pytest.mark.slow  # the real MariaDB server

# The server helper next to this file (test folders are not packages).
mysql_server = load_file(Path(__file__).with_name("mysql_server.py"), "acp_tests_databases_mysql_server")
mysql_database = mysql_server.mysql_database  # the module-scoped fixture

RO = ("ACP_READ_ONLY_VIOLATION", -32019)
INVALID = "ACP_INVALID_ARGUMENTS"
UPSTREAM = "ACP_UPSTREAM_ERROR"
VISIBLE_TABLES = ["big_orders", "customers", "notes", "order_items", "orders", "typed_values"]  # not payroll


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("mysql-runtime")
    return {"ACP_CACHE_DIR": str(root / "cache"), "ACP_TMP_DIR": str(root / "tmp")}


@asynccontextmanager
async def started(runtime: dict[str, str], **kwargs: Any) -> AsyncIterator[AcpHost]:
    async with AcpHost.for_module("databases", env=dict(runtime), **kwargs) as host:
        yield host


async def sql_call(host: AcpHost, db: Any, text: str, resource: str | None = None, **meta: Any) -> ToolResponse:
    return await host.call("execute_sql", {"resource_id": resource or db.name, "sql": text}, db.meta(**meta))


def everything_in(response: ToolResponse) -> str:
    """The whole answer as text: the JSON-RPC result and any table file it points to."""
    text = json.dumps(response.raw)
    data = response.system_data or {}
    if data.get("format") == "file":
        text += uri_path(str(data["table_uri"])).read_text("utf-8")
    return text


def _error(response: ToolResponse) -> tuple[str | None, int | None]:
    error = response.error or {}
    return error.get("name"), error.get("code")


def expected_cell(value: Any, json_column: bool = False) -> Any:
    """A direct pymysql value as the connector must deliver it (exact numbers as Decimal)."""
    if value is None:
        return None
    if json_column:
        return json.loads(value, parse_float=Decimal)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def _exact(value: Any) -> Any:
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, dict):
        return {k: _exact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_exact(v) for v in value]
    return value


def exact(response: ToolResponse) -> list[dict[str, Any]]:
    """Every row, numbers as exact Decimals whether the table came inline or as a file."""
    return [_exact(row) for row in response.rows(exact=True)]


def expected_rows(db: Any, sql: str, json_columns: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    return [{k: expected_cell(v, k in json_columns) for k, v in row.items()} for row in db.query(sql)]


# =====================================================================================================
# Write-attempt corpus (spec 10.4), as the least-privilege user and as root
# =====================================================================================================
# Placeholders: {db} the test database, {user} the least-privilege user, {f1}…{f4} files in the
# folder where the server may write (secure_file_priv, or /tmp when it is unset).
WRITE_ATTEMPTS: list[tuple[str, str]] = [
    # data
    ("insert", "INSERT INTO customers (id, name, country, created_at) VALUES (999, 'Eve', 'ES', NOW())"),
    ("update", "UPDATE orders SET amount = 0"),
    ("delete", "DELETE FROM orders"),
    ("replace", "REPLACE INTO customers (id, name, country, created_at) VALUES (1, 'Eve', 'ES', NOW())"),
    ("insert-ignore", "INSERT IGNORE INTO notes (id, body) VALUES (1, 'x')"),
    ("insert-on-duplicate-key", "INSERT INTO notes (id, body) VALUES (1, 'x') ON DUPLICATE KEY UPDATE body = 'evil'"),
    ("insert-select", "INSERT INTO notes (id, body) SELECT id + 100, name FROM customers"),
    ("insert-qualified", "INSERT INTO {db}.notes (id, body) VALUES (77, 'x')"),
    ("update-join", "UPDATE orders o JOIN customers c ON c.id = o.customer_id SET o.amount = 0"),
    ("delete-join", "DELETE o FROM order_items o JOIN orders r ON r.id = o.order_id"),
    ("delete-returning", "DELETE FROM notes RETURNING id"),
    ("with-delete", "WITH x AS (SELECT 1 AS id) DELETE FROM notes WHERE id IN (SELECT id FROM x)"),
    ("with-update", "WITH x AS (SELECT 1 AS id) UPDATE notes SET body = 'evil' WHERE id IN (SELECT id FROM x)"),
    ("data-modifying-cte", "WITH d AS (DELETE FROM notes RETURNING id) SELECT * FROM d"),
    # schema
    ("create-table", "CREATE TABLE evil (x INT)"),
    ("create-table-as", "CREATE TABLE evil AS SELECT * FROM orders"),
    ("create-temporary-table", "CREATE TEMPORARY TABLE evil (x INT)"),
    ("create-index", "CREATE INDEX evil_idx ON orders (amount)"),
    ("create-view", "CREATE VIEW evil_view AS SELECT 1 AS one"),
    ("create-or-replace-view", "CREATE OR REPLACE VIEW big_orders AS SELECT 1 AS id"),
    ("create-database", "CREATE DATABASE {db}_evil"),
    ("create-trigger", "CREATE TRIGGER evil_trg BEFORE INSERT ON notes FOR EACH ROW SET NEW.body = 'evil'"),
    ("create-procedure", "CREATE PROCEDURE evil_proc() DELETE FROM notes"),
    ("create-event", "CREATE EVENT evil_event ON SCHEDULE EVERY 1 SECOND DO DELETE FROM notes"),
    ("drop-table", "DROP TABLE notes"),
    ("drop-view", "DROP VIEW big_orders"),
    ("drop-database", "DROP DATABASE {db}"),
    ("alter-add-column", "ALTER TABLE orders ADD COLUMN evil INT"),
    ("alter-engine", "ALTER TABLE notes ENGINE = InnoDB"),
    ("truncate", "TRUNCATE TABLE notes"),
    ("rename-table", "RENAME TABLE notes TO notes_old"),
    ("optimize", "OPTIMIZE TABLE notes"),
    ("repair", "REPAIR TABLE notes"),
    # accounts and server
    ("grant", "GRANT ALL PRIVILEGES ON *.* TO '{user}'@'%'"),
    ("create-user", "CREATE USER acp_evil_user IDENTIFIED BY 'x'"),
    ("set-password", "SET PASSWORD = PASSWORD('evil')"),
    ("set-global", "SET GLOBAL max_connections = 1"),
    ("set-session-timeout", "SET SESSION max_statement_time = 0"),
    ("set-statement-for", "SET STATEMENT max_statement_time = 0 FOR SELECT SLEEP(100)"),
    ("flush", "FLUSH PRIVILEGES"),
    ("install-soname", "INSTALL SONAME 'ha_blackhole'"),
    ("kill", "KILL CONNECTION 1"),
    ("shutdown", "SHUTDOWN"),
    ("use-database", "USE mysql"),
    # files
    ("into-outfile", "SELECT * FROM orders INTO OUTFILE '{f1}'"),
    ("into-outfile-before-from", "SELECT id, amount INTO OUTFILE '{f2}' FROM orders"),
    ("into-dumpfile", "SELECT name FROM customers LIMIT 1 INTO DUMPFILE '{f3}'"),
    ("into-variable", "SELECT COUNT(*) INTO @n FROM orders"),
    ("load-data", "LOAD DATA INFILE '/etc/passwd' INTO TABLE notes"),
    ("load-data-local", "LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE notes"),
    ("load-xml", "LOAD XML INFILE '/etc/passwd' INTO TABLE notes"),
    ("load-file", "SELECT LOAD_FILE('/etc/passwd') AS secret"),
    ("load-file-in-subquery", "SELECT id FROM customers WHERE name = (SELECT LOAD_FILE('/etc/hostname'))"),
    ("load-file-backticks", "SELECT `load_file`('/etc/passwd') AS secret"),
    ("load-file-hex-path", "SELECT LOAD_FILE(0x2f6574632f706173737764) AS secret"),
    ("load-file-in-convert", "SELECT CONVERT(LOAD_FILE('/etc/passwd') USING utf8mb4) AS secret"),
    ("binlog-gtid-pos", "SELECT BINLOG_GTID_POS('mysql-bin.000001', 4)"),
    # transactions and several statements
    ("commit-then-drop", "COMMIT; DROP TABLE notes"),
    ("rollback-then-delete", "ROLLBACK; DELETE FROM notes"),
    ("select-then-drop", "SELECT 1; DROP TABLE notes"),
    ("select-then-outfile", "SELECT 1; SELECT 2 INTO OUTFILE '{f4}'"),
    ("start-transaction", "START TRANSACTION READ WRITE"),
    ("begin", "BEGIN"),
    ("commit", "COMMIT"),
    ("set-transaction-read-write", "SET SESSION TRANSACTION READ WRITE"),
    ("savepoint", "SAVEPOINT s1"),
    ("xa-start", "XA START 'evil'"),
    ("lock-tables", "LOCK TABLES notes WRITE"),
    ("begin-not-atomic", "BEGIN NOT ATOMIC DELETE FROM notes; END"),
    # executable comments: parsers see a comment, the server runs the content
    ("executable-comment-drop", "/*!50000 DROP TABLE notes */"),
    ("executable-comment-plain", "/*! DROP TABLE notes */"),
    ("executable-comment-create", "/*!50000 CREATE TABLE evil (x INT) */"),
    ("executable-comment-mariadb", "/*M!100000 DROP TABLE notes */"),
    ("executable-comment-in-select", "SELECT 1 /*!, (SELECT COUNT(*) FROM payroll) */"),
    ("executable-comment-into-outfile", "SELECT 1 /*!50000 INTO OUTFILE '{f1}' */"),
    ("executable-comment-after-dashes", "SELECT 2--/*!50000 1 INTO OUTFILE '{f2}' */"),
    ("executable-comment-lowercase-m", "/*m!100000 DROP TABLE notes */"),
    # hidden after comments and semicolons
    ("block-comment-then-delete", "/* c */ DELETE FROM notes"),
    ("line-comment-then-delete", "-- c\nDELETE FROM notes"),
    ("hash-comment-then-delete", "# c\nDELETE FROM notes"),
    ("comment-hiding-semicolon", "SELECT 1 /* ; */ ; DELETE FROM notes"),
    ("string-hiding-semicolon", "SELECT ';'; DROP TABLE notes"),
    # unicode and case
    ("mixed-case", "dElEtE fRoM notes"),
    ("backtick-identifier", "DELETE FROM `notes`"),
    ("whitespace-and-semicolon", "  \n\t DELETE FROM notes  ;  "),
    ("no-break-space", "DELETE\u00a0FROM notes"),
    ("zero-width-space", "DELETE\u200bFROM notes"),
    ("fullwidth-letters", "\uff24\uff25\uff2c\uff25\uff34\uff25 FROM notes"),
    # locking reads, side-effect functions, other statements
    ("for-update", "SELECT * FROM orders FOR UPDATE"),
    ("lock-in-share-mode", "SELECT * FROM orders LOCK IN SHARE MODE"),
    ("for-update-in-subquery", "SELECT * FROM customers WHERE id IN (SELECT customer_id FROM orders FOR UPDATE)"),
    ("get-lock", "SELECT GET_LOCK('acp_corpus', 10)"),
    ("release-all-locks", "SELECT RELEASE_ALL_LOCKS()"),
    ("release-lock", "SELECT RELEASE_LOCK('acp_corpus')"),
    ("master-gtid-wait", "SELECT MASTER_GTID_WAIT('0-1-1', 0.1)"),
    ("wsrep-sync-wait", "SELECT WSREP_SYNC_WAIT_UPTO_GTID('0-1-1')"),
    ("sys-exec", "SELECT sys_exec('touch {f1}')"),
    ("spider-direct-sql", "SELECT spider_direct_sql('DROP TABLE notes', 'tmp', 'srv \"x\"')"),
    # information_schema tables whose read resets InnoDB statistics
    ("innodb-cmp-reset", "SELECT * FROM information_schema.INNODB_CMP_RESET"),
    ("innodb-cmpmem-reset", "SELECT * FROM information_schema.innodb_cmpmem_reset"),
    ("innodb-cmp-per-index-reset", "SELECT * FROM INFORMATION_SCHEMA.`INNODB_CMP_PER_INDEX_RESET`"),
    ("benchmark", "SELECT BENCHMARK(1000000000, MD5('x'))"),
    ("sleep", "SELECT SLEEP(100)"),
    ("is-free-lock", "SELECT IS_FREE_LOCK('acp_corpus')"),
    ("handler-open", "HANDLER notes OPEN"),
    ("handler-read", "HANDLER notes READ FIRST"),
    ("do-sleep", "DO SLEEP(100)"),
    ("call", "CALL evil_proc()"),
    ("prepare", "PREPARE s FROM 'DROP TABLE notes'"),
    ("execute-immediate", "EXECUTE IMMEDIATE 'DROP TABLE notes'"),
    ("next-value-for", "SELECT NEXT VALUE FOR invoice_numbers"),
    ("nextval", "SELECT NEXTVAL(invoice_numbers)"),
    ("setval", "SELECT SETVAL(invoice_numbers, 5000)"),
]
# Runs far longer than any timeout here on allowed functions alone (SLEEP is refused).
LONG_QUERY = (
    "SELECT COUNT(*) AS {marker} FROM information_schema.COLUMNS a, information_schema.COLUMNS b, "
    "information_schema.COLUMNS c"
)
SLOW_ATTEMPTS: list[tuple[str, str]] = [("long-query", LONG_QUERY.format(marker="acp_long"))]
CORPUS_TIMEOUT_S = 1
FINAL_SELECT = (
    "SELECT c.name, COUNT(o.id) AS orders, SUM(o.amount) AS total FROM customers c "
    "LEFT JOIN orders o ON o.customer_id = c.id GROUP BY c.id, c.name ORDER BY c.id"
)
ROLES = ("reader", "root")


@dataclass
class CorpusRun:
    sql: dict[str, str]
    targets: list[Path]
    responses: dict[str, dict[str, ToolResponse]]  # role → label → response
    elapsed: dict[str, dict[str, float]]
    finals: dict[str, ToolResponse]
    locks_free: dict[str, Any]
    state_before: dict[str, Any]
    state_after: dict[str, Any]
    files_before: set[str]
    files_after: set[str]
    files_seen_by_server: dict[str, bool]


def _listing(folder: Path, token: str) -> set[str]:
    try:
        return {name for name in os.listdir(folder) if token in name}
    except OSError:
        return set()


@pytest.fixture(scope="module")
def corpus_run(mysql_database: Any, runtime: dict[str, str]) -> CorpusRun:
    """Run every attempt through one server over stdio per role, snapshotting before and after."""
    db = mysql_database
    token = f"acp-mysql-corpus-{secrets.token_hex(4)}"
    targets = [db.file_dir / f"{token}-{i}.txt" for i in range(1, 5)]
    values = {"db": db.name, "user": db.user, **{f"f{i}": str(p) for i, p in enumerate(targets, 1)}}
    sql = {label: template.format(**values) for label, template in WRITE_ATTEMPTS + SLOW_ATTEMPTS}
    state_before, files_before = db.state(), _listing(db.file_dir, token)
    responses: dict[str, dict[str, ToolResponse]] = {}
    elapsed: dict[str, dict[str, float]] = {}
    finals: dict[str, ToolResponse] = {}
    locks_free: dict[str, Any] = {}

    async def attack(role: str) -> None:
        meta = db.meta(root=role == "root", config={"statement_timeout_s": CORPUS_TIMEOUT_S})
        answers, times = responses.setdefault(role, {}), elapsed.setdefault(role, {})
        async with started(runtime) as host:
            for label, text in sql.items():
                began = time.monotonic()
                answers[label] = await host.call("execute_sql", {"resource_id": db.name, "sql": text}, meta)
                times[label] = time.monotonic() - began
            # While the connector's pooled connections are still open: no named lock is held.
            locks_free[role] = db.scalar("SELECT IS_FREE_LOCK('acp_corpus')")
            finals[role] = await host.call("execute_sql", {"resource_id": db.name, "sql": FINAL_SELECT}, meta)

    try:
        for role in ROLES:
            anyio.run(attack, role)
        state_after, files_after = db.state(), _listing(db.file_dir, token)
        seen = {str(p): db.server_sees_file(p) for p in targets}
    finally:
        for path in targets:  # never leave a file behind, even when a test is about to fail
            if path.exists():
                path.unlink()
    return CorpusRun(
        sql=sql, targets=targets, responses=responses, elapsed=elapsed, finals=finals, locks_free=locks_free,
        state_before=state_before, state_after=state_after, files_before=files_before, files_after=files_after,
        files_seen_by_server=seen,
    )  # fmt: skip


def test_corpus_is_large_enough() -> None:
    labels = [label for label, _ in WRITE_ATTEMPTS + SLOW_ATTEMPTS]
    assert len(WRITE_ATTEMPTS) >= 40
    assert len(labels) == len(set(labels))


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("label", [label for label, _ in WRITE_ATTEMPTS])
def test_write_attempt_is_a_read_only_violation(corpus_run: CorpusRun, label: str, role: str) -> None:
    response = corpus_run.responses[role][label]
    assert response.is_error and response.kind == "error"
    assert _error(response) == RO, (corpus_run.sql[label], response.error)
    assert response.model_response == {"error": response.error}  # spec 12.1: the model sees the same error


@pytest.mark.parametrize("role", ROLES)
def test_a_long_query_is_stopped_by_the_statement_timeout(corpus_run: CorpusRun, role: str) -> None:
    response = corpus_run.responses[role]["long-query"]
    assert response.error_name == UPSTREAM, response.error
    assert "statement_timeout_s" in response.error["message"]
    assert corpus_run.elapsed[role]["long-query"] >= CORPUS_TIMEOUT_S  # the timeout did not fire early


@pytest.mark.parametrize(
    ("label", "names"),
    [("executable-comment-drop", "executable comments"), ("into-outfile", "select … into"),
     ("load-data", "statement is load)"), ("handler-open", "statement is handler)"), ("for-update", "for update"),
     ("get-lock", "get_lock()"), ("select-then-drop", "one query per call"), ("do-sleep", "statement is do)"),
     ("lock-in-share-mode", "lock in share mode"), ("next-value-for", "next value for")],
)  # fmt: skip
def test_refusal_names_what_was_refused(corpus_run: CorpusRun, label: str, names: str) -> None:
    assert names in corpus_run.responses["reader"][label].error["message"].lower()


def test_every_table_checksum_is_unchanged(corpus_run: CorpusRun, mysql_database: Any) -> None:
    before, after = corpus_run.state_before, corpus_run.state_after
    assert set(before["checksums"]) == set(mysql_database.base_tables()) >= {"customers", "orders", "notes"}
    assert all(checksum is not None for checksum, _ in before["checksums"].values())
    assert after["checksums"] == before["checksums"]
    assert after["scratch_checksums"] == before["scratch_checksums"]


def test_no_object_database_user_or_grant_appeared(corpus_run: CorpusRun) -> None:
    before, after = corpus_run.state_before, corpus_run.state_after
    assert {row[0] for row in before["objects"]} == set(VISIBLE_TABLES) | {"payroll"} | (
        {"invoice_numbers"} if "sequence" in before else set()
    )
    for key in ("objects", "definitions", "routines", "triggers", "events", "indexes", "databases", "users",
                "grants", "globals", "sequence"):  # fmt: skip
        assert after.get(key) == before.get(key), key


def test_no_response_carries_the_contents_of_a_load_file_target(corpus_run: CorpusRun, mysql_database: Any) -> None:
    # The files as the server reads them (root, secure_file_priv unset): a leak would be visible.
    passwd = mysql_database.scalar("SELECT LOAD_FILE('/etc/passwd')").decode()
    lines = [line for line in passwd.splitlines() if len(line) >= 8]
    assert lines
    for role, answers in corpus_run.responses.items():
        for label, response in answers.items():
            text = everything_in(response)
            leaked = [line for line in lines if line in text or json.dumps(line)[1:-1] in text]
            assert not leaked, (role, label, leaked[:1])


def test_no_file_was_written(corpus_run: CorpusRun) -> None:
    assert corpus_run.files_before == set()
    assert corpus_run.files_after == set()
    assert corpus_run.files_seen_by_server == {str(p): False for p in corpus_run.targets}


def test_no_named_lock_is_held_after_the_corpus(corpus_run: CorpusRun) -> None:
    assert corpus_run.locks_free == {"reader": 1, "root": 1}


def test_the_state_snapshot_sees_writes(mysql_database: Any) -> None:
    """The before/after comparison above is not vacuous: a row, a database or a user shows."""
    db = mysql_database
    before = db.state()
    admin = mysql_server.admin_connect(db.scratch)
    try:
        with admin.cursor() as cur:
            cur.execute("INSERT INTO events VALUES (2, 'probe', NULL)")
            cur.execute(f"CREATE DATABASE {db.name}_evil")
            cur.execute("CREATE USER acp_evil_user IDENTIFIED BY 'x'")
        changed = db.state()
    finally:
        with admin.cursor() as cur:
            cur.execute("DELETE FROM events WHERE id = 2")
            cur.execute(f"DROP DATABASE IF EXISTS {db.name}_evil")
            cur.execute("DROP USER IF EXISTS acp_evil_user")
        admin.close()
    assert {k for k in before if before[k] != changed[k]} == {"scratch_checksums", "databases", "users"}
    assert db.state() == before


@pytest.mark.parametrize("role", ROLES)
def test_server_still_serves_a_select_after_the_corpus(corpus_run: CorpusRun, mysql_database: Any, role: str) -> None:
    final = corpus_run.finals[role]
    assert not final.is_error, final.error
    expected = expected_rows(mysql_database, FINAL_SELECT)
    assert len(expected) == mysql_server.CUSTOMERS
    assert exact(final) == expected


# -- why each layer is there: facts about this server (direct connections as root) ------------------
@pytest.fixture
def control_database(mysql_database: Any) -> Any:
    name = f"{mysql_database.name}_ctl"
    admin = mysql_server.admin_connect()
    try:
        with admin.cursor() as cur:
            cur.execute(f"CREATE DATABASE {name}")
        yield name
    finally:
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.close()


def _tables_of(database: str) -> list[str]:
    admin = mysql_server.admin_connect()
    try:
        with admin.cursor() as cur:
            cur.execute("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s", (database,))
            return sorted(r[0] for r in cur.fetchall())
    finally:
        admin.close()


def test_server_fact_ddl_in_an_executable_comment_runs_inside_a_read_only_transaction(
    control_database: str,
) -> None:
    """Why executable comments are refused by the parser layer: the transaction does not stop DDL."""
    conn = mysql_server.admin_connect(control_database, autocommit=False)
    try:
        with conn.cursor() as cur:
            cur.execute("START TRANSACTION READ ONLY")
            with pytest.raises(pymysql.err.OperationalError) as refused:
                cur.execute("INSERT INTO mysql.user (Host) VALUES ('x')")
            assert refused.value.args[0] == 1792  # DML: refused by the transaction
            cur.execute("/*!50000 CREATE TABLE ddl_ran (x INT) */")  # DDL: runs (implicit commit)
            conn.rollback()
    finally:
        conn.close()
    assert _tables_of(control_database) == ["ddl_ran"]


def test_session_read_only_default_stops_that_ddl(control_database: str) -> None:
    """The engine's second layer, on its own: the session default covers the implicit transaction."""
    conn = mysql_server.admin_connect(control_database, autocommit=False)
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION TRANSACTION READ ONLY")
            cur.execute("START TRANSACTION READ ONLY")
            with pytest.raises(pymysql.err.OperationalError) as refused:
                cur.execute("/*!50000 CREATE TABLE ddl_ran (x INT) */")
            assert refused.value.args[0] == 1792
            conn.rollback()
    finally:
        conn.close()
    assert _tables_of(control_database) == []


def test_server_fact_several_statements_run_only_with_the_multi_statements_flag(control_database: str) -> None:
    """Why the connector never sets CLIENT.MULTI_STATEMENTS (the driver layer)."""
    flagged = mysql_server.admin_connect(control_database, client_flag=pymysql.constants.CLIENT.MULTI_STATEMENTS)
    try:
        with flagged.cursor() as cur:
            cur.execute("SELECT 1; CREATE TABLE via_flag (x INT)")
            while cur.nextset():
                pass
    finally:
        flagged.close()
    assert _tables_of(control_database) == ["via_flag"]
    conn = ENGINE.connect({**mysql_server_root_credentials(), "database": control_database}, None)
    try:
        with pytest.raises(pymysql.err.ProgrammingError) as refused:
            conn.stream("SELECT 1; DROP TABLE via_flag", _writer(), schema=None, timeout_s=5)
        assert refused.value.args[0] == 1064
        assert isinstance(ENGINE.translate(refused.value), InvalidArguments)
    finally:
        conn.close()
    assert _tables_of(control_database) == ["via_flag"]


def test_server_fact_root_may_write_files_where_secure_file_priv_allows(mysql_database: Any) -> None:
    """Why INTO OUTFILE is refused by the parser layer: root (FILE) writes where the server may."""
    db = mysql_database
    target = db.file_dir / f"acp-mysql-control-{secrets.token_hex(4)}.txt"
    setting = db.scalar("SELECT @@GLOBAL.secure_file_priv")
    admin = mysql_server.admin_connect()
    try:
        with admin.cursor() as cur:
            code = 0
            try:
                cur.execute(f"SELECT 'control' INTO OUTFILE '{target}'")
            except pymysql.err.MySQLError as exc:
                code = exc.args[0]
            written = code == 0
            assert code in (0, 1290, 1045, 1227, 1)  # written, or refused by secure_file_priv or OS permissions
        if db.mariadb and setting is None:
            assert written and db.server_sees_file(target)  # NULL on MariaDB: no restriction at all
    finally:
        admin.close()
        if target.exists():
            target.unlink()


# -- the engine layers on their own, in-process and without the parser -----------------------------------
def mysql_server_root_credentials() -> dict[str, Any]:
    return {
        "type": "mysql", "host": mysql_server.HOST, "port": mysql_server.PORT, "user": mysql_server.ROOT,
        "password": mysql_server.ROOT_PASSWORD,
    }  # fmt: skip


def _writer(tmp: Path | None = None, max_rows: int | None = None) -> TableWriter:
    folder = tmp or Path(os.environ.get("TMPDIR", "/tmp"))
    files = TableFiles("acp-test-mysql", str(folder))
    return TableWriter("result", budget=SampleBudget(10, 0, 10**7), files=files, max_rows=max_rows)


# Single statements the server parses: data, schema, accounts, sequences and several statements.
# File writes (INTO OUTFILE) and functions are left out for root: only the parser layer stops those.
ROOT_ENGINE_WRITES = [
    (label, sql)
    for label, sql in WRITE_ATTEMPTS
    if label in {
        "insert", "update", "delete", "replace", "insert-ignore", "insert-on-duplicate-key", "insert-select",
        "insert-qualified", "update-join", "delete-join", "delete-returning", "create-table", "create-table-as",
        "create-temporary-table", "create-index", "create-view", "create-or-replace-view", "create-database",
        "create-trigger", "create-procedure", "drop-table", "drop-view", "alter-add-column", "alter-engine",
        "truncate", "rename-table", "grant", "create-user", "set-password", "executable-comment-drop",
        "executable-comment-create", "executable-comment-mariadb", "commit-then-drop", "rollback-then-delete",
        "select-then-drop", "string-hiding-semicolon", "comment-hiding-semicolon", "mixed-case",
        "hash-comment-then-delete", "for-update", "next-value-for", "setval", "load-data-local",
    }
]  # fmt: skip
# As the least-privilege user, file reads and writes are refused for lack of privilege too.
READER_ENGINE_WRITES = ROOT_ENGINE_WRITES + [
    (label, sql)
    for label, sql in WRITE_ATTEMPTS
    if label in {"into-outfile", "into-dumpfile", "load-data", "load-xml", "executable-comment-into-outfile",
                 "executable-comment-after-dashes", "drop-database", "create-event", "set-global", "flush",
                 "shutdown", "lock-tables", "use-database", "call", "execute-immediate"}
]  # fmt: skip


def test_engine_corpora_cover_every_kind_of_write() -> None:
    assert len(ROOT_ENGINE_WRITES) >= 40 and len(READER_ENGINE_WRITES) > len(ROOT_ENGINE_WRITES)
    labels = {label for label, _ in READER_ENGINE_WRITES}
    assert {"insert", "create-table", "grant", "select-then-drop", "into-outfile", "executable-comment-drop"} <= labels


@pytest.mark.parametrize("role", ROLES)
def test_engine_layers_refuse_writes_without_the_parser(mysql_database: Any, role: str, tmp_path: Path) -> None:
    db = mysql_database
    corpus = ROOT_ENGINE_WRITES if role == "root" else READER_ENGINE_WRITES
    token = f"acp-mysql-engine-{secrets.token_hex(4)}"
    targets = {f"f{i}": str(db.file_dir / f"{token}-{i}.txt") for i in range(1, 5)}
    before = db.state()
    outcomes = {}
    try:
        for label, template in corpus:
            conn = ENGINE.connect(db.credentials(root=role == "root"), None)
            try:
                conn.stream(
                    template.format(db=db.name, user=db.user, **targets), _writer(tmp_path), schema=None, timeout_s=5
                )
                outcomes[label] = "ran"
            except Exception as exc:  # the refusal, as the connector would translate it
                translated = exc if isinstance(exc, ReadOnlyViolation) else ENGINE.translate(exc)
                outcomes[label] = translated.name if translated is not None else repr(exc)
            finally:
                conn.close()
        assert db.state() == before
    finally:
        leftovers = [p for p in targets.values() if Path(p).exists()]
        for path in leftovers:
            Path(path).unlink()
    assert leftovers == []
    assert {label: o for label, o in outcomes.items() if o not in (RO[0], INVALID)} == {}
    # Data, schema and account changes are read-only violations (error 1792 or a privilege refusal).
    for label in ("insert", "update", "create-table", "drop-table", "grant", "set-password", "executable-comment-drop"):
        assert outcomes[label] == RO[0], (label, outcomes[label])
    for label in ("select-then-drop", "commit-then-drop"):  # several statements: a syntax error at the server
        assert outcomes[label] == INVALID


def test_read_connection_session_settings(mysql_database: Any) -> None:
    conn = ENGINE.connect(mysql_database.credentials(), None)
    try:
        raw = conn._raw
        assert raw is not None
        assert not raw.client_flag & pymysql.constants.CLIENT.MULTI_STATEMENTS
        assert not raw.client_flag & pymysql.constants.CLIENT.LOCAL_FILES
        variable = "tx_read_only" if mysql_database.mariadb else "transaction_read_only"
        writer = _writer()
        conn.stream(f"SELECT @@SESSION.{variable} AS ro, @@SESSION.sql_mode AS modes", writer, schema=None, timeout_s=5)
        row = writer.finish().rows[0]
        assert row["ro"] == 1
        assert "ANSI_QUOTES" not in row["modes"] and "NO_BACKSLASH_ESCAPES" not in row["modes"]
    finally:
        conn.close()


# =====================================================================================================
# The parser layer's MySQL specifics
# =====================================================================================================
@pytest.mark.parametrize(
    "sql",
    ["/*!50000 DROP TABLE t */", "SELECT 1 /*!, 2 */", "/*M!100000 DROP TABLE t */", "SELECT 1 /*!99999 x */",
     "SELECT '/*' /*!, 2 */", "SELECT 2--/*!, 3 */", "SELECT 'a\\' /*!, 2 */ '' /*!, 3 */",
     "SELECT 1 # x\n/*!, 2 */", "SELECT `a``` /*!, 2 */ FROM t"],
)  # fmt: skip
def test_executable_comments_are_refused_wherever_the_server_would_run_them(sql: str) -> None:
    with pytest.raises(ReadOnlyViolation, match="Executable comments"):
        ENGINE.check_sql(sql)


@pytest.mark.parametrize(
    "sql",
    ["SELECT id FROM t INTO OUTFILE '/tmp/x'", "HANDLER t OPEN", "LOAD DATA INFILE '/x' INTO TABLE t", "DO 1",
     "SELECT 1; SELECT 2", "SELECT * FROM t LOCK IN SHARE MODE", "SELECT NEXT VALUE FOR s"],
)  # fmt: skip
def test_forms_sqlglot_cannot_parse_are_still_refused(sql: str) -> None:
    with pytest.raises(ReadOnlyViolation):
        check_mysql_specifics(sql)


@pytest.mark.parametrize(
    ("current", "safe"),
    [("STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION", None),
     ("ANSI_QUOTES,STRICT_TRANS_TABLES", "STRICT_TRANS_TABLES"),
     ("NO_BACKSLASH_ESCAPES", ""),
     ("REAL_AS_FLOAT,PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,ONLY_FULL_GROUP_BY,ANSI",
      "REAL_AS_FLOAT,PIPES_AS_CONCAT,IGNORE_SPACE,ONLY_FULL_GROUP_BY"),
     ("PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,ORACLE,NO_KEY_OPTIONS", "PIPES_AS_CONCAT,IGNORE_SPACE,NO_KEY_OPTIONS")],
)  # fmt: skip
def test_sessions_drop_the_sql_modes_that_change_how_literals_are_lexed(current: str, safe: str | None) -> None:
    """With ANSI_QUOTES or NO_BACKSLASH_ESCAPES the server would read strings unlike the parser layer."""
    assert engine_mysql.lexing_safe_sql_mode(current) == safe


def test_timeout_hints_are_refused() -> None:
    with pytest.raises(InvalidArguments, match="MAX_EXECUTION_TIME"):
        ENGINE.check_sql("SELECT /*+ MAX_EXECUTION_TIME(999999) */ 1")
    ENGINE.check_sql("SELECT /*+ NO_INDEX_MERGE(t) */ 1 FROM t")  # other hints are fine


# Queries that only look suspicious: the parser layer lets them through and the server answers.
HARMLESS = [
    "SELECT '/*!50000 DROP TABLE notes */' AS s",
    "SELECT 'INSERT INTO x; DROP TABLE y' AS s, \"FOR UPDATE\" AS t",
    "SELECT `id` AS `into`, SUBSTRING(name FROM 1 FOR 3) AS prefix FROM customers ORDER BY id LIMIT 3",
    "WITH c AS (SELECT customer_id, COUNT(*) AS n FROM orders GROUP BY customer_id) SELECT MAX(n) AS m FROM c",
    "(SELECT id FROM customers WHERE id < 3) UNION ALL (SELECT id FROM customers WHERE id > 28) ORDER BY id",
    "SELECT 1 AS one; ",
    "SELECT 'GET_LOCK(1)' AS s, `sleep`, `load_file` FROM (SELECT 1 AS `sleep`, 2 AS `load_file`) AS t",
    "select count(*) as n from orders where note like '%;%' or note like '%/*%'",
]


@pytest.mark.anyio
async def test_harmless_look_alikes_run_and_equal_direct_queries(mysql_database: Any, runtime: dict[str, str]) -> None:
    db = mysql_database
    async with started(runtime) as host:
        for sql in HARMLESS:
            response = await sql_call(host, db, sql)
            assert not response.is_error, (sql, response.error)
            assert exact(response) == expected_rows(db, sql.rstrip("; ")), sql


# =====================================================================================================
# Results: typed headers, table files, max_rows, timeouts, cancellation
# =====================================================================================================
TYPED_SQL = "SELECT id, n_big, n_ubig, n_dec, d, dt, j, bin, flag, bits, f, t, y, e, s FROM typed_values ORDER BY id"
DIRECT_TYPED_SQL = TYPED_SQL.replace("bits, f, t,", "CAST(bits AS UNSIGNED) AS bits, f, CAST(t AS CHAR) AS t,")


@pytest.mark.anyio
async def test_headers_are_typed_from_the_driver_and_values_are_exact(
    mysql_database: Any, runtime: dict[str, str]
) -> None:
    db = mysql_database
    async with started(runtime) as host:
        response = await sql_call(host, db, TYPED_SQL)
    assert not response.is_error, response.error
    headers = {h["name"]: h["type"] for h in response.system_data["headers"]}
    assert headers == {
        "id": "integer", "n_big": "integer", "n_ubig": "integer", "n_dec": "number", "d": "date", "dt": "datetime",
        "j": "json", "bin": "string", "flag": "integer", "bits": "integer", "f": "number", "t": "string",
        "y": "integer", "e": "string", "s": "string",
    }  # fmt: skip
    rows = exact(response)
    assert rows == expected_rows(db, DIRECT_TYPED_SQL, json_columns=("j",))
    first = rows[0]
    assert first["n_dec"] == Decimal("12345678901234567890.123456789012")  # every digit, no float on the way
    assert first["n_big"] == mysql_server.BIG and first["n_ubig"] == mysql_server.UBIG
    assert first["dt"] == "2025-03-30T02:30:00.123456"  # naive stays naive
    assert rows[2]["n_big"] == 2**53 + 1  # past a double's exact integers
    assert response.system_data["format"] == "file"  # a decimal a float would change is only exact in a file
    warnings = response.system_info["warnings"]
    assert any("'bin'" in w and "base64" in w for w in warnings)


@pytest.mark.anyio
async def test_large_result_streams_to_a_table_file_equal_to_a_direct_query(
    mysql_database: Any, runtime: dict[str, str]
) -> None:
    db = mysql_database
    sql = "SELECT * FROM orders ORDER BY id"
    expected = expected_rows(db, sql, json_columns=("meta",))
    async with started(runtime) as host:
        response = await sql_call(host, db, sql, inline_max_bytes=20_000)
    assert not response.is_error, response.error
    data = response.system_data
    assert data["format"] == "file" and "table" not in data
    assert uri_path(data["table_uri"]).parent == Path(runtime["ACP_TMP_DIR"]).resolve()
    assert data["row_count"] == len(expected) == mysql_server.ORDERS == response.model_response["total_rows"]
    assert exact(response) == expected
    assert {h["name"]: h["type"] for h in data["headers"]}["meta"] == "json"
    assert response.model_response["truncated"] and len(response.model_response["rows"]) < len(expected)


@pytest.mark.anyio
async def test_max_rows_caps_with_a_warning_and_truncated_facts(mysql_database: Any, runtime: dict[str, str]) -> None:
    db = mysql_database
    sql = "SELECT id, amount FROM orders ORDER BY id"
    async with started(runtime) as host:
        capped = await sql_call(host, db, sql, config={"max_rows": 50})
        at_cap = await sql_call(host, db, "SELECT id FROM orders ORDER BY id LIMIT 50", config={"max_rows": 50})
        after = await sql_call(host, db, "SELECT COUNT(*) AS n FROM orders")
    assert not capped.is_error, capped.error
    assert capped.system_data["row_count"] == 50
    assert exact(capped) == expected_rows(db, sql + " LIMIT 50")
    assert any("max_rows" in w and "50" in w for w in capped.system_info["warnings"])
    assert capped.system_info["source"]["truncated"] is True and capped.system_info["source"]["max_rows"] == 50
    # Exactly max_rows rows is not a cut: one row more than the cap was fetched to know.
    assert at_cap.system_data["row_count"] == 50 and "truncated" not in at_cap.system_info["source"]
    assert not any("max_rows" in w for w in at_cap.system_info.get("warnings", []))
    assert after.rows() == [{"n": mysql_server.ORDERS}]  # the server keeps serving after an abandoned result


def test_a_capped_result_is_abandoned_not_drained(mysql_database: Any, tmp_path: Path) -> None:
    db = mysql_database
    marker = f"acp_cap_{secrets.token_hex(4)}"
    conn = ENGINE.connect(db.credentials(), None)
    try:
        writer = _writer(tmp_path, max_rows=10)
        conn.stream(
            f"SELECT a.id AS {marker}, b.id FROM orders a, orders b, order_items c", writer, schema=None, timeout_s=60
        )
        assert writer.capped and writer.row_count == 10
        assert not conn.alive()  # closed rather than drained of its 96 million rows; the pool opens a fresh one
    finally:
        conn.close()
    deadline = time.monotonic() + 5
    while db.processes(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert db.processes(marker) == []


@pytest.mark.anyio
async def test_statement_timeout_stops_long_queries_and_the_server_keeps_serving(
    mysql_database: Any, runtime: dict[str, str]
) -> None:
    db = mysql_database
    marker = f"acp_timeout_{secrets.token_hex(4)}"
    async with started(runtime) as host:
        began = time.monotonic()
        response = await sql_call(host, db, LONG_QUERY.format(marker=marker), config={"statement_timeout_s": 1})
        took = time.monotonic() - began
        assert response.error_name == UPSTREAM, response.error
        assert "statement_timeout_s" in response.error["message"]
        assert took >= 1, took  # the timeout did not fire early
        assert db.processes(marker) == []
        after = await sql_call(host, db, "SELECT COUNT(*) AS n FROM customers")
    assert after.rows() == [{"n": mysql_server.CUSTOMERS}]


def test_statements_that_end_ok_when_stopped_are_still_a_timeout(mysql_database: Any, tmp_path: Path) -> None:
    """DO SLEEP() ends without an error when max_statement_time stops it; its warning says so."""
    conn = ENGINE.connect(mysql_database.credentials(), None)
    try:
        # Without the stop, DO SLEEP(5) would end after 5 s with no warning and raise nothing.
        with pytest.raises(engine_mysql.TimeBudgetExceeded) as stopped:
            conn.stream("DO SLEEP(5)", _writer(tmp_path), schema=None, timeout_s=1)
        translated = ENGINE.translate(stopped.value)
        assert isinstance(translated, UpstreamError) and "statement_timeout_s" in translated.message
    finally:
        conn.close()


@pytest.mark.anyio
async def test_cancellation_kills_the_query_at_the_server(mysql_database: Any, runtime: dict[str, str]) -> None:
    db = mysql_database
    marker = f"acp_cancel_{secrets.token_hex(4)}"
    seen_running = False
    async with started(runtime) as host:
        # Gone long before the count would end on its own: the cancel killed it at the server.
        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(sql_call, host, db, LONG_QUERY.format(marker=marker))
                while not db.processes(marker):
                    await anyio.sleep(0.05)
                seen_running = True
                group.cancel_scope.cancel()  # what anyio.move_on_after does to the call
            while db.processes(marker):
                await anyio.sleep(0.05)
        after = await sql_call(host, db, "SELECT COUNT(*) AS n FROM notes")
    assert seen_running
    assert after.rows() == [{"n": 5}]


def test_zero_dates_become_null_with_a_warning(mysql_database: Any, tmp_path: Path) -> None:
    db = mysql_database
    admin = mysql_server.admin_connect(db.scratch)
    try:
        with admin.cursor() as cur:
            cur.execute("SET SESSION sql_mode = ''")
            cur.execute("CREATE TABLE legacy (id INT, d DATE, t DATETIME)")
            cur.execute("INSERT INTO legacy VALUES (1, '0000-00-00', '0000-00-00 00:00:00'), (2, '2025-05-01', NULL)")
        conn = ENGINE.connect(db.credentials(database=db.scratch), None)
        try:
            writer = _writer(tmp_path)
            outcome = conn.stream("SELECT id, d, t FROM legacy ORDER BY id", writer, schema=None, timeout_s=5)
            table = writer.finish()
        finally:
            conn.close()
    finally:
        with admin.cursor() as cur:
            cur.execute("DROP TABLE IF EXISTS legacy")
        admin.close()
    assert [h["type"] for h in table.headers] == ["integer", "date", "datetime"]
    assert table.rows == [{"id": 1, "d": None, "t": None}, {"id": 2, "d": "2025-05-01", "t": None}]
    assert any("2 zero or invalid dates" in w for w in outcome.warnings)


@pytest.mark.anyio
async def test_sql_errors_translate_with_a_next_step(mysql_database: Any, runtime: dict[str, str]) -> None:
    db = mysql_database
    async with started(runtime) as host:
        missing = await sql_call(host, db, "SELECT * FROM nope", root=True)
        column = await sql_call(host, db, "SELECT nope FROM orders")
        syntax = await sql_call(host, db, "SELECT * FROM orders WHERE")
        denied = await sql_call(host, db, "SELECT * FROM payroll")
        missing_for_reader = await sql_call(host, db, "SELECT * FROM nope")
    for response, detail in ((missing, "doesn't exist"), (column, "Unknown column"), (syntax, "syntax"),
                             (denied, "command denied"), (missing_for_reader, "command denied")):  # fmt: skip
        assert response.error_name == INVALID and response.error["code"] == -32017, response.error
        assert detail in response.error["message"]
    for response in (missing, column, denied, missing_for_reader):  # the way to see the real names
        assert "autocontext" in response.error["message"]
    # MySQL does not tell a missing table from a forbidden one to this user: neither does the answer.
    assert "does not exist or this database user cannot read it" in missing_for_reader.error["message"]


# =====================================================================================================
# Autocontext blocks, describe_table and resources, against direct catalog queries
# =====================================================================================================
@dataclass
class Blocks:
    reader: dict[str, Any]
    root: dict[str, Any]
    table: dict[str, Any]
    listing: ToolResponse
    root_listing: ToolResponse
    describe: ToolResponse


def _blocks(response: ToolResponse) -> dict[str, Any]:
    assert not response.is_error, response.error
    out = {}
    for block in response.model_response:
        assert "error" not in block, block
        out[block["id"]] = block["data"]
    return out


@pytest.fixture(scope="module")
def blocks_run(mysql_database: Any, runtime: dict[str, str]) -> Blocks:
    db = mysql_database

    async def run() -> Blocks:
        async with started(runtime) as host:
            return Blocks(
                reader=_blocks(await host.call("autocontext", {"resource_id": db.name}, db.meta())),
                root=_blocks(await host.call("autocontext", {"resource_id": db.name}, db.meta(root=True))),
                table=_blocks(await host.call("autocontext", {"resource_id": f"{db.name}.orders"}, db.meta())),
                listing=await host.call("autocontext", {}, db.meta()),
                root_listing=await host.call("autocontext", {}, db.meta(root=True)),
                describe=await host.call("describe_table", {"resource_id": f"`{db.name}`.`orders`"}, db.meta()),
            )

    return anyio.run(run)


def _columns(db: Any, table: str) -> list[dict[str, Any]]:
    return db.query(
        "SELECT COLUMN_NAME, COLUMN_TYPE, DATA_TYPE, IS_NULLABLE, COLUMN_KEY, COLUMN_COMMENT "
        "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
        (db.name, table),
    )


def _json_columns(db: Any, table: str) -> set[str]:
    if not db.mariadb:
        return {c["COLUMN_NAME"] for c in _columns(db, table) if c["DATA_TYPE"] == "json"}
    rows = db.query(
        "SELECT CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = %s "
        "AND TABLE_NAME = %s",
        (db.name, table),
    )
    return {r["CHECK_CLAUSE"].split("`")[1] for r in rows if r["CHECK_CLAUSE"].startswith("json_valid(")}


def _foreign_keys(db: Any, table: str) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    rows = db.query(
        "SELECT CONSTRAINT_NAME, COLUMN_NAME, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME "
        "FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
        "AND REFERENCED_TABLE_NAME IS NOT NULL ORDER BY CONSTRAINT_NAME, ORDINAL_POSITION",
        (db.name, table),
    )
    grouped: dict[str, tuple[str, list[str], list[str]]] = {}
    for row in rows:
        entry = grouped.setdefault(row["CONSTRAINT_NAME"], (row["REFERENCED_TABLE_NAME"], [], []))
        entry[1].append(row["COLUMN_NAME"])
        entry[2].append(row["REFERENCED_COLUMN_NAME"])
    return sorted((target, tuple(cols), tuple(refs)) for target, cols, refs in grouped.values())


def test_schemas_block_is_the_database_with_its_visible_tables(blocks_run: Blocks, mysql_database: Any) -> None:
    assert blocks_run.reader["schemas"] == [{"schema": mysql_database.name, "tables": len(VISIBLE_TABLES)}]


def test_tables_block_has_exact_counts_types_and_comments(blocks_run: Blocks, mysql_database: Any) -> None:
    db = mysql_database
    data = blocks_run.reader["tables"]
    catalog = {
        r["TABLE_NAME"]: r
        for r in db.query(
            "SELECT TABLE_NAME, TABLE_TYPE, TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s",
            (db.name,),
        )
    }
    assert [e["table"] for e in data] == VISIBLE_TABLES  # payroll is not granted: not even listed
    for entry in data:
        row = catalog[entry["table"]]
        assert entry["type"] == ("view" if row["TABLE_TYPE"] == "VIEW" else "table")
        assert entry["rows"] == db.scalar(f"SELECT COUNT(*) FROM {mysql_server.quote(entry['table'])}")
        assert "rows_estimated" not in entry  # small tables are counted exactly within the budget
        if row["TABLE_TYPE"] == "BASE TABLE" and row["TABLE_COMMENT"]:
            assert entry["comment"] == row["TABLE_COMMENT"]
    assert {e["table"]: e.get("comment") for e in data}["customers"] == "People who bought at least once"
    assert "payroll" in [e["table"] for e in blocks_run.root["tables"]]  # root sees it


def test_table_schemas_equal_information_schema(blocks_run: Blocks, mysql_database: Any) -> None:
    db = mysql_database
    data = blocks_run.reader["table_schemas"]
    assert [e["table"] for e in data] == VISIBLE_TABLES
    for entry in data:
        json_columns = _json_columns(db, entry["table"])
        expected = [
            (c["COLUMN_NAME"], "json" if c["COLUMN_NAME"] in json_columns else c["COLUMN_TYPE"],
             c["COLUMN_KEY"] == "PRI", c["IS_NULLABLE"] == "NO", c["COLUMN_COMMENT"] or None)
            for c in _columns(db, entry["table"])
        ]  # fmt: skip
        reported = [
            (c["name"], c["type"], c.get("primary_key", False), c.get("not_null", False), c.get("comment"))
            for c in entry["columns"]
        ]
        assert reported == expected, entry["table"]
        keys = sorted(
            (k["references"], tuple(k["columns"]), tuple(k["referenced_columns"]))
            for k in entry.get("foreign_keys", [])
        )
        assert keys == _foreign_keys(db, entry["table"]), entry["table"]
    by_table = {e["table"]: e for e in data}
    assert sum(c.get("primary_key", False) for c in by_table["order_items"]["columns"]) == 2  # composite key
    assert by_table["orders"]["foreign_keys"] == [
        {"columns": ["customer_id"], "references": "customers", "referenced_columns": ["id"]}
    ]


def test_relationships_equal_the_foreign_keys(blocks_run: Blocks, mysql_database: Any) -> None:
    expected = sorted(
        f"{table}.{cols[0]} → {target}.{refs[0]}"
        for table in VISIBLE_TABLES
        for target, cols, refs in _foreign_keys(mysql_database, table)
    )
    assert sorted(blocks_run.reader["relationships"]) == expected
    assert "orders.customer_id → customers.id" in expected and "order_items.order_id → orders.id" in expected


def _temporal_columns(db: Any, table: str) -> list[tuple[str, str]]:
    return [
        (c["COLUMN_NAME"], c["DATA_TYPE"])
        for c in _columns(db, table)
        if c["DATA_TYPE"] in ("date", "datetime", "timestamp", "time")
    ]


def test_date_ranges_equal_direct_min_and_max(blocks_run: Blocks, mysql_database: Any) -> None:
    db = mysql_database
    expected = {}
    for table in VISIBLE_TABLES:
        for column, kind in _temporal_columns(db, table):
            name = mysql_server.quote(column)
            cast = (lambda e: f"CAST({e} AS CHAR)") if kind == "time" else (lambda e: e)
            low, high = db.rows(f"SELECT {cast(f'MIN({name})')}, {cast(f'MAX({name})')} FROM {table}")[0]
            if low is not None:
                expected[(table, column)] = (expected_cell(low), expected_cell(high))
    assert ("orders", "order_date") in expected and ("customers", "created_at") in expected
    reported = {(e["table"], e["column"]): (e["min"], e["max"]) for e in blocks_run.reader["date_ranges"]}
    assert reported == expected


def test_table_level_blocks_cover_only_that_table(blocks_run: Blocks, mysql_database: Any) -> None:
    blocks = blocks_run.table
    assert "tables" not in blocks and "schemas" not in blocks
    assert [e["table"] for e in blocks["table_schemas"]] == ["orders"]
    assert {e["table"] for e in blocks["date_ranges"]} == {"orders"}
    assert {e["table"] for e in blocks["sample_values"]} == {"orders"}


def _top_values(db: Any, table: str, column: str) -> tuple[list[Any], int]:
    name = mysql_server.quote(column)
    rows = db.rows(
        f"SELECT {name} AS v, COUNT(*) AS n FROM {table} WHERE {name} IS NOT NULL GROUP BY {name} ORDER BY n DESC, v"
    )
    return [r[0] for r in rows[:10]], len(rows)


def test_sample_values_cover_low_cardinality_text_columns(blocks_run: Blocks, mysql_database: Any) -> None:
    db = mysql_database
    expected = {}
    for table in VISIBLE_TABLES:
        for c in _columns(db, table):
            text = c["DATA_TYPE"] in ("char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set")
            if not text or c["COLUMN_KEY"] == "PRI" or c["COLUMN_NAME"] in _json_columns(db, table):
                continue
            values, distinct = _top_values(db, table, c["COLUMN_NAME"])
            if 0 < distinct <= 20:
                expected[(table, c["COLUMN_NAME"])] = (values, distinct)
    assert {("orders", "status"), ("orders", "channel"), ("customers", "country")} <= set(expected)
    assert ("customers", "name") not in expected  # 30 distinct names: high cardinality
    reported = {(e["table"], e["column"]): (e["values"], e["distinct"]) for e in blocks_run.reader["sample_values"]}
    assert reported == expected


def test_describe_table_equals_the_catalog(blocks_run: Blocks, mysql_database: Any) -> None:
    db = mysql_database
    response = blocks_run.describe
    assert not response.is_error, response.error
    data = response.model_response
    assert data["table"] == f"{db.name}.orders"
    assert data["rows"] == mysql_server.ORDERS and data["type"] == "table"
    assert [c["name"] for c in data["columns"]] == [c["COLUMN_NAME"] for c in _columns(db, "orders")]
    assert {c["name"]: c.get("comment") for c in data["columns"]}["amount"] == "Order total in EUR"
    assert data["primary_key"] == ["id"]
    assert data["foreign_keys"] == [{"columns": ["customer_id"], "references": "customers",
                                     "referenced_columns": ["id"]}]  # fmt: skip


def test_row_counts_are_exact_when_cheap_estimated_when_not_and_bounded_by_the_budget(mysql_database: Any) -> None:
    db = mysql_database
    rows = db.query("SELECT TABLE_NAME, TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s", (db.name,))
    catalog = {r["TABLE_NAME"]: r["TABLE_ROWS"] for r in rows}
    conn = ENGINE.connect(db.credentials(), None)
    try:
        conn.exact_count_under = 10  # every InnoDB table of the fixture now counts as large
        infos = {t.name: t for t in conn.tables(None, 5)}
        skipped = conn.tables(None, 0)
    finally:
        conn.close()
    assert (infos["orders"].rows, infos["orders"].estimated) == (catalog["orders"], True)  # InnoDB: the estimate
    assert (infos["notes"].rows, infos["notes"].estimated) == (5, False)  # MyISAM keeps an exact count
    assert (infos["big_orders"].kind, infos["big_orders"].estimated) == ("view", False)
    assert infos["big_orders"].rows == db.scalar("SELECT COUNT(*) FROM big_orders")
    assert [(t.rows, t.estimated) for t in skipped] == [(None, False)] * len(VISIBLE_TABLES)  # budget 0: no counts
    # A view too slow to count within the budget: unknown, and the call still returns in time.
    admin = mysql_server.admin_connect(db.scratch)
    try:
        with admin.cursor() as cur:
            cur.execute(f"CREATE VIEW heavy AS SELECT a.id FROM {db.name}.orders a, {db.name}.orders b, "
                        f"{db.name}.order_items c")  # fmt: skip
        conn = ENGINE.connect(db.credentials(database=db.scratch), None)
        try:
            infos = {t.name: t for t in conn.tables(None, 0.3)}
            assert (infos["heavy"].rows, infos["heavy"].kind) == (None, "view")  # its count stopped at the budget
            with pytest.raises(engine_mysql.TimeBudgetExceeded):
                conn.top_values(None, "heavy", "id", 10**9, 21, 0.3)
            with pytest.raises(engine_mysql.TimeBudgetExceeded):
                conn.min_max(None, "heavy", "id", 0.3)
            assert conn.top_values(None, "events", "label", 100, 21, 1) == [("seed", 1)]  # still usable
        finally:
            conn.close()
    finally:
        with admin.cursor() as cur:
            cur.execute("DROP VIEW IF EXISTS heavy")
        admin.close()
    assert (infos["heavy"].rows, infos["heavy"].estimated) == (None, False)
    assert (infos["events"].rows, infos["events"].estimated) == (1, False)


@pytest.mark.anyio
async def test_hidden_columns_stay_out_of_blocks_descriptions_and_queries(
    mysql_database: Any, runtime: dict[str, str]
) -> None:
    db = mysql_database
    config = {"hidden": json.dumps(["customers\\.email"])}
    async with started(runtime) as host:
        context = await host.call("autocontext", {"resource_id": f"{db.name}.customers"}, db.meta(config=config))
        described = await host.call("describe_table", {"resource_id": f"{db.name}.customers"}, db.meta(config=config))
        direct_use = await sql_call(host, db, "SELECT `email` FROM customers", config=config)
        star = await sql_call(host, db, "SELECT * FROM customers", config=config)
        allowed = await sql_call(host, db, "SELECT id, name FROM customers ORDER BY id", config=config)
    emails = [r["email"] for r in db.query("SELECT email FROM customers")]
    for response in (context, described):
        assert not response.is_error, response.error
        text = json.dumps(response.raw)
        assert '"email"' not in text and not any(e in text for e in emails)
    for response in (direct_use, star):
        assert response.error_name == INVALID and "hides" in response.error["message"]
    assert exact(allowed) == expected_rows(db, "SELECT id, name FROM customers ORDER BY id")


def _databases_as(db: Any, user: str, password: str) -> list[str]:
    conn = pymysql.connect(host=mysql_server.HOST, port=mysql_server.PORT, user=user, password=password)
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW DATABASES")
            return sorted(r[0] for r in cur.fetchall() if r[0] not in engine_mysql.SYSTEM_DATABASES)
    finally:
        conn.close()


def test_resource_list_is_the_databases_the_user_can_see(blocks_run: Blocks, mysql_database: Any) -> None:
    db = mysql_database
    listing = blocks_run.listing
    assert not listing.is_error, listing.error
    expected = _databases_as(db, db.user, db.password)
    assert expected == sorted([db.name, db.scratch])
    assert [r["resource_id"] for r in listing.model_response["resources"]] == expected
    assert listing.model_response["total_available"] == len(expected)
    root_ids = [r["resource_id"] for r in blocks_run.root_listing.model_response["resources"]]
    assert len(root_ids) <= 25
    # Tests running in parallel create and drop their own databases between the two listings.
    lasting = {name for name in root_ids if not name.startswith(mysql_server.PREFIX) or name.startswith(db.name)}
    assert lasting <= set(_databases_as(db, mysql_server.ROOT, mysql_server.ROOT_PASSWORD))
    assert not set(root_ids) & engine_mysql.SYSTEM_DATABASES


# =====================================================================================================
# Credentials: wrong password, DSN, unknown database, identity
# =====================================================================================================
@pytest.mark.anyio
async def test_wrong_password_is_credentials_invalid_without_the_password_anywhere(
    mysql_database: Any, runtime: dict[str, str]
) -> None:
    db = mysql_database
    wrong = f"wrong-{secrets.token_hex(10)}"
    cases = [
        db.credentials(password=wrong),
        {"type": "mysql_dsn", "dsn": db.dsn(password=wrong)},
    ]
    async with started(runtime) as host:
        answers = []
        for credentials in cases:
            meta = {"credentials": credentials, "autocontext_delivered": True}
            answers.append(await host.call("execute_sql", {"resource_id": db.name, "sql": "SELECT 1"}, meta))
            answers.append(await host.call("autocontext", {"resource_id": db.name}, meta))
    for response in answers:
        assert _error(response) == ("ACP_CREDENTIALS_INVALID", -32012), response.error
        assert f"denied access to user {db.user} (with a password)" in response.error["message"]
        assert wrong not in json.dumps(response.raw)
    assert wrong not in host.stderr()


@pytest.mark.anyio
async def test_dsn_credentials_read_like_the_fields(mysql_database: Any, runtime: dict[str, str]) -> None:
    db = mysql_database
    sql = "SELECT id, name, country FROM customers ORDER BY id"
    meta = {"credentials": {"type": "mysql_dsn", "dsn": db.dsn()}, "autocontext_delivered": True}
    async with started(runtime) as host:
        response = await host.call("execute_sql", {"resource_id": db.name, "sql": sql}, meta)
        other = await host.call("execute_sql", {"resource_id": db.scratch, "sql": "SELECT * FROM events"}, meta)
    assert not response.is_error, response.error
    assert response.rows() == expected_rows(db, sql)
    assert other.rows() == [{"id": 1, "label": "seed", "happened": "2025-01-01"}]  # another database, same login
    assert db.password not in everything_in(response)


@pytest.mark.anyio
async def test_unknown_or_forbidden_database_is_resource_not_found(
    mysql_database: Any, runtime: dict[str, str]
) -> None:
    db = mysql_database
    async with started(runtime) as host:
        unknown = await sql_call(host, db, "SELECT 1", resource=f"{db.name}_nope")
        forbidden = await sql_call(host, db, "SELECT 1", resource="mysql")
    for response in (unknown, forbidden):
        assert _error(response) == ("ACP_RESOURCE_NOT_FOUND", -32014), response.error
        assert "autocontext" in response.error["message"]


def test_identity_never_holds_the_secret() -> None:
    password = "p@ss:w/rd?#"
    fields = {"type": "mysql", "host": "db.example.com", "user": "reader", "password": password, "database": "shop"}
    principal = ENGINE.identify(fields)
    assert principal.identity == "mysql:reader@db.example.com:3306/shop"
    assert principal.secrets == (password,)
    dsn = "mysql://reader:p%40ss%3Aw%2Frd%3F%23@db.example.com:3307/shop?ssl_mode=required"
    from_dsn = ENGINE.identify({"type": "mysql_dsn", "dsn": dsn})
    assert from_dsn.identity == "mysql:reader@db.example.com:3307/shop"
    assert {password, dsn, "p%40ss%3Aw%2Frd%3F%23"} <= set(from_dsn.secrets)
    assert "reader" not in from_dsn.secrets  # the user name is not a secret: messages may name it
    assert engine_mysql.settings_of({"type": "mysql_dsn", "dsn": dsn}).ssl_mode == "required"


@pytest.mark.parametrize(
    "credentials",
    [{"type": "mysql", "host": "h", "user": "u", "password": "s3cret-1"},
     {"type": "mysql", "host": "", "user": "u", "password": "s3cret-1", "database": "d"},
     {"type": "mysql", "host": "h", "user": "u", "password": "s3cret-1", "database": "d", "port": "s3cret-1"},
     {"type": "mysql", "host": "h", "user": "u", "password": "s3cret-1", "database": "d", "ssl_mode": "maybe"},
     {"type": "mysql_dsn", "dsn": "postgresql://u:s3cret-1@h/d"},
     {"type": "mysql_dsn", "dsn": "mysql://u:s3cret-1@h:99999/d"},
     {"type": "mysql_dsn", "dsn": "mysql://u:s3cret-1@h/"},
     {"type": "mysql_dsn", "dsn": "mysql://u:s3cret-1@h/d?charset=s3cret-1"}],
)  # fmt: skip
def test_invalid_credentials_are_refused_without_the_secret(credentials: dict[str, Any]) -> None:
    with pytest.raises(CredentialsInvalid) as refused:
        ENGINE.identify(credentials)
    assert "s3cret-1" not in refused.value.message
    assert "Ask the user" in refused.value.message


@pytest.mark.parametrize(
    ("code", "message", "expected", "says"),
    [(1045, "Access denied for user 'u'@'h' (using password: YES)", CredentialsInvalid, "password"),
     (1044, "Access denied for user 'u'@'%' to database 'd'", CredentialsInvalid, "database"),
     (1049, "Unknown database 'd'", ResourceNotFound, "autocontext"),
     (1146, "Table 'd.t' doesn't exist", InvalidArguments, "autocontext"),
     (1054, "Unknown column 'x' in 'field list'", InvalidArguments, "autocontext"),
     (1064, "You have an error in your SQL syntax", InvalidArguments, "Fix the syntax"),
     (1792, "Cannot execute statement in a READ ONLY transaction", ReadOnlyViolation, "read-only"),
     (1969, "Query execution was interrupted (max_statement_time exceeded)", UpstreamError, "statement_timeout_s"),
     (3024, "Query execution was interrupted, maximum statement execution time exceeded", UpstreamError,
      "statement_timeout_s"),
     (1317, "Query execution was interrupted", UpstreamError, "interrupted"),
     (1142, "INSERT command denied to user 'u'@'h' for table `d`.`t`", ReadOnlyViolation, "privilege"),
     (1142, "INSERT, DELETE command denied to user 'u'@'h' for table `d`.`t`", ReadOnlyViolation, "privilege"),
     (1142, "SELECT command denied to user 'u'@'h' for table `d`.`t`", InvalidArguments, "autocontext"),
     (1143, "SELECT command denied to user 'u'@'h' for column 'c' in table 't'", InvalidArguments, "autocontext"),
     (1227, "Access denied; you need (at least one of) the SUPER privilege(s)", ReadOnlyViolation, "read-only"),
     (4166, "The used command is not allowed because the local infile capability is disabled", ReadOnlyViolation,
      "LOAD DATA"),
     (2003, "Can't connect to MySQL server on 'h' ([Errno 111] Connection refused)", UpstreamError, "server"),
     (2013, "Lost connection to MySQL server during query", UpstreamError, "server")],
)  # fmt: skip
def test_translation_table(code: int, message: str, expected: type, says: str) -> None:
    error_class = pymysql.err.OperationalError if code != 1064 else pymysql.err.ProgrammingError
    translated = ENGINE.translate(error_class(code, message))
    assert type(translated) is expected
    assert says in translated.message
    assert ENGINE.translate(ValueError("not a driver error")) is None


def test_an_unreachable_server_is_an_upstream_error_naming_the_server() -> None:
    credentials = {"type": "mysql", "host": "127.0.0.1", "port": 1, "user": "u", "password": "pw-123", "database": "d"}
    with pytest.raises(UpstreamError) as failed:
        ENGINE.connect(credentials, None)
    assert "127.0.0.1:1" in failed.value.message and "check the server" in failed.value.message
    assert "pw-123" not in failed.value.message


def test_tls_required_against_a_server_without_tls_says_what_to_fix(mysql_database: Any) -> None:
    db = mysql_database
    have_ssl = db.rows("SHOW VARIABLES LIKE 'have_ssl'")
    enabled = bool(have_ssl) and have_ssl[0][1] == "YES"
    if enabled:
        ENGINE.connect(db.credentials(ssl_mode="required"), None).close()
        return
    with pytest.raises(CredentialsInvalid) as refused:
        ENGINE.connect(db.credentials(ssl_mode="required"), None)
    assert "ssl_mode" in refused.value.message


# =====================================================================================================
# insert_rows from a host table (spec 8.8, 10.6)
# =====================================================================================================
NEW_HEADERS = [
    {"name": "n", "type": "integer"},
    {"name": "s", "type": "string"},
    {"name": "d", "type": "date"},
    {"name": "x", "type": "number"},
    {"name": "ok", "type": "boolean"},
    {"name": "at", "type": "datetime"},
    {"name": "j", "type": "json"},
]
NEW_ROWS = [
    {"n": 2**40, "s": "ñandú 'q' \"d\" \\ %s", "d": "2025-01-31", "x": 0.5, "ok": True, "at": "2025-01-31T10:15:00.25",
     "j": {"k": [1, 2]}},
    {"n": -1, "s": None, "d": "2024-02-29", "x": 2, "ok": False, "at": "2024-02-29T23:00:01Z", "j": [1, "two"]},
]  # fmt: skip


async def _insert(host: AcpHost, db: Any, table: str, ref: str, database: str | None = None, **config: Any) -> Any:
    return await host.call(
        "insert_rows", {"resource_id": f"{database or db.scratch}.{table}", "table_ref": ref},
        db.meta(config=config or None),
    )  # fmt: skip


@pytest.mark.anyio
async def test_insert_rows_creates_then_appends_exactly_the_host_rows(
    mysql_database: Any, runtime: dict[str, str]
) -> None:
    db = mysql_database
    table = f"imported_{secrets.token_hex(4)}"
    tables = StaticTables({"ds_new": StaticTable(headers=NEW_HEADERS, rows=NEW_ROWS)})
    async with started(runtime, tables=tables) as host:
        created = await _insert(host, db, table, "ds_new", access_mode="readAndOnlyAdd")
        appended = await _insert(host, db, table, "ds_new", access_mode="readAndOnlyAdd")
    for response, was_created in ((created, True), (appended, False)):
        assert not response.is_error, response.error
        assert response.model_response["inserted_rows"] == len(NEW_ROWS)
        assert response.model_response["created"] is was_created
    types = {
        r["COLUMN_NAME"]: r["DATA_TYPE"]
        for r in db.query(
            "SELECT COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
            (db.scratch, table),
        )
    }
    assert types == {"n": "bigint", "s": "longtext", "d": "date", "x": "double", "ok": "tinyint",
                     "at": "datetime", "j": "longtext" if db.mariadb else "json"}  # fmt: skip
    rows = db.query(f"SELECT n, s, d, x, ok, at, j FROM {table} ORDER BY n", database=db.scratch)
    one = [
        {"n": -1, "s": None, "d": dt.date(2024, 2, 29), "x": 2.0, "ok": 0, "at": dt.datetime(2024, 2, 29, 23, 0, 1),
         "j": [1, "two"]},
        {"n": 2**40, "s": NEW_ROWS[0]["s"], "d": dt.date(2025, 1, 31), "x": 0.5, "ok": 1,
         "at": dt.datetime(2025, 1, 31, 10, 15, 0, 250000), "j": {"k": [1, 2]}},
    ]  # fmt: skip
    assert [{**r, "j": json.loads(r["j"])} for r in rows] == [one[0], one[0], one[1], one[1]]


@pytest.mark.anyio
async def test_insert_rows_is_refused_in_only_read_and_without_the_privilege(
    mysql_database: Any, runtime: dict[str, str]
) -> None:
    db = mysql_database
    tables = StaticTables({"ds_notes": StaticTable(headers=[{"name": "id", "type": "integer"},
                                                            {"name": "body", "type": "string"}],
                                                   rows=[{"id": 500, "body": "appended"}])})  # fmt: skip
    before = db.checksums()
    events_before = db.rows("SELECT * FROM events", database=db.scratch)
    async with started(runtime, tables=tables) as host:
        only_read = await _insert(host, db, "events", "ds_notes")
        closed = await _insert(
            host, db, "events", "ds_notes", access_mode="readAndOnlyAdd",
            table_rules=json.dumps([{"pattern": "events", "mode": "onlyRead"}]),
        )  # fmt: skip
        no_privilege = await _insert(host, db, "notes", "ds_notes", database=db.name, access_mode="readAndOnlyAdd")
    for response in (only_read, closed, no_privilege):
        assert _error(response) == RO, response.error
    assert "INSERT command denied" in no_privilege.error["message"]
    assert db.checksums() == before
    assert db.rows("SELECT * FROM events", database=db.scratch) == events_before
