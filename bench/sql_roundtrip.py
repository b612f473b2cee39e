"""The analytics query corpus through sqlglot and through the connector's checks, on every engine.

The corpus is the one the tests run (``tests/connectors/databases/corpus``): a TPC-H-shaped dataset
generated with a fixed seed, and 50+ queries per engine in its own dialect (TPC-H's 22, then window
functions, CTEs, dates, JSON, regex, ROLLUP…). For each engine the script builds the dataset (a SQLite
file, a DuckDB file, a fresh PostgreSQL database and a fresh MariaDB database, dropped at the end) and
measures two things:

* **Round trip.** Each query goes through the connector's parser layer (``engine.check_sql(sql)``,
  in the dialect its engine declares) and the text it regenerates, which is what the connector runs
  (``.sql()`` of the checked query), and the raw text run on the bare driver (superuser / root, or the
  file). For comparison, plain sqlglot's round trip (parse, ``.sql(dialect=…)``) is counted too.
  A query round-trips when the regenerated text runs and gives the same column names and rows
  (compared as the tests compare them: in order where a top-level ORDER BY orders them, floats
  within 1e-9). The others are listed with the reason: parse error, the regenerated
  text fails, or its result differs.
* **What the checks cost per call.** For each query, the median of ``--repeat`` runs of
  ``engine.check_sql(sql)`` (the parser layer), of the ``hidden`` check (``Policy.on(conn,
  engine).check_query``, a fresh one per run as each call makes, with ``hidden`` = ``staff.ssn`` on a
  connection of the engine: its catalog lookups are part of it; the same check again on one call's
  warm cache tells them apart), of the parse + regeneration above, and of the query itself on the bare
  driver (execute and fetch every row). The table gives the median over the corpus of each, and the
  checks' total over the corpus's total query time.

    .venv/bin/python bench/sql_roundtrip.py [--engines sqlite,duckdb,postgres,mariadb] [--repeat 5]

No target: the issue asks for the figures. PostgreSQL (127.0.0.1:5432, ``postgres``, trust) and
MariaDB (127.0.0.1:3306, ``root``, no password) must be running for their engines.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from loader import load_file  # noqa: E402 - after the path setup

from bench.scratch_databases import MY, PG, create_mariadb, create_postgres  # noqa: E402

tpch = load_file(ROOT / "tests" / "connectors" / "databases" / "corpus" / "tpch.py", "acp_bench_corpus_tpch")

CREDENTIAL_TYPES = {"sqlite": "sqlite", "duckdb": "duckdb", "postgres": "postgres", "mariadb": "mysql"}
SCHEMA = "tpch"  # PostgreSQL: the corpus's own schema, as in the tests


@dataclass
class Source:
    """One engine's corpus database: a bare driver connection, and the credentials the engine opens."""

    engine: str
    credentials: dict[str, Any]
    schema: str | None
    raw: Callable[[], Any]  # a new DB-API connection, as the superuser / root or on the file


@dataclass
class QueryFigures:
    name: str
    problem: str | None = None  # why the connector's round trip failed, or None
    plain_problem: str | None = None  # why plain sqlglot's failed, or None
    refused: list[str] = field(default_factory=list)  # which checks refused the raw text
    check_sql_s: float = 0.0
    hidden_s: float = 0.0
    hidden_cached_s: float = 0.0  # the same check again on one call's cache: without the catalog lookups
    regenerate_s: float = 0.0
    query_s: float = 0.0


# -- the databases ----------------------------------------------------------------------------------
@contextlib.contextmanager
def build(engine: str, data: dict[str, list[tuple[Any, ...]]], scratch: Path) -> Iterator[Source]:
    if engine == "sqlite":
        import sqlite3

        path = scratch / "tpch.sqlite"
        tpch.load_sqlite(path, data)
        yield Source(engine, {"type": "sqlite", "path": str(path)}, None,
                     lambda: sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True))  # fmt: skip
    elif engine == "duckdb":
        import duckdb

        path = scratch / "tpch.duckdb"
        tpch.load_duckdb(path, data)
        yield Source(engine, {"type": "duckdb", "path": str(path)}, "main",
                     lambda: duckdb.connect(str(path), read_only=True))  # fmt: skip
    elif engine == "postgres":
        yield from _postgres(data)
    else:
        yield from _mariadb(data)


def _postgres(data: dict[str, list[tuple[Any, ...]]]) -> Iterator[Source]:
    import psycopg

    name, drop = create_postgres("acp_bench_corpus_")
    try:
        with psycopg.connect(**PG, dbname=name, autocommit=True, connect_timeout=5) as conn:
            tpch.load_postgres(conn, data, SCHEMA)

        def raw() -> Any:
            conn = psycopg.connect(**PG, dbname=name, autocommit=True, connect_timeout=5)
            conn.execute(f"SET search_path TO {SCHEMA}")
            return conn

        yield Source("postgres", {"type": "postgres", **PG, "database": name, "sslmode": "disable"}, SCHEMA, raw)
    finally:
        drop()


