"""Per-call overhead of the ACP wrapping on a 1-row extraction.

Starts three servers over stdio and keeps them running:

* the databases connector (``python -m connectors.databases``), driven by the ACP test
  host (``shared.host.AcpHost``), credentials in ``_meta.acp`` on every call;
* the same connector without its own SQL check (the sqlglot read-only layer of
  ``Engine.check_sql``; the hidden mode ``--serve-unchecked`` turns it into a no-op in that
  process only), so that the core's own cost is measured directly, in the same conditions;
* ``bench/baseline_server.py sqlite <demo db>``, a bare MCP server, driven by the same
  host class with ``capability=None`` (a plain MCP client), so the client-side costs match.

All answer the same query on the demo database. After a warm-up, M sequential
``tools/call`` round trips are timed on each, interleaved call by call (the order rotates)
to spread machine noise evenly. Each server's CPU time per call (psutil, every thread) is
reported too: other load on the machine stretches wall time much more than CPU time.

    .venv/bin/python bench/call_overhead.py [--calls 300] [--warmup 30] [--no-cache-dir]

Targets: median(connector) − median(baseline) ≤ 2 ms per call, and the core's own cost,
median(connector without its SQL check) − median(baseline), ≤ 1 ms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve()
ROOT = SCRIPT.parent.parent
BENCH = SCRIPT.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SQL = "SELECT order_date, revenue FROM orders WHERE order_id = 1"
TARGET_ADDED_MS = 2.0
TARGET_CORE_MS = 1.0  # the added time outside the connector's own SQL checks
KINDS = ("connector", "unchecked", "baseline")
LABELS = {
    "connector": "databases connector (execute_sql, ACP)",
    "unchecked": "  the same, without its SQL check",
    "baseline": "baseline_server.py sqlite (query, MCP)",
}


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, round(q / 100 * len(ordered) + 0.5 - 1e-9))
    return ordered[min(rank, len(ordered)) - 1]


def server_processes() -> dict[str, Any]:
    """The three servers: this benchmark's child processes, told apart by their command lines."""
    import psutil

    found: dict[str, Any] = {}
    for child in psutil.Process().children():
        cmdline = " ".join(child.cmdline())
        if "--serve-unchecked" in cmdline:
            found["unchecked"] = child
        elif "connectors.databases" in cmdline:
            found["connector"] = child
        elif "baseline_server.py" in cmdline:
            found["baseline"] = child
    if set(found) != set(KINDS):
        raise RuntimeError(f"expected {', '.join(KINDS)} as child processes, found {found}")
    return found


def cpu_seconds(process: Any) -> float:
    """User + system CPU time of a process, every thread included."""
    times = process.cpu_times()
    return float(times.user + times.system)


class _Unchecked:
    """What ``check_sql`` returns when it checks nothing: the raw text, run as it is."""

    def __init__(self, sql: str) -> None:
        self.text, self.dates = sql, []

    def sql(self) -> str:
        return self.text


def serve_unchecked() -> None:
    """The connector with ``Engine.check_sql`` as a no-op (benchmark only: the query is a fixed
    SELECT, and the engine's own read-only layers still apply)."""
    import runpy

    from connectors.databases import engine

    engine.Engine.check_sql = lambda self, sql, allowed_functions=(): _Unchecked(sql)  # type: ignore[method-assign,assignment,return-value]
    sys.argv = ["connectors.databases"]
    runpy.run_module("connectors.databases", run_name="__main__", alter_sys=True)


async def measure(
    calls: int, warmup: int, scratch: Path, cache_dir: bool = True
) -> tuple[dict[str, list[float]], dict[str, Any]]:
    from connectors.databases.demo import build_demo_database
    from shared.host import AcpHost

    database = build_demo_database(scratch / "shop.sqlite").resolve()
    env = {"ACP_TMP_DIR": str(scratch / "tmp")}
    if cache_dir:
        env["ACP_CACHE_DIR"] = str(scratch / "cache")
    meta = {"credentials": {"type": "sqlite", "path": str(database)}}
    connector_args = {"resource_id": database.stem, "sql": SQL}
    unchecked_env = {**env, "ACP_CACHE_DIR": str(scratch / "cache-unchecked")} if cache_dir else env

    async with (
        AcpHost.for_module("databases", env=env, cwd=ROOT) as connector,
        AcpHost([sys.executable, str(SCRIPT), "--serve-unchecked"], env=unchecked_env, cwd=ROOT) as unchecked,
        AcpHost([sys.executable, str(BENCH / "baseline_server.py"), "sqlite", str(database)], capability=None) as base,
    ):

        async def call_acp(host: AcpHost) -> int:
            start = time.perf_counter_ns()
            response = await host.call("execute_sql", connector_args, meta)
            elapsed = time.perf_counter_ns() - start
            if response.is_error or response.model_response.get("returned_rows") != 1:
                raise RuntimeError(f"unexpected connector answer: {response.text[:300]}")
            return elapsed

        async def call_baseline() -> int:
            start = time.perf_counter_ns()
            response = await base.call("query", {"sql": SQL})
            elapsed = time.perf_counter_ns() - start
            if response.is_error or len(json.loads(response.text)["rows"]) != 1:
                raise RuntimeError(f"unexpected baseline answer: {response.text[:300]}")
            return elapsed

        async def call(kind: str) -> float:
            if kind == "baseline":
                return await call_baseline() / 1e6
            return await call_acp(connector if kind == "connector" else unchecked) / 1e6

        for host in (connector, unchecked, base):
            await host.list_tools()
        extra: dict[str, Any] = {
            "cache_dir": cache_dir,
            "connector_first_ms": await call("connector"),  # cold: lazy imports, first open
            "baseline_first_ms": await call("baseline"),
        }
        await call("unchecked")
        for _ in range(warmup):
            for kind in KINDS:
                await call(kind)
        servers = server_processes()
        cpu_before = {kind: cpu_seconds(process) for kind, process in servers.items()}
        samples: dict[str, list[float]] = {kind: [] for kind in KINDS}
        for i in range(calls):
            for kind in KINDS[i % 3 :] + KINDS[: i % 3]:  # each server first, second and last in turn
                samples[kind].append(await call(kind))
        for kind, process in servers.items():
            extra[f"{kind}_cpu_ms"] = (cpu_seconds(process) - cpu_before[kind]) * 1e3 / calls
        last_connector = await connector.call("execute_sql", connector_args, meta)
        last_baseline = await base.call("query", {"sql": SQL})
    extra["connector_result_chars"] = len(json.dumps(last_connector.raw, separators=(",", ":")))
    extra["baseline_result_chars"] = len(json.dumps(last_baseline.raw, separators=(",", ":")))
    return samples, extra


