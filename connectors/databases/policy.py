"""Source configuration that limits what the model may touch (spec 10.6).

* ``access_mode`` and ``table_rules``: what write tools may do, per table. ``execute_sql``
  is read-only in every mode (spec 10.4); only ``insert_rows`` writes.
* ``hidden``: tables and columns (personal data) that never reach the model or the host:
  left out of every block and description, and refused in queries.

Patterns are matched (whole, ignoring case) against every name a relation has after the
engine's own resolution: ``table``, ``schema.table`` and, where the database is the schema
(SQLite, MySQL), ``database.table`` — plus ``.column`` for columns. A query's names are first
resolved to the catalog's canonical names (:mod:`.resolve`), so a pattern holds however the
query spells, quotes, qualifies or aliases the name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from shared import InvalidArguments
from shared.access import AccessRules, compile_pattern, json_list

from .engine import Connection, Engine, Relation
from .resolve import ALL, analyse, view_flags

if TYPE_CHECKING:
    from shared.sql import CheckedQuery

# Views over views deeper than this are treated as wholly hidden rather than followed.
MAX_VIEW_DEPTH = 16


@dataclass(frozen=True)
class Policy:
    access: AccessRules = field(default_factory=AccessRules)
    hidden: tuple[re.Pattern[str], ...] = ()

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Policy:
        hidden = tuple(compile_pattern(p, "hidden") for p in json_list(config.get("hidden"), "hidden"))
        return cls(access=AccessRules.from_config(config), hidden=hidden)

    def require(self, needed: str, names: Sequence[str]) -> None:
        """Spec 10.6: refuse a write the table's access mode does not allow (``names`` as
        :func:`relation_names` gives them, the one to show last)."""
        self.access.require(needed, names)

    def table_hidden(self, names: Sequence[str]) -> bool:
        """Hidden by name: one of the relation's names matches a pattern."""
        return any(p.fullmatch(n) for p in self.hidden for n in names)

    def column_hidden(self, names: Sequence[str], column: str) -> bool:
        return any(p.fullmatch(f"{n}.{column}") for p in self.hidden for n in names)

    def on(self, conn: Connection, engine: Engine) -> Hidden:
        """The `hidden` rules as they apply on one connection, views and catalog included."""
        return Hidden(self, conn, engine)


def relation_names(engine: Engine, database: str, schema: str | None, table: str) -> list[str]:
    """The names patterns are matched against: bare, schema-qualified, and database-qualified where the
    database is the schema (SQLite's schema is ``main``; a MySQL database is its schema). The most
    qualified comes last."""
    names = [table]
    if schema:
        names.append(f"{schema}.{table}")
    if not engine.has_schemas and database and database != schema:
        names.append(f"{database}.{table}")
    return names


