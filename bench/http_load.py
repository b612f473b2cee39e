"""Throughput, latency and memory of the databases connector over Streamable HTTP under load.

Builds the demo database in a temporary folder and starts two servers that stay up for the
whole run:

* ``python -m connectors.databases --http --port P`` on 127.0.0.1 (loopback only), started
  the way the integration tests start it (``tests/http_support.py``);
* ``python -m connectors.databases`` over stdio, for comparison.

The workload is a 25-row extraction (``execute_sql`` with ``SELECT * FROM orders ORDER BY
order_id LIMIT 25``, credentials in ``_meta.acp``). For each concurrency level c:

* HTTP: c concurrent sessions (one ``AcpHost(url=...)`` each, all in this one process), each
  calling back to back;
* stdio: one server, one connection, c tasks sharing it (c calls in flight at once).

Each level runs a short warm-up, then a fixed measured window. Every call is timed; requests/s
is the calls started in the window divided by the wall time until the last of them ended. Any
``isError``, exception, timeout or wrong row count is an error. The HTTP server's RSS is
sampled every second (psutil).

    .venv/bin/python bench/http_load.py [--levels 1,8,32] [--seconds 10] [--warmup 2]
    .venv/bin/python bench/http_load.py --soak 120 [--soak-sessions 8]

``--soak`` runs only the soak: 8 HTTP sessions for the given time, and reports the server's
RSS at 10 s, every minute and at the end, and the slope of a least-squares line through the
samples from 10 s on.

Client and server share the machine: at high concurrency the client's own event loop is part
of what is measured.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))

SQL = "SELECT * FROM orders ORDER BY order_id LIMIT 25"
ROWS = 25
CALL_TIMEOUT_S = 30.0  # one call; a timeout counts as an error
OPEN_TIMEOUT_S = 30.0  # per level: 2× for opening the sessions, 1× for closing them
MB = 1024 * 1024


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, round(q / 100 * len(ordered) + 0.5 - 1e-9))
    return ordered[min(rank, len(ordered)) - 1]


class RssSampler:
    """Samples one process's RSS every ``interval`` seconds in a thread (off the event loop)."""

    def __init__(self, pid: int, interval: float = 1.0) -> None:
        import psutil

        self.process = psutil.Process(pid)
        self.interval = interval
        self.samples: list[tuple[float, int]] = []  # (perf_counter seconds, bytes)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def now(self) -> int:
        rss = int(self.process.memory_info().rss)
        self.samples.append((time.perf_counter(), rss))
        return rss

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.now()
            except Exception:  # the process ended
                return

    def __enter__(self) -> RssSampler:
        self.now()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def between(self, start: float, end: float) -> list[tuple[float, int]]:
        return [(t, rss) for t, rss in self.samples if start <= t <= end]


@dataclass
class LevelResult:
    transport: str
    sessions: int
    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0
    error_examples: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    server_cpu: float | None = None  # CPU seconds / wall seconds over the measured window (1.0 = one core)
    client_cpu: float | None = None
    rss_start: int | None = None
    rss_end: int | None = None
    rss_peak: int | None = None
    timed_out: bool = False

    @property
    def calls(self) -> int:
        return len(self.latencies_ms)

    @property
    def rps(self) -> float:
        return self.calls / self.wall_s if self.wall_s else 0.0

    def error(self, message: str) -> None:
        self.errors += 1
        if len(self.error_examples) < 5:
            self.error_examples.append(message[:300])


class Workload:
    def __init__(self, database: Path) -> None:
        self.arguments = {"resource_id": "shop", "sql": SQL}
        self.meta = {"credentials": {"type": "sqlite", "path": str(database)}, "autocontext_delivered": True}

    async def call_once(self, host: Any, result: LevelResult | None) -> float | None:
        """One timed call; returns its latency in ms, or None (and counts an error) if it failed."""
        import anyio

        start = time.perf_counter_ns()
        try:
            with anyio.fail_after(CALL_TIMEOUT_S):
                response = await host.call("execute_sql", self.arguments, self.meta)
            elapsed = (time.perf_counter_ns() - start) / 1e6
            if response.is_error:
                raise RuntimeError(f"isError: {response.text[:200]}")
            returned = response.model_response.get("returned_rows")
            if returned != ROWS:
                raise RuntimeError(f"returned_rows={returned!r}, expected {ROWS}")
        except Exception as exc:
            if result is not None:
                result.error(f"{type(exc).__name__}: {exc}")
            return None
        return elapsed


