"""What the model sees, in characters of ``content[0].text``: the value cap and the ``model_max_chars`` budget.

``model_max_chars`` is an extension field (spec 12.2 lets clients ignore it). Two rules shape
``model_response`` before it is serialized:

* **Value cap**, always: each value in an extraction's sampled rows is cut to
  :data:`~shared.protocol.MODEL_MAX_VALUE_CHARS` characters, ending in "…"; an object or array
  whose JSON is longer becomes that JSON, cut the same way (as spec 8.2.1's ``model_view`` does).
  ``system_data`` keeps every value whole.
* **Budget**, when set: the serialized ``model_response`` fits in ``model_max_chars`` characters
  and stays valid JSON, since values are cut, never the text. An extraction cuts values shorter
  (down to :data:`~shared.protocol.MODEL_MIN_VALUE_CHARS`) before it drops sampled rows, shares the
  rows fairly between the tables of a multi-table answer, and keeps its notice, columns and
  counts; its description, warnings and extras give way when the rows cannot all fit (down to
  half the budget) and again when not even zero rows fit. Autocontext blocks keep their ids and
  say ``"truncated": true`` when shortened; an error keeps its code and name whole.

Row sizes are computed from each cell's length, not by serializing candidates, and the searches
over the value cap and the row count are binary, so a binding budget costs a few serializations
of the response without its rows (see :class:`_Sample`). What was cut is reported in
``system_info.model_trim`` (:class:`Trim`).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from operator import itemgetter
from typing import Any

import orjson

from . import _jsonio as jsonio
from .protocol import MODEL_MIN_VALUE_CHARS, JsonObject

MARKER = "…"
# Exactly what JSON (orjson) escapes; every other character is written as itself, one character.
_ESCAPED = re.compile(r'["\\\x00-\x1f]')
# Generic shrinking goes by levels: strings of at most 8·2^level characters, arrays and objects of
# at most 2^level items. Level 17 keeps strings up to 1 M characters and 128 K items.
_LEVELS = 18


def chars(value: Any) -> int:
    """Characters of ``value`` serialized as ``content[0].text`` is (compact JSON, UTF-8 unescaped)."""
    encoded = jsonio.dumps(value)
    return len(encoded) if encoded.isascii() else len(encoded.decode("utf-8"))


def cut_text(text: str, max_chars: int) -> str:
    """``text`` in at most ``max_chars`` characters, ending in "…" when it was cut."""
    if len(text) <= max_chars:
        return text
    return text[: max(max_chars - 1, 0)] + MARKER


def cut_value(value: Any, max_chars: int) -> Any:
    """One cell as the model sees it: strings cut with "…", objects and arrays kept when their JSON
    fits and otherwise given as that JSON, cut; other values whole. The same object when not cut."""
    cls = value.__class__
    if cls is str:
        return value if len(value) <= max_chars else value[: max_chars - 1] + MARKER
    if cls is dict or cls is list:
        text = jsonio.dumps_text(value)
        return value if len(text) <= max_chars else text[: max_chars - 1] + MARKER
    return value


def cap_rows(
    rows: Sequence[JsonObject], max_chars: int, columns: Sequence[str] | None = None
) -> tuple[list[JsonObject], int]:
    """``rows`` with every value cut to ``max_chars`` (new dicts only where a value was cut) and how
    many values were cut. Rows are shared with ``system_data``, so they are never changed in place.
    ``columns`` names the only columns that can hold texts, objects or arrays (None: any)."""
    if columns is not None:
        columns = [name for name in columns if _may_need_cuts(rows, name, max_chars)]
        if not columns:
            return list(rows), 0
    out: list[JsonObject] = []
    cut = 0
    for row in rows:
        values: Iterable[Any] = row.values() if columns is None else map(row.get, columns)
        for value in values:
            cls = value.__class__
            if (cls is str and len(value) > max_chars) or cls is dict or cls is list:
                break
        else:
            out.append(row)
            continue
        shown: JsonObject = {}
        row_cut = 0
        for key, value in row.items():
            shown[key] = new = cut_value(value, max_chars)
            row_cut += new is not value
        out.append(shown if row_cut else row)
        cut += row_cut
    return out, cut


_TEXT_OR_NULL = frozenset({str, type(None)})


def _may_need_cuts(rows: Sequence[JsonObject], name: str, max_chars: int) -> bool:
    """Whether a column may hold a value to cut: one pass over it in C when it holds only texts and
    nulls, as a string column does; anything else (objects, a missing key) is looked at cell by cell."""
    try:
        values = list(map(itemgetter(name), rows))
    except KeyError:
        return True
    if not set(map(type, values)) <= _TEXT_OR_NULL:
        return True
    return max(map(len, filter(None, values)), default=0) > max_chars


def shrink(value: Any, level: int) -> Any:
    """``value`` with strings of at most 8·2^level characters and arrays and objects of at most
    2^level items; each cut is marked ("…", ``"… N more"``, a ``"…"`` key). The same object when
    nothing was cut."""
    return _shrink(value, 8 << level, 1 << level)


def _shrink(value: Any, max_chars: int, max_items: int) -> Any:
    cls = value.__class__
    if cls is str:
        return value if len(value) <= max_chars else value[: max_chars - 1] + MARKER
    if cls is list:
        items = [_shrink(v, max_chars, max_items) for v in value[:max_items]]
        if len(value) > max_items:
            items.append(f"{MARKER} {len(value) - max_items} more")
        elif all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return items
    if cls is dict:
        shown = {k: _shrink(v, max_chars, max_items) for k, v in list(value.items())[:max_items]}
        if len(value) > max_items:
            shown[MARKER] = f"{len(value) - max_items} more"
        elif all(shown[k] is v for k, v in value.items()):
            return value
        return shown
    return value


def search_level(make: Callable[[int], Any], fits: Callable[[Any], bool]) -> Any | None:
    """The least shrunk ``make(level)`` that ``fits`` (a binary search: larger levels are larger), or None."""
    best = None
    low, high = 0, _LEVELS - 1
    while low <= high:
        level = (low + high) // 2
        candidate = make(level)
        if fits(candidate):
            best, low = candidate, level + 1
        else:
            high = level - 1
    return best


def largest(low: int, high: int, fits: Callable[[int], bool]) -> int:
    """The largest value in ``[low, high]`` that ``fits`` (monotone), or ``low``."""
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def cut_to_fit(text: str, max_json_chars: int) -> str:
    """The longest ``cut_text(text, n)`` whose JSON string takes at most ``max_json_chars`` characters."""
    if chars(text) <= max_json_chars:
        return text
    length = max_json_chars - 2
    while length > 1:
        candidate = cut_text(text, length)
        over = chars(candidate) - max_json_chars
        if over <= 0:
            return candidate
        length -= over
    return MARKER


@dataclass
class Trim:
    """What the value cap and the budget changed in one answer (``system_info.model_trim``)."""

    max_value_chars: int | None = None  # the cap that cut values, when one did
    values_shortened: int = 0
    rows_dropped: int = 0
    parts_shortened: list[str] = field(default_factory=list)

    def report(self, text_chars: int) -> JsonObject | None:
        """The ``model_trim`` object, or None when nothing was cut."""
        if not (self.values_shortened or self.rows_dropped or self.parts_shortened):
            return None
        out: JsonObject = {}
        if self.values_shortened:
            out["max_value_chars"] = self.max_value_chars
            out["values_shortened"] = self.values_shortened
        if self.rows_dropped:
            out["rows_dropped"] = self.rows_dropped
        if self.parts_shortened:
            out["parts_shortened"] = list(self.parts_shortened)
        out["text_chars"] = text_chars
        return out


@dataclass
class Fitted:
    """A ``model_response``, its ``content[0].text`` and what was cut to get there."""

    model: Any
    text: str
    trim: Trim = field(default_factory=Trim)


def as_is(model: Any) -> Fitted:
    """An answer nothing was cut from."""
    return Fitted(model, jsonio.dumps_text(model))


# -- generic answers: info tools, errors, autocontext ----------------------------------------------------------
def fit_json(value: Any, budget: int | None, part: str = "data") -> Fitted:
    """Free JSON (an info tool's answer) within ``budget``: long strings and arrays are cut, marked."""
    fitted = as_is(value)
    if budget is None or len(fitted.text) <= budget:
        return fitted
    shrunk = search_level(lambda level: shrink(value, level), lambda v: chars(v) <= budget)
    if shrunk is None:
        shrunk = f"{MARKER} ({len(fitted.text)} characters left out to fit the model budget of {budget})"
    return Fitted(shrunk, jsonio.dumps_text(shrunk), Trim(parts_shortened=[part]))


def fit_error(payload: Mapping[str, Any], budget: int | None) -> Fitted:
    """``{"error": payload}`` within ``budget`` (spec 12.1): ``data`` gives way first, then the
    message is cut; ``code`` and ``name`` stay whole."""
    fitted = as_is({"error": payload})
    if budget is None or len(fitted.text) <= budget:
        return fitted
    trim = Trim()

    def build(message: str, data: Any) -> JsonObject:
        error: JsonObject = {"code": payload["code"], "name": payload["name"], "message": message}
        if data is not None:
            error["data"] = data
        return {"error": error}

    message, data = payload["message"], payload.get("data")
    if data is not None:
        trim.parts_shortened.append("data")
        data = search_level(lambda level: shrink(data, level), lambda d: chars(build(message, d)) <= budget)
    if chars(build(message, data)) > budget:
        trim.parts_shortened.append("message")
        message = cut_to_fit(message, budget - chars(build("", data)) + 2)
    model = build(message, data)
    return Fitted(model, jsonio.dumps_text(model), trim)


def _shrink_entry(entry: Mapping[str, Any], level: int, mark: bool) -> Mapping[str, Any]:
    """One block (or block descriptor) shrunk to ``level``; its id always stays whole (spec 7.3)."""
    if level < 0:
        return {"id": entry["id"], **({"truncated": True} if mark else {})}
    shown = {k: (v if k == "id" else shrink(v, level)) for k, v in entry.items()}
    if all(shown[k] is v for k, v in entry.items()):
        return entry
    if mark:
        shown["truncated"] = True
    return shown


def shrink_blocks(blocks: Sequence[Mapping[str, Any]], level: int, mark: bool = True) -> Sequence[Mapping[str, Any]]:
    """Blocks with their descriptions, data and errors shrunk to ``level`` (one level for all: fair);
    level -1 leaves only the ids. The same list when nothing was cut."""
    shown = [_shrink_entry(block, level, mark) for block in blocks]
    return blocks if all(new is old for new, old in zip(shown, blocks, strict=True)) else shown


def shrink_parts(parts: JsonObject, level: int) -> JsonObject:
    """The parts of an extraction that may give way, shrunk alike; attached autocontext keeps its block
    ids (spec 7.5). Level -1 is the least there is: texts become "…", optional parts None (left out)."""
    shown: JsonObject = {}
    for key, value in parts.items():
        if key == "autocontext":
            shown[key] = shrink_blocks(value, level)
        elif level >= 0:
            shown[key] = shrink(value, level)
        else:
            shown[key] = MARKER if isinstance(value, str) else None
    return shown


def fit_blocks(blocks: Sequence[Mapping[str, Any]], budget: int | None, mark: bool = True) -> Fitted:
    """Autocontext blocks (spec 7.3) or block descriptors (7.2) within ``budget``: their data arrays
    and long strings are cut, marked, and with ``mark`` a shortened block says ``"truncated": true``.
    No block and no id is ever dropped."""
    fitted = as_is(blocks)
    if budget is None or len(fitted.text) <= budget:
        return fitted
    shrunk = search_level(lambda level: shrink_blocks(blocks, level, mark), lambda b: chars(b) <= budget)
    if shrunk is None:  # not even the smallest contents fit: the ids remain
        shrunk = shrink_blocks(blocks, -1, mark)
    return Fitted(shrunk, jsonio.dumps_text(shrunk), Trim(parts_shortened=["blocks"]))


# -- extractions (spec 8.2, 8.2.1) ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class SampledRows:
    """One table's sampled rows for the model, before the value cap and the budget."""

    rows: Sequence[JsonObject]
    max_value_chars: int  # this table's own cap (model_view's max_value_chars, or the default)
    spread: bool = False  # sampled across the table: fewer rows are picked evenly, not from the head
    # The columns whose type lets them hold long texts, objects or arrays (string and json, spec 8.6:
    # the writer converts every value to its column's type); None: look at every column.
    text_columns: Sequence[str] | None = None


# render(counts, cut_to, extras) -> (model_response with empty "rows" lists, the dicts holding them)
Render = Callable[[list[int], int | None, JsonObject], tuple[JsonObject, list[JsonObject]]]


def _pick(available: int, count: int, spread: bool) -> Sequence[int]:
    if count >= available:
        return range(available)
    if not spread or count <= 1:
        return range(count)
    last = available - 1
    return sorted({round(i * last / (count - 1)) for i in range(count)})


class _Messy:
    """A long cell whose JSON is not one character a character: text with characters JSON escapes,
    or an object or array (kept whole when its JSON fits the cap, else given as that JSON, cut).
    Cut, it is measured by serializing the cut text (a few hundred characters, in C): scanning its
    escapes once costs more when there are many, as in a JSON column."""

    __slots__ = ("ascii", "length_whole", "prefix", "text_length")

    def __init__(self, text: str, is_str: bool, cap: int) -> None:
        self.text_length = len(text)
        self.prefix = text[:cap]
        self.ascii = self.prefix.isascii()
        self.length_whole = chars(text) if is_str and len(text) <= cap else len(text)

    def length(self, cap: int) -> int:
        if self.text_length <= cap:
            return self.length_whole
        encoded = orjson.dumps(self.prefix[: cap - 1])  # plain text: no integer or decimal to handle
        return (len(encoded) if self.ascii else len(encoded.decode("utf-8"))) + 1  # and the one-character "…"


class _Sample:
    """One table's sampled rows with their serialized sizes under any value cap, computed from the
    lengths of their long cells instead of serializing each candidate.

    A cell longer than the lowest cap is *long*. An escape-free string of length L takes
    ``min(L, cap) + 2`` characters under ``cap`` (the quotes; a cut one ends in the one-character
    "…"), so a row's size is its size without its long cells plus a bisection over their sorted
    lengths; other long cells are measured per cap. Rows are measured when first asked for, so a
    large sample under a small budget costs the rows that could fit, not all of them.
    """

    def __init__(self, sampled: SampledRows) -> None:
        self.rows, self.cap, self.spread = sampled.rows, sampled.max_value_chars, sampled.spread
        self._floor = min(MODEL_MIN_VALUE_CHARS, self.cap)
        self._rows: list[tuple[int, list[int], list[int], list[_Messy], int] | None] = [None] * len(self.rows)
        self._lengths: dict[int, dict[int, int]] = {}
        self._head_sums: dict[int, list[int]] = {}
        self._head_longest = [0]

    def most_rows(self, budget: int) -> int:
        """How many rows could fit in ``budget`` at best: each row holds at least its keys, a colon and a
        one-character value each, commas and braces (the rows of one table share their columns)."""
        if not self.rows:
            return 0
        keys = self.rows[0]
        smallest = sum(len(key) + 4 for key in keys) + max(len(keys) - 1, 0) + 3  # and the comma between rows
        return min(len(self.rows), budget // smallest + 1)

    def _row(self, index: int) -> tuple[int, list[int], list[int], list[_Messy], int]:
        known = self._rows[index]
        if known is not None:
            return known
        row = self.rows[index]
        clean: list[int] = []
        messy: list[_Messy] = []
        longest = 0
        blanked: JsonObject | None = None
        for key, value in row.items():
            cls = value.__class__
            if cls is str:
                text = value
            elif cls is dict or cls is list:
                text = jsonio.dumps_text(value)
            else:
                continue
            if len(text) <= self._floor:
                continue  # never cut: counted in the row's fixed size
            longest = max(longest, len(text))
            if blanked is None:
                blanked = dict(row)
            blanked[key] = ""
            if cls is str and _ESCAPED.search(text, 0, self.cap) is None:
                clean.append(len(text))
            else:
                messy.append(_Messy(text, cls is str, self.cap))
        fixed = chars(row if blanked is None else blanked) - 2 * (len(clean) + len(messy))
        clean.sort()
        known = self._rows[index] = (fixed, clean, [0, *accumulate(clean)], messy, longest)
        return known

    def length(self, index: int, cap: int) -> int:
        """One row's serialized size when its values are cut to ``cap`` (this table's own cap at most)."""
        cap = min(cap, self.cap)
        by_row = self._lengths.setdefault(cap, {})
        size = by_row.get(index)
        if size is None:
            fixed, clean, sums, messy, _ = self._row(index)
            size = fixed
            if clean:
                whole = bisect_right(clean, cap)
                size += sums[whole] + (len(clean) - whole) * cap + 2 * len(clean)
            for cell in messy:
                size += cell.length(cap)
            by_row[index] = size
        return size

    def size(self, count: int, cap: int) -> int:
        """Characters of the JSON array of ``count`` picked rows cut to ``cap``."""
        count = min(count, len(self.rows))
        if self.spread:
            picked = _pick(len(self.rows), count, True)
            rows = sum(self.length(i, cap) for i in picked)
        else:  # the head: running sums per cap, grown as far as asked
            sums = self._head_sums.setdefault(min(cap, self.cap), [0])
            while len(sums) <= count:
                sums.append(sums[-1] + self.length(len(sums) - 1, cap))
            rows = sums[count]
        return rows + max(count - 1, 0) + 2

    def longest(self, count: int) -> int:
        """The longest value (as text) among the ``count`` picked rows."""
        count = min(count, len(self.rows))
        if self.spread:
            return max((self._row(i)[4] for i in _pick(len(self.rows), count, True)), default=0)
        running = self._head_longest
        while len(running) <= count:
            running.append(max(running[-1], self._row(len(running) - 1)[4]))
        return running[count]


def _build(tables: Sequence[SampledRows], counts: list[int], cap: int, extras: JsonObject, render: Render) -> Fitted:
    """The response with ``counts`` rows per table, their values cut to ``cap``."""
    shown: list[list[JsonObject]] = []
    cut = 0
    for table, count in zip(tables, counts, strict=True):
        picked = [table.rows[i] for i in _pick(len(table.rows), count, table.spread)]
        rows, table_cut = cap_rows(picked, min(cap, table.max_value_chars), table.text_columns)
        shown.append(rows)
        cut += table_cut
    model, holders = render(counts, cap if cut else None, extras)
    for holder, rows in zip(holders, shown, strict=True):
        holder["rows"] = rows
    trim = Trim(max_value_chars=cap if cut else None, values_shortened=cut)
    return Fitted(model, jsonio.dumps_text(model), trim)


def fit_extraction(
    tables: Sequence[SampledRows],
    extras: JsonObject,
    render: Render,
    budget: int | None,
    max_value_chars: int,
) -> Fitted:
    """An extraction's ``model_response`` under the value cap and, when set, the budget.

    ``render`` builds the response for given row counts (its notices and counts follow them)
    with empty ``rows``; ``extras`` are the parts that may give way (description, warnings,
    totals, extra, manifest, attached autocontext), shrunk alike by :func:`shrink_parts`.
    """
    full = [len(t.rows) for t in tables]
    if budget is None:
        return _build(tables, full, max_value_chars, extras, render)

    samples = [_Sample(t) for t in tables]
    most = [s.most_rows(budget) for s in samples]
    if most == full:  # every row could fit: try them as they are
        fitted = _build(tables, full, max_value_chars, extras, render)
        if len(fitted.text) <= budget:
            return fitted
    floor = min(MODEL_MIN_VALUE_CHARS, max_value_chars)
    original = extras
    # The size of the response without its rows, for the current extras, by row counts and by the
    # digits of cut_to: the response depends on cut_to only through them (the notice states it).
    skeletons: dict[tuple[int | None, ...], int] = {}

    def total(counts: list[int], cap: int, parts: JsonObject) -> int:
        cut_to = cap if any(s.longest(k) > min(cap, s.cap) for s, k in zip(samples, counts, strict=True)) else None
        key = (*counts, None if cut_to is None else len(str(cut_to)))
        skeleton = skeletons.get(key) if parts is extras else None
        if skeleton is None:
            skeleton = chars(render(counts, cut_to, parts)[0])
            if parts is extras:
                skeletons[key] = skeleton
        return skeleton + sum(s.size(k, cap) - 2 for s, k in zip(samples, counts, strict=True))

    def fits_whole(parts: JsonObject) -> bool:
        return most == full and total(full, floor, parts) <= budget

    def smaller_extras(limit: Callable[[JsonObject], bool]) -> JsonObject:
        shrunk = search_level(lambda level: shrink_parts(original, level), limit)
        return shrunk if shrunk is not None else shrink_parts(original, -1)

    # Values are cut down to the floor before any row goes; the extras give way to the rows
    # down to half the budget, and further only when not even zero rows fit.
    if not fits_whole(extras) and chars(extras) > budget // 2:
        extras = smaller_extras(lambda parts: chars(parts) <= budget // 2)
        skeletons.clear()
    counts = full if fits_whole(extras) else _fair_counts(most, lambda c: total(c, floor, extras) <= budget)
    top = min(max_value_chars, max((s.longest(k) for s, k in zip(samples, counts, strict=True)), default=0))
    cap = largest(floor, max(floor, top), lambda c: total(counts, c, extras) <= budget)
    if total(counts, cap, extras) > budget:
        extras = smaller_extras(lambda parts: total(counts, cap, parts) <= budget)

    fitted = _build(tables, counts, cap, extras, render)
    trim = fitted.trim
    trim.rows_dropped = sum(full) - sum(counts)
    trim.parts_shortened = [k for k, v in original.items() if extras.get(k) is not v]
    if len(fitted.text) > budget:  # the columns and notices alone are over: the last resort
        trim.parts_shortened.append("structure")
        fitted.model = _squeeze(fitted.model, budget)
        fitted.text = jsonio.dumps_text(fitted.model)
    return fitted


def _fair_counts(full: list[int], fits: Callable[[list[int]], bool]) -> list[int]:
    """Rows per table: the same number for each (at most its own), then one more for each table, in
    table order, while it fits; so two tables that still have rows differ by one row at most."""
    top = largest(0, max(full, default=0), lambda k: fits([min(k, n) for n in full]))
    counts = [min(top, n) for n in full]
    for index, available in enumerate(full):
        if counts[index] < available:
            counts[index] += 1
            if not fits(counts):
                counts[index] -= 1
    return counts


_KEPT = frozenset({"notice", "total_rows", "returned_rows", "truncated", "rows"})


def _shrink_keeping_keys(value: Any, level: int) -> Any:
    """``shrink`` that keeps every key of every object, and the notices, counts and rows whole."""
    if value.__class__ is dict:
        return {k: (v if k in _KEPT else _shrink_keeping_keys(v, level)) for k, v in value.items()}
    if value.__class__ is list:
        return shrink(value, level)
    return _shrink(value, 8 << level, 1 << level)


def _lean(model: JsonObject) -> JsonObject:
    """Only the notices, counts and rows, at the top and in each table entry."""
    lean = {k: v for k, v in model.items() if k in _KEPT}
    if isinstance(model.get("tables"), dict):
        lean["tables"] = {
            name: {k: v for k, v in entry.items() if k in _KEPT} if isinstance(entry, dict) else entry
            for name, entry in model["tables"].items()
        }
    return lean


def _squeeze(model: JsonObject, budget: int) -> JsonObject:
    """The last resort, when the columns, dates or table entries alone are over the budget: every text
    and list is shortened alike, every key kept; failing that, only the notices, counts and rows
    remain, then the last tables' entries go (the notice names every table); at last the notice is cut."""

    def fits(candidate: JsonObject) -> bool:
        return chars(candidate) <= budget

    fitted: JsonObject | None = search_level(lambda level: _shrink_keeping_keys(model, level), fits)
    if fitted is not None:
        return fitted
    lean = _lean(model)
    tables = lean.get("tables")
    while isinstance(tables, dict) and tables and not fits(lean):
        tables.pop(next(reversed(tables)))
    if fits(lean):
        return lean
    kept = {k: v for k, v in lean.items() if k != "tables"}
    if "notice" in kept:
        kept["notice"] = cut_to_fit(kept["notice"], budget - chars({**kept, "notice": ""}) + 2)
    return kept
