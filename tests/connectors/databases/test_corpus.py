"""The analytics query corpus answers through the connector exactly as through the bare driver, on every engine.

Each engine gets the TPC-H-shaped dataset of ``corpus/tpch.py`` (a SQLite file, a DuckDB file, a fresh
PostgreSQL database and a fresh MariaDB database) and runs its own corpus (``corpus/<engine>.sql``, at
least 50 queries in that engine's dialect). For every query, the raw text runs first through the driver
as the superuser / root (or on the file), then through ``execute_sql`` as the connector's source would
run it: the least-privilege login where the server has logins, and a ``hidden`` rule (``staff.ssn``)
so that every `hidden` check runs on every query. Column names and rows must be the same, and every
refusal is a false refusal.
"""

from __future__ import annotations

import json
import re
import secrets
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from loader import load_file

from connectors.databases import CONNECTOR as DATABASES

tpch = load_file(Path(__file__).with_name("corpus") / "tpch.py", "acp_tests_databases_corpus_tpch")
pg_server = load_file(Path(__file__).with_name("pg_server.py"), "acp_tests_databases_pg_server")
mysql_server = load_file(Path(__file__).with_name("mysql_server.py"), "acp_tests_databases_mysql_server")

pytestmark = pytest.mark.anyio

# Corpus queries the connector refuses today: engine → query name → a part of the refusal's message.
SCHEMA = "tpch"  # PostgreSQL: the corpus lives in its own schema


@dataclass
class CorpusSource:
    """One engine's corpus database: how the connector reaches it, and the driver's own answers."""

    engine: str
    resource_id: str
    credentials: dict[str, Any]
    expected: dict[str, tuple[list[str], list[tuple[Any, ...]]] | str]  # name → result, or the driver's error

    def meta(self) -> dict[str, Any]:
        return {
            "credentials": self.credentials,
            "autocontext_delivered": True,
            "config": {"hidden": json.dumps(tpch.HIDDEN)},
        }


def _run_all(engine: str, cursor: Callable[[], Any]) -> dict[str, tuple[list[str], list[tuple[Any, ...]]] | str]:
    """Every corpus query through a driver cursor; a query the driver itself rejects keeps its error text."""
    out: dict[str, tuple[list[str], list[tuple[Any, ...]]] | str] = {}
    for name, sql in tpch.queries(engine).items():
        current = cursor()
        try:
            current.execute(sql)
            out[name] = tpch.rows_of(current)
        except Exception as exc:  # the test reports it as a broken corpus query
            out[name] = f"{type(exc).__name__}: {exc}"
        finally:
            current.close()
    return out


# -- the four databases -----------------------------------------------------------------------------
def _sqlite(root: Path, data: dict[str, list[tuple[Any, ...]]]) -> Iterator[CorpusSource]:
    path = root / "tpch.sqlite"
    tpch.load_sqlite(path, data)
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        expected = _run_all("sqlite", conn.cursor)
    finally:
        conn.close()
    yield CorpusSource("sqlite", path.stem, {"type": "sqlite", "path": str(path)}, expected)


def _duckdb(root: Path, data: dict[str, list[tuple[Any, ...]]]) -> Iterator[CorpusSource]:
    import duckdb

    path = root / "tpch.duckdb"
    tpch.load_duckdb(path, data)
    # Closed before the connector opens the file in this process: DuckDB refuses a second instance of a
    # file with other settings.
    conn = duckdb.connect(str(path), read_only=True)
    try:
        expected = _run_all("duckdb", conn.cursor)
    finally:
        conn.close()
    yield CorpusSource("duckdb", f"{path.stem}.main", {"type": "duckdb", "path": str(path)}, expected)


