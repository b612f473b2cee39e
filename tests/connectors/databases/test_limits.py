"""Limits of ``execute_sql`` on every engine: one wall-clock deadline per call, stopped at the source
whatever the fetch pattern, and ``max_result_bytes``.

PostgreSQL's ``statement_timeout`` bounds each statement, and a server-side cursor runs one
``FETCH`` per batch: a 1 s limit let one query run for minutes while its rows trickled out a
batch at a time. Here the slow queries return their rows slowly over many fetches (heavy
computation per row, never a sleep function), and the call must end with the timeout error and
leave nothing running on the server (``pg_stat_activity``, ``information_schema.PROCESSLIST``,
read from an admin connection). Runs in process against the real servers and real files.
"""

from __future__ import annotations

import secrets
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import duckdb
import pytest
from loader import load_file

from connectors.databases import CONNECTOR
from connectors.databases.engine import TimeBudgetExceeded, engine_for
from shared.host import AcpHost, ToolResponse
from shared.tables import SampleBudget, TableFiles, TableWriter

pg_server = load_file(Path(__file__).with_name("pg_server.py"), "acp_tests_databases_pg_server")
mysql_server = load_file(Path(__file__).with_name("mysql_server.py"), "acp_tests_databases_mysql_server")
pg_database = pg_server.pg_database  # the module-scoped fixtures
mysql_database = mysql_server.mysql_database

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # real servers

UPSTREAM = "ACP_UPSTREAM_ERROR"
GONE_WITHIN_S = 20.0  # how long the server may take to drop a cancelled statement (polled, not timed)


@dataclass
class Source:
    """One engine and login: credentials, the resource, and how to see its statements at the server."""

    engine: str
    credentials: dict[str, Any]
    resource: str
    running: Callable[[str], list[Any]] | None = None  # the statements holding a marker, from an admin session

    def meta(self, **config: Any) -> dict[str, Any]:
        return {"credentials": self.credentials, "autocontext_delivered": True, "config": config}


def _file_databases(folder: Path) -> dict[str, Path]:
    sqlite_path = folder / "limits.sqlite"
    with sqlite3.connect(sqlite_path) as conn:
        conn.execute("CREATE TABLE numbers (n INTEGER)")
        conn.executemany("INSERT INTO numbers VALUES (?)", [(i,) for i in range(100)])
    duckdb_path = folder / "limits.duckdb"
    conn = duckdb.connect(str(duckdb_path))
    conn.execute("CREATE TABLE numbers AS SELECT range AS n FROM range(100)")
    conn.close()
    return {"sqlite": sqlite_path, "duckdb": duckdb_path}


def _pg_running(db: Any) -> Callable[[str], list[Any]]:
    """The connector's sessions in the test database that are in a statement or a transaction (a
    server-side cursor shows as ``FETCH`` between batches, so the marker cannot pick it)."""

    def running(_marker: str) -> list[Any]:
        return db.query(
            "SELECT pid, state, query FROM pg_stat_activity WHERE datname = %s AND application_name = 'acp-databases' "
            "AND state <> 'idle'",
            (db.name,),
        )

    return running


SOURCES = ["sqlite", "duckdb", "postgres-reader", "postgres-superuser", "mysql-reader", "mysql-root"]


@pytest.fixture(params=SOURCES)
def source(request: pytest.FixtureRequest, tmp_path: Path) -> Source:
    kind: str = request.param
    if kind in ("sqlite", "duckdb"):
        path = _file_databases(tmp_path)[kind]
        return Source(kind, {"type": kind, "path": str(path)}, "limits")
    if kind.startswith("postgres"):
        db = request.getfixturevalue("pg_database")
        credentials = db.credentials(superuser=kind.endswith("superuser"))
        return Source("postgres", credentials, db.name, _pg_running(db))
    db = request.getfixturevalue("mysql_database")
    return Source("mysql", db.credentials(root=kind.endswith("root")), db.name, db.processes)


# Queries whose rows come out slowly, over many fetches, for far longer than the deadline: heavy
# work per row (no sleep function), and for the file engines more rows than 1 s can carry.
SLOW_ROWS = {
    "sqlite": "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
    "SELECT n AS {marker}, (SELECT sum(x.n) FROM numbers x WHERE x.n > r.n % 7) AS s FROM r",
    "duckdb": "SELECT r.range AS {marker}, md5(r.range::VARCHAR) AS h FROM range(1000000000000) r",
    "postgres": "SELECT g AS {marker}, (SELECT count(*) FROM generate_series(1, 300 + g % 2)) AS n "
    "FROM (SELECT generate_series(1, 1000000000) AS g) s",
    "mysql": "SELECT a.id AS {marker}, b.id AS b, (SELECT COUNT(*) FROM order_items i WHERE i.qty > a.id % 3) AS n "
    "FROM orders a, orders b, order_items c",
}


@asynccontextmanager
async def host_for(in_process: Any, runtime_dirs: dict[str, str]) -> AsyncIterator[AcpHost]:
    async with in_process(CONNECTOR, env=runtime_dirs) as host:
        yield host


