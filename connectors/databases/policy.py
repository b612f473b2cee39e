"""Source configuration that limits what the model may touch (spec 10.6).

* ``access_mode`` and ``table_rules``: what write tools may do, per table. ``execute_sql``
  is read-only in every mode (spec 10.4); only ``insert_rows`` writes.
* ``hidden``: tables and columns (personal data) that never reach the model or the host:
  left out of every block and description, and refused in queries.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from shared import InvalidArguments
from shared.access import AccessRules, compile_pattern, json_list

from .engine import Connection, Engine

if TYPE_CHECKING:
    from shared.sql import CheckedQuery


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
        """Hidden by name (a view that reads hidden data is caught by :meth:`on`)."""
        return any(p.fullmatch(n) for p in self.hidden for n in _names(schema, table))

    def column_hidden(self, schema: str | None, table: str, column: str) -> bool:
        names = [f"{n}.{column}" for n in _names(schema, table)]
        return any(p.fullmatch(n) for p in self.hidden for n in names)

    def visible_columns(self, schema: str | None, table: str, columns: Iterable[Any]) -> list[Any]:
        """Columns (objects with ``.name``) that are not hidden."""
        return [c for c in columns if not self.column_hidden(schema, table, c.name)]

    def on(self, conn: Connection, engine: Engine) -> Hidden:
        """The `hidden` rules as they apply on one connection, views and catalog included."""
        return Hidden(self, conn, engine)


# Table functions that take values, never a relation's name: harmless where data is hidden.
_VALUE_TABLE_FUNCTIONS = frozenset(
    {"generate_series", "exploding_generate_series", "range", "unnest", "json_each", "json_tree"}
)


class Hidden:
    """`hidden` on one connection. A name is not enough: a view (or materialized view) whose
    query reads a hidden table or column shows the same data, the system catalog's statistics
    hold column values, and a user-defined function reads what no parser sees (functions that
    run query text are refused by every engine's parser layer). A view is hidden when its own
    query would be refused here; the rest is refused in queries. Lookups are cached for the call."""

    def __init__(self, policy: Policy, conn: Connection, engine: Engine) -> None:
        self.policy, self.conn, self.engine = policy, conn, engine
        self._views: dict[tuple[str | None, str], bool] = {}
        self._columns: dict[tuple[str | None, str], bool] = {}
        self._user_functions: frozenset[str] | None = None

    def table(self, schema: str | None, name: str, kind: str | None = None) -> bool:
        """Hidden by name, or a view over hidden data; ``kind`` "table" skips the view lookup."""
        if self.policy.table_hidden(schema, name):
            return True
        if not self.policy.hidden or kind == "table":
            return False
        key = (schema, name)
        if key not in self._views:
            self._views[key] = True  # a view that reaches itself again is refused, not followed forever
            self._views[key] = self._view_reads_hidden(schema, name)
        return self._views[key]

    def check_query(self, query: CheckedQuery, default_schema: str | None) -> None:
        """Refuse a query that reads a hidden table or column: by name, by ``*`` or a whole-row
        reference, through a view, the catalog, a table function or a user-defined function."""
        if not self.policy.hidden:
            return
        refusal = self._refusal(query.tree, default_schema)
        if refusal is not None:
            raise refusal

    def _has_hidden_columns(self, schema: str | None, table: str) -> bool:
        key = (schema, table)
        if key not in self._columns:
            names = [c.name for c in self.conn.columns(schema, table)]
            self._columns[key] = any(self.policy.column_hidden(schema, table, c) for c in names)
        return self._columns[key]

    def _defined_functions(self) -> frozenset[str]:
        if self._user_functions is None:
            self._user_functions = self.conn.user_functions()
        return self._user_functions

    def _view_reads_hidden(self, schema: str | None, name: str) -> bool:
        from sqlglot import exp
        from sqlglot.errors import ParseError, TokenError

        definition = self.conn.view_sql(schema, name)
        if definition is None:
            return False  # not a view
        if not definition.strip():
            return True  # a view this login may not inspect could read anything
        try:
            statements = [s for s in _parse(definition, self.engine.dialect) if s is not None]
        except (ParseError, TokenError):
            return True
        queries = [s.expression if isinstance(s, exp.Create) else s for s in statements]
        return not queries or any(self._refusal(q, schema) is not None for q in queries)

    def _refusal(self, statement: Any, default_schema: str | None) -> InvalidArguments | None:
        """Why a parsed query would show hidden data, or None."""
        from sqlglot import exp

        ctes = {cte.alias_or_name.lower() for cte in statement.find_all(exp.CTE)}
        tables: dict[str, tuple[str | None, str]] = {}  # alias or name → (schema, table)
        renamed: list[tuple[str | None, str]] = []
        for node in statement.find_all(exp.Table):
            if isinstance(node.this, exp.Func):
                function = _function_name(node.this)
                if function not in _VALUE_TABLE_FUNCTIONS:
                    return _unseen(f"the table function {function}()")
                continue
            if not node.name or (not node.db and node.name.lower() in ctes):
                continue
            schema = node.db or default_schema
            catalog = (node.db or "").lower() in self.engine.catalog_schemas
            if catalog or node.name.lower().startswith(self.engine.catalog_prefixes):
                return _unseen(f"the system catalog ({node.name})")
            if self.table(schema, node.name):
                return _hidden(f"{node.name}, a hidden table or a view over hidden data")
            tables[node.alias_or_name.lower()] = (schema, node.name)
            tables.setdefault(node.name.lower(), (schema, node.name))
            alias = node.args.get("alias")
            if alias is not None and alias.columns:
                renamed.append((schema, node.name))  # "customers AS t(i, n, e)" renames its columns
        called = {_function_name(f) for f in statement.find_all(exp.Func)}
        user_defined = sorted(called & self._defined_functions())
        if user_defined:
            return _unseen(f"the user-defined function {user_defined[0]}()")
        for schema, table in renamed:
            if self._has_hidden_columns(schema, table):
                return _hidden(f"columns of {table} (renamed by a column alias list); name the columns you need")
        for column in statement.find_all(exp.Column):
            qualifier = column.table.lower() if column.table else None
            candidates = [tables[qualifier]] if qualifier in tables else list(tables.values())
            if isinstance(column.this, exp.Star):
                for schema, table in candidates:
                    if self._has_hidden_columns(schema, table):
                        return _hidden(f"columns of {table} (through {qualifier}.*); name the columns you need")
                continue
            for schema, table in candidates:
                if self.policy.column_hidden(schema, table, column.name):
                    return _hidden(f"column {table}.{column.name}")
            if qualifier is None and column.name.lower() in tables:  # a whole-row reference: row_to_json(t)
                schema, table = tables[column.name.lower()]
                if self._has_hidden_columns(schema, table):
                    return _hidden(f"columns of {table} (through a whole-row reference)")
        # A bare * in a select list (count(*) reads no column, so it is not one).
        if any(isinstance(star.parent, exp.Select) for star in statement.find_all(exp.Star)):
            for schema, table in sorted(set(tables.values()), key=str):
                if self._has_hidden_columns(schema, table):
                    return _hidden(f"columns of {table} (through *); name the columns you need")
        return None


def _function_name(node: Any) -> str:
    from sqlglot import exp

    return str(node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()


def _parse(sql: str, dialect: str) -> list[Any]:
    import sqlglot

    return list(sqlglot.parse(sql, read=dialect))


def _names(schema: str | None, table: str) -> list[str]:
    return [table, f"{schema}.{table}"] if schema else [table]


def _unseen(what: str) -> InvalidArguments:
    return InvalidArguments(
        f"The query reads {what}; this source hides some data (personal data), and that could show it. Query "
        "the tables themselves, naming the visible columns: autocontext and describe_table list them."
    )


def _hidden(what: str) -> InvalidArguments:
    return InvalidArguments(
        f"The query uses {what}, which the source configuration hides (personal data). Rewrite it without that."
    )
