"""The one place secrets are scrubbed (spec 5.4, 10.1.4).

Library exceptions and validation errors echo their input, so every error message and
every log line passes through :func:`redact` before it leaves the process. Secrets are
registered when credentials are parsed; they live only in this process's memory.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

REDACTED = "[REDACTED]"
_MIN_FRAGMENT = 6  # shorter strings ("root", "5432") are too common to scrub blindly


class SecretRegistry:
    """Known secret strings and their fragments, longest first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._secrets: set[str] = set()
        self._pattern: re.Pattern[str] | None = None

    def add(self, secrets: Iterable[str]) -> None:
        added = False
        with self._lock:
            for secret in secrets:
                for piece in _pieces(secret):
                    if piece not in self._secrets:
                        self._secrets.add(piece)
                        added = True
            if added:
                ordered = sorted(self._secrets, key=len, reverse=True)
                self._pattern = re.compile("|".join(re.escape(s) for s in ordered))

    def redact(self, text: str) -> str:
        pattern = self._pattern
        if pattern is None or not text:
            return text
        return pattern.sub(REDACTED, text)


def _pieces(secret: str) -> list[str]:
    """The secret, its JSON-escaped form and its lines (a PEM key may leak line by line)."""
    if not isinstance(secret, str) or len(secret) < _MIN_FRAGMENT:
        return []
    pieces = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
    pieces.update(line.strip() for line in secret.splitlines())
    return [p for p in pieces if len(p) >= _MIN_FRAGMENT]


SECRETS = SecretRegistry()


def redact(text: str) -> str:
    """Scrub every registered secret from ``text``."""
    return SECRETS.redact(text)


def register_secrets(secrets: Iterable[str]) -> None:
    SECRETS.add(secrets)


class _RedactingJsonFormatter(logging.Formatter):
    """One JSON object per line on stderr; the whole line is redacted."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key in ("call_id", "tool", "session"):
            value = getattr(record, key, None)
            if value is not None:
                entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return redact(json.dumps(entry, ensure_ascii=False, default=str))


# Libraries that log message payloads at debug level (sse_starlette logs every response
# chunk, with table links and data): they stay at warning whatever --log-level says.
PAYLOAD_LOGGERS = ("sse_starlette", "mcp", "mcp_types", "httpx", "httpx2", "httpcore", "httpcore2", "uvicorn.access")


def configure_logging(level: str = "warning") -> None:
    """Logs go to stderr only: on stdio, stdout is the protocol wire (spec 3.2)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_RedactingJsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in PAYLOAD_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))


@contextlib.contextmanager
def logging_to(stream: TextIO, level: str = "warning") -> Iterator[None]:
    """:func:`configure_logging` for a server running inside another program, undone on exit.

    The same redacted JSON lines go to ``stream``; the program's own handlers stay, and the
    MCP client's records (the host side of an in-process connection) are left out.
    """
    handler = logging.StreamHandler(stream)
    handler.setFormatter(_RedactingJsonFormatter())
    handler.addFilter(lambda record: not record.name.startswith("mcp.client"))
    root = logging.getLogger()
    saved = root.level, {name: logging.getLogger(name).level for name in PAYLOAD_LOGGERS}
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in PAYLOAD_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(saved[0])
        for name, previous in saved[1].items():
            logging.getLogger(name).setLevel(previous)
