"""The DuckDB engine: read-only in depth, typed results, limits, cancellation, blocks and resources.

Real DuckDB files in ``tmp_path``, the real server over stdio. Every expectation is computed
with a direct ``duckdb`` connection opened read-only (``information_schema`` for the catalog),
never with the connector's own code. A direct connection is always closed before the engine
opens the same file in this process: DuckDB keeps one instance, with one configuration, per file.
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import duckdb
import pytest
from host_tables import StaticTable, StaticTables
from process_support import cpu_seconds, server_process

from connectors.databases import engine_duckdb as engine
from connectors.databases.resources import normalize
from shared import CredentialsInvalid, InvalidArguments, ReadOnlyViolation, UpstreamError
from shared._tablefiles import TableFiles
from shared.host import AcpHost, ToolResponse, uri_path
from shared.tables import SampleBudget, TableWriter

READ_ONLY = ("ACP_READ_ONLY_VIOLATION", -32019)
INVALID = ("ACP_INVALID_ARGUMENTS", -32017)
PASSWD = Path("/etc/passwd")
LONG_QUERY = "SELECT count(*) AS n FROM range(1000000000) a, range(1000000000) b WHERE a.range + b.range = 7"
FINAL_SELECT = (
    "SELECT c.name, count(o.id) AS orders FROM customers c LEFT JOIN orders o ON o.customer_id = c.id "
    "GROUP BY c.id, c.name ORDER BY c.id"
)


# -- direct DuckDB reads ----------------------------------------------------------------------------
@contextmanager
def direct(path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    conn = duckdb.connect(str(path), read_only=True)
    try:
        yield conn
    finally:
        conn.close()


def query(path: Path, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    with direct(path) as conn:
        cursor = conn.execute(sql, params or [])
        names = [d[0] for d in cursor.description or ()]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def database_state(path: Path) -> dict[str, Any]:
    """Every table's ordered rows (hashed), the catalog, and the file's bytes."""
    with direct(path) as conn:
        tables = conn.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = current_database() ORDER BY ALL"
        ).fetchall()
        checksums = {}
        for schema, table in tables:
            digest = hashlib.sha256()
            for row in conn.execute(f"SELECT * FROM {quote(schema)}.{quote(table)} ORDER BY ALL").fetchall():
                digest.update(repr(row).encode())
            checksums[f"{schema}.{table}"] = digest.hexdigest()
        catalog = {
            name: conn.execute(sql).fetchall()
            for name, sql in {
                "schemas": "SELECT schema_name FROM duckdb_schemas() WHERE database_name = current_database()",
                "tables": "SELECT sql FROM duckdb_tables() WHERE database_name = current_database()",
                "views": "SELECT sql FROM duckdb_views() WHERE database_name = current_database() AND NOT internal",
                "sequences": "SELECT sequence_name, last_value FROM duckdb_sequences()",
                "indexes": "SELECT sql FROM duckdb_indexes()",
                "macros": "SELECT function_name FROM duckdb_functions() WHERE NOT internal",
                "types": "SELECT type_name FROM duckdb_types() WHERE NOT internal",
                "comments": "SELECT comment FROM duckdb_tables() WHERE database_name = current_database()",
            }.items()
        }
    return {
        "tables": checksums,
        "catalog": {k: sorted(map(repr, v)) for k, v in catalog.items()},
        "file_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
    }


def file_tree(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


def meta(path: Path | str, **extra: Any) -> dict[str, Any]:
    return {"credentials": {"type": "duckdb", "path": str(path)}, "autocontext_delivered": True, **extra}


def jsonish(value: Any) -> Any:
    """A direct DuckDB value as the ACP table carries it (spec 8.6), for comparisons."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            return value.astimezone(dt.UTC).replace(tzinfo=None).isoformat() + "Z"
        return value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value


def build_store(path: Path) -> Path:
    """Two schemas, keys, a view, a sequence, comments, dates and low-cardinality text."""
    conn = duckdb.connect(str(path))
    try:
        conn.execute(
            """
            CREATE SEQUENCE order_ids START 1000;
            CREATE TABLE customers (
                id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, email VARCHAR UNIQUE, segment VARCHAR
            );
            CREATE TABLE orders (
                id INTEGER PRIMARY KEY DEFAULT nextval('order_ids'),
                customer_id INTEGER NOT NULL REFERENCES customers (id),
                amount DOUBLE NOT NULL,
                status VARCHAR,
                created DATE NOT NULL,
                paid_at TIMESTAMPTZ
            );
            CREATE TABLE notes (body VARCHAR);
            CREATE VIEW big_orders AS SELECT * FROM orders WHERE amount > 100;
            CREATE SCHEMA analytics;
            CREATE TABLE analytics.sessions (
                id INTEGER PRIMARY KEY, customer_id INTEGER, started_at TIMESTAMP NOT NULL, channel VARCHAR
            );
            CREATE TABLE analytics.events (
                id INTEGER PRIMARY KEY,
                session_id INTEGER REFERENCES analytics.sessions (id),
                kind VARCHAR NOT NULL,
                happened_at TIMESTAMP,
                day DATE,
                tags VARCHAR[]
            );
            COMMENT ON TABLE analytics.events IS 'Clicks and views';
            COMMENT ON COLUMN analytics.events.kind IS 'click or view';
            """
        )
        conn.executemany(
            "INSERT INTO customers VALUES (?, ?, ?, ?)",
            [(i, f"Customer {i}", f"c{i}@example.com", ("retail", "b2b", "retail")[i % 3]) for i in range(1, 21)],
        )
        conn.execute(
            "INSERT INTO orders (customer_id, amount, status, created, paid_at) "
            "SELECT 1 + i % 20, round(5 + (i * 37) % 190 + i / 100, 2), ['new', 'paid', 'sent'][1 + i % 3], "
            "DATE '2026-07-01' + CAST(i % 28 AS INTEGER), TIMESTAMPTZ '2026-07-01 08:00:00+02' + INTERVAL (i) HOUR "
            "FROM range(200) t(i)"
        )
        conn.executemany("INSERT INTO notes VALUES (?)", [(f"note {i}",) for i in range(5)])
        conn.execute(
            "INSERT INTO analytics.sessions SELECT i, 1 + i % 20, TIMESTAMP '2026-06-01 09:00:00' + INTERVAL (i) DAY, "
            "['web', 'app'][1 + i % 2] FROM range(1, 31) t(i)"
        )
        conn.execute(
            "INSERT INTO analytics.events SELECT i, 1 + i % 30, ['click', 'view', 'view'][1 + i % 3], "
            "TIMESTAMP '2026-06-02 10:00:00' + INTERVAL (i) HOUR, DATE '2026-06-02' + CAST(i / 24 AS INTEGER), "
            "['a', 'b'] FROM range(1, 301) t(i)"
        )
    finally:
        conn.close()
    return path


def prepare_folder(root: Path) -> dict[str, Path]:
    """The watched folder: the database, a CSV to import, an export to re-import, a canary."""
    root.mkdir(parents=True, exist_ok=True)
    database = build_store(root / "store.duckdb")
    (root / "incoming.csv").write_text("body\nfrom a file\n")
    canary = root / "secret.csv"
    canary.write_text(f"token\nCANARY-{secrets.token_hex(8)}\n")
    scratch = duckdb.connect()
    scratch.execute("CREATE TABLE evil AS SELECT 42 AS x")
    scratch.execute(f"EXPORT DATABASE '{root / 'prepared_export'}'")
    scratch.close()
    return {"database": database, "canary": canary}


