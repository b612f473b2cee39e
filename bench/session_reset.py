"""What resetting pooled sessions costs per call: PostgreSQL's ``DISCARD ALL``, MariaDB's new connection.

A pooled connection goes back to the pool only after its session was cleared (PostgreSQL: ``DISCARD
ALL`` in autocommit), or is closed when the driver cannot clear it (PyMySQL: every MySQL/MariaDB call
opens its own connection). This times, in process, ``execute_sql`` of ``SELECT 1 AS one`` on a warm
server, alternating blocks of calls:

* **reset**: the connector as it is;
* **kept**: :meth:`Connection.reset` replaced by one that keeps the session as it is (the pool before
  the reset existed), measured in the same run as the baseline.

It also times the parts alone: a bare ``DISCARD ALL`` round trip on PostgreSQL, and the connector's
``connect`` + ``close`` of a MySQL connection (TCP, handshake, login and the session setup).

    .venv/bin/python bench/session_reset.py [--engines postgres,mysql] [--calls 300] [--blocks 6]

PostgreSQL (127.0.0.1:5432, ``postgres``, trust) and MariaDB/MySQL (127.0.0.1:3306, ``root``, no
password) must be running; each gets a fresh uniquely named database, dropped at the end. No target:
the figures are reported (the README records them).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve()
ROOT = SCRIPT.parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.db_extract import BUILDERS  # noqa: E402 - after the path setup

ENGINES = ("postgres", "mysql")


async def call_times(credentials: dict[str, Any], resource: str, calls: int, scratch: Path) -> list[float]:
    """Seconds of each of ``calls`` calls on one warm in-process server (after 20 untimed ones)."""
    from connectors.databases import CONNECTOR
    from shared.host import AcpHost

    env = {"ACP_TMP_DIR": str(scratch / "tmp"), "ACP_CACHE_DIR": str(scratch / "cache")}
    meta = {"credentials": credentials, "autocontext_delivered": True}
    arguments = {"resource_id": resource, "sql": "SELECT 1 AS one"}
    times = []
    async with AcpHost.in_process(CONNECTOR, env=env) as host:
        for index in range(calls + 20):
            start = time.perf_counter_ns()
            answer = await host.call("execute_sql", arguments, meta)
            if index >= 20:
                times.append((time.perf_counter_ns() - start) / 1e9)
            if answer.is_error:
                raise RuntimeError(answer.text[:300])
    return times


def part_times(engine: str, credentials: dict[str, Any], runs: int = 200) -> list[float]:
    """The reset alone: ``DISCARD ALL`` on an open PostgreSQL session; a MySQL connect + close."""
    from connectors.databases.engine import engine_for

    db = engine_for(credentials)
    times = []
    if engine == "postgres":
        conn: Any = db.connect(credentials, None)
        for _ in range(runs):
            start = time.perf_counter_ns()
            conn.reset()
            times.append((time.perf_counter_ns() - start) / 1e9)
        conn.close()
    else:
        for _ in range(runs):
            start = time.perf_counter_ns()
            db.connect(credentials, None).close()
            times.append((time.perf_counter_ns() - start) / 1e9)
    return times


def measure(engine: str, calls: int, blocks: int, scratch: Path) -> dict[str, Any]:
    import anyio

    source = BUILDERS[engine](10, scratch)
    samples: dict[str, list[float]] = {"reset": [], "kept": []}
    try:
        for block in range(blocks):
            for mode in ("reset", "kept") if block % 2 == 0 else ("kept", "reset"):
                saved = _keep_sessions() if mode == "kept" else {}
                try:
                    samples[mode] += anyio.run(call_times, source.credentials, source.resource_id, calls, scratch)
                finally:
                    _restore(saved)
        parts = part_times(engine, source.credentials)
    finally:
        source.cleanup()
    return {"engine": engine, **samples, "parts": parts}


def _keep_sessions() -> dict[type, Any]:
    """Replace every engine connection's ``reset`` by one that keeps the session: the old pool."""
    from connectors.databases.engine_mysql import MysqlConnection
    from connectors.databases.engine_postgres import PostgresConnection

    saved: dict[type, Any] = {}
    for cls in (PostgresConnection, MysqlConnection):
        saved[cls] = cls.__dict__["reset"]
        cls.reset = lambda self: True  # type: ignore[method-assign]
    return saved


def _restore(saved: dict[type, Any]) -> None:
    for cls, method in saved.items():
        cls.reset = method  # type: ignore[method-assign]


def report(results: list[dict[str, Any]], calls: int, blocks: int) -> None:
    print()
    print(f"execute_sql 'SELECT 1 AS one', in process, {blocks} alternating blocks of {calls} calls; medians")
    print(f"{'engine':<9} {'reset (ms/call)':>16} {'kept (ms/call)':>15} {'difference':>11} {'the part alone':>24}")
    for result in results:
        if "error" in result:
            print(f"{result['engine']:<9} FAILED: {result['error']}")
            continue
        reset = statistics.median(result["reset"]) * 1000
        kept = statistics.median(result["kept"]) * 1000
        part = statistics.median(result["parts"]) * 1000
        what = "DISCARD ALL" if result["engine"] == "postgres" else "connect + close"
        print(f"{result['engine']:<9} {reset:>16.2f} {kept:>15.2f} {reset - kept:>+10.2f} {what:>15} {part:.2f} ms")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--calls", type=int, default=300, help="timed calls per block (default 300)")
    parser.add_argument("--blocks", type=int, default=6, help="alternating blocks, half of each mode (default 6)")
    args = parser.parse_args(argv)
    results = []
    for engine in [e.strip() for e in args.engines.split(",") if e.strip()]:
        if engine not in ENGINES:
            parser.error(f"unknown engine {engine}; choose from {', '.join(ENGINES)}")
        with tempfile.TemporaryDirectory(prefix=f"acp-bench-reset-{engine}-") as scratch:
            try:
                results.append(measure(engine, args.calls, args.blocks, Path(scratch)))
            except Exception as exc:  # a server not running does not hide the other engine
                print(f"[{engine}] failed: {exc}", flush=True)
                results.append({"engine": engine, "error": str(exc)[:300]})
    report(results, args.calls, args.blocks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
