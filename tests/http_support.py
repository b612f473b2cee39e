"""Start a connector's HTTP server (uvicorn) in a subprocess on loopback, for real-HTTP tests."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class HttpServer:
    url: str  # the MCP endpoint
    base: str
    stderr: Path
    process: subprocess.Popen[bytes]

    def read_stderr(self) -> str:
        return self.stderr.read_text("utf-8", errors="replace")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def http_server(
    command: Sequence[str], env: dict[str, str], workdir: Path, extra_args: Sequence[str] = (), path: str = "/mcp"
) -> Iterator[HttpServer]:
    """Run ``command --http --port P`` and wait until ``/healthz`` answers.

    A free port can be taken by another process (a parallel test worker) before the server
    binds it: the server then exits with EADDRINUSE, and it starts again on another port.
    """
    for attempt in range(1, 4):
        started = _start(command, env, workdir, extra_args)
        if isinstance(started, _Started):
            break
        if attempt == 3 or not started.port_taken:
            raise RuntimeError(f"HTTP server did not start:\n{started.log}")
    base, process, stderr = started.base, started.process, started.stderr
    try:
        yield HttpServer(url=f"{base}{path}", base=base, stderr=stderr, process=process)
    finally:
        _stop(process)


@dataclass(frozen=True)
class _Started:
    base: str
    process: subprocess.Popen[bytes]
    stderr: Path


@dataclass(frozen=True)
class _Failed:
    log: str
    port_taken: bool


def _start(command: Sequence[str], env: dict[str, str], workdir: Path, extra_args: Sequence[str]) -> _Started | _Failed:
    port = free_port()
    stderr = workdir / f"http-server-{port}.log"
    full_env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "SYSTEMROOT", "PYTHONPATH")}
    full_env.update(env)
    with stderr.open("wb") as errors:
        process = subprocess.Popen(
            [*command, "--http", "--port", str(port), *extra_args],
            stdin=subprocess.DEVNULL,
            stdout=errors,
            stderr=errors,
            env=full_env,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=2) as answer:
                if answer.status == 200:
                    return _Started(base, process, stderr)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            _stop(process)
            log = stderr.read_text("utf-8", errors="replace")
            return _Failed(log, port_taken="address already in use" in log.lower())
        time.sleep(0.1)


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def module_command(connector: str) -> list[str]:
    return [sys.executable, "-m", f"connectors.{connector}"]
