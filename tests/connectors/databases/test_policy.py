"""`hidden` data stays out of sight through views, the system catalog and functions, on every engine.

Each engine gets the same small database: ``customers`` (whose ``email`` is hidden), ``payroll``
(hidden whole), and views over them. A view is hidden when its own query reads hidden data
(``v_contacts``, ``v_everything``, ``v_pay``, and ``v_again`` over ``v_contacts``); ``v_names``
reads none and stays usable. The connector runs as the superuser / root, so only the policy
layer stands between the model and the data. Every hidden value is a canary that must never
appear in any answer.
"""

from __future__ import annotations

import json
import re
import secrets
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from loader import load_file

from shared.host import AcpHost, ToolResponse

pg_server = load_file(Path(__file__).with_name("pg_server.py"), "acp_tests_databases_pg_server")
mysql_server = load_file(Path(__file__).with_name("mysql_server.py"), "acp_tests_databases_mysql_server")

pytestmark = pytest.mark.anyio

HIDDEN = ["customers\\.email", "payroll"]
EMAILS = [f"canary-{secrets.token_hex(4)}@example.com" for _ in range(3)]
SALARIES = [913_571, 824_613, 735_779]  # canaries too: nothing else in the database has these values

TABLES = [
    "CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR(40), email VARCHAR(80))",
    "CREATE TABLE payroll (id INTEGER PRIMARY KEY, salary INTEGER)",
    "CREATE VIEW v_contacts AS SELECT id, email FROM customers",
    "CREATE VIEW v_everything AS SELECT * FROM customers",
    "CREATE VIEW v_pay AS SELECT id, salary FROM payroll",
    "CREATE VIEW v_names AS SELECT id, name FROM customers",
    "CREATE VIEW v_again AS SELECT id, email AS contact FROM v_contacts",
]
ROWS = [
    *(f"INSERT INTO customers VALUES ({i}, 'name {i}', '{email}')" for i, email in enumerate(EMAILS, 1)),
    *(f"INSERT INTO payroll VALUES ({i}, {salary})" for i, salary in enumerate(SALARIES, 1)),
]
HIDDEN_VIEWS = ["v_contacts", "v_everything", "v_pay", "v_again"]

# Queries every engine must refuse: views over hidden data, read in every way.
REFUSED_EVERYWHERE = {
    "view-column": "SELECT email FROM v_contacts",
    "view-star": "SELECT * FROM v_everything",
    "view-hidden-table": "SELECT * FROM v_pay",
    "view-over-view": "SELECT contact FROM v_again",
    "view-in-subquery": "SELECT x.id FROM (SELECT * FROM v_contacts) x",
    "view-in-cte": "WITH c AS (SELECT * FROM v_everything) SELECT count(*) AS n FROM c",
    "view-joined": "SELECT n.name FROM v_names n JOIN v_contacts c ON c.id = n.id",
    "view-aliased-star": "SELECT v.* FROM v_pay AS v",
}


@dataclass
class EngineCase:
    """One engine's database, the ``_meta.acp`` to reach it, and the engine-specific attempts."""

    name: str
    resource_id: str
    credentials: dict[str, Any]
    refused: dict[str, str] = field(default_factory=dict)  # label → SQL, on top of REFUSED_EVERYWHERE
    premise: Callable[[], str] = lambda: ""  # what a catalog read shows without the policy (a canary)

    def meta(self, hidden: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"credentials": self.credentials, "autocontext_delivered": True}
        if hidden:
            out["config"] = {"hidden": json.dumps(HIDDEN)}
        return out


# -- the four engines -------------------------------------------------------------------------------


def _sqlite(root: Path) -> Iterator[EngineCase]:
    path = root / "people.sqlite"
    with sqlite3.connect(path) as conn:
        for statement in [*TABLES, *ROWS, "CREATE INDEX customers_email ON customers (email)", "ANALYZE"]:
            conn.execute(statement)
    yield EngineCase(
        "sqlite",
        "people",
        {"type": "sqlite", "path": str(path)},
        refused={
            "catalog-schema": "SELECT sql FROM sqlite_schema",
            "catalog-master": "SELECT * FROM sqlite_master",
            "catalog-stat": "SELECT * FROM sqlite_stat1",
        },
    )


