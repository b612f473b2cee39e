"""What a ``progressToken`` costs: the same calls with and without one, on one warm server.

A client that sends a ``progressToken`` gets rows-fetched notifications from the table writer
and heartbeats while blocking work runs (``shared.context``); a client that sends none must pay
nothing. On one ``python -m connectors.databases`` server driven over stdio by the ACP test host,
the script alternates:

* **large**: ``SELECT *`` of an N-row × 6-column SQLite table (the table of ``db_extract.py``)
  to a ``table_uri`` file, ``--repeat`` times with a token and as many without;
* **small**: a 1-row ``SELECT``, ``--calls`` times with a token and as many without;
* **run_blocking**: in this process, the core's own part of that difference: ``CallContext.run_blocking``
  of a no-op, with and without a progress reporter (the heartbeat's task group and task).

It prints the medians, the ratio with/without for the large call, the difference in ms for the
small one and for ``run_blocking``, and how many notifications the large call received.

    .venv/bin/python bench/progress_cost.py [--rows 1000000] [--repeat 3] [--calls 200]

Targets: large ratio ≤ 1.02× (progress is a clock read per 2,000-row batch and at most four
notifications a second); small difference ≤ 0.3 ms (one task group and one task per blocking
call). Run by hand only: not in CI.
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

from bench.db_extract import TABLE, build_sqlite  # noqa: E402 - after the path setup

TARGET_LARGE_RATIO = 1.02
TARGET_SMALL_MS = 0.3


async def measure(rows: int, repeat: int, calls: int, scratch: Path) -> dict[str, Any]:
    from shared.host import AcpHost, uri_path

    source = build_sqlite(rows, scratch)
    env = {"ACP_TMP_DIR": str(scratch / "tmp"), "ACP_CACHE_DIR": str(scratch / "cache")}
    meta = {"credentials": source.credentials, "row_limit": 25, "autocontext_delivered": True}
    large = {"resource_id": source.resource_id, "sql": f"SELECT * FROM {TABLE}"}
    small = {"resource_id": source.resource_id, "sql": f"SELECT * FROM {TABLE} LIMIT 1"}
    timings: dict[str, list[float]] = {"large_token": [], "large_none": [], "small_token": [], "small_none": []}
    notifications: list[int] = []
    async with AcpHost([sys.executable, "-m", "connectors.databases"], env=env, cwd=ROOT, read_timeout_s=600) as host:

        async def timed(arguments: dict[str, Any], with_token: bool) -> tuple[float, list[Any], Any]:
            progress: list[Any] | None = [] if with_token else None
            start = time.perf_counter_ns()
            response = await host.call("execute_sql", arguments, meta, progress=progress)
            elapsed = (time.perf_counter_ns() - start) / 1e9
            if response.is_error:
                raise RuntimeError(f"call failed: {response.text[:500]}\n{host.stderr()[-2000:]}")
            return elapsed, progress or [], response

        for _ in range(20):  # warm: imports, the pooled connection, the converter cache
            await timed(small, True)
            await timed(small, False)
        for _ in range(calls):
            for with_token in (True, False):
                elapsed, _, _ = await timed(small, with_token)
                timings["small_token" if with_token else "small_none"].append(elapsed)
        for round_ in range(repeat):
            for with_token in (True, False) if round_ % 2 else (False, True):
                elapsed, progress, response = await timed(large, with_token)
                uri_path(str(response.system_data["table_uri"])).unlink()
                timings["large_token" if with_token else "large_none"].append(elapsed)
                if with_token:
                    notifications.append(len(progress))
    return {"timings": timings, "notifications": notifications}


async def measure_run_blocking(calls: int = 3000) -> dict[str, float]:
    import datetime as dt

    from shared.context import CallContext

    async def reporter(done: float, total: float | None, message: str | None) -> None:
        return None

    samples: dict[str, list[float]] = {"token": [], "none": []}
    for _ in range(3):
        for label, report_progress in (("none", None), ("token", reporter)):
            for _ in range(calls):
                ctx = CallContext(
                    tool="bench",
                    settings=None,  # run_blocking reads neither settings nor files
                    principal=None,
                    resource=None,
                    call_id="bench",
                    files=None,
                    host_tables=False,
                    read_host_table=None,
                    today=dt.date.today(),
                    report_progress=report_progress,
                )
                start = time.perf_counter_ns()
                await ctx.run_blocking(lambda: None)
                samples[label].append((time.perf_counter_ns() - start) / 1e9)
    return {label: statistics.median(values) for label, values in samples.items()}


def report(rows: int, measured: dict[str, Any]) -> None:
    medians = {key: statistics.median(values) for key, values in measured["timings"].items()}
    ratio = medians["large_token"] / medians["large_none"]
    small_ms = (medians["small_token"] - medians["small_none"]) * 1000
    print("| call | with progressToken | without | cost |\n|---|---|---|---|")
    print(
        f"| {rows:,}-row SELECT * to a file | {medians['large_token']:.3f} s | {medians['large_none']:.3f} s "
        f"| {ratio:.3f}× (target ≤ {TARGET_LARGE_RATIO}×: {'met' if ratio <= TARGET_LARGE_RATIO else 'NOT met'}) |"
    )
    print(
        f"| 1-row SELECT | {medians['small_token'] * 1000:.2f} ms | {medians['small_none'] * 1000:.2f} ms "
        f"| {small_ms:+.2f} ms (target ≤ {TARGET_SMALL_MS} ms: {'met' if small_ms <= TARGET_SMALL_MS else 'NOT met'}) |"
    )
    core = measured["run_blocking"]
    print(
        f"| run_blocking of a no-op (in process) | {core['token'] * 1e6:.0f} µs | {core['none'] * 1e6:.0f} µs "
        f"| {(core['token'] - core['none']) * 1e6:+.0f} µs |"
    )
    print(f"\nnotifications per large call: {measured['notifications']}")
    print({key: [round(v, 3) for v in values] for key, values in measured["timings"].items() if "large" in key})


def main(argv: list[str] | None = None) -> int:
    import anyio

    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="acp-bench-progress-") as folder:
        measured = anyio.run(measure, args.rows, args.repeat, args.calls, Path(folder))
    measured["run_blocking"] = anyio.run(measure_run_blocking)
    report(args.rows, measured)
    return 0


if __name__ == "__main__":
    sys.exit(main())
