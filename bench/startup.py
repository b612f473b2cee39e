"""Start-up benchmark: process start → answered ``tools/list``.

Each run starts a fresh process, writes ``initialize``, ``notifications/initialized`` and
``tools/list`` on its stdin at once (stdin stays open: the SDK drops requests still in
flight at EOF), and stops the clock when the ``tools/list`` reply line (id 2) arrives on
stdout. Interpreter exit is not included. The commands are interleaved run by run (the
order rotates each round) so that drift on a noisy machine hits all of them alike.

    .venv/bin/python bench/startup.py [--runs 15] [--warmup 1] [--connectors databases,gsc,ga4] [--importtime]

Targets: median(connector) / median(baseline) ≤ 1.5× for databases, ≤ 1.2× for gsc (issue 14) and
ga4 (issue 13): their Google clients are imported on the first call, never at start-up. ``python -c pass`` (start →
exit) is reported as the interpreter floor. ``--importtime`` also runs each connector once under
``-X importtime`` (serving the same three messages) and prints what its imports cost.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
# median(connector) / median(baseline), per connector measured
TARGET_RATIOS = {"databases": 1.5, "gsc": 1.2, "ga4": 1.2}
REPLY_TIMEOUT_S = 30.0  # per run

MESSAGES = b"".join(
    json.dumps(m, separators=(",", ":")).encode() + b"\n"
    for m in (
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench-startup", "version": "1.0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    )
)


def commands(connectors: Sequence[str]) -> dict[str, list[str]]:
    """The commands timed, by kind: each connector (by its id), the bare baseline and the floor."""
    py = sys.executable
    return {
        **{connector: [py, "-m", f"connectors.{connector}"] for connector in connectors},
        "baseline": [py, str(BENCH / "baseline_server.py"), "noop"],
        "floor": [py, "-c", "pass"],
    }


def label(kind: str) -> str:
    if kind == "baseline":
        return "python bench/baseline_server.py noop"
    if kind == "floor":
        return "python -c pass (start → exit)"
    return f"python -m connectors.{kind}"


def child_env(scratch: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"ACP_TMP_DIR": str(scratch / "tmp"), "ACP_CACHE_DIR": str(scratch / "cache")})
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    return env


def time_server(cmd: list[str], env: dict[str, str], stderr_path: Path | None = None) -> float:
    """Milliseconds from just before the process is started to the tools/list reply line."""
    with contextlib.ExitStack() as stack:
        err = stack.enter_context(stderr_path.open("wb")) if stderr_path else subprocess.DEVNULL
        start = time.perf_counter_ns()
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, bufsize=0
        )
        watchdog = threading.Timer(REPLY_TIMEOUT_S, proc.kill)  # a hung server cannot hang the benchmark
        watchdog.start()
        stdin, stdout = proc.stdin, proc.stdout
        if stdin is None or stdout is None:
            raise RuntimeError("no pipes")
        try:
            stdin.write(MESSAGES)
            while True:
                line = stdout.readline()
                if not line:
                    raise RuntimeError(f"{cmd!r} closed stdout (or timed out) before answering tools/list")
                if b'"id":2' in line.replace(b" ", b""):
                    elapsed = time.perf_counter_ns() - start
                    reply = json.loads(line)
                    if reply.get("id") == 2:
                        break
            if "result" not in reply:
                raise RuntimeError(f"tools/list failed: {line[:300]!r}")
        finally:
            watchdog.cancel()
            stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            stdout.close()
    return elapsed / 1e6


def time_exit(cmd: list[str], env: dict[str, str]) -> float:
    """Milliseconds from start to exit (for the interpreter floor)."""
    start = time.perf_counter_ns()
    subprocess.run(cmd, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=True)
    return (time.perf_counter_ns() - start) / 1e6


def measure(kind: str, cmd: list[str], env: dict[str, str]) -> float:
    return time_exit(cmd, env) if kind == "floor" else time_server(cmd, env)


def run(runs: int, warmup: int, connectors: Sequence[str]) -> dict[str, list[float]]:
    cmds = commands(connectors)
    order = list(cmds)
    samples: dict[str, list[float]] = {k: [] for k in order}
    with tempfile.TemporaryDirectory(prefix="acp-bench-startup-") as scratch:
        env = child_env(Path(scratch))
        for _ in range(warmup):
            for kind in order:
                measure(kind, cmds[kind], env)
        for i in range(runs):
            rotated = order[i % len(order) :] + order[: i % len(order)]
            for kind in rotated:
                samples[kind].append(measure(kind, cmds[kind], env))
    return samples


def report(samples: dict[str, list[float]], connectors: Sequence[str]) -> dict[str, float]:
    runs = len(samples["baseline"])
    print(f"Start-up: process start → tools/list reply, {runs} interleaved runs each (ms)")
    print(f"{'command':<40} {'min':>8} {'median':>8} {'max':>8}")
    medians: dict[str, float] = {}
    for kind, values in samples.items():
        medians[kind] = statistics.median(values)
        print(f"{label(kind):<40} {min(values):>8.1f} {medians[kind]:>8.1f} {max(values):>8.1f}")
    figures = dict(medians)
    for connector in connectors:
        ratio = medians[connector] / medians["baseline"]
        paired = statistics.median(c / b for c, b in zip(samples[connector], samples["baseline"], strict=True))
        target = TARGET_RATIOS[connector]
        verdict = "meets" if ratio <= target else "MISSES"
        print(
            f"{connector}: median(connector)/median(baseline) = {ratio:.2f}×  "
            f"(target ≤ {target}×: {verdict}; median of paired ratios {paired:.2f}×); "
            f"+{medians[connector] - medians['floor']:.0f} ms above the interpreter floor"
        )
        figures[f"{connector}_ratio"] = ratio
    print(f"baseline: +{medians['baseline'] - medians['floor']:.0f} ms above the interpreter floor")
    return figures


_IMPORT_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def _imports(kind: str, cmd: list[str], scratch: Path) -> tuple[float, dict[str, tuple[int, int, int]]]:
    """Serve the three messages once under ``-X importtime``: wall ms and {module: (self µs, cum µs, depth)}."""
    log = scratch / f"importtime-{kind}.txt"
    wall = time_server([cmd[0], "-X", "importtime", *cmd[1:]], child_env(scratch), stderr_path=log)
    modules: dict[str, tuple[int, int, int]] = {}
    for line in log.read_text("utf-8", errors="replace").splitlines():
        match = _IMPORT_LINE.match(line)
        if match:
            self_us, cumulative_us, indent, name = match.groups()
            modules[name] = (int(self_us), int(cumulative_us), (len(indent) - 1) // 2)
    return wall, modules


def _by_package(modules: dict[str, tuple[int, int, int]]) -> dict[str, int]:
    totals: dict[str, int] = defaultdict(int)
    for name, (self_us, _, _) in modules.items():
        totals[name.split(".")[0]] += self_us
    return totals


def import_profile(kind: str, top: int = 10) -> None:
    """Where a connector's start-up goes: its imports, and those the baseline does not make."""
    cmds = commands([kind])
    with tempfile.TemporaryDirectory(prefix="acp-bench-importtime-") as tmp:
        scratch = Path(tmp)
        wall_c, connector = _imports(kind, cmds[kind], scratch)
        wall_b, baseline = _imports("baseline", cmds["baseline"], scratch)
    total_c = sum(v[0] for v in connector.values())
    total_b = sum(v[0] for v in baseline.values())
    print(f"\n{label(kind)}: imports while serving the three messages once under -X importtime")
    print("(sum of self times; one run each)")
    for who, total, modules, wall in ((kind, total_c, connector, wall_c), ("baseline", total_b, baseline, wall_b)):
        where = f"{len(modules)} modules; start → tools/list {wall:.0f} ms"
        print(f"{who + ':':<10} {total / 1000:.0f} ms of imports ({where})")
    print(f"\n{kind + ', by top-level package':<44} {'ms':>8} {'share':>7}")
    for name, us in sorted(_by_package(connector).items(), key=lambda kv: -kv[1])[:top]:
        print(f"{name:<44} {us / 1000:>8.1f} {us / total_c:>7.0%}")
    extra = {name: v for name, v in connector.items() if name not in baseline}
    extra_total = sum(v[0] for v in extra.values())
    print(f"\n{'modules only ' + kind + ' imports, by package':<44} {'ms':>8}")
    for name, us in sorted(_by_package(extra).items(), key=lambda kv: -kv[1])[:top]:
        print(f"{name:<44} {us / 1000:>8.1f}")
    print(f"{'total (' + str(len(extra)) + ' modules)':<44} {extra_total / 1000:>8.1f}")
    print(f"\n{kind + ': largest imports (cumulative, two levels)':<52} {'ms':>8}")
    shallow = [(v[1], v[2], name) for name, v in connector.items() if v[2] <= 1]
    for cumulative, depth, name in sorted(shallow, reverse=True)[:top]:
        indented = "  " * depth + name
        print(f"{indented:<52} {cumulative / 1000:>8.1f}")


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="measured runs per command (default 15)")
    parser.add_argument("--warmup", type=int, default=1, help="unmeasured runs per command first (default 1)")
    parser.add_argument(
        "--connectors",
        default=",".join(TARGET_RATIOS),
        help=f"comma-separated connector ids to time (default {','.join(TARGET_RATIOS)})",
    )
    parser.add_argument("--importtime", action="store_true", help="also profile each connector's imports")
    args = parser.parse_args(argv)
    if not 1 <= args.runs <= 100:
        parser.error("--runs must be between 1 and 100")
    connectors = [c for c in args.connectors.split(",") if c]
    unknown = sorted(set(connectors) - set(TARGET_RATIOS))
    if unknown or not connectors:
        parser.error(f"--connectors takes ids among {', '.join(TARGET_RATIOS)}")
    figures = report(run(args.runs, args.warmup, connectors), connectors)
    if args.importtime:
        for connector in connectors:
            import_profile(connector)
    return figures


if __name__ == "__main__":
    main()
