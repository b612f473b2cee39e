"""SQL understanding shared by SQL connectors, on ``sqlglot`` (imported lazily).

* :func:`check_query_only` is the parser layer of read-only in depth (spec 10.4). It refuses, in
  this order: SQL over the size limits (before any parsing, since sqlglot cannot be interrupted),
  characters on which lexers disagree, anything but one statement that is a query, data-modifying
  nodes, ``INTO``, relations that read server files, and calls to functions that are not on the
  engine's allow-list. It returns a :class:`CheckedQuery` whose text is the query *regenerated*
  from the checked syntax tree, comments dropped: the engine runs that text, never the raw one,
  so what runs is what was checked. It is one layer of several; the engine's read-only mode and
  the driver enforce the rest.
* :func:`function_allow_list` reads an engine's allow-list of functions (``sql_functions/*.txt``,
  one name a line, by family), which other SQL runners load too.
* :func:`date_literals` finds the key dates of a query for ``model_response.dates``.
* :func:`describe_syntax_error` turns sqlglot's parse and tokenizer errors into words for the
  model: what is wrong and where, without sqlglot's terminal escape codes or class names.
"""

from __future__ import annotations

import bisect
import datetime as dt
import functools
import itertools
import logging
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import AcpError, InvalidArguments, ReadOnlyViolation

# 'YYYY-MM-DD' (optionally followed by a time) or 'YYYYMMDD', ASCII digits only.
_DATE_LITERAL = re.compile(
    r"^(?:([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[T ][0-9:.+\-Z]*)?|([0-9]{4})([0-9]{2})([0-9]{2}))$"
)

logging.getLogger("sqlglot").setLevel(logging.ERROR)  # its "falling back to Command" warnings are noise

# sqlglot runs in the caller's thread and cannot be interrupted there: these bound its work before
# it starts. A 0.8 MB text once spent 17-60 s of CPU in the checks. At 10,000 tokens the worst shape
# measured (bench/sql_check_limits.py) costs the checks here about 0.6 s of CPU, and sqlglot's scope
# analysis (which `hidden` runs, quadratic on long OR and UNION chains) about 2.5 s more; refusing a
# 256 KB text over the limits costs under 1 s. Realistic analytics queries hold a few hundred tokens.
MAX_SQL_BYTES = 256 * 1024
MAX_SQL_TOKENS = 10_000

_WRITE_NODES = (
    "Insert",
    "Update",
    "Delete",
    "Merge",
    "Create",
    "Drop",
    "Alter",
    "AlterColumn",
    "Attach",
    "Detach",
    "Pragma",
    "Transaction",
    "Commit",
    "Rollback",
    "Analyze",
    "Copy",
    "Command",
    "Use",
    "Set",
    "Grant",
    "Revoke",
    "TruncateTable",
    "Kill",
    "LoadData",
    "Refresh",
    "Cache",
    "Uncache",
    "Lock",  # SELECT … FOR UPDATE / FOR SHARE: takes row locks
)
_STATEMENT_NAMES = {
    "Insert": "INSERT",
    "Update": "UPDATE",
    "Delete": "DELETE",
    "Merge": "MERGE",
    "Create": "CREATE",
    "Drop": "DROP",
    "Alter": "ALTER",
    "Attach": "ATTACH",
    "Detach": "DETACH",
    "Pragma": "PRAGMA",
    "Transaction": "BEGIN",
    "Commit": "COMMIT",
    "Rollback": "ROLLBACK",
    "Analyze": "ANALYZE",
    "Copy": "COPY",
    "Use": "USE",
    "Set": "SET",
    "Grant": "GRANT",
    "Revoke": "REVOKE",
    "TruncateTable": "TRUNCATE",
    "LoadData": "LOAD DATA",
    "Lock": "SELECT … FOR UPDATE/SHARE",
}


SEVERAL_STATEMENTS = (
    "This ACP runs exactly one query per call (a read-only safeguard), and the SQL holds several statements. "
    "Send each SELECT in its own call."
)


def _statement_name(node: Any) -> str:
    from sqlglot import exp

    kind = type(node).__name__
    if isinstance(node, exp.Command):
        return str(node.this).upper()
    if kind in _STATEMENT_NAMES:
        return _STATEMENT_NAMES[kind]
    words = node.sql().split(None, 1)
    return words[0].upper() if words else kind.upper()


def _refuse(statement: str, detail: str = "") -> ReadOnlyViolation:
    return ReadOnlyViolation(
        f"This ACP is read-only: only SELECT queries are executed (the statement is {statement}{detail}). "
        "Rewrite it as a single SELECT."
    )


