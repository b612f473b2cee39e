"""Large extraction: ``SELECT *`` of an N-row table through the connector, against the bare driver.

For each engine (SQLite, DuckDB, PostgreSQL, MySQL/MariaDB) the script builds a table of N rows
× 6 columns (id, a date, a text of 7 values, a float, a NUMERIC(14,2), a timestamp), then times:

* **connector**: ``execute_sql`` with ``SELECT * FROM orders`` on a fresh
  ``python -m connectors.databases`` server driven over stdio by the ACP test host
  (``shared.host.AcpHost``), credentials in ``_meta.acp``, ``row_limit`` 25. The result must
  be ``format: "file"`` with ``row_count == N``. Client-side wall time of the one call; the
  server's peak RSS is its ``VmHWM`` (``/proc/<pid>/status``) read right after the call.
* **baseline**: a separate interpreter running the bare driver: the same kind of cursor,
  ``fetchall()`` into a list, then one ``orjson.dumps`` of the rows as a JSON array of objects
  (``Decimal`` written verbatim) to a file. Its own wall time (query to file closed) and VmHWM.

Both run alternately, ``--repeat`` times each; medians are reported.

    .venv/bin/python bench/db_extract.py [--engines sqlite,duckdb,postgres,mysql] [--rows 1000000]
                                         [--repeat 3] [--inline-max-bytes N] [--profile DIR]

Targets: median(connector) / median(baseline) ≤ 1.5×; connector peak RSS < 300 MB (the
baseline holds every row in memory, so it may use more). Run by hand only: not in CI, and in
``run_all.py`` only with ``--extract``. PostgreSQL (127.0.0.1:5432, ``postgres``, trust) and
MariaDB/MySQL (127.0.0.1:3306, ``root``, no password) must be running for their engines; each
gets a fresh uniquely named database, dropped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve()
ROOT = SCRIPT.parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.child import run_child  # noqa: E402 - after the path setup
from bench.scratch_databases import MY, PG, create_mariadb, create_postgres  # noqa: E402

ENGINES = ("sqlite", "duckdb", "postgres", "mysql")
TABLE = "orders"
STATUSES = ("new", "paid", "packed", "shipped", "delivered", "returned", "cancelled")
TARGET_RATIO = 1.5
TARGET_RSS_MB = 300.0
ROW_LIMIT = 25
IDLE_WAITS = ("'readline'", "'poll'", "'select'", "'acquire'", "'wait'", "time.sleep")
INLINE_ROWS_MAX = 100_000  # from this many rows on, the result must be a table_uri file

# One formula per column, the same on every engine (``i`` runs from 1 to N):
#   id = i; order_date = 2020-01-01 + i % 1826 days; status = STATUSES[i % 7];
#   amount = (i * 7919 % 1000003) / 100.0 (float); price = (i * 104729 % 100000000) / 100 (exact);
#   created_at = 2020-01-01 00:00:00 + i * 37 % 157766400 seconds.


def _sql_list(values: tuple[str, ...]) -> str:
    return ", ".join(f"'{v}'" for v in values)


# -- building the table ------------------------------------------------------------------------------
@dataclass
class Source:
    """One engine's table: how the connector and the baseline reach it, and how to drop it."""

    engine: str
    credentials: dict[str, Any]
    resource_id: str
    baseline: dict[str, Any]
    build_s: float = 0.0
    cleanup: Callable[[], None] = field(default=lambda: None)


