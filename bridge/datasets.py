"""The project's ``acp-data/`` folder (spec 16.6): every dataset is ``<id>.csv`` plus ``<id>.meta.json``.

:class:`DatasetStore` is the only code that writes there. It creates datasets (``create`` gives a
:class:`DatasetWriter` that streams rows into a hidden temporary file and renames it into place, so a
failed extraction leaves nothing and never touches an existing dataset), lists and finds them,
answers ``acp/read_table`` for ``shared.host.AcpHost`` (``resolver``) and copies artifacts into
``acp-data/files/`` (``copy_artifact``).

Ids (``<source>_<tool>[_<table>]_<YYYYMMDD>_<HHMMSS>``, spec 16.6) are lower case, start with a
letter, hold only ``[a-z0-9_]`` and are never an SQL keyword of DuckDB or SQLite, so that every id is a
table name ``acp_query`` takes unquoted. :func:`validate_dataset_id` states the rule.

The CSV files are RFC 4180: UTF-8 without BOM, a header row, CRLF line ends, fields quoted only when
they hold a comma, a quote or a line break. Values are written as:

* ``None`` and the empty string: an empty cell. Both read back as null: a CSV cannot tell them apart
  in a way every reader (DuckDB, SQLite, a spreadsheet) agrees on.
* ``bool``: ``true``/``false``; ``int``: its digits; ``float``: ``repr``, except that an integral
  float below 2**53 loses its ``.0`` and NaN or infinity become null; ``Decimal``: its digits with no
  exponent.
* ``date``/``datetime``/``time``: ISO 8601 (an aware datetime in UTC with ``Z``).
* ``dict``/``list``/``tuple``: compact JSON; ``bytes``: base64; anything else: ``str()``.

A CSV that a person drops into the folder (no meta) is a dataset too (``origin: "csv"``) when its
name is ``<valid id>.csv``: its column types are inferred from every cell (integer, number, boolean,
date, datetime, else string; a value with a leading zero such as ``00501`` keeps the column a
string; empty cells are null and decide nothing). Files that cannot be datasets are listed in
:attr:`DatasetStore.problems` with what to do about them.
"""

from __future__ import annotations

import base64
import builtins
import csv
import datetime as dt
import difflib
import io
import json
import math
import os
import re
import secrets
import shutil
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, Final

from shared import _jsonio as jsonio
from shared.errors import InvalidArguments, TableNotFound
from shared.protocol import COLUMN_TYPES, Header, JsonObject
from shared.values import (
    BOOLEAN,
    INTEGER,
    NULL,
    NUMBER,
    STRING,
    format_datetime,
    infer_type,
    json_safe,
    parse_temporal_string,
)

if TYPE_CHECKING:
    from shared.host import InlineTable, TableFile, TableResolver

__all__ = ["Dataset", "DatasetStore", "DatasetWriter", "validate_dataset_id"]

CSV_SUFFIX: Final = ".csv"
META_SUFFIX: Final = ".meta.json"
FILES_FOLDER: Final = "files"
# A file name holds at most 255 bytes; an id leaves room for ".meta.json" and a temporary name's token.
MAX_ID_LENGTH: Final = 200
_CLASH_ROOM: Final = 8  # the "_<n>" a clashing new id gains

_VALID_ID: Final = re.compile(r"[a-z][a-z0-9_]*\Z")
_NOT_ID_CHARACTER: Final = re.compile(r"[^a-z0-9_]")
# Every keyword of SQLite (sqlite3_keyword_name) and every DuckDB keyword that is not "unreserved"
# (duckdb_keywords()): a dataset id must work as a bare table name on both engines.
SQL_KEYWORDS: Final = frozenset(
    """
    abort action add after all alter always analyse analyze and anti any array as asc asof asymmetric at attach
    authorization autoincrement before begin between bigint binary bit boolean both by cascade case cast char
    character check coalesce collate collation column columns commit concurrently conflict constraint create cross
    current current_date current_time current_timestamp database dec decimal default deferrable deferred delete
    desc describe detach distinct do drop each else end escape except exclude exclusive exists explain extract fail
    false fetch filter first float following for foreign freeze from full generated glob group grouping grouping_id
    groups having if ignore ilike immediate in index indexed initially inner inout insert instead int integer
    intersect interval into is isnull join key lambda last lateral leading left like limit map match materialized
    national natural nchar no none not nothing notnull null nullif nulls numeric of offset on only or order others
    out outer over overlaps overlay partition pivot pivot_longer pivot_wider placing plan position positional pragma
    preceding precision primary qualify query raise range real recursive references regexp reindex release rename
    replace restrict returning right rollback row rows savepoint select semi set setof show similar smallint some
    struct substring summarize symmetric table tablesample temp temporary then ties time timestamp to trailing
    transaction treat trigger trim true try_cast tuple unbounded union unique unpack unpivot update using vacuum
    values varchar variadic verbose view virtual when where window with without xmlattributes xmlconcat xmlelement
    xmlexists xmlforest xmlnamespaces xmlparse xmlpi xmlroot xmlserialize xmltable
    """.split()  # noqa: SIM905  # a word list reads best as words
)
_ID_RULE: Final = (
    "A dataset id is lower case letters, digits and _, starts with a letter, has at most "
    f"{MAX_ID_LENGTH} characters and is not an SQL keyword (like select, order or values)"
)