async def drive(
    workers: int,
    call: Callable[[LevelResult | None], Awaitable[float | None]],
    result: LevelResult,
    warmup_s: float,
    seconds: float,
    server_pid: int | None,
) -> None:
    """``workers`` tasks calling back to back: warm-up, then the measured window."""
    import anyio

    t0 = time.perf_counter() + warmup_s
    t_end = t0 + seconds
    last_end = t0

    async def worker() -> None:
        nonlocal last_end
        while (now := time.perf_counter()) < t_end:
            measured = now >= t0
            latency = await call(result if measured else None)
            if measured:
                if latency is not None:
                    result.latencies_ms.append(latency)
                last_end = max(last_end, time.perf_counter())
            elif latency is None:
                await anyio.sleep(0.01)  # a failing warm-up must not spin

    async with anyio.create_task_group() as tg:
        for _ in range(workers):
            tg.start_soon(worker)
        tg.start_soon(watch_cpu, result, server_pid, t0, t_end)
    result.wall_s = max(last_end - t0, 1e-9)


async def watch_cpu(result: LevelResult, server_pid: int | None, t0: float, t_end: float) -> None:
    """CPU use of the server and of this client process over the measured window."""
    import anyio

    await anyio.sleep(max(0.0, t0 - time.perf_counter()))
    start, server_start, client_start = time.perf_counter(), _cpu_seconds(server_pid), time.process_time()
    await anyio.sleep(max(0.0, t_end - time.perf_counter()))
    span = time.perf_counter() - start
    server_end, client_end = _cpu_seconds(server_pid), time.process_time()
    if server_start is not None and server_end is not None:
        result.server_cpu = (server_end - server_start) / span
    result.client_cpu = (client_end - client_start) / span


async def run_http_level(
    url: str, workload: Workload, sessions: int, warmup_s: float, seconds: float, sampler: RssSampler
) -> LevelResult:
    """``sessions`` HTTP sessions, one AcpHost each, each calling back to back."""
    import anyio

    from shared.host import AcpHost

    result = LevelResult("HTTP", sessions)
    result.rss_start = sampler.now()
    opened = 0
    all_open = anyio.Event()
    go = anyio.Event()
    t0 = t_end = 0.0
    last_end = 0.0

    def mark_open() -> None:
        nonlocal opened
        opened += 1
        if opened == sessions:
            all_open.set()

    async def session() -> None:
        nonlocal last_end
        counted = False
        try:
            async with AcpHost(url=url, read_timeout_s=CALL_TIMEOUT_S) as host:
                mark_open()
                counted = True
                await go.wait()
                while (now := time.perf_counter()) < t_end:
                    measured = now >= t0
                    latency = await workload.call_once(host, result if measured else None)
                    if measured:
                        if latency is not None:
                            result.latencies_ms.append(latency)
                        last_end = max(last_end, time.perf_counter())
                    elif latency is None:
                        await anyio.sleep(0.01)
        except Exception as exc:
            result.error(f"{'session' if counted else 'opening a session'}: {type(exc).__name__}: {exc}")
        finally:
            if not counted:
                mark_open()

    budget = OPEN_TIMEOUT_S * 3 + CALL_TIMEOUT_S + warmup_s + seconds  # open, run, close
    with anyio.move_on_after(budget) as scope:
        async with anyio.create_task_group() as tg:
            for _ in range(sessions):
                tg.start_soon(session)
            with anyio.move_on_after(OPEN_TIMEOUT_S * 2):
                await all_open.wait()  # a session that is slower to open starts late
            t0 = time.perf_counter() + warmup_s
            t_end = t0 + seconds
            last_end = t0
            go.set()
            tg.start_soon(watch_cpu, result, sampler.process.pid, t0, t_end)
    result.timed_out = scope.cancelled_caught
    result.wall_s = max(last_end - t0, 1e-9)
    result.rss_end = sampler.now()
    window = sampler.between(t0, t_end)
    result.rss_peak = max((rss for _, rss in window), default=result.rss_end)
    return result