def build_sqlite(rows: int, scratch: Path) -> Source:
    import sqlite3

    path = scratch / "bench.sqlite"
    statuses = " ".join(f"WHEN {i} THEN '{s}'" for i, s in enumerate(STATUSES))
    conn = sqlite3.connect(path)
    try:
        conn.execute(
            f"CREATE TABLE {TABLE} (id INTEGER PRIMARY KEY, order_date DATE NOT NULL, status TEXT NOT NULL, "
            "amount REAL NOT NULL, price NUMERIC(14,2) NOT NULL, created_at TIMESTAMP NOT NULL)"
        )
        conn.execute(
            f"INSERT INTO {TABLE} WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?) "
            "SELECT i, date('2020-01-01', '+' || (i % 1826) || ' days'), "
            f"CASE i % 7 {statuses} END, (i * 7919 % 1000003) / 100.0, (i * 104729 % 100000000) / 100.0, "
            "datetime('2020-01-01 00:00:00', '+' || (i * 37 % 157766400) || ' seconds') FROM s",
            (rows,),
        )
        conn.commit()
    finally:
        conn.close()
    spec = {"engine": "sqlite", "path": str(path)}
    return Source("sqlite", {"type": "sqlite", "path": str(path)}, path.stem, spec)


def build_duckdb(rows: int, scratch: Path) -> Source:
    import duckdb

    path = scratch / "bench.duckdb"
    conn = duckdb.connect(str(path))
    try:
        conn.execute(
            f"CREATE TABLE {TABLE} (id BIGINT PRIMARY KEY, order_date DATE NOT NULL, status VARCHAR NOT NULL, "
            "amount DOUBLE NOT NULL, price DECIMAL(14,2) NOT NULL, created_at TIMESTAMP NOT NULL)"
        )
        conn.execute(
            f"INSERT INTO {TABLE} SELECT i, DATE '2020-01-01' + CAST(i % 1826 AS INTEGER), "
            f"([{_sql_list(STATUSES)}])[i % 7 + 1], CAST(i * 7919 % 1000003 AS DOUBLE) / 100.0, "
            "CAST(CAST(i * 104729 % 100000000 AS DECIMAL(18,0)) / 100 AS DECIMAL(14,2)), "
            "TIMESTAMP '2020-01-01 00:00:00' + to_seconds(i * 37 % 157766400) "
            f"FROM range(1, {int(rows) + 1}) t(i)"
        )
        conn.execute("CHECKPOINT")
    finally:
        conn.close()
    spec = {"engine": "duckdb", "path": str(path)}
    return Source("duckdb", {"type": "duckdb", "path": str(path)}, path.stem, spec)


def build_postgres(rows: int, scratch: Path) -> Source:
    import psycopg

    database, drop = create_postgres("acp_bench_")
    try:
        with psycopg.connect(**PG, dbname=database, autocommit=True, connect_timeout=5) as conn:
            conn.execute(
                f"CREATE TABLE {TABLE} (id bigint PRIMARY KEY, order_date date NOT NULL, status text NOT NULL, "
                "amount double precision NOT NULL, price numeric(14,2) NOT NULL, created_at timestamp NOT NULL)"
            )
            conn.execute(
                f"INSERT INTO {TABLE} SELECT i, DATE '2020-01-01' + (i %% 1826)::int, "
                f"(ARRAY[{_sql_list(STATUSES)}])[i %% 7 + 1], (i * 7919 %% 1000003)::float8 / 100.0, "
                "((i * 104729 %% 100000000)::numeric / 100)::numeric(14,2), "
                "TIMESTAMP '2020-01-01 00:00:00' + make_interval(secs => i * 37 %% 157766400) "
                "FROM generate_series(1::bigint, %s::bigint) i",
                (rows,),
            )
            conn.execute(f"VACUUM ANALYZE {TABLE}")
    except BaseException:
        drop()
        raise
    credentials = {**PG, "type": "postgres", "database": database, "sslmode": "disable"}
    spec = {"engine": "postgres", **PG, "dbname": database}
    return Source("postgres", credentials, database, spec, cleanup=drop)


