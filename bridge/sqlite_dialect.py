"""SQLite SQL on DuckDB: the dialect contract of ``acp_query`` (spec 16.4).

The tool description promises SQLite, and models write SQLite after reading it. This module reads a
query that :func:`shared.sql.check_query_only` has already checked in the SQLite dialect and writes a
DuckDB query that answers exactly as SQLite would on the same datasets, or raises
:class:`Untranslatable` with the reason, and the query then runs on SQLite itself (``bridge.query``).

Both engines see a dataset the same way, column by column (:data:`SQLITE_TYPES`, :data:`DUCKDB_TYPES`):

=========  =============================  ==============================
ACP type   SQLite (the reference)         DuckDB
=========  =============================  ==============================
integer    INTEGER, Python ints           BIGINT
number     REAL, Python floats            DOUBLE
boolean    INTEGER 0/1                    INTEGER 0/1 (read as BOOLEAN)
date       TEXT ``YYYY-MM-DD``            VARCHAR, the same text
datetime   TEXT, the ISO text             VARCHAR, the same text
string     TEXT                           VARCHAR
json       TEXT                           VARCHAR
=========  =============================  ==============================

Dates stay text on both sides because SQLite has no date type: ``fecha >= '2026-06'``, ``substr``,
``LIKE`` and ``||`` then behave as they do in SQLite; the date functions parse the text.

The translation is a whitelist, driven by the *kind* of value each expression holds (sqlglot's
``qualify`` resolves every column first, with the datasets' column types as the schema). Each node
must be one whose DuckDB form answers as SQLite does for the kinds it gets, as written or rewritten:
integer division truncates (``//``), ``LIKE`` folds ASCII case only, ``CAST`` to INTEGER keeps
SQLite's longest-prefix rule, ``round`` returns a real, ``printf``'s ``%d`` truncates, scalar
``max``/``min`` are NULL when an argument is, the date functions and their modifiers are built from
DuckDB's date arithmetic, and so on. Anything else (a real number turned into text, text used as a
number, an unknown function or modifier, a construct sqlglot cannot resolve) is untranslatable:
correct on SQLite, only slower.
"""

from __future__ import annotations

import functools
import re
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from shared.protocol import ColumnType, Header

__all__ = [
    "DUCKDB_MACROS",
    "DUCKDB_TYPES",
    "SQLITE_TYPES",
    "Kind",
    "Translation",
    "Untranslatable",
    "translate",
]

# -- the kinds of values -------------------------------------------------------------------------------
Kind = str
INTEGER, REAL, FLAG, BOOL = "integer", "real", "flag", "bool"  # FLAG: a boolean column (0/1); BOOL: a comparison
TEXT, DATE, DATETIME, JSON = "text", "date", "datetime", "json"  # DATE/DATETIME/JSON: text holding one
NULL, UNKNOWN = "null", "unknown"
_NUMERIC = frozenset({INTEGER, REAL, FLAG, BOOL})
_TEXTUAL = frozenset({TEXT, DATE, DATETIME, JSON})

_KIND_OF_TYPE: dict[str, Kind] = {
    "integer": INTEGER,
    "number": REAL,
    "boolean": FLAG,
    "date": DATE,
    "datetime": DATETIME,
    "json": JSON,
    "string": TEXT,
}
SQLITE_TYPES: dict[ColumnType, str] = {
    "integer": "INTEGER",
    "number": "REAL",
    "boolean": "INTEGER",
    "date": "TEXT",
    "datetime": "TEXT",
    "json": "TEXT",
    "string": "TEXT",
}
"""The declared SQLite type of each ACP column type (the reference's typed columns)."""

DUCKDB_TYPES: dict[ColumnType, str] = {
    "integer": "BIGINT",
    "number": "DOUBLE",
    "boolean": "BOOLEAN",  # read as BOOLEAN (true/false), then exposed as INTEGER 0/1 like SQLite
    "date": "VARCHAR",
    "datetime": "VARCHAR",
    "json": "VARCHAR",
    "string": "VARCHAR",
}
"""The type DuckDB reads each ACP column type as, from the CSV."""

_UPPER, _LOWER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz"
# SQLite's space characters (sqlite3Isspace), which CAST skips before a number.
_SPACES = r"[ \t\n\v\f\r]*"
DUCKDB_MACROS: dict[str, str] = {
    # SQLite's upper()/lower() change ASCII letters only (without ICU); DuckDB's change every script.
    "sqlite_upper": f"(x) AS translate(x, '{_LOWER}', '{_UPPER}')",
    "sqlite_lower": f"(x) AS translate(x, '{_UPPER}', '{_LOWER}')",
    # CAST(text AS INTEGER) / AS REAL: the longest prefix that is a number, else 0.
    "sqlite_int": (
        f"(x) AS CASE WHEN x IS NULL THEN NULL ELSE coalesce(TRY_CAST(regexp_extract(x, '^{_SPACES}([+-]?[0-9]+)', 1) "
        "AS BIGINT), 0) END"
    ),
    "sqlite_real": (
        f"(x) AS CASE WHEN x IS NULL THEN NULL ELSE coalesce(TRY_CAST(regexp_extract(x, "
        f"'^{_SPACES}([+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][+-]?[0-9]+)?)', 1) AS DOUBLE), 0.0) END"
    ),
    # SQLite writes a real with n decimals (printf's %.nf, and round(x, n) through it) by adding a
    # rounder of 0.5·10^-n to |x|, plus |x|·3e-16 while n + (binary exponent of x)/3 < 15, then
    # truncating: decimal halves round away from zero although their binary value is just below
    # (round(-30.15, 1) is -30.2 in SQLite and -30.1 in DuckDB). round(x) truncates x ± 0.5.
    "sqlite_decimal": (
        "(x, n) AS (CASE WHEN x < 0 THEN -1.0 ELSE 1.0 END) * trunc((abs(x) + 0.5 / power(10, n) + CASE WHEN x <> 0 "
        "AND n + trunc(floor(log2(abs(x))) / 3) < 15 THEN abs(x) * 3e-16 ELSE 0.0 END) * power(10, n)) / power(10, n)"
    ),
    "sqlite_round": (
        "(x, n) AS CASE WHEN abs(x) > 4503599627370496.0 THEN x WHEN n = 0 THEN "
        "trunc(x + CASE WHEN x < 0 THEN -0.5 ELSE 0.5 END) ELSE sqlite_decimal(x, n) END"
    ),
}
"""DuckDB macros the translation calls, created in this order on each connection before the query."""


