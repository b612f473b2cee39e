"""``execute_sql`` over stdio: typed results, dates, large tables, timeouts and errors."""

from __future__ import annotations

import datetime as dt
import sqlite3
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from host_tables import StaticTable, StaticTables
from process_support import cpu_seconds, server_process

from connectors.databases.demo import build_demo_database
from shared.host import ACP_HOST_CAPABILITY, uri_path

pytestmark = pytest.mark.anyio
ENDLESS = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 1000000000) SELECT count(*) FROM c"


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    return build_demo_database(tmp_path / "data" / "shop.sqlite")


@pytest.fixture
def sales(tmp_path: Path) -> Path:
    """A table whose columns hold one kind of value each: date text, integers, reals, text, timestamps."""
    path = tmp_path / "data" / "sales.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE sales (day TEXT, units INTEGER, price REAL, label TEXT, seen_at TEXT, mixed)")
    conn.executemany(
        "INSERT INTO sales VALUES (?, ?, ?, ?, ?, ?)",
        [
            ((dt.date(2026, 7, 1) + dt.timedelta(days=i)).isoformat(), i * 3, 1.25 + i, f"item {i}",
             f"2026-07-{1 + i:02d}T10:15:00", i if i % 2 else i + 0.5)
            for i in range(10)
        ],
    )  # fmt: skip
    conn.commit()
    conn.close()
    return path


async def test_headers_are_typed_from_the_values(databases_host, sales: Path, direct: Any) -> None:
    sql = "SELECT day, units, price, label, seen_at, mixed FROM sales ORDER BY day"
    async with databases_host() as host:
        result = await host.call("execute_sql", {"resource_id": "sales", "sql": sql}, direct.sqlite_meta(sales))
    assert not result.is_error, result.error
    types = {h["name"]: h["type"] for h in result.system_data["headers"]}
    # Spec 8.6: inferred from values; integers mixed with reals are numbers.
    assert types == {
        "day": "date",
        "units": "integer",
        "price": "number",
        "label": "string",
        "seen_at": "datetime",
        "mixed": "number",
    }
    expected = direct.query(sales, sql)
    assert [row["day"] for row in result.rows()] == [row["day"] for row in expected]
    assert [row["units"] for row in result.rows()] == [row["units"] for row in expected]
    assert [row["price"] for row in result.rows()] == [row["price"] for row in expected]
    assert result.model_response["columns"] == list(types)


async def test_dates_come_from_the_sql_date_literals(databases_host, shop: Path, direct: Any) -> None:
    start, end = dt.date(2026, 7, 1), dt.date(2026, 7, 31)
    sql = (
        "SELECT order_date, count(*) AS orders FROM orders "
        f"WHERE order_date BETWEEN '{start.isoformat()}' AND '{end.isoformat()}' GROUP BY order_date"
    )
    async with databases_host() as host:
        result = await host.call("execute_sql", {"resource_id": "shop", "sql": sql}, direct.sqlite_meta(shop))
    assert not result.is_error, result.error
    assert result.model_response["dates"] == [start.isoformat(), end.isoformat()]
    assert result.rows() == direct.query(shop, sql)


async def test_dates_default_to_today_without_date_literals(databases_host, shop: Path, direct: Any) -> None:
    async with databases_host() as host:
        before = dt.date.today().isoformat()
        result = await host.call(
            "execute_sql", {"resource_id": "shop", "sql": "SELECT count(*) AS n FROM orders"}, direct.sqlite_meta(shop)
        )
        after = dt.date.today().isoformat()
    assert not result.is_error, result.error
    dates = result.model_response["dates"]
    assert len(dates) == 1 and dates[0] in {before, after}  # spec 8.2: the local date of today


async def test_description_names_the_file_and_the_sql(databases_host, shop: Path, direct: Any) -> None:
    sql = "SELECT country, count(*) AS n FROM orders GROUP BY country ORDER BY n DESC"
    async with databases_host() as host:
        result = await host.call("execute_sql", {"resource_id": "shop", "sql": sql}, direct.sqlite_meta(shop))
    description = result.model_response["description"]
    assert shop.name in description and sql in description