def build_mysql(rows: int, scratch: Path) -> Source:
    import pymysql

    database, drop = create_mariadb("acp_bench_")
    try:
        conn = pymysql.connect(**MY, database=database, autocommit=True, connect_timeout=5)
        try:
            with conn.cursor() as cursor:
                cursor.execute(
                    f"CREATE TABLE {TABLE} (id BIGINT PRIMARY KEY, order_date DATE NOT NULL, "
                    "status VARCHAR(16) NOT NULL, amount DOUBLE NOT NULL, price DECIMAL(14,2) NOT NULL, "
                    "created_at DATETIME NOT NULL) ENGINE=InnoDB"
                )
                cursor.execute("SELECT SUPPORT FROM information_schema.ENGINES WHERE ENGINE = 'SEQUENCE'")
                found = cursor.fetchone()
                if found and str(found[0]).upper() in ("YES", "DEFAULT"):
                    numbers = f"(SELECT seq AS i FROM seq_1_to_{int(rows)}) s"  # MariaDB's SEQUENCE engine
                    prefix = ""
                else:  # MySQL 8: a recursive CTE
                    cursor.execute(f"SET SESSION cte_max_recursion_depth = {int(rows) + 1}")
                    prefix = f"WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {int(rows)}) "
                    numbers = "s"
                cursor.execute(
                    f"INSERT INTO {TABLE} {prefix}SELECT i, DATE '2020-01-01' + INTERVAL (i % 1826) DAY, "
                    f"ELT(i % 7 + 1, {_sql_list(STATUSES)}), (i * 7919 % 1000003) / 100e0, "
                    "(i * 104729 % 100000000) / 100, "
                    f"TIMESTAMP '2020-01-01 00:00:00' + INTERVAL (i * 37 % 157766400) SECOND FROM {numbers}"
                )
                cursor.execute(f"ANALYZE TABLE {TABLE}")
                cursor.fetchall()
        finally:
            conn.close()
    except BaseException:
        drop()
        raise
    credentials = {**MY, "type": "mysql", "database": database, "ssl_mode": "disabled"}
    spec = {"engine": "mysql", **MY, "database": database}
    return Source("mysql", credentials, database, spec, cleanup=drop)


BUILDERS: dict[str, Callable[[int, Path], Source]] = {
    "sqlite": build_sqlite,
    "duckdb": build_duckdb,
    "postgres": build_postgres,
    "mysql": build_mysql,
}


# -- /proc -------------------------------------------------------------------------------------------
def proc_status_kb(pid: int | str, key: str) -> int:
    """A ``kB`` field of ``/proc/<pid>/status`` (VmHWM: peak RSS; VmRSS: current RSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def proc_usage(pid: int | str) -> dict[str, float]:
    """CPU seconds (user, system; every thread) and minor page faults so far, from ``/proc/<pid>/stat``."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # fields[0] is field 3 (state) of proc(5)
    ticks = os.sysconf("SC_CLK_TCK")
    return {"user_s": int(fields[11]) / ticks, "sys_s": int(fields[12]) / ticks, "minflt": int(fields[7])}


def usage_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {key: after[key] - before[key] for key in before}


def self_usage() -> dict[str, float]:
    """This process's CPU seconds and minor page faults so far (``getrusage``)."""
    import resource

    used = resource.getrusage(resource.RUSAGE_SELF)
    return {"user_s": used.ru_utime, "sys_s": used.ru_stime, "minflt": used.ru_minflt}


def server_pid() -> int:
    """The pid of the connector: the benchmark's one child process running the server."""
    import psutil

    found = []
    for child in psutil.Process().children():
        try:
            cmdline = " ".join(child.cmdline())
        except psutil.Error:
            continue
        if "connectors.databases" in cmdline or "--serve-profiled" in cmdline:
            found.append(child.pid)
    if len(found) != 1:
        raise RuntimeError(f"expected one server child process, found {found}")
    return found[0]