class Untranslatable(Exception):
    """The query holds something whose DuckDB form could answer differently from SQLite."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Translation:
    """The DuckDB text of a query (None when it must run on SQLite, ``reason`` saying why), and the
    kind of each result column (``date``, ``flag``… or None where unknown) for typed headers."""

    sql: str | None
    kinds: list[Kind | None]
    reason: str | None = None


def translate(tree: Any, tables: Mapping[str, Sequence[Header]]) -> Translation:
    """The DuckDB form of a SQLite query (``tree``: sqlglot's reading of it, or None where sqlglot
    cannot read it; not modified) over ``tables`` (dataset id → headers), or the reason it runs on
    SQLite, with the kinds that could be found. The caller checks the DuckDB text before running it."""
    if tree is None:
        return Translation(None, [], "sqlglot cannot read it as SQLite writes it")
    try:
        translator = _Translator(tables, strict=True)
        kinds, duck = translator.run(tree)
    except Untranslatable as exc:
        try:
            kinds, _ = _Translator(tables, strict=False).run(tree)
        except Untranslatable:
            kinds = []
        return Translation(None, [k if k != UNKNOWN else None for k in kinds], exc.reason)
    return Translation(duck.sql(dialect="duckdb", comments=False), list(kinds))


# -- DuckDB snippets ---------------------------------------------------------------------------------
@functools.cache
def _template(sql: str) -> Any:
    import sqlglot

    return sqlglot.parse_one(sql, read="duckdb")


def _dd(sql: str, **values: Any) -> Any:
    """A DuckDB expression from ``sql`` with ``:name`` placeholders replaced by ``values``."""
    from sqlglot import exp

    return exp.replace_placeholders(_template(f"SELECT {sql}").expressions[0].copy(), **values)


def _call(name: str, *args: Any) -> Any:
    from sqlglot import exp

    return exp.Anonymous(this=name, expressions=list(args))


def _double(node: Any) -> Any:
    from sqlglot import exp

    return exp.cast(node, exp.DataType.build("DOUBLE"))


def _to_text(node: Any, kind: Kind) -> Any:
    """``node`` as SQLite would turn it into text (integers only: SQLite writes reals with 15
    significant digits, DuckDB with the shortest round-trip form)."""
    from sqlglot import exp

    if kind in _TEXTUAL or kind == NULL:
        return node
    if kind in (INTEGER, FLAG):
        return exp.cast(node, exp.DataType.build("VARCHAR"))
    if kind == BOOL:
        return exp.cast(exp.cast(node, exp.DataType.build("INTEGER")), exp.DataType.build("VARCHAR"))
    raise Untranslatable("a real number is turned into text, which SQLite writes with 15 significant digits")


# -- time values: SQLite's date and time functions -------------------------------------------------
_DATE_FUNCTIONS = frozenset({"date", "datetime", "time", "julianday", "unixepoch", "strftime"})
# In the DuckDB snippets below, 210866760000000 is 1970-01-01 as SQLite's Julian day in milliseconds
# (its internal clock) and 86400000 a day in milliseconds.
# "+7 days", "-1 month", "1.5 hours" (the unit in the singular or plural, any case). A modifier is
# rewritten only if SQLite itself accepts it too (see _apply_modifier).
_MODIFIER_NUMBER = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+))[ \t\n\v\f\r]+(day|hour|minute|second|month|year)s?$", re.IGNORECASE
)
_MODIFIER_WEEKDAY = re.compile(r"^weekday ([0-6])$", re.IGNORECASE)
_UNIT_SECONDS = {"second": 1.0, "minute": 60.0, "hour": 3600.0, "day": 86400.0}
# strftime specifiers that DuckDB writes as SQLite does (SQLite 3.40's set, without %f, %s and %J).
_SAME_SPECIFIERS = frozenset("dHjmMSwWY%")


def _sqlite_time_literal(text: str) -> str | None:
    """A literal time value as SQLite reads it (``now`` included), or None if SQLite rejects it.

    A day past the end of its month (2026-02-30) is written as it is by SQLite's functions without
    modifiers, and moved into the next month by those with one: such a literal is untranslatable.
    """
    conn = sqlite3.connect(":memory:")
    try:
        as_read, normalized = conn.execute(
            "SELECT strftime('%Y-%m-%d %H:%M:%f', ?1), strftime('%Y-%m-%d %H:%M:%f', julianday(?1))", (text,)
        ).fetchone()
    finally:
        conn.close()
    if as_read != normalized:
        raise Untranslatable(f"the time value {text!r} is not a valid date")
    return None if as_read is None else str(as_read)


@functools.lru_cache(maxsize=256)
def _sqlite_rejects_modifier(modifier: str) -> bool:
    conn = sqlite3.connect(":memory:")
    try:
        return bool(conn.execute("SELECT datetime('2000-01-31 10:00', ?) IS NULL", (modifier,)).fetchone()[0])
    finally:
        conn.close()


def _time_value(node: Any, kind: Kind, unixepoch: bool) -> Any:
    """A DuckDB TIMESTAMP holding the SQLite time value ``node`` (of ``kind``), or NULL."""
    from sqlglot import exp

    if kind == NULL:
        return exp.cast(exp.null(), exp.DataType.build("TIMESTAMP"))
    if isinstance(node, exp.Literal) and node.is_string and not unixepoch:
        value = _sqlite_time_literal(node.this)
        if value is None:
            return exp.cast(exp.null(), exp.DataType.build("TIMESTAMP"))
        return exp.cast(exp.Literal.string(value), exp.DataType.build("TIMESTAMP"))
    if kind == DATE and not unixepoch:
        return _dd("TRY_CAST(:x AS TIMESTAMP)", x=node)
    if kind == DATETIME and not unixepoch:
        # An offset (Z, +02:00) moves the value to UTC, as in SQLite; the session's time zone is UTC.
        return _dd("TRY_CAST(TRY_CAST(:x AS TIMESTAMPTZ) AS TIMESTAMP)", x=node)
    if kind in (INTEGER, REAL, FLAG):
        if unixepoch:
            # SQLite: iJD = (i64)(s*1000 + JD(1970) + 0.5), valid for 0 <= that < 464269060800000.
            return _dd(
                "CASE WHEN :x * 1000.0 + 210866760000000.0 >= 0 AND :x * 1000.0 + 210866760000000.0 < "
                "464269060800000.0 THEN epoch_ms(CAST(floor(:x * 1000.0 + 210866760000000.0 + 0.5) AS BIGINT) "
                "- 210866760000000) END",
                x=node,
            )
        # A number is a Julian day number: iJD = (i64)(r*86400000 + 0.5), valid for 0 <= r < 5373484.5.
        return _dd(
            "CASE WHEN :x >= 0 AND :x < 5373484.5 THEN epoch_ms(CAST(floor(:x * 86400000.0 + 0.5) AS BIGINT) "
            "- 210866760000000) END",
            x=node,
        )
    raise Untranslatable(
        "a date function reads a value that is neither a date or datetime column nor a literal (SQLite "
        "accepts more time formats than the ones that can be rewritten)"
    )


def _apply_modifier(ts: Any, modifier: str) -> Any:
    """``ts`` moved by one SQLite modifier (a literal), as SQLite computes it."""
    from sqlglot import exp

    if _sqlite_rejects_modifier(modifier):
        raise Untranslatable(f"SQLite does not accept the date modifier {modifier!r}")
    text = modifier.lower()
    if text in ("start of day", "start of month", "start of year"):
        return _call("date_trunc", exp.Literal.string(text.split()[-1]), ts)
    weekday = _MODIFIER_WEEKDAY.match(modifier)
    if weekday:
        return _dd(
            "epoch_ms(epoch_ms(:ts) + ((:n - dayofweek(:ts) + 7) % 7) * 86400000)",
            ts=ts,
            n=exp.Literal.number(weekday.group(1)),
        )
    number = _MODIFIER_NUMBER.match(modifier)
    if number is None:
        raise Untranslatable(f"the date modifier {modifier!r} is not one that can be rewritten")
    amount, unit = float(number.group(1)), number.group(2).lower()
    if unit in ("month", "year"):
        if amount != int(amount):
            raise Untranslatable(f"the date modifier {modifier!r} moves by a fraction of a {unit}")
        # SQLite moves the year and month and keeps the day, which may then overflow into the next
        # month (2026-01-31 +1 month = 2026-03-03): the first of the new month plus (day - 1) days.
        return _dd(
            f"epoch_ms(epoch_ms(date_trunc('month', :ts) + INTERVAL (:n) {unit.upper()}) + (day(:ts) - 1) * 86400000 "
            "+ (epoch_ms(:ts) - epoch_ms(date_trunc('day', :ts))))",
            ts=ts,
            n=exp.Literal.number(int(amount)),
        )
    rounder = -0.5 if amount < 0 else 0.5
    milliseconds = int(amount * 1000.0 * _UNIT_SECONDS[unit] + rounder)  # SQLite's own rounding
    return _dd("epoch_ms(epoch_ms(:ts) + :ms)", ts=ts, ms=exp.Literal.number(milliseconds))


def _strftime(ts: Any, fmt: str) -> Any:
    """SQLite's ``strftime(fmt, …)`` of the TIMESTAMP ``ts``, for a literal format."""
    from sqlglot import exp

    pieces: list[Any] = []
    plain: list[str] = []

    def flush() -> None:
        if plain:
            pieces.append(_call("strftime", ts, exp.Literal.string("".join(plain))))
            plain.clear()

    index = 0
    while index < len(fmt):
        char = fmt[index]
        if char != "%":
            plain.append(char)
            index += 1
            continue
        spec = fmt[index + 1 : index + 2]
        index += 2
        if spec in _SAME_SPECIFIERS:
            plain.append("%" + spec)
        elif spec == "f":
            plain.append("%S.%g")  # seconds with milliseconds, SS.SSS
        elif spec == "s":
            flush()
            pieces.append(exp.cast(_unixepoch(ts), exp.DataType.build("VARCHAR")))
        else:
            raise Untranslatable(f"strftime's %{spec} is not one that DuckDB writes as SQLite does")
    flush()
    if not pieces:
        raise Untranslatable("strftime() with an empty format")
    out = pieces[0]
    for piece in pieces[1:]:
        out = exp.DPipe(this=out, expression=piece)
    return out