async def test_large_result_goes_to_a_table_file_equal_to_a_direct_query(
    databases_host, shop: Path, direct: Any, runtime_dirs: dict[str, str]
) -> None:
    sql = "SELECT * FROM orders ORDER BY order_id"
    expected = direct.query(shop, sql)
    async with databases_host() as host:
        result = await host.call(
            "execute_sql", {"resource_id": "shop", "sql": sql}, direct.sqlite_meta(shop, inline_max_bytes=20_000)
        )
    assert not result.is_error, result.error
    data = result.system_data
    assert data["format"] == "file" and "table" not in data
    assert uri_path(data["table_uri"]).parent == Path(runtime_dirs["ACP_TMP_DIR"]).resolve()
    assert data["row_count"] == len(expected) == result.model_response["total_rows"]
    assert result.rows() == expected
    assert result.model_response["truncated"] and len(result.model_response["rows"]) < len(expected)


async def test_statement_timeout_stops_a_long_query_and_the_server_keeps_serving(
    databases_host, shop: Path, direct: Any
) -> None:
    async with databases_host() as host:
        started = time.monotonic()
        result = await host.call(
            "execute_sql",
            {"resource_id": "shop", "sql": ENDLESS},
            direct.sqlite_meta(shop, config={"statement_timeout_s": 1}),
        )
        elapsed = time.monotonic() - started
        # The endless query stopped: only the timeout could end it, and it did not fire early.
        assert result.error_name == "ACP_UPSTREAM_ERROR", result.error
        assert "statement_timeout_s" in result.error["message"]
        assert elapsed >= 1
        after = await host.call(
            "execute_sql",
            {"resource_id": "shop", "sql": "SELECT count(*) AS n FROM channels"},
            direct.sqlite_meta(shop),
        )
    assert after.rows() == direct.query(shop, "SELECT count(*) AS n FROM channels")


async def test_cancelled_call_stops_at_sqlite_and_the_server_answers_the_next(
    databases_host, shop: Path, direct: Any
) -> None:
    """notifications/cancelled interrupts the running statement, not just the wait for it."""
    async with databases_host() as host:
        server = server_process()
        with anyio.move_on_after(1.5) as scope:
            await host.call(
                "execute_sql",
                {"resource_id": "shop", "sql": ENDLESS},
                direct.sqlite_meta(shop, config={"statement_timeout_s": 120}),
            )
        assert scope.cancelled_caught
        # A running recursive CTE keeps a core busy; once interrupted the server is idle.
        with anyio.fail_after(5):
            while await cpu_seconds(server, 0.5) > 0.1:
                pass
        after = await host.call(
            "execute_sql",
            {"resource_id": "shop", "sql": "SELECT count(*) AS n FROM channels"},
            direct.sqlite_meta(shop),
        )
    assert after.rows() == direct.query(shop, "SELECT count(*) AS n FROM channels")


async def test_sql_errors_are_invalid_arguments_with_a_next_step(databases_host, shop: Path, direct: Any) -> None:
    meta = direct.sqlite_meta(shop)
    async with databases_host() as host:
        missing = await host.call("execute_sql", {"resource_id": "shop", "sql": "SELECT * FROM nope"}, meta)
        syntax = await host.call("execute_sql", {"resource_id": "shop", "sql": "SELECT * FRM orders"}, meta)
        column = await host.call("execute_sql", {"resource_id": "shop", "sql": "SELECT nope FROM orders"}, meta)
        unknown_word = await host.call("execute_sql", {"resource_id": "shop", "sql": "SELEC * FROM orders"}, meta)
    # SQL the checker cannot read is refused before the engine sees it: a query with a syntax
    # error is the model's to fix; an unknown leading word could be an engine command.
    assert unknown_word.error_name == "ACP_READ_ONLY_VIOLATION"
    assert "single plain SELECT" in unknown_word.error["message"]
    for result, detail in ((missing, "no such table: nope"), (syntax, "syntax error"), (column, "no such column")):
        assert result.error_name == "ACP_INVALID_ARGUMENTS" and result.error["code"] == -32017
        message = result.error["message"]
        assert detail in message
        assert "autocontext" in message or "fix" in message.lower()  # spec 12.1: says what to do next
    assert "autocontext" in missing.error["message"]  # the way to see the real table names


