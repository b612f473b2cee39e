"""Autocontext blocks (spec 7) over stdio, checked against direct sqlite3 queries.

One server answers every autocontext call of this module (the demo database and a small
catalog database with composite keys and a high-cardinality text column).
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from connectors.databases import engine_sqlite as engine
from connectors.databases.demo import build_demo_database
from shared.host import AcpHost, ToolResponse

LOW_CARDINALITY = 20  # the block's published rule: at most 20 distinct values
TOP_VALUES = 10


def build_catalog(path: Path) -> Path:
    """Composite primary and foreign keys, a high-cardinality text column and numbers."""
    conn = sqlite3.connect(path)
    try:
        conn.executescript(
            """
            CREATE TABLE regions (
                country TEXT, region TEXT, name TEXT NOT NULL, PRIMARY KEY (country, region)
            );
            CREATE TABLE stores (
                id INTEGER PRIMARY KEY,
                country TEXT NOT NULL,
                region TEXT NOT NULL,
                code TEXT NOT NULL,
                segment TEXT,
                opened_on TEXT,
                size REAL,
                staff INTEGER,
                FOREIGN KEY (country, region) REFERENCES regions (country, region)
            );
            """
        )
        regions = [(c, f"R{r}", f"{c} region {r}") for c in ("ES", "FR", "PT") for r in range(10)]
        conn.executemany("INSERT INTO regions VALUES (?, ?, ?)", regions)
        conn.executemany(
            "INSERT INTO stores (country, region, code, segment, opened_on, size, staff) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (regions[i % 30][0], regions[i % 30][1], f"S{i:04d}", ("mall", "street", "outlet", "street")[i % 4],
                 (dt.date(2020, 1, 1) + dt.timedelta(days=7 * i)).isoformat(), 80.5 + i % 7, 3 + i % 5)
                for i in range(500)
            ],
        )  # fmt: skip
        conn.commit()
    finally:
        conn.close()
    return path


@dataclass
class Session:
    shop: Path
    catalog: Path
    database: ToolResponse
    table: ToolResponse
    explicit_tables_for_table: ToolResponse
    catalog_database: ToolResponse
    data_for_database: ToolResponse
    data_for_table: ToolResponse


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory, direct: Any) -> Session:
    folder = tmp_path_factory.mktemp("blocks")
    shop = build_demo_database(folder / "shop.sqlite")
    catalog = build_catalog(folder / "catalog.sqlite")
    env = {"ACP_CACHE_DIR": str(folder / "cache"), "ACP_TMP_DIR": str(folder / "tmp")}
    shop_meta, catalog_meta = direct.sqlite_meta(shop), direct.sqlite_meta(catalog)

    async def run() -> Session:
        async with AcpHost.for_module("databases", env=env) as host:
            return Session(
                shop=shop,
                catalog=catalog,
                database=await host.call("autocontext", {"resource_id": "shop"}, shop_meta),
                table=await host.call("autocontext", {"resource_id": "shop.orders"}, shop_meta),
                explicit_tables_for_table=await host.call(
                    "autocontext", {"resource_id": "shop.orders", "request_data": ["tables", "date_ranges"]}, shop_meta
                ),
                catalog_database=await host.call("autocontext", {"resource_id": "catalog"}, catalog_meta),
                data_for_database=await host.call("autocontext_data", {"resource_id": "shop"}, shop_meta),
                data_for_table=await host.call("autocontext_data", {"resource_id": "shop.orders"}, shop_meta),
            )

    return anyio.run(run)


def blocks(response: ToolResponse) -> dict[str, Any]:
    assert not response.is_error, response.error
    assert response.kind == "autocontext"
    out = {}
    for block in response.model_response:
        assert "error" not in block, block
        out[block["id"]] = block["data"]
    return out


def catalog_objects(direct: Any, path: Path) -> dict[str, str]:
    rows = direct.query(
        path, "SELECT name, type FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite%'"
    )
    return {row["name"]: row["type"] for row in rows}


def expected_schema(direct: Any, path: Path, table: str) -> dict[str, Any]:
    conn = direct.connect_ro(path)
    try:
        info = conn.execute(f"PRAGMA table_info({direct.quote(table)})").fetchall()
        keys = conn.execute(f"PRAGMA foreign_key_list({direct.quote(table)})").fetchall()
    finally:
        conn.close()
    columns = [(r[1], r[2] or "ANY", r[5] > 0, bool(r[3])) for r in info]
    grouped: dict[int, list[tuple[int, str, str, str]]] = {}
    for key_id, seq, target, column, target_column, *_ in keys:
        grouped.setdefault(key_id, []).append((seq, target, column, target_column))
    foreign = sorted(
        (parts[0][1], tuple(p[2] for p in sorted(parts)), tuple(p[3] for p in sorted(parts)))
        for parts in grouped.values()
    )
    return {"columns": columns, "foreign_keys": foreign}


def reported_schema(entry: dict[str, Any]) -> dict[str, Any]:
    columns = [(c["name"], c["type"], c.get("primary_key", False), c.get("not_null", False)) for c in entry["columns"]]
    foreign = sorted(
        (k["references"], tuple(k["columns"]), tuple(k["referenced_columns"])) for k in entry.get("foreign_keys", [])
    )
    return {"columns": columns, "foreign_keys": foreign}


def top_values(direct: Any, path: Path, table: str, column: str) -> tuple[list[str], int]:
    name, source = direct.quote(column), direct.quote(table)
    rows = direct.query(
        path,
        f"SELECT {name} AS v, count(*) AS n FROM {source} WHERE typeof({name}) = 'text' GROUP BY v ORDER BY n DESC, v",
    )
    return [r["v"] for r in rows[:TOP_VALUES]], len(rows)


def declared_types(direct: Any, path: Path, table: str) -> dict[str, str]:
    return {r["name"]: r["type"].upper() for r in direct.query(path, f"SELECT * FROM pragma_table_info('{table}')")}


# -- tables -------------------------------------------------------------------------------------------
def test_tables_rows_equal_direct_counts(session: Session, direct: Any) -> None:
    data = blocks(session.database)["tables"]
    objects = catalog_objects(direct, session.shop)
    assert [e["table"] for e in data] == sorted(objects)
    for entry in data:
        assert entry["type"] == objects[entry["table"]]
        assert entry["rows"] == direct.scalar(session.shop, f"SELECT count(*) FROM {direct.quote(entry['table'])}")
        assert "rows_estimated" not in entry  # a small database is counted exactly


# -- table_schemas ------------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["shop", "catalog"])
def test_table_schemas_equal_pragma_table_info_and_foreign_key_list(session: Session, direct: Any, which: str) -> None:
    path, response = (
        (session.shop, session.database) if which == "shop" else (session.catalog, session.catalog_database)
    )
    data = blocks(response)["table_schemas"]
    assert [e["table"] for e in data] == sorted(catalog_objects(direct, path))
    for entry in data:
        assert reported_schema(entry) == expected_schema(direct, path, entry["table"]), entry["table"]
    if which == "catalog":  # the composite keys really are there
        by_table = {e["table"]: reported_schema(e) for e in data}
        assert by_table["stores"]["foreign_keys"] == [("regions", ("country", "region"), ("country", "region"))]
        assert sum(pk for _, _, pk, _ in by_table["regions"]["columns"]) == 2


def test_table_level_schema_has_only_that_table(session: Session, direct: Any) -> None:
    data = blocks(session.table)["table_schemas"]
    assert [e["table"] for e in data] == ["orders"]
    assert reported_schema(data[0]) == expected_schema(direct, session.shop, "orders")


# -- date_ranges --------------------------------------------------------------------------------------
def test_date_ranges_equal_direct_min_and_max(session: Session, direct: Any) -> None:
    data = blocks(session.database)["date_ranges"]
    declared_dates = {
        (table, column)
        for table in catalog_objects(direct, session.shop)
        for column, kind in declared_types(direct, session.shop, table).items()
        if "DATE" in kind or "TIME" in kind
    }
    assert {(e["table"], e["column"]) for e in data} == declared_dates
    assert ("orders", "order_date") in declared_dates
    for entry in data:
        column, table = direct.quote(entry["column"]), direct.quote(entry["table"])
        low, high = direct.first_row(session.shop, f"SELECT min({column}), max({column}) FROM {table}")
        assert (entry["min"], entry["max"]) == (low, high)


def test_date_ranges_find_text_date_columns(session: Session, direct: Any) -> None:
    data = blocks(session.catalog_database)["date_ranges"]
    assert ("stores", "opened_on") in {(e["table"], e["column"]) for e in data}
    for entry in data:
        dt.date.fromisoformat(entry["min"])  # only date-valued columns are reported
        column = direct.quote(entry["column"])
        low, high = direct.first_row(
            session.catalog, f"SELECT min({column}), max({column}) FROM {direct.quote(entry['table'])}"
        )
        assert (entry["min"], entry["max"]) == (low, high)


def test_table_level_date_ranges_have_only_that_table(session: Session, direct: Any) -> None:
    data = blocks(session.table)["date_ranges"]
    assert {e["table"] for e in data} == {"orders"}
    low, high = direct.first_row(session.shop, "SELECT min(order_date), max(order_date) FROM orders")
    assert [(e["column"], e["min"], e["max"]) for e in data] == [("order_date", low, high)]


# -- sample_values ------------------------------------------------------------------------------------
def test_sample_values_of_orders_equal_direct_top_values(session: Session, direct: Any) -> None:
    data = {(e["table"], e["column"]): e for e in blocks(session.database)["sample_values"]}
    for column in ("status", "country"):
        values, distinct = top_values(direct, session.shop, "orders", column)
        entry = data[("orders", column)]
        assert entry["values"] == values
        assert entry["distinct"] == distinct


@pytest.mark.parametrize("which", ["shop", "catalog"])
def test_sample_values_cover_only_low_cardinality_text_columns(session: Session, direct: Any, which: str) -> None:
    path, response = (
        (session.shop, session.database) if which == "shop" else (session.catalog, session.catalog_database)
    )
    data = blocks(response)["sample_values"]
    reported = {(e["table"], e["column"]) for e in data}
    for entry in data:
        kind = declared_types(direct, path, entry["table"])[entry["column"]]
        assert kind in {"", "TEXT"} or "CHAR" in kind or "CLOB" in kind, entry
        values, distinct = top_values(direct, path, entry["table"], entry["column"])
        assert 0 < distinct <= LOW_CARDINALITY
        assert (entry["values"], entry["distinct"]) == (values, distinct)
    for table in catalog_objects(direct, path):
        for column, kind in declared_types(direct, path, table).items():
            if kind in {"INTEGER", "REAL", "NUMERIC"}:
                assert (table, column) not in reported  # numbers are not sampled
            elif top_values(direct, path, table, column)[1] > LOW_CARDINALITY:
                assert (table, column) not in reported  # high cardinality
    if which == "catalog":
        assert ("stores", "segment") in reported and ("stores", "code") not in reported


def test_table_level_sample_values_have_only_that_table(session: Session) -> None:
    data = blocks(session.table)["sample_values"]
    assert {e["table"] for e in data} == {"orders"}
    assert {"status", "country"} <= {e["column"] for e in data}


# -- levels (spec 7.2, 7.3) ---------------------------------------------------------------------------
def test_table_resource_gets_no_database_only_block(session: Session) -> None:
    assert "tables" not in blocks(session.table)
    assert set(blocks(session.table)) == {"table_schemas", "date_ranges", "sample_values", "relationships"}
    listed_for_table = [b["id"] for b in session.data_for_table.model_response]
    listed_for_database = {b["id"]: b for b in session.data_for_database.model_response}
    assert "tables" not in listed_for_table
    assert listed_for_database["tables"]["applies_to"] == ["database", "schema"]
    assert set(listed_for_table) == set(listed_for_database) - {"tables", "schemas"}


def test_requesting_a_database_block_for_a_table_gives_that_block_an_error(session: Session) -> None:
    response = session.explicit_tables_for_table
    assert not response.is_error
    by_id = {b["id"]: b for b in response.model_response}
    assert list(by_id) == ["tables", "date_ranges"]  # in the requested order
    assert "data" not in by_id["tables"] and "database" in by_id["tables"]["error"]
    assert "data" in by_id["date_ranges"]


# -- row count estimate (in-process) ------------------------------------------------------------------
@pytest.fixture(scope="module")
def big_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two million rowids with every tenth row deleted: count(*) and max(rowid) differ."""
    path = tmp_path_factory.mktemp("big") / "big.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE big (id INTEGER PRIMARY KEY, v TEXT)")
    conn.execute(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000000) "
        "INSERT INTO big SELECT i, 'x' FROM n"
    )
    conn.execute("DELETE FROM big WHERE id % 10 = 5")
    conn.commit()
    conn.close()
    return path