async def run_stdio_level(
    host: Any, workload: Workload, concurrency: int, warmup_s: float, seconds: float, pid: int | None
) -> LevelResult:
    """One stdio connection, ``concurrency`` tasks sharing it."""
    import anyio

    result = LevelResult("stdio", concurrency)

    async def call(into: LevelResult | None) -> float | None:
        return await workload.call_once(host, into)

    with anyio.move_on_after(CALL_TIMEOUT_S + warmup_s + seconds + 10) as scope:
        await drive(concurrency, call, result, warmup_s, seconds, pid)
    result.timed_out = scope.cancelled_caught
    return result


def _cpu_seconds(pid: int | None) -> float | None:
    if pid is None:
        return None
    import psutil

    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return None
    return float(times.user + times.system)


def _stdio_server_pid(http_pid: int) -> int | None:
    """The stdio connector: this process's child running ``connectors.databases`` without --http."""
    import psutil

    for child in psutil.Process().children(recursive=True):
        try:
            cmdline = child.cmdline()
        except psutil.Error:
            continue
        if child.pid != http_pid and "connectors.databases" in cmdline and "--http" not in cmdline:
            return child.pid
    return None


def _env(scratch: Path) -> dict[str, str]:
    return {"ACP_CACHE_DIR": str(scratch / "cache"), "ACP_TMP_DIR": str(scratch / "tmp")}


async def measure_levels(
    url: str, http_pid: int, database: Path, scratch: Path, levels: list[int], warmup_s: float, seconds: float
) -> tuple[list[LevelResult], RssSampler]:
    import anyio

    from shared.host import AcpHost

    workload = Workload(database)
    results: list[LevelResult] = []
    with RssSampler(http_pid) as sampler:
        # First calls (lazy imports, first open) on both servers, outside every level.
        with anyio.fail_after(OPEN_TIMEOUT_S):
            async with AcpHost(url=url, read_timeout_s=CALL_TIMEOUT_S) as first:
                await workload.call_once(first, None)
        async with AcpHost.for_module("databases", env=_env(scratch), cwd=ROOT, read_timeout_s=CALL_TIMEOUT_S) as stdio:
            stdio_pid = _stdio_server_pid(http_pid)
            with anyio.fail_after(OPEN_TIMEOUT_S):
                await workload.call_once(stdio, None)
            for level in levels:
                print(f"  {level} session(s): HTTP …", end="", flush=True)
                results.append(await run_http_level(url, workload, level, warmup_s, seconds, sampler))
                print(" stdio …", end="", flush=True)
                results.append(await run_stdio_level(stdio, workload, level, warmup_s, seconds, stdio_pid))
                print(" done", flush=True)
        await anyio.sleep(1.5)  # let the server drop the closed sessions before the last sample
        sampler.now()
    return results, sampler


async def measure_soak(
    url: str, http_pid: int, database: Path, seconds: float, sessions: int
) -> tuple[LevelResult, RssSampler, float]:
    import anyio

    from shared.host import AcpHost

    workload = Workload(database)
    with RssSampler(http_pid) as sampler:
        with anyio.fail_after(OPEN_TIMEOUT_S):
            async with AcpHost(url=url, read_timeout_s=CALL_TIMEOUT_S) as first:
                await workload.call_once(first, None)
        start = time.perf_counter()
        result = await run_http_level(url, workload, sessions, 0.0, seconds, sampler)
    return result, sampler, start


def _mb(value: int | None) -> str:
    return f"{value / MB:.1f}" if value is not None else "-"


