"""What the conformance suite needs to know about each connector: how to give it a working
source. A new connector is covered by adding one entry to :data:`PROFILES`; a test fails
if a connector in ``connectors/`` (found by its ``acp.json``) has none. A connector with
several kinds of source (database engines) lists one variant per kind. The test-only
connectors (``tests/toy_connector.py``, ``tests/toy_local_connector.py``) have profiles too,
so that every core feature the real connectors do not use yet goes through the suite.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib
import os
import secrets
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from http_support import module_command

from shared.declaration import Connector


@dataclass(frozen=True)
class HostTableRows:
    """A table the test host holds and resolves through ``acp/read_table`` (spec 8.8)."""

    headers: list[dict[str, Any]]
    rows: list[dict[str, Any]]


@dataclass(frozen=True)
class Source:
    """A working source for one connector, built in a test's temporary folder."""

    extraction: tuple[str, dict[str, Any]]  # a call returning more than 25 rows (in all, over its tables)
    extraction_rows: int
    credentials: dict[str, Any] | None = None  # None for a source without credentials
    resource_id: str | None = None  # None when resource_id.format is "none"
    host_tables: dict[str, HostTableRows] = field(default_factory=dict)  # refs the extraction reads
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
    module: str | None = None  # a test-only connector's module (CONNECTOR, COMMAND); None for connectors/<id>
    slow: frozenset[str] = frozenset()  # variants out of the quick tier: those that need a database server

    @property
    def test_only(self) -> bool:
        return self.module is not None

    def declaration(self) -> Connector:
        connector: Connector = importlib.import_module(self.module or f"connectors.{self.connector_id}").CONNECTOR
        return connector

    def command(self) -> list[str]:
        """How a host launches it as a process."""
        if self.module is None:
            return module_command(self.connector_id)
        return list(importlib.import_module(self.module).COMMAND)


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


# -- gsc ------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _gsc(folder: Path, canary: str) -> Iterator[Source]:
    import json

    from fakes.search_console import FakeSearchConsole
    from gsc_support import DOMAIN, by_page_truth, gsc_env, service_account, today

    # The fake keeps the connector's calendar (Pacific Time), so the default window meets its fresh days.
    with FakeSearchConsole(today=today()) as fake:
        end = fake.last_final_date(DOMAIN)
        start = end - dt.timedelta(days=6)
        expected = len(by_page_truth(fake, DOMAIN, ["page", "date"], start, end))
        info = fake.oauth.service_account_info("gsc-conformance")
        forged = {**info, "private_key": f"-----BEGIN PRIVATE KEY-----\n{canary}\n-----END PRIVATE KEY-----\n"}
        yield Source(
            credentials=service_account(fake),
            resource_id=DOMAIN,
            extraction=(
                "search_analytics",
                {"dimensions": ["page", "date"], "start_date": start.isoformat(), "end_date": end.isoformat()},
            ),
            extraction_rows=expected,
            env=gsc_env(fake),
            canary_credentials=(
                {"type": "service_account", "service_account": json.dumps(forged)},
                {"type": "oauth", "access_token": canary},
                {"type": "oauth", "refresh_token": canary, "client_id": "cid", "client_secret": canary},
            ),
        )


# -- ga4 ------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _ga4(folder: Path, canary: str) -> Iterator[Source]:
    import json

    from fakes.ga4 import FakeGA4
    from ga4_support import PROPERTY, ga4_env, service_account, sessions_by

    with FakeGA4() as fake:
        end = fake.today(PROPERTY) - dt.timedelta(days=1)
        start = end - dt.timedelta(days=13)
        by_day_and_device = sessions_by(fake, PROPERTY, lambda e: (e.date, e.visitor.device_category), start, end)
        expected = len(by_day_and_device)
        info = fake.oauth.service_account_info("ga4-conformance")
        forged = {**info, "private_key": f"-----BEGIN PRIVATE KEY-----\n{canary}\n-----END PRIVATE KEY-----\n"}
        yield Source(
            credentials=service_account(fake),
            resource_id=PROPERTY,  # also the connector's resource_id example
            extraction=(
                "run_report",
                {
                    "dimensions": ["date", "deviceCategory"],
                    "metrics": ["sessions"],
                    "start_date": start.isoformat(),
                    "end_date": end.isoformat(),
                },
            ),
            extraction_rows=expected,
            env=ga4_env(fake),
            canary_credentials=(
                {"type": "service_account", "service_account": json.dumps(forged)},
                {"type": "oauth", "access_token": canary},
                {"type": "oauth", "refresh_token": canary, "client_id": "cid", "client_secret": canary},
            ),
        )


