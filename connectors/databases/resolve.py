"""Which base columns a query reads: name resolution with scope, the core of ``hidden``.

A query is resolved the way its engine resolves it, with sqlglot's scope machinery and the real
catalog as the schema, on a copy of the approved syntax tree:

1. identifiers are folded by the engine's rules (PostgreSQL folds unquoted names to lower case;
   DuckDB, SQLite and MySQL compare column names ignoring case);
2. every table reference that is not a CTE in scope is looked up in the catalog, ignoring letter
   case: its canonical schema, name and columns. Several candidates that differ only in case are
   told apart by the engine's own rule or refused; the system catalog and whatever the catalog
   does not list are refused;
3. sqlglot qualifies every column and expands every star (``*``, ``t.*``, ``EXCLUDE``,
   ``REPLACE``, ``USING`` and ``NATURAL`` joins);
4. each column reference is tied to every source it could denote under the engine's rules: the
   innermost scope that has it, outer scopes for correlated references, and whole rows
   (``row_to_json(t)``, DuckDB's ``SELECT t FROM t``). ``COLUMNS(…)``, positional ``#n``,
   ``PIVOT``/``UNPIVOT`` and ``SUMMARIZE`` read every column of their sources.

The result is a list of :class:`Finding`: every place where the query reads a hidden column or
relation, or something that cannot be tied to the catalog (fail closed). A query with a finding
is refused; a view's findings decide which of its columns are hidden.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .engine import Relation

# Table functions that take values, never a relation's name: harmless where data is hidden.
VALUE_TABLE_FUNCTIONS = frozenset(
    {"generate_series", "exploding_generate_series", "range", "unnest", "json_each", "json_tree", "json_table"}
)
# sqlglot names some functions by splitting their class name letter by letter.
_SQLGLOT_NAMES = {"j_s_o_n_table": "json_table"}
# What DuckDB's SUMMARIZE returns (one row per column of its input).
_SUMMARIZE_COLUMNS = (
    "column_name", "column_type", "min", "max", "approx_unique", "avg", "std", "q25", "q50", "q75", "count",
    "null_percentage",
)  # fmt: skip
ALL = None  # hidden_columns(): the whole relation is hidden
Name = tuple[str, bool]  # an identifier as written: its text and whether it was quoted


@dataclass(frozen=True)
class Finding:
    """One reason the query may show hidden data; ``output`` is the top-level output column it
    sits in (a view hides just that column), None when it is anywhere else."""

    message: str
    output: int | None = None


class Catalog(Protocol):
    """What resolution asks of the connection (cached by the caller for one call)."""

    engine: str  # "sqlite", "duckdb", "postgres" or "mysql"
    database: str
    catalog_schemas: frozenset[str]
    catalog_prefixes: tuple[str, ...]
    catalog_functions: frozenset[str]

    def relations(self, names: set[str], schemas: set[str]) -> list[Relation]: ...

    def hidden_columns(self, relation: Relation) -> frozenset[str] | None:
        """Canonical names of its hidden columns; None (:data:`ALL`) when all of it is hidden."""

    def visible_columns(self, relation: Relation) -> list[str]: ...

    def user_functions(self) -> frozenset[str]: ...


def fold(engine: str, text: str, quoted: bool) -> str:
    """An identifier as the engine compares it: PostgreSQL keeps quoted names and lowers the
    others; DuckDB, SQLite and MySQL compare column and alias names ignoring case."""
    return text if engine == "postgres" and quoted else text.lower()


@dataclass
class _Source:
    """A table reference resolved to the catalog."""

    relation: Relation
    columns: dict[str, str]  # the name the query uses (folded, or from an alias list) → canonical name


@dataclass
class _Analysis:
    catalog: Catalog
    dialect: str
    search_path: list[str]
    findings: list[Finding] = field(default_factory=list)
    sources: dict[int, _Source] = field(default_factory=dict)  # id(exp.Table) → its relation
    outputs: dict[int, int] = field(default_factory=dict)  # id(node) → top-level output position
    schema: dict[str, object] = field(default_factory=dict)  # what qualification sees, by _r<n>/_v<n>
    values: dict[int, set[str]] = field(default_factory=dict)  # id(exp.Table) → columns of a table of values
    bare: set[int] = field(default_factory=set)  # id(exp.Column) written without a table
    written: set[int] = field(default_factory=set)  # id(exp.Column) in the query as written (not from a *)
    # id(query) → its output names: sqlglot computes them anew on every read, once per column of a
    # query that names thousands would make the check quadratic (9 s within the SQL size limits).
    named: dict[int, tuple[str, ...] | None] = field(default_factory=dict)

    def named_selects(self, query: Any) -> tuple[str, ...] | None:
        """``query.named_selects``, once per query; None when it has none (not a query)."""
        if id(query) not in self.named:
            names = getattr(query, "named_selects", None)
            self.named[id(query)] = None if names is None else tuple(names)
        return self.named[id(query)]

    def add(self, message: str, node: Any = None) -> None:
        output = self.outputs.get(id(node)) if node is not None else None
        self.findings.append(Finding(message, output))


def analyse(tree: Any, dialect: str, catalog: Catalog, search_path: list[str]) -> tuple[list[Finding], int | None]:
    """The findings of one query, and its number of output columns (None when unknown)."""
    from sqlglot import exp
    from sqlglot.errors import OptimizeError, SqlglotError
    from sqlglot.optimizer.qualify_columns import qualify_columns
    from sqlglot.optimizer.qualify_tables import qualify_tables
    from sqlglot.optimizer.scope import traverse_scope
    from sqlglot.schema import MappingSchema

    run = _Analysis(catalog, dialect, search_path)
    tree = tree.copy()
    nodes = _collect(tree)
    tables = nodes["tables"]
    written = {id(t): _written_parts(t) for t in tables}
    for identifier in nodes["identifiers"]:
        identifier.set("this", fold(catalog.engine, identifier.this, identifier.quoted))
    for star in nodes["stars"]:
        star.set("ilike", None)  # "* ILIKE 'x'" matches canonical names the folded ones may not: read them all
    _rewrite_duckdb_statements(nodes["statements"], run)
    _check_functions(nodes["functions"], run)
    _check_recursive_names(nodes["ctes"], run)
    try:
        scopes = traverse_scope(tree)
    except (OptimizeError, SqlglotError, RecursionError):
        run.add(_UNREADABLE)
        return run.findings, None
    _resolve_tables(tables, scopes, written, run)
    if run.findings:
        return run.findings, None  # names that do not resolve: the columns cannot be either
    schema = MappingSchema(run.schema, dialect=dialect, normalize=False)
    written_columns = list(tree.find_all(exp.Column))
    run.bare = {id(c) for c in written_columns if not c.table}
    run.written = {id(c) for c in written_columns}
    try:
        qualify_tables(tree, dialect=dialect)
        qualify_columns(tree, schema, allow_partial_qualification=True, dialect=dialect)
        scopes = traverse_scope(tree)
    except OptimizeError as exc:
        named = _NAMED_IN_ERROR.search(str(exc))
        run.add(_unresolved(named.group(1) if named else "a column"))
        return run.findings, None
    except (SqlglotError, RecursionError):
        run.add(_UNREADABLE)
        return run.findings, None
    outputs = _map_outputs(tree, run)
    owned = 0
    for scope, node in _owned_nodes(scopes):
        owned += isinstance(node, exp.Column)
        _check_node(node, scope, run)
    if owned != sum(1 for _ in tree.find_all(exp.Column)):
        run.add(_UNREADABLE)  # a column in a place the scopes do not cover
    return run.findings, outputs


# -- 1. what is refused before any name is resolved ---------------------------------------------------------
def _collect(tree: Any) -> dict[str, list[Any]]:
    """The nodes the steps before resolution look at, by kind, in one pass over the tree."""
    from sqlglot import exp

    kinds: dict[str, type | tuple[type, ...]] = {
        "tables": exp.Table,
        "identifiers": exp.Identifier,
        "stars": exp.Star,
        "statements": (exp.Summarize, exp.Describe, exp.Show, exp.Command, exp.Pivot),
        "functions": exp.Func,  # casts included
        "ctes": exp.CTE,
    }
    found: dict[str, list[Any]] = {name: [] for name in kinds}
    for node in tree.walk():
        for name, kind in kinds.items():
            if isinstance(node, kind):
                found[name].append(node)
    return found


_SEQUENCE = re.compile(r"seq_[0-9]+_to_[0-9]+(?:_step_[0-9]+)?")
_NAMED_IN_ERROR = re.compile(r"(?:column|resolve)[: ]+'?([^'\s]+)'?", re.IGNORECASE)
_UNREADABLE = (
    "The checker cannot resolve this query's names, and this source hides some data (personal data): it refuses "
    "what it cannot verify. Write it as a plain SELECT over the tables, naming the columns."
)


def _written_parts(table: Any) -> tuple[Name, ...]:
    from sqlglot import exp

    parts = []
    for key in ("catalog", "db", "this"):
        part = table.args.get(key)
        if isinstance(part, exp.Identifier):
            parts.append((str(part.this), bool(part.quoted)))
        elif part is not None:
            parts.append((part.sql(), False))  # an expression where a name belongs: never resolves
    return tuple(parts)


def _rewrite_duckdb_statements(statements: list[Any], run: _Analysis) -> None:
    """DuckDB's statements that read every column of a relation, inside a query: SUMMARIZE as what it
    reads and returns, PIVOT/UNPIVOT statements as reading every column (their output columns depend
    on the data); DESCRIBE and SHOW show names, and are refused."""
    from sqlglot import exp

    for node in statements:
        if isinstance(node, exp.Summarize):
            inner = node.this if isinstance(node.this, exp.Query) else exp.select("*").from_(node.this)
            read = exp.select(*(exp.alias_(exp.Null(), name) for name in _SUMMARIZE_COLUMNS))
            node.replace(read.from_(exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier("_s")))))
        elif isinstance(node, exp.Pivot) and isinstance(node.parent, exp.Subquery) and node.arg_key == "this":
            node.replace(exp.select("*").from_(node.this))  # the statement form: every column of its input
        elif isinstance(node, (exp.Describe, exp.Show, exp.Command)):
            run.add(
                "DESCRIBE and SHOW show column names, and this source hides some (personal data). Use describe_table "
                "and autocontext: they list the columns you may use."
            )


def _check_functions(functions: list[Any], run: _Analysis) -> None:
    """Functions whose result no column reference shows: user-defined functions (their bodies may read
    anything), the catalog's functions (view definitions, comments, names) and casts to object
    identifiers ('t'::regclass)."""
    from sqlglot import exp

    catalog = run.catalog
    user: frozenset[str] | None = None
    for node in functions:
        if isinstance(node, exp.Cast) and isinstance(node.args.get("to"), exp.ObjectIdentifier):
            run.add(_unseen(f"a cast to {node.args['to'].sql(run.dialect)}, which looks names up in the catalog"))
            continue
        name = function_name(node)
        if name in catalog.catalog_functions or name.startswith(catalog.catalog_prefixes):
            run.add(_unseen(f"{name}(), which reads the system catalog"))
            continue
        if user is None:
            user = catalog.user_functions()
        if name in user:
            run.add(_unseen(f"the user-defined function {name}()"))


def _check_recursive_names(ctes: list[Any], run: _Analysis) -> None:
    """The first part of a recursive CTE that names the CTE itself: PostgreSQL and SQLite refuse it,
    DuckDB reads the table of that name there (and sqlglot takes it for the CTE)."""
    from sqlglot import exp

    for cte in ctes:
        with_ = cte.parent
        if not (isinstance(with_, exp.With) and with_.recursive and isinstance(cte.this, exp.SetOperation)):
            continue
        if any(not t.db and t.name == cte.alias for t in cte.this.this.find_all(exp.Table)):
            run.add(
                f"The first part of the recursive CTE {cte.alias} reads a relation named {cte.alias}, which engines "
                "read differently, and this source hides some data. Rename the CTE."
            )


def function_name(node: Any) -> str:
    from sqlglot import exp

    name = str(node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
    return _SQLGLOT_NAMES.get(name, name)


# -- 2. table references to catalog relations ------------------------------------------------------------
def _resolve_tables(tables: list[Any], scopes: list[Any], written: dict[int, tuple[Name, ...]], run: _Analysis) -> None:
    """Tie every table reference that is not a CTE to a catalog relation, and rename it ``_r<n>``
    (keeping the name it is known by as its alias) so that qualification sees the canonical columns."""
    from sqlglot import exp
    from sqlglot.optimizer.scope import Scope

    real: dict[int, Any] = {}
    accounted: set[int] = set()
    for scope in scopes:
        for table in scope.tables:
            source = scope.sources.get(table.alias_or_name)
            if isinstance(source, Scope) or (source is None and _is_cte_name(scope, table)):
                accounted.add(id(table))  # a CTE in scope
            elif source is table or any(s is table for s in scope.sources.values()):
                accounted.add(id(table))
                real[id(table)] = table
    for table in tables:
        if id(table) not in accounted and not isinstance(table.parent, exp.JoinHint):
            run.add(_UNREADABLE)  # a relation in a place the scopes do not cover
            return
    functions = [t for t in real.values() if isinstance(t.this, exp.Func)]
    for table in functions:
        name = function_name(table.this)
        if name not in VALUE_TABLE_FUNCTIONS:
            run.add(_unseen(f"the table function {name}()"))
    named = [t for t in real.values() if not isinstance(t.this, exp.Func)]
    if not named:
        return
    catalog = run.catalog
    names = {written[id(t)][-1][0].lower() for t in named}
    schemas = {part[0] for t in named for part in written[id(t)][:-1]} | set(run.search_path)
    relations = catalog.relations(names, schemas)
    for table in named:
        located = _locate(written[id(table)], relations, run)
        if isinstance(located, str) and catalog.engine == "mysql" and _SEQUENCE.fullmatch(table.name):
            # MariaDB's Sequence engine: seq_1_to_5 is a table of numbers that no catalog lists.
            run.schema[f"_v{len(run.schema)}"] = {"seq": "text"}
            table.set("this", exp.to_identifier(f"_v{len(run.schema) - 1}"))
            run.values[id(table)] = {"seq"}
            continue
        if isinstance(located, str):
            run.add(located)
            continue
        hidden = catalog.hidden_columns(located)
        if hidden is ALL:
            run.add(_missing_relation(_display(written[id(table)])))
            continue
        alias = table.args.get("alias")
        if alias is None or not alias.name:
            known_as = table.this.copy()
            table.set("alias", exp.TableAlias(this=known_as, columns=alias.columns if alias else None))
        key = f"_r{len(run.schema)}"
        table.set("this", exp.to_identifier(key))
        table.set("db", None)
        table.set("catalog", None)
        folded = [fold(catalog.engine, c, True) for c in located.columns]
        run.schema[key] = dict.fromkeys(folded, "text")
        # "customers AS t(i, n, e)" renames the columns by position; the rest keep their names.
        renamed = [c.name for c in (alias.columns if alias is not None else [])]
        shown = [renamed[i] if i < len(renamed) else name for i, name in enumerate(folded)]
        run.sources[id(table)] = _Source(located, dict(zip(shown, located.columns, strict=True)))
        if table.args.get("pivots"):
            _read_all(run.sources[id(table)], run, table)  # PIVOT groups by every other column


def _is_cte_name(scope: Any, table: Any) -> bool:
    return not table.db and table.name in scope.cte_sources


def _locate(parts: tuple[Name, ...], relations: list[Relation], run: _Analysis) -> Relation | str:
    """The relation a written name denotes on this engine, or why it denotes none this source shows."""
    catalog = run.catalog
    engine = catalog.engine
    name, qualifiers = parts[-1], parts[:-1]
    shown = _display(parts)
    lowered = [q[0].lower() for q in qualifiers]
    if any(q in catalog.catalog_schemas for q in lowered) or name[0].lower().startswith(catalog.catalog_prefixes):
        return _unseen(f"the system catalog ({shown})")
    schemas: list[Name]
    if not qualifiers:
        schemas = [(s, True) for s in run.search_path]
    elif engine == "sqlite":
        if lowered != ["main"]:
            return _missing_relation(shown)
        schemas = [("main", True)]
    elif engine == "duckdb":
        if len(qualifiers) == 2 and lowered[0] != catalog.database.lower():
            return _missing_relation(shown)  # another catalog: temp, system or an attached one
        schemas = [qualifiers[-1]]
        if len(qualifiers) == 1 and lowered[0] == catalog.database.lower():
            schemas.append(("main", True))  # "people.customers": DuckDB tries the catalog "people" too
    elif engine == "postgres":
        if len(qualifiers) == 2 and fold(engine, *qualifiers[0]) != catalog.database:
            return _missing_relation(shown)
        schemas = [qualifiers[-1]]
    else:
        schemas = [qualifiers[-1]]
    matches = []
    for schema in schemas:
        found = [r for r in relations if r.schema.lower() == schema[0].lower() and r.name.lower() == name[0].lower()]
        if len(found) > 1:
            found = [r for r in found if _exact(engine, r.schema, schema) and _exact(engine, r.name, name)]
            if len(found) != 1:
                return (
                    f"{shown} could name several tables whose names differ only in letter case, and this source "
                    "hides some data: write the table's exact name, in double quotes (backticks on MySQL)."
                )
        matches += found
        if found and not qualifiers:
            break  # the search path: the first schema that has the name wins
    if len(matches) > 1:
        return f"{shown} could name a table in two places, and this source hides some data: write schema.table."
    return matches[0] if matches else _missing_relation(shown)


def _exact(engine: str, canonical: str, written: Name) -> bool:
    """The engine's own rule where names differ only in case: PostgreSQL folds unquoted names to lower
    case; MySQL compares table names as written (lower_case_table_names=0)."""
    return canonical == (written[0] if written[1] or engine != "postgres" else written[0].lower())


def _display(parts: tuple[Name, ...]) -> str:
    return ".".join(text for text, _ in parts)


# -- 3. every output column and every reference ----------------------------------------------------------
def _map_outputs(tree: Any, run: _Analysis) -> int | None:
    """Record which top-level output column each node sits in; the number of output columns."""
    from sqlglot import exp
    from sqlglot.optimizer.scope import walk_in_scope

    leaves: list[Any] = []

    def collect(node: Any) -> None:
        node = node.unnest() if isinstance(node, exp.Subquery) else node
        if isinstance(node, exp.SetOperation):
            collect(node.this)
            collect(node.expression)
        elif isinstance(node, exp.Select):
            leaves.append(node)

    collect(tree)
    widths = {len(select.expressions) for select in leaves}
    for select in leaves:
        for position, expression in enumerate(select.expressions):
            for node in walk_in_scope(expression):
                run.outputs[id(node)] = position
    if len(widths) != 1 or any(isinstance(e, exp.Star) for s in leaves for e in s.expressions):
        return None
    return widths.pop()


def _owned_nodes(scopes: list[Any]) -> Iterator[tuple[Any, Any]]:
    """Each column-like node once, with the innermost scope it belongs to (children come first)."""
    from sqlglot import exp

    kinds = (exp.Column, exp.Star, exp.Columns, exp.PositionalColumn, exp.TableColumn)
    seen: set[int] = set()
    for scope in scopes:
        for node in scope.walk():
            if isinstance(node, kinds) and id(node) not in seen:
                seen.add(id(node))
                yield scope, node


def _check_node(node: Any, scope: Any, run: _Analysis) -> None:
    from sqlglot import exp

    if isinstance(node, exp.Star):
        if isinstance(node.parent, (exp.Column, exp.Count, exp.Columns)):
            return  # t.* is its Column; count(*) reads no column; COLUMNS(*) is checked as a whole
        for source in _local_sources(scope, run):
            _read_all(source, run, node)
        return
    if isinstance(node, (exp.Columns, exp.PositionalColumn)):
        for source in _local_sources(scope, run):
            _read_all(source, run, node)
        return
    if isinstance(node, exp.TableColumn):
        _check_row(node.name, scope, run, node)
        return
    if isinstance(node.this, exp.Star):
        found = _find_source(scope, node.table)
        if found is None:
            run.add(_unresolved(f"{node.table}.*"), node)
        elif id(found) in run.sources:
            _read_all(run.sources[id(found)], run, node)
        return
    if _is_lambda_parameter(node):
        return
    if id(node) in run.bare or not node.table:
        _check_bare(node, scope, run)  # sqlglot's guess is one candidate; the engine may pick another
        return
    found = _find_source(scope, node.table)
    if found is None or not _qualifiers_match(node, found, run):
        run.add(_unresolved(node.sql(run.dialect)), node)
    elif id(found) in run.sources:
        _read_column(run.sources[id(found)], node.name, run, node)


def _qualifiers_match(node: Any, source: Any, run: _Analysis) -> bool:
    """A column written schema.table.column (MySQL's view definitions) names its table's schema."""
    schema, catalog = node.args.get("db"), node.args.get("catalog")
    if schema is None:
        return True
    if id(source) not in run.sources:
        return False
    relation = run.sources[id(source)].relation
    if schema.name.lower() != relation.schema.lower():
        return False
    return catalog is None or catalog.name.lower() == run.catalog.database.lower()


def _check_bare(node: Any, scope: Any, run: _Analysis) -> None:
    """An unqualified reference sqlglot could not tie to one source: every source it could denote, from
    the innermost scope outwards (a correlated reference), is checked, and so is a whole row."""
    from sqlglot.optimizer.scope import Scope

    name = node.name
    possible = False
    level = scope
    while level is not None:
        has_it = False
        for alias, source in level.sources.items():
            columns = _output_names(source, run)
            if alias == name:
                possible = True
                _check_row(alias, level, run, node)
            if columns is None:
                continue  # a table function without a column list: it may or may not have the name
            if name in columns:
                has_it = possible = True
                if not isinstance(source, Scope) and id(source) in run.sources:
                    _read_column(run.sources[id(source)], name, run, node)
        if level.pivots:
            possible = True  # a pivot's output column, unknown until it runs
        if level is scope and _refers_to_output(node, level, run):
            possible = True  # an output alias (ORDER BY, GROUP BY): its expression is checked where it is
        if has_it:
            break
        level = level.parent
    if not possible:
        run.add(_unresolved(name), node)


def _refers_to_output(node: Any, scope: Any, run: _Analysis) -> bool:
    """A bare name outside the select list that one of the scope's outputs carries."""
    select = scope.expression
    if node.name not in (run.named_selects(select) or ()):
        return False
    child = node
    while child.parent is not None and child.parent is not select:
        child = child.parent
    return child.parent is select and child.arg_key != "expressions"


def _output_names(source: Any, run: _Analysis) -> set[str] | None:
    """The column names a source offers; None when unknown (a table function without a column list)."""
    from sqlglot import exp
    from sqlglot.optimizer.scope import Scope

    if isinstance(source, Scope):
        expression = source.expression
        alias = expression.args.get("alias") if isinstance(expression, exp.Expr) else None
        if alias is not None and alias.columns:
            return {c.name for c in alias.columns}
        names = run.named_selects(expression)
        return None if names is None or "*" in names else set(names)
    if id(source) in run.sources:
        return set(run.sources[id(source)].columns)
    if id(source) in run.values:
        return run.values[id(source)]
    alias = source.args.get("alias")
    return {c.name for c in alias.columns} if alias is not None and alias.columns else None


def _check_row(alias: str, scope: Any, run: _Analysis, node: Any) -> None:
    found = _find_source(scope, alias)
    if found is not None and id(found) in run.sources:
        _read_all(run.sources[id(found)], run, node)


_PIVOTED = object()  # a pivot's output: computed from its input, whose reads are checked where it is


def _find_source(scope: Any, alias: str) -> Any:
    """The source an alias denotes, from the innermost scope outwards (a correlated reference)."""
    level = scope
    while level is not None:
        if alias in level.sources:
            return level.sources[alias]
        if any(pivot.alias == alias for pivot in level.pivots):
            return _PIVOTED
        level = level.parent
    return None


def _local_sources(scope: Any, run: _Analysis) -> list[_Source]:
    return [run.sources[id(s)] for s in scope.sources.values() if id(s) in run.sources]


def _is_lambda_parameter(node: Any) -> bool:
    """A lambda's parameter (lambda x: x + 1) or a list comprehension's variable ([x FOR x IN l])."""
    from sqlglot import exp

    if node.table:
        return False
    child, binder = node, node.parent
    while binder is not None:
        if isinstance(binder, exp.Lambda) and node.name in {p.name for p in binder.expressions}:
            return True
        if (
            isinstance(binder, exp.Comprehension)
            and child.arg_key in ("this", "condition")  # not in the list it iterates over
            and binder.args["expression"].name == node.name
        ):
            return True
        child, binder = binder, binder.parent
    return False


def _read_column(source: _Source, name: str, run: _Analysis, node: Any) -> None:
    canonical = source.columns.get(name)
    hidden = run.catalog.hidden_columns(source.relation)
    if canonical is None or hidden is ALL or canonical in hidden:
        if id(node) in run.written:
            run.add(_missing_column(name, source, run), node)
        else:
            _read_all(source, run, node)  # a column a star or USING brought in: its name is not the query's


def _read_all(source: _Source, run: _Analysis, node: Any) -> None:
    hidden = run.catalog.hidden_columns(source.relation)
    if hidden is ALL or hidden:
        visible = ", ".join(run.catalog.visible_columns(source.relation)) or "none"
        run.add(
            f"The query reads every column of {source.relation.name} (through *, t.*, a whole-row reference, "
            "USING or NATURAL, COLUMNS(), a positional #n, PIVOT or SUMMARIZE), and the source configuration hides "
            f"some of them (personal data). Name the columns you need; its columns are: {visible}.",
            node,
        )


# -- messages ---------------------------------------------------------------------------------------
def _unseen(what: str) -> str:
    return (
        f"The query reads {what}; this source hides some data (personal data), and that could show it. Query "
        "the tables themselves, naming the visible columns: autocontext and describe_table list them."
    )


def _missing_relation(shown: str) -> str:
    # The same words whether the relation is hidden or absent: a refusal must not confirm a hidden name.
    return (
        f"{shown} is not a table or view that this source shows: it does not exist, or the source configuration "
        "hides it (personal data). Call autocontext to list the tables."
    )


def _missing_column(name: str, source: _Source, run: _Analysis) -> str:
    visible = ", ".join(run.catalog.visible_columns(source.relation)) or "none"
    return (
        f"{name} is not a column of {source.relation.name} that this source shows: it does not exist, or the source "
        f"configuration hides it (personal data). Its columns are: {visible}."
    )


def _unresolved(name: str) -> str:
    return (
        f"The checker cannot tell which table {name} comes from, and this source hides some data (personal data): "
        "it refuses what it cannot verify. Check the name, qualify it with its table's alias (t.column), and give "
        "table functions a column list (AS t(x))."
    )


def view_flags(findings: Sequence[Finding], width: int | None, columns: int) -> tuple[bool, ...]:
    """Which of a view's columns are hidden, from the findings of its own query: a finding in one
    output column hides that column; anywhere else (a filter, a join, a subquery) it hides them all,
    and so does a query whose output columns cannot be matched with the view's."""
    if width != columns or any(f.output is None for f in findings):
        return (True,) * columns
    hidden = {f.output for f in findings}
    return tuple(position in hidden for position in range(columns))