def _row(result: LevelResult) -> str:
    values = result.latencies_ms or [float("nan")]
    server_cpu = f"{100 * result.server_cpu:.0f} %" if result.server_cpu is not None else "-"
    client_cpu = f"{100 * result.client_cpu:.0f} %" if result.client_cpu is not None else "-"
    flag = " TIMED OUT" if result.timed_out else ""
    return (
        f"{result.transport:<6} {result.sessions:>8} {result.calls:>7} {result.rps:>8.1f} "
        f"{statistics.median(values):>8.2f} {percentile(values, 99):>8.2f} {max(values):>8.2f} "
        f"{result.errors:>6} {server_cpu:>10} {client_cpu:>10}{flag}"
    )


def report_levels(results: list[LevelResult], sampler: RssSampler, warmup_s: float, seconds: float) -> dict[str, Any]:
    print(
        f"\n25-row extraction (execute_sql), calls back to back: {warmup_s:g} s warm-up, then {seconds:g} s measured "
        "per level"
    )
    print(f"query: {SQL}")
    print("HTTP: one session (AcpHost) per client; stdio: one connection shared by the same number of tasks")
    print("CPU: process CPU time / wall time over the measured window (100 % = one core; the machine has 2)")
    print(
        f"{'server':<6} {'sessions':>8} {'calls':>7} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
        f"{'errors':>6} {'server CPU':>10} {'client CPU':>10}"
    )
    for result in results:
        print(_row(result))
    figures: dict[str, Any] = {}
    print(f"\n{'sessions':>8} {'HTTP/stdio req/s':>17} {'HTTP/stdio p50':>15}")
    by_level: dict[int, dict[str, LevelResult]] = {}
    for result in results:
        by_level.setdefault(result.sessions, {})[result.transport] = result
    for level, pair in by_level.items():
        http, stdio = pair["HTTP"], pair["stdio"]
        rps_ratio = http.rps / stdio.rps if stdio.rps else float("nan")
        p50_ratio = (
            statistics.median(http.latencies_ms) / statistics.median(stdio.latencies_ms)
            if http.latencies_ms and stdio.latencies_ms
            else float("nan")
        )
        figures[f"ratio_rps_{level}"], figures[f"ratio_p50_{level}"] = rps_ratio, p50_ratio
        print(f"{level:>8} {rps_ratio:>16.2f}× {p50_ratio:>14.2f}×")
    print("\nHTTP server RSS (MB)")
    print(f"{'sessions':>8} {'at start':>9} {'peak':>7} {'after':>7}")
    for result in results:
        if result.transport == "HTTP":
            print(f"{result.sessions:>8} {_mb(result.rss_start):>9} {_mb(result.rss_peak):>7} {_mb(result.rss_end):>7}")
    print(f"at the end (all sessions closed, +1.5 s): {_mb(sampler.samples[-1][1])} MB")
    errors = sum(r.errors for r in results)
    print(f"\nerrors: {errors} in {sum(r.calls for r in results)} measured calls (expected: 0)")
    for result in results:
        for example in result.error_examples:
            print(f"  {result.transport} × {result.sessions}: {example}")
    if any(r.timed_out for r in results):
        print("A LEVEL HIT ITS TIME LIMIT: see the rows marked TIMED OUT")
    for result in results:
        key = f"{result.transport.lower()}_{result.sessions}"
        figures[f"{key}_rps"] = result.rps
        figures[f"{key}_p50"] = statistics.median(result.latencies_ms) if result.latencies_ms else None
        figures[f"{key}_p99"] = percentile(result.latencies_ms, 99) if result.latencies_ms else None
        figures[f"{key}_errors"] = result.errors
    figures["errors"] = errors
    figures["timed_out"] = any(r.timed_out for r in results)
    return figures