def _postgres(root: Path, data: dict[str, list[tuple[Any, ...]]]) -> Iterator[CorpusSource]:
    from psycopg import sql

    pg_server.require_server()
    role, password = f"{pg_server.PREFIX}corpus_{secrets.token_hex(4)}", f"pw-{secrets.token_hex(12)}"
    with pg_server.admin_connect() as admin:
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(role), sql.Literal(password)))
    try:
        with pg_server.empty_database("corpus") as name:
            with pg_server.admin_connect(name) as conn:
                tpch.load_postgres(conn, data, SCHEMA)
                # The least-privilege login: it may read the corpus's tables and nothing else.
                for grant in (
                    "GRANT USAGE ON SCHEMA {schema} TO {role}",
                    "GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}",
                ):
                    conn.execute(sql.SQL(grant).format(schema=sql.Identifier(SCHEMA), role=sql.Identifier(role)))
                conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(SCHEMA)))
                expected = _run_all("postgres", conn.cursor)
            credentials = {
                "type": "postgres", "host": pg_server.HOST, "port": pg_server.PORT, "user": role,
                "password": password, "database": name,
            }  # fmt: skip
            yield CorpusSource("postgres", f"{name}.{SCHEMA}", credentials, expected)
    finally:
        with pg_server.admin_connect() as admin:  # the database is gone: nothing depends on the role
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,))
            admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def _mariadb(root: Path, data: dict[str, list[tuple[Any, ...]]]) -> Iterator[CorpusSource]:
    mysql_server.require_server()
    token = secrets.token_hex(4)
    name, user = f"{mysql_server.PREFIX}corpus_{token}", f"{mysql_server.PREFIX}corpus_r_{token}"
    password = f"pw-{secrets.token_hex(12)}"
    account = f"'{user}'@'%'"
    admin = mysql_server.admin_connect()
    try:
        with admin.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {mysql_server.quote(name)} CHARACTER SET utf8mb4")
            cursor.execute(f"USE {mysql_server.quote(name)}")
            tpch.load_mariadb(admin, data)
            cursor.execute(f"CREATE USER {account} IDENTIFIED BY '{password}'")  # hex: nothing to escape
            cursor.execute(f"GRANT SELECT ON {mysql_server.quote(name)}.* TO {account}")
        expected = _run_all("mariadb", admin.cursor)
        credentials = {
            "type": "mysql", "host": mysql_server.HOST, "port": mysql_server.PORT, "user": user,
            "password": password, "database": name,
        }  # fmt: skip
        yield CorpusSource("mariadb", name, credentials, expected)
    finally:
        with admin.cursor() as cursor:
            cursor.execute("SELECT ID FROM information_schema.PROCESSLIST WHERE USER = %s", (user,))
            for (thread,) in cursor.fetchall():
                cursor.execute(f"KILL {int(thread)}")
            cursor.execute(f"DROP DATABASE IF EXISTS {mysql_server.quote(name)}")
            cursor.execute(f"DROP USER IF EXISTS {account}")
        admin.close()


BUILDERS = {"sqlite": _sqlite, "duckdb": _duckdb, "postgres": _postgres, "mariadb": _mariadb}


@pytest.fixture(scope="module")
def data() -> dict[str, list[tuple[Any, ...]]]:
    return tpch.generate()


@pytest.fixture(scope="module", params=list(BUILDERS))
def source(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, data: dict[str, list[tuple[Any, ...]]]
) -> Iterator[CorpusSource]:
    yield from BUILDERS[request.param](tmp_path_factory.mktemp(f"corpus-{request.param}"), data)


# -- tests -------------------------------------------------------------------------------------------
def _connector_result(response: Any) -> tuple[list[str], list[list[Any]], list[str]]:
    headers = response.system_data["headers"]
    names = [h["name"] for h in headers]
    rows = [[row.get(n) for n in names] for row in response.rows(exact=True)]
    return names, rows, [h.get("type", "") for h in headers]


async def test_every_corpus_query_answers_as_the_driver_does(source: CorpusSource, in_process, runtime_dirs) -> None:
    queries = tpch.queries(source.engine)
    problems = []
    answered = 0
    async with in_process(DATABASES, env=runtime_dirs) as host:
        for name, sql in queries.items():
            expected = source.expected[name]
            if isinstance(expected, str):
                problems.append(f"{name}: the driver itself rejects the corpus query: {expected[:300]}")
                continue
            response = await host.call("execute_sql", {"resource_id": source.resource_id, "sql": sql}, source.meta())
            if response.is_error:
                problems.append(f"{name}: refused ({response.error_name}): {response.error['message']}")
                continue
            names, rows, kinds = _connector_result(response)
            assert len(set(names)) == len(names), (name, names)  # the corpus names every column once
            want = (
                expected[0],
                [[tpch.canonical(v, k) for v, k in zip(row, kinds, strict=True)] for row in expected[1]],
            )
            got = (names, [[tpch.canonical(v) for v in row] for row in rows])
            difference = tpch.differences(want, got, tpch.ordered(sql))
            if difference:
                problems.append(f"{name}: {difference}")
            else:
                answered += 1
        # Premise: the `hidden` rule is live on this source, so every answer above went through its check.
        premise = {"resource_id": source.resource_id, "sql": "SELECT id, ssn FROM staff"}
        refused = await host.call("execute_sql", premise, source.meta())
        assert refused.error_name == "ACP_INVALID_ARGUMENTS" and "hid" in refused.error["message"], refused.error
    assert not problems, f"{source.engine}: {len(problems)} of {len(queries)} corpus queries:\n" + "\n".join(problems)
    assert answered == len(queries)