async def test_bad_credentials_paths_are_credentials_invalid(
    databases_host, shop: Path, tmp_path: Path, direct: Any
) -> None:
    not_a_database = tmp_path / "data" / "notes.sqlite"
    not_a_database.write_text("this is not a database\n" * 200)
    cases = {
        "missing": tmp_path / "data" / "missing.sqlite",  # absolute, does not exist
        "shop": Path("data/shop.sqlite"),  # relative
        "notes": not_a_database,
        "data": tmp_path / "data",  # a folder
    }
    async with databases_host() as host:
        for resource_id, path in cases.items():
            result = await host.call(
                "execute_sql", {"resource_id": resource_id, "sql": "SELECT 1"}, direct.sqlite_meta(path)
            )
            assert result.error_name == "ACP_CREDENTIALS_INVALID", (path, result.error)
            assert result.error["code"] == -32012
    assert not (tmp_path / "data" / "missing.sqlite").exists()  # opening read-only created nothing


@pytest.mark.parametrize("kind", ["sqlite", "duckdb"])
async def test_a_missing_database_file_is_credentials_invalid_whatever_the_resource(
    databases_host, tmp_path: Path, kind: str
) -> None:
    """The file is checked before the resource is resolved: 'shop' against a missing 'nothere'
    file is a credentials problem, not an unknown database."""
    missing = tmp_path / f"nothere.{kind}"
    meta = {"credentials": {"type": kind, "path": str(missing)}, "autocontext_delivered": True}
    async with databases_host() as host:
        results = [
            await host.call("execute_sql", {"resource_id": "shop", "sql": "SELECT 1"}, meta),
            await host.call("autocontext", {}, meta),
        ]
    for result in results:
        assert result.error_name == "ACP_CREDENTIALS_INVALID", result.error
        assert "does not exist" in result.error["message"] and "credentials" in result.error["message"]
    assert not missing.exists()


async def test_resource_naming_another_database_is_not_found(databases_host, shop: Path, direct: Any) -> None:
    async with databases_host() as host:
        result = await host.call(
            "execute_sql", {"resource_id": "warehouse", "sql": "SELECT 1"}, direct.sqlite_meta(shop)
        )
    assert result.error_name == "ACP_RESOURCE_NOT_FOUND" and result.error["code"] == -32014
    assert "warehouse" in result.error["message"] and shop.stem in result.error["message"]


async def test_missing_credentials(databases_host) -> None:
    async with databases_host() as host:
        result = await host.call("execute_sql", {"resource_id": "shop", "sql": "SELECT 1"}, {})
    assert result.error_name == "ACP_CREDENTIALS_MISSING" and result.error["code"] == -32011


async def test_duplicate_column_names_are_renamed_with_a_warning(databases_host, shop: Path, direct: Any) -> None:
    sql = (
        "SELECT o.channel_id AS id, c.name, o.order_id AS id FROM orders o JOIN channels c USING (channel_id) "
        "ORDER BY o.order_id LIMIT 50"
    )
    conn = direct.connect_ro(shop)
    try:
        expected = [tuple(row) for row in conn.execute(sql).fetchall()]  # tuples: dicts would merge the ids
    finally:
        conn.close()
    async with databases_host() as host:
        result = await host.call("execute_sql", {"resource_id": "shop", "sql": sql}, direct.sqlite_meta(shop))
    assert not result.is_error, result.error
    columns = result.model_response["columns"]
    assert len(columns) == 3 and len(set(columns)) == 3
    assert columns[0] == "id" and columns[1] == "name" and columns[2].startswith("id")
    assert [h["name"] for h in result.system_data["headers"]] == columns
    assert [tuple(row[c] for c in columns) for row in result.rows()] == expected  # no value lost or swapped
    warnings = result.system_info["warnings"]
    assert any("id" in w and columns[2] in w for w in warnings)
    assert result.model_response.get("warnings") == warnings


