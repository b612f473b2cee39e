"""Streaming table sink: typed headers, samples for the model, inline or ``table_uri`` (spec 8.5, 8.6).

A connector appends rows as its cursor yields them (inside ``ctx.run_blocking``); the
writer normalizes each cell, infers or enforces column types, keeps the few rows the
model will see, and spills to a file once the table passes ``inline_max_bytes`` so
memory stays flat however large the extraction is.
"""

from __future__ import annotations

import datetime as dt
import functools
import io
import math
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from operator import itemgetter
from pathlib import Path
from typing import Any, BinaryIO

from . import _jsonio as jsonio
from ._tablefiles import TableFiles
from .protocol import COLUMN_TYPES, ColumnType, Header, JsonObject, Sampling
from .values import (
    BINARY,
    DATE,
    DATETIME,
    INTEGER,
    NULL,
    NUMBER,
    STRING,
    ConversionError,
    convert,
    exact_number,
    infer_type,
    normalize,
)

Row = Mapping[str, Any] | Sequence[Any]
# Told each time the writer stored rows (``final`` once, from finish); see CallContext's progress.
RowsListener = Callable[["TableWriter", bool], None]
_NONFINITE = 256  # a float NaN/Infinity delivered as null
_ISO_TEXTS, _ISO_SPACED = "iso", "iso-spaced"  # converter plan entries, next to the column types
_BATCH = 2000  # rows converted and encoded together on the fast path
# A row loop's fetch is bounded by bytes as well as rows (see TableWriter.fetch_size): about this
# much JSON by the widest rows seen so far, so that 1,500 rows of 1 MB never sit in memory together.
FETCH_BYTES = 8 * 1024 * 1024
# A fetch asks for at most this many times the rows measured so far: the first asks for one row, so
# rows wider than any seen yet are never fetched by the thousand.
_FETCH_GROWTH = 8
_INFERRED_PASSES = {
    "i": "v{i}.__class__ is int",
    "f": "(v{i}.__class__ is float and v{i} - v{i} == 0)",
    "s": "(v{i}.__class__ is str and not detect[{i}])",
}
_INFERRED_OTHER = "(temporal({i}, v{i}) if v{i}.__class__ is str else slow({i}, v{i}))"


def _inferred_cell(passes: str) -> str:
    """An inferred column passes ints, finite floats and (once it has seen a plain string) strings
    unchecked only when it already has their kind; a first one takes the per-cell path, which
    records it (the plan changes with the kinds, see TableWriter._plan)."""
    checks = " or ".join(_INFERRED_PASSES[p] for p in passes)
    return f"v{{i}} if ({checks}) else {_INFERRED_OTHER}" if checks else _INFERRED_OTHER


# For each declared type: the expression that passes a driver's usual Python value in one type
# check; anything else (None, NaN, strings to parse…) takes the general per-cell path.
_FAST_CELL = {
    "integer": "v{i} if v{i}.__class__ is int else slow({i}, v{i})",
    "string": "v{i} if v{i}.__class__ is str else slow({i}, v{i})",
    "boolean": "v{i} if v{i}.__class__ is bool else slow({i}, v{i})",
    "json": "v{i} if v{i}.__class__ is dict else slow({i}, v{i})",
    "number": "v{i} if (v{i}.__class__ is int or (v{i}.__class__ is float and v{i} - v{i} == 0) "
    "or (v{i}.__class__ is Decimal and v{i}.is_finite())) else slow({i}, v{i})",
    # Dates and naive date-times stay objects: orjson writes them as isoformat() does, several
    # times faster; the rows kept in memory get the text (see _isoformat_temporal).
    "date": "v{i} if v{i}.__class__ is date else slow({i}, v{i})",
    "datetime": "v{i} if v{i}.__class__ is datetime and v{i}.tzinfo is None else slow({i}, v{i})",
    # An inferred column whose texts (or nulls) this batch are all ISO dates or date-times, already
    # checked over the whole column (see _iso_kind): passed through, or given the "T" separator.
    _ISO_TEXTS: "v{i}",
    _ISO_SPACED: "v{i} if v{i} is None else v{i}.replace(' ', 'T', 1)",
}
_TEXT_OR_NULL = frozenset({str, type(None)})
_ROW_SEQUENCES = frozenset({tuple, list})