# -- baseline (runs in its own interpreter) -------------------------------------------------------------
def baseline_child(spec: dict[str, Any]) -> dict[str, Any]:
    """Fetch every row with the bare driver, dump them as a JSON array of objects, write the file."""
    from decimal import Decimal

    import orjson

    def default(value: Any) -> Any:
        if isinstance(value, Decimal):
            return orjson.Fragment(str(value))
        raise TypeError(type(value).__name__)

    engine, sql_text, out = spec["engine"], spec["sql"], Path(spec["out"])
    close: Callable[[], None]
    if engine == "sqlite":
        import sqlite3

        conn: Any = sqlite3.connect(Path(spec["path"]).as_uri() + "?mode=ro", uri=True)
        close = conn.close

        def fetch() -> tuple[list[str], list[Any]]:
            cursor = conn.execute(sql_text)
            return [d[0] for d in cursor.description], cursor.fetchall()

    elif engine == "duckdb":
        import duckdb

        conn = duckdb.connect(spec["path"], read_only=True)
        close = conn.close

        def fetch() -> tuple[list[str], list[Any]]:
            cursor = conn.execute(sql_text)
            return [d[0] for d in cursor.description], cursor.fetchall()

    elif engine == "postgres":
        import psycopg

        conn = psycopg.connect(host=spec["host"], port=spec["port"], user=spec["user"], dbname=spec["dbname"])
        close = conn.close

        def fetch() -> tuple[list[str], list[Any]]:
            with conn.cursor(name="bench") as cursor:  # a server-side cursor, as the connector uses
                cursor.execute(sql_text)
                names = [d.name for d in cursor.description or ()]
                rows = cursor.fetchall()
            conn.rollback()
            return names, rows

    elif engine == "mysql":
        import pymysql
        from pymysql.cursors import SSCursor

        conn = pymysql.connect(
            host=spec["host"], port=spec["port"], user=spec["user"], password=spec["password"],
            database=spec["database"], charset="utf8mb4",
        )  # fmt: skip
        close = conn.close

        def fetch() -> tuple[list[str], list[Any]]:
            cursor = SSCursor(conn)  # unbuffered, as the connector uses
            cursor.execute(sql_text)
            names = [d[0] for d in cursor.description or ()]
            rows = cursor.fetchall()
            cursor.close()
            return names, rows

    else:
        raise ValueError(engine)
    try:
        usage = self_usage()
        start = time.perf_counter_ns()
        names, rows = fetch()
        fetched = time.perf_counter_ns()
        data = orjson.dumps([dict(zip(names, row, strict=True)) for row in rows], default=default)
        with out.open("wb") as handle:
            handle.write(data)
        elapsed = time.perf_counter_ns() - start
        usage = usage_delta(usage, self_usage())
    finally:
        close()
    return {
        "seconds": elapsed / 1e9,
        **usage,
        "fetch_seconds": (fetched - start) / 1e9,
        "rows": len(rows),
        "bytes": len(data),
        "hwm_kb": proc_status_kb("self", "VmHWM"),
    }


def run_baseline(source: Source, sql_text: str, scratch: Path) -> dict[str, Any]:
    out = scratch / "baseline.json"
    spec = {**source.baseline, "sql": sql_text, "out": str(out)}
    return run_child([sys.executable, str(SCRIPT), "--baseline-child", json.dumps(spec)], out)