class Hidden:
    """`hidden` on one connection, implementing :class:`.resolve.Catalog`. A name is not enough: a
    query is resolved with scope against the real catalog; a view's columns are hidden when its
    own query derives them from hidden data (all of them when a hidden column decides which rows it
    has, or when this login may not read its definition); the system catalog holds values and
    names, and a user-defined function reads what no parser sees. Catalog reads are cached for the
    call."""

    def __init__(self, policy: Policy, conn: Connection, engine: Engine) -> None:
        self.policy, self.conn, self._engine = policy, conn, engine
        self.engine = engine.name
        self.database = conn.database
        self.catalog_schemas = engine.catalog_schemas
        self.catalog_prefixes = engine.catalog_prefixes
        self.catalog_functions = engine.catalog_functions
        self._found: dict[str, list[Relation]] = {}  # lower-case name → relations
        self._asked: set[str] = set()  # schemas the cached lookups covered (MySQL reads per database)
        self._hidden: dict[tuple[str, str], frozenset[str] | None] = {}
        self._paths: dict[str | None, list[str]] = {}
        self._user_functions: frozenset[str] | None = None
        self._depth = 0
        self._secret_names: set[str] = set()  # hidden names of the relations looked at so far

    # -- resolve.Catalog ------------------------------------------------------------------------------------
    def relations(self, names: set[str], schemas: set[str]) -> list[Relation]:
        lowered = {n.lower() for n in names}
        missing = {n for n in lowered if n not in self._found}
        if not schemas <= self._asked:
            missing = lowered
        if missing:
            self._asked |= schemas
            for name in missing:
                self._found[name] = []
            for relation in self.conn.find_relations(missing, self._asked):
                found = self._found.setdefault(relation.name.lower(), [])
                if relation not in found:
                    found.append(relation)
        return [r for n in lowered for r in self._found.get(n, [])]

    def hidden_columns(self, relation: Relation) -> frozenset[str] | None:
        if not self.policy.hidden:
            return frozenset()
        key = (relation.schema, relation.name)
        if key in self._hidden:
            return self._hidden[key]
        names = self.names(relation)
        if self.policy.table_hidden(names):
            self._hidden[key] = ALL
            return ALL
        hidden = {c for c in relation.columns if self.policy.column_hidden(names, c)}
        if relation.kind == "view":
            self._hidden[key] = ALL  # a view that reaches itself again is hidden, not followed forever
            flags = self._view_flags(relation)
            hidden |= {column for column, flag in zip(relation.columns, flags, strict=True) if flag}
        result = ALL if relation.columns and len(hidden) == len(relation.columns) else frozenset(hidden)
        self._hidden[key] = result
        self._secret_names |= {relation.name.lower()} if result is ALL else {c.lower() for c in hidden}
        return result

    def visible_columns(self, relation: Relation) -> list[str]:
        hidden = self.hidden_columns(relation)
        return [] if hidden is ALL else [c for c in relation.columns if c not in hidden]

    def user_functions(self) -> frozenset[str]:
        if self._user_functions is None:
            self._user_functions = self.conn.user_functions()
        return self._user_functions

    # -- for queries, blocks and tools ----------------------------------------------------------------------
    def check_query(self, query: CheckedQuery, default_schema: str | None) -> None:
        """Refuse a query that reads a hidden table or column anywhere, or anything the checker
        cannot tie to the catalog: by name, ``*``, a whole row, a view, the catalog or a function."""
        if not self.policy.hidden:
            return
        findings, _ = analyse(query.tree, query.dialect, self, self.search_path(default_schema))
        if findings:
            raise InvalidArguments(findings[0].message)

    def names_hidden_data(self, error: BaseException) -> bool:
        """Whether an engine's error about an approved query names hidden data: engines suggest close
        names (DuckDB's "Candidate bindings", PostgreSQL's "Perhaps you meant…") from every table in
        the query, hidden columns included."""
        if not self._secret_names:
            return False
        diag = getattr(error, "diag", None)
        text = " ".join([str(error), *(str(getattr(diag, a, None) or "") for a in ("message_detail", "message_hint"))])
        lowered = text.lower()
        return any(re.search(rf"(?<!\w){re.escape(name)}(?!\w)", lowered) for name in self._secret_names)

    def refusal_for_named_error(self) -> InvalidArguments:
        return InvalidArguments(
            "The database refused the query, and its message names data this source hides (personal data), so it is "
            "not shown. Check the table and column names against describe_table and autocontext, and qualify "
            "columns with their table's alias."
        )

    def names(self, relation: Relation) -> list[str]:
        """Its names, and those of the tables whose rows it also holds (a partition is its table's data)."""
        names = []
        for parent in relation.parents:
            schema, table = parent.split(".", 1)
            names += relation_names(self._engine, self.database, schema, table)
        return names + relation_names(self._engine, self.database, relation.schema, relation.name)

    def search_path(self, schema: str | None) -> list[str]:
        if schema not in self._paths:
            self._paths[schema] = self.conn.search_path(schema)
        return self._paths[schema]

    def relation(self, schema: str | None, name: str) -> Relation | None:
        """A relation by its catalog name (as blocks and resource ids give it): exact, in ``schema`` or
        the first schema of the search path that has it."""
        schemas = [schema] if schema else self.search_path(None)
        found = [r for r in self.relations({name}, set(schemas)) if r.name == name]
        for candidate_schema in schemas:
            exact = [r for r in found if r.schema == candidate_schema]
            # A database named in another case than the catalog's (MySQL with lower_case_table_names).
            folded = [r for r in found if r.schema.lower() == candidate_schema.lower()]
            if exact or len(folded) == 1:
                return (exact or folded)[0]
        return None

    def preload(self, schema: str | None, names: Iterable[str]) -> None:
        """Read many relations in one catalog query (blocks cover a whole schema)."""
        if self.policy.hidden:
            self.relations(set(names), {schema} if schema else set(self.search_path(None)))

    def table(self, schema: str | None, name: str) -> bool:
        """Wholly hidden: by name, or a view none of whose columns is visible."""
        if not self.policy.hidden:
            return False
        relation = self.relation(schema, name)
        # A listed table the lookup cannot find again (renamed meanwhile): hidden, not guessed.
        return relation is None or self.hidden_columns(relation) is ALL

    def column_hidden(self, schema: str | None, table: str, column: str) -> bool:
        if not self.policy.hidden:
            return False
        relation = self.relation(schema, table)
        hidden = ALL if relation is None else self.hidden_columns(relation)
        return hidden is ALL or column in hidden

    def visible(self, schema: str | None, table: str, columns: Iterable[Any]) -> list[Any]:
        """Columns (objects with ``.name``) that are not hidden."""
        return [c for c in columns if not self.column_hidden(schema, table, c.name)]

    # -- views ------------------------------------------------------------------------------------------------
    def _view_flags(self, relation: Relation) -> tuple[bool, ...]:
        """Which columns of a view its own query derives from hidden data (all of them when its
        definition cannot be read, parsed or followed)."""
        from sqlglot import exp
        from sqlglot.dialects.dialect import Dialect
        from sqlglot.errors import SqlglotError

        everything = (True,) * len(relation.columns)
        definition = self.conn.view_sql(relation.schema, relation.name)
        if definition is None:
            return (False,) * len(relation.columns)  # not a view after all: its columns are its own
        if not definition.strip() or self._depth >= MAX_VIEW_DEPTH:
            return everything  # a view this login may not inspect could read anything
        dialect = self._engine.dialect
        try:
            statements = [s for s in Dialect.get_or_raise(dialect).parse(definition) if s is not None]
        except (SqlglotError, RecursionError):
            return everything
        queries = [s.expression if isinstance(s, exp.Create) else s for s in statements]
        if len(queries) != 1 or not isinstance(queries[0], exp.Query):
            return everything
        # DuckDB binds a view's names in the view's own schema first.
        path = [relation.schema, *(["main"] if self.engine == "duckdb" and relation.schema != "main" else [])]
        self._depth += 1
        try:
            findings, width = analyse(queries[0], dialect, self, path)
        finally:
            self._depth -= 1
        return view_flags(findings, width, len(relation.columns))
