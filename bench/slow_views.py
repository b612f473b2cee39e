"""Time budgets on a slow PostgreSQL catalog: the ``tables`` block and ``describe_table``.

Builds two databases on the PostgreSQL server at 127.0.0.1:5432 (user postgres, trust auth):

* ``slow``: a 50-row table ``plain`` and 30 views that each take a second to count
  (``pg_sleep(1)``);
* ``plain``: the same table alone, the baseline.

Against each, one connector process (``python -m connectors.databases``, over stdio) answers
``autocontext`` with the ``tables`` block of the schema, then ``describe_table`` of ``plain``.
The blocks share one counting budget (``COUNT_BUDGET_S`` in ``connectors/databases/blocks.py``),
and describe_table counts its own table only; when each view had a budget of its own, the block
took 15 s. The calls on the two databases are interleaved, run by run. (The tests check what the
calls answer; this script measures how long they take.)

    .venv/bin/python bench/slow_views.py [--runs 5] [--views 30]

Targets: median(tables block, slow) − median(baseline) ≤ 2 × COUNT_BUDGET_S;
median(describe_table, slow) − median(baseline) ≤ 1 s.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DESCRIBE_TARGET_S = 1.0


@contextlib.contextmanager
def database(views: int) -> Iterator[str]:
    """A throwaway database holding ``plain`` and ``views`` slow views; dropped after."""
    import psycopg

    from bench.scratch_databases import PG, create_postgres

    name, drop = create_postgres("acp_bench_views_")
    try:
        with psycopg.connect(**PG, dbname=name, autocommit=True) as conn:
            conn.execute("CREATE TABLE plain (id integer PRIMARY KEY, label text)")
            conn.execute("INSERT INTO plain SELECT g, 'label ' || g FROM generate_series(1, 50) g")
            for i in range(views):
                conn.execute(f"CREATE VIEW slow_{i:02d} AS SELECT g FROM generate_series(1, 3) g, pg_sleep(1)")
        yield name
    finally:
        drop()


async def measure(runs: int, views: int, scratch: Path) -> dict[str, dict[str, list[float]]]:
    from shared.host import AcpHost

    samples: dict[str, dict[str, list[float]]] = {"slow": {}, "baseline": {}}
    env = {"ACP_TMP_DIR": str(scratch / "tmp")}  # no ACP_CACHE_DIR: every run counts again
    with database(views) as slow, database(0) as plain:
        for run in range(runs):
            order = [("slow", slow), ("baseline", plain)]
            for label, name in order if run % 2 == 0 else order[::-1]:
                credentials = {"type": "postgres", "host": "127.0.0.1", "port": 5432, "user": "postgres",
                               "database": name}  # fmt: skip
                meta: dict[str, Any] = {"credentials": credentials, "autocontext_delivered": True}
                async with AcpHost.for_module("databases", env=env, cwd=ROOT) as host:
                    began = time.perf_counter_ns()
                    context = await host.call(
                        "autocontext", {"resource_id": f"{name}.public", "request_data": ["tables"]}, meta
                    )
                    middle = time.perf_counter_ns()
                    described = await host.call("describe_table", {"resource_id": f"{name}.public.plain"}, meta)
                    end = time.perf_counter_ns()
                if context.is_error or described.is_error:
                    raise SystemExit(f"a call failed: {context.error or described.error}")
                samples[label].setdefault("tables block", []).append((middle - began) / 1e9)
                samples[label].setdefault("describe_table", []).append((end - middle) / 1e9)
    return samples


def report(samples: dict[str, dict[str, list[float]]]) -> dict[str, float]:
    from connectors.databases.blocks import COUNT_BUDGET_S

    targets = {"tables block": 2 * COUNT_BUDGET_S, "describe_table": DESCRIBE_TARGET_S}
    print(f"{'call':<16} {'slow catalog (s)':>18} {'baseline (s)':>14} {'added (s)':>10} {'target':>8}  met")
    added: dict[str, float] = {}
    for call, target in targets.items():
        slow = statistics.median(samples["slow"][call])
        base = statistics.median(samples["baseline"][call])
        added[call] = slow - base
        met = "yes" if added[call] <= target else "NO"
        print(f"{call:<16} {slow:>18.2f} {base:>14.2f} {added[call]:>10.2f} {target:>7.1f}s  {met}")
    return added


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per database (default 5)")
    parser.add_argument("--views", type=int, default=30, help="slow views in the slow catalog (default 30)")
    args = parser.parse_args(argv)
    import anyio

    with tempfile.TemporaryDirectory(prefix="acp-bench-views-") as scratch:
        samples = anyio.run(measure, args.runs, args.views, Path(scratch))
    return report(samples)


if __name__ == "__main__":
    main()