def _iso_kind(texts: Sequence[str]) -> tuple[int, bool] | None:
    """DATE when every text is "YYYY-MM-DD", DATETIME when every one is "YYYY-MM-DD[T ]HH:MM:SS"
    (and whether any has the space), else None: the rule of ``_temporal_checker``, checked over a
    column with a few passes in C instead of once a cell."""
    if not texts or set(map(len, texts)) - {10, 19}:
        return None
    joined = "".join(texts)
    count = len(texts)
    try:
        if len(joined) == 10 * count:
            if joined[4::10] == joined[7::10] == "-" * count:
                deque(map(dt.date.fromisoformat, texts), maxlen=0)
                return DATE, False
        elif len(joined) == 19 * count:
            separators = joined[10::19]
            if (
                joined[4::19] == "-" * count
                and joined[13::19] == joined[16::19] == ":" * count
                and not separators.strip(" T")
            ):
                deque(map(dt.datetime.fromisoformat, texts), maxlen=0)
                return DATETIME, " " in separators
    except ValueError:
        pass
    return None


@functools.lru_cache(maxsize=256)
def _batch_converter(plan: tuple[str, ...]) -> Callable[..., list[list[Any]]]:
    """A function converting a batch of rows by a plan of one entry a column: its declared type,
    _ISO_TEXTS / _ISO_SPACED (texts checked for this batch), or for other inferred columns "~" and
    the classes it passes unchecked ("i" int, "f" float, "s" string).

    Generated from the plan alone (no name or value enters the source) and cached by it, since
    compiling one costs more than a small extraction; it converts a row without one Python call
    per cell: the 1M-row extraction benchmark spends most of its Python time here.
    """
    names = ", ".join(f"v{i}" for i in range(len(plan)))
    cells = ", ".join(
        "(" + (_FAST_CELL[t] if t in _FAST_CELL else _inferred_cell(t[1:])).format(i=i) + ")"
        for i, t in enumerate(plan)
    )
    source = f"def convert(rows, slow, detect, temporal):\n    return [[{cells}] for {names}, in rows]\n"
    namespace: dict[str, Any] = {"Decimal": Decimal, "date": dt.date, "datetime": dt.datetime}
    exec(compile(source, "<table-row-converter>", "exec"), namespace)  # noqa: S102 - source built from the plan only
    converter: Callable[..., list[list[Any]]] = namespace["convert"]
    return converter


def _isoformat_temporal(rows: Iterable[list[Any]], indexes: Sequence[int]) -> None:
    """The dates and date-times the fast path left as objects, as ISO text, in rows kept in memory."""
    for row in rows:
        for index in indexes:
            value = row[index]
            if value.__class__ is dt.date or value.__class__ is dt.datetime:
                row[index] = value.isoformat()


class CallCancelled(Exception):
    """Raised inside a worker thread when its call was cancelled; stops the row loop."""


@dataclass(frozen=True)
class ModelView:
    """Per-field view of an event table for the model (spec 8.2.1)."""

    fields: tuple[str, ...]
    max_value_chars: int = 80
    max_rows: int | None = None

    def as_json(self) -> JsonObject:
        out: JsonObject = {"fields": list(self.fields), "max_value_chars": self.max_value_chars}
        if self.max_rows is not None:
            out["max_rows"] = self.max_rows
        return out


@dataclass(frozen=True)
class SampleBudget:
    """How many rows the writer keeps for the model and when it spills to disk."""

    head_rows: int
    spread_rows: int
    inline_max_bytes: int