def test_row_count_is_exact_when_counting_is_cheap(big_table: Path, direct: Any) -> None:
    with engine.opened(str(big_table)) as database:
        assert database.row_count("big", "table", budget_s=30) == (
            direct.scalar(big_table, "SELECT count(*) FROM big"),
            False,
        )


def test_row_count_of_a_huge_table_is_max_rowid_flagged_estimated(big_table: Path, direct: Any) -> None:
    """SQLite's count(*) cannot be interrupted, so past the threshold the table is not counted at all."""
    count = direct.scalar(big_table, "SELECT count(*) FROM big")
    max_rowid = direct.scalar(big_table, "SELECT max(rowid) FROM big")
    assert count != max_rowid  # premise: the estimate is distinguishable from a count
    with engine.opened(str(big_table)) as database:
        statements: list[str] = []
        database.conn.set_trace_callback(statements.append)
        assert database.row_count("big", "table", budget_s=30, exact_up_to=1000) == (max_rowid, True)
    assert statements and not any("count(" in s.lower() for s in statements), statements


def test_row_count_of_a_slow_view_stops_at_its_budget(big_table: Path) -> None:
    """A view is counted under the time budget; past it the count is unknown, flagged, and fast."""
    view_db = big_table.parent / "views.sqlite"
    conn = sqlite3.connect(view_db)
    conn.execute("ATTACH ? AS src", (str(big_table),))
    conn.execute("CREATE TABLE big AS SELECT * FROM src.big WHERE id < 200000")
    conn.execute("CREATE VIEW heavy AS SELECT a.id FROM big a, big b")
    conn.commit()
    conn.close()
    with engine.opened(str(view_db)) as database:
        # (None, True) comes only from the interrupted count: 4e10 rows are never counted to the end.
        assert database.row_count("heavy", "view", budget_s=0.05) == (None, True)


