"""What the conformance suite needs to know about each connector: how to give it a working
source. A new connector is covered by adding one entry to :data:`PROFILES`; a test fails
if a connector in ``connectors/`` (found by its ``acp.json``) has none. A connector with
several kinds of source (database engines) lists one variant per kind.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import secrets
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest


@dataclass(frozen=True)
class Source:
    """A working source for one connector, built in a test's temporary folder."""

    credentials: dict[str, Any]
    resource_id: str
    extraction: tuple[str, dict[str, Any]]  # a call returning more than 25 rows
    extraction_rows: int
    env: dict[str, str] = field(default_factory=dict)
    canary_credentials: tuple[dict[str, Any], ...] = ()  # invalid credentials carrying CANARY
    limits: dict[str, Any] = field(default_factory=dict)  # system-channel limits the extraction needs (cost)
    # Per extraction tool that takes SQL: arguments whose statement would change the extracted data.
    writes: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Published resource_id examples this source does not hold: they must still be understood
    # (ACP_RESOURCE_NOT_FOUND), while every other example resolves.
    absent_examples: frozenset[str] = frozenset()


# (folder, canary) -> a context manager that yields the source and cleans up after it
SourceBuilder = Callable[[Path, str], contextlib.AbstractContextManager[Source]]


@dataclass(frozen=True)
class Profile:
    connector_id: str
    variants: dict[str, SourceBuilder]


# -- databases ------------------------------------------------------------------------------------
ORDERS_SQL = "SELECT * FROM orders WHERE order_date <= '2026-07-02' ORDER BY order_id"
DELETE_ORDERS = {"execute_sql": {"sql": "DELETE FROM orders WHERE order_date <= '2026-07-02'"}}
EXAMPLES = frozenset({"shop", "shop.orders"})  # the databases connector's resource_id.examples


def _demo_rows(folder: Path) -> tuple[Path, list[str], list[tuple[Any, ...]], int]:
    from connectors.databases.demo import build_demo_database

    database = build_demo_database(folder / "shop.sqlite")
    with sqlite3.connect(database) as conn:
        cursor = conn.execute("SELECT order_id, order_date, channel_id, country, items, revenue, status FROM orders")
        names = [d[0] for d in cursor.description]
        rows = cursor.fetchall()
        expected = conn.execute("SELECT count(*) FROM orders WHERE order_date <= '2026-07-02'").fetchone()[0]
    return database, names, rows, int(expected)


def _server_required(name: str, port: int) -> None:
    import socket

    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        if os.environ.get("ACP_REQUIRE_SERVICES") == "1":
            pytest.fail(f"{name} does not answer on 127.0.0.1:{port} and ACP_REQUIRE_SERVICES=1")
        pytest.skip(f"{name} is not running on 127.0.0.1:{port}")


@contextlib.contextmanager
def _sqlite(folder: Path, canary: str) -> Iterator[Source]:
    database, _, _, expected = _demo_rows(folder)
    yield Source(
        credentials={"type": "sqlite", "path": str(database)},
        resource_id="shop",
        extraction=("execute_sql", {"sql": ORDERS_SQL}),
        extraction_rows=expected,
        writes=DELETE_ORDERS,
        canary_credentials=(
            {"type": "sqlite", "path": str(database), "password": canary},
            {"type": "postgres_dsn", "dsn": f"postgresql://x:{canary}@"},
            {"type": "sqlite", "path": canary},
        ),
    )


@contextlib.contextmanager
def _duckdb(folder: Path, canary: str) -> Iterator[Source]:
    import duckdb

    _, names, rows, expected = _demo_rows(folder)
    path = folder / "warehouse.duckdb"
    conn = duckdb.connect(str(path))
    conn.execute(
        "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, order_date DATE, channel_id INTEGER, country VARCHAR, "
        "items INTEGER, revenue DECIMAL(12, 2), status VARCHAR)"
    )
    # DuckDB's executemany takes seconds for a few thousand rows; its appender does not.
    appender = conn.appender("orders", columns=names)
    appender.append_rows(rows)
    appender.flush()
    conn.close()
    yield Source(
        credentials={"type": "duckdb", "path": str(path)},
        resource_id="warehouse.main",
        extraction=("execute_sql", {"sql": ORDERS_SQL}),
        extraction_rows=expected,
        writes=DELETE_ORDERS,
        absent_examples=EXAMPLES,  # the database is the file's stem, warehouse
        canary_credentials=({"type": "duckdb", "path": str(path), "token": canary}, {"type": "duckdb", "path": canary}),
    )