# -- the corpus -----------------------------------------------------------------------------------
# Placeholders: {root} is the watched folder around the database.
WRITE_ATTEMPTS: list[tuple[str, str]] = [
    # data
    ("insert", "INSERT INTO customers (id, name, email) VALUES (999, 'Eve', 'eve@example.com')"),
    ("insert-select", "INSERT INTO notes SELECT name FROM customers"),
    ("insert-or-replace", "INSERT OR REPLACE INTO customers (id, name, email) VALUES (1, 'Eve', 'eve@example.com')"),
    ("upsert", "INSERT INTO customers (id, name) VALUES (1, 'Eve') ON CONFLICT (id) DO UPDATE SET name = excluded.name"),
    ("insert-other-schema", "INSERT INTO analytics.events (id, kind) VALUES (9999, 'evil')"),
    ("insert-default-values", "INSERT INTO notes DEFAULT VALUES"),
    ("update", "UPDATE orders SET amount = 0"),
    ("update-from", "UPDATE orders SET amount = c.id FROM customers AS c WHERE c.id = orders.customer_id"),
    ("delete", "DELETE FROM orders"),
    ("delete-returning", "DELETE FROM orders RETURNING *"),
    ("truncate", "TRUNCATE orders"),
    ("merge", "MERGE INTO notes USING (SELECT 'x' AS body) AS s ON notes.body = s.body "
              "WHEN NOT MATCHED THEN INSERT VALUES (s.body)"),
    ("with-delete", "WITH x AS (SELECT 1) DELETE FROM orders"),
    ("data-modifying-cte", "WITH d AS (DELETE FROM orders RETURNING id) SELECT * FROM d"),
    ("nextval", "SELECT nextval('order_ids')"),
    ("setval", "SELECT setval('order_ids', 5)"),
    # schema
    ("create-table", "CREATE TABLE evil (x INTEGER)"),
    ("create-table-as", "CREATE TABLE evil AS SELECT * FROM orders"),
    ("create-or-replace-table", "CREATE OR REPLACE TABLE customers AS SELECT 1 AS id"),
    ("create-view", "CREATE VIEW evil_view AS SELECT 1 AS one"),
    ("create-index", "CREATE INDEX evil_idx ON orders (amount)"),
    ("create-schema", "CREATE SCHEMA evil"),
    ("create-sequence", "CREATE SEQUENCE evil_seq"),
    ("create-type", "CREATE TYPE mood AS ENUM ('sad', 'ok')"),
    ("create-macro", "CREATE MACRO evil(x) AS x + 1"),
    ("create-table-macro", "CREATE MACRO evil_rows() AS TABLE SELECT 1 AS x"),
    ("create-temp-table", "CREATE TEMP TABLE scratch (x INTEGER)"),
    ("create-temp-macro", "CREATE TEMP MACRO scratch_macro(x) AS x"),
    ("create-secret", "CREATE SECRET evil_secret (TYPE s3, KEY_ID 'k', SECRET 's')"),
    ("create-persistent-secret", "CREATE PERSISTENT SECRET evil_kept (TYPE s3, KEY_ID 'k', SECRET 's')"),
    ("drop-table", "DROP TABLE orders"),
    ("drop-view", "DROP VIEW big_orders"),
    ("drop-schema-cascade", "DROP SCHEMA analytics CASCADE"),
    ("drop-sequence", "DROP SEQUENCE order_ids CASCADE"),
    ("alter-add-column", "ALTER TABLE orders ADD COLUMN evil INTEGER"),
    ("alter-rename-table", "ALTER TABLE orders RENAME TO orders_old"),
    ("alter-drop-column", "ALTER TABLE orders DROP COLUMN status"),
    ("comment-on", "COMMENT ON TABLE orders IS 'evil'"),
    # files, databases and extensions
    ("copy-to", "COPY orders TO '{root}/x.csv'"),
    ("copy-query-to-parquet", "COPY (SELECT * FROM customers) TO '{root}/x.parquet' (FORMAT parquet)"),
    ("copy-to-stdout", "COPY orders TO '/dev/stdout'"),
    ("copy-from", "COPY notes FROM '{root}/incoming.csv'"),
    ("export-database", "EXPORT DATABASE '{root}/export'"),
    ("import-database", "IMPORT DATABASE '{root}/prepared_export'"),
    ("attach-file", "ATTACH '{root}/other.duckdb' AS other"),
    ("attach-memory", "ATTACH ':memory:' AS scratch"),
    ("attach-sqlite", "ATTACH '{root}/other.sqlite' AS lite (TYPE sqlite)"),
    ("detach-self", "DETACH store"),
    ("use-schema", "USE analytics"),
    ("install-extension", "INSTALL httpfs"),
    ("force-install-extension", "FORCE INSTALL json"),
    ("load-extension", "LOAD httpfs"),
    ("load-extension-file", "LOAD '{root}/evil.duckdb_extension'"),
    ("update-extensions", "UPDATE EXTENSIONS"),
    # file readers that look like SELECTs
    ("read-csv-passwd", "SELECT * FROM read_csv('/etc/passwd')"),
    ("read-csv-auto-passwd", "SELECT * FROM read_csv_auto('/etc/passwd')"),
    ("read-text-passwd", "SELECT * FROM read_text('/etc/passwd')"),
    ("read-blob-passwd", "SELECT * FROM read_blob('/etc/passwd')"),
    ("read-json-passwd", "SELECT * FROM read_json('/etc/passwd')"),
    ("read-canary", "SELECT * FROM read_csv('{root}/secret.csv')"),
    ("read-parquet", "SELECT * FROM read_parquet('{root}/x.parquet')"),
    ("parquet-scan", "SELECT * FROM parquet_scan('{root}/x.parquet')"),
    ("glob-root", "SELECT * FROM glob('/*')"),
    ("sniff-csv", "SELECT * FROM sniff_csv('/etc/passwd')"),
    ("parquet-metadata-passwd", "SELECT * FROM parquet_metadata('/etc/passwd')"),
    ("replacement-scan-passwd", "SELECT * FROM '/etc/passwd'"),
    ("replacement-scan-canary", "FROM '{root}/secret.csv'"),
    ("read-in-cte", "WITH x AS (SELECT content FROM read_text('/etc/passwd')) SELECT * FROM x"),
    ("read-in-scalar-subquery", "SELECT (SELECT content FROM read_text('/etc/passwd')) AS c"),
    ("read-dollar-quoted", "SELECT * FROM read_text($$/etc/passwd$$)"),
    ("query-function", "SELECT * FROM query('SELECT * FROM customers')"),
    ("query-table-function", "SELECT * FROM query_table('customers')"),
    ("checkpoint-function", "SELECT * FROM checkpoint()"),
    ("secrets-function", "SELECT * FROM duckdb_secrets()"),
    ("write-log", "SELECT write_log('evil')"),
    # the connector process's environment: its settings name the home, spill and secret directories
    ("settings-function", "SELECT name, value FROM duckdb_settings()"),
    ("settings-view", "SELECT * FROM pg_catalog.pg_settings"),
    ("current-setting-home", "SELECT current_setting('home_directory') AS home"),
    ("current-setting-spill", "SELECT current_setting('temp_directory') AS spill"),
    ("temporary-files", "SELECT * FROM duckdb_temporary_files()"),
    ("external-file-cache", "SELECT * FROM duckdb_external_file_cache()"),
    ("extensions-directory", "SELECT * FROM duckdb_extensions()"),
    ("extension-repositories", "SELECT * FROM duckdb_extension_repositories()"),
    ("logs-view", "SELECT * FROM duckdb_logs"),
    ("log-contexts", "SELECT * FROM duckdb_log_contexts()"),
    # settings
    ("set-external-access", "SET enable_external_access = true"),
    ("reset-external-access", "RESET enable_external_access"),
    ("set-lock-off", "SET lock_configuration = false"),
    ("set-global-threads", "SET GLOBAL threads = 1"),
    ("set-search-path", "SET search_path = 'analytics'"),
    ("pragma-profiling-output", "PRAGMA profiling_output = '{root}/profile.json'"),
    ("pragma-enable-profiling", "PRAGMA enable_profiling"),
    ("call-pragma", "CALL pragma_version()"),
    # maintenance and prepared statements
    ("checkpoint", "CHECKPOINT"),
    ("force-checkpoint", "FORCE CHECKPOINT"),
    ("vacuum", "VACUUM"),
    ("analyze", "ANALYZE"),
    ("explain-analyze-delete", "EXPLAIN ANALYZE DELETE FROM orders"),
    ("prepare-delete", "PREPARE evil AS DELETE FROM orders"),
    ("execute-prepared", "EXECUTE evil"),
    ("deallocate", "DEALLOCATE evil"),
    # transactions and several statements
    ("begin", "BEGIN TRANSACTION"),
    ("commit", "COMMIT"),
    ("rollback", "ROLLBACK"),
    ("abort", "ABORT"),
    ("select-then-drop", "SELECT 1; DROP TABLE orders"),
    ("select-commit-drop", "SELECT 1; COMMIT; DROP TABLE orders"),
    ("end-then-drop", "END; DROP TABLE orders"),
    ("rollback-then-delete", "ROLLBACK; DELETE FROM orders"),
    ("begin-delete-commit", "BEGIN; DELETE FROM orders; COMMIT"),
    ("select-then-copy", "SELECT 1; COPY orders TO '{root}/y.csv'"),
    ("comment-hiding-semicolon", "SELECT 1 /* ; */ ; DELETE FROM orders"),
    # hiding and disguise
    ("block-comment-then-delete", "/* c */ DELETE FROM orders"),
    ("line-comment-then-delete", "-- c\nDELETE FROM orders"),
    ("comment-then-copy", "-- SELECT\nCOPY orders TO '{root}/z.csv'"),
    ("mixed-case", "dElEtE fRoM orders"),
    ("quoted-identifier", 'DELETE FROM "orders"'),
    ("fully-qualified", "DELETE FROM store.main.orders"),
    ("leading-whitespace-trailing-semicolon", "  \n\t DELETE FROM orders  ;  "),
    ("no-break-space", "DELETE\u00a0FROM orders"),
    ("em-space", "\u2003DELETE FROM orders"),
    ("ideographic-space", "DELETE\u3000FROM orders"),
    ("zero-width-space", "DELETE\u200bFROM orders"),
    ("fullwidth-letters", "\uff24\uff25\uff2c\uff25\uff34\uff25 FROM orders"),
]  # fmt: skip
HARMLESS_MULTI_STATEMENTS = [("two-selects", "SELECT 1; SELECT 2")]

