"""What a query reads, for ``allowed_datasets`` (fail-closed).

The dry run's ``referencedTables`` is authoritative but BigQuery stops listing at 50
tables, so the tables ``sqlglot`` finds in the SQL are checked as well; a query the parser
cannot read, or one that reads from a table function, is refused whenever datasets are
restricted. The parser cannot see inside views, so when the dry run's list may be
truncated the SQL must name every table it reads (see ``_require_named``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from shared import InvalidArguments
from shared.access import compile_pattern, json_list

REFERENCED_TABLES_LISTED = 50  # BigQuery's referencedTables stops here: a list this long may be truncated
_BASE_TABLE_KINDS = ("TABLE", "SNAPSHOT", "EXTERNAL")  # tables.get types that read no other table


@dataclass(frozen=True)
class SqlReads:
    """What the SQL itself names: fully qualified tables (CTEs excluded) and table function calls."""

    tables: set[str]
    functions: list[str]


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
    reads = SqlReads(tables=set(), functions=[])
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
    return reads


def allowed_patterns(config_value: object) -> list[re.Pattern[str]]:
    # Case-sensitive, as BigQuery dataset names are.
    return [compile_pattern(p, "allowed_datasets", 0) for p in json_list(config_value, "allowed_datasets")]


def check_allowed(
    patterns: list[re.Pattern[str]],
    dry_run_tables: Sequence[str],
    sql: str,
    project: str,
    dataset: str | None,
    table_kind: Callable[[str], str],
) -> None:
    """Refuse a query that reads any table outside the allowed datasets, or that may.

    ``table_kind`` gives the ``tables.get`` type of a ``project.dataset.table`` (blocking).
    """
    if not patterns:
        return
    reads = reads_in_sql(sql, project, dataset)
    if reads is None:
        raise InvalidArguments(
            "This source only allows some datasets, and this query could not be checked against them. "
            "Send one plain SELECT with fully qualified table names."
        )
    if reads.functions:
        # A table function reads tables the SQL does not name; the dry run's list of them may be truncated.
        raise InvalidArguments(
            f"This source only allows some datasets, and the query reads from a table function "
            f"({reads.functions[0]}) whose tables cannot be checked against them. Query the tables directly."
        )
    for name in sorted({*dry_run_tables, *reads.tables}):
        table_project, table_dataset, _ = split_table(name)
        candidates = (table_dataset, f"{table_project}.{table_dataset}")
        if not any(p.fullmatch(c) for p in patterns for c in candidates):
            allowed = ", ".join(p.pattern for p in patterns)
            raise InvalidArguments(
                f"The query reads {name}, outside the datasets this source allows ({allowed}). "
                "Query only tables in those datasets, or ask the user to change allowed_datasets."
            )
    if len(dry_run_tables) >= REFERENCED_TABLES_LISTED:
        _require_named(reads.tables, dry_run_tables, table_kind)


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
