"""The PostgreSQL engine of the databases connector, over stdio against a real server.

Every call goes through ``python -m connectors.databases`` and the real ``psycopg`` driver;
every expectation is computed with direct ``psycopg`` queries as the superuser (see
``pg_server.py``) or taken from the spec. The module's database and least-privilege role
are created for it and dropped at the end.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import json
import secrets
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest
from host_tables import StaticTable, StaticTables
from loader import load_file

from shared.host import ACP_HOST_CAPABILITY, AcpHost, ToolResponse, uri_path

# The server helper next to this file (test folders are not packages).
pg_server = load_file(Path(__file__).with_name("pg_server.py"), "acp_tests_databases_pg_server")
pg_database = pg_server.pg_database  # the module-scoped fixture

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # the real PostgreSQL server

RO = "ACP_READ_ONLY_VIOLATION"
INVALID = "ACP_INVALID_ARGUMENTS"
UPSTREAM = "ACP_UPSTREAM_ERROR"


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("pg-runtime")
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


# =====================================================================================================
# Write-attempt corpus (spec 10.4), as the least-privilege role and as the superuser
# =====================================================================================================

# Placeholders: {role} the least-privilege role, {lo} an existing large object, {<name>} files in /tmp.
WRITE_ATTEMPTS: list[tuple[str, str]] = [
    # DML
    ("insert", "INSERT INTO customers (name, email, created_at) VALUES ('Eve', 'eve@example.com', now())"),
    (
        "insert-select",
        "INSERT INTO orders (customer_id, order_date, amount, status) SELECT customer_id, order_date, amount, status FROM orders",
    ),
    ("insert-returning", "INSERT INTO sales.regions (code, name) VALUES ('Z', 'Nowhere') RETURNING *"),
    ("update", "UPDATE orders SET amount = 0"),
    ("update-from", "UPDATE orders o SET status = 'x' FROM customers c WHERE c.id = o.customer_id"),
    ("delete", "DELETE FROM orders"),
    ("delete-using", "DELETE FROM orders USING customers WHERE customers.id = orders.customer_id"),
    ("merge", "MERGE INTO customers c USING (SELECT 1 AS id) s ON c.id = s.id WHEN MATCHED THEN DELETE"),
    (
        "upsert",
        "INSERT INTO customers (id, name, created_at) VALUES (1, 'Eve', now()) ON CONFLICT (id) DO UPDATE SET name = excluded.name",
    ),
    ("truncate", "TRUNCATE orders CASCADE"),
    # DDL
    ("create-table", "CREATE TABLE evil (x int)"),
    ("create-table-as", "CREATE TABLE evil AS SELECT * FROM orders"),
    ("create-temp-table", "CREATE TEMP TABLE evil_tmp (x int)"),
    ("create-index", "CREATE INDEX evil_idx ON orders (amount)"),
    ("create-view", "CREATE VIEW evil_view AS SELECT 1 AS one"),
    ("create-function", "CREATE FUNCTION evil() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$"),
    ("create-schema", "CREATE SCHEMA evil"),
    ("create-role", "CREATE ROLE evil_role SUPERUSER"),
    ("create-extension", "CREATE EXTENSION IF NOT EXISTS dblink"),
    ("create-database", "CREATE DATABASE evil_db"),
    ("drop-table", "DROP TABLE orders"),
    ("drop-view", "DROP VIEW big_orders"),
    ("drop-schema-cascade", "DROP SCHEMA sales CASCADE"),
    ("drop-sequence", "DROP SEQUENCE invoice_numbers"),
    ("alter-table", "ALTER TABLE orders ADD COLUMN evil text"),
    ("alter-rename", "ALTER TABLE orders RENAME TO orders_old"),
    ("alter-sequence", "ALTER SEQUENCE invoice_numbers RESTART WITH 1"),
    ("alter-role", "ALTER ROLE {role} SUPERUSER"),
    ("alter-system", "ALTER SYSTEM SET work_mem = '1MB'"),
    ("comment-on", "COMMENT ON TABLE orders IS 'pwned'"),
    ("grant", "GRANT ALL ON orders TO PUBLIC"),
    ("revoke", "REVOKE SELECT ON orders FROM {role}"),
    # COPY: programs and files on the server
    ("copy-to-program", "COPY orders TO PROGRAM 'touch {program}'"),
    ("copy-to-file", "COPY orders TO '{copy}'"),
    ("copy-query-to-file", "COPY (SELECT * FROM customers) TO '{copy_query}'"),
    ("copy-from-file", "COPY customers (name) FROM '/etc/passwd'"),
    ("copy-from-program", "COPY customers (name) FROM PROGRAM 'cat /etc/passwd'"),
    ("copy-to-stdout", "COPY orders TO STDOUT"),
    # data-modifying CTEs
    ("cte-delete", "WITH d AS (DELETE FROM orders RETURNING *) SELECT * FROM d"),
    ("cte-update", "WITH u AS (UPDATE orders SET amount = 0 RETURNING id) SELECT count(*) FROM u"),
    (
        "cte-insert",
        "WITH i AS (INSERT INTO customers (name, created_at) VALUES ('Eve', now()) RETURNING id) SELECT id FROM i",
    ),
    ("cte-delete-in-subquery", "SELECT * FROM (WITH d AS (DELETE FROM orders RETURNING id) SELECT id FROM d) s"),
    # transaction escapes (the archived reference server's bug)
    ("select-commit-drop", "SELECT 1; COMMIT; DROP TABLE orders"),
    ("end-drop", "END; DROP TABLE orders"),
    ("rollback-drop", "ROLLBACK; DROP TABLE orders"),
    ("abort-delete", "ABORT; DELETE FROM orders"),
    ("commit-begin-rw-delete", "COMMIT; BEGIN READ WRITE; DELETE FROM orders; COMMIT"),
    ("set-transaction-read-write", "SET TRANSACTION READ WRITE"),
    ("set-session-read-write", "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE"),
    ("start-transaction", "START TRANSACTION READ WRITE"),
    ("prepare-transaction", "PREPARE TRANSACTION 'acp'"),
    ("select-then-delete", "SELECT 1;DELETE FROM orders;"),
    # SELECT that writes or locks
    ("select-into", "SELECT * INTO newtable FROM orders"),
    ("select-into-temp", "SELECT * INTO TEMP newtemp FROM orders"),
    ("for-update", "SELECT * FROM orders FOR UPDATE"),
    ("for-share-nowait", "SELECT id FROM customers FOR SHARE NOWAIT"),
    ("for-no-key-update-in-subquery", "SELECT * FROM (SELECT id FROM orders FOR NO KEY UPDATE) s"),
    # functions with side effects
    ("nextval", "SELECT nextval('invoice_numbers')"),
    ("setval", "SELECT setval('invoice_numbers', 1)"),
    ("set-config", "SELECT set_config('default_transaction_read_only', 'off', false)"),
    ("advisory-lock", "SELECT pg_advisory_lock(42)"),
    ("lo-import", "SELECT lo_import('/etc/passwd')"),
    ("lo-export", "SELECT lo_export({lo}, '{lo_file}')"),
    ("pg-notify", "SELECT pg_notify('acp', 'x')"),
    ("txid-current", "SELECT txid_current()"),
    ("pg-reload-conf", "SELECT pg_reload_conf()"),
    ("pg-stat-reset-shared", "SELECT pg_stat_reset_shared('bgwriter')"),
    ("pg-stat-reset-table", "SELECT pg_stat_reset_single_table_counters('orders'::regclass)"),
    ("pg-logical-emit-message", "SELECT pg_logical_emit_message(true, 'acp', 'x')"),  # writes WAL
    ("pg-log-memory-contexts", "SELECT pg_log_backend_memory_contexts(pg_backend_pid())"),
    ("pg-replication-origin-create", "SELECT pg_replication_origin_create('acp_evil')"),
    ("user-function-that-deletes", "SELECT purge_orders_fn()"),
    ("pg-sleep", "SELECT pg_sleep(100)"),
    # file-reading functions that look like SELECTs
    ("pg-read-file", "SELECT pg_read_file('/etc/passwd')"),
    ("pg-read-binary-file", "SELECT pg_read_binary_file('/etc/passwd')"),
    ("pg-ls-dir", "SELECT pg_ls_dir('.')"),
    ("pg-stat-file", "SELECT pg_stat_file('/etc/passwd')"),
    ("pg-ls-logicalsnapdir", "SELECT * FROM pg_ls_logicalsnapdir()"),
    ("pg-ls-logicalmapdir", "SELECT pg_ls_logicalmapdir()"),
    # system views that read the server's configuration files
    ("pg-hba-file-rules", "SELECT * FROM pg_hba_file_rules"),
    ("pg-hba-file-rules-function", "SELECT * FROM pg_catalog.pg_hba_file_rules()"),
    ("pg-file-settings", "SELECT * FROM pg_catalog.pg_file_settings"),
    ("pg-ident-file-mappings-quoted", 'SELECT * FROM "pg_ident_file_mappings"'),
    ("pg-read-file-in-from", "SELECT * FROM pg_read_file('/etc/passwd') AS f(line)"),
    ("pg-read-file-qualified", "SELECT pg_catalog.pg_read_file('/etc/passwd')"),
    ("pg-read-file-quoted", "SELECT \"pg_read_file\"('/etc/passwd')"),
    ("pg-read-file-upper", "SELECT PG_READ_FILE('/etc/passwd')"),
    ("pg-read-file-in-xmlparse", "SELECT xmlparse(content pg_read_file('/etc/passwd')) AS x"),
    ("pg-read-file-order-by-using", "SELECT pg_read_file('/etc/passwd') AS x ORDER BY 1 USING <"),
    ("query-to-xml", "SELECT query_to_xml('DROP TABLE orders', true, true, '')"),
    # DO, CALL, PREPARE/EXECUTE, LISTEN/NOTIFY, session and maintenance commands
    ("do-block", "DO $$ BEGIN DROP TABLE orders; END $$"),
    ("do-execute", "DO $x$ BEGIN EXECUTE 'DELETE FROM orders'; END $x$"),
    ("call", "CALL purge_orders()"),
    ("prepare", "PREPARE evil AS DELETE FROM orders"),
    ("execute", "EXECUTE evil"),
    ("listen", "LISTEN acp"),
    ("notify", "NOTIFY acp, 'x'"),
    ("lock-table", "LOCK TABLE orders IN ACCESS EXCLUSIVE MODE"),
    ("set-role", "SET ROLE postgres"),
    ("set-session-authorization", "SET SESSION AUTHORIZATION postgres"),
    ("reset-all", "RESET ALL"),
    ("discard-all", "DISCARD ALL"),
    ("vacuum", "VACUUM orders"),
    ("vacuum-full", "VACUUM FULL"),
    ("analyze", "ANALYZE orders"),
    ("reindex", "REINDEX TABLE orders"),
    ("cluster", "CLUSTER orders USING orders_pkey"),
    ("refresh-materialized-view", "REFRESH MATERIALIZED VIEW order_totals"),
    ("explain-analyze-delete", "EXPLAIN ANALYZE DELETE FROM orders"),
    ("explain-analyze-function", "EXPLAIN (ANALYZE) SELECT purge_orders_fn()"),
    ("checkpoint", "CHECKPOINT"),
    ("load-library", "LOAD 'auto_explain'"),
    ("declare-with-hold", "DECLARE evil CURSOR WITH HOLD FOR SELECT * FROM orders"),
    # hidden after comments or a semicolon
    ("block-comment-then-delete", "/* monthly report */ DELETE FROM orders"),
    ("line-comment-then-delete", "-- monthly report\nDELETE FROM orders"),
    ("semicolon-in-comment", "SELECT 1 /* ; */ ; DELETE FROM orders"),
    ("line-comment-before-semicolon", "SELECT 1 -- harmless\n; DROP TABLE orders"),
    ("nested-comment", "SELECT 1 /* outer /* inner */ still comment */; DROP TABLE orders"),
    ("whitespace-and-trailing-semicolon", "  \n\t DELETE FROM orders ;  "),
    ("backslash-quote", "SELECT 'a\\'; DELETE FROM orders; --' AS x"),
    # unicode and case tricks
    ("mixed-case", "dElEtE fRoM orders"),
    ("quoted-identifiers", 'DELETE FROM "public"."orders"'),
    ("unicode-escaped-table", 'DELETE FROM U&"\\006frders"'),
    ("unicode-escaped-read-file", "SELECT U&\"pg\\005fread_file\"('/etc/passwd') AS x"),
    ("unicode-escaped-lo-export", "SELECT U&\"lo\\005fexport\"({lo}, '{lo_file_unicode}') AS x"),
    ("form-feed-and-carriage-return", "DELETE\fFROM\rorders"),
    ("no-break-space", "DELETE\u00a0FROM orders"),
    ("zero-width-space", "DELETE\u200bFROM orders"),
    ("fullwidth-letters", "\uff24\uff25\uff2c\uff25\uff34\uff25 FROM orders"),
    ("cyrillic-e", "D\u0415LETE FROM orders"),
    ("line-separator", "DELETE\u2028FROM orders"),
    # dollar quoting
    ("dollar-string-hides-semicolon", "SELECT $$;$$; DELETE FROM orders"),
    ("tagged-dollar-string", "SELECT $a$ $$ $a$; DROP TABLE orders"),
    ("dollar-comment-markers", "SELECT $q$/*$q$; DELETE FROM orders; SELECT $q$*/$q$"),
    ("dollar-in-function-body", "SELECT 1 AS x FROM (SELECT $f$ DROP TABLE orders $f$) s; DROP TABLE orders"),
]
FILE_TARGETS = ("program", "copy", "copy_query", "lo_file", "lo_file_unicode")
FINAL_SELECT = (
    "SELECT c.id, c.name, count(o.id) AS orders FROM customers c LEFT JOIN orders o ON o.customer_id = c.id "
    "GROUP BY c.id, c.name ORDER BY c.id"
)
RUNS = ("role", "superuser")
# Runs far longer than any timeout here on allowed functions alone (pg_sleep is refused).
LONG_QUERY = "SELECT count(*) AS n FROM generate_series(1, 100000000000)"


@dataclass
class CorpusRun:
    sql: dict[str, str]
    files: list[str]
    responses: dict[tuple[str, str], ToolResponse] = field(default_factory=dict)
    slow: dict[str, tuple[ToolResponse, float]] = field(default_factory=dict)
    finals: dict[str, ToolResponse] = field(default_factory=dict)
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)
    passwd: str = ""
    expected_final: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture(scope="module")
def corpus(pg_database: Any, runtime: dict[str, str]) -> Iterator[CorpusRun]:
    db = pg_database
    token = secrets.token_hex(5)
    files = {name: f"/tmp/acp_pg_{token}_{name}" for name in FILE_TARGETS}
    run = CorpusRun(
        sql={label: text.format(role=db.role, lo=db.large_object, **files) for label, text in WRITE_ATTEMPTS},
        files=list(files.values()),
    )
    run.passwd = db.server_read("/etc/passwd")  # the server's own /etc/passwd, as it would leak
    run.before = db.state()

    async def attack() -> None:
        # Both servers stay up until the state is read: a session-level leftover (an advisory
        # lock, a temporary table) lives as long as the connector's pooled connection.
        async with started(runtime) as role_host, started(runtime) as superuser_host:
            for name, host in zip(RUNS, (role_host, superuser_host), strict=True):
                superuser = name == "superuser"
                for label, text in run.sql.items():
                    run.responses[name, label] = await sql_call(
                        host, db, text, superuser=superuser, config={"statement_timeout_s": 10}
                    )
                began = time.monotonic()
                slow = await sql_call(host, db, LONG_QUERY, superuser=superuser, config={"statement_timeout_s": 1})
                run.slow[name] = (slow, time.monotonic() - began)
                run.finals[name] = await sql_call(host, db, FINAL_SELECT, superuser=superuser)
            run.after = await anyio.to_thread.run_sync(db.state)

    anyio.run(attack)
    run.expected_final = db.query(FINAL_SELECT)
    yield run
    for path in run.files:  # a file a refused statement must not have made; best effort if it did
        with contextlib.suppress(OSError):
            Path(path).unlink(missing_ok=True)


def test_corpus_is_large_and_labels_are_unique() -> None:
    labels = [label for label, _ in WRITE_ATTEMPTS]
    assert len(labels) >= 40
    assert len(labels) == len(set(labels))


@pytest.mark.parametrize("label", [label for label, _ in WRITE_ATTEMPTS])
@pytest.mark.parametrize("run", RUNS)
def test_write_attempt_is_refused(corpus: CorpusRun, run: str, label: str) -> None:
    response = corpus.responses[run, label]
    refused, kind = response.is_error, response.kind  # (no repr of a leaking answer in the report)
    assert refused and kind == "error", (corpus.sql[label], None if refused else everything_in(response)[:120])
    error = response.error or {}
    if error.get("name") == INVALID:
        # Only where PostgreSQL itself rejected the text (syntax) or the role (privilege).
        message = error["message"]
        assert message.startswith("PostgreSQL"), error
        assert "syntax error" in message or "permission denied" in message, error
    else:
        assert (error.get("name"), error.get("code")) == (RO, -32019), (corpus.sql[label], error)
    assert response.model_response == {"error": response.error}  # spec 12.1


@pytest.mark.parametrize("run", RUNS)
def test_a_long_query_ends_at_statement_timeout(corpus: CorpusRun, run: str) -> None:
    response, elapsed = corpus.slow[run]
    assert response.error_name == UPSTREAM, response.error
    assert "statement_timeout_s" in response.error["message"]
    assert elapsed >= 0.9  # the timeout did not fire early


@pytest.mark.parametrize("run", RUNS)
def test_a_select_still_works_after_the_corpus(corpus: CorpusRun, run: str) -> None:
    final = corpus.finals[run]
    assert not final.is_error, final.error
    assert final.rows() == corpus.expected_final


def test_every_table_and_catalog_object_is_unchanged(corpus: CorpusRun) -> None:
    assert corpus.before["checksums"]["public.orders"][0] > 0  # premise: there is something to destroy
    assert corpus.after["checksums"] == corpus.before["checksums"]
    for key in corpus.before:
        assert corpus.after[key] == corpus.before[key], key


def test_no_targeted_file_exists_on_the_server_or_here(corpus: CorpusRun, pg_database: Any) -> None:
    assert pg_database.server_file_exists("/etc/passwd")  # premise: the server's view of files works
    for path in corpus.files:
        assert not pg_database.server_file_exists(path), path
        assert not Path(path).exists(), path


def test_etc_passwd_never_appears_in_a_response(corpus: CorpusRun) -> None:
    lines = [line for line in corpus.passwd.splitlines() if len(line) >= 8]
    assert lines  # premise: the server can read it, so a leak would be visible
    for (run, label), response in corpus.responses.items():
        text = everything_in(response)
        leaked = [line for line in lines if line in text or json.dumps(line)[1:-1] in text]
        assert not leaked, (run, label, leaked[:1])


def test_no_response_carries_the_server_config_files_or_their_paths(corpus: CorpusRun, pg_database: Any) -> None:
    paths = [
        pg_database.scalar(f"SELECT current_setting('{name}')") for name in ("hba_file", "ident_file", "config_file")
    ]
    hba = pg_database.server_read(paths[0])
    rules = [" ".join(line.split()) for line in hba.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert rules  # premise: pg_hba.conf has rules, so a leak would be visible
    # Column names of pg_hba_file_rules and pg_file_settings: a leaked answer carries them as headers.
    markers = [*paths, "auth_method", "sourcefile"]
    for (run, label), response in corpus.responses.items():
        text = everything_in(response)
        flat = " ".join(text.split())
        leaked = [marker for marker in markers if marker in text] + [rule for rule in rules if rule in flat]
        assert not leaked, (run, label, leaked[:1])


# =====================================================================================================
# Typed headers from the driver's column types (spec 8.6)
# =====================================================================================================


async def test_headers_are_typed_from_the_driver_and_values_are_exact(
    pg_database: Any, runtime: dict[str, str]
) -> None:
    db = pg_database
    text = "SELECT n_big, n_num, d, ts, tsn, j, arr, b, flag, i, t FROM typed_values ORDER BY n_big DESC"
    expected = db.query(text)
    declared = {r["column_name"]: r["data_type"] for r in db.query(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'typed_values'"
    )}  # fmt: skip
    async with started(runtime) as host:
        result = await sql_call(host, db, text)
        nulls = await sql_call(
            host, db, "SELECT NULL::date AS d, NULL::timestamptz AS ts, NULL::bigint AS b, NULL::numeric AS n, "
            "NULL::jsonb AS j, NULL::int[] AS a, NULL::boolean AS f",
        )  # fmt: skip
    assert not result.is_error, result.error
    types = {h["name"]: h["type"] for h in result.system_data["headers"]}
    spec_type = {
        "bigint": "integer", "integer": "integer", "numeric": "number", "date": "date", "boolean": "boolean",
        "timestamp with time zone": "datetime", "timestamp without time zone": "datetime", "jsonb": "json",
        "ARRAY": "json", "text": "string", "bytea": "string",
    }  # fmt: skip
    assert types == {name: spec_type[declared[name]] for name in types}
    # Types come from the driver, not from the values: an all-null column keeps its type.
    assert {h["name"]: h["type"] for h in nulls.system_data["headers"]} == {
        "d": "date", "ts": "datetime", "b": "integer", "n": "number", "j": "json", "a": "json", "f": "boolean",
    }  # fmt: skip

    # A decimal a float cannot hold sends the table to a file that keeps its digits.
    data = result.system_data
    assert data["format"] == "file"
    assert str(expected[0]["n_num"]) in uri_path(data["table_uri"]).read_text("utf-8")
    rows = result.rows(exact=True)
    assert len(rows) == len(expected)
    for got, want in zip(rows, expected, strict=True):
        assert got["n_big"] == want["n_big"] and type(got["n_big"]) is int
        assert got["n_num"] == want["n_num"]
        assert got["d"] == (want["d"].isoformat() if want["d"] else None)
        if want["ts"] is None:
            assert got["ts"] is None
        else:
            assert got["ts"].endswith("Z"), got["ts"]  # ISO 8601 UTC
            assert dt.datetime.fromisoformat(got["ts"].replace("Z", "+00:00")) == want["ts"]
        if want["tsn"] is None:
            assert got["tsn"] is None
        else:  # a naive timestamp stays naive: no invented zone
            assert dt.datetime.fromisoformat(got["tsn"]).tzinfo is None
            assert dt.datetime.fromisoformat(got["tsn"]) == want["tsn"]
        assert got["j"] == want["j"] and got["arr"] == want["arr"]
        assert got["b"] == (None if want["b"] is None else base64.b64encode(bytes(want["b"])).decode())
        assert (got["flag"], got["i"], got["t"]) == (want["flag"], want["i"], want["t"])
    assert expected[0]["n_big"] == 2**63 - 1 and float(expected[0]["n_num"]) != expected[0]["n_num"]  # premises
    warnings = result.system_info["warnings"]
    assert any("base64" in w.lower() or "binary" in w.lower() for w in warnings), warnings  # bytea: said, not silent


async def test_bigint_near_2_63_stays_exact_inline(pg_database: Any, runtime: dict[str, str]) -> None:
    db = pg_database
    text = "SELECT id, big FROM orders ORDER BY id LIMIT 5"
    async with started(runtime) as host:
        result = await sql_call(host, db, text)
    assert result.system_data["format"] == "inline"
    assert result.rows() == db.query(text)
    assert result.rows()[0]["big"] > 2**62


# =====================================================================================================
# Streaming, max_rows, statement timeout and cancellation
# =====================================================================================================


def _json_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v.isoformat() if isinstance(v, dt.date) else v for k, v in row.items()} for row in rows]


async def test_large_result_streams_to_a_table_file_equal_to_a_direct_query(
    pg_database: Any, runtime: dict[str, str]
) -> None:
    db = pg_database
    text = "SELECT id, customer_id, order_date, amount, status, tags FROM orders ORDER BY id"
    expected = db.query(text)
    async with started(runtime) as host:
        result = await sql_call(host, db, text, inline_max_bytes=4096)
    assert not result.is_error, result.error
    data = result.system_data
    assert data["format"] == "file" and "table" not in data
    assert uri_path(data["table_uri"]).parent == Path(runtime["ACP_TMP_DIR"]).resolve()
    assert data["row_count"] == len(expected) == result.model_response["total_rows"]
    assert result.rows(exact=True) == _json_rows(expected)
    assert "truncated" not in result.system_info.get("source", {})


async def test_max_rows_caps_the_extraction_with_a_warning(pg_database: Any, runtime: dict[str, str]) -> None:
    db = pg_database
    async with started(runtime) as host:
        capped = await sql_call(
            host, db, "SELECT g AS n FROM generate_series(1, 1000) g ORDER BY g", config={"max_rows": 50}
        )
        exact = await sql_call(
            host, db, "SELECT g AS n FROM generate_series(1, 50) g ORDER BY g", config={"max_rows": 50}
        )
    assert not capped.is_error, capped.error
    assert capped.rows() == [{"n": i} for i in range(1, 51)]
    assert capped.system_data["row_count"] == 50
    assert capped.system_info["source"]["truncated"] is True
    assert any("max_rows" in w for w in capped.system_info["warnings"])
    # Exactly max_rows rows is not a cut: the engine looks one row further to know.
    assert exact.rows() == [{"n": i} for i in range(1, 51)]
    assert "truncated" not in exact.system_info["source"]
    assert not any("max_rows" in w for w in exact.system_info["warnings"])


async def test_statement_timeout_stops_a_long_query_and_the_server_keeps_serving(
    pg_database: Any, runtime: dict[str, str]
) -> None:
    db = pg_database
    async with started(runtime) as host:
        began = time.monotonic()
        result = await sql_call(
            host, db, "SELECT count(*) AS n FROM generate_series(1, 100000000000)", config={"statement_timeout_s": 1}
        )
        elapsed = time.monotonic() - began
        assert result.error_name == UPSTREAM and result.error["code"] == -32018, result.error
        assert "statement_timeout_s" in result.error["message"]
        assert elapsed >= 0.9  # the timeout did not fire early; only it ends that count
        after = await sql_call(host, db, "SELECT count(*) AS n FROM orders")
        assert after.rows() == db.query("SELECT count(*) AS n FROM orders")
        assert db.busy() == []  # nothing of the stopped query keeps running


async def test_cancelling_the_call_stops_the_query_at_the_server(pg_database: Any, runtime: dict[str, str]) -> None:
    db = pg_database
    seen: list[dict[str, Any]] = []
    async with started(runtime) as host:
        async with anyio.create_task_group() as group:

            async def call() -> None:
                with anyio.move_on_after(60):
                    await sql_call(host, db, LONG_QUERY)

            group.start_soon(call)
            deadline = time.monotonic() + 10
            while not seen and time.monotonic() < deadline:
                seen = await anyio.to_thread.run_sync(db.busy)
                await anyio.sleep(0.05)
            group.cancel_scope.cancel()  # the host gives up on the call
        # Premise: the query was running at the server, in the connector's session.
        assert [r["application_name"] for r in seen] == ["acp-databases"], seen
        # Gone long before the count would end on its own: the cancel stopped it at the server.
        cancelled_at = time.monotonic()
        while db.busy() and time.monotonic() - cancelled_at < 60:
            await anyio.sleep(0.1)
        assert db.busy() == []
        assert db.query("SELECT pid FROM pg_stat_activity WHERE pid = %s", (seen[0]["pid"],)) == []  # session closed
        after = await sql_call(host, db, "SELECT 1 AS one")
        assert after.rows() == [{"one": 1}]


# =====================================================================================================
# Resources and autocontext blocks over the real database (spec 6, 7)
# =====================================================================================================


@dataclass
class Catalog:
    """Answers of one server, and what the database held when they were given."""

    responses: dict[str, ToolResponse]
    databases: list[str]
    schemas: list[str]
    relations: list[tuple[str, str, str]]  # readable by the role
    all_relations: list[tuple[str, str, str]]
    counts: dict[str, int]
    reltuples: dict[str, float]


def _relation_key(schema: str, name: str) -> str:
    return f"{schema}.{name}"


@pytest.fixture(scope="module")
def catalog(pg_database: Any, runtime: dict[str, str]) -> Catalog:
    db = pg_database
    name = db.name
    calls: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
        "list": ("autocontext", {}, db.meta()),
        "database": ("autocontext", {"resource_id": name}, db.meta()),
        "public": ("autocontext", {"resource_id": f"{name}.public"}, db.meta()),
        "sales": ("autocontext", {"resource_id": f"{name}.sales"}, db.meta()),
        "orders": ("autocontext", {"resource_id": f"{name}.public.orders"}, db.meta()),
        "quoted": ("autocontext", {"resource_id": f'"{name}"."public"."orders"', "request_data": ["tables"]}, db.meta()),
        "slashes": ("autocontext", {"resource_id": f"{name}/public/orders", "request_data": ["date_ranges"]}, db.meta()),
        "data-database": ("autocontext_data", {"resource_id": name}, db.meta()),
        "data-schema": ("autocontext_data", {"resource_id": f"{name}.public"}, db.meta()),
        "data-table": ("autocontext_data", {"resource_id": f"{name}.public.orders"}, db.meta()),
        "payroll": ("autocontext", {"resource_id": f"{name}.public.payroll"}, db.meta()),
        "payroll-query": ("execute_sql", {"resource_id": name, "sql": "SELECT * FROM payroll"}, db.meta()),
        "payroll-describe": ("describe_table", {"resource_id": f"{name}.public.payroll"}, db.meta()),
        "superuser-public": ("autocontext", {"resource_id": f"{name}.public", "request_data": ["tables"]}, db.meta(superuser=True)),
        "describe-customers": ("describe_table", {"resource_id": f"{name}.public.customers"}, db.meta()),
        "describe-orders": ("describe_table", {"resource_id": f"{name}.public.orders"}, db.meta()),
        "describe-targets": ("describe_table", {"resource_id": f"{name}.sales.targets"}, db.meta()),
        "closed": ("autocontext", {"resource_id": db.closed}, db.meta()),
        "schema-missing": ("autocontext", {"resource_id": f"{name}.nope"}, db.meta()),
    }  # fmt: skip
    responses: dict[str, ToolResponse] = {}

    async def ask() -> None:
        async with started(runtime) as host:
            for key, (tool, arguments, meta) in calls.items():
                responses[key] = await host.call(tool, arguments, meta)

    anyio.run(ask)
    with db.connect(as_role=True) as conn:
        databases = [r[0] for r in conn.execute(
            "SELECT datname FROM pg_database WHERE datallowconn AND NOT datistemplate "
            "AND has_database_privilege(datname, 'CONNECT') ORDER BY datname"
        )]  # fmt: skip
        schemas = [r[0] for r in conn.execute(
            "SELECT schema_name FROM information_schema.schemata WHERE schema_name !~ '^pg_' "
            "AND schema_name <> 'information_schema' AND has_schema_privilege(schema_name, 'USAGE') ORDER BY 1"
        )]  # fmt: skip
        readable = {tuple(r) for r in conn.execute(
            "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE has_table_privilege(c.oid, 'SELECT')"
        )}  # fmt: skip
    all_relations = db.relations("rvmpf")
    counts = {_relation_key(s, n): int(db.scalar(f'SELECT count(*) FROM "{s}"."{n}"')) for s, n, _ in all_relations}
    reltuples = {_relation_key(r[0], r[1]): float(r[2]) for r in db.rows(
        "SELECT n.nspname, c.relname, c.reltuples FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
    )}  # fmt: skip
    return Catalog(
        responses=responses,
        databases=databases,
        schemas=schemas,
        relations=[r for r in all_relations if (r[0], r[1]) in readable],
        all_relations=all_relations,
        counts=counts,
        reltuples=reltuples,
    )


def blocks(response: ToolResponse) -> dict[str, Any]:
    assert not response.is_error, response.error
    assert response.kind == "autocontext"
    out = {}
    for block in response.model_response:
        assert "error" not in block, block
        out[block["id"]] = block["data"]
    return out


def test_resource_list_is_the_connectable_databases_then_the_schemas(catalog: Catalog, pg_database: Any) -> None:
    db = pg_database
    response = catalog.responses["list"]
    assert not response.is_error, response.error
    listed = response.model_response["resources"]
    expected = catalog.databases + [f"{db.name}.{s}" for s in catalog.schemas]
    assert db.name in catalog.databases and db.closed not in catalog.databases  # premises
    assert catalog.schemas == ["public", "sales", "scratch"]
    assert response.model_response["total_available"] == len(expected) <= 25
    assert sorted(r["resource_id"] for r in listed) == sorted(expected)
    groups = {r["resource_id"]: r.get("group") for r in listed}
    assert all(groups[f"{db.name}.{s}"] == db.name for s in catalog.schemas)
    assert len({groups[d] for d in catalog.databases}) == 1 and db.name not in {groups[d] for d in catalog.databases}
    assert response.system_info["resource_id"] is None  # spec 6.3


def test_resource_ids_have_levels_and_normalize(catalog: Catalog, pg_database: Any) -> None:
    name = pg_database.name
    assert catalog.responses["database"].system_info["resource_id"] == name
    assert catalog.responses["public"].system_info["resource_id"] == f"{name}.public"
    for key in ("orders", "quoted", "slashes"):
        response = catalog.responses[key]
        assert not response.is_error, response.error
        assert response.system_info["resource_id"] == f"{name}.public.orders"
    database_blocks = {b["id"]: b for b in catalog.responses["data-database"].model_response}
    assert set(blocks(catalog.responses["database"])) == set(database_blocks)
    assert "schemas" in database_blocks and "tables" in database_blocks
    assert "schemas" not in blocks(catalog.responses["public"])
    schema_blocks = [b["id"] for b in catalog.responses["data-schema"].model_response]
    assert "tables" in schema_blocks and "schemas" not in schema_blocks
    assert {"schemas", "tables"}.isdisjoint(blocks(catalog.responses["orders"]))
    assert [b["id"] for b in catalog.responses["quoted"].model_response] == ["tables"]
    assert "error" in catalog.responses["quoted"].model_response[0]  # 'tables' does not apply to a table


def test_unknown_and_closed_resources_are_not_found(catalog: Catalog, pg_database: Any) -> None:
    for key in ("closed", "schema-missing", "payroll", "payroll-describe"):
        response = catalog.responses[key]
        assert response.error_name == "ACP_RESOURCE_NOT_FOUND" and response.error["code"] == -32014, (
            key,
            response.error,
        )
    assert f"{pg_database.name}.public" in catalog.responses["schema-missing"].error["message"]


def test_a_table_the_role_cannot_read_is_not_listed(catalog: Catalog) -> None:
    assert ("public", "payroll", "r") in catalog.all_relations
    assert ("public", "payroll", "r") not in catalog.relations  # premise: the role has no grant
    superuser = [e["table"] for e in blocks(catalog.responses["superuser-public"])["tables"]]
    assert "payroll" in superuser  # the superuser sees it: the role's view is what hides it
    for key in ("database", "public"):
        assert "payroll" not in json.dumps(catalog.responses[key].model_response), key
    refused = catalog.responses["payroll-query"]
    assert refused.error_name == INVALID and "permission denied" in refused.error["message"]


def test_schemas_block_counts_the_readable_tables(catalog: Catalog) -> None:
    expected = [{"schema": s, "tables": sum(1 for r in catalog.relations if r[0] == s)} for s in catalog.schemas]
    assert blocks(catalog.responses["database"])["schemas"] == expected


@pytest.mark.parametrize("level", ["database", "public", "sales"])
def test_tables_block_counts_exactly_or_flags_the_catalog_estimate(catalog: Catalog, level: str) -> None:
    data = blocks(catalog.responses[level])["tables"]
    relations = [r for r in catalog.relations if level in ("database", r[0])]
    name = (lambda s, n: f"{s}.{n}") if level == "database" else (lambda s, n: n)
    assert [e["table"] for e in data] == [name(s, n) for s, n, _ in relations]
    for (schema, table, kind), entry in zip(relations, data, strict=True):
        key = _relation_key(schema, table)
        assert entry["type"] == ("view" if kind in "vm" else "table"), entry
        if entry.get("rows_estimated"):
            assert entry["rows"] == int(catalog.reltuples[key]), entry
        else:
            assert entry["rows"] == catalog.counts[key], entry
        if 0 <= catalog.reltuples[key] < 1000:
            assert "rows_estimated" not in entry, entry  # small tables are counted
    by_name = {e["table"]: e for e in data}
    if level == "sales":
        assert list(by_name) == ["regions", "targets"]
        return
    page_views = by_name[name("public", "page_views")]
    assert page_views["rows"] == pg_server.HUGE_ESTIMATE and page_views["rows_estimated"] is True
    assert by_name[name("public", "customers")]["comment"] == "People who bought at least once"


def _expected_schema(db: Any, schema: str, table: str) -> dict[str, Any]:
    columns = db.query(
        "SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS not_null, "
        "col_description(a.attrelid, a.attnum) AS comment FROM pg_attribute a "
        "WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
        (f'"{schema}"."{table}"',),
    )
    primary = [r["column_name"] for r in db.query(
        "SELECT k.column_name FROM information_schema.table_constraints t JOIN information_schema.key_column_usage k "
        "USING (constraint_schema, constraint_name) WHERE t.constraint_type = 'PRIMARY KEY' AND t.table_schema = %s "
        "AND t.table_name = %s ORDER BY k.ordinal_position", (schema, table),
    )]  # fmt: skip
    return {"columns": columns, "primary_key": primary, "foreign_keys": _expected_foreign_keys(db, schema, table)}


def _expected_foreign_keys(db: Any, schema: str, table: str) -> set[tuple[Any, ...]]:
    rows = db.query(
        "SELECT k.constraint_name, k.column_name, r.table_schema AS ref_schema, r.table_name AS ref_table, "
        "r.column_name AS ref_column FROM information_schema.referential_constraints rc "
        "JOIN information_schema.key_column_usage k USING (constraint_schema, constraint_name) "
        "JOIN information_schema.key_column_usage r ON r.constraint_schema = rc.unique_constraint_schema "
        "AND r.constraint_name = rc.unique_constraint_name AND r.ordinal_position = k.position_in_unique_constraint "
        "WHERE k.table_schema = %s AND k.table_name = %s ORDER BY k.constraint_name, k.ordinal_position",
        (schema, table),
    )
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(row["constraint_name"], []).append(row)
    return {
        (parts[0]["ref_schema"], parts[0]["ref_table"], tuple(p["column_name"] for p in parts),
         tuple(p["ref_column"] for p in parts))
        for parts in grouped.values()
    }  # fmt: skip


def _reported_keys(keys: list[dict[str, Any]], schema: str) -> set[tuple[Any, ...]]:
    out = set()
    for key in keys:
        ref_schema, _, ref_table = key["references"].rpartition(".")
        out.add((ref_schema or schema, ref_table, tuple(key["columns"]), tuple(key["referenced_columns"])))
    return out


@pytest.mark.parametrize("level", ["database", "orders"])
def test_table_schemas_equal_the_catalog(catalog: Catalog, pg_database: Any, level: str) -> None:
    data = blocks(catalog.responses[level])["table_schemas"]
    if level == "orders":
        targets = [("public", "orders")]
        assert [e["table"] for e in data] == ["orders"]
    else:
        targets = [(s, n) for s, n, _ in catalog.relations]
        assert [e["table"] for e in data] == [f"{s}.{n}" for s, n in targets]
    for (schema, table), entry in zip(targets, data, strict=True):
        expected = _expected_schema(pg_database, schema, table)
        reported = [
            {"name": c["name"], "type": c["type"], "not_null": c.get("not_null", False), "comment": c.get("comment")}
            for c in entry["columns"]
        ]
        assert reported == expected["columns"], entry["table"]
        assert [c["name"] for c in entry["columns"] if c.get("primary_key")] == expected["primary_key"]
        assert _reported_keys(entry.get("foreign_keys", []), schema) == expected["foreign_keys"], entry["table"]
        comment = pg_database.scalar("SELECT obj_description(%s::regclass, 'pg_class')", (f'"{schema}"."{table}"',))
        assert entry.get("comment") == comment
    if level == "database":
        targets_entry = next(e for e in data if e["table"] == "sales.targets")
        assert len(_reported_keys(targets_entry["foreign_keys"], "sales")) == 2  # premise: keys across schemas


def _date_columns(db: Any, relations: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    out = []
    for schema, table, _ in relations:
        for row in db.query(
            "SELECT attname, format_type(atttypid, atttypmod) AS type FROM pg_attribute WHERE attrelid = %s::regclass "
            "AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
            (f'"{schema}"."{table}"',),
        ):
            if row["type"] in ("date", "timestamp with time zone", "timestamp without time zone"):
                out.append((f"{schema}.{table}", row["attname"], row["type"]))
    return out


def test_date_ranges_equal_direct_min_and_max(catalog: Catalog, pg_database: Any) -> None:
    db = pg_database
    data = blocks(catalog.responses["database"])["date_ranges"]
    columns = _date_columns(db, catalog.relations)
    assert {(e["table"], e["column"]) for e in data} == {(t, c) for t, c, _ in columns}
    kinds = {(t, c): k for t, c, k in columns}
    for entry in data:
        schema, table = entry["table"].split(".")
        low, high = db.rows(f'SELECT min("{entry["column"]}"), max("{entry["column"]}") FROM "{schema}"."{table}"')[0]
        kind = kinds[entry["table"], entry["column"]]
        for got, want in ((entry["min"], low), (entry["max"], high)):
            if kind == "date":
                assert got == want.isoformat()
            elif kind == "timestamp with time zone":
                assert got.endswith("Z") and dt.datetime.fromisoformat(got.replace("Z", "+00:00")) == want
            else:
                assert dt.datetime.fromisoformat(got) == want and dt.datetime.fromisoformat(got).tzinfo is None
    orders = blocks(catalog.responses["orders"])["date_ranges"]
    assert [(e["table"], e["column"]) for e in orders] == [("orders", "order_date")]


def test_sample_values_are_the_top_values_of_low_cardinality_text_columns(catalog: Catalog, pg_database: Any) -> None:
    db = pg_database
    data = {(e["table"], e["column"]): e for e in blocks(catalog.responses["database"])["sample_values"]}
    checked = 0
    for schema, table, _ in catalog.relations:
        for row in db.query(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS type, EXISTS (SELECT 1 FROM pg_index i "
            "WHERE i.indrelid = a.attrelid AND i.indisprimary AND a.attnum = ANY(i.indkey)) AS pk FROM pg_attribute a "
            "WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped",
            (f'"{schema}"."{table}"',),
        ):
            key = (f"{schema}.{table}", row["attname"])
            if row["type"] not in ("text", "character varying") or row["pk"]:
                if key in data:  # only text-like columns are sampled (never numbers, dates, json or keys)
                    assert "text" in row["type"] and not row["pk"], data[key]
                continue
            top = db.rows(
                f'SELECT v, count(*) FROM (SELECT "{row["attname"]}" AS v FROM "{schema}"."{table}" LIMIT 10000) s '
                "WHERE v IS NOT NULL GROUP BY v ORDER BY 2 DESC, 1"
            )
            if 0 < len(top) <= 20:
                assert data[key] == {"table": key[0], "column": key[1], "values": [v for v, _ in top[:10]],
                                     "distinct": len(top)}  # fmt: skip
                checked += 1
            else:
                assert key not in data
    assert ("public.orders", "status") in data and checked >= 3


def test_relationships_are_the_foreign_keys_between_readable_tables(catalog: Catalog, pg_database: Any) -> None:
    readable = {(s, n) for s, n, _ in catalog.relations}
    expected = set()
    for schema, table in readable:
        for ref_schema, ref_table, cols, refs in _expected_foreign_keys(pg_database, schema, table):
            if (ref_schema, ref_table) in readable:
                expected.add((schema, table, cols, ref_schema, ref_table, refs))
    assert len(expected) == 3  # orders → customers, targets → regions, targets → public.customers
    reported = set()
    for edge in blocks(catalog.responses["database"])["relationships"]:
        source, target = edge.split(" → ")
        src_table, _, src_cols = source.rpartition(".")
        schema, table = src_table.split(".")
        ref, _, ref_cols = target.rpartition(".")
        ref_schema, _, ref_table = ref.rpartition(".")
        reported.add((schema, table, (src_cols,), ref_schema or schema, ref_table, (ref_cols,)))
    assert reported == expected


@pytest.mark.parametrize(("key", "schema", "table"), [
    ("describe-customers", "public", "customers"), ("describe-orders", "public", "orders"),
    ("describe-targets", "sales", "targets"),
])  # fmt: skip
def test_describe_table_equals_the_catalog(
    catalog: Catalog, pg_database: Any, key: str, schema: str, table: str
) -> None:
    response = catalog.responses[key]
    assert not response.is_error, response.error
    described = response.model_response
    expected = _expected_schema(pg_database, schema, table)
    assert described["table"] == f"{pg_database.name}.{schema}.{table}"
    assert described["type"] == "table"
    assert described["rows"] == catalog.counts[_relation_key(schema, table)]
    assert [
        {"name": c["name"], "type": c["type"], "not_null": not c["nullable"], "comment": c.get("comment")}
        for c in described["columns"]
    ] == expected["columns"]
    assert described.get("primary_key", []) == expected["primary_key"]
    assert _reported_keys(described.get("foreign_keys", []), schema) == expected["foreign_keys"]
    comment = pg_database.scalar("SELECT obj_description(%s::regclass, 'pg_class')", (f'"{schema}"."{table}"',))
    assert described.get("comment") == comment


# =====================================================================================================
# hidden tables and columns (personal data)
# =====================================================================================================

HIDDEN = ["customers\\.email", "orders\\.meta", "sales\\.targets"]
HIDDEN_QUERIES = [
    ("direct", "SELECT email FROM customers"),
    ("star", "SELECT * FROM customers"),
    ("qualified-star", "SELECT c.* FROM customers c"),
    ("table-command", "TABLE customers"),
    ("whole-row-function", "SELECT row_to_json(c) FROM customers c"),
    ("whole-row", "SELECT c FROM customers c"),
    ("whole-row-field", "SELECT (c).email FROM customers c"),
    ("column-alias", "SELECT email AS contact FROM customers"),
    ("table-alias", "SELECT c.email AS e FROM public.customers AS c"),
    ("column-alias-list", "SELECT e FROM customers AS t(i, n, e, c)"),
    ("function", "SELECT upper(email) AS e FROM customers"),
    ("hash", "SELECT md5(email) AS h FROM customers"),
    ("cte", "WITH x AS (SELECT email FROM customers) SELECT * FROM x"),
    ("cte-star", "WITH x AS (SELECT * FROM customers) SELECT x.email FROM x"),
    ("subquery-star", "SELECT x.email FROM (SELECT * FROM customers) x"),
    ("filter", "SELECT 1 AS one FROM customers WHERE email LIKE 'c0%'"),
    ("upper-case", "SELECT EMAIL FROM PUBLIC.CUSTOMERS"),
    ("quoted", 'SELECT "email" FROM "customers"'),
    ("json-key", "SELECT meta->>'channel' AS channel FROM orders"),
    ("json-star", "SELECT o.* FROM orders o"),
    ("json-whole-row", "SELECT to_jsonb(o) FROM orders o"),
    ("hidden-table", "SELECT * FROM sales.targets"),
    ("hidden-table-count", "SELECT count(*) FROM sales.targets"),
    ("hidden-table-column", "SELECT t.region_code FROM sales.targets t"),
    ("hidden-table-join", "SELECT r.name FROM sales.regions r JOIN sales.targets t ON t.region_code = r.code"),
]
VISIBLE_QUERIES = [
    "SELECT id, name, created_at FROM customers ORDER BY id",
    "SELECT count(*) AS n FROM customers",
    "SELECT o.id, o.amount, c.name FROM orders o JOIN customers c ON c.id = o.customer_id ORDER BY o.id LIMIT 20",
]


@dataclass
class HiddenSession:
    shown: dict[str, ToolResponse]  # answers that must not show hidden data
    refused: dict[str, ToolResponse]
    visible: dict[str, ToolResponse]
    not_found: dict[str, ToolResponse]
    expected_visible: dict[str, list[dict[str, Any]]]
    emails: list[str]
    database: str


@pytest.fixture(scope="module")
def hidden_session(pg_database: Any, tmp_path_factory: pytest.TempPathFactory) -> HiddenSession:
    db = pg_database
    root = tmp_path_factory.mktemp("pg-hidden")  # its own cache: see the cache test below
    runtime = {"ACP_CACHE_DIR": str(root / "cache"), "ACP_TMP_DIR": str(root / "tmp")}
    name = db.name
    meta = db.meta(config={"hidden": json.dumps(HIDDEN)})
    shown_calls = {
        "list": ("autocontext", {}),
        "database": ("autocontext", {"resource_id": name}),
        "public": ("autocontext", {"resource_id": f"{name}.public"}),
        "sales": ("autocontext", {"resource_id": f"{name}.sales"}),
        "customers": ("autocontext", {"resource_id": f"{name}.public.customers"}),
        "orders": ("autocontext", {"resource_id": f"{name}.public.orders"}),
        "describe-customers": ("describe_table", {"resource_id": f"{name}.public.customers"}),
        "describe-orders": ("describe_table", {"resource_id": f"{name}.public.orders"}),
    }
    missing_calls = {
        "describe-targets": ("describe_table", {"resource_id": f"{name}.sales.targets"}),
        "autocontext-targets": ("autocontext", {"resource_id": f"{name}.sales.targets"}),
    }
    emails = [r["email"] for r in db.query("SELECT email FROM customers WHERE email IS NOT NULL")]
    session = HiddenSession({}, {}, {}, {}, {}, emails, name)

    async def ask() -> None:
        async with started(runtime) as host:
            for key, (tool, arguments) in shown_calls.items():
                session.shown[key] = await host.call(tool, arguments, meta)
            for key, (tool, arguments) in missing_calls.items():
                session.not_found[key] = await host.call(tool, arguments, meta)
            for key, text in HIDDEN_QUERIES:
                session.refused[key] = await host.call("execute_sql", {"resource_id": name, "sql": text}, meta)
            for text in VISIBLE_QUERIES:
                session.visible[text] = await host.call("execute_sql", {"resource_id": name, "sql": text}, meta)

    anyio.run(ask)
    session.expected_visible = {text: _json_rows_tz(db.query(text)) for text in VISIBLE_QUERIES}
    return session


def _json_rows_tz(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        out.append({
            key: value.astimezone(dt.UTC).replace(tzinfo=None).isoformat() + "Z"
            if isinstance(value, dt.datetime) else value
            for key, value in row.items()
        })  # fmt: skip
    return out


def _as_decimals(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Inline JSON numbers with a fraction, as the decimals PostgreSQL holds."""
    return [{k: Decimal(repr(v)) if isinstance(v, float) else v for k, v in row.items()} for row in rows]


