"""What a query reads, for ``allowed_datasets`` (fail-closed).

The dry run's ``referencedTables`` is authoritative but BigQuery stops listing at 50
tables, so the tables ``sqlglot`` finds in the SQL are checked as well; a query the parser
cannot read, or one that reads from a table function, is refused whenever datasets are
restricted. The parser cannot see inside views, so when the dry run's list may be
truncated the SQL must name every table it reads (see ``_require_named``).

Routines (persistent UDFs) are checked the same way: the dry run's ``referencedRoutines`` and the
dataset-qualified calls the parser finds (``ds.f(x)``, ``proj.ds.f(x)``) must all be in allowed
datasets, since a SQL UDF's body may read tables of its own dataset.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shared import InvalidArguments
from shared.access import compile_pattern, json_list

if TYPE_CHECKING:
    from sqlglot import exp

REFERENCED_TABLES_LISTED = 50  # BigQuery's referencedTables stops here: a list this long may be truncated
_BASE_TABLE_KINDS = ("TABLE", "SNAPSHOT", "EXTERNAL")  # tables.get types that read no other table
# BigQuery's own function namespaces (HLL_COUNT.MERGE, KEYS.NEW_KEYSET, …): such a two-part call is a
# built-in, not a routine in a dataset of that name; for those the dry run's referencedRoutines decides.
_BUILTIN_NAMESPACES = frozenset({"AEAD", "AI", "HLL_COUNT", "KEYS", "KLL_QUANTILES", "ML", "NET", "OBJ", "SAFE"})


@dataclass(frozen=True)
class SqlReads:
    """What the SQL itself names: fully qualified tables (CTEs excluded), table function calls and
    routines called by a dataset-qualified name (``project.dataset.routine``)."""

    tables: set[str]
    functions: list[str]
    routines: set[str]


def split_table(name: str) -> tuple[str, str, str]:
    """``project.dataset.table`` (the project may be domain-scoped: ``example.com:project``)."""
    head, _, table = name.rpartition(".")
    project, _, dataset = head.rpartition(".")
    return project, dataset, table


def reads_in_sql(sql: str, project: str, dataset: str | None) -> SqlReads | None:
    """What the SQL names, or None when it cannot be parsed."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        statements = [s for s in sqlglot.parse(sql, read="bigquery") if s is not None]
    except SqlglotError:
        return None
    reads = SqlReads(tables=set(), functions=[], routines=set())
    for statement in statements:
        if isinstance(statement, exp.Command):
            return None  # syntax sqlglot does not model (scripting): nothing can be proven
        ctes = {cte.alias_or_name for cte in statement.find_all(exp.CTE)}
        for table in statement.find_all(exp.Table):
            if isinstance(table.this, exp.Func):  # FROM ds.tvf(1), EXTERNAL_QUERY(…), ML.PREDICT(…)
                reads.functions.append(table.sql(dialect="bigquery")[:120])
            elif not table.name or (not table.db and table.name in ctes):
                continue
            elif table.db:
                reads.tables.add(f"{table.catalog or project}.{table.db}.{table.name}")
            elif dataset:
                reads.tables.add(f"{project}.{dataset}.{table.name}")
            else:
                reads.tables.add(f"{project}.?.{table.name}")  # unresolvable: never matches an allowed dataset
        for call in statement.find_all(exp.Dot, exp.Anonymous):
            routine = _routine_called(call, project)
            if routine is not None:
                reads.routines.add(routine)
    return reads


def _unreadable(sql: str) -> str:
    """Why :func:`reads_in_sql` could not read the SQL (BigQuery's dry run accepted it: the checker's
    parser is the one that stopped)."""
    import sqlglot
    from sqlglot.errors import SqlglotError

    from shared.sql import describe_syntax_error

    try:
        sqlglot.parse(sql, read="bigquery")
    except SqlglotError as exc:
        return f"the checker's parser stopped {describe_syntax_error(exc, sql)}"
    return "it uses syntax the checker does not model, such as scripting"