def report_soak(result: LevelResult, sampler: RssSampler, start: float, seconds: float) -> dict[str, Any]:
    print(f"\nSoak: {result.sessions} HTTP sessions, 25-row extraction back to back for {seconds:g} s")
    print(
        f"{'server':<6} {'sessions':>8} {'calls':>7} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
        f"{'errors':>6} {'server CPU':>10} {'client CPU':>10}"
    )
    print(_row(result))
    points = [(t - start, rss) for t, rss in sampler.samples if t >= start]

    def at(second: float) -> tuple[float, int]:
        return min(points, key=lambda p: abs(p[0] - second))

    marks = [10.0, *[float(m) for m in range(60, int(seconds) + 1, 60)]]
    if seconds not in marks:
        marks.append(seconds)
    print("\nHTTP server RSS")
    print(f"{'at':>8} {'RSS MB':>8}")
    print(f"{'start':>8} {_mb(points[0][1]):>8}")
    figures: dict[str, Any] = {"soak_rps": result.rps, "soak_errors": result.errors, "timed_out": result.timed_out}
    for mark in marks:
        t, rss = at(mark)
        figures[f"rss_{mark:g}s_mb"] = rss / MB
        print(f"{t:>7.0f}s {_mb(rss):>8}")
    for label, key, first in (
        ("from 10 s on", "slope_mb_per_min", 10.0),
        ("over the second half", "slope_2nd_half", seconds / 2),
    ):
        steady = [(t, rss / MB) for t, rss in points if first <= t <= seconds + 1]
        if len(steady) >= 2:
            slope = statistics.linear_regression([t for t, _ in steady], [m for _, m in steady]).slope * 60
            figures[key] = slope
            print(f"slope (least squares over the {len(steady)} samples {label}): {slope:+.2f} MB/min")
    print(f"peak: {max(rss for _, rss in points) / MB:.1f} MB; after closing the sessions: {_mb(result.rss_end)} MB")
    print(f"errors: {result.errors} in {result.calls} calls (expected: 0)")
    for example in result.error_examples:
        print(f"  {example}")
    return figures


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="1,8,32", help="concurrent sessions per level (default 1,8,32)")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured seconds per level (default 10)")
    parser.add_argument("--warmup", type=float, default=2.0, help="warm-up seconds per level (default 2)")
    parser.add_argument("--soak", type=float, default=None, metavar="SECONDS", help="run only the soak, this long")
    parser.add_argument("--soak-sessions", type=int, default=8, help="sessions in the soak (default 8)")
    args = parser.parse_args(argv)
    try:
        levels = [int(x) for x in args.levels.split(",") if x.strip()]
    except ValueError:
        parser.error("--levels takes integers separated by commas, for example 1,8,32")
    if not levels or not all(1 <= n <= 256 for n in levels):
        parser.error("each level must be between 1 and 256")
    if not 0.5 <= args.seconds <= 600 or not 0 <= args.warmup <= 60:
        parser.error("--seconds must be 0.5..600 and --warmup 0..60")
    if args.soak is not None and not 10 <= args.soak <= 3600:
        parser.error("--soak must be 10..3600 seconds")

    import anyio
    from http_support import http_server, module_command

    from connectors.databases.demo import build_demo_database

    with tempfile.TemporaryDirectory(prefix="acp-bench-http-") as tmp:
        scratch = Path(tmp)
        database = build_demo_database(scratch / "shop.sqlite").resolve()
        with http_server(module_command("databases"), _env(scratch), scratch) as server:
            assert server.base.startswith("http://127.0.0.1:")
            print(f"HTTP server: {server.url} (pid {server.process.pid})")
            if args.soak is not None:
                result, sampler, start = anyio.run(
                    measure_soak, server.url, server.process.pid, database, args.soak, args.soak_sessions
                )
                figures = report_soak(result, sampler, start, args.soak)
            else:
                results, sampler = anyio.run(
                    measure_levels,
                    server.url,
                    server.process.pid,
                    database,
                    scratch,
                    levels,
                    args.warmup,
                    args.seconds,
                )
                figures = report_levels(results, sampler, args.warmup, args.seconds)
            stderr = server.read_stderr().strip()
        if stderr:
            print("\nHTTP server stderr (last 20 lines):\n" + "\n".join(stderr.splitlines()[-20:]))
    return figures


if __name__ == "__main__":
    outcome = main()
    sys.exit(1 if outcome.get("errors") or outcome.get("soak_errors") or outcome.get("timed_out") else 0)