class _Names:
    """Names matched case-insensitively; an entry ending in ``*`` stands for every name with that
    prefix (``pg_ls_*``), because engines name a family of system relations by a prefix and add
    members in new versions: an exact list misses them."""

    def __init__(self, names: Iterable[str]) -> None:
        lowered = {name.lower() for name in names}
        self._exact = frozenset(name for name in lowered if not name.endswith("*"))
        self._prefixes = tuple(name[:-1] for name in lowered if name.endswith("*"))

    def __contains__(self, name: str) -> bool:
        return name in self._exact or name.startswith(self._prefixes)


# -- the functions a query may call ---------------------------------------------------------------
_FUNCTION_LISTS = Path(__file__).with_name("sql_functions")


@functools.cache
def function_allow_list(engine: str) -> frozenset[str]:
    """The lower-case names in ``sql_functions/<engine>.txt`` (one a line; ``#`` starts a comment)."""
    path = _FUNCTION_LISTS / f"{engine}.txt"
    names = (line.split("#", 1)[0].strip().lower() for line in path.read_text("utf-8").splitlines())
    return frozenset(name for name in names if name)


@dataclass(frozen=True)
class FunctionRules:
    """Which functions a query may call, by the names the engine resolves.

    ``builtin`` is the engine's allow-list, for unqualified calls and calls qualified by one of
    ``builtin_schemas`` (``pg_catalog.upper``): ``public.upper`` is someone's own function, not the
    built-in. ``extra`` is the source configuration's ``allowed_functions``: names as written
    (``my_udf`` or ``analytics.my_udf``) that the operator trusts, user-defined functions and
    extensions alike. Where ``quoted_names_exact`` (PostgreSQL), a quoted name matches only itself:
    ``"Upper"`` is not ``upper``. ``runner`` names the tool in refusals: a connector's ``execute_sql``
    (whose source setting ``allowed_functions`` extends the list), or another tool such as the
    bridge's ``acp_query``, whose list no setting extends.
    """

    builtin: frozenset[str]
    extra: frozenset[str] = frozenset()
    builtin_schemas: frozenset[str] = frozenset()
    quoted_names_exact: bool = False
    runner: str = "execute_sql"

    def allows(self, parts: tuple[str, ...], quoted: bool) -> bool:
        exact = quoted and self.quoted_names_exact
        name = parts[-1] if exact else parts[-1].lower()
        qualifier = tuple(p.lower() for p in parts[:-1])
        if name in self.builtin and (not qualifier or ".".join(qualifier) in self.builtin_schemas):
            return True
        written = ".".join((*qualifier, name))
        if exact:
            return written in self.extra or parts[-1] in self.extra
        extra = {e.lower() for e in self.extra}
        return written in extra or name in extra


def _refuse_function(parts: tuple[str, ...], quoted: bool, functions: FunctionRules) -> ReadOnlyViolation:
    name = ".".join((*(p.lower() for p in parts[:-1]), parts[-1] if quoted else parts[-1].lower()))
    connector = functions.runner == "execute_sql"
    owner = "this connector's" if connector else "its"
    why = (
        "a name qualified by a schema or database calls a stored function, not a built-in one"
        if len(parts) > 1
        else f"{functions.runner} runs only the functions on {owner} allow-list (aggregates, window, math, "
        "string, date and time, JSON, regex, casting and conditional functions); others can read files, run "
        "SQL text, take locks or change state out of the read-only checks' sight"
    )
    if not connector:
        return ReadOnlyViolation(f"The function {name}() is not allowed: {why}. Rewrite the query without {name}().")
    configured = " It is not in the source's allowed_functions either." if functions.extra else ""
    return ReadOnlyViolation(
        f"The function {name}() is not allowed: {why}.{configured} Rewrite the query without {name}(). If it is "
        f'a function of the user\'s own or of an extension they trust, ask the user to add "{name}" to the '
        "source's allowed_functions setting."
    )


@dataclass(frozen=True)
class CheckedQuery:
    """One read-only query as the checker read it, and as it runs.

    ``tree`` is sqlglot's syntax tree of the one statement (an ``exp.Query`` or ``exp.Values``),
    read back from the regenerated text; ``dialect`` the sqlglot dialect it was read and is written
    in; ``dates`` the date literals of the original text; ``text`` the SQL regenerated from the
    checked tree (comments dropped), which :meth:`sql` gives the engine to run.
    """

    tree: Any
    dialect: str
    dates: list[str]
    text: str

    def sql(self) -> str:
        """The SQL to run: regenerated from the checked tree, never the raw text."""
        return self.text


def check_sql_size(sql: str) -> None:
    """Refuse SQL text over :data:`MAX_SQL_BYTES` (UTF-8), before anything reads it."""
    size = len(sql.encode("utf-8", "surrogatepass"))
    if size > MAX_SQL_BYTES:
        raise InvalidArguments(
            f"The SQL is {size:,} bytes long; this ACP reads at most {MAX_SQL_BYTES:,} bytes "
            f"({MAX_SQL_BYTES // 1024} KB) of SQL per call. Shorten it: filter or join on a table instead of "
            "listing thousands of values, or split the work into several calls."
        )


