"""Nothing of one call reaches the next through a pooled connection, on every engine, as the
least-privilege login and as superuser/root.

Written as an attacker would: state is set through ``execute_sql`` where the SQL allows it
(MariaDB user variables are legal SELECT syntax), and otherwise directly on the pooled
connection object, through the pool's own API, with whatever the driver lets a holder of that
object do; then the next holder looks for it. Expectations come from admin connections
(``pg_locks``, ``pg_stat_activity``, ``IS_USED_LOCK``, ``information_schema.PROCESSLIST``).
"""

from __future__ import annotations

import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from loader import load_file

from connectors.databases import CONNECTOR
from connectors.databases.engine import Connection, engine_for
from connectors.databases.pool import ConnectionPool

pg_server = load_file(Path(__file__).with_name("pg_server.py"), "acp_tests_databases_pg_server")
mysql_server = load_file(Path(__file__).with_name("mysql_server.py"), "acp_tests_databases_mysql_server")
pg_database = pg_server.pg_database  # the module-scoped fixtures
mysql_database = mysql_server.mysql_database

pytestmark = pytest.mark.slow  # real servers


@pytest.fixture
def pool() -> Iterator[ConnectionPool]:
    own = ConnectionPool()
    try:
        yield own
    finally:
        own.close_all()


def _take(pool: ConnectionPool, credentials: dict[str, Any]) -> Any:
    return pool.connection(engine_for(credentials), credentials, None, threading.Event())