@dataclass
class TableData:
    """A finished table: typed headers, full rows (inline or file) and the model's samples."""

    name: str
    headers: list[Header]
    row_count: int
    rows: list[JsonObject] | None
    path: Path | None
    head: list[JsonObject]
    spread: list[JsonObject]
    title: str | None = None
    description: str | None = None
    dates: list[str] | None = None
    model_view: ModelView | None = None
    primary: bool = False
    warnings: list[str] = field(default_factory=list)
    capped_at: int | None = None  # the value of the limit that stopped the extraction; None: every row is here
    capped_by: str | None = None  # that limit's config key: "max_rows" or "max_result_bytes"

    @property
    def columns(self) -> list[str]:
        return [h["name"] for h in self.headers]

    def model_rows(self, row_limit: int, sampling: Sampling) -> list[JsonObject]:
        """The rows the model sees under the general rule of spec 8.2."""
        if row_limit <= 0:
            return []
        if self.row_count <= row_limit or sampling == "head" or not self.spread:
            return self.head[:row_limit]
        return _evenly(self.spread, row_limit)

    def iter_rows(self) -> Iterable[JsonObject]:
        """Every row, from memory or from the file (used by tests and the host)."""
        if self.rows is not None:
            yield from self.rows
        elif self.path is not None:
            yield from read_table_file(self.path)


def read_table_file(path: Path) -> list[JsonObject]:
    """Every row of a table file, with exact integers and decimals."""
    data = jsonio.loads_exact(path.read_bytes())
    if not isinstance(data, list):
        raise ValueError("a table file holds a JSON array of objects")
    return data


def _evenly(candidates: list[JsonObject], count: int) -> list[JsonObject]:
    if len(candidates) <= count:
        return list(candidates)
    if count == 1:
        return [candidates[0]]
    last = len(candidates) - 1
    picks = sorted({round(i * last / (count - 1)) for i in range(count)})
    return [candidates[i] for i in picks]