def _duckdb(root: Path) -> Iterator[EngineCase]:
    import duckdb

    path = root / "people.duckdb"
    with duckdb.connect(str(path)) as conn:
        for statement in [*TABLES, *ROWS]:
            conn.execute(statement)
        conn.execute("CREATE MACRO contact(i) AS (SELECT email FROM customers WHERE id = i)")
    yield EngineCase(
        "duckdb",
        "people.main",
        {"type": "duckdb", "path": str(path)},
        refused={
            "user-macro": "SELECT contact(1) AS c",
            "query-table": "SELECT * FROM query_table('customers')",
            "query-text": "SELECT * FROM query('SELECT email FROM customers')",
            "storage-info": "SELECT * FROM pragma_storage_info('customers')",
            "catalog-function": "SELECT * FROM duckdb_views()",
            "information-schema": "SELECT * FROM information_schema.views",
        },
    )


def _postgres(root: Path) -> Iterator[EngineCase]:
    with pg_server.empty_database("policy") as name:
        with pg_server.admin_connect(name) as conn:
            for statement in [*TABLES, *ROWS]:
                conn.execute(statement)
            conn.execute("CREATE MATERIALIZED VIEW m_contacts AS SELECT id, email FROM customers")
            conn.execute(
                "CREATE FUNCTION contact(i integer) RETURNS text LANGUAGE sql AS "
                "'SELECT email FROM customers WHERE id = i'"
            )
            conn.execute("ANALYZE")

        def stats() -> str:  # premise: the planner's statistics hold the hidden values
            with pg_server.admin_connect(name) as conn:
                row = conn.execute(
                    "SELECT concat(most_common_vals::text, histogram_bounds::text) FROM pg_stats "
                    "WHERE tablename = 'customers' AND attname = 'email'"
                ).fetchone()
            return str(row[0] if row else "")

        yield EngineCase(
            "postgres",
            f"{name}.public",
            {"type": "postgres", "host": pg_server.HOST, "port": pg_server.PORT, "user": pg_server.SUPERUSER,
             "database": name},
            refused={
                "materialized-view": "SELECT * FROM m_contacts",
                "user-function": "SELECT contact(1) AS c",
                "user-function-qualified": "SELECT public.contact(2) AS c",
                "statistics": "SELECT attname, most_common_vals::text FROM pg_stats WHERE tablename = 'customers'",
                "statistics-qualified": "SELECT * FROM pg_catalog.pg_stats",
                "statistics-raw": "SELECT * FROM pg_statistic",
                "information-schema": "SELECT * FROM information_schema.views",
                "query-to-xml": "SELECT query_to_xml('SELECT email FROM customers', true, false, '') AS x",
                "table-to-xml": "SELECT table_to_xml('customers', true, false, '') AS x",
            },
            premise=stats,
        )  # fmt: skip


def _mysql(root: Path) -> Iterator[EngineCase]:
    mysql_server.require_server()
    name = f"{mysql_server.PREFIX}policy_{secrets.token_hex(4)}"
    admin = mysql_server.admin_connect()
    try:
        with admin.cursor() as cur:
            cur.execute(f"CREATE DATABASE {mysql_server.quote(name)}")
            cur.execute(f"USE {mysql_server.quote(name)}")
            for statement in [*TABLES, *ROWS]:
                cur.execute(statement)
            cur.execute(
                "CREATE FUNCTION contact(i INT) RETURNS VARCHAR(80) READS SQL DATA "
                "RETURN (SELECT email FROM customers WHERE id = i)"
            )
        yield EngineCase(
            "mysql",
            name,
            {"type": "mysql", "host": mysql_server.HOST, "port": mysql_server.PORT, "user": mysql_server.ROOT,
             "password": mysql_server.ROOT_PASSWORD, "database": name},
            refused={
                "user-function": "SELECT contact(1) AS c",
                "information-schema": "SELECT * FROM information_schema.VIEWS",
                "mysql-schema": "SELECT * FROM mysql.column_stats",
            },
        )  # fmt: skip
    finally:
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {mysql_server.quote(name)}")
        admin.close()


BUILDERS = {"sqlite": _sqlite, "duckdb": _duckdb, "postgres": _postgres, "mysql": _mysql}


@pytest.fixture(
    scope="module",
    # The database servers' engines are out of the quick tier.
    params=[pytest.param(name, marks=pytest.mark.slow) if name in {"postgres", "mysql"} else name for name in BUILDERS],
)
def case(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineCase]:
    yield from BUILDERS[request.param](tmp_path_factory.mktemp(f"policy-{request.param}"))


@asynccontextmanager
async def started(tmp_path: Path) -> AsyncIterator[AcpHost]:
    env = {"ACP_CACHE_DIR": str(tmp_path / "cache"), "ACP_TMP_DIR": str(tmp_path / "tmp")}
    async with AcpHost.for_module("databases", env=env) as host:
        yield host


