"""``table_uri`` files (spec 8.5) and local artifacts (8.10): random names, owner-only
permissions, removed after a TTL.

The directory is ``ACP_TMP_DIR`` when the host sets it, else a private ``acp-results-*``
folder under the system temporary directory, removed with everything in it when the process
exits. The host reads the file when it gets the response and should delete it; the TTL
sweep removes what a host forgot, from a background timer armed while files remain, so
expiry does not wait for the next extraction.
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlparse
from urllib.request import url2pathname

DEFAULT_TTL_S = 3600
_SWEEP_EVERY_S = 60.0
_SUFFIX = ".json"
# Local artifacts a tool may write next to the table files (spec 8.10 ``screenshot_path``).
ARTIFACT_SUFFIXES = frozenset({".png", ".jpg"})
_SUFFIXES = (_SUFFIX, *sorted(ARTIFACT_SUFFIXES))


class TableFiles:
    """Creates and expires the JSON files behind ``table_uri``."""

    def __init__(self, prefix: str, directory: str | None = None, ttl_s: float = DEFAULT_TTL_S) -> None:
        self.prefix = prefix
        self.ttl_s = ttl_s
        self._configured_dir = directory
        self._dir: Path | None = None
        self._lock = threading.Lock()
        self._last_sweep = 0.0
        self._timer: threading.Timer | None = None

    @classmethod
    def from_environment(cls, prefix: str, environ: Mapping[str, str] | None = None) -> TableFiles:
        """``ACP_TMP_DIR`` and ``ACP_TABLE_TTL_S`` (spec 13.3)."""
        env = os.environ if environ is None else environ
        ttl = float(env.get("ACP_TABLE_TTL_S", DEFAULT_TTL_S))
        return cls(prefix, env.get("ACP_TMP_DIR") or None, ttl)

    @property
    def directory(self) -> Path:
        with self._lock:
            if self._dir is None:
                if self._configured_dir:
                    path = Path(self._configured_dir)
                    path.mkdir(parents=True, exist_ok=True, mode=0o700)
                else:
                    path = Path(tempfile.mkdtemp(prefix="acp-results-"))
                    # Nothing else knows this folder, so nothing would sweep it after we exit.
                    # A host-set ACP_TMP_DIR is the host's: it is never removed.
                    atexit.register(shutil.rmtree, path, ignore_errors=True)
                self._dir = path.resolve()
            return self._dir

    def create(self, suffix: str = _SUFFIX) -> tuple[Path, BinaryIO]:
        """A new file opened for writing, readable and writable by the owner only: a table file,
        or with a suffix of :data:`ARTIFACT_SUFFIXES` an image that expires the same way."""
        if suffix not in _SUFFIXES:
            raise ValueError(f"unsupported file suffix {suffix!r}; one of {', '.join(_SUFFIXES)}")
        self.sweep()
        path = self.directory / f"{self.prefix}-{secrets.token_hex(16)}{suffix}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
        self._arm_sweep()
        return path, os.fdopen(fd, "wb", buffering=1024 * 1024)

    def _arm_sweep(self) -> None:
        """Sweep every ``min(ttl, 60)`` s in the background while any of our files remain.

        A file expires even if no extraction follows it; the timer is a daemon and stops
        re-arming once the folder holds none of our files, so an idle server keeps no thread.
        """
        with self._lock:
            if self._timer is not None:
                return
            self._timer = threading.Timer(min(self.ttl_s, _SWEEP_EVERY_S), self._background_sweep)
            self._timer.daemon = True
            self._timer.start()

    def _background_sweep(self) -> None:
        self.sweep(force=True)
        with self._lock:
            self._timer = None
        if any(self._own_files()):
            self._arm_sweep()

    def _own_files(self) -> Iterator[os.DirEntry[str]]:
        """This connector's table files and artifacts in the folder (other connectors may share ``ACP_TMP_DIR``)."""
        try:
            entries = list(os.scandir(self.directory))
        except OSError:
            return
        for entry in entries:
            if entry.name.startswith(self.prefix + "-") and entry.name.endswith(_SUFFIXES):
                yield entry

    def sweep(self, force: bool = False) -> int:
        """Delete this connector's files older than the TTL; return how many went."""
        now = time.time()
        if not force and now - self._last_sweep < _SWEEP_EVERY_S:
            return 0
        self._last_sweep = now
        removed = 0
        for entry in self._own_files():
            try:
                if now - entry.stat().st_mtime > self.ttl_s:
                    os.unlink(entry.path)
                    removed += 1
            except OSError:
                continue  # another process (or the host) removed it first
        return removed


def uri_path(uri: str) -> Path:
    """The local path of a ``file://`` URI."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        raise ValueError(f"not a file:// URI: {uri}")
    return Path(url2pathname(parsed.path))


class TableLinks:
    """Short-lived, single-use download tokens for ``table_uri`` over HTTP (spec 8.5).

    A remote host cannot read the server's ``file://`` paths, so an HTTP response carries
    ``https://…/tables/<token>`` instead, served by the same server behind the same auth.
    """

    def __init__(self, ttl_s: float = 600.0) -> None:
        self.ttl_s = ttl_s
        self._links: dict[str, tuple[Path, float]] = {}
        self._lock = threading.Lock()

    def publish(self, path: Path) -> str:
        token = secrets.token_urlsafe(32)
        now = time.monotonic()
        with self._lock:
            self._links = {t: v for t, v in self._links.items() if v[1] > now}  # forget expired links
            self._links[token] = (path, now + self.ttl_s)
        return token

    def take(self, token: str) -> Path | None:
        """The file behind a token, once: the token is gone after this call."""
        with self._lock:
            link = self._links.pop(token, None)
        if link is None or link[1] <= time.monotonic() or not link[0].exists():
            return None
        return link[0]
