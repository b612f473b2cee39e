"""JSON serialization that keeps numbers exact (spec 8.6).

orjson is fast but stops at 64-bit integers and knows nothing of ``Decimal``; both are
written verbatim through ``orjson.Fragment`` so no digit is lost.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

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


def dumps_rows(names: list[str], rows: list[list[Any]]) -> list[bytes]:
    """Each row as a compact JSON object, in one pass (the table writer's hot loop)."""
    try:
        return [orjson.dumps(dict(zip(names, values, strict=False)), default=_default) for values in rows]
    except orjson.JSONEncodeError:
        return [dumps(dict(zip(names, values, strict=False))) for values in rows]


def dumps_text(value: Any) -> str:
    return dumps(value).decode("utf-8")


loads = orjson.loads


def loads_exact(data: bytes | str) -> Any:
    """Parse JSON keeping every integer and decimal digit (orjson would make floats of them)."""
    return json.loads(data, parse_float=Decimal)