# -- time budgets on a large database ------------------------------------------------------------

SLOW_VIEWS = 30  # each takes a second to count: 30 s if every view had its own budget


@pytest.mark.slow
@pytest.mark.anyio
async def test_many_slow_views_leave_the_blocks_and_describe_table_in_time(tmp_path: Path) -> None:
    """Counting shares one budget per block, and describe_table looks at its one table only."""
    from loader import load_file

    pg_server = load_file(Path(__file__).with_name("pg_server.py"), "acp_tests_databases_pg_server")
    with pg_server.empty_database("slow") as name:
        with pg_server.admin_connect(name) as conn:
            conn.execute("CREATE TABLE plain (id integer PRIMARY KEY, label text)")
            conn.execute("INSERT INTO plain SELECT g, 'label ' || g FROM generate_series(1, 50) g")
            for i in range(SLOW_VIEWS):
                conn.execute(f"CREATE VIEW slow_{i:02d} AS SELECT g FROM generate_series(1, 3) g, pg_sleep(1)")
        credentials = {"type": "postgres", "host": pg_server.HOST, "port": pg_server.PORT,
                       "user": pg_server.SUPERUSER, "database": name}  # fmt: skip
        meta = {"credentials": credentials, "autocontext_delivered": True}
        env = {"ACP_CACHE_DIR": str(tmp_path / "cache"), "ACP_TMP_DIR": str(tmp_path / "tmp")}
        async with AcpHost.for_module("databases", env=env) as host:
            context = await host.call(
                "autocontext", {"resource_id": f"{name}.public", "request_data": ["tables"]}, meta
            )
            described = await host.call("describe_table", {"resource_id": f"{name}.public.plain"}, meta)
        assert not context.is_error and not described.is_error, (context.error, described.error)
        listed = {t["table"]: t for t in blocks(context)["tables"]}
        assert len(listed) == SLOW_VIEWS + 1  # every view is still listed, most without a count
        assert listed["plain"]["rows"] == 50
        assert sum(1 for t in listed.values() if t["rows"] is None) >= SLOW_VIEWS - 5
        assert described.model_response["rows"] == 50
        # How long the two calls take (15 s when each view had a budget of its own): bench/slow_views.py.