# Statements the engine's own layers would run because they are reads of this database (or
# harmless calls): only the sqlglot layer refuses them. They are run through the engine below
# to show that they change nothing.
PARSER_ONLY = {
    "query-function", "query-table-function", "checkpoint-function", "secrets-function", "write-log",
    "settings-function", "settings-view", "current-setting-home", "current-setting-spill", "temporary-files",
    "external-file-cache", "logs-view", "log-contexts",
}  # fmt: skip
# Statements DuckDB itself reads as SELECT: the statement check passes them to the engine layers.
SELECT_SHAPED = {
    "data-modifying-cte", "nextval", "setval", "read-csv-passwd", "read-csv-auto-passwd", "read-text-passwd",
    "read-blob-passwd", "read-json-passwd", "read-canary", "read-parquet", "parquet-scan", "glob-root", "sniff-csv",
    "replacement-scan-passwd", "replacement-scan-canary", "read-in-cte", "read-in-scalar-subquery",
    "read-dollar-quoted", "parquet-metadata-passwd", "extensions-directory", "extension-repositories", *PARSER_ONLY,
}  # fmt: skip


@functools.cache
def parses_in_duckdb(sql: str) -> bool:
    """Whether DuckDB's own parser accepts the SQL (parsing runs nothing)."""
    try:
        _parser().extract_statements(sql)
    except duckdb.ParserException:
        return False
    return True


@functools.cache
def _parser() -> duckdb.DuckDBPyConnection:
    return duckdb.connect(":memory:")


@dataclass
class CorpusRun:
    root: Path
    database: Path
    canary_text: str
    sql: dict[str, str]
    responses: dict[str, ToolResponse]
    final: ToolResponse
    state_before: dict[str, Any]
    state_after: dict[str, Any]
    tree_before: set[str]
    tree_after: set[str]


@pytest.fixture(scope="module")
def corpus_run(tmp_path_factory: pytest.TempPathFactory) -> CorpusRun:
    """Every attempt through one server over stdio, with snapshots before and after."""
    root = tmp_path_factory.mktemp("watched")
    runtime = tmp_path_factory.mktemp("runtime")  # caches and table files live outside the watched folder
    env = {"ACP_CACHE_DIR": str(runtime / "cache"), "ACP_TMP_DIR": str(runtime / "tmp")}
    files = prepare_folder(root)
    database = files["database"]
    sql = {label: template.format(root=root) for label, template in WRITE_ATTEMPTS + HARMLESS_MULTI_STATEMENTS}
    state_before, tree_before = database_state(database), file_tree(root)
    call_meta = meta(database)
    responses: dict[str, ToolResponse] = {}

    async def attack() -> ToolResponse:
        async with AcpHost.for_module("databases", env=env) as host:
            for label, text in sql.items():
                responses[label] = await host.call("execute_sql", {"resource_id": "store", "sql": text}, call_meta)
            return await host.call("execute_sql", {"resource_id": "store", "sql": FINAL_SELECT}, call_meta)

    final = anyio.run(attack)
    return CorpusRun(
        root=root,
        database=database,
        canary_text=files["canary"].read_text().split()[-1],
        sql=sql,
        responses=responses,
        final=final,
        state_before=state_before,
        state_after=database_state(database),
        tree_before=tree_before,
        tree_after=file_tree(root),
    )


def _error(response: ToolResponse) -> tuple[str | None, int | None]:
    error = response.error or {}
    return error.get("name"), error.get("code")


def test_corpus_is_large_and_covers_every_kind_of_attempt() -> None:
    labels = [label for label, _ in WRITE_ATTEMPTS + HARMLESS_MULTI_STATEMENTS]
    assert len(WRITE_ATTEMPTS) >= 40
    assert len(labels) == len(set(labels))
    assert PARSER_ONLY <= SELECT_SHAPED <= set(labels)
    for needed in (
        "copy-to",
        "copy-from",
        "export-database",
        "import-database",
        "attach-file",
        "detach-self",
        "install-extension",
        "load-extension",
        "set-external-access",
        "checkpoint",
        "vacuum",
        "call-pragma",
        "read-csv-passwd",
        "read-text-passwd",
        "glob-root",
        "select-then-drop",
        "select-commit-drop",
        "data-modifying-cte",
        "create-macro",
        "create-secret",
        "fullwidth-letters",
    ):
        assert needed in labels, needed  # fmt: skip


@pytest.mark.parametrize("label", [label for label, _ in WRITE_ATTEMPTS])
def test_write_attempt_is_refused(corpus_run: CorpusRun, label: str) -> None:
    response = corpus_run.responses[label]
    assert response.is_error and response.kind == "error"
    sql = corpus_run.sql[label]
    if parses_in_duckdb(sql):
        assert _error(response) == READ_ONLY, (sql, response.error)
    else:  # DuckDB cannot even parse it: a syntax error, refused before anything runs
        assert _error(response) in (READ_ONLY, INVALID), (sql, response.error)
    assert response.model_response == {"error": response.error}  # spec 12.1: the model sees the same error


def test_several_harmless_statements_are_refused_as_read_only(corpus_run: CorpusRun) -> None:
    response = corpus_run.responses["two-selects"]
    assert _error(response) == READ_ONLY, response.error
    assert "one query per call" in response.error["message"].lower()


def test_no_response_carries_file_contents(corpus_run: CorpusRun) -> None:
    passwd_lines = [line for line in PASSWD.read_text().splitlines() if len(line.strip()) >= 8]
    assert passwd_lines and corpus_run.canary_text.startswith("CANARY-")
    for label, response in corpus_run.responses.items():
        wire = json.dumps(response.raw)
        assert corpus_run.canary_text not in wire, label
        assert not any(line in wire for line in passwd_lines), label


def test_no_response_names_the_connector_spill_directory(corpus_run: CorpusRun) -> None:
    # The spill directory (engine._spill_directory) is private to the connector process: only a
    # settings reader could name it.
    for label, response in corpus_run.responses.items():
        assert "duckdb-spill-" not in json.dumps(response.raw), label


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM iceberg_scan('/etc')",
        "SELECT * FROM iceberg_metadata('/etc')",
        "SELECT * FROM delta_scan('/etc')",
        "SELECT * FROM read_xlsx('/etc/passwd')",
        "SELECT * FROM st_read_meta('/etc/passwd')",
        "SELECT getenv('HOME')",
    ],
)
def test_readers_of_extensions_not_loaded_here_are_refused_by_family(sql: str) -> None:
    with pytest.raises(ReadOnlyViolation, match="not allowed"):
        engine.ENGINE.check_sql(sql)


def test_every_table_checksum_and_the_file_bytes_are_unchanged(corpus_run: CorpusRun) -> None:
    before, after = corpus_run.state_before, corpus_run.state_after
    assert set(before["tables"]) == {
        "main.customers", "main.orders", "main.notes", "analytics.sessions", "analytics.events",
    }  # fmt: skip
    assert after["tables"] == before["tables"]
    assert after["catalog"] == before["catalog"]  # no table, view, sequence value, macro, type or comment
    assert after["file_sha256"] == before["file_sha256"]


def test_no_file_appears_anywhere_in_the_folder(corpus_run: CorpusRun) -> None:
    assert "store.duckdb" in corpus_run.tree_before and "prepared_export/schema.sql" in corpus_run.tree_before
    assert corpus_run.tree_after == corpus_run.tree_before  # no .wal, .tmp, export, copy, attach or profile


def test_server_still_serves_a_select_after_the_corpus(corpus_run: CorpusRun) -> None:
    final = corpus_run.final
    assert not final.is_error, final.error
    expected = query(corpus_run.database, FINAL_SELECT)
    assert len(expected) == 20
    assert final.rows() == expected


# -- the engine layers, in-process, without the sqlglot parser ---------------------------------------
ENGINE_WRITES = [(label, sql) for label, sql in WRITE_ATTEMPTS if label not in PARSER_ONLY]


@dataclass
class Store:
    root: Path
    database: Path
    canary_text: str
    baseline: dict[str, Any]
    tree: set[str]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    """One watched folder for the in-process tests; each test checks it against the baseline."""
    root = tmp_path_factory.mktemp("engine")
    files = prepare_folder(root)
    return Store(
        root=root,
        database=files["database"],
        canary_text=files["canary"].read_text().split()[-1],
        baseline=database_state(files["database"]),
        tree=file_tree(root),
    )


