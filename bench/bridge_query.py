"""acp_query on millions of rows: the bridge's DuckDB engine against the reference's SQLite approach.

The script writes a dataset of N rows (``--rows``, default 5,000,000) as the store writes one
(``<folder>/bench_sales.csv``, RFC 4180, header row, CRLF), with 5 columns: ``date`` (date, 730
days), ``channel`` (string, 5 values), ``country`` (string, 20 values), ``orders`` (integer) and
``revenue`` (number, 2 decimals), from ``random.Random(--seed)``. The file is kept in ``--folder``
(default: a temporary folder) and reused when it is already there with the same rows and seed.

Then it times, each in a fresh interpreter so that its peak RSS is its own, alternately
``--repeat`` times:

* **engine**: ``bridge.query.QueryEngine.run`` of the monthly totals by channel (spec 16.7 step 3's
  shape) over the dataset, rows read to the end: the SQL checks, the translation, a fresh DuckDB
  that reads the CSV and the query. Nothing is cached between runs.
* **reference**: the reference bridge's approach on the same file: an in-memory SQLite with typed
  columns, the CSV read with ``csv`` and inserted with ``executemany`` (``bridge.query.load_sqlite``,
  which is also acp_query's SQLite fallback), then the same query with ``sqlite3``.

Both answers must be equal (the months, channels and sums). Reported: median wall time of each, the
ratio reference / engine (target ≥ 10×), and each side's peak RSS (``ru_maxrss`` of the child).

    .venv/bin/python bench/bridge_query.py [--rows 5000000] [--repeat 3] [--seed 16] [--folder DIR]
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve()
ROOT = SCRIPT.parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DATASET_ID = "bench_sales"
HEADERS: list[dict[str, str]] = [
    {"name": "date", "type": "date"},
    {"name": "channel", "type": "string"},
    {"name": "country", "type": "string"},
    {"name": "orders", "type": "integer"},
    {"name": "revenue", "type": "number"},
]
CHANNELS = ("web", "shop", "app", "phone", "partner")
COUNTRIES = tuple(f"C{i:02d}" for i in range(20))
QUERY = (
    f"SELECT strftime('%Y-%m', date) AS month, channel, SUM(orders) AS orders, ROUND(SUM(revenue), 2) AS revenue "
    f"FROM {DATASET_ID} GROUP BY month, channel ORDER BY month, channel"
)
TARGET_RATIO = 10.0


# -- the dataset ------------------------------------------------------------------------------------
def write_dataset(folder: Path, rows: int, seed: int) -> Path:
    path = folder / f"{DATASET_ID}.csv"
    stamp = folder / f"{DATASET_ID}.params"
    params = f"rows={rows} seed={seed}"
    if path.exists() and stamp.exists() and stamp.read_text() == params:
        return path
    rng = random.Random(seed)
    start = dt.date(2024, 1, 1)
    days = [(start + dt.timedelta(days=d)).isoformat() for d in range(730)]
    with path.open("w", encoding="utf-8", newline="") as file:
        writer = csv.writer(file, lineterminator="\r\n")
        writer.writerow([h["name"] for h in HEADERS])
        randrange, choice, random_ = rng.randrange, rng.choice, rng.random
        for index in range(rows):
            writer.writerow((
                days[index * 730 // rows],
                choice(CHANNELS),
                choice(COUNTRIES),
                randrange(0, 50),
                round(random_() * 1000, 2),
            ))  # fmt: skip
    stamp.write_text(params)
    return path


def _dataset(path: Path, rows: int) -> Any:
    from bridge.datasets import Dataset

    return Dataset(id=DATASET_ID, csv_path=path, headers=HEADERS, row_count=rows, meta={"id": DATASET_ID})  # type: ignore[arg-type]


# -- the two sides, each in its own interpreter -------------------------------------------------------
def child_engine(path: Path, rows: int) -> dict[str, Any]:
    from bridge.query import QueryEngine

    dataset = _dataset(path, rows)
    started = time.perf_counter()
    with QueryEngine(lambda ref: dataset).run(QUERY) as result:
        answer = [list(row) for batch in result.batches() for row in batch]
        engine = result.engine
    return {"seconds": time.perf_counter() - started, "answer": answer, "engine": engine}


def child_reference(path: Path, rows: int) -> dict[str, Any]:
    import sqlite3

    from bridge.query import load_sqlite
    from bridge.sqlite_dialect import SQLITE_TYPES

    dataset = _dataset(path, rows)
    started = time.perf_counter()
    conn = sqlite3.connect(":memory:")
    columns = ", ".join(f'"{h["name"]}" {SQLITE_TYPES[h["type"]]}' for h in HEADERS)  # type: ignore[index]
    conn.execute(f"CREATE TABLE {DATASET_ID} ({columns})")
    load_sqlite(conn, dataset)
    loaded = time.perf_counter()
    answer = [list(row) for row in conn.execute(QUERY).fetchall()]
    done = time.perf_counter()
    return {"seconds": done - started, "load_seconds": loaded - started, "answer": answer, "engine": "sqlite"}


def _child(side: str, path: Path, rows: int) -> dict[str, Any]:
    command = [sys.executable, str(SCRIPT), "--child", side, "--csv", str(path), "--rows", str(rows)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"{side} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _same(left: list[list[Any]], right: list[list[Any]]) -> bool:
    # Revenue is rounded to cents from sums taken in another order: a cent apart at most.
    return len(left) == len(right) and all(
        a[:3] == b[:3] and abs(a[3] - b[3]) <= 0.011 for a, b in zip(left, right, strict=True)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--folder", type=Path, default=None)
    parser.add_argument("--child", choices=("engine", "reference"), help=argparse.SUPPRESS)
    parser.add_argument("--csv", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        run = child_engine if args.child == "engine" else child_reference
        result = run(args.csv, args.rows)
        result["max_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result))
        return

    with tempfile.TemporaryDirectory(prefix="acp-bench-query-") as scratch:
        folder = args.folder or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        path = write_dataset(folder, args.rows, args.seed)
        size_mb = path.stat().st_size / 1e6
        print(f"dataset: {args.rows:,} rows, {size_mb:.0f} MB ({time.perf_counter() - started:.1f} s to write or find)")
        print(f"query: {QUERY}")
        runs: dict[str, list[dict[str, Any]]] = {"engine": [], "reference": []}
        for repetition in range(args.repeat):
            for side in ("engine", "reference") if repetition % 2 == 0 else ("reference", "engine"):
                runs[side].append(_child(side, path, args.rows))
                last = runs[side][-1]
                print(
                    f"  {side:9s} run {repetition + 1}: {last['seconds']:.2f} s, peak RSS {last['max_rss_mb']:.0f} MB"
                )
        engine_answer, reference_answer = runs["engine"][0]["answer"], runs["reference"][0]["answer"]
        engines = {r["engine"] for r in runs["engine"]}
        engine_s = statistics.median(r["seconds"] for r in runs["engine"])
        reference_s = statistics.median(r["seconds"] for r in runs["reference"])
        load_s = statistics.median(r["load_seconds"] for r in runs["reference"])
        ratio = reference_s / engine_s
        print()
        print("| side | median time | peak RSS (max of runs) |")
        print("|---|---|---|")
        engine_rss = max(r["max_rss_mb"] for r in runs["engine"])
        reference_rss = max(r["max_rss_mb"] for r in runs["reference"])
        print(f"| acp_query ({', '.join(sorted(engines))}) | {engine_s:.2f} s | {engine_rss:.0f} MB |")
        print(f"| reference (SQLite in memory; load {load_s:.2f} s) | {reference_s:.2f} s | {reference_rss:.0f} MB |")
        print()
        print(f"same answer: {_same(engine_answer, reference_answer)} ({len(engine_answer)} rows)")
        verdict = "met" if ratio >= TARGET_RATIO else "NOT met"
        print(f"ratio reference / acp_query: {ratio:.1f}x (target >= {TARGET_RATIO:.0f}x: {verdict})")


if __name__ == "__main__":
    main()