class TableWriter:
    """Accepts rows (mappings, or sequences after :meth:`set_columns`) and builds a :class:`TableData`.

    With ``max_rows`` the writer owns the extraction cap: it keeps the first ``max_rows`` rows,
    drops the rest, and once more rows were offered it is :attr:`capped` and its table says so in
    a warning. ``max_bytes`` (the ``max_result_bytes`` setting) caps the table's JSON size the same
    way: the rows stop at the first batch that reaches it, before memory or disk become the limit.
    A row loop asks :meth:`fetch_size` how much to read next, so it reads at most one row past a
    cap, stops at the source as soon as the table is complete, and fetches batches bounded by
    bytes as well as rows::

        while (size := writer.fetch_size(batch)) and (rows := cursor.fetchmany(size)):
            writer.extend(rows)

    Progress comes with it: when the client asked for progress, the writer tells its call each
    time rows are stored, and the call reports the rows so far (MCP ``notifications/progress``).
    A source that knows more says so in :attr:`expected_rows` (the rows the whole result has)
    and :attr:`pages` (pages read so far) before it hands over the rows.
    """

    def __init__(
        self,
        name: str,
        *,
        budget: SampleBudget,
        files: TableFiles,
        columns: Sequence[Header | str] | None = None,
        title: str | None = None,
        description: str | None = None,
        dates: Sequence[str] | None = None,
        model_view: ModelView | None = None,
        primary: bool = False,
        cancelled: threading.Event | None = None,
        max_rows: int | None = None,
        max_bytes: int | None = None,
        on_rows: RowsListener | None = None,
    ) -> None:
        self.name = name
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self.expected_rows: int | None = None
        self.pages: int | None = None
        self.title = title
        self.description = description
        self.dates = list(dates) if dates is not None else None
        self.model_view = model_view
        self.primary = primary
        self._budget = budget
        self._files = files
        self._cancelled = cancelled or threading.Event()
        self._on_rows = on_rows
        self._names: list[str] = []
        self._index: dict[str, int] = {}
        self._declared: list[ColumnType | None] = []
        self._extra: list[dict[str, str]] = []
        self._kinds: list[int] = []
        self._detect: list[bool] = []
        self._failed: list[bool] = []
        self._warnings: list[str] = []
        self._count = 0
        self._rows: list[list[Any]] | None = []
        # Inline: every row encoded so far, in lines that each start with ",\n". After the spill:
        # the one batch being written, the same buffer reused so that its memory stays warm.
        self._json = io.BytesIO()
        self._bytes = 1  # "[" and "]", minus the comma the first row does not need
        self._encoded = 0  # bytes of JSON encoded so far, inline or spilled
        self._min_width = 0  # fewest columns any encoded row had: a lower count needs a rewrite
        self._path: Path | None = None
        self._file: BinaryIO | None = None
        self._head: list[list[Any]] = []
        self._stride = 1
        self._spread: list[tuple[int, list[Any]]] = []
        self._last: tuple[int, list[Any]] | None = None
        self._finished = False
        self._fast = False  # sequences of the declared width take the batched path
        self._fast_width = 0
        self._inferred: list[int] = []  # the columns without a declared type, for the fast path
        self._temporal: list[int] = []  # declared date and datetime columns, objects on the fast path
        self._capped = False
        self._bytes_full = False  # bytes_written reached max_bytes: any further row is past the cap
        self._row_bytes = 0.0  # the widest rows seen: the largest mean JSON size of a stored batch
        if columns:
            self.set_columns(columns)

    # -- columns -------------------------------------------------------------------------
    def set_columns(self, columns: Sequence[Header | str]) -> None:
        """Declare columns in order; a plain name means "infer the type from the values"."""
        if self._names:
            raise ValueError("columns are already set")
        for column in columns:
            if isinstance(column, str):
                self._add_column(column, None, {})
            else:
                declared = column.get("type")
                if declared not in COLUMN_TYPES:
                    raise ValueError(f"column {column.get('name')!r} has an unknown type {declared!r}")
                extra = {k: str(v) for k, v in column.items() if k in ("role", "description")}
                self._add_column(column["name"], declared, extra)
        if self._names:
            self._inferred = [i for i, declared in enumerate(self._declared) if declared is None]
            self._temporal = [i for i, declared in enumerate(self._declared) if declared in ("date", "datetime")]
            self._fast = True
            self._fast_width = len(self._names)
            self._temporal_check = self._temporal_checker()

    def _add_column(self, name: str, declared: ColumnType | None, extra: dict[str, str]) -> int:
        unique = name
        suffix = 2
        while unique in self._index:
            unique = f"{name}_{suffix}"
            suffix += 1
        if unique != name:
            self._warnings.append(f"Duplicate column name '{name}' renamed to '{unique}'.")
        self._index[unique] = len(self._names)
        self._names.append(unique)
        self._declared.append(declared)
        self._extra.append(extra)
        self._kinds.append(NULL)
        self._detect.append(declared is None)
        self._failed.append(False)
        return len(self._names) - 1

    # -- the extraction cap --------------------------------------------------------------
    @property
    def row_count(self) -> int:
        """Rows kept so far (never more than ``max_rows``)."""
        return self._count

    @property
    def bytes_written(self) -> int:
        """Bytes of JSON the rows so far take (what the table weighs, inline or in its file)."""
        return self._encoded

    @property
    def capped(self) -> bool:
        """More rows than ``max_rows`` were offered: the table is complete at the cap; stop fetching."""
        return self._capped

    def fetch_size(self, batch: int) -> int:
        """How many rows a row loop should fetch next: at most ``batch``, 0 once capped.

        Fewer when rows are wide: a fetch holds about :data:`FETCH_BYTES` of JSON by the widest rows
        seen so far, and at most eight times the rows measured so far (the first fetch is one row), so
        memory stays bounded by bytes whatever the width of the rows. Fewer near a cap: it asks for
        one row past ``max_rows`` or ``max_bytes``, which tells a result that fits exactly (nothing
        cut) from a longer one, and is dropped.
        """
        if self._capped:
            return 0
        size = min(batch, max(self._count * _FETCH_GROWTH, 1))
        if self._row_bytes:
            size = min(size, max(int(FETCH_BYTES / self._row_bytes), 1))
        if self.max_bytes is not None and self._row_bytes and not self._bytes_full:
            size = min(size, max(math.ceil((self.max_bytes - self._encoded) / self._row_bytes), 1))
        room = self._room()
        return size if room is None else min(size, room + 1)

    def _room(self) -> int | None:
        """Rows the caps still let in; None: no cap."""
        if self._bytes_full:
            return 0
        return None if self.max_rows is None else max(self.max_rows - self._count, 0)

    def _within_cap(self, rows: Iterable[Row]) -> Iterable[Row]:
        room = self._room()
        if room is None:
            return rows
        if isinstance(rows, (list, tuple)):
            if len(rows) > room:
                self._capped = True
                return rows[:room]
            return rows
        return self._take(rows, room)

    def _take(self, rows: Iterable[Row], room: int) -> Iterator[Row]:
        for row in rows:
            if room == 0:
                self._capped = True
                return
            room -= 1
            yield row

    # -- rows ----------------------------------------------------------------------------
    def append(self, row: Row) -> None:
        if self._cancelled.is_set():
            raise CallCancelled
        if self._room() == 0:
            self._capped = True
            return
        if isinstance(row, Mapping):
            values: list[Any] = [None] * len(self._names)
            for key, value in row.items():
                index = self._index.get(key if isinstance(key, str) else str(key))
                if index is None:
                    index = self._add_column(str(key), None, {})
                    values.append(None)
                values[index] = self._cell(index, value)
        else:
            if len(row) != len(self._names):
                raise ValueError(f"row has {len(row)} values for {len(self._names)} columns")
            values = [self._cell(i, v) for i, v in enumerate(row)]
        self._store(values)

    def extend(self, rows: Iterable[Row]) -> None:
        """Append many rows; tuples or lists of declared columns take a batched fast path."""
        rows = self._within_cap(rows)
        if not self._fast or self._fast_width != len(self._names):
            for row in rows:
                self.append(row)
            return
        width = self._fast_width
        if type(rows) is list and set(map(type, rows)) <= _ROW_SEQUENCES and set(map(len, rows)) <= {width}:
            for start in range(0, len(rows), _BATCH):  # a driver's fetchmany: checked in C, not row by row
                if self._bytes_full:  # a large page passed max_bytes part way
                    self._capped = True
                    return
                self._convert_and_store(rows[start : start + _BATCH])
            return
        batch: list[Sequence[Any]] = []
        for row in rows:
            if self._bytes_full:
                self._capped = True
                return
            if (type(row) is tuple or type(row) is list) and len(row) == width:
                batch.append(row)
                if len(batch) >= _BATCH:
                    self._convert_and_store(batch)
                    batch = []
            else:
                self._convert_and_store(batch)
                batch = []
                self.append(row)
        self._convert_and_store(batch)

    def _convert_and_store(self, batch: list[Sequence[Any]]) -> None:
        if not batch:
            return
        if self._cancelled.is_set():
            raise CallCancelled
        convert_batch = _batch_converter(self._plan(batch))
        converted = convert_batch(batch, self._cell, self._detect, self._temporal_check)
        self._store_batch(converted, width=self._fast_width)

    def _plan(self, batch: list[Sequence[Any]]) -> tuple[str, ...]:
        """The converter plan of a batch (see _batch_converter): for each inferred column, either its
        texts checked here as ISO dates over the whole column, or the classes whose kinds it has."""
        plan: list[str] = [t or "" for t in self._declared]
        for index in self._inferred:
            kinds = self._kinds[index]
            if self._detect[index] and not kinds & ~(DATE | DATETIME | _NONFINITE):
                iso = self._iso_texts(batch, index)
                if iso is not None:
                    kind, spaced = iso
                    self._kinds[index] |= kind
                    plan[index] = _ISO_SPACED if spaced else _ISO_TEXTS
                    continue
            passes = "i" if kinds & INTEGER else ""
            passes += "f" if kinds & NUMBER else ""
            passes += "s" if kinds & STRING else ""
            plan[index] = "~" + passes
        return tuple(plan)

    @staticmethod
    def _iso_texts(batch: list[Sequence[Any]], index: int) -> tuple[int, bool] | None:
        """Whether a column's texts (and nulls) in this batch are all ISO dates or date-times: the
        rule of :meth:`_temporal_checker`, checked over the column in C rather than once a cell."""
        values = list(map(itemgetter(index), batch))
        classes = set(map(type, values))
        if str not in classes or not classes <= _TEXT_OR_NULL:
            return None
        return _iso_kind(values if len(classes) == 1 else [v for v in values if v is not None])

    def _temporal_checker(self) -> Callable[[int, str], Any]:
        """For a string in a column still being tested for dates: the common ISO shapes, checked
        without a regex. SQLite and CSV-like sources deliver dates as text, and a million of them
        through the general path took seconds. Anything unusual still takes the general path.
        (A closure over locals: it runs once per cell.)"""
        kinds, detect, general = self._kinds, self._detect, self._cell
        parse_date, parse_datetime = dt.date.fromisoformat, dt.datetime.fromisoformat

        def check(index: int, text: str) -> Any:
            if not detect[index]:  # a plain string made it a string column earlier in this batch
                kinds[index] |= STRING
                return text
            size = len(text)
            if size == 10 and text[4] == "-" and text[7] == "-":
                try:
                    parse_date(text)
                except ValueError:
                    return general(index, text)
                kinds[index] |= DATE
                return text
            if size == 19 and text[4] == "-" and text[10] in " T" and text[13] == ":" and text[16] == ":":
                try:
                    parse_datetime(text)
                except ValueError:
                    return general(index, text)
                kinds[index] |= DATETIME
                return text if text[10] == "T" else f"{text[:10]}T{text[11:]}"
            return general(index, text)

        return check

    def _cell(self, index: int, value: Any) -> Any:
        declared = self._declared[index]
        if value is None:
            return None
        if _non_finite(value):
            self._kinds[index] |= _NONFINITE  # any cell may be null (spec 8.6); JSON has no NaN
            return None
        if declared is not None and not self._failed[index]:
            if isinstance(value, (bytes, bytearray, memoryview)):
                self._kinds[index] |= BINARY  # delivered as base64 text, with a warning
            try:
                return convert(value, declared)
            except ConversionError:
                self._failed[index] = True
        normalized, kind = normalize(value, self._detect[index])
        if kind == STRING and self._detect[index]:
            self._detect[index] = False  # spec 8.6: a plain string makes the column string
        self._kinds[index] |= kind
        return normalized

    def _store(self, values: list[Any]) -> None:
        self._store_batch([values])

    def _store_batch(self, batch: list[list[Any]], width: int | None = None) -> None:
        """Sample, size and encode rows; ``width`` says every row has that many values."""
        if not batch:
            return
        first = self._count
        self._count += len(batch)
        head_room = self._budget.head_rows - len(self._head)
        kept = batch[:head_room] if head_room > 0 else []
        self._head.extend(kept)
        if self._budget.spread_rows:
            # Every row whose index is a multiple of the stride, visited by jumps (the stride
            # doubles, and the candidates halve, whenever they pass twice the budget).
            index = -(-first // self._stride) * self._stride
            while index < self._count:
                self._spread.append((index, batch[index - first]))
                kept.append(batch[index - first])
                if len(self._spread) > 2 * self._budget.spread_rows:
                    self._spread = self._spread[::2]
                    self._stride *= 2
                index = (index // self._stride + 1) * self._stride
            self._last = (self._count - 1, batch[-1])
            kept.append(batch[-1])
        if self._temporal:
            _isoformat_temporal(batch if self._file is None else kept, self._temporal)
        narrowest = width if width is not None else min(len(v) for v in batch)
        if first == 0 or narrowest < self._min_width:
            self._min_width = narrowest
        buffer = self._json
        if self._file is not None:
            buffer.seek(0)
        size = jsonio.write_rows(buffer, self._names, batch)
        self._encoded += size
        self._row_bytes = max(self._row_bytes, size / len(batch))
        if self.max_bytes is not None and self._encoded >= self.max_bytes:
            self._bytes_full = True
        if self._file is not None:
            with buffer.getbuffer() as view, view[: buffer.tell()] as encoded:
                self._file.write(encoded)
        else:
            assert self._rows is not None
            self._rows.extend(batch)
            self._bytes += size
            if self._bytes > self._budget.inline_max_bytes:
                self._spill()
        if self._on_rows is not None:
            self._on_rows(self, False)

    def _spill(self) -> None:
        path, handle = self._files.create()
        self._path, self._file = path, handle
        end = self._json.tell()
        with self._json.getbuffer() as view, view[1:end] as encoded:
            handle.write(b"[")  # and the first line's separator without its comma
            handle.write(encoded)
        self._rows = None

    # -- finish --------------------------------------------------------------------------
    def discard(self) -> None:
        """Drop a partial table (the call failed or was cancelled)."""
        self._finished = True
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._path is not None:
            self._path.unlink(missing_ok=True)
            self._path = None

    def finish(self, result_rows: int | None = None) -> TableData:
        """The finished table. ``result_rows``: how many rows the whole result has, when the source
        says (a BigQuery job does); the ``max_rows`` warning names it."""
        if self._finished:
            raise RuntimeError("table already finished")
        self._finished = True
        if self._on_rows is not None:
            self._on_rows(self, True)
        types = [self._final_type(i) for i in range(len(self._names))]
        fixers = self._fixers(types)
        width = len(self._names)
        fix = _row_fixer(fixers, width)
        headers: list[Header] = []
        for name, column_type, extra in zip(self._names, types, self._extra, strict=True):
            header: Header = {"name": name, "type": column_type}
            if "role" in extra:
                header["role"] = extra["role"]  # type: ignore[typeddict-item]
            if "description" in extra:
                header["description"] = extra["description"]
            headers.append(header)

        rows: list[JsonObject] | None = None
        if self._file is None:
            assert self._rows is not None
            fixed = [fix(r) for r in self._rows]
            inline = [_exact_for_meta(r) for r in fixed]
            if any(r is None for r in inline):
                # A decimal a float would change: only the file keeps its digits (spec 8.6).
                self._spill_fixed(fixed)
            else:
                rows = [dict(zip(self._names, r, strict=True)) for r in inline if r is not None]
        else:
            self._file.write(b"\n]\n")
            self._file.close()
            self._file = None
            if fixers or self._min_width < width:
                self._rewrite_file(fix)
        self._rows, self._json = None, io.BytesIO()

        def as_dict(values: list[Any]) -> JsonObject:
            return dict(zip(self._names, fix(values), strict=True))

        spread_rows = [v for _, v in self._spread]
        if self._last is not None and (not self._spread or self._spread[-1][0] != self._last[0]):
            spread_rows.append(self._last[1])
        return TableData(
            name=self.name,
            headers=headers,
            row_count=self._count,
            rows=rows,
            path=self._path,
            head=[as_dict(v) for v in self._head],
            spread=[as_dict(v) for v in spread_rows],
            title=self.title,
            description=self.description,
            dates=self.dates,
            model_view=self.model_view,
            primary=self.primary,
            warnings=self._cap_warnings(result_rows) + self._warnings + self._type_warnings(types),
            capped_at=(self.max_bytes if self._bytes_full else self.max_rows) if self._capped else None,
            capped_by=("max_result_bytes" if self._bytes_full else "max_rows") if self._capped else None,
        )

    def _cap_warnings(self, result_rows: int | None) -> list[str]:
        if not self._capped:
            return []
        if self._bytes_full:
            return [
                f"The result passed max_result_bytes ({self.max_bytes:,} bytes of JSON) after {self._count:,} rows; "
                "the extraction stopped there. Narrow the query: select fewer or shorter columns, add filters, or "
                "aggregate; or ask the user to raise max_result_bytes."
            ]
        size = (
            f"{result_rows} rows, more than max_rows ({self.max_rows})"
            if result_rows is not None
            else f"more than max_rows ({self.max_rows}) rows"
        )
        return [
            f"The result has {size}; the extraction stopped there. Add filters or aggregate, or ask the user "
            "to raise max_rows."
        ]

    def _final_type(self, index: int) -> ColumnType:
        declared = self._declared[index]
        if self._failed[index]:
            return "string"
        if declared is not None:
            return declared
        return infer_type(self._kinds[index] & ~_NONFINITE)

    def _fixers(self, types: list[ColumnType]) -> dict[int, Callable[[Any], Any]]:
        fixers: dict[int, Callable[[Any], Any]] = {}
        for i, column_type in enumerate(types):
            kinds = self._kinds[i] & ~(_NONFINITE | BINARY)
            if self._failed[i]:
                fixers[i] = _stringify
            elif self._declared[i] is None:
                if column_type == "datetime" and kinds & DATE:
                    fixers[i] = _date_to_datetime
                elif column_type == "string" and kinds & ~STRING:
                    fixers[i] = _stringify
        return fixers

    def _type_warnings(self, types: list[ColumnType]) -> list[str]:
        warnings = []
        for i, name in enumerate(self._names):
            if self._kinds[i] & BINARY:
                warnings.append(f"Column '{name}' holds binary data; it is delivered as base64 text.")
            if self._failed[i]:
                warnings.append(
                    f"Column '{name}' does not fit its declared type {self._declared[i]}; it is delivered as string."
                )
            if self._kinds[i] & _NONFINITE:
                warnings.append(f"Column '{name}' had NaN or infinite values; they are delivered as null.")
        return warnings

    def _spill_fixed(self, rows: list[list[Any]]) -> None:
        path, handle = self._files.create()
        with handle:
            handle.write(b"[\n")
            handle.write(b",\n".join(jsonio.dumps(dict(zip(self._names, r, strict=True))) for r in rows))
            handle.write(b"\n]\n")
        self._path = path

    def _rewrite_file(self, fix: Callable[[list[Any]], list[Any]]) -> None:
        assert self._path is not None
        old_path = self._path
        new_path, handle = self._files.create()
        with handle, old_path.open("rb") as source:
            handle.write(b"[")
            first = True
            for raw_line in source:  # line by line, so memory stays flat however large the file
                line = raw_line.strip().rstrip(b",")
                if line in (b"[", b"]", b""):
                    continue
                rows = [fix([record.get(n) for n in self._names]) for record in jsonio.loads_line(line)]
                encoded = io.BytesIO()
                jsonio.write_rows(encoded, self._names, rows)
                with encoded.getbuffer() as view, view[1 if first else 0 :] as lines:
                    handle.write(lines)  # the first line's separator without its comma
                first = False
            handle.write(b"\n]\n")
        os.replace(new_path, old_path)


def _non_finite(value: Any) -> bool:
    return (isinstance(value, float) and not math.isfinite(value)) or (
        isinstance(value, Decimal) and not value.is_finite()
    )


def _stringify(value: Any) -> Any:
    return None if value is None else convert(value, "string")


def _date_to_datetime(value: Any) -> Any:
    return value + "T00:00:00" if isinstance(value, str) and len(value) == 10 else value


def _row_fixer(fixers: dict[int, Callable[[Any], Any]], width: int) -> Callable[[list[Any]], list[Any]]:
    items = sorted(fixers.items())

    def fix(values: list[Any]) -> list[Any]:
        if len(values) < width:
            values = values + [None] * (width - len(values))
        if not items:
            return values
        values = list(values)
        for index, fixer in items:
            values[index] = fixer(values[index])
        return values

    return fix


def _exact_for_meta(values: list[Any]) -> list[Any] | None:
    """Replace decimals by lossless ints/floats for the SDK's serializer; None if one is lossy."""
    if not any(isinstance(v, Decimal) for v in values):
        return values
    out = []
    for value in values:
        exact = exact_number(value) if isinstance(value, Decimal) else value
        if isinstance(exact, Decimal):
            return None
        out.append(exact)
    return out
