"""What a query reads, for ``allowed_datasets`` (fail-closed).

The dry run's ``referencedTables`` is authoritative but BigQuery stops listing at 50
tables, so the tables ``sqlglot`` finds in the SQL are checked as well; a query the parser
cannot read is refused whenever datasets are restricted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from shared import InvalidArguments
from shared.access import compile_pattern, json_list


def split_table(name: str) -> tuple[str, str, str]:
    """``project.dataset.table`` (the project may be domain-scoped: ``example.com:project``)."""
    head, _, table = name.rpartition(".")
    project, _, dataset = head.rpartition(".")
    return project, dataset, table


def tables_in_sql(sql: str, project: str, dataset: str | None) -> set[str] | None:
    """Fully qualified tables the SQL names (CTEs excluded), or None when it cannot be parsed."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        statements = [s for s in sqlglot.parse(sql, read="bigquery") if s is not None]
    except SqlglotError:
        return None
    found: set[str] = set()
    for statement in statements:
        if isinstance(statement, exp.Command):
            return None  # syntax sqlglot does not model (scripting): nothing can be proven
        ctes = {cte.alias_or_name for cte in statement.find_all(exp.CTE)}
        for table in statement.find_all(exp.Table):
            if not table.name or (not table.db and table.name in ctes):
                continue
            if table.db:
                found.add(f"{table.catalog or project}.{table.db}.{table.name}")
            elif dataset:
                found.add(f"{project}.{dataset}.{table.name}")
            else:
                found.add(f"{project}.?.{table.name}")  # unresolvable: never matches an allowed dataset
    return found


def allowed_patterns(config_value: object) -> list[re.Pattern[str]]:
    # Case-sensitive, as BigQuery dataset names are.
    return [compile_pattern(p, "allowed_datasets", 0) for p in json_list(config_value, "allowed_datasets")]


def check_allowed(
    patterns: list[re.Pattern[str]],
    dry_run_tables: Iterable[str],
    sql: str,
    project: str,
    dataset: str | None,
) -> None:
    """Refuse a query that reads any table outside the allowed datasets."""
    if not patterns:
        return
    parsed = tables_in_sql(sql, project, dataset)
    if parsed is None:
        raise InvalidArguments(
            "This source only allows some datasets, and this query could not be checked against them. "
            "Send one plain SELECT with fully qualified table names."
        )
    for name in sorted({*dry_run_tables, *parsed}):
        table_project, table_dataset, _ = split_table(name)
        candidates = (table_dataset, f"{table_project}.{table_dataset}")
        if not any(p.fullmatch(c) for p in patterns for c in candidates):
            allowed = ", ".join(p.pattern for p in patterns)
            raise InvalidArguments(
                f"The query reads {name}, outside the datasets this source allows ({allowed}). "
                "Query only tables in those datasets, or ask the user to change allowed_datasets."
            )