def leaks(response: ToolResponse) -> list[str]:
    text = json.dumps(response.raw)
    return [canary for canary in [*EMAILS, *map(str, SALARIES)] if canary in text]


def table_of(case: EngineCase, name: str) -> str:
    return f"{case.resource_id}.{name}"


# -- tests -------------------------------------------------------------------------------------------


async def test_views_over_hidden_data_are_readable_without_the_policy(case: EngineCase, tmp_path: Path) -> None:
    """Premise: the views are real and show the canaries when nothing is hidden."""
    async with started(tmp_path) as host:
        for view in ("v_contacts", "v_pay", "v_again"):
            response = await host.call(
                "execute_sql", {"resource_id": case.resource_id, "sql": f"SELECT * FROM {view}"}, case.meta(False)
            )
            assert not response.is_error, (view, response.error)
            assert leaks(response), view
    if case.name == "postgres":
        assert all(email in case.premise() for email in EMAILS)


async def test_every_way_through_a_view_catalog_or_function_is_refused(case: EngineCase, tmp_path: Path) -> None:
    attempts = {**REFUSED_EVERYWHERE, **case.refused}
    assert len(attempts) >= len(REFUSED_EVERYWHERE) + 3
    async with started(tmp_path) as host:
        for label, sql in attempts.items():
            response = await host.call("execute_sql", {"resource_id": case.resource_id, "sql": sql}, case.meta())
            # Some are refused earlier, by the read-only layer (they read outside the database).
            refusals = ("ACP_INVALID_ARGUMENTS", "ACP_READ_ONLY_VIOLATION")
            assert response.error_name in refusals, (label, response.error or response.rows()[:2])
            if response.error_name == "ACP_INVALID_ARGUMENTS":
                assert "hid" in response.error["message"], (label, response.error)
            assert leaks(response) == [], label
        # The server keeps serving, and data that is not hidden still comes back.
        response = await host.call(
            "execute_sql", {"resource_id": case.resource_id, "sql": "SELECT id, name FROM v_names ORDER BY id"},
            case.meta(),
        )  # fmt: skip
        assert not response.is_error, response.error
        assert [row["name"] for row in response.rows()] == ["name 1", "name 2", "name 3"]


async def test_views_over_hidden_data_are_in_no_block_or_description(case: EngineCase, tmp_path: Path) -> None:
    async with started(tmp_path) as host:
        context = await host.call("autocontext", {"resource_id": case.resource_id}, case.meta())
        assert not context.is_error, context.error
        text = json.dumps(context.raw)
        assert leaks(context) == []
        assert "v_names" in text  # premise: the blocks list the views that show nothing hidden
        for view in [*HIDDEN_VIEWS, "payroll", "m_contacts"]:
            assert f'"{view}' not in text and f'.{view}"' not in text, view
        described = await host.call("describe_table", {"resource_id": table_of(case, "v_names")}, case.meta())
        assert not described.is_error, described.error
        assert [c["name"] for c in described.model_response["columns"]] == ["id", "name"]
        for view in HIDDEN_VIEWS:
            for tool in ("describe_table", "autocontext"):
                response = await host.call(tool, {"resource_id": table_of(case, view)}, case.meta())
                assert response.error_name == "ACP_RESOURCE_NOT_FOUND", (tool, view, response.error)
                assert leaks(response) == []


# SQL each engine's checks refuse before reaching the database: clauses, operators, quotes.
BROKEN_SQL = [
    "SELECT name FROM customers WHERE",
    "SELECT name FROM customers WHERE id = = 1",
    "SELECT count(* FROM customers",
    "SELECT name FROM customers\nWHERE id IN (1, 2\nORDER BY name",
    "SELECT name FROM customers WHERE name = 'unterminated",
]


@pytest.mark.parametrize("kind", ["sqlite", "duckdb", "postgres", "mysql"])
def test_syntax_errors_reach_the_model_as_clean_words(kind: str) -> None:
    """Each engine's parser layer says what is wrong and where, in words: no terminal escape codes, Python
    class names or sqlglot's name (no database is reached for these). The `hidden` check only ever sees
    the tree this layer approved."""
    from connectors.databases.engine import engine_for
    from shared import AcpError

    engine = engine_for({"type": kind})
    for sql in BROKEN_SQL:
        with pytest.raises(AcpError) as caught:
            engine.check_sql(sql)
        message = caught.value.message
        assert "\x1b" not in message and "<class" not in message and "sqlglot" not in message.lower(), message
        assert re.search(r"syntax error at line \d+, column \d+ \(", message), message