async def test_insert_rows_on_sqlite_follows_the_access_mode(databases_host, shop: Path, direct: Any) -> None:
    """insert_rows writes exactly the host table in readAndOnlyAdd, creating the table; never in onlyRead
    or where table_rules close the table (spec 10.6, 8.8.2)."""
    headers = [
        {"name": "day", "type": "date"},
        {"name": "visits", "type": "integer"},
        {"name": "note", "type": "string"},
    ]
    rows = [{"day": f"2026-08-{d:02d}", "visits": d * 7, "note": f"n{d}"} for d in range(1, 11)]
    tables = StaticTables({"ds_visits": StaticTable(headers=headers, rows=rows)})
    before = direct.table_checksums(shop)
    adding = {"access_mode": "readAndOnlyAdd"}
    closed = {**adding, "table_rules": '[{"pattern": "locked_.*", "mode": "onlyRead"}]'}
    async with databases_host(tables=tables) as host:
        read_only = await host.call(
            "insert_rows", {"resource_id": "shop.visits", "table_ref": "ds_visits"}, direct.sqlite_meta(shop)
        )
        by_rule = await host.call(
            "insert_rows",
            {"resource_id": "shop.locked_visits", "table_ref": "ds_visits"},
            direct.sqlite_meta(shop, config=closed),
        )
        created = await host.call(
            "insert_rows",
            {"resource_id": "shop.visits", "table_ref": "ds_visits"},
            direct.sqlite_meta(shop, config=adding),
        )
        appended = await host.call(
            "insert_rows",
            {"resource_id": "shop.visits", "table_ref": "ds_visits"},
            direct.sqlite_meta(shop, config=adding),
        )
        wrong = await host.call(
            "insert_rows",
            {"resource_id": "shop.orders", "table_ref": "ds_visits"},
            direct.sqlite_meta(shop, config=adding),
        )
    assert read_only.error_name == "ACP_READ_ONLY_VIOLATION" and "readAndOnlyAdd" in read_only.error["message"]
    assert by_rule.error_name == "ACP_READ_ONLY_VIOLATION"
    assert created.model_response["created"] is True and created.model_response["inserted_rows"] == 10
    assert appended.model_response["created"] is False and appended.model_response["inserted_rows"] == 10
    assert wrong.error_name == "ACP_INVALID_ARGUMENTS" and "does not have" in wrong.error["message"]
    stored = direct.query(shop, "SELECT day, visits, note FROM visits ORDER BY rowid")
    assert stored == rows + rows
    after = direct.table_checksums(shop)
    assert {k: v for k, v in after.items() if k != "visits"} == before  # nothing else changed


async def test_insert_rows_on_sqlite_needs_a_host_that_serves_host_tables(
    databases_host, shop: Path, direct: Any
) -> None:
    """Spec 8.8: without ``host_tables`` in the client capability the table cannot be read, so nothing is written."""
    plain = {k: v for k, v in ACP_HOST_CAPABILITY.items() if k != "host_tables"}
    rows = [{"day": "2026-08-01", "visits": 7}]
    tables = StaticTables(
        {
            "ds_visits": StaticTable(
                headers=[{"name": "day", "type": "date"}, {"name": "visits", "type": "integer"}], rows=rows
            )
        }
    )
    before = direct.database_state(shop)
    async with databases_host(capability=plain, tables=tables) as host:
        response = await host.call(
            "insert_rows",
            {"resource_id": "shop.visits", "table_ref": "ds_visits"},
            direct.sqlite_meta(shop, config={"access_mode": "readAndOnlyAdd"}),
        )
        assert tables.requests == []  # never asked a client that did not offer host tables
    assert response.error_name == "ACP_HOST_TABLES_UNSUPPORTED" and response.error["code"] == -32020, response.error
    assert direct.database_state(shop) == before


async def test_a_server_without_a_driver_says_how_to_install_it_and_keeps_serving(
    databases_host, shop: Path, direct: Any, tmp_path: Path
) -> None:
    """A regular ``psycopg`` package first on the path hides the installed driver, as a missing extra would.

    A missing extra is the same error in every connector: -32018 with the ``pip install`` to run.
    """
    (tmp_path / "stub" / "psycopg").mkdir(parents=True)
    (tmp_path / "stub" / "psycopg" / "__init__.py").write_text("")
    credentials = {"type": "postgres", "host": "127.0.0.1", "port": 5432, "user": "postgres", "database": "postgres"}
    async with databases_host(env={"PYTHONPATH": str(tmp_path / "stub")}) as host:
        missing = await host.call(
            "execute_sql",
            {"resource_id": "postgres", "sql": "SELECT 1 AS one"},
            {"credentials": credentials, "autocontext_delivered": True},
        )
        assert missing.error_name == "ACP_UPSTREAM_ERROR" and missing.error["code"] == -32018, missing.error
        assert "pip install 'acp-connectors[databases]'" in missing.error["message"]
        assert "psycopg" in missing.error["message"]
        served = await host.call(
            "execute_sql", {"resource_id": "shop", "sql": "SELECT 1 AS one"}, direct.sqlite_meta(shop)
        )
        assert not served.is_error, served.error