def _mariadb(data: dict[str, list[tuple[Any, ...]]]) -> Iterator[Source]:
    import pymysql

    name, drop = create_mariadb("acp_bench_corpus_")
    admin = pymysql.connect(**MY, database=name, autocommit=True, connect_timeout=5, charset="utf8mb4")
    try:
        tpch.load_mariadb(admin, data)
        yield Source(
            "mariadb", {"type": "mysql", **MY, "database": name, "ssl_mode": "disabled"}, None,
            lambda: pymysql.connect(**MY, database=name, autocommit=True, connect_timeout=5, charset="utf8mb4"),
        )  # fmt: skip
    finally:
        admin.close()
        drop()


# -- measuring ----------------------------------------------------------------------------------------
def _timed(repeat: int, work: Callable[[], Any]) -> tuple[float, Any]:
    """The median wall time of ``repeat`` runs of ``work``, and the first run's result."""
    times, first = [], None
    for index in range(repeat):
        start = time.perf_counter_ns()
        result = work()
        times.append((time.perf_counter_ns() - start) / 1e9)
        if index == 0:
            first = result
    return statistics.median(times), first


def _run(conn: Any, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    cursor = conn.cursor()
    try:
        cursor.execute(sql)
        return tpch.rows_of(cursor)
    finally:
        cursor.close()


def _canonical(result: tuple[list[str], list[tuple[Any, ...]]]) -> tuple[list[str], list[list[Any]]]:
    return result[0], [[tpch.canonical(v) for v in row] for row in result[1]]


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]


def round_trip(source: Source, engine: Any, repeat: int) -> list[QueryFigures]:
    """Phase 1, on the bare driver: the query's time, and whether its regenerated text gives the same
    (the connector's, then plain sqlglot's in ``plain_problem``)."""
    import sqlglot

    dialect = engine.dialect

    out = []
    conn = source.raw()
    try:
        for name, sql in tpch.queries(source.engine).items():
            figures = QueryFigures(name)
            out.append(figures)
            figures.query_s, expected = _timed(repeat, lambda sql=sql: _run(conn, sql))

            def plain(sql: str = sql) -> str:
                statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
                if len(statements) != 1:
                    raise ValueError(f"{len(statements)} statements")
                return str(statements[0].sql(dialect=dialect))

            def connector(sql: str = sql) -> str:
                return str(engine.check_sql(sql).sql())

            figures.regenerate_s, _ = _timed(repeat, lambda: _attempt(plain))
            figures.problem = _same_result(conn, source, sql, expected, connector)
            figures.plain_problem = _same_result(conn, source, sql, expected, plain)
    finally:
        conn.close()
    return out


def _attempt(work: Callable[[], Any]) -> Any:
    try:
        return work()
    except Exception as exc:  # sqlglot's errors are outcomes here
        return exc


def _same_result(conn: Any, source: Source, sql: str, expected: Any, regenerate: Callable[[], str]) -> str | None:
    """Why the regenerated text does not give the raw text's result, or None when it does."""
    try:
        regenerated = regenerate()
    except Exception as exc:  # sqlglot's ParseError, an ACP refusal and the like
        return f"parse: {_first_line(exc)}"
    try:
        got = _run(conn, regenerated)
    except Exception as exc:  # the driver's own error class
        if source.engine == "postgres":
            conn.rollback()
        return f"regenerated text fails: {_first_line(exc)}"
    difference = tpch.differences(_canonical(expected), _canonical(got), tpch.ordered(sql))
    return f"regenerated text differs: {difference[:200]}" if difference else None


def check_costs(source: Source, figures: list[QueryFigures], repeat: int) -> None:
    """Phase 2, on a connection of the connector's engine: what each check costs per call."""
    from connectors.databases.engine import engine_for
    from connectors.databases.policy import Policy
    from shared import AcpError

    engine = engine_for(source.credentials)
    policy = Policy.from_config({"hidden": json.dumps(tpch.HIDDEN)})
    conn = engine.connect(source.credentials, None)
    try:
        queries = tpch.queries(source.engine)
        for entry in figures:
            sql = queries[entry.name]

            def check(sql: str = sql) -> str | None:
                try:
                    engine.check_sql(sql)
                except AcpError as exc:
                    return f"check_sql: {exc}"
                return None

            entry.check_sql_s, refused = _timed(repeat, check)
            entry.refused += [refused] if refused else []
            if refused:
                continue
            checked = engine.check_sql(sql)  # what the hidden check reads: the approved tree

            def hidden(checked: Any = checked) -> str | None:
                try:
                    policy.on(conn, engine).check_query(checked, source.schema)
                except AcpError as exc:
                    return f"hidden: {exc}"
                return None

            entry.hidden_s, refused = _timed(repeat, hidden)
            entry.refused += [refused] if refused else []
            warm = policy.on(conn, engine)
            with contextlib.suppress(AcpError):
                warm.check_query(checked, source.schema)  # fills its cache of views and columns

            def hidden_cached(checked: Any = checked, warm: Any = warm) -> None:
                with contextlib.suppress(AcpError):
                    warm.check_query(checked, source.schema)

            entry.hidden_cached_s, _ = _timed(repeat, hidden_cached)
    finally:
        conn.close()