def _unixepoch(ts: Any) -> Any:
    return _dd("(epoch_ms(:ts) + 210866760000000) // 1000 - 210866760000", ts=ts)


# -- printf ----------------------------------------------------------------------------------------
_PRINTF_SPEC = re.compile(r"%([-+ 0]*)([0-9]*)(?:\.([0-9]+))?([a-zA-Z%])")


# -- the translator ------------------------------------------------------------------------------------
_INT_TYPES = frozenset({"INT", "BIGINT", "SMALLINT", "TINYINT", "MEDIUMINT", "UBIGINT", "UINT", "USMALLINT"})
_REAL_TYPES = frozenset({"DOUBLE", "FLOAT"})
_TEXT_TYPES = frozenset({"TEXT", "VARCHAR", "CHAR", "NCHAR", "NVARCHAR", "MEDIUMTEXT", "LONGTEXT", "TINYTEXT"})


class _Translator:
    """One query's translation, in place on sqlglot's qualified tree.

    Each handler takes a node, returns the kind of value it holds, and replaces it (through
    :meth:`swap`) by its DuckDB form where that differs. sqlglot detaches a replaced node, so a
    handler that looks at a child again after translating it asks :meth:`now` for what stands there.
    ``strict=False`` only computes the result kinds (for the SQLite path's headers): what cannot be
    translated is then of unknown kind instead of an error.
    """

    def __init__(self, tables: Mapping[str, Sequence[Header]], strict: bool) -> None:
        self.tables = {
            name.lower(): {h["name"].lower(): h["type"] for h in headers} for name, headers in tables.items()
        }
        self.strict = strict
        self.query_kinds: dict[int, list[Kind]] = {}  # id(select or set operation) → its columns' kinds
        self.scope_of: dict[int, Any] = {}  # id(column) → the scope it was resolved in
        # id(old node) → (that node, kept alive so that its id is not reused; the node that replaced it)
        self.replaced: dict[int, tuple[Any, Any]] = {}

    def unsupported(self, reason: str) -> Kind:
        if self.strict:
            raise Untranslatable(reason)
        return UNKNOWN

    def swap(self, old: Any, new: Any) -> Any:
        current = self.now(old)
        if current is not new:
            current.replace(new)
            self.replaced[id(current)] = (current, new)
        return new

    def now(self, node: Any) -> Any:
        while id(node) in self.replaced:
            node = self.replaced[id(node)][1]
        return node

    # -- the whole query -------------------------------------------------------------------------
    def run(self, tree: Any) -> tuple[list[Kind], Any]:
        from sqlglot.errors import SqlglotError
        from sqlglot.optimizer.qualify import qualify
        from sqlglot.optimizer.scope import traverse_scope

        schema: dict[str, object] = {
            name: {column: SQLITE_TYPES[kind] for column, kind in columns.items()}
            for name, columns in self.tables.items()
        }
        try:
            qualified = qualify(tree.copy(), schema=schema, dialect="sqlite", validate_qualify_columns=True)
            scopes = traverse_scope(qualified)
        except SqlglotError as exc:
            raise Untranslatable(f"its column references could not be resolved for DuckDB ({exc})") from None
        for scope in scopes:
            for column in scope.columns:
                self.scope_of[id(column)] = scope
        kinds = self.query(qualified)
        return kinds, qualified

    def query(self, node: Any) -> list[Kind]:
        from sqlglot import exp

        if isinstance(node, exp.Subquery):
            return self.query(node.this)
        if isinstance(node, exp.SetOperation):
            return self.set_operation(node)
        if isinstance(node, exp.Select):
            return self.select(node)
        self.unsupported(f"{_describe(node)} is not a plain SELECT")
        return []

    def set_operation(self, node: Any) -> list[Kind]:
        self.check_args(node, {"this", "expression", "distinct", "with_", "order", "limit", "offset"})
        self.with_clause(node)
        left, right = self.query(node.left), self.query(node.right)
        if len(left) != len(right):
            self.unsupported("the parts of a compound SELECT have different numbers of columns")
            kinds = left
        else:
            kinds = [self.common(pair, "the columns of a compound SELECT") for pair in zip(left, right, strict=True)]
        self.query_kinds[id(node)] = kinds
        self.order_limit(node)
        return kinds

    def with_clause(self, node: Any) -> None:
        with_ = node.args.get("with_")
        if with_ is None:
            return
        self.check_args(with_, {"expressions", "recursive"})
        for cte in with_.expressions:
            self.check_args(cte, {"this", "alias"})
            self.query(cte.this)

    def select(self, node: Any) -> list[Kind]:
        self.check_args(
            node,
            {
                "expressions",
                "from_",
                "joins",
                "where",
                "group",
                "having",
                "order",
                "limit",
                "offset",
                "with_",
                "distinct",
                "windows",
            },
        )
        self.with_clause(node)
        from_ = node.args.get("from_")
        if from_ is not None:
            self.source(from_.this)
        for join in node.args.get("joins") or ():
            self.check_args(join, {"this", "on", "side", "kind"})
            if join.args.get("kind") not in (None, "", "INNER", "CROSS", "OUTER"):
                self.unsupported(f"a {join.args['kind']} join")
            self.source(join.this)
            if join.args.get("on") is not None:
                self.condition(join.args["on"])
        where = node.args.get("where")
        if where is not None:
            self.condition(where.this)
        for window in node.args.get("windows") or ():
            self.window_spec(window)
        distinct = node.args.get("distinct")
        if distinct is not None:
            self.check_args(distinct, set())
        kinds = [self.expr(projection) for projection in list(node.expressions)]
        self.query_kinds[id(node)] = kinds
        group = node.args.get("group")
        if group is not None:
            self.check_args(group, {"expressions"})
            for expression in list(group.expressions):
                self.value(expression)
        having = node.args.get("having")
        if having is not None:
            self.condition(having.this)
        self.order_limit(node)
        return kinds

    def source(self, node: Any) -> None:
        from sqlglot import exp

        if isinstance(node, exp.Table):
            if not isinstance(node.this, exp.Identifier):
                self.unsupported("a FROM item is not a dataset")
            self.check_args(node, {"this", "alias"})
        elif isinstance(node, exp.Subquery):
            self.check_args(node, {"this", "alias"})
            self.query(node.this)
        else:
            self.unsupported(f"a FROM item of kind {type(node).__name__}")

    def order_limit(self, node: Any) -> None:
        from sqlglot import exp

        order = node.args.get("order")
        if order is not None:
            for ordered in order.expressions:
                self.check_args(ordered, {"this", "desc", "nulls_first"})
                self.value(ordered.this)
        for name in ("limit", "offset"):
            clause = node.args.get(name)
            if clause is None:
                continue
            value = clause.expression if isinstance(clause, (exp.Limit, exp.Offset)) else clause
            if not (isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit()):
                self.unsupported(f"{name.upper()} is not a literal whole number")

    def check_args(self, node: Any, allowed: set[str]) -> None:
        extra = [key for key, value in node.args.items() if value not in (None, False, [], "") and key not in allowed]
        if extra:
            self.unsupported(f"{_describe(node)} with {', '.join(sorted(extra))}")

    # -- expressions -----------------------------------------------------------------------------
    def expr(self, node: Any) -> Kind:
        from sqlglot import exp

        handler = _handlers().get(type(node))
        if handler is not None:
            return handler(self, node)
        if isinstance(node, exp.Anonymous):
            return self.anonymous(node)
        if isinstance(node, (exp.AggFunc, exp.Window, exp.Filter)):
            return self.aggregate(node)
        return self.unsupported(f"{_describe(node)} has no DuckDB form known to answer as SQLite does")

    def value(self, node: Any) -> Kind:
        """The kind of ``node`` used as a value: a comparison's true/false becomes SQLite's 1/0."""
        from sqlglot import exp

        kind = self.expr(node)
        if kind == BOOL:
            current = self.now(node)
            self.swap(current, exp.cast(current.copy(), exp.DataType.build("INTEGER")))
            return INTEGER
        return kind

    def condition(self, node: Any) -> None:
        """``node`` used as a condition (WHERE, ON, WHEN…): SQLite tests a number against 0."""
        from sqlglot import exp

        kind = self.expr(node)
        if kind in (INTEGER, REAL, FLAG):
            current = self.now(node)
            self.swap(current, exp.NEQ(this=exp.paren(current.copy()), expression=exp.Literal.number(0)))
        elif kind in _TEXTUAL:
            self.unsupported("a text is used as a condition (SQLite reads it as a number)")

    def texts(self, node: Any, *keys: str) -> bool:
        """Translate the arguments ``keys`` of ``node`` as SQLite's string functions read them:
        texts, and integers written as text. False when one is of unknown kind."""
        for key in keys:
            child = node.args.get(key)
            if child is None:
                continue
            if not self.text(child):
                return False
        return True

    def text(self, node: Any) -> bool:
        kind = self.expr(node)
        if kind == UNKNOWN:
            return False
        current = self.now(node)
        try:
            converted = _to_text(current, kind)
        except Untranslatable as exc:
            self.unsupported(exc.reason)
            return False
        if converted is not current:
            self.swap(current, converted)
        return True

    def common(self, kinds: Iterable[Kind], where: str) -> Kind:
        """The kind of a value that is any one of ``kinds`` (CASE branches, COALESCE arguments…)."""
        present = {k for k in kinds if k != NULL}
        if UNKNOWN in present:
            return UNKNOWN
        if not present:
            return NULL
        if len(present) == 1:
            return present.pop()
        if present <= _NUMERIC:
            return REAL if REAL in present else INTEGER
        if present <= _TEXTUAL:
            return TEXT
        return self.unsupported(f"{where} mix numbers and texts (SQLite keeps each value's own type)")

    # leaves
    def literal(self, node: Any) -> Kind:
        if node.is_string:
            return TEXT
        if re.fullmatch(r"[0-9]+", node.this) and int(node.this) < 2**63:
            return INTEGER
        self.swap(node, _double(node.copy()))  # DuckDB reads 2.5 as a DECIMAL; SQLite as a real
        return REAL

    def boolean(self, node: Any) -> Kind:
        from sqlglot import exp

        self.swap(node, exp.Literal.number(1 if node.this else 0))  # SQLite's TRUE and FALSE are 1 and 0
        return INTEGER

    def null(self, node: Any) -> Kind:
        return NULL

    def column(self, node: Any) -> Kind:
        return self.resolve(node)[0]

    def resolve(self, node: Any) -> tuple[Kind, ColumnType | None]:
        """A column's kind, and the type of the dataset column it passes through unchanged, if any."""
        from sqlglot import exp
        from sqlglot.optimizer.scope import Scope

        name = node.name.lower()
        scope = self.scope_of.get(id(node))
        if scope is None or not node.table:
            # An ORDER BY alias: a column of the enclosing query with that name.
            query = node.find_ancestor(exp.Select, exp.SetOperation)
            select = query
            while isinstance(select, exp.SetOperation):
                select = select.left
            if query is not None and isinstance(select, exp.Select) and id(query) in self.query_kinds:
                for projection, kind in zip(select.expressions, self.query_kinds[id(query)], strict=False):
                    if projection.alias_or_name.lower() == name:
                        return kind, None
            return self.unsupported(f"the column {node.name} could not be resolved"), None
        source = None
        while scope is not None and source is None:
            source = scope.sources.get(node.table)
            scope = scope.parent
        if isinstance(source, exp.Table):
            column_type = self.tables.get(source.name.lower(), {}).get(name)
            if column_type is not None:
                return _KIND_OF_TYPE[column_type], column_type
        elif isinstance(source, Scope):
            query = source.expression
            select = query
            while isinstance(select, exp.SetOperation):
                select = select.left
            kinds = self.query_kinds.get(id(query))
            if kinds is not None and isinstance(select, exp.Select):
                for projection, kind in zip(select.expressions, kinds, strict=False):
                    if projection.alias_or_name.lower() == name:
                        inner = projection.this if isinstance(projection, exp.Alias) else projection
                        passes = isinstance(inner, exp.Column) and select is query and id(inner) in self.scope_of
                        return kind, self.resolve(inner)[1] if passes else None
        return self.unsupported(f"the column {node.name} could not be resolved"), None

    def alias(self, node: Any) -> Kind:
        return self.expr(node.this)

    def paren(self, node: Any) -> Kind:
        return self.expr(node.this)

    def subquery(self, node: Any) -> Kind:
        kinds = self.query(node.this)
        if len(kinds) != 1:
            return self.unsupported("a subquery used as a value has several columns")
        return kinds[0]

    # operators
    def number(self, node: Any) -> Kind:
        """``node`` as an operand of arithmetic: a number (a whole-number literal text becomes the number)."""
        from sqlglot import exp

        if isinstance(node, exp.Literal) and node.is_string:
            if re.fullmatch(r"[0-9]+", node.this):
                self.swap(node, exp.Literal.number(node.this))
                return INTEGER
            return self.unsupported("a text is used as a number in arithmetic")
        kind = self.value(node)
        if kind in _TEXTUAL:
            return self.unsupported("a text is used as a number in arithmetic")
        return kind

    def arithmetic(self, node: Any) -> Kind:
        from sqlglot import exp

        left, right = self.number(node.this), self.number(node.expression)
        if UNKNOWN in (left, right):
            return UNKNOWN
        both_integers = left in (INTEGER, FLAG, NULL) and right in (INTEGER, FLAG, NULL)
        a, b = node.this.copy(), node.expression.copy()
        # SQLite divides by zero into NULL; DuckDB into an error or an infinity.
        divisor = exp.Nullif(this=b, expression=exp.Literal.number(0))
        if isinstance(node, exp.Div):
            # SQLite's integer division truncates toward zero, as DuckDB's // does.
            self.swap(
                node, exp.IntDiv(this=a, expression=divisor) if both_integers else exp.Div(this=a, expression=divisor)
            )
            return INTEGER if both_integers else REAL
        if isinstance(node, exp.Mod):
            if both_integers:
                self.swap(node, exp.Mod(this=a, expression=divisor))
                return INTEGER
            # SQLite's % works on the integer parts of its operands (5.5 % 2 = 1.0).
            self.swap(
                node, _dd("CAST(CAST(trunc(:a) AS BIGINT) % NULLIF(CAST(trunc(:b) AS BIGINT), 0) AS DOUBLE)", a=a, b=b)
            )
            return REAL
        if NULL in (left, right):
            return NULL
        return INTEGER if both_integers else REAL

    def negative(self, node: Any) -> Kind:
        kind = self.number(node.this)
        return INTEGER if kind == FLAG else kind

    def concat(self, node: Any) -> Kind:
        return TEXT if self.texts(node, "this", "expression") else UNKNOWN

    def comparison(self, node: Any) -> Kind:
        left, right = self.value(node.this), self.value(node.expression)
        self.reconcile(left, node.this, right, node.expression)
        return BOOL

    def reconcile(self, left_kind: Kind, left: Any, right_kind: Kind, right: Any) -> None:
        """Make two translated values compare in DuckDB as in SQLite, where a number and a text
        compare only through the affinity of a dataset column, applied to a literal."""
        from sqlglot import exp

        present = {left_kind, right_kind} - {NULL}
        if UNKNOWN in present or present <= _NUMERIC or present <= _TEXTUAL:
            return
        left, right = self.now(left), self.now(right)
        for column, column_kind, other in ((left, left_kind, right), (right, right_kind, left)):
            if not isinstance(column, exp.Column) or not isinstance(other, exp.Literal):
                continue
            if self.resolve(column)[1] is None:
                continue  # not a dataset column: no affinity
            if column_kind in (INTEGER, REAL, FLAG) and other.is_string and re.fullmatch(r"-?[0-9]+", other.this):
                self.swap(other, exp.Literal.number(other.this))
                return
            if column_kind in _TEXTUAL and not other.is_string and re.fullmatch(r"[0-9]+", other.this):
                self.swap(other, exp.Literal.string(other.this))
                return
        self.unsupported("a number is compared with a text (SQLite orders every number before every text)")

    def is_(self, node: Any) -> Kind:
        from sqlglot import exp

        if not isinstance(node.expression, exp.Null):
            return self.unsupported("IS with something other than NULL")
        self.expr(node.this)
        return BOOL

    def null_safe(self, node: Any) -> Kind:
        return self.comparison(node)

    def logical(self, node: Any) -> Kind:
        self.condition(node.this)
        self.condition(node.expression)
        return BOOL

    def not_(self, node: Any) -> Kind:
        self.condition(node.this)
        return BOOL

    def between(self, node: Any) -> Kind:
        self.check_args(node, {"this", "low", "high"})
        kind = self.value(node.this)
        for bound in ("low", "high"):
            self.reconcile(kind, node.this, self.value(node.args[bound]), node.args[bound])
        return BOOL

    def in_(self, node: Any) -> Kind:
        self.check_args(node, {"this", "expressions", "query"})
        kind = self.value(node.this)
        query = node.args.get("query")
        if query is not None:
            kinds = self.query(query)
            if len(kinds) != 1:
                return self.unsupported("IN (SELECT …) with several columns")
            self.common([kind, kinds[0]], "the two sides of IN")
            return BOOL
        for element in list(node.expressions):
            self.reconcile(kind, node.this, self.value(element), element)
        return BOOL

    def exists(self, node: Any) -> Kind:
        self.query(node.this)
        return BOOL

    def like(self, node: Any, escape: Any = None) -> Kind:
        """SQLite's LIKE ignores the case of ASCII letters only; DuckDB's is case-sensitive and its
        ILIKE folds every script (``'İ' ILIKE 'i'`` is true). Both sides are folded to ASCII lower
        case, unless the pattern is a literal with no ASCII letter."""
        from sqlglot import exp

        self.check_args(node, {"this", "expression", "negate"})
        if not self.texts(node, "this", "expression"):
            return UNKNOWN
        if escape is not None and not (isinstance(escape, exp.Literal) and escape.is_string):
            return self.unsupported("an ESCAPE that is not a literal")
        pattern = node.expression
        if isinstance(pattern, exp.Literal) and pattern.is_string:
            if not re.search("[A-Za-z]", pattern.this):
                return BOOL
            self.swap(pattern, exp.Literal.string(pattern.this.translate(_ASCII_LOWER)))
        else:
            self.swap(pattern, _call("sqlite_lower", pattern.copy()))
        self.swap(node.this, _call("sqlite_lower", node.this.copy()))
        return BOOL

    def escape(self, node: Any) -> Kind:
        from sqlglot import exp

        if not isinstance(node.this, exp.Like):
            return self.unsupported("ESCAPE outside LIKE")
        return self.like(node.this, escape=node.expression)

    def glob(self, node: Any) -> Kind:
        from sqlglot import exp

        subject, pattern = self.expr(node.this), node.expression
        if subject not in _TEXTUAL and subject != NULL:
            return self.unsupported("GLOB on something other than a text")
        if not (isinstance(pattern, exp.Literal) and pattern.is_string) or "[" in pattern.this:
            return self.unsupported("a GLOB pattern that is not a literal without [ ] classes")
        return BOOL

    # conditional
    def case(self, node: Any) -> Kind:
        self.check_args(node, {"this", "ifs", "default"})
        operand = node.args.get("this")
        operand_kind = self.value(operand) if operand is not None else None
        for branch in node.args["ifs"]:
            if operand_kind is not None:
                self.reconcile(operand_kind, node.args["this"], self.value(branch.this), branch.this)
            else:
                self.condition(branch.this)
        kinds = [self.value(branch.args["true"]) for branch in node.args["ifs"]]
        if node.args.get("default") is not None:
            kinds.append(self.value(node.args["default"]))
        return self.common(kinds, "the branches of a CASE")

    def iif(self, node: Any) -> Kind:
        self.condition(node.this)
        kinds = [self.value(node.args["true"])]
        if node.args.get("false") is not None:
            kinds.append(self.value(node.args["false"]))
        return self.common(kinds, "the branches of iif()")

    def coalesce(self, node: Any) -> Kind:
        self.check_args(node, {"this", "expressions", "is_nvl", "is_null"})
        kinds = [self.value(node.this), *(self.value(e) for e in list(node.expressions))]
        return self.common(kinds, "the arguments of coalesce()/ifnull()")

    def nullif(self, node: Any) -> Kind:
        first = self.value(node.this)
        self.reconcile(first, node.this, self.value(node.expression), node.expression)
        return first

    def extreme(self, node: Any) -> Kind:
        """Scalar max()/min(): NULL as soon as an argument is (sqlglot writes that CASE for DuckDB)."""
        if node.args.get("ignore_nulls"):
            return self.unsupported("greatest()/least() that ignore NULLs are not SQLite's max()/min()")
        kinds = [self.value(node.this), *(self.value(e) for e in list(node.expressions))]
        return self.common(kinds, "the arguments of max()/min()")

    def cast(self, node: Any) -> Kind:
        from sqlglot import exp

        self.check_args(node, {"this", "to"})
        target = node.to.this.name
        kind = self.value(node.this)
        if kind == UNKNOWN:
            return UNKNOWN
        this = node.this.copy()
        if target in _INT_TYPES:
            if kind in (INTEGER, FLAG):
                self.swap(node, this)
            elif kind == REAL:
                self.swap(node, _dd("CAST(trunc(:x) AS BIGINT)", x=this))  # SQLite truncates; DuckDB rounds
            elif kind == NULL:
                self.swap(node, exp.cast(this, exp.DataType.build("BIGINT")))
            else:
                self.swap(node, _call("sqlite_int", this))
            return INTEGER
        if target in _REAL_TYPES:
            self.swap(node, _call("sqlite_real", this) if kind in _TEXTUAL else _double(this))
            return REAL
        if target in _TEXT_TYPES:
            try:
                text = _to_text(this, kind)
            except Untranslatable as exc:
                return self.unsupported(exc.reason)
            self.swap(node, exp.cast(text, exp.DataType.build("VARCHAR")))
            return TEXT
        return self.unsupported(f"CAST(… AS {node.to.sql('sqlite')}) converts with SQLite's NUMERIC affinity")

    # functions
    def numeric_function(self, node: Any) -> Kind:
        kind = self.number(node.this)
        return INTEGER if kind == FLAG else kind

    def round_(self, node: Any) -> Kind:
        from sqlglot import exp

        self.check_args(node, {"this", "decimals"})
        kind = self.number(node.this)
        if kind == UNKNOWN:
            return UNKNOWN
        decimals = node.args.get("decimals")
        digits = 0
        if decimals is not None:
            if not (isinstance(decimals, exp.Literal) and not decimals.is_string and decimals.this.isdigit()):
                return self.unsupported("round() to a number of digits that is not a literal whole number")
            digits = min(int(decimals.this), 30)  # SQLite caps the digits at 30
        self.swap(node, _call("sqlite_round", _double(node.this.copy()), exp.Literal.number(digits)))
        return REAL

    def length(self, node: Any) -> Kind:
        self.check_args(node, {"this", "binary"})
        return INTEGER if self.texts(node, "this") else UNKNOWN

    def upper_lower(self, node: Any) -> Kind:
        from sqlglot import exp

        if not self.texts(node, "this"):
            return UNKNOWN
        name = "sqlite_upper" if isinstance(node, exp.Upper) else "sqlite_lower"
        self.swap(node, _call(name, node.this.copy()))
        return TEXT

    def trim(self, node: Any) -> Kind:
        self.check_args(node, {"this", "expression", "position"})
        return TEXT if self.texts(node, "this", "expression") else UNKNOWN

    def replace_(self, node: Any) -> Kind:
        return TEXT if self.texts(node, "this", "expression", "replacement") else UNKNOWN

    def substring(self, node: Any) -> Kind:
        self.check_args(node, {"this", "start", "length"})
        if not self.texts(node, "this"):
            return UNKNOWN
        for key in ("start", "length"):
            child = node.args.get(key)
            if child is not None and self.number(child) not in (INTEGER, FLAG, NULL):
                return self.unsupported("substr() at a position or of a length that is not a whole number")
        return TEXT

    def instr(self, node: Any) -> Kind:
        self.check_args(node, {"this", "substr"})
        if not self.texts(node, "this", "substr"):
            return UNKNOWN
        self.swap(node, _call("instr", node.this.copy(), node.args["substr"].copy()))
        return INTEGER

    def typeof(self, node: Any) -> Kind:
        from sqlglot import exp

        child = node.this
        kind: Kind | None = None
        if isinstance(child, exp.Column):
            column_type = self.resolve(child)[1]
            kind = _KIND_OF_TYPE[column_type] if column_type is not None else None
        elif isinstance(child, (exp.Literal, exp.Null)):
            kind = self.expr(child)
        names = {INTEGER: "integer", FLAG: "integer", REAL: "real", NULL: "null"}
        name = "text" if kind in _TEXTUAL else names.get(kind or "")
        if name is None:
            return self.unsupported("typeof() of something other than a dataset column or a literal")
        self.swap(
            node,
            _dd(
                "CASE WHEN :x IS NULL THEN 'null' ELSE :name END",
                x=self.now(child).copy(),
                name=exp.Literal.string(name),
            ),
        )
        return TEXT

    def format_node(self, node: Any) -> Kind:
        return self.printf(node, node.this, list(node.expressions))

    def printf(self, node: Any, fmt: Any, args: list[Any]) -> Kind:
        """printf()/format(fmt, …) with a literal format of %d, %i, %f, %s and %% only."""
        from sqlglot import exp

        if not (isinstance(fmt, exp.Literal) and fmt.is_string):
            return self.unsupported("printf() with a format that is not a literal")
        specs = [m for m in _PRINTF_SPEC.finditer(fmt.this) if m.group(4) != "%"]
        if "%" in _PRINTF_SPEC.sub("", fmt.this) or len(specs) != len(args):
            return self.unsupported("printf() with a format or arguments that cannot be rewritten")
        coerced = []
        for spec, arg in zip(specs, args, strict=True):
            kind = self.value(arg)
            if kind == UNKNOWN:
                return UNKNOWN
            current = self.now(arg).copy()
            conversion = spec.group(4)
            if conversion in "di":
                if kind in _TEXTUAL:
                    current = _call("sqlite_int", current)
                elif kind == REAL:
                    current = _dd("CAST(trunc(:x) AS BIGINT)", x=current)  # SQLite truncates
                coerced.append(exp.Coalesce(this=current, expressions=[exp.Literal.number(0)]))  # NULL prints 0
            elif conversion == "f":
                digits = int(spec.group(3)) if spec.group(3) is not None else 6
                if kind in _TEXTUAL or digits > 15:
                    return self.unsupported("printf('%f') of a text, or with more than 15 decimals")
                # SQLite's digits, which DuckDB's printf then writes as they are.
                rounded = _call("sqlite_decimal", _double(current), exp.Literal.number(digits))
                coerced.append(exp.Coalesce(this=rounded, expressions=[_double(exp.Literal.number(0))]))
            elif conversion == "s":
                try:
                    text = _to_text(current, kind)
                except Untranslatable as exc:
                    return self.unsupported(exc.reason)
                coerced.append(exp.Coalesce(this=text, expressions=[exp.Literal.string("")]))  # NULL prints ''
            else:
                return self.unsupported(f"printf('%{conversion}') is not rewritten")
        duck_format = _PRINTF_SPEC.sub(lambda m: m.group(0)[:-1] + "d" if m.group(4) == "i" else m.group(0), fmt.this)
        self.swap(node, _call("printf", exp.Literal.string(duck_format), *coerced))
        return TEXT

    def anonymous(self, node: Any) -> Kind:
        name = node.name.lower()
        if name in _DATE_FUNCTIONS:
            return self.date_function(node, name, list(node.expressions))
        if name == "printf" and node.expressions:
            return self.printf(node, node.expressions[0], list(node.expressions[1:]))
        if name == "total":
            return self.aggregate(node)
        return self.unsupported(f"the function {name}() is not rewritten for DuckDB")

    def date(self, node: Any) -> Kind:
        args = [node.this, *node.expressions] if node.this is not None else []
        return self.date_function(node, "date", args)

    def time_to_str(self, node: Any) -> Kind:
        from sqlglot import exp

        inner = node.this
        if not isinstance(inner, exp.TsOrDsToTimestamp):
            return self.unsupported("strftime() of an unexpected shape")
        value = inner.this
        if isinstance(value, exp.CurrentTimestamp):
            value = self.swap(value, exp.Literal.string("now"))
        return self.date_function(node, "strftime", [node.args["format"], value])

    def date_function(self, node: Any, name: str, args: list[Any]) -> Kind:
        """date(), datetime(), time(), julianday(), unixepoch() and strftime() with literal modifiers."""
        from sqlglot import exp

        fmt = None
        if name == "strftime":
            if not args or not (isinstance(args[0], exp.Literal) and args[0].is_string):
                return self.unsupported("strftime() with a format that is not a literal")
            fmt, args = args[0].this, args[1:]
        if not args:
            args = [exp.Literal.string("now")]
        value, modifiers = args[0], args[1:]
        if not all(isinstance(m, exp.Literal) and m.is_string for m in modifiers):
            return self.unsupported(f"{name}() with a modifier that is not a literal")
        texts = [m.this for m in modifiers]
        unixepoch = bool(texts) and texts[0].lower() == "unixepoch"
        if unixepoch:
            texts = texts[1:]
        kind = self.value(value)
        if kind == UNKNOWN:
            return UNKNOWN
        try:
            ts = _time_value(self.now(value).copy(), kind, unixepoch)
            for text in texts:
                ts = _apply_modifier(ts, text)
            result, out = self.time_result(name, fmt, ts)
        except Untranslatable as exc:
            return self.unsupported(exc.reason)
        self.swap(node, result)
        return out

    @staticmethod
    def time_result(name: str, fmt: str | None, ts: Any) -> tuple[Any, Kind]:
        from sqlglot import exp

        if fmt is not None:
            return _strftime(ts, fmt), TEXT
        if name == "date":
            return _call("strftime", ts, exp.Literal.string("%Y-%m-%d")), DATE
        if name == "datetime":
            return _call("strftime", ts, exp.Literal.string("%Y-%m-%d %H:%M:%S")), DATETIME
        if name == "time":
            return _call("strftime", ts, exp.Literal.string("%H:%M:%S")), TEXT
        if name == "julianday":
            return _dd("(epoch_ms(:ts) + 210866760000000) / 86400000.0", ts=ts), REAL
        return _unixepoch(ts), INTEGER

    # aggregates and windows
    def aggregate(self, node: Any) -> Kind:
        """An aggregate or window call: ``node`` may be a Window around a Filter around the function."""
        from sqlglot import exp

        window = node if isinstance(node, exp.Window) else None
        function = node.this if window is not None else node
        filter_ = None
        if isinstance(function, exp.Filter):
            filter_, function = function, function.this
        if window is not None:
            self.window_spec(window)
        if filter_ is not None:
            self.check_args(filter_, {"this", "expression"})
            self.condition(filter_.expression.this)
        total = isinstance(function, exp.Anonymous) and function.name.lower() == "total"
        kind = self.aggregate_function(function)
        if total and kind != UNKNOWN:
            # total() is sum() as a real, and 0.0 rather than NULL when no value is summed.
            self.swap(node, exp.Coalesce(this=self.now(node).copy(), expressions=[_double(exp.Literal.number(0))]))
        return kind

    def window_spec(self, window: Any) -> None:
        from sqlglot import exp

        self.check_args(window, {"this", "partition_by", "order", "spec", "alias", "over"})
        for expression in list(window.args.get("partition_by") or ()):
            self.value(expression)
        order = window.args.get("order")
        if order is not None:
            for ordered in order.expressions:
                self.check_args(ordered, {"this", "desc", "nulls_first"})
                self.value(ordered.this)
        spec = window.args.get("spec")
        if spec is not None:
            for bound in ("start", "end"):
                value = spec.args.get(bound)
                if isinstance(value, exp.Expression) and self.expr(value) != INTEGER:
                    self.unsupported("a window frame bound that is not a whole number")

    def aggregate_function(self, function: Any) -> Kind:
        from sqlglot import exp

        ranking = _RANKING.get(type(function).__name__)
        if ranking is not None:
            return ranking
        if isinstance(function, exp.Ntile):
            if function.this is not None and self.number(function.this) != INTEGER:
                return self.unsupported("ntile() of a count that is not a whole number")
            return INTEGER
        if isinstance(function, (exp.Lag, exp.Lead)):
            self.check_args(function, {"this", "offset", "default"})
            kind = self.value(function.this)
            offset = function.args.get("offset")
            if offset is not None and self.number(offset) != INTEGER:
                return self.unsupported("lag()/lead() by an offset that is not a whole number")
            default = function.args.get("default")
            if default is not None:
                kind = self.common([kind, self.value(default)], "lag()/lead() and its default")
            return kind
        if isinstance(function, (exp.FirstValue, exp.LastValue)):
            self.check_args(function, {"this"})
            return self.value(function.this)
        if isinstance(function, exp.NthValue):
            self.check_args(function, {"this", "offset"})
            if self.number(function.args["offset"]) != INTEGER:
                return self.unsupported("nth_value() at a position that is not a whole number")
            return self.value(function.this)
        return self.plain_aggregate(function)

    def plain_aggregate(self, function: Any) -> Kind:
        from sqlglot import exp

        argument = function.this if not isinstance(function, exp.Anonymous) else None
        if isinstance(argument, exp.Distinct):
            if len(argument.expressions) != 1:
                return self.unsupported("DISTINCT over several values in an aggregate")
            argument = argument.expressions[0]
        if isinstance(function, exp.Count):
            self.check_args(function, {"this", "big_int"})
            if argument is not None and not isinstance(argument, exp.Star):
                self.value(argument)
            return INTEGER
        if isinstance(function, (exp.Sum, exp.Avg)):
            self.check_args(function, {"this"})
            kind = self.number(argument)
            if kind == UNKNOWN or isinstance(function, exp.Avg):
                return REAL if kind != UNKNOWN else UNKNOWN
            return INTEGER if kind in (INTEGER, FLAG) else REAL
        if isinstance(function, (exp.Min, exp.Max)):
            self.check_args(function, {"this"})
            return self.value(argument)
        if isinstance(function, exp.GroupConcat):
            self.check_args(function, {"this", "separator"})
            if not self.text(argument):
                return UNKNOWN
            separator = function.args.get("separator")
            if separator is not None and not (isinstance(separator, exp.Literal) and separator.is_string):
                return self.unsupported("group_concat() with a separator that is not a literal")
            # Whatever the engine, the order of the parts is unspecified (SQLite's documentation says so).
            values = self.now(argument).copy()
            if isinstance(function.this, exp.Distinct):
                values = exp.Distinct(expressions=[values])
            separator = separator.copy() if separator is not None else exp.Literal.string(",")
            self.swap(function, _call("string_agg", values, separator))
            return TEXT
        if isinstance(function, exp.Anonymous) and function.name.lower() == "total":
            if len(function.expressions) != 1:
                return self.unsupported("total() takes one value")
            value = function.expressions[0]
            if self.number(value) == UNKNOWN:
                return UNKNOWN
            self.swap(function, exp.Sum(this=_double(self.now(value).copy())))
            return REAL
        return self.unsupported(f"{_describe(function)} has no DuckDB form known to answer as SQLite does")