def writer_for(folder: Path, inline_max_bytes: int = 10**9) -> TableWriter:
    budget = SampleBudget(head_rows=10, spread_rows=0, inline_max_bytes=inline_max_bytes)
    return TableWriter("result", budget=budget, files=TableFiles("duckdb-test", str(folder)))


def assert_untouched(store: Store, full: bool = False) -> None:
    """The file's bytes and the folder (every write reaches one or the other once the connection
    is closed); ``full`` also compares each table's checksum and the catalog."""
    assert hashlib.sha256(store.database.read_bytes()).hexdigest() == store.baseline["file_sha256"]
    assert file_tree(store.root) == store.tree
    if full:
        assert database_state(store.database) == store.baseline


@pytest.mark.parametrize(("label", "template"), ENGINE_WRITES, ids=[label for label, _ in ENGINE_WRITES])
def test_engine_connection_refuses_write_without_the_parser(
    store: Store, tmp_path: Path, label: str, template: str
) -> None:
    sql = template.format(root=store.root)
    database = engine.Database(str(store.database))
    try:
        with pytest.raises((duckdb.Error, ReadOnlyViolation)) as caught:
            database.stream(sql, writer_for(tmp_path), schema=None, timeout_s=10)
    finally:
        database.close()
    error = caught.value
    translated = error if isinstance(error, ReadOnlyViolation) else engine.translate(error)
    expected = ReadOnlyViolation if parses_in_duckdb(sql) else (ReadOnlyViolation, InvalidArguments)
    assert isinstance(translated, expected), (label, str(error), translated and translated.name)
    assert store.canary_text not in str(error)
    assert_untouched(store)


@pytest.mark.parametrize("label", sorted(PARSER_ONLY))
def test_parser_only_refusals_change_nothing_in_the_engine(store: Store, tmp_path: Path, label: str) -> None:
    sql = dict(WRITE_ATTEMPTS)[label].format(root=store.root)
    with pytest.raises(ReadOnlyViolation, match="not allowed"):
        engine.ENGINE.check_sql(sql)  # the sqlglot layer names the function
    database = engine.Database(str(store.database))
    try:
        database.stream(sql, writer_for(tmp_path), schema=None, timeout_s=10)
    finally:
        database.close()
    assert_untouched(store)


def test_statement_check_alone_refuses_on_a_writable_connection(store: Store, tmp_path: Path) -> None:
    """DuckDB's own parser: one statement, of type SELECT, even where nothing else would refuse."""
    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(store.database.read_bytes())
    before = database_state(copy)
    conn = duckdb.connect(str(copy))  # writable, external access on: the check is the only guard
    try:
        for label, template in WRITE_ATTEMPTS + HARMLESS_MULTI_STATEMENTS:
            sql = template.format(root=store.root)
            if label in SELECT_SHAPED:
                assert engine.statement_type(engine.single_select(conn, sql)) == "SELECT", label
                continue
            with pytest.raises((ReadOnlyViolation, duckdb.ParserException)):
                engine.single_select(conn, sql)
    finally:
        conn.close()
    assert database_state(copy) == before


def test_duckdb_execute_alone_runs_every_statement_of_a_string(tmp_path: Path) -> None:
    """Why the statement check exists: without it, the second statement runs."""
    path = tmp_path / "multi.duckdb"
    conn = duckdb.connect(str(path))
    try:
        conn.execute("SELECT 1; CREATE TABLE evil (x INTEGER)")
        assert conn.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'evil'").fetchone() == (1,)
    finally:
        conn.close()


def test_engine_layers_hold_when_statements_skip_every_check(store: Store) -> None:
    """read_only + external access off + lock_configuration, with the parser and the statement
    check bypassed (``conn.execute`` directly): whatever runs, nothing is written or read outside."""
    must_fail = {
        label for label, _ in ENGINE_WRITES
        if label.startswith(("insert", "update", "delete", "create-table", "create-view", "create-index",
                             "create-schema", "create-sequence", "create-type", "create-macro", "drop-", "alter-",
                             "copy-", "export-", "import-", "attach-", "install-", "force-install", "load-",
                             "read-", "glob-", "sniff-", "replacement-scan", "set-external", "reset-external",
                             "set-lock", "set-global"))
        or label in {"upsert", "truncate", "merge", "with-delete", "data-modifying-cte", "nextval", "setval",
                     "comment-on", "explain-analyze-delete", "parquet-scan", "pragma-profiling-output"}
    }  # fmt: skip
    assert len(must_fail) >= 50
    outcomes: dict[str, str] = {}
    database = engine.Database(str(store.database))
    try:
        for label, template in WRITE_ATTEMPTS:
            session = database.conn.cursor()  # a fresh session of the same instance: no state carried over
            try:
                rows = session.execute(template.format(root=store.root)).fetchall()
            except duckdb.Error as exc:
                outcomes[label] = str(exc)
            else:
                outcomes[label] = "ran: " + repr(rows)
            finally:
                session.close()
    finally:
        database.close()
    ran = sorted(label for label in must_fail if outcomes[label].startswith("ran: "))
    assert ran == [], {label: outcomes[label] for label in ran}
    for label, outcome in outcomes.items():
        assert store.canary_text not in outcome, label
        assert "root:x:0:0" not in outcome, label
    assert_untouched(store, full=True)


def test_read_only_alone_refuses_writes_but_still_writes_files(store: Store, tmp_path: Path) -> None:
    """The verified gap: ``read_only=True`` alone lets ``COPY … TO`` create a file and ``read_text`` read one."""
    conn = duckdb.connect(str(store.database), read_only=True)
    target = tmp_path / "leak.csv"
    try:
        for sql in ("DELETE FROM orders", "CREATE TABLE evil (x INTEGER)", "DROP TABLE notes"):
            with pytest.raises(duckdb.Error, match="read-only"):
                conn.execute(sql)
        conn.execute(f"COPY (SELECT 1 AS x) TO '{target}'")
        content = conn.execute(f"SELECT content FROM read_text('{store.root / 'secret.csv'}')").fetchone()
    finally:
        conn.close()
    assert target.exists()
    assert content is not None and store.canary_text in content[0]
    assert_untouched(store)


def test_external_access_off_alone_blocks_files_on_a_writable_connection(store: Store, tmp_path: Path) -> None:
    copy = tmp_path / "writable.duckdb"
    copy.write_bytes(store.database.read_bytes())
    tree = file_tree(tmp_path)
    conn = duckdb.connect(str(copy), config={"enable_external_access": False})
    try:
        for template in (
            "COPY orders TO '{out}/x.csv'",
            "EXPORT DATABASE '{out}/export'",
            "ATTACH '{out}/other.duckdb' AS other",
            "SELECT * FROM read_csv('{root}/secret.csv')",
            "SELECT * FROM read_text('/etc/passwd')",
            "SELECT * FROM glob('/*')",
            "COPY notes FROM '{root}/incoming.csv'",
            "IMPORT DATABASE '{root}/prepared_export'",
            "LOAD httpfs",
            "INSTALL httpfs",
        ):
            with pytest.raises(duckdb.Error) as caught:
                conn.execute(template.format(out=tmp_path, root=store.root)).fetchall()
            assert isinstance(engine.translate(caught.value), ReadOnlyViolation), str(caught.value)
        with pytest.raises(duckdb.Error, match="Cannot enable external access"):
            conn.execute("SET enable_external_access = true")
    finally:
        conn.close()
    assert file_tree(tmp_path) - {"writable.duckdb.wal"} == tree
    assert_untouched(store)


def test_lock_configuration_alone_freezes_every_setting(tmp_path: Path) -> None:
    path = tmp_path / "lock.duckdb"
    conn = duckdb.connect(str(path))
    try:
        conn.execute("SET autoload_known_extensions = true")  # unlocked: a statement may change settings
        conn.execute("SET lock_configuration = true")
        for sql in (
            "SET autoload_known_extensions = false",
            "SET enable_external_access = false",
            "SET threads = 1",
            "RESET lock_configuration",
            "SET lock_configuration = false",
        ):
            with pytest.raises(duckdb.Error, match="configuration has been locked") as caught:
                conn.execute(sql)
            assert isinstance(engine.translate(caught.value), ReadOnlyViolation)
    finally:
        conn.close()


def test_engine_connection_reports_its_layers_and_spills_outside_the_folder(store: Store) -> None:
    database = engine.Database(str(store.database))
    try:
        settings = dict(
            database.conn.execute(
                "SELECT name, value FROM duckdb_settings() WHERE name IN ('access_mode', 'enable_external_access', "
                "'lock_configuration', 'autoload_known_extensions', 'autoinstall_known_extensions', "
                "'allow_persistent_secrets', 'temp_directory')"
            ).fetchall()
        )
    finally:
        database.close()
    assert settings["access_mode"] == "read_only"
    assert settings["enable_external_access"] == "false"
    assert settings["lock_configuration"] == "true"
    assert settings["autoload_known_extensions"] == settings["autoinstall_known_extensions"] == "false"
    assert settings["allow_persistent_secrets"] == "false"
    # DuckDB's default spills to "<file>.tmp" next to the database, even on a read-only open.
    assert not Path(settings["temp_directory"]).resolve().is_relative_to(store.root.resolve())