@contextlib.contextmanager
def _postgres(folder: Path, canary: str) -> Iterator[Source]:
    _server_required("PostgreSQL", 5432)
    import psycopg

    _, names, rows, expected = _demo_rows(folder)
    name = f"acp_conf_{secrets.token_hex(4)}"
    role, password = f"acp_reader_{secrets.token_hex(4)}", secrets.token_hex(12)
    admin = psycopg.connect("host=127.0.0.1 user=postgres dbname=postgres", autocommit=True)
    admin.execute(f"CREATE DATABASE {name}")
    admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
    try:
        with psycopg.connect(f"host=127.0.0.1 user=postgres dbname={name}") as conn:
            conn.execute(
                "CREATE TABLE orders (order_id integer PRIMARY KEY, order_date date, channel_id integer, "
                "country text, items integer, revenue numeric(12,2), status text)"
            )
            with conn.cursor().copy(f"COPY orders ({', '.join(names)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            conn.execute(
                f"GRANT USAGE ON SCHEMA public TO {role}; GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}"
            )
        yield Source(
            credentials={
                "type": "postgres",
                "host": "127.0.0.1",
                "port": 5432,
                "user": role,
                "password": password,
                "database": name,
            },
            resource_id=f"{name}.public",
            extraction=("execute_sql", {"sql": ORDERS_SQL}),
            extraction_rows=expected,
            writes=DELETE_ORDERS,
            absent_examples=EXAMPLES,  # a throwaway database with a random name
            canary_credentials=(
                {"type": "postgres", "host": "127.0.0.1", "user": role, "password": canary, "database": name},
                {"type": "postgres_dsn", "dsn": f"postgresql://{role}:{canary}@127.0.0.1:5432/{name}"},
            ),
        )
    finally:
        admin.execute(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'")
        admin.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.execute(f"DROP ROLE IF EXISTS {role}")
        admin.close()


@contextlib.contextmanager
def _mysql(folder: Path, canary: str) -> Iterator[Source]:
    _server_required("MariaDB", 3306)
    import pymysql

    _, names, rows, expected = _demo_rows(folder)
    name = f"acp_conf_{secrets.token_hex(4)}"
    user, password = f"acp_reader_{secrets.token_hex(4)}", secrets.token_hex(12)
    admin = pymysql.connect(host="127.0.0.1", user="root", password="", autocommit=True)
    cursor = admin.cursor()
    cursor.execute(f"CREATE DATABASE {name}")
    try:
        cursor.execute(
            f"CREATE TABLE {name}.orders (order_id INT PRIMARY KEY, order_date DATE, channel_id INT, "
            "country VARCHAR(8), items INT, revenue DECIMAL(12,2), status VARCHAR(16))"
        )
        cursor.executemany(f"INSERT INTO {name}.orders VALUES ({', '.join('%s' for _ in names)})", rows)
        cursor.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'")
        cursor.execute(f"GRANT SELECT ON {name}.* TO '{user}'@'%'")
        yield Source(
            credentials={
                "type": "mysql",
                "host": "127.0.0.1",
                "port": 3306,
                "user": user,
                "password": password,
                "database": name,
            },
            resource_id=name,
            extraction=("execute_sql", {"sql": ORDERS_SQL}),
            extraction_rows=expected,
            writes=DELETE_ORDERS,
            absent_examples=EXAMPLES,  # a throwaway database with a random name
            canary_credentials=(
                {"type": "mysql", "host": "127.0.0.1", "user": user, "password": canary, "database": name},
                {"type": "mysql_dsn", "dsn": f"mysql://{user}:{canary}@127.0.0.1:3306/{name}"},
            ),
        )
    finally:
        cursor.execute(f"DROP DATABASE IF EXISTS {name}")
        cursor.execute(f"DROP USER IF EXISTS '{user}'@'%'")
        admin.close()


# -- bigquery -------------------------------------------------------------------------------------
BQ_PROJECT, BQ_DATASET = "acp-conformance", "analytics_42"
BQ_QUERY = (
    "SELECT event_date, event_name, user_pseudo_id FROM `events_*` "
    "WHERE _TABLE_SUFFIX BETWEEN '20260901' AND '20260902' AND event_name = 'page_view'"
)


@contextlib.contextmanager
def _bigquery(folder: Path, canary: str) -> Iterator[Source]:
    import json

    from fakes.bigquery import FakeBigQuery

    with FakeBigQuery() as fake:
        fake.add_project(BQ_PROJECT)
        fake.add_ga4_export(BQ_PROJECT, BQ_DATASET, start=dt.date(2026, 9, 1), days=3, events_per_day=100)
        # The connector's resource_id.examples, so that each one resolves for real.
        fake.add_project("my-project")
        fake.add_ga4_export("my-project", "analytics_123", start=dt.date(2026, 9, 1), days=1, events_per_day=5)
        rows = [r for day in ("20260901", "20260902") for r in fake.rows(BQ_PROJECT, BQ_DATASET, f"events_{day}")]
        expected = sum(1 for r in rows if r["event_name"] == "page_view")
        info = fake.oauth.service_account_info(BQ_PROJECT)
        forged = {**info, "private_key": f"-----BEGIN PRIVATE KEY-----\n{canary}\n-----END PRIVATE KEY-----\n"}
        yield Source(
            credentials={"type": "service_account", "service_account": json.dumps(info)},
            resource_id=f"{BQ_PROJECT}.{BQ_DATASET}",
            extraction=("execute_query", {"query": BQ_QUERY}),
            extraction_rows=expected,
            # The fake classifies the statement (statementType DELETE) as BigQuery's dry run does.
            writes={"execute_query": {"query": f"DELETE FROM `{BQ_PROJECT}.{BQ_DATASET}.events_20260901` WHERE TRUE"}},
            env={
                "ACP_BIGQUERY_ENDPOINT": fake.url,
                "ACP_GOOGLE_TOKEN_URI": fake.oauth.token_uri,
                "ACP_BIGQUERY_RETRY_S": "2",
            },
            canary_credentials=(
                {"type": "service_account", "service_account": json.dumps(forged)},
                {"type": "oauth", "access_token": canary},
                {"type": "oauth", "refresh_token": canary, "client_id": "cid", "client_secret": canary},
            ),
            limits={"cost_limit_usd": 1},
        )


PROFILES: dict[str, Profile] = {
    "databases": Profile("databases", {"sqlite": _sqlite, "duckdb": _duckdb, "postgres": _postgres, "mysql": _mysql}),
    "bigquery": Profile("bigquery", {"fake": _bigquery}),
}


def cases() -> list[tuple[str, str]]:
    """Every (connector, variant) the suite runs."""
    return [(connector, variant) for connector, profile in PROFILES.items() for variant in profile.variants]