def _hidden_leaks(text: str, emails: list[str]) -> list[str]:
    markers = ['"email"', '"meta"', "Contact address", '"channel"', "targets", *emails]
    return [m for m in markers if m in text]


@pytest.mark.parametrize("key", ["list", "database", "public", "sales", "customers", "orders", "describe-customers",
                                 "describe-orders"])  # fmt: skip
def test_hidden_data_is_in_no_block_or_description(hidden_session: HiddenSession, key: str) -> None:
    response = hidden_session.shown[key]
    assert not response.is_error, response.error
    text = json.dumps(response.model_response) + json.dumps(response.system_info)
    assert _hidden_leaks(text, hidden_session.emails) == []
    if key == "describe-customers":  # premise: the rest of the table is still described
        assert [c["name"] for c in response.model_response["columns"]] == ["id", "name", "created_at"]


@pytest.mark.parametrize("key", [key for key, _ in HIDDEN_QUERIES])
def test_queries_touching_hidden_data_are_refused(hidden_session: HiddenSession, key: str) -> None:
    response = hidden_session.refused[key]
    name = response.error_name
    shown = None if response.is_error else everything_in(response)[:200]
    assert name == INVALID and response.error["code"] == -32017, (key, shown)
    assert "hid" in response.error["message"]
    assert not [email for email in hidden_session.emails if email in everything_in(response)]