def test_identity_is_the_real_path_and_needs_an_absolute_one(tmp_path: Path) -> None:
    real = tmp_path / "real.duckdb"
    real.touch()
    link = tmp_path / "link.duckdb"
    link.symlink_to(real)
    principal = engine.ENGINE.identify({"type": "duckdb", "path": str(link)})
    assert principal.identity == f"duckdb:{real.resolve()}"
    with pytest.raises(CredentialsInvalid):
        engine.ENGINE.identify({"type": "duckdb", "path": "real.duckdb"})


# -- timeouts and cancellation, in-process ----------------------------------------------------------
def test_timeout_interrupts_and_the_connection_keeps_working(store: Store, tmp_path: Path) -> None:
    database = engine.Database(str(store.database))
    try:
        with pytest.raises(engine.TimeBudgetExceeded) as caught:  # only the interrupt ends LONG_QUERY
            database.stream(LONG_QUERY, writer_for(tmp_path), schema=None, timeout_s=0.5)
        translated = engine.translate(caught.value)
        assert isinstance(translated, UpstreamError) and "statement_timeout_s" in translated.message
        writer = writer_for(tmp_path)
        database.stream("SELECT 42 AS answer", writer, schema=None, timeout_s=5)
        assert writer.finish().rows == [{"answer": 42}]
    finally:
        database.close()


def test_cancel_interrupts_a_running_query_and_says_cancelled(store: Store, tmp_path: Path) -> None:
    database = engine.Database(str(store.database))
    try:
        threading.Timer(0.5, database.cancel).start()
        with pytest.raises(duckdb.InterruptException) as caught:  # the cancel, not the 60 s timeout
            database.stream(LONG_QUERY, writer_for(tmp_path), schema=None, timeout_s=60)
    finally:
        database.close()
    translated = engine.translate(caught.value)
    assert isinstance(translated, UpstreamError)
    assert "cancelled" in translated.message and "statement_timeout_s" not in translated.message


# -- catalog details, in-process -------------------------------------------------------------------
def test_row_counts_exact_estimated_and_skipped(store: Store) -> None:
    counts = {
        f"{r['schema_name']}.{r['table_name']}": r["estimated_size"]
        for r in query(store.database, "SELECT schema_name, table_name, estimated_size FROM duckdb_tables()")
    }
    exact = query(store.database, "SELECT count(*) AS n FROM orders")[0]["n"]
    database = engine.Database(str(store.database))
    try:
        assert database.row_count("main", "orders", "table", counts["main.orders"], budget_s=5) == (exact, False)
        assert database.row_count("main", "orders", "table", counts["main.orders"], budget_s=5, exact_up_to=10) == (
            counts["main.orders"],
            True,
        )
        assert all(t.rows is None and not t.estimated for t in database.tables(None, 0))  # a budget of 0
        database.conn.execute(f"CREATE TEMP VIEW heavy AS {LONG_QUERY}")
        # Unknown and flagged: the count was interrupted at its budget (LONG_QUERY never ends alone).
        assert database.row_count("temp", "heavy", "view", None, budget_s=0.2) == (None, True)
    finally:
        database.close()


# -- execute_sql over stdio --------------------------------------------------------------------------
TYPED_SQL = "SELECT * FROM typed ORDER BY id"
ORDERS_SQL = "SELECT id, customer_id, amount, status, created FROM orders ORDER BY id"
CAP_SQL = "SELECT id, amount FROM orders ORDER BY id"


def build_typed(path: Path) -> Path:
    conn = duckdb.connect(str(path))
    conn.execute(
        """
        CREATE TABLE typed (
            id INTEGER, big HUGEINT, ubig UBIGINT, price DECIMAL(38, 10), ratio DOUBLE, ok BOOLEAN, day DATE,
            seen TIMESTAMP, paid TIMESTAMPTZ, tags VARCHAR[], point STRUCT(x INTEGER, label VARCHAR),
            attrs MAP(VARCHAR, INTEGER), doc JSON, raw BLOB, uid UUID, span INTERVAL, clock TIME, label VARCHAR
        );
        INSERT INTO typed VALUES
            (1, 170141183460469231731687303715884105727, 18446744073709551615, 1234567890123456789012.0123456789,
             0.5, true, DATE '2026-07-01', TIMESTAMP '2026-07-01 10:15:30.123456', TIMESTAMPTZ '2026-07-01 23:30:00+05:30',
             ['a', 'b'], {'x': 1, 'label': 'one'}, MAP {'k': 1}, '{"n": [1, 2]}', '\\xDE\\xAD\\xBE\\xEF'::BLOB,
             'b1a7c5b2-0000-4000-8000-000000000001', INTERVAL 3 DAY, TIME '08:30:00', 'first'),
            (2, -170141183460469231731687303715884105727, 0, -0.0000000001, 1e300, false, DATE '1999-12-31',
             TIMESTAMP '1999-12-31 23:59:59', TIMESTAMPTZ '2000-01-01 00:00:00-08', [], {'x': 2, 'label': NULL},
             MAP {}, '[]', ''::BLOB, 'b1a7c5b2-0000-4000-8000-000000000002', INTERVAL 90 MINUTE, TIME '23:59:59',
             NULL);
        """
    )  # fmt: skip
    conn.close()
    return path


@dataclass
class Extraction:
    store: Path
    typed: Path
    bad: dict[str, Path]
    tmp_dir: Path
    responses: dict[str, ToolResponse]
    timeout_elapsed: float
    bad_tree: tuple[set[str], set[str]]


@pytest.fixture(scope="module")
def extraction(tmp_path_factory: pytest.TempPathFactory) -> Extraction:
    """One server (in a zone that is not UTC: it must not matter) answers every extraction below."""
    folder = tmp_path_factory.mktemp("extraction")
    store, typed = build_store(folder / "store.duckdb"), build_typed(folder / "typed.duckdb")
    files = folder / "files"
    files.mkdir()
    (files / "notes.duckdb").write_text("this is not a database\n" * 200)
    import sqlite3

    sqlite3.connect(files / "lite.duckdb").execute("CREATE TABLE t (x)").connection.close()
    bad = {
        "missing": files / "missing.duckdb",
        "notes": files / "notes.duckdb",
        "lite": files / "lite.duckdb",
        "files": files,
        "relative": Path("files/relative.duckdb"),
    }
    locked = build_typed(folder / "locked.duckdb")
    tmp_dir = folder / "tmp"
    env = {"ACP_CACHE_DIR": str(folder / "cache"), "ACP_TMP_DIR": str(tmp_dir), "TZ": "Asia/Kolkata"}
    responses: dict[str, ToolResponse] = {}
    elapsed: list[float] = []
    tree_before = file_tree(files)

    def sql(resource_id: str, text: str) -> dict[str, Any]:
        return {"resource_id": resource_id, "sql": text}

    async def run() -> None:
        async with AcpHost.for_module("databases", env=env) as host:
            responses["typed"] = await host.call("execute_sql", sql("typed", TYPED_SQL), meta(typed))
            responses["large"] = await host.call(
                "execute_sql", sql("store", ORDERS_SQL), meta(store, inline_max_bytes=5_000)
            )
            total = len(query(store, CAP_SQL))
            responses["capped"] = await host.call(
                "execute_sql", sql("store", CAP_SQL), meta(store, config={"max_rows": 50})
            )
            responses["at-cap"] = await host.call(
                "execute_sql", sql("store", CAP_SQL), meta(store, config={"max_rows": total})
            )
            started = time.monotonic()
            responses["timeout"] = await host.call(
                "execute_sql", sql("store", LONG_QUERY), meta(store, config={"statement_timeout_s": 1})
            )
            elapsed.append(time.monotonic() - started)
            responses["after-timeout"] = await host.call("execute_sql", sql("store", FINAL_SELECT), meta(store))
            for label, text in (
                ("missing-table", "SELECT * FROM nope"),
                ("syntax", "SELECT * FRM orders"),
                ("missing-column", "SELECT nope FROM orders"),
                ("unknown-word", "SELEC * FROM orders"),
            ):
                responses[label] = await host.call("execute_sql", sql("store", text), meta(store))
            for label, path in bad.items():
                responses[f"bad-{label}"] = await host.call("execute_sql", sql(label, "SELECT 1"), meta(path))
            holder = duckdb.connect(str(locked))  # another process writing to the file holds its lock
            try:
                responses["locked"] = await host.call("execute_sql", sql("locked", "SELECT 1 AS one"), meta(locked))
            finally:
                holder.close()
            responses["unlocked"] = await host.call("execute_sql", sql("locked", "SELECT 1 AS one"), meta(locked))

    anyio.run(run)
    return Extraction(
        store=store,
        typed=typed,
        bad=bad,
        tmp_dir=tmp_dir,
        responses=responses,
        timeout_elapsed=elapsed[0],
        bad_tree=(tree_before, file_tree(files)),
    )