# The order of 16.6's example; keys a caller adds beyond these follow them.
_META_ORDER: Final = (
    "id",
    "origin",
    "source",
    "acp",
    "tool",
    "table",
    "resource_id",
    "arguments",
    "title",
    "description",
    "dates",
    "headers",
    "row_count",
    "created_at",
    "sql",
)

_WRITE_BUFFER_BYTES: Final = 1 << 20
_READ_BATCH_ROWS: Final = 10_000
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_EXACT_FLOAT_INTEGERS: Final = 2**53


@dataclass(frozen=True)
class Dataset:
    """One dataset of ``acp-data/``.

    ``id`` is its table name in ``acp_query`` (lower case, a valid unquoted SQL identifier);
    ``csv_path`` the RFC 4180 file; ``headers`` its typed columns (``name`` and an ACP column
    type, spec 8.6, plus ``role``/``description`` when the extraction gave them); ``meta`` the
    whole ``<id>.meta.json`` (for a hand-dropped CSV, the one inferred, ``origin: "csv"``).
    The store caches datasets: treat ``headers`` and ``meta`` as read-only.
    """

    id: str
    csv_path: Path
    headers: list[Header]
    row_count: int
    meta: JsonObject


# -- ids -------------------------------------------------------------------------------------------
def _id_fault(candidate: str) -> str | None:
    """Why ``candidate`` is not a dataset id, or None when it is one."""
    if not _VALID_ID.match(candidate):
        return "it must be lower case letters, digits and _, starting with a letter"
    if len(candidate) > MAX_ID_LENGTH:
        return f"it is longer than {MAX_ID_LENGTH} characters"
    if candidate in SQL_KEYWORDS:
        return "it is an SQL keyword"
    return None


def _sanitized(text: str) -> str:
    """``text`` made an id by 16.6's rule: lower case, ``_`` for anything else, ``t_`` before a non-letter."""
    cleaned = _NOT_ID_CHARACTER.sub("_", text.lower())
    if not cleaned[:1].isalpha():  # only a-z are letters here
        cleaned = "t_" + cleaned
    return cleaned


def _suggested_id(text: str) -> str:
    """A valid id close to ``text``, for messages that ask for a rename."""
    suggestion = _sanitized(text)[:MAX_ID_LENGTH]
    return suggestion + "_data" if suggestion in SQL_KEYWORDS else suggestion


def validate_dataset_id(dataset_id: str) -> str:
    """``dataset_id`` itself when it is a valid id (for ``save_as``), else ``InvalidArguments`` with the rule.

    A name the model chose is refused rather than rewritten, so that the id it will query is the
    one it wrote; the message suggests a valid spelling.
    """
    fault = _id_fault(dataset_id)
    if fault is None:
        return dataset_id
    raise InvalidArguments(
        f"'{dataset_id}' is not a valid dataset id: {fault}. {_ID_RULE}. Try '{_suggested_id(dataset_id)}'.",
        {"rule": _ID_RULE},
    )


# -- writing ---------------------------------------------------------------------------------------
def _float_cell(value: float) -> Any:
    if -_EXACT_FLOAT_INTEGERS < value < _EXACT_FLOAT_INTEGERS:  # NaN fails every comparison
        return int(value) if value.is_integer() else value  # "3", not "3.0": integer columns stay integers
    return repr(value) if math.isfinite(value) else None


def _decimal_cell(value: Decimal) -> str | None:
    if not value.is_finite():
        return None
    if value == value.to_integral_value():
        return str(int(value))
    return format(value, "f")  # never "1E+2": every reader takes plain digits