def test_hidden_table_is_not_found_and_not_listed(hidden_session: HiddenSession) -> None:
    for key, response in hidden_session.not_found.items():
        assert response.error_name == "ACP_RESOURCE_NOT_FOUND", (key, response.error)
        requested = f"{hidden_session.database}.sales.targets"
        assert "targets" not in response.error["message"].replace(requested, ""), response.error


@pytest.mark.parametrize("text", VISIBLE_QUERIES)
def test_queries_without_hidden_data_still_work(hidden_session: HiddenSession, text: str) -> None:
    response = hidden_session.visible[text]
    assert not response.is_error, response.error
    assert _as_decimals(response.rows()) == hidden_session.expected_visible[text]
    assert _hidden_leaks(everything_in(response), hidden_session.emails) == []


async def test_hidden_config_is_not_served_from_a_cache_filled_without_it(
    pg_database: Any, tmp_path_factory: pytest.TempPathFactory, hidden_session: HiddenSession
) -> None:
    """The source gets a ``hidden`` setting after its autocontext was cached (spec 7.4 keys the cache by
    credentials, resource and block; the hidden data must not come back from it)."""
    db = pg_database
    root = tmp_path_factory.mktemp("pg-cache")
    runtime = {"ACP_CACHE_DIR": str(root / "cache"), "ACP_TMP_DIR": str(root / "tmp")}
    resource = {"resource_id": f"{db.name}.public.customers"}
    async with started(runtime) as host:
        before = await host.call("autocontext", resource, db.meta())
        after = await host.call("autocontext", resource, db.meta(config={"hidden": json.dumps(HIDDEN)}))
    assert '"email"' in json.dumps(before.model_response)  # premise: cached while visible
    assert not after.is_error, after.error
    assert _hidden_leaks(json.dumps(after.model_response), hidden_session.emails) == []