def test_headers_are_typed_from_duckdb_types(extraction: Extraction) -> None:
    result = extraction.responses["typed"]
    assert not result.is_error, result.error
    types = {h["name"]: h["type"] for h in result.system_data["headers"]}
    assert types == {
        "id": "integer", "big": "integer", "ubig": "integer", "price": "number", "ratio": "number",
        "ok": "boolean", "day": "date", "seen": "datetime", "paid": "datetime", "tags": "json", "point": "json",
        "attrs": "json", "doc": "json", "raw": "string", "uid": "string", "span": "string", "clock": "string",
        "label": "string",
    }  # fmt: skip
    expected = query(extraction.typed, TYPED_SQL)
    rows = result.rows(exact=True)  # decimals as Decimal, integers exact
    assert len(rows) == len(expected) == 2
    for got, want in zip(rows, expected, strict=True):
        assert got["big"] == want["big"] and abs(got["big"]) > 2**64  # HUGEINT beyond 64 bits, exact
        assert got["ubig"] == want["ubig"]
        assert Decimal(str(got["price"])) == want["price"]  # every digit of DECIMAL(38, 10)
        assert got["ok"] is want["ok"] and got["day"] == want["day"].isoformat()
        assert got["seen"] == want["seen"].isoformat() and not got["seen"].endswith("Z")  # naive stays naive
        assert got["paid"] == jsonish(want["paid"]) and got["paid"].endswith("Z")  # UTC with Z
        assert got["tags"] == want["tags"] and got["point"] == want["point"]
        assert got["attrs"] == dict(want["attrs"])
        assert got["doc"] == json.loads(want["doc"])
        assert got["raw"] == base64.b64encode(want["raw"]).decode()
        assert got["uid"] == str(want["uid"]) and got["label"] == want["label"]
    assert rows[0]["paid"] == "2026-07-01T18:00:00Z"  # 23:30 at +05:30
    assert rows[0]["price"] == Decimal("1234567890123456789012.0123456789")
    assert any("raw" in w and "base64" in w for w in result.system_info["warnings"])


def test_large_result_goes_to_a_table_file_equal_to_a_direct_query(extraction: Extraction) -> None:
    result = extraction.responses["large"]
    expected = [{k: jsonish(v) for k, v in row.items()} for row in query(extraction.store, ORDERS_SQL)]
    assert not result.is_error, result.error
    data = result.system_data
    assert data["format"] == "file" and "table" not in data
    assert uri_path(data["table_uri"]).parent == extraction.tmp_dir.resolve()
    assert data["row_count"] == len(expected) == 200
    assert result.rows() == expected
    assert result.model_response["truncated"] and len(result.model_response["rows"]) < len(expected)


def test_max_rows_caps_with_a_warning_and_truncated_facts(extraction: Extraction) -> None:
    capped, exact = extraction.responses["capped"], extraction.responses["at-cap"]
    expected = query(extraction.store, CAP_SQL)
    assert not capped.is_error, capped.error
    assert capped.rows() == expected[:50] and capped.system_data["row_count"] == 50
    source = capped.system_info["source"]
    assert source["truncated"] is True and source["max_rows"] == 50 and source["engine"] == "duckdb"
    assert any("max_rows" in w and "50" in w for w in capped.system_info["warnings"])
    assert exact.rows() == expected  # exactly max_rows rows: nothing was cut
    assert "truncated" not in exact.system_info["source"]
    assert not any("max_rows" in w for w in exact.system_info.get("warnings", []))


def test_statement_timeout_stops_a_long_query_and_the_server_keeps_serving(extraction: Extraction) -> None:
    result = extraction.responses["timeout"]
    assert result.error_name == "ACP_UPSTREAM_ERROR", result.error
    assert "statement_timeout_s" in result.error["message"]
    assert extraction.timeout_elapsed >= 1  # the timeout did not fire early; only it ends LONG_QUERY
    assert extraction.responses["after-timeout"].rows() == query(extraction.store, FINAL_SELECT)


def test_sql_errors_are_invalid_arguments_with_a_next_step(extraction: Extraction) -> None:
    responses = extraction.responses
    for label, detail in (("missing-table", "nope"), ("syntax", "syntax error"), ("missing-column", "nope")):
        result = responses[label]
        assert _error(result) == INVALID, result.error
        assert detail in result.error["message"]
    assert "autocontext" in responses["missing-table"].error["message"]
    assert "autocontext" in responses["missing-column"].error["message"]
    # An unknown leading word could be an engine command: the parser layer refuses it as a write.
    assert _error(responses["unknown-word"]) == READ_ONLY
    assert "single plain SELECT" in responses["unknown-word"].error["message"]


def test_a_file_locked_by_another_process_is_an_upstream_error_until_released(extraction: Extraction) -> None:
    locked = extraction.responses["locked"]
    assert locked.error_name == "ACP_UPSTREAM_ERROR", locked.error
    assert "locked by another process" in locked.error["message"]
    assert extraction.responses["unlocked"].rows() == [{"one": 1}]


def test_translation_of_real_duckdb_errors(tmp_path: Path) -> None:
    """Each branch of the translation table, from an error DuckDB really raised."""
    conn = duckdb.connect(str(tmp_path / "t.duckdb"), config={"enable_external_access": False})
    conn.execute("CREATE TABLE t (x INTEGER)")
    cases = [
        ("SELEC 1", InvalidArguments, "DuckDB rejected the SQL"),
        ("SELECT * FROM nope", InvalidArguments, "autocontext"),
        ("SELECT nope FROM t", InvalidArguments, "autocontext"),
        ("SELECT 'x'::INTEGER", InvalidArguments, "Fix it"),
        ("SELECT * FROM read_text('/etc/passwd')", ReadOnlyViolation, "files"),
        ("SELECT * FROM 'data/file.csv'", ReadOnlyViolation, "file"),
        ("COMMIT", ReadOnlyViolation, "transactions"),
    ]
    try:
        for sql, kind, words in cases:
            with pytest.raises(duckdb.Error) as caught:
                conn.execute(sql)
            translated = engine.translate(caught.value)
            assert isinstance(translated, kind) and words in translated.message, (sql, str(caught.value), translated)
    finally:
        conn.close()
    assert engine.translate(ValueError("not duckdb")) is None  # other engines' errors are left to them


def test_bad_credentials_are_credentials_invalid(extraction: Extraction) -> None:
    for label, path in extraction.bad.items():
        result = extraction.responses[f"bad-{label}"]
        assert result.error_name == "ACP_CREDENTIALS_INVALID", (path, result.error)
        assert result.error["code"] == -32012
    before, after = extraction.bad_tree
    assert after == before  # opening read-only created nothing, not even the missing file


@pytest.mark.anyio
async def test_cancelled_call_stops_at_duckdb_and_the_server_answers_the_next(databases_host, tmp_path: Path) -> None:
    database = build_store(tmp_path / "store.duckdb")
    async with databases_host() as host:
        server = server_process()
        with anyio.move_on_after(1.5) as scope:
            await host.call(
                "execute_sql",
                {"resource_id": "store", "sql": LONG_QUERY},
                meta(database, config={"statement_timeout_s": 120}),
            )
        assert scope.cancelled_caught
        # The abandoned worker thread does not keep DuckDB busy: its query was interrupted.
        # (A running cross join burns 0.3 CPU-s or more per 0.5 s even on a loaded machine; idle, 0.)
        with anyio.fail_after(5):
            while await cpu_seconds(server, 0.5) > 0.1:
                pass
        after = await host.call("execute_sql", {"resource_id": "store", "sql": FINAL_SELECT}, meta(database))
    assert after.rows() == query(database, FINAL_SELECT)


# -- blocks, resources and describe_table over stdio ----------------------------------------------
@dataclass
class Session:
    database: Path
    listing: ToolResponse
    whole: ToolResponse
    schema: ToolResponse
    table: ToolResponse
    schema_query: ToolResponse
    quoted_table: ToolResponse
    missing_schema: ToolResponse
    describe: ToolResponse
    hidden: dict[str, ToolResponse]