def check_query_only(
    sql: str,
    dialect: str,
    functions: FunctionRules,
    forbidden_relations: Iterable[str] = (),
    *,
    columns_named_by_text: bool = False,
) -> CheckedQuery:
    """Refuse anything but one read-only query; return it as a :class:`CheckedQuery`.

    ``functions`` says which calls are allowed (checked on the regenerated text, which is what
    runs). ``forbidden_relations`` (tables and views, matched by their own name whatever the
    qualification; ``*`` ends a family prefix) are system views that read server files or have
    side effects when read (PostgreSQL's ``pg_hba_file_rules`` reads pg_hba.conf), which no function
    call shows. ``columns_named_by_text`` is for engines that name an unaliased result column after
    its text as written (SQLite, MariaDB): such columns keep their name through regeneration.

    Raises ReadOnlyViolation naming the statement, function, relation or character found, and
    InvalidArguments for SQL too large, too deep or that does not parse as a query. One
    tokenization serves the checks and the dates; callers run this off the event loop.
    """
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.errors import TokenError

    check_sql_size(sql)
    engine = Dialect.get_or_raise(dialect)
    try:
        tokens = engine.tokenize(sql)
    except TokenError as exc:
        raise _unparsable(exc, sql, None) from None
    _check_characters(sql, tokens)
    if len(tokens) > MAX_SQL_TOKENS:
        raise InvalidArguments(
            f"The SQL has {len(tokens):,} tokens (names, values and symbols); this ACP reads at most "
            f"{MAX_SQL_TOKENS:,} per call. Shorten it: filter or join on a table instead of listing thousands "
            "of values, or split the work into several calls."
        )
    _check_tokens(tokens)
    dates = _dates_in(tokens)
    relations = _Names(forbidden_relations)
    try:
        statement = _one_query(engine, tokens, sql, functions)
        _check_nodes(statement, relations)
        if columns_named_by_text:
            _keep_result_names(engine, statement, tokens, sql)
        text, tree, calls = _regenerate(engine, statement)
        _check_nodes(tree, relations)  # what runs, as sqlglot reads it back
    except RecursionError:
        raise InvalidArguments(
            "The SQL nests too deeply for this ACP to check (parentheses, subqueries, calls or CASE "
            "expressions inside one another, about 40 levels or more). Flatten it: use a CTE (WITH) per step, "
            "IN (…) instead of chains of OR, and one CASE instead of nested ones."
        ) from None
    _check_functions(calls, tree, functions)
    return CheckedQuery(tree, dialect, dates, text)


def _one_query(engine: Any, tokens: list[Any], sql: str, functions: FunctionRules) -> Any:
    """The one statement of ``tokens``, which must be a query; anything else is refused."""
    from sqlglot import exp
    from sqlglot.errors import ParseError

    try:
        parsed = _checker_parser(engine).parse(tokens, sql)
    except ParseError as exc:
        # Fail closed: what the checker cannot read, it cannot vouch for (a superuser reached
        # pg_read_file through syntax the parser does not know). A call to a function off the
        # allow-list is named as such, since fixing the syntax would not make it run.
        call = _disallowed_call(tokens, functions)
        if call is not None:
            raise _refuse_function(*call, functions) from None
        raise _unparsable(exc, sql, tokens) from None
    # A comment after the last ";" parses as a Semicolon node: it is not a statement.
    statements = [s for s in parsed if s is not None and not isinstance(s, exp.Semicolon)]
    if not statements:
        raise InvalidArguments("The SQL is empty. Send one SELECT query.")
    writes = [s for s in statements if not isinstance(s, (exp.Query, exp.Values))]
    if len(statements) > 1:
        # Several statements are how transaction escapes (SELECT 1; COMMIT; DROP …) get through:
        # refused as a read-only matter even when each one is harmless.
        if writes:
            raise _refuse(_statement_name(writes[0]), ", after another statement")
        raise ReadOnlyViolation(SEVERAL_STATEMENTS)
    if isinstance(statements[0], exp.Pivot):
        raise InvalidArguments(
            "A PIVOT or UNPIVOT statement on its own is not run here: write it as a query, "
            "SELECT * FROM (PIVOT … ON … USING …), or use conditional aggregates: "
            "SUM(x) FILTER (WHERE year = 2024) AS y2024, or SUM(CASE WHEN year = 2024 THEN x END)."
        )
    if writes:
        raise _refuse(_statement_name(statements[0]))
    return statements[0]