# =====================================================================================================
# insert_rows from a host table (spec 8.8, 10.6)
# =====================================================================================================

EVENT_HEADERS = [
    {"name": "id", "type": "integer"},
    {"name": "label", "type": "string"},
    {"name": "happened", "type": "date"},
    {"name": "value", "type": "number"},
]
EVENT_ROWS = [
    {"id": 100, "label": "first", "happened": "2025-07-01", "value": 1.25},
    {"id": 101, "label": "tab\there, newline\nand a backslash \\ too", "happened": "2025-07-02", "value": -3},
    {"id": 102, "label": "ñandú ✓ 'quoted' \"double\"", "happened": "2025-07-03", "value": 12345678.5},
    {"id": 103, "label": None, "happened": None, "value": None},
]
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
    {"n": 2**40, "s": "a", "d": "2025-01-31", "x": 0.5, "ok": True, "at": "2025-01-31T10:15:00", "j": {"k": [1, 2]}},
    {"n": -1, "s": "b", "d": "2024-02-29", "x": 2, "ok": False, "at": "2024-02-29T00:00:01", "j": [1, "two"]},
]
SENSIBLE_TYPES = {
    "n": {"bigint", "integer", "numeric"},
    "s": {"text", "character varying"},
    "d": {"date"},
    "x": {"numeric", "double precision"},
    "ok": {"boolean"},
    "at": {"timestamp without time zone", "timestamp with time zone"},
    "j": {"jsonb", "json"},
}


