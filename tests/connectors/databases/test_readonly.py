"""Read-only in depth (spec 10.4): write and escape attempts through ``execute_sql``.

One real server over stdio runs the whole corpus against a SQLite file; the tests then
check each answer (ACP_READ_ONLY_VIOLATION, -32019, spec 12.1) and that nothing changed:
rows, schema, header pragmas, file bytes and the folder around the database. The second
half checks each engine layer of ``connectors.databases.sqlite`` in-process, without the
sqlglot parser.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from connectors.databases import engine_sqlite as engine
from shared import ReadOnlyViolation
from shared.host import AcpHost, ToolResponse

READ_ONLY = ("ACP_READ_ONLY_VIOLATION", -32019)

# Placeholders: {attach}, {vacuum}, {written} are paths inside the watched folder.
WRITE_ATTEMPTS: list[tuple[str, str]] = [
    # data
    ("insert", "INSERT INTO customers (name, email) VALUES ('Eve', 'eve@example.com')"),
    ("update", "UPDATE orders SET amount = 0"),
    ("delete", "DELETE FROM orders"),
    ("replace", "REPLACE INTO customers (id, name, email) VALUES (1, 'Eve', 'eve@example.com')"),
    ("insert-or-ignore", "INSERT OR IGNORE INTO customers (id, name) VALUES (1000, 'Eve')"),
    (
        "upsert",
        "INSERT INTO customers (id, name) VALUES (1, 'Eve') ON CONFLICT(id) DO UPDATE SET name = excluded.name",
    ),
    ("insert-select", "INSERT INTO notes (body) SELECT name FROM customers"),
    ("insert-default-values", "INSERT INTO notes DEFAULT VALUES"),
    ("insert-schema-qualified", "INSERT INTO main.notes (body) VALUES ('x')"),
    ("delete-returning", "DELETE FROM orders RETURNING *"),
    ("delete-with-subquery", "DELETE FROM orders WHERE id IN (SELECT id FROM orders WHERE amount > 10)"),
    ("update-from", "UPDATE orders SET amount = c.id FROM customers AS c WHERE c.id = orders.customer_id"),
    ("with-delete", "WITH x AS (SELECT 1) DELETE FROM orders"),
    ("with-insert", "WITH x AS (SELECT 'Eve' AS n) INSERT INTO customers (name) SELECT n FROM x"),
    ("data-modifying-cte", "WITH d AS (DELETE FROM orders RETURNING id) SELECT * FROM d"),
    ("delete-sqlite-schema", "DELETE FROM sqlite_schema WHERE name = 'orders'"),
    ("update-sqlite-master", "UPDATE sqlite_master SET sql = 'CREATE TABLE orders (x)' WHERE name = 'orders'"),
    # schema
    ("create-table", "CREATE TABLE evil (x)"),
    ("create-table-as", "CREATE TABLE evil AS SELECT * FROM orders"),
    ("create-index", "CREATE INDEX evil_idx ON orders (amount)"),
    ("create-view", "CREATE VIEW evil_view AS SELECT 1 AS one"),
    ("create-trigger", "CREATE TRIGGER evil_trg AFTER INSERT ON orders BEGIN DELETE FROM customers; END"),
    ("create-virtual-table", "CREATE VIRTUAL TABLE evil_fts USING fts5(body)"),
    ("create-temp-table", "CREATE TEMP TABLE scratch (x)"),
    ("create-temp-view", "CREATE TEMP VIEW scratch_view AS SELECT 1 AS one"),
    ("drop-table", "DROP TABLE orders"),
    ("drop-view", "DROP VIEW big_orders"),
    ("drop-index", "DROP INDEX orders_by_customer"),
    ("alter-add-column", "ALTER TABLE orders ADD COLUMN evil TEXT"),
    ("alter-rename-table", "ALTER TABLE orders RENAME TO orders_old"),
    ("alter-rename-column", "ALTER TABLE orders RENAME COLUMN amount TO amt"),
    ("alter-drop-column", "ALTER TABLE orders DROP COLUMN created"),
    # files
    ("attach", "ATTACH DATABASE '{attach}' AS evil"),
    ("attach-memory", "ATTACH DATABASE ':memory:' AS scratch"),
    ("detach", "DETACH DATABASE evil"),
    ("vacuum", "VACUUM"),
    ("vacuum-into", "VACUUM INTO '{vacuum}'"),
    ("load-extension", "SELECT load_extension('x')"),
    ("writefile", "SELECT writefile('{written}', 'data')"),
    ("readfile", "SELECT readfile('/etc/passwd')"),
    ("fts3-tokenizer", "SELECT fts3_tokenizer('simple')"),
    ("select-into", "SELECT * INTO backup FROM orders"),
    # pragmas
    ("pragma-user-version", "PRAGMA user_version = 99"),
    ("pragma-main-user-version", "PRAGMA main.user_version = 99"),
    ("pragma-schema-version", "PRAGMA schema_version = 1"),
    ("pragma-journal-mode", "PRAGMA journal_mode = WAL"),
    ("pragma-query-only-off", "PRAGMA query_only = 0"),
    ("pragma-writable-schema", "PRAGMA writable_schema = 1"),
    ("pragma-foreign-keys-off", "PRAGMA foreign_keys = off"),
    ("pragma-application-id", "PRAGMA application_id = 42"),
    # transactions and maintenance
    ("begin", "BEGIN"),
    ("begin-immediate", "BEGIN IMMEDIATE"),
    ("commit", "COMMIT"),
    ("end", "END"),
    ("end-transaction", "END TRANSACTION"),
    ("rollback", "ROLLBACK"),
    ("savepoint", "SAVEPOINT s1"),
    ("release", "RELEASE s1"),
    ("reindex", "REINDEX"),
    ("reindex-index", "REINDEX orders_by_customer"),
    ("analyze", "ANALYZE"),
    ("analyze-table", "ANALYZE orders"),
    # several statements
    ("select-then-drop", "SELECT 1; DROP TABLE orders"),
    ("select-then-attach", "SELECT 1; ATTACH DATABASE '{attach}' AS evil"),
    ("union-then-vacuum", "SELECT 1 UNION SELECT 2; VACUUM"),
    ("comment-hiding-semicolon", "SELECT 1 /* ; */ ; DELETE FROM orders"),
    # transaction escapes: end the connector's transaction, then write (the archived reference
    # PostgreSQL MCP server's bug)
    ("select-commit-drop", "SELECT 1; COMMIT; DROP TABLE orders"),
    ("end-then-drop", "END; DROP TABLE orders"),
    ("rollback-then-delete", "ROLLBACK; DELETE FROM orders"),
    ("end-transaction-then-delete", "END TRANSACTION; DELETE FROM orders"),
    ("commit-transaction-then-drop", "COMMIT TRANSACTION; DROP TABLE customers"),
    ("commit-query-only-off-delete", "COMMIT; PRAGMA query_only=0; DELETE FROM orders"),
    ("rollback-to-then-delete", "ROLLBACK TO s1; DELETE FROM orders"),
    ("release-then-insert", "RELEASE s1; INSERT INTO notes (body) VALUES ('x')"),
    ("begin-delete-commit", "BEGIN; DELETE FROM orders; COMMIT"),
    ("select-end-vacuum-into", "SELECT 1; END; VACUUM INTO '{vacuum}'"),
    # hiding and disguise
    ("block-comment-then-delete", "/* c */ DELETE FROM orders"),
    ("line-comment-then-delete", "-- c\nDELETE FROM orders"),
    ("mixed-case", "dElEtE fRoM orders"),
    ("quoted-identifier", 'DELETE FROM "orders"'),
    ("bracket-identifier", "DELETE FROM [orders]"),
    ("backtick-identifier", "DELETE FROM `orders`"),
    ("leading-whitespace-trailing-semicolon", "  \n\t DELETE FROM orders  ;  "),
    ("form-feed-and-carriage-return", "DELETE\fFROM\rorders"),
    ("no-break-space", "DELETE\u00a0FROM orders"),
    ("em-space", "\u2003DELETE FROM orders"),
    ("ideographic-space", "DELETE\u3000FROM orders"),
    ("line-separator", "DELETE\u2028FROM orders"),
    ("zero-width-space", "DELETE\u200bFROM orders"),
]

# Statements SQLite runs but sqlglot cannot tokenize or parse (an unterminated trailing
# block comment is valid SQLite; "UPDATE OR ROLLBACK" and "~~1" are valid SQLite too):
# the parser layer lets them through, so only the engine layers and the error
# translation stand between them and the file.
PARSER_BYPASS_ATTEMPTS: list[tuple[str, str]] = [
    ("unterminated-comment-delete", "DELETE FROM orders /* x"),
    ("unterminated-comment-insert", "INSERT INTO notes (body) VALUES ('x') /* x"),
    ("unterminated-comment-create-table", "CREATE TABLE evil (x) /* x"),
    ("unterminated-comment-attach", "ATTACH DATABASE '{attach}' AS evil /* x"),
    ("unterminated-comment-begin", "BEGIN /* x"),
    ("unterminated-comment-pragma", "PRAGMA user_version = 99 /* x"),
    ("unterminated-comment-load-extension", "SELECT load_extension('x') /* x"),
    ("unterminated-comment-vacuum", "VACUUM /* x"),
    ("unterminated-comment-vacuum-into", "VACUUM INTO '{vacuum}' /* x"),
    ("unterminated-comment-delete-sqlite-schema", "DELETE FROM sqlite_schema WHERE name = 'orders' /* x"),
    ("unterminated-comment-select-then-delete", "SELECT 1; DELETE FROM orders /* x"),
    ("update-or-rollback", "UPDATE OR ROLLBACK orders SET amount = 0"),
    ("double-tilde-delete", "DELETE FROM orders WHERE 1 = ~~1"),
    ("reindex-qualified", "REINDEX main.orders_by_customer"),
]

HARMLESS_MULTI_STATEMENTS: list[tuple[str, str]] = [
    ("two-selects", "SELECT 1; SELECT 2"),
    ("two-selects-unterminated-comment", "SELECT 1; SELECT 2 /* x"),
]

FINAL_SELECT = "SELECT c.name, count(o.id) AS orders FROM customers c LEFT JOIN orders o ON o.customer_id = c.id GROUP BY c.id ORDER BY c.id"


def build_store(path: Path) -> Path:
    """A small trigger-free database: three tables with rows, an index and a view."""
    conn = sqlite3.connect(path)
    try:
        conn.executescript(
            """
            CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT UNIQUE);
            CREATE TABLE orders (
                id INTEGER PRIMARY KEY,
                customer_id INTEGER NOT NULL REFERENCES customers(id),
                amount REAL NOT NULL,
                created DATE NOT NULL
            );
            CREATE TABLE notes (body TEXT);
            CREATE INDEX orders_by_customer ON orders (customer_id);
            CREATE VIEW big_orders AS SELECT * FROM orders WHERE amount > 100;
            PRAGMA user_version = 7;
            """
        )
        conn.executemany(
            "INSERT INTO customers (id, name, email) VALUES (?, ?, ?)",
            [(i, f"Customer {i}", f"c{i}@example.com") for i in range(1, 21)],
        )
        conn.executemany(
            "INSERT INTO orders (customer_id, amount, created) VALUES (?, ?, ?)",
            [(1 + i % 20, round(5 + (i * 37) % 190 + i / 100, 2), f"2026-07-{1 + i % 28:02d}") for i in range(200)],
        )
        conn.executemany("INSERT INTO notes (body) VALUES (?)", [(f"note {i}",) for i in range(5)])
        conn.commit()
    finally:
        conn.close()
    return path


@dataclass
class CorpusRun:
    root: Path
    database: Path
    targets: list[Path]
    sql: dict[str, str]
    responses: dict[str, ToolResponse]
    final: ToolResponse
    state_before: dict[str, Any]
    state_after: dict[str, Any]
    tree_before: set[str]
    tree_after: set[str]


@pytest.fixture(scope="module")
def corpus_run(tmp_path_factory: pytest.TempPathFactory, direct: Any) -> CorpusRun:
    """Run every attempt through one server over stdio, snapshotting before and after."""
    root = tmp_path_factory.mktemp("watched")
    runtime = tmp_path_factory.mktemp("runtime")  # caches and table files live outside the watched folder
    env = {"ACP_CACHE_DIR": str(runtime / "cache"), "ACP_TMP_DIR": str(runtime / "tmp")}
    database = build_store(root / "store.sqlite")
    targets = [root / "attached.sqlite", root / "copy.sqlite", root / "written.txt"]
    paths = {"attach": targets[0], "vacuum": targets[1], "written": targets[2]}
    sql = {
        label: template.format(**paths)
        for label, template in WRITE_ATTEMPTS + PARSER_BYPASS_ATTEMPTS + HARMLESS_MULTI_STATEMENTS
    }
    state_before, tree_before = direct.database_state(database), direct.file_tree(root)
    meta = direct.sqlite_meta(database)
    responses: dict[str, ToolResponse] = {}

    async def attack() -> ToolResponse:
        async with AcpHost.for_module("databases", env=env) as host:
            for label, text in sql.items():
                responses[label] = await host.call("execute_sql", {"resource_id": "store", "sql": text}, meta)
            return await host.call("execute_sql", {"resource_id": "store", "sql": FINAL_SELECT}, meta)

    final = anyio.run(attack)
    return CorpusRun(
        root=root,
        database=database,
        targets=targets,
        sql=sql,
        responses=responses,
        final=final,
        state_before=state_before,
        state_after=direct.database_state(database),
        tree_before=tree_before,
        tree_after=direct.file_tree(root),
    )


def _error(response: ToolResponse) -> tuple[str | None, int | None]:
    error = response.error or {}
    return error.get("name"), error.get("code")


def test_corpus_is_large_enough() -> None:
    assert len(WRITE_ATTEMPTS) + len(PARSER_BYPASS_ATTEMPTS) >= 40
    labels = [label for label, _ in WRITE_ATTEMPTS + PARSER_BYPASS_ATTEMPTS + HARMLESS_MULTI_STATEMENTS]
    assert len(labels) == len(set(labels))


@pytest.mark.parametrize("label", [label for label, _ in WRITE_ATTEMPTS])
def test_write_attempt_is_a_read_only_violation(corpus_run: CorpusRun, label: str) -> None:
    response = corpus_run.responses[label]
    assert response.is_error and response.kind == "error"
    assert _error(response) == READ_ONLY, (corpus_run.sql[label], response.error)
    assert response.model_response == {"error": response.error}  # spec 12.1: the model sees the same error


@pytest.mark.parametrize("label", [label for label, _ in PARSER_BYPASS_ATTEMPTS])
def test_write_the_parser_cannot_read_is_still_a_read_only_violation(corpus_run: CorpusRun, label: str) -> None:
    response = corpus_run.responses[label]
    assert response.is_error
    assert _error(response) == READ_ONLY, (corpus_run.sql[label], response.error)


@pytest.mark.parametrize("label", [label for label, _ in HARMLESS_MULTI_STATEMENTS])
def test_several_harmless_statements_are_refused_as_read_only(corpus_run: CorpusRun, label: str) -> None:
    """Whichever layer catches them (parser or driver), several statements are a read-only refusal."""
    response = corpus_run.responses[label]
    assert _error(response) == READ_ONLY, response.error
    message = response.error["message"].lower()
    assert "one query per call" in message or "single plain select" in message


def test_every_table_checksum_is_unchanged(corpus_run: CorpusRun) -> None:
    before, after = corpus_run.state_before, corpus_run.state_after
    assert set(before["tables"]) == {"customers", "orders", "notes"}
    assert after["tables"] == before["tables"]
    assert after["file_sha256"] == before["file_sha256"]


def test_schema_and_header_pragmas_are_unchanged(corpus_run: CorpusRun) -> None:
    before, after = corpus_run.state_before, corpus_run.state_after
    assert before["pragmas"]["user_version"] == 7 and before["pragmas"]["journal_mode"] == "delete"
    assert after["pragmas"] == before["pragmas"]  # user_version, schema_version, journal_mode…
    assert after["schema"] == before["schema"]  # sqlite_schema: no new table, index, view or trigger


def test_no_file_appears_next_to_the_database(corpus_run: CorpusRun) -> None:
    sqlite_own = {f"{corpus_run.database.name}-wal", f"{corpus_run.database.name}-shm"}
    assert corpus_run.tree_before == {corpus_run.database.name}
    assert corpus_run.tree_after - corpus_run.tree_before <= sqlite_own
    assert not any(target.exists() for target in corpus_run.targets)  # ATTACH, VACUUM INTO, writefile


def test_server_still_serves_a_select_after_the_corpus(corpus_run: CorpusRun, direct: Any) -> None:
    final = corpus_run.final
    assert not final.is_error, final.error
    expected = direct.query(corpus_run.database, FINAL_SELECT)
    assert len(expected) == 20
    assert final.rows() == expected
    assert final.model_response["total_rows"] == len(expected)


# -- the engine layers, in-process and without the parser ------------------------------------------
# Single statements SQLite compiles (the parser-only cases, like SELECT … INTO, are left out).
ENGINE_WRITES: list[tuple[str, str]] = [
    (label, sql)
    for label, sql in WRITE_ATTEMPTS + PARSER_BYPASS_ATTEMPTS
    if not label.startswith("unterminated-comment-")  # the same statements as above, for the engine
    and label
    not in {
        "data-modifying-cte",  # parser-only: SQLite itself rejects the syntax
        "select-into",
        "writefile",  # not compiled into the sqlite3 module: "no such function"
        "readfile",
        "select-then-drop",  # several statements: the driver's layer, tested on its own below
        "select-then-attach",
        "union-then-vacuum",
        "comment-hiding-semicolon",
        "select-commit-drop",
        "end-then-drop",
        "rollback-then-delete",
        "end-transaction-then-delete",
        "commit-transaction-then-drop",
        "commit-query-only-off-delete",
        "rollback-to-then-delete",
        "release-then-insert",
        "begin-delete-commit",
        "select-end-vacuum-into",
        "no-break-space",  # SQLite does not treat Unicode spaces as spaces: a syntax error
        "em-space",
        "ideographic-space",
        "line-separator",
        "zero-width-space",
    }
]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    folder = tmp_path / "store"
    folder.mkdir()
    return build_store(folder / "store.sqlite")


def _targets(folder: Path) -> dict[str, Path]:
    return {"attach": folder / "attached.sqlite", "vacuum": folder / "copy.sqlite", "written": folder / "written.txt"}


def _run(conn: sqlite3.Connection, sql: str) -> None:
    conn.execute(sql).fetchall()


def test_engine_corpus_covers_every_kind_of_write() -> None:
    labels = {label for label, _ in ENGINE_WRITES}
    for needed in ("insert", "upsert", "create-trigger", "attach", "vacuum-into", "pragma-query-only-off", "begin"):
        assert needed in labels
    assert len(ENGINE_WRITES) >= 40


@pytest.mark.parametrize(("label", "template"), ENGINE_WRITES, ids=[label for label, _ in ENGINE_WRITES])
def test_database_connection_refuses_write(store: Path, direct: Any, label: str, template: str) -> None:
    folder = store.parent
    before, tree = direct.database_state(store), direct.file_tree(folder)
    database = engine.Database(str(store))
    try:
        with pytest.raises(sqlite3.DatabaseError):
            _run(database.conn, template.format(**_targets(folder)))
    finally:
        database.close()
    assert direct.database_state(store) == before
    assert direct.file_tree(folder) == tree


@pytest.mark.parametrize(("label", "template"), ENGINE_WRITES, ids=[label for label, _ in ENGINE_WRITES])
def test_engine_refusal_translates_to_read_only_violation(store: Path, label: str, template: str) -> None:
    with engine.opened(str(store)) as database:
        try:
            _run(database.conn, template.format(**_targets(store.parent)))
        except sqlite3.DatabaseError as exc:
            message, translated = str(exc), engine.translate(exc)
        else:
            pytest.fail(f"{label} ran")
    assert isinstance(translated, ReadOnlyViolation), (label, message, translated and translated.name)


def test_database_applies_query_only_and_the_attach_limit(store: Path) -> None:
    with engine.opened(str(store)) as database:
        assert database.conn.execute("PRAGMA query_only").fetchone()[0] == 1
        assert database.conn.getlimit(sqlite3.SQLITE_LIMIT_ATTACHED) == 0


def test_mode_ro_holds_without_the_authorizer_and_query_only(store: Path, direct: Any) -> None:
    before = direct.database_state(store)
    with engine.opened(str(store)) as database:
        database.conn.set_authorizer(None)
        database.conn.execute("PRAGMA query_only = 0")  # only mode=ro is left for the main file
        assert database.conn.execute("PRAGMA query_only").fetchone()[0] == 0
        for sql in ("DELETE FROM orders", "CREATE TABLE evil (x)", "PRAGMA user_version = 99"):
            with pytest.raises(sqlite3.OperationalError, match="readonly"):
                _run(database.conn, sql)
    assert direct.database_state(store) == before


def test_query_only_holds_without_the_authorizer(store: Path) -> None:
    with engine.opened(str(store)) as database:
        database.conn.set_authorizer(None)
        # mode=ro does not cover the temp database; query_only does.
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            _run(database.conn, "CREATE TEMP TABLE scratch (x)")


def test_attach_limit_holds_without_the_authorizer(store: Path, direct: Any) -> None:
    folder = store.parent
    tree = direct.file_tree(folder)
    targets = _targets(folder)
    with engine.opened(str(store)) as database:
        database.conn.set_authorizer(None)
        for sql in (f"ATTACH DATABASE '{targets['attach']}' AS evil", f"VACUUM INTO '{targets['vacuum']}'"):
            with pytest.raises(sqlite3.OperationalError, match="too many attached"):
                _run(database.conn, sql)
    assert direct.file_tree(folder) == tree


def test_mode_ro_uri_alone_refuses_writes(store: Path, direct: Any) -> None:
    before = direct.database_state(store)
    conn = sqlite3.connect(f"{store.as_uri()}?mode=ro", uri=True, isolation_level=None)
    try:
        for sql in ("INSERT INTO notes (body) VALUES ('x')", "DROP TABLE orders", "PRAGMA user_version = 1"):
            with pytest.raises(sqlite3.OperationalError, match="readonly"):
                _run(conn, sql)
    finally:
        conn.close()
    assert direct.database_state(store) == before


def test_query_only_alone_refuses_writes(store: Path, direct: Any) -> None:
    before = direct.database_state(store)
    conn = sqlite3.connect(store, isolation_level=None)
    try:
        conn.execute("PRAGMA query_only = 1")
        for sql in ("UPDATE orders SET amount = 0", "CREATE INDEX evil ON orders (amount)", "CREATE TEMP TABLE t (x)"):
            with pytest.raises(sqlite3.OperationalError, match="readonly"):
                _run(conn, sql)
    finally:
        conn.close()
    assert direct.database_state(store) == before


def test_attach_limit_alone_blocks_attach_and_vacuum_into_without_files(store: Path, direct: Any) -> None:
    folder = store.parent
    tree = direct.file_tree(folder)
    targets = _targets(folder)
    conn = sqlite3.connect(store, isolation_level=None)
    try:
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        for sql in (f"ATTACH DATABASE '{targets['attach']}' AS evil", f"VACUUM INTO '{targets['vacuum']}'"):
            with pytest.raises(sqlite3.OperationalError, match="too many attached"):
                _run(conn, sql)
    finally:
        conn.close()
    assert direct.file_tree(folder) == tree


AUTHORIZER_DENIES = [
    "INSERT INTO notes (body) VALUES ('x')",
    "UPDATE orders SET amount = 0",
    "DELETE FROM orders",
    "CREATE TABLE evil (x)",
    "CREATE TEMP TABLE scratch (x)",
    "DROP INDEX orders_by_customer",
    "ALTER TABLE orders ADD COLUMN evil TEXT",
    "ATTACH DATABASE '{attach}' AS evil",
    "VACUUM INTO '{vacuum}'",
    "PRAGMA user_version = 99",
    "PRAGMA journal_mode = WAL",
    "BEGIN",
    "COMMIT",
    "SAVEPOINT s1",
    "SELECT load_extension('x')",
]


def test_authorizer_alone_denies_writes_files_transactions_and_extensions(store: Path, direct: Any) -> None:
    folder = store.parent
    before, tree = direct.database_state(store), direct.file_tree(folder)
    conn = sqlite3.connect(store, isolation_level=None)  # writable: the authorizer is the only guard
    try:
        conn.set_authorizer(engine._authorize)
        for template in AUTHORIZER_DENIES:
            with pytest.raises(sqlite3.DatabaseError):
                _run(conn, template.format(**_targets(folder)))
        # …and it still lets reads and describing pragmas through.
        assert conn.execute("SELECT count(*) FROM orders").fetchone()[0] == 200
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 7
        assert [r[1] for r in conn.execute("PRAGMA table_info(customers)")] == ["id", "name", "email"]
    finally:
        conn.close()
    assert direct.database_state(store) == before
    assert direct.file_tree(folder) == tree


def test_driver_alone_runs_one_statement_per_execute(store: Path, direct: Any) -> None:
    before = direct.database_state(store)
    conn = sqlite3.connect(store, isolation_level=None)  # writable, no other layer
    try:
        for sql in ("DELETE FROM orders; SELECT 1", "SELECT 1; DELETE FROM orders"):
            with pytest.raises(sqlite3.ProgrammingError, match="one statement"):
                conn.execute(sql)
    finally:
        conn.close()
    assert direct.database_state(store) == before