def _disallowed_call(tokens: list[Any], functions: FunctionRules) -> tuple[tuple[str, ...], bool] | None:
    """The first name followed by "(" that is not an allowed function, in SQL that does not parse
    (a name after AS is an alias with its column list, not a call)."""
    from sqlglot import TokenType

    for index, token in enumerate(tokens[:-1]):
        if token.token_type not in (TokenType.VAR, TokenType.IDENTIFIER):
            continue
        if tokens[index + 1].token_type != TokenType.L_PAREN or (
            index and tokens[index - 1].token_type == TokenType.ALIAS
        ):
            continue
        parts, before = [token.text], index
        while before >= 2 and tokens[before - 1].token_type == TokenType.DOT:
            parts.insert(0, tokens[before - 2].text)
            before -= 2
        quoted = token.token_type == TokenType.IDENTIFIER
        if not functions.allows(tuple(parts), quoted):
            return tuple(parts), quoted
    return None


def _check_nodes(statement: Any, relations: _Names) -> None:
    from sqlglot import exp

    for node in statement.walk():
        kind = type(node).__name__
        if kind in _WRITE_NODES:
            raise _refuse(_statement_name(node), " inside the query")
        if isinstance(node, exp.Into):
            raise _refuse("SELECT … INTO")
        if isinstance(node, exp.Table) and node.name.lower() in relations:
            raise ReadOnlyViolation(
                f"The relation {node.name.lower()} is not allowed: reading it reads files of the server or has "
                "side effects. Rewrite the query without it."
            )
        if isinstance(node, exp.Operator):
            # PostgreSQL's OPERATOR(schema.op) names an operator, and so a function, by text.
            raise ReadOnlyViolation(
                "OPERATOR(…) is not allowed: it calls an operator by name, out of the function checks' sight. "
                "Write the operator itself (a + b, a || b) or call an allowed function."
            )
        if isinstance(node, exp.PropertyEQ) and isinstance(node.this, (exp.Parameter, exp.SessionParameter)):
            raise ReadOnlyViolation(
                "Assigning a variable (@name := …) is not allowed: it changes session state that outlives the "
                "query. Compute the value in the query itself, with a CTE or a subquery."
            )


# Where a query's list of result columns ends, at its own level.
_END_OF_COLUMNS = frozenset(
    {"FROM", "WHERE", "GROUP_BY", "HAVING", "WINDOW", "QUALIFY", "ORDER_BY", "LIMIT", "OFFSET", "FETCH", "UNION",
     "INTERSECT", "EXCEPT", "INTO", "SEMICOLON"}
)  # fmt: skip
# What may come between SELECT and the first result column (and optimizer hints, HINT tokens).
_SELECT_MODIFIERS = frozenset(
    {"DISTINCT", "ALL", "HIGH_PRIORITY", "STRAIGHT_JOIN", "SQL_SMALL_RESULT", "SQL_BIG_RESULT", "SQL_BUFFER_RESULT",
     "SQL_CACHE", "SQL_NO_CACHE", "SQL_CALC_FOUND_ROWS", "DISTINCTROW"}
)  # fmt: skip


def _keep_result_names(engine: Any, statement: Any, tokens: list[Any], sql: str) -> None:
    """Alias each unaliased computed column of the result with its text as written, where the
    regenerated text would differ (``count(*)`` comes back as ``COUNT(*)``): SQLite and MariaDB name
    such a column after its text, and the name is part of the answer. The columns are those of
    the first SELECT at the top level of the text (where a WITH, UNION or nothing puts them)."""
    from sqlglot import exp

    select = statement
    while isinstance(select, exp.SetOperation):
        select = select.this
    if not isinstance(select, exp.Select):
        return
    spans = _result_column_spans(tokens)
    projections = select.expressions
    if spans is None or len(spans) != len(projections):
        return
    for projection, (start, end) in zip(projections, spans, strict=True):
        if isinstance(projection, (exp.Alias, exp.Column, exp.Star, exp.Literal)):
            continue  # named by their alias, column name or value, whatever the text
        written = sql[start:end]
        if engine.generate(projection, **_GENERATE) != written:
            projection.replace(exp.alias_(projection.copy(), exp.to_identifier(written, quoted=True)))


