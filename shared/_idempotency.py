"""Idempotency keys on the writing tools (tools declared ``read_only=False``).

A gateway that loses a connection retries the call as a new request (seed 002, "sin
reanudación de flujo"): without a key, ``insert_rows`` would append the rows twice. The
core publishes an optional ``idempotency_key`` argument on every writing tool and remembers,
per (credential identity, tool, key), the first call's answer for a bounded time and number
of keys:

* a retry with the same key and the same arguments gets the first answer, and nothing runs;
* a retry while the first call still runs waits for it, then gets its answer;
* the same key with other arguments is refused (ACP_INVALID_ARGUMENTS);
* a first call that fails (or is cancelled) leaves nothing behind, so a retry runs anew:
  the writing tools write in one transaction, so a failed call wrote nothing.

A gateway sends its key in the request's ``_meta`` rather than in the arguments (seed 002:
``_meta["com.asixto/idempotencyKey"]``): :func:`key_from_meta` reads any ``_meta`` key named
``<namespace>/idempotencyKey``, and ``_meta.acp.idempotency_key`` from an ACP host, so a retry
is safe whether the model, the host or the gateway supplies the key.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final, Generic, TypeVar, cast

import anyio

from . import _jsonio as jsonio
from .errors import InvalidArguments
from .protocol import JsonObject

IDEMPOTENCY_KEY: Final = "idempotency_key"
KEY_TTL_S: Final = 24 * 3600.0
KEYS_KEPT: Final = 10_000
MAX_KEY_CHARS: Final = 200
REPLAYED: Final = (
    "This call repeated an earlier one with the same idempotency_key and arguments: this is that call's answer, "
    "and nothing was written again."
)
T = TypeVar("T")
Scope = tuple[str, str, str]  # (credential identity, tool, key)


def key_property() -> JsonObject:
    """The ``idempotency_key`` argument published on writing tools."""
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_KEY_CHARS,
        "description": "Optional. A unique id for this write (a UUID, say). Calling again with the same key and the "
        "same arguments returns the first call's answer without writing again, so a retry is safe. Use a new key "
        "for a new write.",
    }


def fingerprint(arguments: JsonObject) -> str:
    """A digest of a call's arguments, to tell a retry from another call that reuses the key."""
    return hashlib.sha256(jsonio.dumps_canonical(arguments)).hexdigest()


@dataclass
class _Entry(Generic[T]):
    fingerprint: str
    finished: anyio.Event = field(default_factory=anyio.Event)
    done: bool = False
    value: T | None = None
    expires: float = float("inf")


class IdempotentCalls:
    """The remembered answers of writing calls, by (identity, tool, key)."""

    def __init__(self, ttl_s: float = KEY_TTL_S, kept: int = KEYS_KEPT, clock: Callable[[], float] = time.monotonic):
        self.ttl_s = ttl_s
        self.kept = kept
        self._clock = clock
        self._entries: OrderedDict[Scope, _Entry[Any]] = OrderedDict()

    async def run(self, scope: Scope, digest: str, work: Callable[[], Awaitable[T]]) -> tuple[T, bool]:
        """``work()``'s answer and False, or the remembered answer of the same call and True."""
        while (entry := self._current(scope)) is not None:
            if entry.fingerprint != digest:
                raise InvalidArguments(
                    f"This idempotency_key was already used for another {scope[1]} call with different arguments. "
                    "Use a new key for a new write; to retry, send the same arguments with the same key.",
                    {"field": IDEMPOTENCY_KEY},
                )
            if entry.done:
                return cast(T, entry.value), True
            await entry.finished.wait()  # the first call is still running; if it fails, this one runs
        mine: _Entry[T] = _Entry(digest)
        self._entries[scope] = mine
        self._forget_old()
        try:
            value = await work()
        except BaseException:
            if self._entries.get(scope) is mine:
                del self._entries[scope]
            mine.finished.set()
            raise
        mine.value, mine.done, mine.expires = value, True, self._clock() + self.ttl_s
        mine.finished.set()
        return value, False

    def _current(self, scope: Scope) -> _Entry[Any] | None:
        entry = self._entries.get(scope)
        if entry is not None and entry.done and entry.expires <= self._clock():
            del self._entries[scope]
            return None
        return entry

    def _forget_old(self) -> None:
        """Drop expired answers, then the oldest answers past ``kept``; running calls always stay."""
        now = self._clock()
        finished = [s for s, e in self._entries.items() if e.done]
        excess = len(self._entries) - self.kept
        for scope in finished:
            entry = self._entries[scope]
            if entry.expires <= now or excess > 0:
                del self._entries[scope]
                excess -= 1


def key_from_meta(meta: Any) -> str | None:
    """The idempotency key a host or gateway sent in the request's ``_meta``, if any."""
    if not isinstance(meta, dict):
        return None
    acp = meta.get("acp")
    candidates = [acp.get(IDEMPOTENCY_KEY)] if isinstance(acp, dict) else []
    candidates += [value for name, value in meta.items() if isinstance(name, str) and name.endswith("/idempotencyKey")]
    for value in candidates:
        if isinstance(value, str) and 0 < len(value) <= MAX_KEY_CHARS:
            return value
    return None
