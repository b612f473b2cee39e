"""Source configuration that limits what the model may touch (spec 10.6).

* ``access_mode`` and ``table_rules``: what write tools may do, per table. ``execute_sql``
  is read-only in every mode (spec 10.4); only ``insert_rows`` writes.
* ``hidden``: tables and columns (personal data) that never reach the model or the host:
  left out of every block and description, and refused in queries.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from shared import InvalidArguments
from shared.access import AccessRules, compile_pattern, json_list

ColumnsOf = Callable[[str | None, str], Sequence[str]]


@dataclass(frozen=True)
class Policy:
    access: AccessRules = field(default_factory=AccessRules)
    hidden: tuple[re.Pattern[str], ...] = ()

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Policy:
        hidden = tuple(compile_pattern(p, "hidden") for p in json_list(config.get("hidden"), "hidden"))
        return cls(access=AccessRules.from_config(config), hidden=hidden)

    def require(self, needed: str, schema: str | None, table: str) -> None:
        """Spec 10.6: refuse a write the table's access mode does not allow."""
        self.access.require(needed, _names(schema, table))

    # -- hidden tables and columns ------------------------------------------------------------
    def table_hidden(self, schema: str | None, table: str) -> bool:
        return any(p.fullmatch(n) for p in self.hidden for n in _names(schema, table))

    def column_hidden(self, schema: str | None, table: str, column: str) -> bool:
        names = [f"{n}.{column}" for n in _names(schema, table)]
        return any(p.fullmatch(n) for p in self.hidden for n in names)

    def visible_columns(self, schema: str | None, table: str, columns: Iterable[Any]) -> list[Any]:
        """Columns (objects with ``.name``) that are not hidden."""
        return [c for c in columns if not self.column_hidden(schema, table, c.name)]

    def check_query(self, sql: str, dialect: str, default_schema: str | None, columns_of: ColumnsOf) -> None:
        """Refuse a query that references a hidden table or column (directly, by ``*``, or whole-row)."""
        if not self.hidden:
            return
        from sqlglot import exp
        from sqlglot.errors import ParseError, TokenError

        try:
            statements = [s for s in _parse(sql, dialect) if s is not None and not isinstance(s, exp.Semicolon)]
        except (ParseError, TokenError):
            raise _cannot_check() from None
        if len(statements) != 1:
            raise _cannot_check()
        statement = statements[0]
        ctes = {cte.alias_or_name.lower() for cte in statement.find_all(exp.CTE)}
        tables: dict[str, tuple[str | None, str]] = {}  # alias or name → (schema, table)
        renamed: list[tuple[str | None, str]] = []
        for node in statement.find_all(exp.Table):
            if not node.name or node.name.lower() in ctes:
                continue
            schema = node.db or default_schema
            if self.table_hidden(schema, node.name):
                raise _hidden(f"table {node.name}")
            tables[node.alias_or_name.lower()] = (schema, node.name)
            tables.setdefault(node.name.lower(), (schema, node.name))
            alias = node.args.get("alias")
            if alias is not None and alias.columns:
                renamed.append((schema, node.name))  # "customers AS t(i, n, e)" renames its columns
        hidden_cache: dict[tuple[str | None, str], bool] = {}

        def has_hidden(schema: str | None, table: str) -> bool:
            key = (schema, table)
            if key not in hidden_cache:
                hidden_cache[key] = any(self.column_hidden(schema, table, c) for c in columns_of(schema, table))
            return hidden_cache[key]

        for schema, table in renamed:
            if has_hidden(schema, table):
                raise _hidden(f"columns of {table} (renamed by a column alias list); name the columns you need")
        for column in statement.find_all(exp.Column):
            qualifier = column.table.lower() if column.table else None
            if isinstance(column.this, exp.Star):
                targets = [tables[qualifier]] if qualifier in tables else list(tables.values())
                for schema, table in targets:
                    if has_hidden(schema, table):
                        raise _hidden(f"columns of {table} (through {qualifier}.*); name the columns you need")
                continue
            name = column.name
            candidates = [tables[qualifier]] if qualifier in tables else list(tables.values())
            for schema, table in candidates:
                if self.column_hidden(schema, table, name):
                    raise _hidden(f"column {table}.{name}")
            if qualifier is None and name.lower() in tables:  # a whole-row reference such as row_to_json(t)
                schema, table = tables[name.lower()]
                if has_hidden(schema, table):
                    raise _hidden(f"columns of {table} (through a whole-row reference)")
        # A bare * in a select list (count(*) reads no column, so it is not one).
        if any(isinstance(star.parent, exp.Select) for star in statement.find_all(exp.Star)):
            for schema, table in set(tables.values()):
                if has_hidden(schema, table):
                    raise _hidden(f"columns of {table} (through *); name the columns you need")

    def check_result_columns(self, tables: Iterable[tuple[str | None, str]], columns: Iterable[str]) -> None:
        """A last look at the result's column names (defense in depth)."""
        for schema, table in tables:
            for column in columns:
                if self.column_hidden(schema, table, column):
                    raise _hidden(f"column {table}.{column}")


def _parse(sql: str, dialect: str) -> list[Any]:
    import sqlglot

    return list(sqlglot.parse(sql, read=dialect))


def _names(schema: str | None, table: str) -> list[str]:
    return [table, f"{schema}.{table}"] if schema else [table]


def _hidden(what: str) -> InvalidArguments:
    return InvalidArguments(
        f"The query uses {what}, which the source configuration hides (personal data). Rewrite it without that."
    )


def _cannot_check() -> InvalidArguments:
    return InvalidArguments(
        "This source hides some tables or columns, and this query could not be checked against them. "
        "Send one plain SELECT that the checker can parse."
    )