def _result_column_spans(tokens: list[Any]) -> list[tuple[int, int]] | None:
    """Character spans of the result columns of the first top-level SELECT, or None."""
    depth, index = 0, None
    for position, token in enumerate(tokens):
        kind = token.token_type.name
        if kind in ("L_PAREN", "L_BRACKET", "L_BRACE"):
            depth += 1
        elif kind in ("R_PAREN", "R_BRACKET", "R_BRACE"):
            depth -= 1
        elif kind == "SELECT" and depth == 0:
            index = position + 1
            break
    if index is None:
        return None
    while index < len(tokens) and (
        tokens[index].text.upper() in _SELECT_MODIFIERS or tokens[index].token_type.name == "HINT"
    ):
        index += 1
    spans: list[tuple[int, int]] = []
    depth, first = 0, index
    for position in range(index, len(tokens) + 1):
        token = tokens[position] if position < len(tokens) else None
        kind = token.token_type.name if token else "SEMICOLON"
        if kind in ("L_PAREN", "L_BRACKET", "L_BRACE"):
            depth += 1
        elif kind in ("R_PAREN", "R_BRACKET", "R_BRACE"):
            depth -= 1
        if depth == 0 and (kind == "COMMA" or kind in _END_OF_COLUMNS):
            if position == first:
                return None
            spans.append((tokens[first].start, tokens[position - 1].end + 1))
            if kind != "COMMA":
                return spans
            first = position + 1
        elif depth < 0:
            return None
    return None


# -- regeneration: the text that runs ---------------------------------------------------------------
_GENERATE = {"comments": False, "normalize_functions": False}
_REGENERATIONS = 3  # regenerated text settles after one or two rounds, or never


def _regenerate(engine: Any, statement: Any) -> tuple[str, Any, list[tuple[tuple[str, ...], bool]]]:
    """The SQL to run, its syntax tree as sqlglot reads it back, and the calls in it.

    The text is written from the checked tree without comments (a comment is where lexers disagree:
    on MariaDB ``--`` followed by U+00A0 is code), then read back and written again until it no
    longer changes: a text that sqlglot reads back into itself is one whose every part the checks
    below saw. sqlglot sometimes writes a construct in a form it then reads differently; such a
    query is refused rather than run in a form nobody checked.
    """
    from sqlglot import exp
    from sqlglot.errors import ParseError, TokenError

    for hint in list(statement.find_all(exp.Hint)):
        hint.pop()  # optimizer hints (/*+ … */) only tune a plan; their text is not worth a risk
    text = engine.generate(statement, copy=False, **_GENERATE)  # the tree as read is not used after this
    for _ in range(_REGENERATIONS):
        parser = _checker_parser(engine)
        try:
            tokens = engine.tokenize(text)
            read_back = [s for s in parser.parse(tokens, text) if s is not None]
        except (ParseError, TokenError):
            read_back = []
        if len(read_back) != 1:
            break
        again = engine.generate(read_back[0], **_GENERATE)
        if again == text:
            # sqlglot writes some string literals back as words (PostgreSQL's date_part('year', d)
            # becomes EXTRACT(YEAR FROM d)): what runs is held to the same characters as what came.
            _check_characters(text, tokens)
            return text, read_back[0], parser.calls()
        text = again
    raise ReadOnlyViolation(
        "This query uses a construct that this ACP cannot write back for the engine exactly as it checked it "
        f"({_excerpt(text)}), so it is not run. Rewrite that part in plainer SQL: a CASE expression or a "
        "conditional aggregate (SUM(CASE WHEN … THEN x END)) instead of engine-specific shorthand."
    )


def _excerpt(text: str, width: int = 120) -> str:
    flat = " ".join(text.split())
    return f'"{flat}"' if len(flat) <= width else f'"{flat[: width - 1]}…"'


# DuckDB's functions that take a lambda: only among their arguments is "x -> …" a lambda. Everywhere
# else, and on every other engine, -> is JSON extraction (DuckDB's binder decides the same way).
_DUCKDB_LAMBDA_FUNCTIONS = frozenset(
    {"apply", "array_apply", "array_filter", "array_reduce", "array_transform", "filter", "list_apply",
     "list_filter", "list_reduce", "list_transform", "reduce"}
)  # fmt: skip


def _checker_parser(engine: Any) -> Any:
    """The dialect's parser as the checks need it (see :func:`_checker_parser_class`)."""
    from sqlglot.dialects.duckdb import DuckDB

    lambdas = _DUCKDB_LAMBDA_FUNCTIONS if isinstance(engine, DuckDB) else frozenset()
    parser = _checker_parser_class(engine.parser_class, lambdas)(dialect=engine)
    parser.reset()
    return parser


