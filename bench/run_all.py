"""Run every benchmark with modest defaults and print all figures.

    .venv/bin/python bench/run_all.py [--runs 10] [--calls 200] [--load-seconds 5] [--no-importtime] [--extract]

Each benchmark runs in its own interpreter (``sys.executable``), one after the other, so
that one's threads and memory do not disturb the next. ``--extract`` adds the 1M-row extraction
benchmarks (``db_extract.py`` and ``bq_extract.py``, ``--repeat 1``, about 4 minutes; the first
needs PostgreSQL and MariaDB); they are off by default so that the run stays short.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent


def run(script: str, *args: str) -> int:
    title = f" {script} {' '.join(args)} ".rstrip()
    print(f"\n{'=' * 8}{title} {'=' * max(4, 80 - len(title))}", flush=True)
    start = time.perf_counter_ns()
    code = subprocess.call([sys.executable, str(BENCH / script), *args], cwd=BENCH.parent)
    print(f"({script}: {(time.perf_counter_ns() - start) / 1e9:.1f} s, exit {code})", flush=True)
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="start-up runs per command (default 10)")
    parser.add_argument("--calls", type=int, default=200, help="timed calls per server (default 200)")
    parser.add_argument(
        "--load-seconds", type=float, default=5.0, help="measured seconds per HTTP load level (default 5)"
    )
    parser.add_argument("--no-importtime", action="store_true", help="skip the connector's import profile")
    parser.add_argument(
        "--extract", action="store_true", help="also run db_extract.py and bq_extract.py, --repeat 1 (~4 min)"
    )
    args = parser.parse_args(argv)
    startup = ["--runs", str(args.runs)] + ([] if args.no_importtime else ["--importtime"])
    codes = [
        run("startup.py", *startup),
        run("call_overhead.py", "--calls", str(args.calls)),
        run("model_size.py"),
        run("model_budget.py"),
        run("http_load.py", "--seconds", f"{args.load_seconds:g}"),
        run("zip_start.py", "--runs", str(args.runs)),
        run("sql_roundtrip.py", "--repeat", "3"),
    ]
    if args.extract:
        codes.append(run("db_extract.py", "--repeat", "1"))
        codes.append(run("bq_extract.py", "--repeat", "1"))
    return max(codes)


if __name__ == "__main__":
    sys.exit(main())
