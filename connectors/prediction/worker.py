"""Runs the statistics in worker processes, each call under a hard time cap.

statsmodels' optimizers cannot be interrupted inside a thread, so a fit that runs too long is stopped the only sure
way: its worker process is killed, and a new one takes its place. ``forecast`` then falls back to a seasonal naive
forecast (naive when not seasonal) and says so in a warning; other calls raise ``FitTimeout``.

The workers are subprocesses (``python -m connectors.prediction.worker``), kept warm. Each imports numpy and
statsmodels (``models``) before it reports ready, so the server process never imports them, and a call's cap
counts the fit, not the import.
"""

from __future__ import annotations

import atexit
import os
import pickle
import queue
import subprocess
import sys
import threading
from typing import IO, Any

# A fit that takes longer than this is stopped (seconds); the environment variable overrides it.
DEFAULT_CAP_S = float(os.environ.get("ACP_PREDICTION_FIT_CAP_S", "20"))
# The fallback forecast is cheap, but a new worker must import statsmodels first.
FALLBACK_CAP_S = 60.0
# How long a new worker may take to import numpy and statsmodels.
START_TIMEOUT_S = 60.0
MAX_WORKERS = 2
FUNCTIONS = ("forecast", "backtest", "detect_anomalies")


class FitTimeout(Exception):
    """A call ran past its cap, and no simpler method could take its place."""


class WorkerCrashed(Exception):
    """The worker process died during a call (out of memory, a crash in compiled code)."""


def _read_frame(stream: IO[bytes]) -> Any:
    header = stream.read(4)
    if len(header) < 4:
        raise EOFError
    size = int.from_bytes(header, "big")
    return pickle.loads(stream.read(size))  # noqa: S301 - frames come from our own worker process


def _write_frame(stream: IO[bytes], message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(len(data).to_bytes(4, "big") + data)
    stream.flush()


def _serve() -> None:
    """The worker's loop: import the statistics once, then answer (function name, kwargs) frames on stdin."""
    # The frames own the real stdout; anything a library prints goes to stderr, as the server's logs do.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    from connectors.prediction import models

    _write_frame(out, ("ready", None))
    while True:
        try:
            name, kwargs = _read_frame(sys.stdin.buffer)
        except EOFError:
            return
        try:
            result = getattr(models, name)(**kwargs)
        except Exception as error:
            try:
                _write_frame(out, ("error", error))
            except Exception:
                # An exception that does not pickle still reaches the caller, as text.
                _write_frame(out, ("error", RuntimeError(f"{type(error).__name__}: {error}")))
        else:
            _write_frame(out, ("ok", result))


class _Worker:
    """One worker process. A subprocess rather than multiprocessing: spawn and forkserver re-import the server's
    ``__main__``, and fork would copy a threaded server. A reader thread turns its frames into a queue, so that a
    call waits with a timeout on every platform."""

    def __init__(self) -> None:
        # The child sees the same modules as the server, however the server's path was set up.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "connectors.prediction.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self.replies: queue.Queue[tuple[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.ready = False

    def _read(self) -> None:
        assert self.process.stdout is not None
        while True:
            try:
                message = _read_frame(self.process.stdout)
            except (EOFError, OSError, pickle.UnpicklingError):
                self.replies.put(("dead", None))
                return
            self.replies.put(message)

    def _receive(self, timeout: float) -> tuple[str, Any]:
        try:
            status, payload = self.replies.get(timeout=timeout)
        except queue.Empty:
            self.kill()
            raise TimeoutError from None
        if status == "dead":
            self.kill()
            raise WorkerCrashed(f"the statistics worker died (exit code {self.process.returncode})")
        return status, payload

    def call(self, name: str, kwargs: dict[str, Any], cap_s: float) -> Any:
        """The call's result; raises ``TimeoutError`` (the worker is then dead) or the call's own exception."""
        if not self.ready:
            try:
                self._receive(START_TIMEOUT_S)
            except TimeoutError:
                raise WorkerCrashed(f"the statistics worker did not start within {START_TIMEOUT_S:.0f} s") from None
            self.ready = True
        assert self.process.stdin is not None
        try:
            _write_frame(self.process.stdin, (name, kwargs))
        except OSError as error:
            self.kill()
            raise WorkerCrashed("the statistics worker died") from error
        status, payload = self._receive(cap_s)
        if status == "error":
            raise payload
        return payload

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()


class WorkerPool:
    """Up to ``max_workers`` warm workers; a call takes an idle one (or starts one) and returns it afterwards."""

    def __init__(self, max_workers: int = MAX_WORKERS) -> None:
        self._idle: list[_Worker] = []
        self._slots = threading.BoundedSemaphore(max_workers)
        self._lock = threading.Lock()

    def _take(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.alive():
                    return worker
        return _Worker()

    def _call(self, name: str, kwargs: dict[str, Any], cap_s: float) -> Any:
        with self._slots:
            worker = self._take()
            try:
                result = worker.call(name, kwargs, cap_s)
            finally:
                if worker.alive():
                    with self._lock:
                        self._idle.append(worker)
            return result

    def run_capped(self, name: str, kwargs: dict[str, Any], cap_s: float | None = None) -> tuple[Any, list[str]]:
        """Run ``models.<name>(**kwargs)`` in a worker under a hard cap; returns (result, warnings).

        When a forecast hits the cap, the worker is replaced and a seasonal naive forecast (naive when the series
        has no season) is returned instead, with a warning. Exceptions of the call (``ValueError`` for bad input)
        are raised here, and the worker keeps serving.
        """
        if name not in FUNCTIONS:
            raise ValueError(f"unknown function {name!r}: one of {', '.join(FUNCTIONS)}")
        cap = DEFAULT_CAP_S if cap_s is None else cap_s
        try:
            return self._call(name, kwargs, cap), []
        except TimeoutError:
            method = kwargs.get("method", "auto")
            if name != "forecast" or method in ("seasonal_naive", "naive"):
                raise FitTimeout(
                    f"{name} took longer than {cap:g} s and was stopped: use a shorter series or a simpler method"
                ) from None
        fallback = {**kwargs, "method": "seasonal_naive"}
        try:
            result = self._call(name, fallback, max(cap, FALLBACK_CAP_S))
        except TimeoutError:
            raise FitTimeout(f"even the seasonal naive forecast took longer than {FALLBACK_CAP_S:g} s") from None
        warning = f"the {method} fit took longer than {cap:g} s and was stopped: {result.method} forecast instead"
        result.params["fallback"] = "; ".join(filter(None, [result.params.get("fallback"), warning]))
        return result, [warning]

    def close(self) -> None:
        with self._lock:
            workers, self._idle = self._idle, []
        for worker in workers:
            worker.kill()


_pool: WorkerPool | None = None
_pool_lock = threading.Lock()


def _default_pool() -> WorkerPool:
    global _pool  # noqa: PLW0603 - one pool per server process, started on first use
    with _pool_lock:
        if _pool is None:
            _pool = WorkerPool()
            atexit.register(close)  # a worker would also end on its closed stdin; this ends it now
        return _pool


def run_capped(name: str, kwargs: dict[str, Any], cap_s: float | None = None) -> tuple[Any, list[str]]:
    """``WorkerPool.run_capped`` on the process's shared pool (started on first use)."""
    return _default_pool().run_capped(name, kwargs, cap_s)


def close() -> None:
    """Stop the shared pool's workers (registered to run when the server's process exits)."""
    global _pool  # noqa: PLW0603
    with _pool_lock:
        if _pool is not None:
            _pool.close()
            _pool = None


if __name__ == "__main__":
    _serve()
