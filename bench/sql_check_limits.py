"""The worst CPU the SQL checks spend within the limits on SQL text (shared/sql.py).

    .venv/bin/python bench/sql_check_limits.py [--engines sqlite,duckdb,postgres,mysql] [--tokens N]

sqlglot runs in the caller's thread and cannot be interrupted, so the limits on SQL text
(``MAX_SQL_BYTES``, ``MAX_SQL_TOKENS``, checked before parsing) are what bound its work. For each
engine, pathological shapes are filled up to the token limit (long IN lists, OR and UNION chains,
many CTEs and joins, long CASE chains, wide selects, huge VALUES, a 256 KB string) and timed through
``Engine.check_sql`` (tokenizing, parsing, regenerating, reading back, every check), then, on SQLite and
DuckDB, through the ``hidden`` check itself (``Policy.on(conn, engine).check_query``) against a
real database file whose catalog holds every table the shapes name (``t`` with a hidden column,
``t0`` … ``t1999``), as a source with ``hidden`` set runs it. The same shapes at 256 KB time the refusal path,
and the deepest nesting each shape allows is found (deeper is refused cleanly).

CPU seconds (``time.process_time``), one run each: no engine or server is needed. Target: the
worst check plus the hidden check within the limits stays at a few seconds (≤ 3 s), and a refusal
of any 256 KB text under 1 s.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

KB = 1024
TARGET_CHECKED_S = 3.0
TARGET_REFUSED_S = 1.0


def fill(prefix: str, item: Callable[[int], str], sep: str, suffix: str, budget: int) -> str:
    """``prefix`` + items joined by ``sep`` + ``suffix``, as many items as fit in ``budget`` bytes."""
    parts, size, i = [], len(prefix) + len(suffix), 0
    while size + len(item(i)) + len(sep) <= budget:
        parts.append(item(i))
        size += len(parts[-1]) + len(sep)
        i += 1
    return prefix + sep.join(parts) + suffix


def shapes(budget: int) -> Iterator[tuple[str, str]]:
    yield "in-list", fill("SELECT a FROM t WHERE a IN (", str, ", ", ")", budget)
    yield "or-chain", fill("SELECT a FROM t WHERE ", lambda i: f"a = {i}", " OR ", "", budget)
    yield "plus-chain", fill("SELECT ", lambda i: "1", " + ", " AS x", budget)
    yield "case-chain", fill("SELECT CASE ", lambda i: f"WHEN a = {i} THEN {i}", " ", " END FROM t", budget)
    yield "columns", fill("SELECT ", lambda i: f"c{i}", ", ", " FROM t", budget)
    yield "real-columns", fill("SELECT ", lambda i: "abc"[i % 3], ", ", " FROM t", budget)
    yield "outer-columns", fill("SELECT ", lambda i: "x.a", ", ", " FROM (SELECT a, b FROM t) AS x", budget)
    yield "ordered-by", fill("SELECT a AS o FROM t ORDER BY ", lambda i: "o", ", ", "", budget)
    yield "ctes", fill("WITH ", lambda i: f"c{i} AS (SELECT {i} AS x)", ", ", " SELECT x FROM c0", budget)
    yield (
        "chained-ctes",
        fill("WITH c0 AS (SELECT 1 AS x), ", lambda i: f"c{i + 1} AS (SELECT x FROM c{i})", ", ", " SELECT x FROM c1",
             budget),
    )  # fmt: skip
    yield "joins", fill("SELECT t0.a FROM t0 ", lambda i: f"JOIN t{i + 1} ON t{i + 1}.a = t{i}.a", " ", "", budget)
    yield "unions", fill("", lambda i: f"SELECT {i} AS x", " UNION ALL ", "", budget)
    yield "values", fill("SELECT * FROM (VALUES ", lambda i: f"({i}, 'x')", ", ", ") AS v(a, b)", budget)
    yield "functions", fill("SELECT ", lambda i: f"coalesce(a, {i})", ", ", " FROM t", budget)
    yield (
        "subquery-columns",
        fill("SELECT ", lambda i: f"(SELECT max(b) FROM u WHERE u.a = t.a + {i})", ", ", " FROM t", budget),
    )
    yield (
        "window-columns",
        fill("SELECT ", lambda i: f"sum(a) OVER (PARTITION BY b ORDER BY c ROWS {i} PRECEDING)", ", ", " FROM t",
             budget),
    )  # fmt: skip
    yield "huge-string", "SELECT '" + "x" * (budget - 20) + "' AS s"


NESTING: dict[str, Callable[[int], str]] = {
    "parentheses": lambda d: "SELECT " + "(" * d + "1" + ")" * d,
    "calls": lambda d: "SELECT " + "abs(" * d + "1" + ")" * d,
    "subqueries": lambda d: "SELECT " + "(SELECT " * d + "1" + ")" * d,
    "derived-tables": lambda d: "SELECT * FROM " + "(SELECT * FROM " * d + "t" + ") AS s" * d,
    "case": lambda d: "SELECT " + "CASE WHEN a THEN " * d + "1" + " END" * d,
}


def token_count(sql: str, dialect: str) -> int:
    from sqlglot.dialects.dialect import Dialect

    return len(Dialect.get_or_raise(dialect).tokenize(sql))


def at_tokens(engine: Any, tokens: int) -> Iterator[tuple[str, str]]:
    """Each shape shrunk to just under ``tokens`` tokens."""
    full = dict(shapes(256 * KB - 64))
    for name, text in full.items():
        budget, shrunk = 256 * KB - 64, text
        while token_count(shrunk, engine.dialect) > tokens:
            budget = int(budget * tokens / token_count(shrunk, engine.dialect) * 0.98)
            shrunk = dict(shapes(budget))[name]
        yield name, shrunk


CATALOG_TABLES = 2000  # more than the joins shape names within the token limit


def catalog_database(kind: str, folder: Path) -> dict[str, Any] | None:
    """Credentials of a file database whose catalog holds the tables the shapes name, or None for a server."""
    statements = ["CREATE TABLE t (a INTEGER, b INTEGER, c INTEGER, secret TEXT)"]
    statements += [f"CREATE TABLE t{i} (a INTEGER)" for i in range(CATALOG_TABLES)]
    path = folder / f"catalog.{kind}"
    if kind == "sqlite":
        import sqlite3

        with sqlite3.connect(path) as conn:
            for statement in statements:
                conn.execute(statement)
    elif kind == "duckdb":
        import duckdb

        with duckdb.connect(str(path)) as conn:
            conn.execute(";".join(statements))
    else:
        return None
    return {"type": kind, "path": str(path)}


def hidden_check(engine: Any, credentials: dict[str, Any]) -> Callable[[Any], None]:
    """The `hidden` check of a source that hides ``t.secret``, on one connection kept for every shape."""
    from connectors.databases.policy import Policy

    policy = Policy.from_config({"hidden": json.dumps(["t\\.secret"])})
    conn = engine.connect(credentials, None)
    return lambda checked: policy.on(conn, engine).check_query(checked, "main" if engine.has_schemas else None)


def cpu(run: Callable[[], Any]) -> tuple[float, Any]:
    start = time.process_time()
    try:
        outcome = run()
    except Exception as exc:  # a refusal is an outcome here
        outcome = exc
    return time.process_time() - start, outcome


def deepest(engine: Any, shape: Callable[[int], str]) -> int:
    from shared.errors import AcpError

    def passes(depth: int) -> bool:
        try:
            engine.check_sql(shape(depth))
        except AcpError as refusal:
            return "nests too deeply" not in refusal.message
        return True

    low, high = 1, 2000
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if passes(middle) else (low, middle - 1)
    return low


def main(argv: list[str] | None = None) -> int:
    from connectors.databases.engine import engine_for
    from shared import sql
    from shared.errors import AcpError

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="sqlite,duckdb,postgres,mysql")
    parser.add_argument("--tokens", type=int, default=sql.MAX_SQL_TOKENS, help="the token limit to measure at")
    args = parser.parse_args(argv)
    sql.MAX_SQL_TOKENS = max(sql.MAX_SQL_TOKENS, args.tokens)
    worst_checked, worst_refused = (0.0, ""), (0.0, "")
    print(f"Limits: {sql.MAX_SQL_BYTES:,} bytes, {args.tokens:,} tokens (measured at that count)\n")
    print(f"{'engine':9} {'shape':17} {'bytes':>8} {'tokens':>7} {'check s':>8} {'hidden s':>8} {'total s':>8}")
    folder = Path(tempfile.mkdtemp(prefix="acp-limits-"))
    for kind in args.engines.split(","):
        engine = engine_for({"type": kind})
        credentials = catalog_database(kind, folder)
        hidden = hidden_check(engine, credentials) if credentials else None
        for name, text in at_tokens(engine, args.tokens):
            checked_s, checked = cpu(lambda text=text, engine=engine: engine.check_sql(text))
            if isinstance(checked, Exception):
                print(f"{kind:9} {name:17} refused: {str(checked)[:80]}")
                continue
            scope_s, _ = cpu(lambda checked=checked, hidden=hidden: hidden(checked)) if hidden else (0.0, None)
            total = checked_s + scope_s
            worst_checked = max(worst_checked, (total, f"{kind} {name}"))
            tokens = token_count(text, engine.dialect)
            print(
                f"{kind:9} {name:17} {len(text):8,} {tokens:7,} {checked_s:8.2f} {scope_s:8.2f} {total:8.2f}",
                flush=True,
            )
        for name, text in shapes(256 * KB - 64):
            refused_s, outcome = cpu(lambda text=text, engine=engine: engine.check_sql(text))
            if isinstance(outcome, AcpError):
                worst_refused = max(worst_refused, (refused_s, f"{kind} {name}"))
        depths = ", ".join(f"{name} {deepest(engine, shape)}" for name, shape in NESTING.items())
        print(f"{kind:9} deepest nesting that passes: {depths}\n", flush=True)
    ok_checked, ok_refused = worst_checked[0] <= TARGET_CHECKED_S, worst_refused[0] <= TARGET_REFUSED_S
    print(f"Worst within the limits: {worst_checked[0]:.2f} s CPU ({worst_checked[1]}), target ≤ {TARGET_CHECKED_S} s: "
          f"{'met' if ok_checked else 'NOT met'}")  # fmt: skip
    print(f"Worst refusal of a 256 KB text: {worst_refused[0]:.2f} s CPU ({worst_refused[1]}), target ≤ "
          f"{TARGET_REFUSED_S} s: {'met' if ok_refused else 'NOT met'}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
