"""What the `hidden` check costs per execute_sql call, on each engine, in process.

Each engine gets the same small database (``customers`` with a hidden ``email``, ``orders``, a view
``v_names`` over ``customers``): a SQLite and a DuckDB file in a temporary folder, and throwaway
databases on the PostgreSQL (127.0.0.1:5432, user postgres) and MariaDB (127.0.0.1:3306, root)
servers, dropped after. For three typical queries (a join with an aggregate, a view, a CTE), on one
warm connection, it times:

* the parser layer (``engine.check_sql``), the baseline every call pays;
* the whole `hidden` check of one call (``policy.on(conn, engine).check_query``): the catalog reads
  (relations and columns, user functions, view definitions) and the name resolution;
* the name resolution alone, with the catalog already read.

    .venv/bin/python bench/hidden_check.py [--engines sqlite,duckdb,postgres,mysql] [--runs 300]

No target: the medians (µs) are reported, with the check's ratio to the parser layer.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import secrets
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SCHEMA = [
    "CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR(40), email VARCHAR(80))",
    "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, total INTEGER)",
    "CREATE VIEW v_names AS SELECT id, name FROM customers",
    "INSERT INTO customers VALUES (1, 'a', 'a@example.com'), (2, 'b', 'b@example.com')",
    "INSERT INTO orders VALUES (1, 1, 10), (2, 2, 20), (3, 1, 30)",
]
QUERIES = {
    "join+aggregate": "SELECT c.name, sum(o.total) AS total FROM customers c JOIN orders o ON o.customer_id = c.id "
    "WHERE c.id > 0 GROUP BY c.name ORDER BY total DESC LIMIT 10",
    "view": "SELECT id, name FROM v_names ORDER BY id",
    "cte": "WITH big AS (SELECT customer_id, sum(total) AS t FROM orders GROUP BY customer_id) "
    "SELECT c.name, big.t FROM customers c JOIN big ON big.customer_id = c.id",
}
HIDDEN = {"hidden": json.dumps(["customers\\.email"])}


@contextlib.contextmanager
def sqlite_source(folder: Path) -> Iterator[tuple[dict[str, Any], str | None]]:
    path = folder / "bench.sqlite"
    with sqlite3.connect(path) as conn:
        for statement in SCHEMA:
            conn.execute(statement)
    yield {"type": "sqlite", "path": str(path)}, None


@contextlib.contextmanager
def duckdb_source(folder: Path) -> Iterator[tuple[dict[str, Any], str | None]]:
    import duckdb

    path = folder / "bench.duckdb"
    with duckdb.connect(str(path)) as conn:
        for statement in SCHEMA:
            conn.execute(statement)
    yield {"type": "duckdb", "path": str(path)}, "main"


@contextlib.contextmanager
def postgres_source(folder: Path) -> Iterator[tuple[dict[str, Any], str | None]]:
    import psycopg

    name = f"acp_bench_hidden_{secrets.token_hex(4)}"
    with psycopg.connect("host=127.0.0.1 user=postgres dbname=postgres", autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        with psycopg.connect(f"host=127.0.0.1 user=postgres dbname={name}", autocommit=True) as conn:
            for statement in SCHEMA:
                conn.execute(statement)
        yield {"type": "postgres", "host": "127.0.0.1", "port": 5432, "user": "postgres", "database": name}, "public"
    finally:
        with psycopg.connect("host=127.0.0.1 user=postgres dbname=postgres", autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@contextlib.contextmanager
def mysql_source(folder: Path) -> Iterator[tuple[dict[str, Any], str | None]]:
    import pymysql

    name = f"acp_bench_hidden_{secrets.token_hex(4)}"
    admin = pymysql.connect(host="127.0.0.1", port=3306, user="root", password="", autocommit=True)
    try:
        with admin.cursor() as cur:
            cur.execute(f"CREATE DATABASE {name}")
            cur.execute(f"USE {name}")
            for statement in SCHEMA:
                cur.execute(statement)
        yield (
            {"type": "mysql", "host": "127.0.0.1", "port": 3306, "user": "root", "password": "", "database": name},
            None,
        )
    finally:
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.close()


SOURCES: dict[str, Callable[[Path], contextlib.AbstractContextManager[tuple[dict[str, Any], str | None]]]] = {
    "sqlite": sqlite_source,
    "duckdb": duckdb_source,
    "postgres": postgres_source,
    "mysql": mysql_source,
}


def median_us(work: Callable[[], object], runs: int) -> float:
    work()  # warm: imports, prepared statements, the pool's first reads
    times = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        work()
        times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1000


def measure(engine_name: str, runs: int) -> list[tuple[str, float, float, float]]:
    from connectors.databases.engine import engine_for
    from connectors.databases.policy import Policy

    policy = Policy.from_config(HIDDEN)
    out = []
    with (
        tempfile.TemporaryDirectory(prefix="acp-bench-hidden-") as folder,
        SOURCES[engine_name](Path(folder)) as (
            credentials,
            schema,
        ),
    ):
        engine = engine_for(credentials)
        conn = engine.connect(credentials, None)
        try:
            for label, sql in QUERIES.items():
                checked = engine.check_sql(sql)
                parser = median_us(lambda sql=sql: engine.check_sql(sql), runs)
                whole = median_us(lambda c=checked: policy.on(conn, engine).check_query(c, schema), runs)
                warm = policy.on(conn, engine)
                resolution = median_us(lambda c=checked, h=warm: h.check_query(c, schema), runs)
                out.append((label, parser, whole, resolution))
        finally:
            conn.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="sqlite,duckdb,postgres,mysql")
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args(argv)
    print(f"{'engine':9} {'query':15} {'parser µs':>10} {'hidden µs':>10} {'ratio':>6} {'resolution µs':>14}")
    for engine_name in args.engines.split(","):
        for label, parser_us, whole_us, resolution_us in measure(engine_name, args.runs):
            print(
                f"{engine_name:9} {label:15} {parser_us:10.0f} {whole_us:10.0f} {whole_us / parser_us:5.1f}× "
                f"{resolution_us:14.0f}"
            )
    print("\nhidden: the whole check of one call (catalog reads and resolution); resolution: with the catalog read.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