@functools.cache
def _checker_parser_class(parser_class: type, lambda_functions: frozenset[str]) -> type:
    """``parser_class`` that records each function call it reads (the name as written, with its
    qualifier, and whether it was quoted; a call the parser backs out of is forgotten), and that
    reads ``x -> y`` as a lambda only among the arguments of ``lambda_functions``.

    sqlglot reads an arrow in any call's arguments as a lambda: ``length(email -> 'x')`` became a
    lambda whose parameter ``email`` is no column, while PostgreSQL, SQLite and MySQL (and DuckDB
    outside its list functions) read the JSON operator on the column ``email``.
    """
    from sqlglot import TokenType

    arrow_lambdas = dict(parser_class.LAMBDAS)  # type: ignore[attr-defined]
    no_arrow_lambdas = {kind: build for kind, build in arrow_lambdas.items() if kind != TokenType.ARROW}

    class CheckerParser(parser_class):  # type: ignore[misc]
        _calls: list[tuple[int, tuple[str, ...], bool]]
        _callers: list[str]

        def reset(self) -> None:
            super().reset()
            self._calls = []
            self._callers = []

        def calls(self) -> list[tuple[tuple[str, ...], bool]]:
            return [(parts, quoted) for _, parts, quoted in self._calls]

        def _retreat(self, index: int) -> None:
            super()._retreat(index)
            while self._calls and self._calls[-1][0] >= index:
                self._calls.pop()

        def _parse_lambda(self, alias: bool = False) -> Any:
            caller = self._callers[-1] if self._callers else ""
            self.LAMBDAS = arrow_lambdas if caller in lambda_functions else no_arrow_lambdas
            return super()._parse_lambda(alias)

        def _parse_function_call(self, *args: Any, **kwargs: Any) -> Any:
            head, index = self._curr, self._index
            if not head or self._next.token_type != TokenType.L_PAREN or head.token_type in self.SUBQUERY_PREDICATES:
                return super()._parse_function_call(*args, **kwargs)
            parts = [head.text]
            before = index
            while before >= 2 and self._tokens[before - 1].token_type == TokenType.DOT:
                parts.insert(0, self._tokens[before - 2].text)
                before -= 2
            quoted = head.token_type == TokenType.IDENTIFIER
            if quoted:
                # Written back as written: sqlglot would turn "Upper"(x) into UPPER(x), which on
                # PostgreSQL is another function than the one named.
                kwargs["anonymous"] = True
            mark = len(self._calls)
            self._calls.append((index, tuple(parts), quoted))
            self._callers.append(head.text.lower())
            try:
                result = super()._parse_function_call(*args, **kwargs)
            except BaseException:
                del self._calls[mark:]
                raise
            finally:
                self._callers.pop()
            if result is None:
                del self._calls[mark:]
            return result

    return CheckerParser


def _check_functions(calls: list[tuple[tuple[str, ...], bool]], tree: Any, functions: FunctionRules) -> None:
    """Every call in the text that runs must be allowed; anonymous calls in the tree are checked
    again by their own name, in case a form of call ever reaches the tree another way."""
    from sqlglot import exp

    for parts, quoted in calls:
        if not functions.allows(parts, quoted):
            raise _refuse_function(parts, quoted, functions)
    for node in tree.find_all(exp.Anonymous, exp.AnonymousAggFunc):
        quoted = isinstance(node.this, exp.Identifier) and node.this.quoted
        parts = (node.name,)
        if not functions.allows(parts, quoted) and not any(p[-1] == node.name for p, _ in calls):
            raise _refuse_function(parts, quoted, functions)


# -- characters on which lexers disagree -------------------------------------------------------------
_UNUSUAL = re.compile(r"[^\t\n\r\x20-\x7e]")
_QUOTED_TOKENS = ("STRING", "IDENTIFIER")


def _check_characters(sql: str, tokens: list[Any]) -> None:
    """Outside quoted literals and quoted names, only printable ASCII, tab, line feed, carriage return
    and non-ASCII letters and combining marks (names in other scripts) are accepted.

    Lexers disagree on the rest: MariaDB reads ``--`` followed by U+00A0 as code where sqlglot reads a
    comment; U+2028, U+FEFF, zero-width and control characters split or join words differently from
    one engine to the next. A class of characters is refused, not a list of known tricks. Quoted spans
    are the checker's own lexer's, which is what the regenerated SQL writes back.
    """
    if not _UNUSUAL.search(sql):
        return
    quoted = sorted((t.start, t.end) for t in tokens if t.token_type.name.endswith(_QUOTED_TOKENS))
    starts = [start for start, _ in quoted]
    for match in _UNUSUAL.finditer(sql):
        char, at = match.group(), match.start()
        if ord(char) > 0x7F and unicodedata.category(char)[0] in "LM":
            continue
        span = bisect.bisect_right(starts, at) - 1
        if span >= 0 and quoted[span][0] < at <= quoted[span][1]:
            continue
        line = sql.count("\n", 0, at) + 1
        column = at - (sql.rfind("\n", 0, at) + 1) + 1
        name = unicodedata.name(char, "a control character")
        raise ReadOnlyViolation(
            f"The SQL holds the character U+{ord(char):04X} ({name}) at line {line}, column {column}, outside "
            "quotes. This ACP accepts only plain ASCII spaces, tabs and line breaks between words, because "
            "database engines and the read-only checks read other spacing and control characters differently. "
            "Replace it with a plain space (or remove it) and call again; inside quoted strings it is fine."
        )