def measure(engine: str, repeat: int, data: dict[str, list[tuple[Any, ...]]]) -> dict[str, Any]:
    from connectors.databases.engine import engine_for

    engine_class = engine_for({"type": CREDENTIAL_TYPES[engine]})
    dialect = engine_class.dialect
    with (
        tempfile.TemporaryDirectory(prefix=f"acp-bench-corpus-{engine}-") as scratch,
        build(engine, data, Path(scratch)) as source,
    ):
        # One phase after the other: DuckDB refuses a second instance of a file with other settings
        # in the same process, and the engine's connection has its own.
        figures = round_trip(source, engine_class, repeat)
        check_costs(source, figures, repeat)
    return {"engine": engine, "dialect": getattr(dialect, "__name__", str(dialect)), "figures": figures}


# -- the report -----------------------------------------------------------------------------------------
def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.0f} µs"


def report(results: list[dict[str, Any]], repeat: int) -> None:
    import sqlglot

    print()
    print(f"Round trip through the connector's parser layer (sqlglot {sqlglot.__version__}): the text it runs against "
          "the raw text")  # fmt: skip
    print(f"{'engine':<9} {'dialect':<9} {'queries':>7} {'round-trip':>10} {'parse fails':>11} {'run fails':>9} "
          f"{'differ':>6} {'plain sqlglot':>13}")  # fmt: skip
    for result in results:
        if "error" in result:
            print(f"{result['engine']:<9} FAILED: {result['error']}")
            continue
        figures = result["figures"]
        problems = [f.problem or "" for f in figures]
        print(
            f"{result['engine']:<9} {result['dialect']:<9} {len(figures):>7} "
            f"{sum(not p for p in problems):>10} {sum(p.startswith('parse') for p in problems):>11} "
            f"{sum(p.startswith('regenerated text fails') for p in problems):>9} "
            f"{sum(p.startswith('regenerated text differs') for p in problems):>6} "
            f"{sum(not f.plain_problem for f in figures):>13}"
        )
    for result in results:
        for entry in result.get("figures", []):
            if entry.problem:
                print(f"  {result['engine']} {entry.name}: {entry.problem}")
    print()
    print(f"Per-call cost of the checks: each query's median of {repeat} runs; the median over the corpus, and")
    print("the checks' total over the corpus's total query time (the bare driver: execute and fetch every row)")
    print("(the hidden check's catalog part: the check minus the same check again on the call's warm cache)")
    print(f"{'engine':<9} {'check_sql':>11} {'hidden check':>13} {'its catalog':>12} {'regenerate':>11} "
          f"{'query':>11} {'checks ÷ query':>15} {'slowest check':>14}  {'refused':>7}")  # fmt: skip
    for result in results:
        figures = result.get("figures")
        if not figures:
            continue
        checks = [f.check_sql_s + f.hidden_s for f in figures]
        slowest = max(range(len(figures)), key=checks.__getitem__)
        ratio = sum(checks) / sum(f.query_s for f in figures)
        print(
            f"{result['engine']:<9} {_us(statistics.median(f.check_sql_s for f in figures)):>11} "
            f"{_us(statistics.median(f.hidden_s for f in figures)):>13} "
            f"{_us(statistics.median(f.hidden_s - f.hidden_cached_s for f in figures)):>12} "
            f"{_us(statistics.median(f.regenerate_s for f in figures)):>11} "
            f"{_us(statistics.median(f.query_s for f in figures)):>11} {ratio:>14.2f}× "
            f"{_us(checks[slowest]):>14}  {sum(bool(f.refused) for f in figures):>7}"
        )
        print(f"{'':<9} slowest check: {figures[slowest].name} (query {_us(figures[slowest].query_s)})")
    for result in results:
        for entry in result.get("figures", []):
            for refusal in entry.refused:
                print(f"  refused: {result['engine']} {entry.name}: {refusal[:200]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default=",".join(tpch.ENGINES), help="comma-separated, default all four")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each step per query (default 5)")
    args = parser.parse_args(argv)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = sorted(set(engines) - set(tpch.ENGINES))
    if unknown:
        parser.error(f"unknown engines {unknown}; choose from {', '.join(tpch.ENGINES)}")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    data = tpch.generate()
    results = []
    for engine in engines:
        try:
            results.append(measure(engine, args.repeat, data))
        except Exception as exc:  # one engine's failure (a server down…) does not stop the others
            print(f"[{engine}] FAILED: {exc}", flush=True)
            results.append({"engine": engine, "error": _first_line(exc)})
    report(results, args.repeat)
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
