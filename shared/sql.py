"""SQL understanding shared by SQL connectors, on ``sqlglot`` (imported lazily).

* :func:`check_query_only` is the parser layer of read-only in depth (spec 10.4): one
  statement, and it must be a query with no data-modifying node, no ``INTO``, no
  side-effect or file function and no relation that reads server files or has side effects.
  It is one layer of several; the engine's read-only mode and the driver enforce the rest.
* :func:`date_literals` finds the key dates of a query for ``model_response.dates``.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Iterable
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


def check_query_only(
    sql: str, dialect: str, forbidden_functions: Iterable[str] = (), forbidden_relations: Iterable[str] = ()
) -> list[str]:
    """Refuse anything but one read-only query; return its date literals (see :func:`date_literals`).

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
        raise _unparsable(exc, None) from None
    _check_tokens(tokens, forbidden)
    dates = _dates_in(tokens)
    try:
        parsed = engine.parser().parse(tokens, sql)
    except ParseError as exc:
        # Fail closed: what the checker cannot read, it cannot vouch for (a superuser reached
        # pg_read_file through syntax the parser does not know).
        raise _unparsable(exc, tokens) from None
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
    return dates


_QUERY_STARTS = frozenset({"SELECT", "WITH", "VALUES", "L_PAREN"})


def _unparsable(exc: Exception, tokens: list[Any] | None) -> AcpError:
    """Refuse SQL the checker cannot read: a query with a syntax error is the model's to fix
    (ACP_INVALID_ARGUMENTS); anything else, or several statements, is refused as a write."""
    detail = " ".join(str(exc).split())[:160]
    kinds = [t.token_type.name for t in tokens or []]
    several = "SEMICOLON" in kinds[:-1] and kinds.index("SEMICOLON") < len(kinds) - 1
    if tokens and kinds[0] in _QUERY_STARTS and not several:
        return InvalidArguments(f"The SQL has a syntax error ({detail}). Fix it and call again.")
    return ReadOnlyViolation(
        "This ACP runs only SQL it can check as one read-only query, and this SQL could not be read as one "
        f"({detail}). Write it as a single plain SELECT."
    )


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