def _json_cell(value: Any) -> str:
    return jsonio.dumps(json_safe(value)).decode("utf-8")


def _bytes_cell(value: bytes | bytearray | memoryview) -> str:
    return base64.b64encode(bytes(value)).decode("ascii")


_CELL_BY_TYPE: Final[dict[type, Callable[[Any], Any]]] = {
    bool: lambda value: "true" if value else "false",
    float: _float_cell,
    Decimal: _decimal_cell,
    dt.datetime: format_datetime,
    dt.date: dt.date.isoformat,
    dt.time: dt.time.isoformat,
    dict: _json_cell,
    list: _json_cell,
    tuple: _json_cell,
    bytes: _bytes_cell,
    bytearray: _bytes_cell,
    memoryview: _bytes_cell,
}
# Types the csv module already writes as 16.6 wants: a row of only these goes through untouched.
_PLAIN_TYPES: Final = frozenset({str, int, type(None)})


def _cell(value: Any) -> Any:
    """One value as the csv module should write it (the rules of the module docstring)."""
    convert = _CELL_BY_TYPE.get(type(value))
    if convert is not None:
        return convert(value)
    if value is None or isinstance(value, str):
        return value
    for cls, subclass_convert in _CELL_BY_TYPE.items():  # subclasses, such as a pandas Timestamp
        if isinstance(value, cls):
            return subclass_convert(value)
    if isinstance(value, int):
        return int(value)
    return str(value)


def _checked_headers(headers: Sequence[Header]) -> list[Header]:
    if not headers:
        raise InvalidArguments("A dataset needs at least one column.")
    seen: dict[str, str] = {}
    checked: list[Header] = []
    for header in headers:
        name, column_type = header.get("name"), header.get("type")
        if not isinstance(name, str) or not name:
            raise InvalidArguments(f"Every column needs a non-empty name; got {header!r}.")
        if column_type not in COLUMN_TYPES:
            raise InvalidArguments(f"Column '{name}' has type {column_type!r}; use one of {', '.join(COLUMN_TYPES)}.")
        # SQL names are case-insensitive, so "Total" and "total" would be one column in acp_query.
        if name.lower() in seen:
            raise InvalidArguments(
                f"Column names must be unique (ignoring case): '{seen[name.lower()]}' and '{name}' clash. "
                "Give each column its own name (in SQL, with AS)."
            )
        seen[name.lower()] = name
        checked.append(header.copy())
    return checked


def _utc_now_text() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _ordered_meta(meta: JsonObject) -> JsonObject:
    ordered: JsonObject = {key: meta[key] for key in _META_ORDER if key in meta}
    ordered.update((key, value) for key, value in meta.items() if key not in ordered)
    return ordered


