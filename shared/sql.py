"""SQL understanding shared by SQL connectors, on ``sqlglot`` (imported lazily).

* :func:`check_query_only` is the parser layer of read-only in depth (spec 10.4): one
  statement, and it must be a query with no data-modifying node, no ``INTO``, no
  side-effect or file function and no relation that reads server files or has side effects.
  It is one layer of several; the engine's read-only mode and the driver enforce the rest.
  It returns a :class:`CheckedQuery`: the syntax tree it approved, which later layers inspect
  and whose regenerated text is what the engine runs.
* :func:`date_literals` finds the key dates of a query for ``model_response.dates``.
* :func:`describe_syntax_error` turns sqlglot's parse and tokenizer errors into words for the
  model: what is wrong and where, without sqlglot's terminal escape codes or class names.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .errors import AcpError, InvalidArguments, ReadOnlyViolation

# 'YYYY-MM-DD' (optionally followed by a time) or 'YYYYMMDD', ASCII digits only.
_DATE_LITERAL = re.compile(
    r"^(?:([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[T ][0-9:.+\-Z]*)?|([0-9]{4})([0-9]{2})([0-9]{2}))$"
)

logging.getLogger("sqlglot").setLevel(logging.ERROR)  # its "falling back to Command" warnings are noise

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
    prefix (``pg_ls_*``), because engines name a family of system functions by a prefix and add
    members in new versions: an exact list misses them (pg_ls_logicalsnapdir got through one)."""

    def __init__(self, names: Iterable[str]) -> None:
        lowered = {name.lower() for name in names}
        self._exact = frozenset(name for name in lowered if not name.endswith("*"))
        self._prefixes = tuple(name[:-1] for name in lowered if name.endswith("*"))

    def __contains__(self, name: str) -> bool:
        return name in self._exact or name.startswith(self._prefixes)


def _refuse_function(name: str) -> ReadOnlyViolation:
    return ReadOnlyViolation(
        f"The function {name}() is not allowed: it reads or writes outside the database or has side effects. "
        "Rewrite the query without it."
    )


@dataclass(frozen=True)
class CheckedQuery:
    """One read-only query as the checker read it.

    ``tree`` is sqlglot's syntax tree of the one statement (an ``exp.Query`` or ``exp.Values``);
    ``dialect`` the sqlglot dialect it was read and is written in; ``dates`` its date literals.
    Later layers inspect ``tree``; the engine runs :meth:`sql`, never the raw text, so that what
    runs is what was checked.
    """

    tree: Any
    dialect: str
    dates: list[str]

    def sql(self) -> str:
        """The query regenerated from the checked tree, in the engine's dialect."""
        return str(self.tree.sql(dialect=self.dialect))


def check_query_only(
    sql: str, dialect: str, forbidden_functions: Iterable[str] = (), forbidden_relations: Iterable[str] = ()
) -> CheckedQuery:
    """Refuse anything but one read-only query; return it as a :class:`CheckedQuery`.

    ``forbidden_functions`` and ``forbidden_relations`` (tables and views, matched by their own
    name whatever the qualification) are names as :class:`_Names` reads them: exact, or a prefix
    ending in ``*``. Relations are for system views that read server files or have side effects
    when read (PostgreSQL's ``pg_hba_file_rules`` reads pg_hba.conf), which no function call shows.
    Raises ReadOnlyViolation naming the statement, function or relation found. One tokenization
    serves both the check and the dates, and callers run it off the event loop.
    """
    from sqlglot import exp
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.errors import ParseError, TokenError

    engine = Dialect.get_or_raise(dialect)
    forbidden = _Names(forbidden_functions)
    relations = _Names(forbidden_relations)
    try:
        tokens = engine.tokenize(sql)
    except TokenError as exc:
        raise _unparsable(exc, sql, None) from None
    _check_tokens(tokens, forbidden)
    dates = _dates_in(tokens)
    try:
        parsed = engine.parser().parse(tokens, sql)
    except ParseError as exc:
        # Fail closed: what the checker cannot read, it cannot vouch for (a superuser reached
        # pg_read_file through syntax the parser does not know).
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
    statement = statements[0]
    if writes:
        raise _refuse(_statement_name(statement))
    for node in statement.walk():
        kind = type(node).__name__
        if kind in _WRITE_NODES:
            raise _refuse(_statement_name(node), " inside the query")
        if isinstance(node, exp.Into):
            raise _refuse("SELECT … INTO")
        if isinstance(node, exp.Func):
            name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
            if name in forbidden:
                raise _refuse_function(name)
        if isinstance(node, exp.Table) and node.name.lower() in relations:
            raise ReadOnlyViolation(
                f"The relation {node.name.lower()} is not allowed: reading it reads files of the server or has "
                "side effects. Rewrite the query without it."
            )
    return CheckedQuery(statement, dialect, dates)


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


def _check_tokens(tokens: list[Any], forbidden: _Names) -> None:
    """Token-level checks that do not depend on the parse tree being right.

    A forbidden function is refused wherever a call to it appears (even inside syntax the
    parser misreads), and PostgreSQL's ``U&"…"`` escapes are refused because they can spell
    any name (``U&"pg\\005fread_file"``).
    """
    from sqlglot import TokenType

    for index, token in enumerate(tokens):
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        if following is None:
            continue
        if token.text.lower() in forbidden and following.token_type == TokenType.L_PAREN:
            raise _refuse_function(token.text.lower())
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