def _routine_called(node: exp.Expr, project: str) -> str | None:
    """``project.dataset.routine`` when ``node`` calls a function by a dataset-qualified name.

    sqlglot's BigQuery dialect parses ``ds.f(x)`` as ``Dot(ds, Anonymous(f))``, ``p.ds.f(x)`` as
    ``Dot(Dot(p, ds), Anonymous(f))`` and `` `p.ds.f`(x) `` as one ``Anonymous`` with a dotted quoted
    name. A qualifier that is not plain names (``ds.f(x).g(y)``) gets dataset ``?``, which never matches.
    """
    from sqlglot import exp

    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Func):
        function, (*qualifier, _) = node.expression, node.flatten()
        name = function.name if isinstance(function, exp.Anonymous) else function.sql_name()
        if not all(isinstance(part, exp.Identifier) for part in qualifier):
            return f"{project}.?.{name}"
        parts = [piece for text in [*(part.name for part in qualifier), name] for piece in text.split(".")]
    elif isinstance(node, exp.Anonymous) and not isinstance(node.parent, exp.Dot) and "." in node.name:
        parts = node.name.split(".")  # `p.ds.f`(x); under a Dot the whole Dot is the call
    else:
        return None  # an unqualified call: a built-in, or a routine only the dry run can name
    if len(parts) == 2 and parts[0].upper() in _BUILTIN_NAMESPACES:
        return None
    *path, dataset, routine = parts
    return f"{'.'.join(path) or project}.{dataset}.{routine}"


def allowed_patterns(config_value: object) -> list[re.Pattern[str]]:
    # Case-sensitive, as BigQuery dataset names are.
    return [compile_pattern(p, "allowed_datasets", 0) for p in json_list(config_value, "allowed_datasets")]


def check_allowed(
    patterns: list[re.Pattern[str]],
    dry_run_tables: Sequence[str],
    dry_run_routines: Sequence[str],
    sql: str,
    project: str,
    dataset: str | None,
    table_kind: Callable[[str], str],
) -> None:
    """Refuse a query that reads any table outside the allowed datasets, or that may, or that calls a
    routine outside them (``project.dataset.routine`` names, like the tables).

    ``table_kind`` gives the ``tables.get`` type of a ``project.dataset.table`` (blocking).
    """
    if not patterns:
        return
    reads = reads_in_sql(sql, project, dataset)
    if reads is None:
        raise InvalidArguments(
            f"This source only allows some datasets, and this query could not be checked against them "
            f"({_unreadable(sql)}). Send one plain SELECT with fully qualified table names."
        )
    if reads.functions:
        # A table function reads tables the SQL does not name; the dry run's list of them may be truncated.
        raise InvalidArguments(
            f"This source only allows some datasets, and the query reads from a table function "
            f"({reads.functions[0]}) whose tables cannot be checked against them. Query the tables directly."
        )
    allowed = ", ".join(p.pattern for p in patterns)
    for name in sorted({*dry_run_routines, *reads.routines}):
        if not _in_allowed_dataset(patterns, name):
            raise InvalidArguments(
                f"The query calls the routine {name}, outside the datasets this source allows ({allowed}). "
                "Use built-in functions or routines in those datasets, or ask the user to change allowed_datasets."
            )
    for name in sorted({*dry_run_tables, *reads.tables}):
        if not _in_allowed_dataset(patterns, name):
            raise InvalidArguments(
                f"The query reads {name}, outside the datasets this source allows ({allowed}). "
                "Query only tables in those datasets, or ask the user to change allowed_datasets."
            )
    if len(dry_run_tables) >= REFERENCED_TABLES_LISTED:
        _require_named(reads.tables, dry_run_tables, table_kind)


def _in_allowed_dataset(patterns: list[re.Pattern[str]], name: str) -> bool:
    """Whether the dataset of ``project.dataset.name`` (a table or a routine) is allowed."""
    project, dataset, _ = split_table(name)
    return any(p.fullmatch(c) for p in patterns for c in (dataset, f"{project}.{dataset}"))


def _require_named(named: set[str], dry_run_tables: Iterable[str], table_kind: Callable[[str], str]) -> None:
    """Past 50 tables the dry run's list may be truncated, and a table read through a view may be
    the one left out. Fail closed: accept only a query that names every table it reads, that is,
    every table the parser found is a base table (a wildcard never matches a view: BigQuery refuses
    that) and the dry run lists none the SQL does not name."""
    wildcards = tuple(n[:-1] for n in named if n.endswith("*"))
    unnamed = next((t for t in dry_run_tables if t not in named and not t.startswith(wildcards)), None)
    reason = f"it reads {unnamed} without naming it" if unnamed else None
    if reason is None:
        kinds = ((n, table_kind(n)) for n in sorted(named) if not n.endswith("*"))
        other = next(((n, kind) for n, kind in kinds if kind not in _BASE_TABLE_KINDS), None)
        reason = f"{other[0]} is a {other[1]}" if other else None
    if reason is not None:
        raise InvalidArguments(
            f"This source only allows some datasets, and this query reads {REFERENCED_TABLES_LISTED} or more tables, "
            f"not all of them named in the SQL ({reason}). BigQuery lists only the first {REFERENCED_TABLES_LISTED} "
            "tables a query reads, so the others cannot be checked. Name the tables directly instead of through "
            "views, or read fewer tables (for example a shorter _TABLE_SUFFIX range)."
        )