_QUERY_STARTS = frozenset({"SELECT", "WITH", "VALUES", "L_PAREN"})


def _unparsable(exc: Exception, sql: str, tokens: list[Any] | None) -> AcpError:
    """Refuse SQL the checker cannot read: a query with a syntax error is the model's to fix
    (ACP_INVALID_ARGUMENTS); anything else, or several statements, is refused as a write."""
    detail = describe_syntax_error(exc, sql)
    kinds = [t.token_type.name for t in tokens or []]
    several = "SEMICOLON" in kinds[:-1] and kinds.index("SEMICOLON") < len(kinds) - 1
    if tokens and kinds[0] in _QUERY_STARTS and not several:
        return InvalidArguments(f"The SQL has a syntax error {detail}. Fix it and call again.")
    return ReadOnlyViolation(
        "This ACP runs only SQL it can check as one read-only query, and this SQL could not be read as one: "
        f"syntax error {detail}. Write it as a single plain SELECT."
    )


# -- syntax errors in words ----------------------------------------------------------------------
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_CLASS = re.compile(r"<class '(?:[\w]+\.)*(\w+)'>")
_TOKEN_REPR = re.compile(
    r"<Token token_type: [\w.]+, text: (.*?), line: \d+, col: \d+, start: \d+, end: \d+, comments: .*?>"
)
_MISSING_PART = re.compile(r"^Required keyword: '\w+' missing for <class '(?:\w+\.)*(\w+)'>$")
_TOO_MANY_ARGUMENTS = re.compile(r"^The number of provided arguments \((\d+)\) is greater than .*\((\d+)\)$")
_EXPECTING = re.compile(r"^Expect(?:ing|ed) (.+)$")
_UNCLOSED = re.compile(r"^Missing (.+) from \d+:(\d+)$")
_BAD_NUMBER = re.compile(r"^Numeric string contains invalid characters from \d+:(\d+)$")
# sqlglot expression classes the model knows as clauses.
_CLAUSES = {
    "Where": "WHERE clause",
    "Having": "HAVING clause",
    "Group": "GROUP BY clause",
    "Order": "ORDER BY clause",
    "Limit": "LIMIT clause",
    "Offset": "OFFSET clause",
    "From": "FROM clause",
    "Join": "JOIN",
    "Qualify": "QUALIFY clause",
    "Case": "CASE expression",
    "If": "WHEN … THEN branch",
    "Cast": "CAST",
    "TryCast": "TRY_CAST",
    "In": "IN list",
    "Between": "BETWEEN",
    "Alias": "alias (AS)",
    "Window": "window (OVER)",
    "Union": "UNION",
    "Intersect": "INTERSECT",
    "Except": "EXCEPT",
}
_EXCERPT_BEFORE, _EXCERPT_AFTER = 40, 24


def describe_syntax_error(exc: Exception, sql: str) -> str:
    """Where and why sqlglot could not read ``sql``, as words to follow "syntax error":
    ``at line 1, column 17 ("WHERE" in "SELECT * FROM t WHERE"): the WHERE clause is incomplete:
    a part it needs is missing``. For a ``ParseError`` or ``TokenError`` (any other error gives its cleaned text);
    the result never holds terminal escape codes, Python class names or sqlglot's name.
    """
    from sqlglot.errors import ParseError, TokenError

    if isinstance(exc, ParseError) and exc.errors:
        first = exc.errors[0]
        highlight = _clean(str(first.get("highlight") or ""))
        start = _parse_error_offset(sql, first, str(first.get("highlight") or ""))
        return _at(sql, start, highlight, _parse_problem(str(first.get("description") or ""), highlight))
    if isinstance(exc, TokenError):
        start, problem = _token_problem(exc, sql)
        return _at(sql, start, None, problem)
    return f"({_clean(str(exc))[:200]})"


def _at(sql: str, start: int | None, highlight: str | None, problem: str) -> str:
    if start is None:
        return f"({problem})" if problem else ""
    line = sql.count("\n", 0, start) + 1
    column = start - (sql.rfind("\n", 0, start) + 1) + 1
    end = start + len(highlight or "")
    before, after = sql[max(start - _EXCERPT_BEFORE, 0) : start], sql[end : end + _EXCERPT_AFTER]
    excerpt = " ".join((before + sql[start:end] + after).split())
    if start > _EXCERPT_BEFORE:
        excerpt = "…" + excerpt
    if end + _EXCERPT_AFTER < len(sql):
        excerpt += "…"
    spot = f'"{highlight}" in ' if highlight and highlight.strip() else "near "
    near = f' ({spot}"{excerpt}")' if excerpt else ""
    return f"at line {line}, column {column}{near}: {problem}"