HIDDEN_CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "blocks": ("autocontext", {"resource_id": "store.main.customers"}),
    "column": ("execute_sql", {"resource_id": "store", "sql": "SELECT email FROM customers"}),
    "star": ("execute_sql", {"resource_id": "store.main", "sql": "SELECT * FROM customers"}),
    "histogram": ("execute_sql", {"resource_id": "store", "sql": "SELECT * FROM histogram('customers', email)"}),
    "query-table": ("execute_sql", {"resource_id": "store", "sql": "SELECT * FROM query_table('customers')"}),
    "storage": ("execute_sql", {"resource_id": "store", "sql": "SELECT stats FROM pragma_storage_info('customers')"}),
    "visible": ("execute_sql", {"resource_id": "store", "sql": "SELECT id, name FROM customers ORDER BY id"}),
}


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    folder = tmp_path_factory.mktemp("blocks")
    database = build_store(folder / "store.duckdb")
    env = {"ACP_CACHE_DIR": str(folder / "cache"), "ACP_TMP_DIR": str(folder / "tmp")}
    call_meta = meta(database)
    hidden_meta = meta(database, config={"hidden": json.dumps(["customers\\.email"])})

    async def run() -> Session:
        async with AcpHost.for_module("databases", env=env) as host:
            return Session(
                database=database,
                listing=await host.call("autocontext", {}, call_meta),
                whole=await host.call("autocontext", {"resource_id": "store"}, call_meta),
                schema=await host.call("autocontext", {"resource_id": "store.analytics"}, call_meta),
                table=await host.call("autocontext", {"resource_id": "store.analytics.events"}, call_meta),
                schema_query=await host.call(
                    "execute_sql",
                    {"resource_id": "store.analytics", "sql": "SELECT count(*) AS n FROM events"},
                    call_meta,
                ),
                quoted_table=await host.call("autocontext", {"resource_id": '"store"/"analytics"/"events"'}, call_meta),
                missing_schema=await host.call("autocontext", {"resource_id": "store.nope"}, call_meta),
                describe=await host.call("describe_table", {"resource_id": "store.analytics.events"}, call_meta),
                hidden={
                    label: await host.call(tool, arguments, hidden_meta)
                    for label, (tool, arguments) in HIDDEN_CALLS.items()
                },
            )

    return anyio.run(run)


def blocks(response: ToolResponse) -> dict[str, Any]:
    assert not response.is_error, response.error
    out = {}
    for block in response.model_response:
        assert "error" not in block, block
        out[block["id"]] = block["data"]
    return out


def user_schemas(path: Path) -> list[str]:
    rows = query(
        path,
        "SELECT schema_name FROM information_schema.schemata WHERE catalog_name = current_database() "
        "AND schema_name NOT IN ('information_schema', 'pg_catalog') ORDER BY schema_name",
    )
    return [r["schema_name"] for r in rows]


def objects(path: Path, schema: str) -> dict[str, str]:
    rows = query(
        path,
        "SELECT table_name, table_type FROM information_schema.tables WHERE table_catalog = current_database() "
        "AND table_schema = ?",
        [schema],
    )
    return {r["table_name"]: "view" if r["table_type"] == "VIEW" else "table" for r in rows}


def expected_schema(path: Path, schema: str, table: str) -> dict[str, Any]:
    """Columns and foreign keys from information_schema (not the duckdb_* functions the engine reads)."""
    columns = query(
        path,
        "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
        "WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position",
        [schema, table],
    )
    keys = query(
        path,
        "SELECT tc.constraint_name, tc.constraint_type, k.column_name, k.ordinal_position "
        "FROM information_schema.table_constraints tc JOIN information_schema.key_column_usage k "
        "USING (constraint_schema, constraint_name) WHERE tc.table_schema = ? AND tc.table_name = ?",
        [schema, table],
    )
    primary = {k["column_name"] for k in keys if k["constraint_type"] == "PRIMARY KEY"}
    foreign = []
    for ref in query(
        path,
        "SELECT r.constraint_name, r.unique_constraint_name FROM information_schema.referential_constraints r "
        "JOIN information_schema.table_constraints tc USING (constraint_schema, constraint_name) "
        "WHERE tc.table_schema = ? AND tc.table_name = ?",
        [schema, table],
    ):
        own = sorted(
            (k["ordinal_position"], k["column_name"]) for k in keys if k["constraint_name"] == ref["constraint_name"]
        )
        target = query(
            path,
            "SELECT table_name, column_name, ordinal_position FROM information_schema.key_column_usage "
            "WHERE constraint_schema = ? AND constraint_name = ? ORDER BY ordinal_position",
            [schema, ref["unique_constraint_name"]],
        )
        foreign.append((target[0]["table_name"], tuple(c for _, c in own), tuple(t["column_name"] for t in target)))
    return {
        "columns": [
            (c["column_name"], c["data_type"], c["column_name"] in primary, c["is_nullable"] == "NO") for c in columns
        ],
        "foreign_keys": sorted(foreign),
    }


def reported_schema(entry: dict[str, Any]) -> dict[str, Any]:
    columns = [(c["name"], c["type"], c.get("primary_key", False), c.get("not_null", False)) for c in entry["columns"]]
    foreign = sorted(
        (k["references"], tuple(k["columns"]), tuple(k["referenced_columns"])) for k in entry.get("foreign_keys", [])
    )
    return {"columns": columns, "foreign_keys": foreign}


def test_resource_list_is_the_database_then_its_schemas(session: Session) -> None:
    assert not session.listing.is_error, session.listing.error
    listed = [r["resource_id"] for r in session.listing.model_response["resources"]]
    schemas = user_schemas(session.database)
    assert schemas == ["analytics", "main"]
    assert listed == ["store"] + [f"store.{s}" for s in schemas]


def test_resource_ids_have_schema_and_table_levels() -> None:
    credentials = {"type": "duckdb", "path": "/data/store.duckdb"}
    for text, expected in (
        ("store", ("store", "database")),
        ("store.analytics", ("store.analytics", "schema")),
        ("store/analytics/events", ("store.analytics.events", "table")),
        ('"store"."analytics"."events"', ("store.analytics.events", "table")),
    ):
        ref = normalize(text, credentials)
        assert (ref.id, ref.level) == expected, text
    with pytest.raises(InvalidArguments):
        normalize("a.b.c.d", credentials)


def test_schema_level_resource_reaches_that_schema(session: Session) -> None:
    assert not session.schema_query.is_error, session.schema_query.error
    assert session.schema_query.rows() == query(session.database, "SELECT count(*) AS n FROM analytics.events")
    assert session.schema_query.system_info["source"]["schema"] == "analytics"
    assert session.quoted_table.system_info["resource_id"] == "store.analytics.events"
    assert session.missing_schema.error_name == "ACP_RESOURCE_NOT_FOUND"
    for schema in user_schemas(session.database):
        assert f"store.{schema}" in session.missing_schema.error["message"]


def test_schemas_block_counts_tables_per_schema(session: Session) -> None:
    data = blocks(session.whole)["schemas"]
    assert data == [{"schema": s, "tables": len(objects(session.database, s))} for s in user_schemas(session.database)]


def test_tables_block_rows_equal_direct_counts(session: Session) -> None:
    data = blocks(session.schema)["tables"]
    kinds = objects(session.database, "analytics")
    assert [e["table"] for e in data] == sorted(kinds)
    for entry in data:
        assert entry["type"] == kinds[entry["table"]]
        count = query(session.database, f"SELECT count(*) AS n FROM analytics.{quote(entry['table'])}")[0]["n"]
        assert entry["rows"] == count and "rows_estimated" not in entry
    events = next(e for e in data if e["table"] == "events")
    comment = query(
        session.database, "SELECT TABLE_COMMENT AS c FROM information_schema.tables WHERE table_name = 'events'"
    )
    assert events["comment"] == comment[0]["c"] == "Clicks and views"
    whole = blocks(session.whole)["tables"]
    assert [e["table"] for e in whole] == [
        f"{s}.{t}" for s in user_schemas(session.database) for t in sorted(objects(session.database, s))
    ]


def test_table_schemas_equal_information_schema_with_foreign_keys(session: Session) -> None:
    data = blocks(session.whole)["table_schemas"]
    assert len(data) == sum(len(objects(session.database, s)) for s in user_schemas(session.database))
    for entry in data:
        schema, table = entry["table"].split(".", 1)
        expected = expected_schema(session.database, schema, table)
        # At database level every table is named schema.table, referenced ones too.
        expected["foreign_keys"] = [(f"{schema}.{target}", *rest) for target, *rest in expected["foreign_keys"]]
        assert reported_schema(entry) == expected, entry["table"]
    by_table = {e["table"]: reported_schema(e) for e in data}
    assert by_table["analytics.events"]["foreign_keys"] == [("analytics.sessions", ("session_id",), ("id",))]
    assert by_table["main.orders"]["foreign_keys"] == [("main.customers", ("customer_id",), ("id",))]
    table_level = reported_schema(blocks(session.table)["table_schemas"][0])
    assert table_level == expected_schema(session.database, "analytics", "events")  # a table's own schema: bare
    kind = next(c for c in blocks(session.table)["table_schemas"][0]["columns"] if c["name"] == "kind")
    assert kind["comment"] == "click or view"