def _events_table(db: Any) -> str:
    """A fresh scratch table the role may read and append to."""
    name = f"events_{secrets.token_hex(4)}"
    with db.connect() as conn:
        conn.execute(f"CREATE TABLE scratch.{name} (id integer, label text, happened date, value numeric)")
        conn.execute(f"INSERT INTO scratch.{name} VALUES (1, 'seed', '2025-01-01', 1.5)")
        conn.execute(f'GRANT SELECT, INSERT ON scratch.{name} TO "{db.role}"')
    return name


def _host_tables() -> StaticTables:
    return StaticTables({
        "ds_events": StaticTable(headers=EVENT_HEADERS, rows=EVENT_ROWS),
        "ds_new": StaticTable(headers=NEW_HEADERS, rows=NEW_ROWS),
        "ds_extra": StaticTable(headers=[*EVENT_HEADERS, {"name": "nope", "type": "string"}],
                                rows=[{**EVENT_ROWS[0], "nope": "x"}]),
    })  # fmt: skip


def _event_tuples(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(
        ((r["id"], r["label"], None if r["happened"] is None else str(r["happened"]),
          None if r["value"] is None else Decimal(str(r["value"]))) for r in rows),
        key=lambda t: t[0],
    )  # fmt: skip


async def _insert(host: AcpHost, db: Any, table: str, ref: str, **config: Any) -> ToolResponse:
    return await host.call(
        "insert_rows", {"resource_id": f"{db.name}.scratch.{table}", "table_ref": ref}, db.meta(config=config or None)
    )


async def test_insert_rows_is_refused_in_only_read_and_where_table_rules_close_the_table(
    pg_database: Any, runtime: dict[str, str]
) -> None:
    db = pg_database
    table = _events_table(db)
    before = db.rows(f"SELECT * FROM scratch.{table}")
    closing = json.dumps(
        [{"pattern": f"scratch\\.{table}", "mode": "onlyRead"}, {"pattern": ".*", "mode": "readAndOnlyAdd"}]
    )
    async with started(runtime, tables=_host_tables()) as host:
        default = await _insert(host, db, table, "ds_events")
        explicit = await _insert(host, db, table, "ds_events", access_mode="onlyRead")
        closed = await _insert(host, db, table, "ds_events", access_mode="readAndOnlyAdd", table_rules=closing)
    for response in (default, explicit, closed):
        assert response.error_name == RO and response.error["code"] == -32019, response.error
    assert "onlyRead" in closed.error["message"]
    assert db.rows(f"SELECT * FROM scratch.{table}") == before


async def test_insert_rows_appends_exactly_the_host_rows(pg_database: Any, runtime: dict[str, str]) -> None:
    db = pg_database
    table = _events_table(db)
    before = db.query(f"SELECT * FROM scratch.{table}")
    opening = json.dumps([{"pattern": f"scratch\\.{table}", "mode": "readAndOnlyAdd"}])
    tables = _host_tables()
    async with started(runtime, tables=tables) as host:
        added = await _insert(host, db, table, "ds_events", access_mode="readAndOnlyAdd")
        opened = await _insert(host, db, table, "ds_events", table_rules=opening)  # onlyRead, opened by a rule
    for response in (added, opened):
        assert not response.is_error, response.error
        assert response.model_response["inserted_rows"] == len(EVENT_ROWS)
        assert response.model_response["created"] is False
    assert tables.requests and all(r["ref"] == "ds_events" for r in tables.requests)
    after = db.query(f"SELECT * FROM scratch.{table}")
    assert _event_tuples(after) == _event_tuples(before + EVENT_ROWS + EVENT_ROWS)


async def test_insert_rows_creates_a_missing_table_with_sensible_types(
    pg_database: Any, runtime: dict[str, str]
) -> None:
    db = pg_database
    table = f"created_{secrets.token_hex(4)}"
    async with started(runtime, tables=_host_tables()) as host:
        response = await _insert(host, db, table, "ds_new", access_mode="readAndOnlyAdd")
    assert not response.is_error, response.error
    assert response.model_response["created"] is True and response.model_response["inserted_rows"] == len(NEW_ROWS)
    types = {r["column_name"]: r["data_type"] for r in db.query(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'scratch' "
        "AND table_name = %s ORDER BY ordinal_position", (table,),
    )}  # fmt: skip
    assert list(types) == [h["name"] for h in NEW_HEADERS]
    for column, kind in types.items():
        assert kind in SENSIBLE_TYPES[column], (column, kind)
    rows = db.query(f"SELECT * FROM scratch.{table} ORDER BY n DESC")
    assert len(rows) == len(NEW_ROWS)
    for got, want in zip(rows, NEW_ROWS, strict=True):
        assert got["n"] == want["n"] and got["s"] == want["s"] and str(got["d"]) == want["d"]
        assert Decimal(str(got["x"])) == Decimal(str(want["x"])) and got["ok"] is want["ok"]
        assert got["at"].replace(tzinfo=None) == dt.datetime.fromisoformat(want["at"]) and got["j"] == want["j"]


async def test_insert_rows_with_a_column_the_target_lacks_is_invalid(pg_database: Any, runtime: dict[str, str]) -> None:
    db = pg_database
    table = _events_table(db)
    before = db.rows(f"SELECT * FROM scratch.{table}")
    async with started(runtime, tables=_host_tables()) as host:
        response = await _insert(host, db, table, "ds_extra", access_mode="readAndOnlyAdd")
    assert response.error_name == INVALID and response.error["code"] == -32017, response.error
    assert "nope" in response.error["message"]
    assert db.rows(f"SELECT * FROM scratch.{table}") == before


async def test_insert_rows_needs_a_host_that_serves_host_tables(pg_database: Any, runtime: dict[str, str]) -> None:
    db = pg_database
    table = _events_table(db)
    before = db.rows(f"SELECT * FROM scratch.{table}")
    plain = {k: v for k, v in ACP_HOST_CAPABILITY.items() if k != "host_tables"}
    async with started(runtime, capability=plain) as host:
        response = await _insert(host, db, table, "ds_events", access_mode="readAndOnlyAdd")
    assert response.error_name == "ACP_HOST_TABLES_UNSUPPORTED" and response.error["code"] == -32020, response.error
    assert db.rows(f"SELECT * FROM scratch.{table}") == before


# =====================================================================================================
# Credentials (spec 10.2, 12.1)
# =====================================================================================================


def _cache_text(runtime: dict[str, str]) -> str:
    root = Path(runtime["ACP_CACHE_DIR"])
    return "".join(p.read_bytes().decode("utf-8", "replace") for p in root.rglob("*") if p.is_file())


async def test_rejected_login_is_credentials_invalid_and_never_echoed(
    pg_database: Any, runtime: dict[str, str]
) -> None:
    """The test server trusts local logins (any password works), so the login it rejects here is an
    unknown role; the password sent with it must still appear nowhere."""
    db = pg_database
    wrong = f"wrong-{secrets.token_hex(10)}"
    nobody = f"nobody_{secrets.token_hex(4)}"
    bad = {"credentials": {**db.credentials(password=wrong), "user": nobody}, "autocontext_delivered": True}
    dsn = f"postgresql://{nobody}:{wrong}@127.0.0.1:5432/{db.name}"
    bad_dsn = {"credentials": {"type": "postgres_dsn", "dsn": dsn}, "autocontext_delivered": True}
    async with started(runtime) as host:
        answers = [
            await host.call("execute_sql", {"resource_id": db.name, "sql": "SELECT 1 AS one"}, bad),
            await host.call("autocontext", {"resource_id": db.name}, bad),
            await host.call("autocontext", {}, bad_dsn),
        ]
        good = await sql_call(host, db, "SELECT 1 AS one")  # the real role still works
        stderr = host.stderr()
    for response in answers:
        assert response.error_name == "ACP_CREDENTIALS_INVALID" and response.error["code"] == -32012, response.error
    assert good.rows() == [{"one": 1}], good.error
    for secret in (wrong, db.password):
        for response in [*answers, good]:
            assert secret not in json.dumps(response.raw)
        assert secret not in stderr
        assert secret not in _cache_text(runtime)


async def test_unknown_database_is_resource_not_found(pg_database: Any, runtime: dict[str, str]) -> None:
    db = pg_database
    missing = f"{db.name}_missing"
    meta = {"credentials": db.credentials(database=missing), "autocontext_delivered": True}
    async with started(runtime) as host:
        by_credentials = await host.call("execute_sql", {"resource_id": missing, "sql": "SELECT 1 AS one"}, meta)
        by_resource = await sql_call(host, db, "SELECT 1 AS one", resource=missing)
    for response in (by_credentials, by_resource):
        assert response.error_name == "ACP_RESOURCE_NOT_FOUND" and response.error["code"] == -32014, response.error


async def test_dsn_credentials_work(pg_database: Any, runtime: dict[str, str]) -> None:
    db = pg_database
    meta = {"credentials": db.dsn_credentials(), "autocontext_delivered": True}
    text = "SELECT status, count(*) AS n FROM orders GROUP BY status ORDER BY status"
    async with started(runtime) as host:
        result = await host.call("execute_sql", {"resource_id": db.name, "sql": text}, meta)
        listed = await host.call("autocontext", {}, meta)
        stderr = host.stderr()
    assert not result.is_error, result.error
    assert result.rows() == db.query(text)
    assert f"{db.name}.public" in [r["resource_id"] for r in listed.model_response["resources"]]
    for response in (result, listed):
        assert db.password not in json.dumps(response.raw)
    assert db.password not in stderr and db.password not in _cache_text(runtime)