def report(samples: dict[str, list[float]], extra: dict[str, Any]) -> dict[str, float]:
    calls = len(samples["connector"])
    print(f"Per call: tools/call round trip, {calls} interleaved sequential calls each (ms)")
    print(f"connector ACP_CACHE_DIR: {'set (as a host sets it)' if extra['cache_dir'] else 'unset'}")
    print(f"query: {SQL}")
    print(f"{'server':<42} {'min':>7} {'median':>7} {'p90':>7} {'max':>7} {'CPU':>7}")
    figures: dict[str, float] = {}
    for kind in KINDS:
        values = samples[kind]
        med, p90 = statistics.median(values), percentile(values, 90)
        figures[f"{kind}_median"], figures[f"{kind}_p90"] = med, p90
        print(
            f"{LABELS[kind]:<42} {min(values):>7.2f} {med:>7.2f} {p90:>7.2f} {max(values):>7.2f} "
            f"{extra[f'{kind}_cpu_ms']:>7.2f}"
        )
    print("(CPU: the server's user + system CPU time per call, over the timed calls)")
    added = figures["connector_median"] - figures["baseline_median"]
    core = figures["unchecked_median"] - figures["baseline_median"]
    figures["added_ms"], figures["core_ms"] = added, core
    cpu = {kind: extra[f"{kind}_cpu_ms"] for kind in KINDS}
    print(
        f"added per call at the median = median(connector) − median(baseline) = {added:.2f} ms "
        f"(target ≤ {TARGET_ADDED_MS:g} ms: {'meets' if added <= TARGET_ADDED_MS else 'MISSES'}); "
        f"server CPU {cpu['connector'] - cpu['baseline']:.2f} ms"
    )
    print(f"added at p90 = {figures['connector_p90'] - figures['baseline_p90']:.2f} ms")
    print(
        f"the connector's SQL check = median(connector) − median(without it) = "
        f"{figures['connector_median'] - figures['unchecked_median']:.2f} ms; server CPU "
        f"{cpu['connector'] - cpu['unchecked']:.2f} ms"
    )
    print(
        f"the core's own cost = median(without the SQL check) − median(baseline) = {core:.2f} ms "
        f"(target ≤ {TARGET_CORE_MS:g} ms: {'meets' if core <= TARGET_CORE_MS else 'MISSES'}); server CPU "
        f"{cpu['unchecked'] - cpu['baseline']:.2f} ms"
    )
    print(
        f"first call after start-up (not in the figures above): connector {extra['connector_first_ms']:.1f} ms, "
        f"baseline {extra['baseline_first_ms']:.1f} ms"
    )
    print(
        f"result size (compact JSON of the whole tools/call result): connector {extra['connector_result_chars']} "
        f"chars, baseline {extra['baseline_result_chars']} chars"
    )
    figures.update(extra)
    return figures


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="timed calls per server (default 300)")
    parser.add_argument("--warmup", type=int, default=30, help="untimed calls per server first (default 30)")
    parser.add_argument(
        "--no-cache-dir",
        action="store_true",
        help="start the connector without ACP_CACHE_DIR (no on-disk autocontext cache or recency file)",
    )
    parser.add_argument("--serve-unchecked", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_unchecked:
        serve_unchecked()
        return {}
    if not 1 <= args.calls <= 5000:
        parser.error("--calls must be between 1 and 5000")
    import anyio

    with tempfile.TemporaryDirectory(prefix="acp-bench-calls-") as scratch:
        samples, extra = anyio.run(measure, args.calls, args.warmup, Path(scratch), not args.no_cache_dir)
    return report(samples, extra)


if __name__ == "__main__":
    main()