_RANKING = {"RowNumber": INTEGER, "Rank": INTEGER, "DenseRank": INTEGER, "PercentRank": REAL, "CumeDist": REAL}
_ASCII_LOWER = str.maketrans(_UPPER, _LOWER)


def _describe(node: Any) -> str:
    from sqlglot import exp

    if isinstance(node, exp.Anonymous):
        return f"the function {node.name.lower()}()"
    if isinstance(node, exp.Func):
        return f"the function {node.sql_name().lower()}()"
    return f"the construct {type(node).__name__}"


@functools.cache
def _handlers() -> dict[type, Callable[[_Translator, Any], Kind]]:
    """Which method translates each sqlglot node class (built on first use: sqlglot loads lazily)."""
    from sqlglot import exp

    t = _Translator
    handlers: dict[type, Callable[[_Translator, Any], Kind]] = {
        exp.Literal: t.literal,
        exp.Boolean: t.boolean,
        exp.Null: t.null,
        exp.Column: t.column,
        exp.Alias: t.alias,
        exp.Paren: t.paren,
        exp.Subquery: t.subquery,
        exp.Add: t.arithmetic,
        exp.Sub: t.arithmetic,
        exp.Mul: t.arithmetic,
        exp.Div: t.arithmetic,
        exp.Mod: t.arithmetic,
        exp.Neg: t.negative,
        exp.DPipe: t.concat,
        exp.Is: t.is_,
        exp.NullSafeEQ: t.null_safe,
        exp.NullSafeNEQ: t.null_safe,
        exp.And: t.logical,
        exp.Or: t.logical,
        exp.Not: t.not_,
        exp.Between: t.between,
        exp.In: t.in_,
        exp.Exists: t.exists,
        exp.Like: t.like,
        exp.Escape: t.escape,
        exp.Glob: t.glob,
        exp.Case: t.case,
        exp.If: t.iif,
        exp.Coalesce: t.coalesce,
        exp.Nullif: t.nullif,
        exp.Greatest: t.extreme,
        exp.Least: t.extreme,
        exp.Cast: t.cast,
        exp.Abs: t.numeric_function,
        exp.Round: t.round_,
        exp.Length: t.length,
        exp.Upper: t.upper_lower,
        exp.Lower: t.upper_lower,
        exp.Trim: t.trim,
        exp.Replace: t.replace_,
        exp.Substring: t.substring,
        exp.StrPosition: t.instr,
        exp.Typeof: t.typeof,
        exp.Format: t.format_node,
        exp.Date: t.date,
        exp.TimeToStr: t.time_to_str,
    }
    for comparison in (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE):
        handlers[comparison] = t.comparison
    return handlers