@contextlib.contextmanager
def _prediction(folder: Path, canary: str) -> Iterator[Source]:
    """No resource, no credentials: forecast 60 days of a host table 30 days ahead (spec 6.1, 8.8, 16.7)."""
    start = dt.date(2026, 1, 1)
    history = [{"date": (start + dt.timedelta(days=i)).isoformat(), "sessions": 100 + i % 7} for i in range(60)]
    yield Source(
        extraction=(
            "forecast",
            {
                "table_ref": "ds_sessions",
                "time_column": "date",
                "value_column": "sessions",
                "horizon": 30,
                "method": "seasonal_naive",
                "chart": False,
            },
        ),
        extraction_rows=90,  # 30 forecast rows and the 60 actuals
        host_tables={
            "ds_sessions": HostTableRows(
                headers=[{"name": "date", "type": "date"}, {"name": "sessions", "type": "integer"}], rows=history
            )
        },
        canary_credentials=({"api_key": canary},),
    )


# -- test-only connectors -------------------------------------------------------------------------
TOY_REPORT = {"start_date": "2026-03-01", "end_date": "2026-03-31", "rows": 40}


def _toy_canaries(canary: str) -> tuple[dict[str, Any], ...]:
    from toy_connector import TEST_CREDENTIALS

    return (
        {**TEST_CREDENTIALS, "api_key": canary},
        {**TEST_CREDENTIALS, "api_key": f"bad-{canary}"},  # refused by the toy's authenticate
        {"type": "oauth", "email": "ana@toy.example", "access_token": canary},
    )


@contextlib.contextmanager
def _toy_report(folder: Path, canary: str) -> Iterator[Source]:
    """A single-table extraction of a resource, with a date window."""
    from toy_connector import TEST_CREDENTIALS

    yield Source(
        credentials=TEST_CREDENTIALS,
        resource_id="acc_7",
        extraction=("report", TOY_REPORT),
        extraction_rows=40,
        canary_credentials=_toy_canaries(canary),
    )


@contextlib.contextmanager
def _toy_browse(folder: Path, canary: str) -> Iterator[Source]:
    """A multi-table extraction (spec 8.2.1) under a table catalog (8.7), by a tool without a resource:
    the default selection is hits (60 rows, with a model view), network (3, required) and summary
    (1, outside the catalog, the primary table)."""
    from toy_connector import TEST_CREDENTIALS

    yield Source(
        credentials=TEST_CREDENTIALS,
        resource_id="acc_7",
        extraction=("browse", {}),
        extraction_rows=64,
        canary_credentials=_toy_canaries(canary),
    )


@contextlib.contextmanager
def _toy_local(folder: Path, canary: str) -> Iterator[Source]:
    """No resource, no credentials: the extraction forecasts a host table (spec 6.1, 8.8)."""
    start = dt.date(2026, 1, 1)
    history = [{"date": (start + dt.timedelta(days=i)).isoformat(), "sessions": 100 + i % 7} for i in range(60)]
    yield Source(
        extraction=("forecast", {"table_ref": "ds_sessions", "column": "sessions", "horizon": 40}),
        extraction_rows=40,
        host_tables={
            "ds_sessions": HostTableRows(
                headers=[{"name": "date", "type": "date"}, {"name": "sessions", "type": "integer"}], rows=history
            )
        },
        # A host may still send credentials to a source that takes none: they must not leak either.
        canary_credentials=({"api_key": canary},),
    )


PROFILES: dict[str, Profile] = {
    "databases": Profile(
        "databases",
        {"sqlite": _sqlite, "duckdb": _duckdb, "postgres": _postgres, "mysql": _mysql},
        slow=frozenset({"postgres", "mysql"}),
    ),
    "bigquery": Profile("bigquery", {"fake": _bigquery}),
    "gsc": Profile("gsc", {"fake": _gsc}),
    "ga4": Profile("ga4", {"fake": _ga4}),
    "prediction": Profile("prediction", {"host_table": _prediction}),
    "toy": Profile("toy", {"report": _toy_report, "browse": _toy_browse}, module="toy_connector"),
    "toy_local": Profile("toy_local", {"host_table": _toy_local}, module="toy_local_connector"),
}


def cases(*extra: str, slow: bool = False) -> list[Any]:
    """Every (connector, variant, *extra) the suite runs, as parameters; ``slow`` marks them all slow."""
    return [
        pytest.param(
            connector,
            variant,
            *extra,
            marks=[pytest.mark.slow] if slow or variant in profile.slow else [],
            id="-".join((connector, variant, *extra)),
        )
        for connector, profile in PROFILES.items()
        for variant in profile.variants
    ]


def first_cases(*extra: str, slow: bool = False) -> list[Any]:
    """As :func:`cases`, with one variant per connector: its first."""
    firsts = {(connector, next(iter(profile.variants))) for connector, profile in PROFILES.items()}
    return [case for case in cases(*extra, slow=slow) if tuple(case.values[:2]) in firsts]