# -- connector ---------------------------------------------------------------------------------------
async def run_connector(
    source: Source,
    sql_text: str,
    rows: int,
    scratch: Path,
    expect_file: bool,
    inline_max_bytes: int | None = None,
    profile: Path | None = None,
) -> dict[str, Any]:
    from shared.host import AcpHost, uri_path

    env = {"ACP_TMP_DIR": str(scratch / "tmp"), "ACP_CACHE_DIR": str(scratch / "cache")}
    if profile is None:
        command = [sys.executable, "-m", "connectors.databases"]
    else:
        command = [sys.executable, str(SCRIPT), "--serve-profiled", str(profile)]
    meta = {"credentials": source.credentials, "row_limit": ROW_LIMIT, "autocontext_delivered": True}
    if inline_max_bytes is not None:
        meta["inline_max_bytes"] = inline_max_bytes
    timeout = max(120.0, rows / 2000)
    async with AcpHost(command, env=env, cwd=ROOT, read_timeout_s=timeout) as host:
        pid = server_pid()
        # Untimed first call: lazy imports (sqlglot, jsonschema) and the pooled connection.
        warm = await host.call("execute_sql", {"resource_id": source.resource_id, "sql": sql_text + " LIMIT 1"}, meta)
        if warm.is_error:
            raise RuntimeError(f"warm-up call failed: {warm.text[:500]}\n{host.stderr()[-2000:]}")
        idle_kb = proc_status_kb(pid, "VmRSS")
        usage = proc_usage(pid)
        start = time.perf_counter_ns()
        response = await host.call("execute_sql", {"resource_id": source.resource_id, "sql": sql_text}, meta)
        elapsed = time.perf_counter_ns() - start
        usage = usage_delta(usage, proc_usage(pid))
        hwm_kb = proc_status_kb(pid, "VmHWM")
        data = response.system_data or {}
        # Past inline_max_bytes (by default 5 MiB, about 42,000 rows of all six columns) the table must be a file.
        expected = ("file",) if expect_file else ("file", "inline")
        if response.is_error or data.get("format") not in expected or data.get("row_count") != rows:
            summary = {k: v for k, v in data.items() if k not in ("headers", "table")}
            raise RuntimeError(
                f"unexpected connector answer: {response.text[:500]} system_data={summary} "
                f"stderr={host.stderr()[-2000:]}"
            )
        if data["format"] == "file":
            path = uri_path(str(data["table_uri"]))
            size = path.stat().st_size
            path.unlink()
        else:
            size = len(json.dumps(data["table"], separators=(",", ":")))
    return {
        "seconds": elapsed / 1e9,
        **usage,
        "rows": rows,
        "bytes": size,
        "hwm_kb": hwm_kb,
        "idle_kb": idle_kb,
        "types": [h.get("type") for h in data.get("headers", [])],
        "format": data["format"],
    }