def _eventually(check: Callable[[], Any], within_s: float = 10.0) -> Any:
    """Poll until ``check`` is truthy (a server drops a closed session's locks asynchronously)."""
    deadline = time.monotonic() + within_s
    while not (answer := check()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return answer


# =====================================================================================================
# MariaDB: PyMySQL cannot reset a session, so a connection is never pooled
# =====================================================================================================


@pytest.mark.anyio
@pytest.mark.parametrize("login", ["reader", "root"])
async def test_a_user_variable_set_in_one_call_is_not_there_in_the_next(
    login: str, mysql_database: Any, in_process: Any, runtime_dirs: dict[str, str]
) -> None:
    db = mysql_database
    value = f"leak-{secrets.token_hex(6)}"
    meta = db.meta(root=login == "root")
    async with in_process(CONNECTOR, env=runtime_dirs) as host:
        first = await host.call("execute_sql", {"resource_id": db.name, "sql": f"SELECT @v := '{value}' AS v"}, meta)
        second = await host.call("execute_sql", {"resource_id": db.name, "sql": "SELECT @v AS v"}, meta)
    if not first.is_error:  # the parser layer may refuse assignments; if it lets one run, it must not last
        assert first.rows() == [{"v": value}]
    assert second.is_error or second.rows() == [{"v": None}], second.rows()
    assert value not in second.text


@pytest.mark.parametrize("login", ["reader", "root"])
def test_named_locks_and_variables_end_with_the_call_on_mysql(
    login: str, mysql_database: Any, pool: ConnectionPool
) -> None:
    db = mysql_database
    credentials = db.credentials(root=login == "root")
    lock = f"acp_lock_{secrets.token_hex(4)}"
    with _take(pool, credentials) as conn:
        raw = conn._live()
        with raw.cursor() as cursor:  # straight on the pooled object: no parser layer in the way
            cursor.execute("SELECT GET_LOCK(%s, 0), CONNECTION_ID()", (lock,))
            held, thread = cursor.fetchone()
            cursor.execute("SET @v = 'leaked'")
        assert held == 1 and db.scalar("SELECT IS_USED_LOCK(%s)", (lock,)) == thread  # premise
    # The connection was closed, not pooled: its thread is gone and the server released its lock.
    assert _eventually(lambda: db.scalar("SELECT IS_USED_LOCK(%s)", (lock,)) is None)
    assert db.rows("SELECT ID FROM information_schema.PROCESSLIST WHERE ID = %s", (thread,)) == []
    with _take(pool, credentials) as conn:
        assert conn._read("SELECT @v, CONNECTION_ID()")[0][0] is None


# =====================================================================================================
# PostgreSQL: DISCARD ALL before a connection goes back to the pool
# =====================================================================================================


def _pid(conn: Connection) -> int:
    return int(conn._read("SELECT pg_backend_pid()")[0][0])


@pytest.mark.parametrize("login", ["reader", "superuser"])
def test_session_state_set_on_a_pooled_connection_is_gone_for_the_next_call(
    login: str, pg_database: Any, pool: ConnectionPool
) -> None:
    db = pg_database
    superuser = login == "superuser"
    credentials = db.credentials(superuser=superuser)
    key = secrets.randbits(31)
    with _take(pool, credentials) as conn:
        pid = _pid(conn)
        raw = conn._conn
        raw.autocommit = True  # out of the read-only transaction: what a holder of the object could do
        raw.execute("SELECT set_config('acp.leak', 'x', false), pg_advisory_lock(%s)", (key,))
        raw.execute("PREPARE leak AS SELECT 1")
        raw.execute("LISTEN leak")
        if superuser:  # only the superuser may create temporary tables in this database, or become the reader
            raw.execute("CREATE TEMP TABLE leak AS SELECT 1 AS x")
            raw.execute(f'SET ROLE "{db.role}"')
        raw.autocommit = False
        held = db.rows("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = %s", (pid,))
        assert held == [(1,)]  # premise: the lock is held at the server
    with _take(pool, credentials) as conn:
        assert _pid(conn) == pid  # the same session came back: it was reset, not replaced
        state = conn._read(
            "SELECT current_setting('acp.leak', true), current_user, to_regclass('pg_temp.leak'), "
            "(SELECT count(*) FROM pg_prepared_statements), (SELECT count(*) FROM pg_listening_channels())"
        )[0]
    assert state[0] in (None, "")
    assert state[1] == ("postgres" if superuser else db.role)
    assert state[2:] == (None, 0, 0)
    assert db.rows("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = %s", (pid,)) == [(0,)]


def test_a_session_can_be_reset_again_and_again(pg_database: Any) -> None:
    """DISCARD ALL drops every prepared statement at the server, its own included: psycopg prepared the
    DISCARD ALL it had run five times in a row, and the next one failed with 'prepared statement
    _pg3_0 does not exist' (found by bench/session_reset.py)."""
    credentials = pg_database.credentials()
    conn = engine_for(credentials).connect(credentials, None)
    try:
        for _ in range(8):
            assert conn.reset() is True
        assert [t.name for t in conn.tables("public", 0, only="orders")] == ["orders"]
    finally:
        conn.close()


def test_a_connection_whose_reset_fails_is_closed_not_pooled(pg_database: Any, pool: ConnectionPool) -> None:
    db = pg_database
    credentials = db.credentials()
    with _take(pool, credentials) as conn:
        pid = _pid(conn)
        db.rows("SELECT pg_terminate_backend(%s)", (pid,))  # the session dies between the call and its reset
    with _take(pool, credentials) as conn:
        assert _pid(conn) != pid
    pids: list[int] = []

    def failing_call() -> None:
        with _take(pool, credentials) as conn:
            pids.append(_pid(conn))
            raise ZeroDivisionError  # a call that failed: its connection is in doubt

    with pytest.raises(ZeroDivisionError):
        failing_call()
    failed = pids[0]
    assert _eventually(lambda: db.rows("SELECT pid FROM pg_stat_activity WHERE pid = %s", (failed,)) == [])


# =====================================================================================================
# SQLite and DuckDB: what a session could hold, and what the pool does about it
# =====================================================================================================


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    sqlite_path = tmp_path / "state.sqlite"
    with sqlite3.connect(sqlite_path) as conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
    duckdb_path = tmp_path / "state.duckdb"
    conn = duckdb.connect(str(duckdb_path))
    conn.execute("CREATE TABLE t (x INTEGER)")
    conn.close()
    return {"sqlite": sqlite_path, "duckdb": duckdb_path}


@pytest.mark.parametrize(
    "statement",
    ["CREATE TEMP TABLE leak (x)", "CREATE TEMP VIEW leak AS SELECT 1", "PRAGMA temp_store = 2", "BEGIN",
     "ATTACH ':memory:' AS other"],
)  # fmt: skip
def test_a_sqlite_read_session_refuses_everything_that_would_outlive_a_call(
    statement: str, files: dict[str, Path], pool: ConnectionPool
) -> None:
    credentials = {"type": "sqlite", "path": str(files["sqlite"])}
    with _take(pool, credentials) as conn:
        first = conn
        with pytest.raises(sqlite3.DatabaseError):
            conn.conn.execute(statement)  # straight on the pooled object: the authorizer is the guard
    with _take(pool, credentials) as conn:
        assert conn is first  # nothing to reset: the session was pooled as it was
        assert conn.conn.execute("SELECT count(*) FROM sqlite_temp_master").fetchone() == (0,)
        assert not conn.conn.in_transaction


def test_a_duckdb_session_holding_temporary_objects_is_closed_not_pooled(
    files: dict[str, Path], pool: ConnectionPool
) -> None:
    credentials = {"type": "duckdb", "path": str(files["duckdb"])}
    with _take(pool, credentials) as conn:
        clean = conn
    with _take(pool, credentials) as conn:
        assert conn is clean  # a session with nothing in it is reused
        # A read-only DuckDB session accepts these (no SELECT can create them): a holder of the object.
        conn.conn.execute("CREATE TEMP TABLE leak AS SELECT 'x' AS v")
        conn.conn.execute("SET VARIABLE leak = 'x'")
    assert clean.closed
    with _take(pool, credentials) as conn:
        assert conn is not clean
        assert conn.conn.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary").fetchone() == (0,)
        assert conn.conn.execute("SELECT getvariable('leak')").fetchone() == (None,)
