"""JSON serialization that keeps numbers exact (spec 8.6).

orjson is fast but stops at 64-bit integers and knows nothing of ``Decimal``; both are
written verbatim through ``orjson.Fragment`` so no digit is lost.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from decimal import Decimal
from itertools import repeat
from typing import Any, BinaryIO

import orjson

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _default(value: Any) -> Any:
    if isinstance(value, Decimal):
        # JSON has no NaN or Infinity; orjson writes non-finite floats as null too.
        return orjson.Fragment(str(value)) if value.is_finite() else None
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


def _exact_bigints(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and not _INT64_MIN <= value <= _INT64_MAX:
        return orjson.Fragment(str(value))
    if isinstance(value, dict):
        return {k: _exact_bigints(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_exact_bigints(v) for v in value]
    return value


def dumps(value: Any) -> bytes:
    """Serialize to compact UTF-8 JSON bytes with exact integers and decimals."""
    try:
        return orjson.dumps(value, default=_default)
    except orjson.JSONEncodeError:
        # Integers beyond 64 bits are rare; walk the value only when they occur.
        return orjson.dumps(_exact_bigints(value), default=_default)


LINE_SEPARATOR = b",\n"
ROWS_PER_LINE = 256
_dumps_fast = functools.partial(orjson.dumps, default=_default)


def write_rows(out: BinaryIO, names: list[str], rows: Sequence[Sequence[Any]]) -> int:
    """Write rows to ``out`` as lines of up to ``ROWS_PER_LINE`` compact JSON objects, each line
    after ``,\\n``; return their size as inline JSON (a comma or bracket a row).

    One orjson call a line, not a row: a call costs as much as the encoding itself, and each
    result holds a 4 KiB allocation. A line's few tens of KiB stay under the allocator's mmap and
    trim thresholds, so memory stays warm from batch to batch. A row with fewer values than
    names leaves its last names out.
    """
    size = 0
    for start in range(0, len(rows), ROWS_PER_LINE):
        objects = list(map(dict, map(zip, repeat(names), rows[start : start + ROWS_PER_LINE])))
        try:
            line = _dumps_fast(objects)
        except orjson.JSONEncodeError:
            line = dumps(objects)  # integers beyond 64 bits are rare: walk the line only then
        out.write(LINE_SEPARATOR)
        out.write(memoryview(line)[1:-1])  # the objects, without the array's brackets
        size += len(line) - 1
    return size


def loads_line(line: bytes) -> list[Any]:
    """The exact rows of one line that :func:`write_rows` wrote (without its separator)."""
    rows: list[Any] = loads_exact(b"[" + line + b"]")
    return rows


def dumps_canonical(value: Any) -> bytes:
    """Compact JSON with sorted keys: the same bytes for equal values (for fingerprints)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str)
    except orjson.JSONEncodeError:  # integers beyond 64 bits
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str).encode()


def dumps_text(value: Any) -> str:
    return dumps(value).decode("utf-8")


loads = orjson.loads


def loads_exact(data: bytes | str) -> Any:
    """Parse JSON keeping every integer and decimal digit (orjson would make floats of them)."""
    return json.loads(data, parse_float=Decimal)