def test_date_ranges_equal_direct_min_and_max(session: Session) -> None:
    data = blocks(session.whole)["date_ranges"]
    temporal = query(
        session.database,
        "SELECT table_schema, table_name, column_name FROM information_schema.columns "
        "WHERE data_type IN ('DATE', 'TIMESTAMP', 'TIMESTAMP WITH TIME ZONE') AND table_schema <> 'information_schema' "
        "AND (table_schema, table_name) IN (SELECT table_schema, table_name FROM information_schema.tables "
        "WHERE table_type = 'BASE TABLE')",
    )
    expected = {}
    for row in temporal:
        column, source = quote(row["column_name"]), f"{quote(row['table_schema'])}.{quote(row['table_name'])}"
        bounds = query(session.database, f"SELECT min({column}) AS lo, max({column}) AS hi FROM {source}")[0]
        name = (f"{row['table_schema']}.{row['table_name']}", row["column_name"])
        expected[name] = (jsonish(bounds["lo"]), jsonish(bounds["hi"]))
    reported = {(e["table"], e["column"]): (e["min"], e["max"]) for e in data if not e["table"].endswith("big_orders")}
    assert reported == expected
    assert ("main.orders", "paid_at") in reported and reported[("main.orders", "paid_at")][0].endswith("Z")


def test_sample_values_equal_direct_top_values(session: Session) -> None:
    data = {(e["table"], e["column"]): e for e in blocks(session.whole)["sample_values"]}
    text_columns = query(
        session.database,
        "SELECT c.table_schema, c.table_name, c.column_name FROM information_schema.columns c "
        "JOIN information_schema.tables t USING (table_schema, table_name) "
        "WHERE c.data_type = 'VARCHAR' AND t.table_type = 'BASE TABLE' AND c.table_schema <> 'information_schema'",
    )
    expected = set()
    for row in text_columns:
        source = f"{quote(row['table_schema'])}.{quote(row['table_name'])}"
        column = quote(row["column_name"])
        top = query(
            session.database,
            f"SELECT {column} AS v, count(*) AS n FROM {source} WHERE {column} IS NOT NULL GROUP BY v ORDER BY n DESC, v",
        )
        name = (f"{row['table_schema']}.{row['table_name']}", row["column_name"])
        if 0 < len(top) <= 20:
            expected.add(name)
            assert data[name]["values"] == [t["v"] for t in top[:10]], name
            assert data[name]["distinct"] == len(top)
    reported = {k for k in data if not k[0].endswith("big_orders")}
    assert reported == expected
    assert ("analytics.events", "kind") in expected and ("main.orders", "status") in expected
    assert ("analytics.events", "tags") not in data  # VARCHAR[] is not text


def test_relationships_and_table_level_blocks(session: Session) -> None:
    edges = blocks(session.whole)["relationships"]
    expected = []
    for schema in user_schemas(session.database):
        for table in sorted(objects(session.database, schema)):
            for target, columns, referenced in expected_schema(session.database, schema, table)["foreign_keys"]:
                expected.append(f"{schema}.{table}.{columns[0]} → {schema}.{target}.{referenced[0]}")
    assert sorted(edges) == sorted(expected) and len(expected) == 2
    table_blocks = blocks(session.table)
    assert set(table_blocks) == {"table_schemas", "date_ranges", "sample_values", "relationships"}
    assert table_blocks["relationships"] == ["events.session_id → sessions.id"]
    assert {e["column"] for e in table_blocks["date_ranges"]} == {"happened_at", "day"}


def test_describe_table_on_a_schema_qualified_table(session: Session) -> None:
    assert not session.describe.is_error, session.describe.error
    described = session.describe.model_response
    expected = expected_schema(session.database, "analytics", "events")
    assert described["table"] == "store.analytics.events" and described["type"] == "table"
    assert described["rows"] == query(session.database, "SELECT count(*) AS n FROM analytics.events")[0]["n"]
    assert [(c["name"], c["type"], not c["nullable"]) for c in described["columns"]] == [
        (name, kind, not_null) for name, kind, _, not_null in expected["columns"]
    ]
    assert described["primary_key"] == [name for name, _, primary, _ in expected["columns"] if primary]
    assert [
        (k["references"], tuple(k["columns"]), tuple(k["referenced_columns"])) for k in described["foreign_keys"]
    ] == (expected["foreign_keys"])
    assert described["comment"] == "Clicks and views"


def test_hidden_column_never_reaches_blocks_or_results(session: Session) -> None:
    hidden = session.hidden
    emails = [r["email"] for r in query(session.database, "SELECT email FROM customers")]
    for label, response in hidden.items():
        wire = json.dumps(response.raw)
        assert not any(email in wire for email in emails), label
    schema = blocks(hidden["blocks"])["table_schemas"][0]
    assert [c["name"] for c in schema["columns"]] == ["id", "name", "segment"]
    for label in ("column", "star"):
        assert _error(hidden[label]) == INVALID and "hides" in hidden[label].error["message"], label
    for label in ("histogram", "query-table", "storage"):  # functions that read a table named by a string
        assert _error(hidden[label]) == READ_ONLY, (label, hidden[label].error)
    assert hidden["visible"].rows() == query(session.database, "SELECT id, name FROM customers ORDER BY id")


# -- insert_rows ---------------------------------------------------------------------------------------
@pytest.mark.anyio
async def test_insert_rows_creates_then_appends_in_one_transaction(databases_host, tmp_path: Path) -> None:
    database = build_store(tmp_path / "store.duckdb")
    headers = [
        {"name": "id", "type": "integer"},
        {"name": "label", "type": "string"},
        {"name": "day", "type": "date"},
        {"name": "score", "type": "number"},
        {"name": "extra", "type": "json"},
    ]
    rows = [
        {"id": i, "label": f"row {i}", "day": f"2026-08-{1 + i % 28:02d}", "score": i / 4, "extra": {"i": i}}
        for i in range(120)
    ]
    tables = StaticTables(
        {"ds_1": StaticTable(headers=headers, rows=rows), "ds_2": StaticTable(headers=headers[:2], rows=rows[:3])}
    )
    write_meta = meta(database, config={"access_mode": "readAndOnlyAdd"})
    closing = [{"pattern": "analytics\\.imported", "mode": "onlyRead"}, {"pattern": ".*", "mode": "readAndOnlyAdd"}]
    closing_meta = meta(database, config={"access_mode": "readAndOnlyAdd", "table_rules": json.dumps(closing)})
    before = database_state(database)
    async with databases_host(tables=tables) as host:
        refused = await host.call(
            "insert_rows", {"resource_id": "store.analytics.imported", "table_ref": "ds_1"}, meta(database)
        )
        closed = await host.call(
            "insert_rows", {"resource_id": "store.analytics.imported", "table_ref": "ds_1"}, closing_meta
        )
        created = await host.call(
            "insert_rows", {"resource_id": "store.analytics.imported", "table_ref": "ds_1"}, write_meta
        )
        # The file lock is released right after the write: another process can read it now.
        direct_count = query(database, "SELECT count(*) AS n FROM analytics.imported")[0]["n"]
        appended = await host.call(
            "insert_rows", {"resource_id": "store.analytics.imported", "table_ref": "ds_2"}, write_meta
        )
        read_back = await host.call(
            "execute_sql",
            {"resource_id": "store.analytics", "sql": "SELECT count(*) AS n FROM imported"},
            meta(database),
        )
    assert _error(refused) == READ_ONLY
    assert _error(closed) == READ_ONLY and "onlyRead" in closed.error["message"], closed.error
    assert not created.is_error, created.error  # so the closed call created nothing
    assert created.model_response["created"] is True and created.model_response["inserted_rows"] == len(rows)
    assert direct_count == len(rows)
    assert not appended.is_error, appended.error
    assert appended.model_response["created"] is False and appended.model_response["inserted_rows"] == 3
    assert read_back.rows() == [{"n": len(rows) + 3}]
    stored = query(
        database, "SELECT id, label, day, score, extra FROM analytics.imported ORDER BY id, label, day NULLS FIRST"
    )
    expected = sorted(
        [(r["id"], r["label"], r["day"], r["score"], r["extra"]) for r in rows]
        + [(r["id"], r["label"], None, None, None) for r in rows[:3]],
        key=lambda r: (r[0], r[1], r[2] is not None),
    )
    assert [
        (s["id"], s["label"], jsonish(s["day"]), s["score"], None if s["extra"] is None else json.loads(s["extra"]))
        for s in stored
    ] == expected
    types = {r["column_name"]: r["data_type"] for r in query(
        database, "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'imported'"
    )}  # fmt: skip
    assert types == {"id": "BIGINT", "label": "VARCHAR", "day": "DATE", "score": "DOUBLE", "extra": "JSON"}
    after = database_state(database)
    assert {k: v for k, v in after["tables"].items() if k != "analytics.imported"} == before["tables"]
