"""Connector zips: size, and start from the unpacked folder → answered ``tools/list``.

For each connector, the zip for this machine is built (or taken from ``--dist``), unpacked the
way a host installs it, and started with ``python launch.py``:

- first start: a new, empty ``ACP_CACHE_DIR`` each run, so the run compiles the bytecode of
  everything it imports into the cache (what a user sees once after installing);
- second start: the same cache, already filled by an untimed start;
- baseline, same run: ``python -m connectors.<id>`` from this checkout's virtualenv, whose
  bytecode sits in ``__pycache__`` (a developer's warm start).

The three are interleaved run by run (the order rotates) so that drift hits all of them.

    .venv/bin/python bench/zip_start.py [--runs 10] [--dist DIR] [IDS ...]

Targets: second start under 1 s; every zip ≤ 25 MB except the documented DuckDB share.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(BENCH)]

from acpzip_support import load_acpzip  # noqa: E402
from startup import time_server  # noqa: E402

from shared.install import unpack  # noqa: E402

MB = 1024 * 1024
SECOND_START_TARGET_MS = 1000.0


def zips(dist: Path | None, ids: list[str], out: Path) -> dict[str, Path]:
    acpzip = load_acpzip()
    wanted = ids or acpzip.connector_ids()
    if dist is not None:
        found = {p.name.split("-")[0]: p for p in sorted(dist.glob("*.zip"))}
        return {cid: found[cid] for cid in wanted}
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return {cid: acpzip.build(cid, python, acpzip.host_platform(), out) for cid in wanted}


def measure(connector_id: str, archive: Path, runs: int, scratch: Path) -> dict[str, list[float]]:
    folder = scratch / "servers" / connector_id
    unpack(archive, folder)
    base = {"PATH": os.environ["PATH"], "ACP_TMP_DIR": str(scratch / "tmp")}
    warm_cache = scratch / "cache-warm"
    launch = [sys.executable, str(folder / "launch.py")]
    time_server(launch, {**base, "ACP_CACHE_DIR": str(warm_cache)})  # fills the cache for "second"
    module = [sys.executable, "-m", f"connectors.{connector_id}"]
    baseline_env = {**os.environ, "ACP_TMP_DIR": str(scratch / "tmp"), "ACP_CACHE_DIR": str(scratch / "cache-dev")}
    time_server(module, baseline_env)  # the checkout's own bytecode is written once
    samples: dict[str, list[float]] = {"first": [], "second": [], "baseline": []}
    order = list(samples)
    for run in range(runs):
        for kind in order[run % 3 :] + order[: run % 3]:
            if kind == "first":
                cold = scratch / f"cache-cold-{run}"
                samples[kind].append(time_server(launch, {**base, "ACP_CACHE_DIR": str(cold)}))
            elif kind == "second":
                samples[kind].append(time_server(launch, {**base, "ACP_CACHE_DIR": str(warm_cache)}))
            else:
                samples[kind].append(time_server(module, baseline_env))
    return samples


def duckdb_share(archive: Path) -> int:
    import re
    import zipfile

    with zipfile.ZipFile(archive) as zf:
        return sum(i.compress_size for i in zf.infolist() if re.search(r"/lib/(_duckdb|duckdb)", i.filename))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ids", nargs="*", help="connector ids (default: all)")
    parser.add_argument("--runs", type=int, default=10, help="timed starts of each kind (default 10)")
    parser.add_argument("--dist", type=Path, help="take the zips from this folder instead of building them")
    args = parser.parse_args(argv)
    worst = 0
    with tempfile.TemporaryDirectory(prefix="acp-bench-zip-") as tmp:
        scratch = Path(tmp)
        archives = zips(args.dist, args.ids, scratch / "dist")
        print(f"Zip size and start → tools/list reply, {args.runs} interleaved runs of each kind (median ms)")
        print(f"{'zip':<52} {'MiB':>6} {'w/o DuckDB':>10} {'first':>8} {'second':>8} {'baseline':>9} {'2nd/base':>9}")
        for connector_id, archive in archives.items():
            samples = measure(connector_id, archive, args.runs, scratch / connector_id)
            first, second, baseline = (statistics.median(samples[k]) for k in ("first", "second", "baseline"))
            size = archive.stat().st_size
            without = size - duckdb_share(archive)
            print(
                f"{archive.name:<52} {size / MB:>6.1f} {without / MB:>10.1f} {first:>8.0f} {second:>8.0f} "
                f"{baseline:>9.0f} {second / baseline:>8.2f}×"
            )
            if second >= SECOND_START_TARGET_MS or without > 25 * MB:
                worst = 1
    verdict = "meet" if worst == 0 else "MISS"
    print(f"targets (second start < {SECOND_START_TARGET_MS:.0f} ms; ≤ 25 MiB without DuckDB): {verdict}")
    return worst


if __name__ == "__main__":
    sys.exit(main())
