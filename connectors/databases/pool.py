"""Connections reused per exact credentials and database, closed when idle.

Keyed by a per-process HMAC of the whole credentials object: the same user with another
password never gets a connection the right password opened.

A call leaves nothing behind for the next one: a connection goes back to the pool only after
its engine reset the session (:meth:`Connection.reset`: PostgreSQL ``DISCARD ALL``, which also
releases advisory locks), and a connection in doubt is closed instead: one whose call failed,
was cancelled or ran past its deadline, whose reset failed, or whose driver cannot reset a
session at all (PyMySQL: MySQL user variables and named locks would outlive the call).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import hmac
import json
import logging
import secrets
import threading
import time
from collections.abc import Iterator
from typing import Any

from .engine import Connection, Engine

log = logging.getLogger(__name__)

IDLE_S = 60.0
MAX_IDLE_PER_KEY = 4


class ConnectionPool:
    def __init__(self, idle_s: float = IDLE_S) -> None:
        self._idle_s = idle_s
        self._key = secrets.token_bytes(32)
        self._idle: dict[tuple[str, str | None, bool], list[tuple[float, Connection]]] = {}
        self._lock = threading.Lock()
        self._reaper: threading.Thread | None = None
        atexit.register(self.close_all)

    def _fingerprint(self, credentials: dict[str, Any]) -> str:
        canonical = json.dumps(credentials, sort_keys=True, default=str).encode()
        return hmac.new(self._key, canonical, hashlib.sha256).hexdigest()

    @contextlib.contextmanager
    def connection(
        self,
        engine: Engine,
        credentials: dict[str, Any],
        database: str | None,
        cancelled: threading.Event,
        write: bool = False,
    ) -> Iterator[Connection]:
        """A connection for one call; it goes back to the pool only if the call ended cleanly."""
        key = (self._fingerprint(credentials), database, write)
        conn = self._take(key)
        if conn is None:
            conn = engine.connect(credentials, database, write=write)
        conn.bind(cancelled)
        try:
            yield conn
        except BaseException:
            conn.close()  # its state is unknown: a cancelled or failed statement
            raise
        if cancelled.is_set() or conn.expired or not self._reset(conn):
            conn.close()
        else:
            self._give(key, conn)

    @staticmethod
    def _reset(conn: Connection) -> bool:
        """Whether the session was cleared for the next call; a failed reset is a connection in doubt."""
        try:
            return conn.reset()
        except Exception:
            log.warning("resetting a pooled database session failed; the connection is closed", exc_info=True)
            return False

    def _take(self, key: tuple[str, str | None, bool]) -> Connection | None:
        while True:
            with self._lock:
                idle = self._idle.get(key)
                if not idle:
                    return None
                _, conn = idle.pop()
            if conn.alive():
                return conn
            conn.close()

    def _give(self, key: tuple[str, str | None, bool], conn: Connection) -> None:
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if len(idle) >= MAX_IDLE_PER_KEY:
                extra = conn
            else:
                idle.append((time.monotonic(), conn))
                extra = None
            if self._reaper is None:
                self._reaper = threading.Thread(target=self._reap_forever, name="acp-db-pool-reaper", daemon=True)
                self._reaper.start()
        if extra is not None:
            extra.close()

    def reap(self) -> int:
        """Close connections idle for longer than the idle time; return how many."""
        cutoff = time.monotonic() - self._idle_s
        stale: list[Connection] = []
        with self._lock:
            for key, idle in list(self._idle.items()):
                keep = [(t, c) for t, c in idle if t > cutoff]
                stale += [c for t, c in idle if t <= cutoff]
                if keep:
                    self._idle[key] = keep
                else:
                    del self._idle[key]
        for conn in stale:
            conn.close()
        return len(stale)

    def _reap_forever(self) -> None:
        while True:
            time.sleep(max(self._idle_s / 4, 1.0))
            self.reap()

    def close_all(self) -> None:
        with self._lock:
            everything = [c for idle in self._idle.values() for _, c in idle]
            self._idle.clear()
        for conn in everything:
            with contextlib.suppress(Exception):
                conn.close()


POOL = ConnectionPool()
