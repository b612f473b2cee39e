"""The connector process a test started, and how busy it is (to prove work stopped at the source)."""

from __future__ import annotations

import anyio
import psutil


def server_process(module: str = "connectors.databases") -> psutil.Process:
    """The running child process of this test that serves ``module``."""
    for child in psutil.Process().children(recursive=True):
        if module in " ".join(child.cmdline()):
            return child
    raise AssertionError(f"no {module} server is running")


async def cpu_seconds(process: psutil.Process, window_s: float) -> float:
    """CPU time (user + system) the process used during the next ``window_s`` seconds."""
    before = sum(process.cpu_times()[:2])
    await anyio.sleep(window_s)
    return sum(process.cpu_times()[:2]) - before
