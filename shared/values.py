"""Value normalization and type inference for ``system_data`` (spec 8.6).

Rules kept here, in one place:

* 64-bit (and larger) integers stay exact JSON integers.
* ``Decimal`` values keep their exact digits: they stay ``Decimal`` until serialization,
  where :func:`shared._jsonio.dumps` writes their digits verbatim.
* Naive timestamps stay naive (no invented time zone); aware ones become UTC with ``Z``.
* A column that mixes ``integer`` and ``number`` is ``number``; ``date`` and ``datetime``
  is ``datetime``; any other mix is ``string``. Columns with no values are ``string``.
* Binary values become base64 strings (the caller reports a warning).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from .protocol import ColumnType

# Kinds are bit flags so a column's observed kinds fit in one int.
NULL: Final = 0
INTEGER: Final = 1
NUMBER: Final = 2
BOOLEAN: Final = 4
DATE: Final = 8
DATETIME: Final = 16
STRING: Final = 32
JSON: Final = 64
BINARY: Final = 128  # a STRING that came from bytes; only used for the warning

KIND_OF_TYPE: Final[dict[str, int]] = {
    "integer": INTEGER,
    "number": NUMBER,
    "boolean": BOOLEAN,
    "date": DATE,
    "datetime": DATETIME,
    "string": STRING,
    "json": JSON,
}

_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)(Z|[+-]\d{2}:?\d{2})?$")


def infer_type(kinds: int) -> ColumnType:
    """The column type for a set of observed kinds (spec 8.6 mixing rules)."""
    kinds &= ~BINARY
    if kinds in (NULL, STRING):
        return "string"
    if kinds == INTEGER:
        return "integer"
    if kinds & ~(INTEGER | NUMBER) == 0:
        return "number"
    if kinds == BOOLEAN:
        return "boolean"
    if kinds == DATE:
        return "date"
    if kinds & ~(DATE | DATETIME) == 0:
        return "datetime"
    if kinds == JSON:
        return "json"
    return "string"


def format_datetime(value: dt.datetime) -> str:
    """ISO 8601; aware values in UTC with ``Z``, naive values left naive."""
    if value.tzinfo is not None and value.utcoffset() is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return value.isoformat() + "Z"
    return value.isoformat()


def parse_temporal_string(text: str) -> tuple[int, str] | None:
    """Recognize ISO-like date and datetime strings; return (kind, canonical text)."""
    if len(text) == 10 and _DATE_RE.match(text):
        try:
            dt.date.fromisoformat(text)
        except ValueError:
            return None
        return DATE, text
    if 16 <= len(text) <= 35:
        match = _DATETIME_RE.match(text)
        if match is None:
            return None
        try:
            parsed = dt.datetime.fromisoformat(_fit_fraction(text.replace(" ", "T", 1)))
        except ValueError:
            return None
        return DATETIME, format_datetime(parsed)
    return None


def _fit_fraction(text: str) -> str:
    # fromisoformat accepts at most 6 fractional digits; some engines give 9.
    return re.sub(r"(\.\d{6})\d+", r"\1", text)


def json_safe(value: Any) -> Any:
    """Make a nested JSON value serializable by any encoder (used for ``json`` cells)."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Decimal):
        return exact_number(value)
    if isinstance(value, dt.datetime):
        return format_datetime(value)
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    return str(value)


def exact_number(value: Decimal) -> int | float | Decimal | None:
    """An ``int``/``float`` when that is lossless, else the ``Decimal`` itself."""
    if not value.is_finite():
        return None
    if value == value.to_integral_value():
        return int(value)
    as_float = float(value)
    if Decimal(repr(as_float)) == value:
        return as_float
    return value


def normalize(value: Any, detect_temporal: bool) -> tuple[Any, int]:
    """Normalize one cell by its own Python type; return (json value, kind)."""
    cls = type(value)
    if value is None:
        return None, NULL
    if cls is str:
        if detect_temporal:
            temporal = parse_temporal_string(value)
            if temporal is not None:
                return temporal[1], temporal[0]
        return value, STRING
    if cls is int:
        return value, INTEGER
    if cls is float:
        return (value, NUMBER) if math.isfinite(value) else (None, NULL)
    if cls is bool:
        return value, BOOLEAN
    if cls is Decimal:
        return (value, NUMBER) if value.is_finite() else (None, NULL)
    if isinstance(value, dt.datetime):
        return format_datetime(value), DATETIME
    if isinstance(value, dt.date):
        return value.isoformat(), DATE
    if isinstance(value, (dict, list, tuple)):
        return json_safe(value), JSON
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii"), STRING | BINARY
    if isinstance(value, bool):
        return bool(value), BOOLEAN
    if isinstance(value, int):
        return int(value), INTEGER
    if isinstance(value, float):
        return (float(value), NUMBER) if math.isfinite(value) else (None, NULL)
    if isinstance(value, dt.time):
        return value.isoformat(), STRING
    return str(value), STRING


class ConversionError(ValueError):
    """A value cannot take the declared column type."""


def _to_integer(value: Any) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"[+-]?\d+", text):
            return int(text)
    raise ConversionError


def _to_number(value: Any) -> int | float | Decimal:
    if isinstance(value, bool):
        raise ConversionError
    if isinstance(value, (int, Decimal)):
        if isinstance(value, Decimal) and not value.is_finite():
            raise ConversionError
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ConversionError
        return value
    if isinstance(value, str):
        try:
            number = Decimal(value.strip())
        except InvalidOperation:
            raise ConversionError from None
        if not number.is_finite():
            raise ConversionError
        return int(number) if re.fullmatch(r"[+-]?\d+", value.strip()) else number
    raise ConversionError


_TRUE = {"true", "t", "1", "yes", "y"}
_FALSE = {"false", "f", "0", "no", "n"}


def _to_boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ConversionError


def _to_date(value: Any) -> str:
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0) and value.tzinfo is None:
            return value.date().isoformat()
        raise ConversionError
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"\d{8}", text):
            text = f"{text[:4]}-{text[4:6]}-{text[6:]}"
        if not _DATE_RE.match(text):
            raise ConversionError
        try:
            return dt.date.fromisoformat(text).isoformat()
        except ValueError:
            raise ConversionError from None
    raise ConversionError


def _to_datetime(value: Any) -> str:
    if isinstance(value, dt.datetime):
        return format_datetime(value)
    if isinstance(value, dt.date):
        return value.isoformat() + "T00:00:00"
    if isinstance(value, str):
        temporal = parse_temporal_string(value.strip())
        if temporal is None:
            raise ConversionError
        kind, text = temporal
        return text + "T00:00:00" if kind == DATE else text
    raise ConversionError


def _to_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, default=str)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dt.datetime):
        return format_datetime(value)
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return str(value)


def _to_json(value: Any) -> Any:
    if isinstance(value, (dict, list, tuple)):
        return json_safe(value)
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            raise ConversionError from None
        if isinstance(parsed, (dict, list)):
            return parsed
    raise ConversionError


CONVERTERS: Final[dict[str, Callable[[Any], Any]]] = {
    "integer": _to_integer,
    "number": _to_number,
    "boolean": _to_boolean,
    "date": _to_date,
    "datetime": _to_datetime,
    "string": _to_string,
    "json": _to_json,
}


def convert(value: Any, column_type: ColumnType) -> Any:
    """Convert one (already normalized or raw) value to ``column_type``; None stays None."""
    if value is None:
        return None
    return CONVERTERS[column_type](value)
