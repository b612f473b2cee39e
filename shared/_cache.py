"""Autocontext cache, recently used resources and proven credentials (spec 6.3, 7.4, 10.1).

* :class:`BlockCache` keys entries by (credential identity, resource, block) with a TTL
  each, in memory and, when ``ACP_CACHE_DIR`` is set, on disk. Keys are hashed; no entry
  ever holds credentials.
* :class:`RecencyStore` keeps an exponentially decaying use score per resource and per
  identity (14-day half-life), persisted under ``ACP_CACHE_DIR``.
* :class:`ProvenCredentials` remembers, for this process only, which exact credentials
  authenticated. Cached data is served only to those, so a wrong password cannot read
  schemas that a right one cached.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import _jsonio as jsonio
from .protocol import RECENT_HALF_LIFE_S, JsonObject

_MISS = object()


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()


def _atomic_write(path: Path, payload: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(payload)
    os.replace(tmp, path)


class BlockCache:
    """TTL cache for autocontext blocks and resource listings."""

    def __init__(self, directory: Path | None, clock: Callable[[], float] = time.time) -> None:
        self._directory = directory
        self._clock = clock
        self._memory: dict[str, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def _key(self, identity: str, resource: str, block: str) -> str:
        return _digest(identity, resource, block)

    def get(self, identity: str, resource: str, block: str) -> Any:
        """The cached value, or :data:`MISS`."""
        key = self._key(identity, resource, block)
        now = self._clock()
        with self._lock:
            hit = self._memory.get(key)
        if hit is not None:
            if hit[0] > now:
                return hit[1]
            with self._lock:
                self._memory.pop(key, None)
        if self._directory is None:
            return _MISS
        path = self._directory / f"{key}.json"
        try:
            entry = jsonio.loads(path.read_bytes())
        except (OSError, ValueError):
            return _MISS
        expires = entry.get("expires") if isinstance(entry, dict) else None
        if not isinstance(expires, (int, float)) or "data" not in entry or expires <= now:
            path.unlink(missing_ok=True)  # expired, or not a file this cache wrote
            return _MISS
        with self._lock:
            self._memory[key] = (entry["expires"], entry["data"])
        return entry["data"]

    def put(self, identity: str, resource: str, block: str, data: Any, ttl_s: float) -> None:
        key = self._key(identity, resource, block)
        expires = self._clock() + ttl_s
        with self._lock:
            self._memory[key] = (expires, data)
        if self._directory is not None:
            # The disk cache is an optimization; memory still serves if the write fails.
            with contextlib.suppress(OSError):
                _atomic_write(self._directory / f"{key}.json", jsonio.dumps({"expires": expires, "data": data}))


MISS = _MISS


class RecencyStore:
    """Recently used resources per identity, scored with exponential decay (spec 6.3).

    Every extraction records a use, so disk writes are batched: at most one per
    ``flush_every_s``, plus a final :meth:`flush` when the process exits.
    """

    def __init__(
        self,
        directory: Path | None,
        clock: Callable[[], float] = time.time,
        half_life_s: float = RECENT_HALF_LIFE_S,
        flush_every_s: float = 5.0,
    ) -> None:
        self._directory = directory
        self._clock = clock
        self._half_life = half_life_s
        self._flush_every = flush_every_s
        self._scores: dict[str, dict[str, tuple[float, float]]] = {}
        self._dirty: set[str] = set()
        self._last_flush = float("-inf")
        self._lock = threading.Lock()
        if directory is not None:
            atexit.register(self.flush)

    def _load(self, identity: str) -> dict[str, tuple[float, float]]:
        scores = self._scores.get(identity)
        if scores is not None:
            return scores
        scores = {}
        if self._directory is not None:
            try:
                raw = json.loads((self._directory / f"{_digest(identity)}.json").read_text("utf-8"))
                scores = {str(k): (float(v[0]), float(v[1])) for k, v in raw.items()}
            except (OSError, ValueError, TypeError, IndexError, KeyError, AttributeError):
                scores = {}
        self._scores[identity] = scores
        return scores

    def _decayed(self, score: float, at: float, now: float) -> float:
        return float(score * 0.5 ** (max(now - at, 0.0) / self._half_life))

    def record(self, identity: str, resource_id: str) -> None:
        now = self._clock()
        with self._lock:
            scores = self._load(identity)
            score, at = scores.get(resource_id, (0.0, now))
            scores[resource_id] = (self._decayed(score, at, now) + 1.0, now)
            self._dirty.add(identity)
            due = time.monotonic() - self._last_flush >= self._flush_every
        if due:
            self.flush()

    def flush(self) -> None:
        """Write the identities changed since the last flush to ``ACP_CACHE_DIR``."""
        with self._lock:
            self._last_flush = time.monotonic()
            if self._directory is None:
                self._dirty.clear()
                return
            snapshots = {i: {k: list(v) for k, v in self._scores[i].items()} for i in self._dirty}
            self._dirty.clear()
        for identity, snapshot in snapshots.items():
            with contextlib.suppress(OSError):
                _atomic_write(self._directory / f"{_digest(identity)}.json", json.dumps(snapshot).encode())

    def ranked(self, identity: str) -> list[tuple[str, float]]:
        """Resources by current decayed score, highest first."""
        now = self._clock()
        with self._lock:
            scores = dict(self._load(identity))
        ranked = [(rid, self._decayed(s, at, now)) for rid, (s, at) in scores.items()]
        return sorted(ranked, key=lambda item: item[1], reverse=True)


class ProvenCredentials:
    """Which exact credentials authenticated in this process (memory only, keyed by HMAC)."""

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)  # per process: the fingerprints mean nothing elsewhere
        self._proven: set[str] = set()
        self._lock = threading.Lock()
        # The last credentials object and its fingerprint: a session's credentials are one object
        # for all its calls, and one call asks twice (is_proven, then prove). Holding the object
        # keeps its identity from being reused.
        self._last: tuple[JsonObject, str] | None = None

    def fingerprint(self, credentials: JsonObject) -> str:
        last = self._last
        if last is not None and last[0] is credentials:
            return last[1]
        canonical = jsonio.dumps_canonical(credentials)
        fingerprint = hmac.digest(self._key, canonical, "sha256").hex()
        self._last = (credentials, fingerprint)
        return fingerprint

    def is_proven(self, credentials: JsonObject) -> bool:
        with self._lock:
            return self.fingerprint(credentials) in self._proven

    def prove(self, credentials: JsonObject) -> None:
        with self._lock:
            self._proven.add(self.fingerprint(credentials))