def _meta_bytes(meta: JsonObject) -> bytes:
    return (json.dumps(meta, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


class DatasetWriter:
    """Streams one dataset into ``acp-data``; a context manager made by :meth:`DatasetStore.create`.

    Rows go to a hidden temporary file in the folder; on a clean exit the CSV and then the meta
    are renamed into place and :attr:`dataset` is set. If the block raises, the temporary files
    are removed and any existing dataset of that id is left as it was.
    """

    dataset: Dataset
    """The dataset written; set once the ``with`` block has exited without an exception."""

    def __init__(
        self, store: DatasetStore, dataset_id: str, headers: list[Header], meta: JsonObject, replace: bool
    ) -> None:
        self._store = store
        self._id = dataset_id
        self._headers = headers
        self._meta = meta
        self._replace = replace
        self._width = len(headers)
        self._row_count = 0
        self._temporaries: list[Path] = []
        self._handle: IO[str] | None = None
        self._csv: Any = None  # the csv module's writer (its type is private to _csv)

    def __enter__(self) -> DatasetWriter:
        root = self._store.root
        root.mkdir(parents=True, exist_ok=True)
        path = self._temporary(CSV_SUFFIX)
        self._handle = path.open("x", encoding="utf-8", newline="", buffering=_WRITE_BUFFER_BYTES)
        self._csv = csv.writer(self._handle, lineterminator="\r\n")
        self._csv.writerow([header["name"] for header in self._headers])
        return self

    def add(self, rows: Iterable[Sequence[Any]]) -> None:
        """Append rows, each with one value per header in header order (Python values as DuckDB or JSON give them)."""
        if self._csv is None:
            raise RuntimeError("DatasetWriter.add() runs inside its 'with' block.")
        self._csv.writerows(map(self._csv_row, rows))

    def _csv_row(self, row: Sequence[Any]) -> Sequence[Any]:
        if len(row) != self._width:
            raise ValueError(f"Row {self._row_count + 1} has {len(row)} values for {self._width} columns.")
        self._row_count += 1
        # Most rows hold only strings, integers and nulls: checking their types in C is the fast path.
        if all(map(_PLAIN_TYPES.__contains__, map(type, row))):
            return row
        return [value if type(value) in _PLAIN_TYPES else _cell(value) for value in row]

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        try:
            assert self._handle is not None
            self._handle.close()
            if exc_type is None:
                self.dataset = self._commit()
        finally:
            for path in self._temporaries:
                path.unlink(missing_ok=True)

    def _temporary(self, suffix: str) -> Path:
        # A dot name: list() skips it, and so does a person browsing the folder.
        path = self._store.root / f".{self._id}.{secrets.token_hex(6)}{suffix}.tmp"
        self._temporaries.append(path)
        return path

    def _commit(self) -> Dataset:
        root = self._store.root
        meta = dict(self._meta)
        meta.update(id=self._id, headers=self._headers, row_count=self._row_count, created_at=_utc_now_text())
        meta = _ordered_meta(meta)
        meta_temporary = self._temporary(META_SUFFIX)
        meta_temporary.write_bytes(_meta_bytes(meta))
        csv_path, meta_path = root / f"{self._id}{CSV_SUFFIX}", root / f"{self._id}{META_SUFFIX}"
        if self._replace:
            os.replace(self._temporaries[0], csv_path)
        else:
            _rename_without_overwriting(self._temporaries[0], csv_path, self._id)
        os.replace(meta_temporary, meta_path)  # last: a meta always describes a complete CSV
        return Dataset(self._id, csv_path, self._headers, self._row_count, meta)


def _rename_without_overwriting(source: Path, target: Path, dataset_id: str) -> None:
    """Move ``source`` to ``target`` unless ``target`` exists (another bridge on this folder took the id)."""
    try:
        os.link(source, target)  # atomic and never replaces: the name's check and its claim are one step
    except FileExistsError:
        raise _taken_error(dataset_id) from None
    except OSError:  # a file system without hard links (FAT, some network shares)
        if target.exists():
            raise _taken_error(dataset_id) from None
        os.replace(source, target)
    else:
        source.unlink()


def _taken_error(dataset_id: str) -> InvalidArguments:
    return InvalidArguments(
        f"A dataset '{dataset_id}' already exists in acp-data, and datasets are never overwritten "
        "(only acp_query's save_as replaces one). Use another id."
    )


# -- reading ---------------------------------------------------------------------------------------
class _Problem(Exception):
    """A file of acp-data that is not a usable dataset; ``message`` says what to do about it."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# The csv module refuses fields above 128 KiB by default, and a JSON cell can be larger. The limit is
# process-wide (the bridge is the process) and a C long: 32 bits on Windows.
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


def _records(path: Path) -> Iterator[list[str]]:
    """The CSV's records, header first, streamed; blank lines are skipped (no reader counts them as rows)."""
    with path.open(encoding="utf-8-sig", newline="") as handle:  # a spreadsheet's CSV may start with a BOM
        for record in csv.reader(handle, strict=True):
            if record:
                yield record


def _header_names(path: Path, relative: str) -> list[str]:
    try:
        return next(_records(path))
    except StopIteration:
        raise _Problem(f"{relative} is empty. Add a header row (the column names) or delete the file.") from None
    except UnicodeDecodeError:
        raise _Problem(f"{relative} is not UTF-8 text. Save it again as CSV UTF-8.") from None
    except csv.Error as error:
        raise _Problem(f"{relative} is not a valid CSV ({error}). Fix it or delete it.") from None


_INTEGER_TEXT: Final = re.compile(r"[+-]?(?:0|[1-9][0-9]*)\Z")
_NUMBER_TEXT: Final = re.compile(r"[+-]?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")


def _kind_of_text(text: str) -> int:
    """The kind of one non-empty cell of a hand-dropped CSV (the flags of ``shared.values``)."""
    if _INTEGER_TEXT.match(text):
        # Beyond 64 bits no engine keeps it an integer: an id of that many digits is text.
        return INTEGER if _INT64_MIN <= int(text) <= _INT64_MAX else STRING
    if _NUMBER_TEXT.match(text):  # "00501" or "007.5" match neither: a leading zero means text
        return NUMBER
    if text.lower() in ("true", "false"):
        return BOOLEAN
    temporal = parse_temporal_string(text)
    return temporal[0] if temporal is not None else STRING


def _infer(path: Path, dataset_id: str, relative: str, mtime_ns: int) -> Dataset:
    """A hand-dropped CSV typed from all of its cells (spec 16.6), read once in bounded memory."""
    names = _header_names(path, relative)
    if any(not name for name in names) or len({name.lower() for name in names}) != len(names):
        raise _Problem(
            f"{relative} needs a unique, non-empty name for every column (ignoring case). Fix its header row."
        )
    if len(names) == 1 and ";" in names[0]:
        raise _Problem(f"{relative} looks separated by ';'. Save it as CSV separated by commas.")
    width, kinds, row_count = len(names), [NULL] * len(names), 0
    batch: list[list[str]] = []
    try:
        records = _records(path)
        next(records)
        for record in records:
            if len(record) != width:
                raise _Problem(
                    f"{relative}: row {row_count + 1} has {len(record)} fields but the header has {width}. "
                    "Fix that row (a comma inside a value needs quotes) or delete the file."
                )
            batch.append(record)
            row_count += 1
            if len(batch) == _READ_BATCH_ROWS:
                _observe(batch, kinds)
                batch = []
        _observe(batch, kinds)
    except UnicodeDecodeError:
        raise _Problem(f"{relative} is not UTF-8 text. Save it again as CSV UTF-8.") from None
    except csv.Error as error:
        raise _Problem(f"{relative} is not a valid CSV ({error}). Fix it or delete it.") from None
    headers: list[Header] = [{"name": name, "type": infer_type(kind)} for name, kind in zip(names, kinds, strict=True)]
    modified = dt.datetime.fromtimestamp(mtime_ns / 1e9, dt.UTC)
    meta: JsonObject = {
        "id": dataset_id,
        "origin": "csv",
        "title": path.name,
        "headers": headers,
        "row_count": row_count,
        "created_at": modified.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
    }
    return Dataset(dataset_id, path, headers, row_count, meta)


def _observe(batch: list[list[str]], kinds: list[int]) -> None:
    """Fold a batch's cells into each column's kinds; each distinct value is classified once."""
    for index, column in enumerate(zip(*batch, strict=True)):
        if kinds[index] & STRING:
            continue  # nothing can change a string column
        for text in set(column):
            if text:
                kinds[index] |= _kind_of_text(text)
                if kinds[index] & STRING:
                    break


def _parsed_meta(path: Path, csv_path: Path, dataset_id: str, relative: str, csv_relative: str) -> Dataset:
    fix = f"Fix it, or delete it to have {dataset_id}.csv read as a hand-dropped CSV with inferred types."
    try:
        meta = json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError) as error:
        raise _Problem(f"{relative} is not valid JSON ({error}). {fix}") from None
    if not isinstance(meta, dict):
        raise _Problem(f"{relative} is not a JSON object. {fix}")
    headers, row_count = meta.get("headers"), meta.get("row_count")
    if (
        not isinstance(headers, list)
        or not headers
        or not all(
            isinstance(h, dict) and isinstance(h.get("name"), str) and h.get("type") in COLUMN_TYPES for h in headers
        )
    ):
        raise _Problem(f"{relative} needs 'headers': a list of {{name, type}} with ACP column types. {fix}")
    if not isinstance(row_count, int) or isinstance(row_count, bool) or row_count < 0:
        raise _Problem(f"{relative} needs 'row_count', a whole number of rows. {fix}")
    if [h["name"] for h in headers] != _header_names(csv_path, csv_relative):
        raise _Problem(f"{relative} names other columns than the header row of {dataset_id}.csv. {fix}")
    meta["id"] = dataset_id  # the file name decides: a dataset copied under a new name keeps working
    return Dataset(dataset_id, csv_path, headers, row_count, meta)


# -- acp/read_table ------------------------------------------------------------------------------------
def _to_boolean(text: str) -> bool:
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise ValueError(text)
    return lowered == "true"


def _to_json(text: str) -> Any:
    try:
        return jsonio.loads(text)
    except ValueError:
        return text  # a json column may hold plain text that is not JSON (DuckDB's JSON as str): keep it


_READ_CONVERTERS: Final[dict[str, Callable[[str], Any]]] = {
    "integer": int,
    "number": float,
    "boolean": _to_boolean,
    "json": _to_json,
}


def _write_table_file(dataset: Dataset, out: IO[bytes]) -> None:
    """The dataset as a JSON array of typed objects (spec 8.5), one batch of rows in memory at a time."""
    names = [header["name"] for header in dataset.headers]
    converters = [_READ_CONVERTERS.get(header["type"]) for header in dataset.headers]
    encoded, first, row_number = io.BytesIO(), True, 0
    records = _records(dataset.csv_path)
    next(records, None)
    out.write(b"[")
    while True:
        batch: list[list[Any]] = []
        for record in records:
            row_number += 1
            try:
                batch.append(
                    [
                        None if not text else text if convert is None else convert(text)
                        for convert, text in zip(converters, record, strict=True)
                    ]
                )
            except ValueError:
                raise TableNotFound(
                    f"Dataset '{dataset.id}' cannot be read: row {row_number} does not fit the columns and types "
                    f"of {dataset.id}.meta.json. Fix {dataset.csv_path.name}, or delete its meta to have the "
                    "types inferred."
                ) from None
            if len(batch) == _READ_BATCH_ROWS:
                break
        if not batch:
            break
        encoded.seek(0)
        encoded.truncate()
        jsonio.write_rows(encoded, names, batch)
        with encoded.getbuffer() as view:
            out.write(view[1:] if first else view)  # the first line's separator without its comma
        first = False
    out.write(b"\n]\n")


# -- the store -----------------------------------------------------------------------------------------
_StatKey = tuple[int, int, int]


def _stat_key(result: os.stat_result) -> _StatKey:
    return result.st_size, result.st_mtime_ns, result.st_ino


@dataclass(frozen=True)
class _Scan:
    datasets: dict[str, Dataset]
    problems: dict[str, str]  # by id when the file has one, else by file name


class DatasetStore:
    """The datasets of one project's ``acp-data`` folder (spec 16.6).

    ``root`` is ``<project>/acp-data``; it is created on the first write. Listing is cheap when
    repeated: metas and inferred types are cached by each file's size, modification time and inode.
    The store is safe to use from several threads.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[Path, tuple[tuple[_StatKey, ...], Dataset | _Problem]] = {}
        self._reserved: set[str] = set()  # ids handed out by new_id in this process
        self._reserve_lock = threading.Lock()

    # -- finding -------------------------------------------------------------------------------
    def list(self) -> list[Dataset]:
        """Every dataset, sorted by id: meta and CSV pairs, and hand-dropped CSVs with a valid id."""
        datasets = self._scan().datasets
        return [datasets[key] for key in sorted(datasets)]

    @property
    def problems(self) -> builtins.list[str]:
        """Files of acp-data that are not usable datasets, each with what to do about it (fresh on each read)."""
        problems = self._scan().problems
        return [problems[key] for key in sorted(problems)]

    def get(self, ref: str) -> Dataset:
        """The dataset ``ref`` names: its id (any case), ``<id>.csv`` or ``acp-data/<id>.csv``.

        Raises ``TableNotFound`` for an unknown id (naming the closest ones), for a file that is
        not a usable dataset (saying why) and for any path that would leave acp-data.
        """
        dataset_id = self._id_of_ref(ref)
        scan = self._scan()
        found = scan.datasets.get(dataset_id)
        if found is not None:
            return found
        if dataset_id in scan.problems:
            raise TableNotFound(f"Dataset '{dataset_id}' cannot be used: {scan.problems[dataset_id]}")
        closest = difflib.get_close_matches(dataset_id, scan.datasets, n=3)
        if closest:
            hint = f"The closest ids are {', '.join(closest)}."
        elif scan.datasets:
            hint = f"acp_datasets lists the {len(scan.datasets)} datasets there are."
        else:
            hint = "acp-data holds no datasets yet: an extraction tool or acp_query with save_as creates one."
        raise TableNotFound(f"No dataset '{dataset_id}' in acp-data. {hint}")

    def _id_of_ref(self, ref: str) -> str:
        escape = TableNotFound(
            f"'{ref}' is not a dataset reference: name a dataset of acp-data by its id, <id>.csv or "
            f"{self.root.name}/<id>.csv (acp_datasets lists them); paths outside acp-data are refused."
        )
        if "\0" in ref or "\\" in ref:
            raise escape
        name = ref.removeprefix(f"{self.root.name}/")
        if "/" in name or name in ("", ".", ".."):
            raise escape
        if name.lower().endswith(CSV_SUFFIX):
            name = name[: -len(CSV_SUFFIX)]
        return name.lower()

    def _scan(self) -> _Scan:
        datasets: dict[str, Dataset] = {}
        problems: dict[str, str] = {}
        cache: dict[Path, tuple[tuple[_StatKey, ...], Dataset | _Problem]] = {}
        try:
            entries = {entry.name: entry for entry in os.scandir(self.root)}
        except (FileNotFoundError, NotADirectoryError):
            return _Scan(datasets, problems)
        real_root = self.root.resolve()
        for name, entry in entries.items():
            if name.startswith(".") or entry.is_dir():
                continue  # temporaries and hidden files; files/ and other folders
            if name.endswith(META_SUFFIX):
                stem, suffix = name[: -len(META_SUFFIX)], META_SUFFIX
            elif name.lower().endswith(CSV_SUFFIX):
                stem, suffix = name[: -len(CSV_SUFFIX)], CSV_SUFFIX
                if stem + META_SUFFIX in entries:
                    continue  # the pair is read from its meta
            else:
                continue
            fault = _id_fault(stem) if name.endswith(suffix) else f"its extension must be {suffix} in lower case"
            if fault is not None:
                problems[name] = (
                    f"{self.root.name}/{name} is not a dataset: {fault}. Rename it, for example to "
                    f"{_suggested_id(stem)}{suffix} ({_ID_RULE})."
                )
                continue
            try:
                keys = [self._checked_file(entry, real_root)]
                if suffix == META_SUFFIX:
                    keys.append(self._checked_file(entries.get(stem + CSV_SUFFIX), real_root, missing_for=name))
                cached = self._cache.get(Path(entry.path))
                outcome = (
                    cached[1] if cached is not None and cached[0] == tuple(keys) else self._load(stem, suffix, keys)
                )
            except _Problem as problem:
                problems[stem] = problem.message
                continue
            cache[Path(entry.path)] = (tuple(keys), outcome)
            if isinstance(outcome, _Problem):
                problems[stem] = outcome.message
            else:
                datasets[stem] = outcome
        self._cache = cache  # one assignment: a concurrent scan sees the old or the new cache whole
        return _Scan(datasets, problems)

    def _load(self, dataset_id: str, suffix: str, keys: builtins.list[_StatKey]) -> Dataset | _Problem:
        """Parse a meta (with its CSV's header row) or infer a hand-dropped CSV; a problem is kept like a dataset."""
        csv_name = dataset_id + CSV_SUFFIX
        try:
            if suffix == META_SUFFIX:
                return _parsed_meta(
                    self.root / (dataset_id + META_SUFFIX),
                    self.root / csv_name,
                    dataset_id,
                    f"{self.root.name}/{dataset_id}{META_SUFFIX}",
                    f"{self.root.name}/{csv_name}",
                )
            return _infer(self.root / csv_name, dataset_id, f"{self.root.name}/{csv_name}", keys[0][1])
        except _Problem as problem:
            return problem
        except OSError as error:  # gone or unreadable between the listing and the read
            return _Problem(f"{self.root.name}/{dataset_id} cannot be read ({error.strerror}). Check the file.")

    def _checked_file(self, entry: os.DirEntry[str] | None, real_root: Path, missing_for: str = "") -> _StatKey:
        """The file's cache key, once it is a regular file inside acp-data (a link may not lead out)."""
        if entry is None:
            csv_name = missing_for.removesuffix(META_SUFFIX) + CSV_SUFFIX
            raise _Problem(
                f"{self.root.name}/{missing_for} has no {csv_name} beside it. "
                f"Put {csv_name} back, or delete {missing_for}."
            )
        relative = f"{self.root.name}/{entry.name}"
        if entry.is_symlink() and not Path(entry.path).resolve().is_relative_to(real_root):
            raise _Problem(f"{relative} is a link to a file outside acp-data. Copy the file into acp-data instead.")
        try:
            result = entry.stat()
        except OSError:
            raise _Problem(f"{relative} is a broken link. Delete it.") from None
        if not stat.S_ISREG(result.st_mode):
            raise _Problem(f"{relative} is not a regular file. Delete it.")
        return _stat_key(result)

    # -- writing ---------------------------------------------------------------------------------
    def new_id(self, source: str, tool: str, table: str | None = None, *, now: dt.datetime | None = None) -> str:
        """A fresh id ``<source>_<tool>[_<table>]_<YYYYMMDD>_<HHMMSS>`` (local time), ``_2``, ``_3``… on a clash.

        An id handed out here is reserved for this process, so two extractions in the same second
        get different ids even before either has written its files.
        """
        moment = now if now is not None else dt.datetime.now()
        if moment.tzinfo is not None:
            moment = moment.astimezone()  # local time, as a person reads the folder
        stem = _sanitized("_".join(part for part in (source, tool, table) if part is not None))
        stem = stem[: MAX_ID_LENGTH - len("_YYYYMMDD_HHMMSS") - _CLASH_ROOM]
        base = f"{stem}_{moment:%Y%m%d_%H%M%S}"
        with self._reserve_lock:
            taken = self._reserved | self._names_in_use()
            candidate, suffix = base, 1
            while candidate in taken:
                suffix += 1
                candidate = f"{base}_{suffix}"
            self._reserved.add(candidate)
        return candidate

    def _names_in_use(self) -> set[str]:
        try:
            names = os.listdir(self.root)
        except (FileNotFoundError, NotADirectoryError):
            return set()
        stems = set()
        for name in names:
            lowered = name.lower()
            for suffix in (META_SUFFIX, CSV_SUFFIX):
                if lowered.endswith(suffix):
                    stems.add(lowered[: -len(suffix)])
        return stems

    def create(
        self, dataset_id: str, headers: Sequence[Header], meta: JsonObject, *, replace: bool = False
    ) -> DatasetWriter:
        """A writer for a new dataset, to use as ``with store.create(...) as writer: writer.add(rows)``.

        ``meta`` holds the fields of 16.6 the caller knows (origin, source, acp, tool, table,
        resource_id, arguments, title, description, dates, sql…); the writer adds ``id``,
        ``headers``, ``row_count`` and ``created_at``. An existing id raises ``InvalidArguments``
        unless ``replace`` (acp_query's ``save_as``), which swaps both files for the new ones.
        """
        validate_dataset_id(dataset_id)
        checked = _checked_headers(headers)
        json.dumps(meta)  # a value JSON cannot hold fails here, before any row is written
        if not replace and dataset_id in self._names_in_use():
            raise _taken_error(dataset_id)
        return DatasetWriter(self, dataset_id, checked, dict(meta), replace)

    # -- serving ---------------------------------------------------------------------------------
    def resolver(self) -> TableResolver:
        """Answers ``acp/read_table`` for ``AcpHost(tables=...)``: the dataset as a typed JSON table file.

        The file goes to the system's temporary folder, never into acp-data, and the host removes
        it once the call has finished. Every dataset is visible to every conversation (spec 16.8).
        """

        async def read_table(ref: str, *, call_id: str | None, conversation: str | None) -> InlineTable | TableFile:
            import anyio

            return await anyio.to_thread.run_sync(self._table_file, ref)

        return read_table

    def _table_file(self, ref: str) -> TableFile:
        from shared.host import TableFile

        dataset = self.get(ref)
        descriptor, name = tempfile.mkstemp(prefix="acp-bridge-table-", suffix=".json")
        path = Path(name)
        try:
            with os.fdopen(descriptor, "wb", buffering=_WRITE_BUFFER_BYTES) as out:
                _write_table_file(dataset, out)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        return TableFile(path, dataset.headers, dataset.row_count, remove_after_call=True)

    def copy_artifact(self, path: Path) -> str:
        """Copy a connector's file (a PDF, a download; spec 8.10) into ``acp-data/files/``.

        The copy keeps the file's name, with ``-2``, ``-3``… before the extension when the name is
        taken: nothing there is ever overwritten. Returns the path relative to the project folder,
        ``acp-data/files/<name>``. Anything but a regular file (a folder, a link, a device) is refused.
        """
        try:
            mode = os.lstat(path).st_mode
        except OSError as error:
            raise InvalidArguments(f"The artifact {path} cannot be read ({error.strerror}).") from None
        if not stat.S_ISREG(mode):
            raise InvalidArguments(f"The artifact {path} is not a regular file, so it was not copied.")
        folder = self.root / FILES_FOLDER
        folder.mkdir(parents=True, exist_ok=True)
        name, number = path.name, 1
        with path.open("rb") as source:
            while True:
                target = folder / name
                try:
                    out = target.open("xb")  # exclusive: a name taken meanwhile is never overwritten
                except FileExistsError:
                    number += 1
                    name = f"{path.stem}-{number}{path.suffix}"
                    continue
                break
            try:
                with out:
                    shutil.copyfileobj(source, out)
            except BaseException:
                target.unlink(missing_ok=True)
                raise
        return f"{self.root.name}/{FILES_FOLDER}/{name}"