async def _poll(check: Callable[[], Any], want: bool, within_s: float = GONE_WITHIN_S) -> Any:
    """Poll ``check`` (in a thread) until its truth is ``want`` or ``within_s`` passed; its last answer."""
    deadline = time.monotonic() + within_s
    while True:
        answer = await anyio.to_thread.run_sync(check)
        if bool(answer) == want or time.monotonic() > deadline:
            return answer
        await anyio.sleep(0.05)


async def test_one_deadline_ends_a_query_whose_rows_trickle_out_and_stops_it_at_the_server(
    source: Source, in_process: Any, runtime_dirs: dict[str, str]
) -> None:
    marker = f"acp_deadline_{secrets.token_hex(4)}"
    sql = SLOW_ROWS[source.engine].format(marker=marker)
    meta = source.meta(statement_timeout_s=1, max_rows=10**9)  # no row cap ends it first
    seen: list[Any] = []
    answer: list[ToolResponse] = []
    async with host_for(in_process, runtime_dirs) as host:
        async with anyio.create_task_group() as group:

            async def call() -> None:
                with anyio.fail_after(60):  # a safety bound for a regression: these rows would go on for hours
                    answer.append(await host.call("execute_sql", {"resource_id": source.resource, "sql": sql}, meta))

            group.start_soon(call)
            if source.running is not None:
                running = source.running
                seen = await _poll(lambda: running(marker) or (["ended first"] if answer else []), want=True)
        result = answer[0]
        assert result.error_name == UPSTREAM, result.error or result.text[:300]
        assert "statement_timeout_s" in result.error["message"]
        if source.running is not None:
            running = source.running
            assert seen and seen != ["ended first"], "premise: the query was seen running at the server"
            assert await _poll(lambda: running(marker), want=False) == []  # stopped there, its session closed
        after = await host.call("execute_sql", {"resource_id": source.resource, "sql": "SELECT 1 AS one"}, meta)
    assert after.rows() == [{"one": 1}], after.error


SLOW_CLIENT_ROWS = {
    "sqlite": "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 20000) SELECT n FROM r",
    "duckdb": "SELECT range AS n FROM range(20000)",
    "postgres": "SELECT generate_series(1, 20000) AS n",
    "mysql": "SELECT a.id AS n FROM orders a, customers b",
}


def test_the_deadline_holds_while_the_rows_wait_on_the_client(source: Source, tmp_path: Path) -> None:
    """The rows are ready at once and it is the host side that is slow: an interrupt that reaches an
    idle session stops nothing there, so the row loop itself must end at the deadline."""
    engine = engine_for(source.credentials)
    conn = engine.connect(source.credentials, None)
    stored = threading.Event()

    def slow_host(_writer: TableWriter, _final: bool) -> None:
        stored.set()
        time.sleep(0.1)

    writer = TableWriter(
        "result",
        budget=SampleBudget(head_rows=10, spread_rows=0, inline_max_bytes=10**9),
        files=TableFiles("acp-test-limits", str(tmp_path)),
        on_rows=slow_host,
    )
    try:
        with pytest.raises(TimeBudgetExceeded):
            conn.stream(SLOW_CLIENT_ROWS[source.engine], writer, schema=None, timeout_s=0.25)
    finally:
        conn.close()
    assert stored.is_set() and 0 < writer.row_count < 20000  # premise: rows arrived, and not all of them


WIDE_ROWS = {
    "sqlite": "SELECT n, printf('%.1000c', 'x') AS body FROM numbers ORDER BY n",
    "duckdb": "SELECT n, repeat('x', 1000) AS body FROM numbers ORDER BY n",
    "postgres": "SELECT g AS n, repeat('x', 1000) AS body FROM generate_series(0, 99) g ORDER BY g",
    "mysql": "SELECT id - 1 AS n, REPEAT('x', 1000) AS body FROM orders WHERE id <= 100 ORDER BY id",
}


async def test_max_result_bytes_ends_the_extraction_politely_with_a_warning(
    source: Source, in_process: Any, runtime_dirs: dict[str, str]
) -> None:
    arguments = {"resource_id": source.resource, "sql": WIDE_ROWS[source.engine]}
    async with host_for(in_process, runtime_dirs) as host:
        capped = await host.call("execute_sql", arguments, source.meta(max_result_bytes=20_000))
        whole = await host.call("execute_sql", arguments, source.meta())
    assert not capped.is_error, capped.error
    rows = capped.rows()
    assert 19 <= len(rows) <= 21  # about 1 KB of JSON a row: the table stops at the first row past 20,000 bytes
    assert [r["n"] for r in rows] == list(range(len(rows))) and rows[0]["body"] == "x" * 1000
    source_info = capped.system_info["source"]
    assert source_info["truncated"] is True and source_info["max_result_bytes"] == 20_000
    warning = next(w for w in capped.system_info["warnings"] if "max_result_bytes" in w)
    assert "Narrow the query" in warning and "aggregate" in warning
    assert len(whole.rows()) == 100 and "truncated" not in whole.system_info["source"]  # the default: 1 GiB
