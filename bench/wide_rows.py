"""Wide rows: peak memory of ``execute_sql`` on 1,500 rows × 1 MB of text, against the bare driver.

For each engine (SQLite, DuckDB, PostgreSQL, MySQL/MariaDB) the script builds a table ``wide(id,
body)`` of N rows whose ``body`` is about 1 MB of text (1.5 GB of result in all), then measures:

* **connector**: ``execute_sql`` with ``SELECT id, body FROM wide ORDER BY id`` on a fresh
  ``python -m connectors.databases`` server over stdio (``max_result_bytes`` raised to 4 GiB so that
  every row is extracted), the result a ``table_uri`` file with every row. The server's peak RSS is
  its ``VmHWM`` read right after the call, and its RSS before the call is reported next to it.
* **bare driver**: a separate interpreter that streams the same rows with the same kind of cursor,
  as little at a time as the driver allows (PostgreSQL a server-side cursor, MariaDB an unbuffered
  ``SSCursor``, SQLite and DuckDB ``fetchmany``), ``--baseline-batch`` rows a fetch (default 1), and
  writes each row to a file with ``orjson``. Its ``VmHWM``.

Targets: connector peak RSS < 300 MB on SQLite, PostgreSQL and MariaDB, whose drivers can stream;
DuckDB's driver materializes large strings whatever the fetch size (about 2.9 GB here even with
``fetchmany(1)``), so there the target is ≤ 1.2× the bare driver's peak.

    .venv/bin/python bench/wide_rows.py [--engines sqlite,duckdb,postgres,mysql] [--rows 1500]
                                        [--row-bytes 1000000] [--baseline-batch 1]

By hand only (not in CI, not in ``run_all.py``): building the tables writes about 1.5 GB per file
engine and per MariaDB table, and the DuckDB side needs about 3 GB of memory twice. PostgreSQL and
MariaDB as for ``db_extract.py``; each gets a fresh uniquely named database, dropped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve()
ROOT = SCRIPT.parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.child import run_child  # noqa: E402 - after the path setup
from bench.db_extract import Source, proc_status_kb, server_pid  # noqa: E402
from bench.scratch_databases import MY, PG, create_mariadb, create_postgres  # noqa: E402

ENGINES = ("sqlite", "duckdb", "postgres", "mysql")
SQL = "SELECT id, body FROM wide ORDER BY id"
STREAMING_TARGET_MB = 300.0
DUCKDB_TARGET_RATIO = 1.2
MD5_CHARS = 32  # each body repeats the md5 of its id (hex)


# -- building the table ---------------------------------------------------------------------------------
def build_sqlite(rows: int, repeats: int, scratch: Path) -> Source:
    import hashlib
    import sqlite3

    path = scratch / "wide.sqlite"
    conn = sqlite3.connect(path)
    try:
        conn.execute("CREATE TABLE wide (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        conn.executemany(  # a generator: the rows are made one at a time
            "INSERT INTO wide VALUES (?, ?)",
            ((i, hashlib.md5(str(i).encode()).hexdigest() * repeats) for i in range(1, rows + 1)),
        )
        conn.commit()
    finally:
        conn.close()
    return Source("sqlite", {"type": "sqlite", "path": str(path)}, path.stem, {"engine": "sqlite", "path": str(path)})


def build_duckdb(rows: int, repeats: int, scratch: Path) -> Source:
    import duckdb

    path = scratch / "wide.duckdb"
    conn = duckdb.connect(str(path))
    try:
        conn.execute(
            f"CREATE TABLE wide AS SELECT range AS id, repeat(md5(range::VARCHAR), {int(repeats)}) AS body "
            f"FROM range(1, {int(rows) + 1})"
        )
        conn.execute("CHECKPOINT")
    finally:
        conn.close()
    return Source("duckdb", {"type": "duckdb", "path": str(path)}, path.stem, {"engine": "duckdb", "path": str(path)})


def build_postgres(rows: int, repeats: int, scratch: Path) -> Source:
    import psycopg

    database, drop = create_postgres("acp_bench_wide_")
    try:
        with psycopg.connect(**PG, dbname=database, autocommit=True, connect_timeout=5) as conn:
            conn.execute(
                "CREATE TABLE wide AS SELECT g AS id, repeat(md5(g::text), %s) AS body FROM generate_series(1, %s) g",
                (repeats, rows),
            )
    except BaseException:
        drop()
        raise
    credentials = {**PG, "type": "postgres", "database": database, "sslmode": "disable"}
    return Source("postgres", credentials, database, {"engine": "postgres", **PG, "dbname": database}, cleanup=drop)


def build_mysql(rows: int, repeats: int, scratch: Path) -> Source:
    import pymysql

    database, drop = create_mariadb("acp_bench_wide_")

    def admin(statement: str, db: str | None = None) -> None:
        conn = pymysql.connect(**MY, database=db, autocommit=True, connect_timeout=5)
        try:
            with conn.cursor() as cursor:
                cursor.execute(statement)
        finally:
            conn.close()

    try:
        admin("CREATE TABLE wide (id BIGINT PRIMARY KEY, body LONGTEXT NOT NULL) ENGINE=InnoDB", database)
        for start in range(1, rows + 1, 100):  # in slices: one statement's undo log stays small
            end = min(start + 99, rows)
            admin(f"INSERT INTO wide SELECT seq, REPEAT(MD5(seq), {int(repeats)}) FROM seq_{start}_to_{end}", database)
    except BaseException:
        drop()
        raise
    credentials = {**MY, "type": "mysql", "database": database, "ssl_mode": "disabled"}
    return Source("mysql", credentials, database, {"engine": "mysql", **MY, "database": database}, cleanup=drop)


BUILDERS: dict[str, Callable[[int, int, Path], Source]] = {
    "sqlite": build_sqlite,
    "duckdb": build_duckdb,
    "postgres": build_postgres,
    "mysql": build_mysql,
}


# -- the bare driver (runs in its own interpreter) -------------------------------------------------------
def baseline_child(spec: dict[str, Any]) -> dict[str, Any]:
    """Stream every row with the bare driver, ``batch`` rows a fetch, each written to a file as JSON."""
    import orjson

    engine, batch, out = spec["engine"], int(spec["batch"]), Path(spec["out"])
    if engine == "sqlite":
        import sqlite3

        conn: Any = sqlite3.connect(Path(spec["path"]).as_uri() + "?mode=ro", uri=True)
        cursor: Any = conn.execute(SQL)
    elif engine == "duckdb":
        import duckdb

        conn = duckdb.connect(spec["path"], read_only=True)
        cursor = conn.execute(SQL)
    elif engine == "postgres":
        import psycopg

        conn = psycopg.connect(host=spec["host"], port=spec["port"], user=spec["user"], dbname=spec["dbname"])
        cursor = conn.cursor(name="bench")  # a server-side cursor, as the connector uses
        cursor.execute(SQL)
    elif engine == "mysql":
        import pymysql
        from pymysql.cursors import SSCursor

        conn = pymysql.connect(
            host=spec["host"], port=spec["port"], user=spec["user"], password=spec["password"],
            database=spec["database"], charset="utf8mb4",
        )  # fmt: skip
        cursor = SSCursor(conn)  # unbuffered, as the connector uses
        cursor.execute(SQL)
    else:
        raise ValueError(engine)
    start = time.perf_counter_ns()
    count = size = 0
    with out.open("wb") as handle:
        while rows := cursor.fetchmany(batch):
            for row in rows:
                line = orjson.dumps({"id": row[0], "body": row[1]})
                handle.write(line)
                size += len(line)
            count += len(rows)
    elapsed = time.perf_counter_ns() - start
    conn.close()
    return {"seconds": elapsed / 1e9, "rows": count, "bytes": size, "hwm_kb": proc_status_kb("self", "VmHWM")}


def run_baseline(source: Source, batch: int, scratch: Path) -> dict[str, Any]:
    out = scratch / "baseline.jsonl"
    spec = {**source.baseline, "batch": batch, "out": str(out)}
    return run_child([sys.executable, str(SCRIPT), "--baseline-child", json.dumps(spec)], out)


# -- the connector ----------------------------------------------------------------------------------------
async def run_connector(source: Source, rows: int, scratch: Path) -> dict[str, Any]:
    from shared.host import AcpHost, uri_path

    env = {"ACP_TMP_DIR": str(scratch / "tmp"), "ACP_CACHE_DIR": str(scratch / "cache")}
    meta = {
        "credentials": source.credentials,
        "autocontext_delivered": True,
        "config": {"max_result_bytes": 4 * 2**30, "statement_timeout_s": 3600},
    }
    command = [sys.executable, "-m", "connectors.databases"]
    async with AcpHost(command, env=env, cwd=ROOT, read_timeout_s=3600) as host:
        pid = server_pid()
        warm = await host.call("execute_sql", {"resource_id": source.resource_id, "sql": "SELECT 1 AS one"}, meta)
        if warm.is_error:
            raise RuntimeError(f"warm-up call failed: {warm.text[:500]}\n{host.stderr()[-2000:]}")
        idle_kb = proc_status_kb(pid, "VmRSS")
        start = time.perf_counter_ns()
        response = await host.call("execute_sql", {"resource_id": source.resource_id, "sql": SQL}, meta)
        elapsed = time.perf_counter_ns() - start
        hwm_kb = proc_status_kb(pid, "VmHWM")
        data = response.system_data or {}
        if response.is_error or data.get("format") != "file" or data.get("row_count") != rows:
            summary = {k: v for k, v in data.items() if k not in ("headers", "table")}
            raise RuntimeError(f"unexpected answer: {response.text[:500]} {summary} {host.stderr()[-2000:]}")
        path = uri_path(str(data["table_uri"]))
        size = path.stat().st_size
        path.unlink()
    return {"seconds": elapsed / 1e9, "rows": rows, "bytes": size, "hwm_kb": hwm_kb, "idle_kb": idle_kb}


# -- driver ---------------------------------------------------------------------------------------------------
def measure_engine(engine: str, rows: int, row_bytes: int, batch: int, scratch: Path) -> dict[str, Any]:
    import anyio

    start = time.perf_counter()
    source = BUILDERS[engine](rows, max(row_bytes // MD5_CHARS, 1), scratch)
    print(f"[{engine}] built {rows:,} rows × {row_bytes:,} characters in {time.perf_counter() - start:.0f} s")
    try:
        baseline = run_baseline(source, batch, scratch)
        if baseline["rows"] != rows:
            raise RuntimeError(f"the bare driver fetched {baseline['rows']} rows, not {rows}")
        connector = anyio.run(run_connector, source, rows, scratch)
    finally:
        source.cleanup()
    for kind, result in (("bare driver", baseline), ("connector", connector)):
        print(
            f"[{engine}] {kind:<11} {result['seconds']:7.1f} s  peak RSS {result['hwm_kb'] / 1024:7.0f} MB  "
            f"written {result['bytes'] / 2**20:6.0f} MiB",
            flush=True,
        )
    return {"engine": engine, "connector": connector, "baseline": baseline}


def report(results: list[dict[str, Any]], rows: int, row_bytes: int, batch: int) -> None:
    print()
    print(f"{SQL}: {rows:,} rows × {row_bytes:,} characters; bare driver: fetchmany({batch}) + orjson per row")
    print(
        f"{'engine':<9} {'connector peak RSS':>19} {'(before the call)':>18} {'bare driver peak RSS':>21} {'ratio':>6}"
    )
    for result in results:
        engine = result["engine"]
        if "error" in result:
            print(f"{engine:<9} FAILED: {result['error']}")
            continue
        mine, bare = result["connector"]["hwm_kb"] / 1024, result["baseline"]["hwm_kb"] / 1024
        idle = result["connector"]["idle_kb"] / 1024
        ratio = mine / bare
        if engine == "duckdb":
            verdict = f"{'meets' if ratio <= DUCKDB_TARGET_RATIO else 'MISSES'} ≤ {DUCKDB_TARGET_RATIO:g}× the driver"
        else:
            verdict = f"{'meets' if mine < STREAMING_TARGET_MB else 'MISSES'} < {STREAMING_TARGET_MB:g} MB"
        print(f"{engine:<9} {mine:>16.0f} MB {idle:>15.0f} MB {bare:>18.0f} MB {ratio:>5.2f}×  {verdict}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default=",".join(ENGINES), help="comma-separated, default all four")
    parser.add_argument("--rows", type=int, default=1500, help="rows in the table (default 1,500)")
    parser.add_argument("--row-bytes", type=int, default=1_000_000, help="characters of text a row (default 1 MB)")
    parser.add_argument("--baseline-batch", type=int, default=1, help="rows a fetch for the bare driver (default 1)")
    parser.add_argument("--baseline-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.baseline_child:
        print(json.dumps(baseline_child(json.loads(args.baseline_child))))
        return 0
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = sorted(set(engines) - set(ENGINES))
    if unknown:
        parser.error(f"unknown engines {unknown}; choose from {', '.join(ENGINES)}")
    results = []
    for engine in engines:
        with tempfile.TemporaryDirectory(prefix=f"acp-bench-wide-{engine}-") as scratch:
            os.chmod(scratch, 0o700)
            try:
                results.append(measure_engine(engine, args.rows, args.row_bytes, args.baseline_batch, Path(scratch)))
            except Exception as exc:  # one engine's failure (a server not running) does not hide the others
                print(f"[{engine}] failed: {exc}", flush=True)
                results.append({"engine": engine, "error": str(exc)[:300]})
    report(results, args.rows, args.row_bytes, args.baseline_batch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