# -- the corpus itself -----------------------------------------------------------------------------------
# What each engine's corpus must exercise (the list), as patterns over its text.
FEATURES: dict[str, str] = {
    "window ranking": r"\brow_number\(\).*\brank\(\)",
    "LAG/LEAD": r"\blag\(.*\blead\(",
    "window frame": r"\bROWS BETWEEN\b",
    "NTILE": r"\bntile\(",
    "FIRST_VALUE": r"\bfirst_value\(",
    "recursive CTE": r"\bWITH RECURSIVE\b",
    "EXISTS / NOT EXISTS": r"\bNOT EXISTS\b",
    "CASE": r"\bCASE WHEN\b",
    "COALESCE/NULLIF": r"\bcoalesce\(.*\bNULLIF\(",
    "UNION": r"\bUNION\b",
    "INTERSECT/EXCEPT": r"\bINTERSECT\b.*\bEXCEPT\b|\bEXCEPT\b.*\bINTERSECT\b",
    "OFFSET": r"\bOFFSET\b|\bLIMIT \d+, \d+",
    "CAST": r"\bCAST\(",
}
ENGINE_FEATURES: dict[str, dict[str, str]] = {
    "sqlite": {"JSON": r"\bjson_extract\(", "JSON array": r"\bjson_each\(", "dates": r"\bstrftime\("},
    "duckdb": {
        "JSON": r"->>", "regex": r"\bregexp_matches\(.*\bregexp_extract\(", "ROLLUP": r"\bROLLUP \(",
        "CUBE": r"\bCUBE \(", "QUALIFY": r"\bQUALIFY\b", "median": r"\bmedian\(", "FILTER": r"FILTER \(WHERE",
        "dates": r"\bdate_trunc\(",
    },
    "postgres": {
        "JSON": r"->>", "JSON array": r"\bjsonb_array_elements", "regex": r" ~ '.*\bregexp_replace\(",
        "ROLLUP": r"\bROLLUP \(", "CUBE": r"\bCUBE \(", "GROUPING SETS": r"\bGROUPING SETS\b",
        "LATERAL": r"\bLATERAL\b", "generate_series": r"\bgenerate_series\(", "percentile": r"\bpercentile_cont\(",
        "FILTER": r"FILTER \(WHERE", "string_agg": r"\bstring_agg\(", "dates": r"\bdate_trunc\(",
    },
    "mariadb": {
        "JSON": r"\bJSON_EXTRACT\(.*\bJSON_VALUE\(", "regex": r"\bREGEXP\b.*\bRLIKE\b",
        "regex functions": r"\bREGEXP_REPLACE\(.*\bREGEXP_SUBSTR\(", "ROLLUP": r"\bWITH ROLLUP\b",
        "median": r"\bMEDIAN\(.*\) OVER \(", "percentile": r"\bPERCENTILE_CONT\(0\.5\) WITHIN GROUP",
        "GROUP_CONCAT": r"\bGROUP_CONCAT\(DISTINCT .* ORDER BY .* SEPARATOR '; ' LIMIT 3\)", "dates": r"\bDATE_FORMAT\(",
    },
}  # fmt: skip


@pytest.mark.parametrize("engine", tpch.ENGINES)
def test_each_corpus_holds_tpch_and_the_analytics_constructs(engine: str) -> None:
    queries = tpch.queries(engine)
    assert len(queries) >= 50, len(queries)
    tpch_names = [name for name in queries if int(name[1:3]) <= 22]
    assert [int(name[1:3]) for name in tpch_names] == list(range(1, 23))
    assert tpch_names == [n for n in tpch.queries("postgres") if int(n[1:3]) <= 22]  # the same 22, everywhere
    text = "\n".join(queries.values())
    missing = [
        feature
        for feature, pattern in {**FEATURES, **ENGINE_FEATURES[engine]}.items()
        if not re.search(pattern, text, re.IGNORECASE | re.DOTALL)
    ]
    assert missing == []
    # No query reads the hidden column: a refusal is always a false one.
    assert not re.search(r"\bssn\b", text, re.IGNORECASE)