def serve_profiled(out: str) -> None:
    """The connector's server under cProfile, worker threads included (``-m cProfile`` sees only the
    main thread, and the rows are fetched and written in ``anyio.to_thread`` workers)."""
    import atexit
    import cProfile
    import pstats
    import runpy
    import signal
    import threading

    import anyio.to_thread

    profiles: list[cProfile.Profile] = []
    lock = threading.Lock()
    original = anyio.to_thread.run_sync

    async def run_sync(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        def profiled(*inner: Any) -> Any:
            profile = cProfile.Profile()
            profile.enable()
            try:
                return func(*inner)
            finally:
                profile.disable()
                with lock:
                    profiles.append(profile)

        return await original(profiled, *args, **kwargs)

    anyio.to_thread.run_sync = run_sync  # type: ignore[assignment]
    main = cProfile.Profile()

    def dump() -> None:
        main.disable()
        stats = pstats.Stats(main)
        with lock:
            for profile in profiles:
                stats.add(profile)
        stats.dump_stats(out)

    atexit.register(dump)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sys.argv = ["connectors.databases"]
    main.enable()
    runpy.run_module("connectors.databases", run_name="__main__", alter_sys=True)


def print_profile(path: Path, top: int = 14) -> None:
    import io
    import pstats

    if not path.exists():
        print(f"  (no profile written at {path})")
        return
    buffer = io.StringIO()
    stats = pstats.Stats(str(path), stream=buffer)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for key in [k for k in raw if k[0] == "~" and any(w in k[2] for w in IDLE_WAITS)]:
        del raw[key]  # threads waiting for stdin, the event loop's poll: idle time, not work
    stats.sort_stats("tottime").print_stats(top)
    lines = buffer.getvalue().splitlines()
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    for line in lines[start : start + top + 1]:
        print("  " + line.replace(str(ROOT) + "/", "").replace(sys.prefix + "/", "")[:150])


# -- driver ------------------------------------------------------------------------------------------
def measure_engine(
    engine: str,
    rows: int,
    repeat: int,
    scratch: Path,
    profile_dir: Path | None,
    select: str = "*",
    inline_max_bytes: int | None = None,
) -> dict[str, Any]:
    import anyio

    sql_text = f"SELECT {select} FROM {TABLE}"
    expect_file = select == "*" and rows >= INLINE_ROWS_MAX
    start = time.perf_counter_ns()
    source = BUILDERS[engine](rows, scratch)
    source.build_s = (time.perf_counter_ns() - start) / 1e9
    print(f"[{engine}] built {rows:,} rows in {source.build_s:.1f} s", flush=True)
    samples: dict[str, list[dict[str, Any]]] = {"connector": [], "baseline": []}
    try:
        for rep in range(repeat):
            order = ("baseline", "connector") if rep % 2 == 0 else ("connector", "baseline")
            for kind in order:
                if kind == "connector":
                    result = anyio.run(run_connector, source, sql_text, rows, scratch, expect_file, inline_max_bytes)
                else:
                    result = run_baseline(source, sql_text, scratch)
                    if result["rows"] != rows:
                        raise RuntimeError(f"baseline fetched {result['rows']} rows, not {rows}")
                samples[kind].append(result)
                print(
                    f"[{engine}] {rep + 1}/{repeat} {kind:<9} {result['seconds']:7.2f} s "
                    f"{rows / result['seconds']:>10,.0f} rows/s  peak RSS {result['hwm_kb'] / 1024:6.0f} MB  "
                    f"file {result['bytes'] / 2**20:5.0f} MiB  CPU {result['user_s']:5.2f} s user "
                    f"{result['sys_s']:5.2f} s sys  {result['minflt'] / rows:5.2f} page faults/row",
                    flush=True,
                )
        if profile_dir is not None:
            profile_dir.mkdir(parents=True, exist_ok=True)
            target = (profile_dir / f"db_extract-{engine}.prof").resolve()
            result = anyio.run(run_connector, source, sql_text, rows, scratch, expect_file, inline_max_bytes, target)
            print(f"[{engine}] profiled call (cProfile, all threads): {result['seconds']:.2f} s → {target}")
            print_profile(target)
    finally:
        source.cleanup()
    return {"engine": engine, "build_s": source.build_s, **samples}


def _median(samples: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(r[key] for r in samples))


def report(
    results: list[dict[str, Any]], rows: int, repeat: int, select: str = "*", inline_max_bytes: int | None = None
) -> None:
    print()
    print(f"SELECT {select} FROM {TABLE} ({rows:,} rows × 6 columns), medians of {repeat} alternating runs each")
    limit = "the default (5 MiB)" if inline_max_bytes is None else f"{inline_max_bytes:,} bytes"
    print(f"connector: execute_sql over stdio, client wall time, result as a table_uri file; inline_max_bytes {limit}")
    print("baseline: bare driver, fetchall() + one orjson.dumps of the rows, in its own interpreter")
    header = (
        f"{'engine':<9} {'connector rows/s':>17} {'baseline rows/s':>16} {'ratio':>6} "
        f"{'connector peak RSS':>19} {'baseline peak RSS':>18}"
    )
    print(header)
    verdicts = []
    for result in results:
        engine = result["engine"]
        if "error" in result:
            print(f"{engine:<9} FAILED: {result['error']}")
            continue
        conn_s = statistics.median(r["seconds"] for r in result["connector"])
        base_s = statistics.median(r["seconds"] for r in result["baseline"])
        conn_mb = statistics.median(r["hwm_kb"] for r in result["connector"]) / 1024
        conn_max_mb = max(r["hwm_kb"] for r in result["connector"]) / 1024
        base_mb = statistics.median(r["hwm_kb"] for r in result["baseline"]) / 1024
        ratio = conn_s / base_s
        print(
            f"{engine:<9} {rows / conn_s:>17,.0f} {rows / base_s:>16,.0f} {ratio:>5.2f}× "
            f"{conn_mb:>16.0f} MB {base_mb:>15.0f} MB"
        )
        verdicts.append(
            f"{engine}: time {conn_s:.2f} s vs {base_s:.2f} s, ratio {ratio:.2f}× "
            f"({'meets' if ratio <= TARGET_RATIO else 'MISSES'} ≤ {TARGET_RATIO:g}×); connector peak RSS "
            f"{conn_mb:.0f} MB, max {conn_max_mb:.0f} MB ({'meets' if conn_max_mb < TARGET_RSS_MB else 'MISSES'} "
            f"< {TARGET_RSS_MB:g} MB; idle before the call "
            f"{statistics.median(r['idle_kb'] for r in result['connector']) / 1024:.0f} MB); "
            f"baseline fetchall {statistics.median(r['fetch_seconds'] for r in result['baseline']):.2f} s of it; "
            f"CPU user/sys connector {_median(result['connector'], 'user_s'):.2f}/"
            f"{_median(result['connector'], 'sys_s'):.2f} s, baseline {_median(result['baseline'], 'user_s'):.2f}/"
            f"{_median(result['baseline'], 'sys_s'):.2f} s; page faults per row connector "
            f"{_median(result['connector'], 'minflt') / rows:.3f}, "
            f"baseline {_median(result['baseline'], 'minflt') / rows:.3f}; "
            f"{result['connector'][0]['format']} {result['connector'][0]['bytes'] / 2**20:.0f} MiB, "
            f"baseline JSON {result['baseline'][0]['bytes'] / 2**20:.0f} MiB; "
            f"types {','.join(map(str, result['connector'][0]['types']))}; build {result['build_s']:.1f} s"
        )
    print()
    for line in verdicts:
        print(line)
    print("(the baseline holds every row and the whole JSON text in memory, so its peak RSS may be larger)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default=",".join(ENGINES), help="comma-separated, default all four")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows in the table (default 1,000,000)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each side per engine (default 3)")
    parser.add_argument(
        "--profile", type=Path, metavar="DIR", help="also run one profiled connector call per engine, stats in DIR"
    )
    parser.add_argument("--select", default="*", help="the select list (default *); e.g. 'id' for a one-column result")
    parser.add_argument(
        "--inline-max-bytes",
        type=int,
        metavar="N",
        help="_meta.acp.inline_max_bytes of the timed call (default: unset, the protocol's 5 MiB)",
    )
    parser.add_argument("--baseline-child", help=argparse.SUPPRESS)
    parser.add_argument("--serve-profiled", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.baseline_child:
        print(json.dumps(baseline_child(json.loads(args.baseline_child))))
        return 0
    if args.serve_profiled:
        serve_profiled(args.serve_profiled)
        return 0
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = sorted(set(engines) - set(ENGINES))
    if unknown:
        parser.error(f"unknown engines {unknown}; choose from {', '.join(ENGINES)}")
    if not 1 <= args.rows <= 2_000_000:
        parser.error("--rows must be between 1 and 2,000,000 (the connector's default max_rows)")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    results = []
    for engine in engines:
        with tempfile.TemporaryDirectory(prefix=f"acp-bench-extract-{engine}-") as scratch:
            os.chmod(scratch, 0o700)
            try:
                results.append(
                    measure_engine(
                        engine, args.rows, args.repeat, Path(scratch), args.profile, args.select, args.inline_max_bytes
                    )
                )
            except Exception as exc:  # one engine's failure (a server down…) does not stop the others
                print(f"[{engine}] FAILED: {exc}", flush=True)
                results.append({"engine": engine, "error": str(exc).splitlines()[0][:300]})
    report(results, args.rows, args.repeat, args.select, args.inline_max_bytes)
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