def _parse_error_offset(sql: str, error: dict[str, Any], highlight: str) -> int | None:
    """Where the highlighted token starts: sqlglot gives the line and the column of its last character."""
    line, col = error.get("line"), error.get("col")
    if isinstance(line, int) and isinstance(col, int) and line >= 1:
        line_start = 0
        for _ in range(line - 1):
            line_start = sql.find("\n", line_start) + 1
            if line_start == 0:
                break
        else:
            start = line_start + col - len(highlight)
            if start >= 0 and sql[start : start + len(highlight)] == highlight:
                return start
    found = sql.find(str(error.get("start_context") or "") + highlight)
    return found + len(str(error.get("start_context") or "")) if found >= 0 else None


def _parse_problem(description: str, highlight: str) -> str:
    missing = _MISSING_PART.match(description)
    if missing:
        kind = missing.group(1)
        if kind in _CLAUSES:
            return f"the {_CLAUSES[kind]} is incomplete: a part it needs is missing"
        if _is_expression(kind, "Binary"):
            return "an operator is missing the value on one of its sides"
        if _is_expression(kind, "Func"):
            return "a function call is missing an argument it needs"
        return "the statement is incomplete here: a part it needs is missing"
    too_many = _TOO_MANY_ARGUMENTS.match(description)
    if too_many:
        given, most = too_many.groups()
        return f"a function gets {given} arguments and takes at most {most}"
    if description == "Invalid expression / Unexpected token":
        return f'"{highlight}" is not expected here' if highlight.strip() else "the SQL ends too early"
    expecting = _EXPECTING.match(description)
    if expecting:
        wanted = _clean(expecting.group(1))
        return f"{wanted} is expected" if len(wanted) > 2 else f'"{wanted}" is expected'
    return _clean(description)[:200] or "the SQL cannot be read here"


def _is_expression(name: str, base: str) -> bool:
    from sqlglot import exp

    kind, parent = getattr(exp, name, None), getattr(exp, base)
    return isinstance(kind, type) and issubclass(kind, parent)


def _token_problem(exc: Exception, sql: str) -> tuple[int | None, str]:
    cause = str(exc.__cause__ or "")
    unclosed = _UNCLOSED.match(cause)
    if unclosed:
        delimiter, offset = unclosed.groups()
        return int(offset), f"a quoted text or name starts here and is never closed (no closing {delimiter})"
    bad_number = _BAD_NUMBER.match(cause)
    if bad_number:
        return int(bad_number.group(1)), "a hexadecimal or binary literal holds characters it cannot"
    if isinstance(exc.__cause__, IndexError):
        return len(sql), "the SQL ends in the middle of something (an unclosed comment, quote or bracket?)"
    # The tokenizer quotes the SQL from 50 characters before the failing one to 50 after.
    start, end = getattr(exc, "start", None), getattr(exc, "end", None)
    if isinstance(start, int) and start > 0:
        return min(start + 50, len(sql)), "the SQL cannot be split into words and symbols here"
    if isinstance(end, int) and end < len(sql) - 1:
        return max(end - 50, 0), "the SQL cannot be split into words and symbols here"
    return None, "the SQL cannot be split into words and symbols (an unclosed quote or comment?)"


def _clean(text: str) -> str:
    """sqlglot's text without terminal escape codes, class or token reprs, or its own name."""
    text = _TOKEN_REPR.sub(r"\1", _CLASS.sub(r"\1", _ANSI.sub("", text)))
    return " ".join(text.replace("sqlglot.", "").split())


def _check_tokens(tokens: list[Any]) -> None:
    """PostgreSQL's ``U&"…"`` escapes are refused: they can spell any name (``U&"pg\\005fread_file"``)."""
    from sqlglot import TokenType

    for token, following in itertools.pairwise(tokens):
        if token.text in ("U", "u") and following.token_type == TokenType.AMP and following.start == token.end + 1:
            raise ReadOnlyViolation(
                'Unicode-escaped names and strings (U&"…") are not accepted: write names and strings plainly.'
            )


def date_literals(sql: str, dialect: str) -> list[str]:
    """Date literals of a query (``'2026-09-01'``, ``'20260901'``, timestamps), in order, unique."""
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.errors import TokenError

    try:
        return _dates_in(Dialect.get_or_raise(dialect).tokenize(sql))
    except TokenError:
        return []


def _dates_in(tokens: Iterable[Any]) -> list[str]:
    from sqlglot import TokenType

    found: dict[str, None] = {}
    for token in tokens:
        if token.token_type != TokenType.STRING:
            continue
        match = _DATE_LITERAL.match(token.text.strip())
        if match is None:
            continue
        year, month, day = (
            match.group(1) or match.group(4),
            match.group(2) or match.group(5),
            match.group(3) or match.group(6),
        )
        try:
            found[dt.date(int(year), int(month), int(day)).isoformat()] = None
        except ValueError:
            continue
    return list(found)
