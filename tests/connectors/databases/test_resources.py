"""``resource_id`` of the databases connector (spec 6): ``<database>[.<table>]``."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from connectors.databases.demo import build_demo_database
from connectors.databases.resources import normalize
from shared import InvalidArguments

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "text",
    ["shop.orders", "shop/orders", '"shop"."orders"', "`shop`.`orders`", "[shop].[orders]", "  shop.orders  ",
     " shop . orders ", '"shop"/orders', "'shop'.'orders'"],
)  # fmt: skip
def test_table_variants_normalize_to_database_dot_table(text: str) -> None:
    ref = normalize(text)
    assert (ref.id, ref.level, ref.parts) == ("shop.orders", "table", ("shop", "orders"))


@pytest.mark.parametrize("text", ["shop", "  shop ", '"shop"', "`shop`", "[shop]"])
def test_database_variants_normalize_to_the_database(text: str) -> None:
    ref = normalize(text)
    assert (ref.id, ref.level, ref.parts) == ("shop", "database", ("shop",))


@pytest.mark.parametrize("text", ["a.b.c", ".x", "x.", "", "   ", "shop/", "a/b/c", '""', "shop..orders"])
def test_invalid_resource_ids_raise_invalid_arguments(text: str) -> None:
    with pytest.raises(InvalidArguments) as caught:
        normalize(text)
    assert caught.value.code == -32017
    assert "<database>" in caught.value.message  # says which format to use


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    return build_demo_database(tmp_path / "data" / "shop.sqlite")


def _objects(direct: Any, path: Path) -> list[str]:
    rows = direct.query(
        path,
        "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite%' ORDER BY name",
    )
    return [row["name"] for row in rows]


async def test_resource_list_is_the_database_then_each_table_and_view(databases_host, shop: Path, direct: Any) -> None:
    async with databases_host() as host:
        result = await host.call("autocontext", {}, direct.sqlite_meta(shop))
    assert not result.is_error, result.error
    model = result.model_response
    objects = _objects(direct, shop)
    assert "daily_revenue" in objects  # the demo's view is listed too
    assert [r["resource_id"] for r in model["resources"]] == [shop.stem] + [f"{shop.stem}.{t}" for t in objects]
    assert model["total_available"] == len(objects) + 1
    assert result.system_info["resource_id"] is None  # spec 6.3


async def test_unknown_table_is_not_found_listing_the_tables(databases_host, shop: Path, direct: Any) -> None:
    async with databases_host() as host:
        result = await host.call("autocontext", {"resource_id": "shop.nope"}, direct.sqlite_meta(shop))
    assert result.error_name == "ACP_RESOURCE_NOT_FOUND" and result.error["code"] == -32014
    message = result.error["message"]
    assert "shop.nope" in message
    for table in _objects(direct, shop):
        assert f"shop.{table}" in message


async def test_variants_reach_the_same_table_over_stdio(databases_host, shop: Path, direct: Any) -> None:
    async with databases_host() as host:
        for text in ('"shop"."orders"', "shop/orders", "[shop].[orders]"):
            result = await host.call("autocontext", {"resource_id": text}, direct.sqlite_meta(shop))
            assert not result.is_error, (text, result.error)
            assert result.system_info["resource_id"] == "shop.orders"


def _single_table_database(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL)")
    conn.execute("INSERT INTO orders (total) VALUES (9.5)")
    conn.commit()
    conn.close()
    return path


@pytest.mark.parametrize("file_name", ["shop.sqlite", "shop.v2.sqlite"])
async def test_every_listed_resource_id_is_accepted(
    databases_host, tmp_path: Path, direct: Any, file_name: str
) -> None:
    """Spec 6.3: each listed resource_id is "ready to use as an argument", whatever the file is called."""
    path = _single_table_database(tmp_path / "files" / file_name)
    meta = direct.sqlite_meta(path)
    async with databases_host() as host:
        listed = await host.call("autocontext", {}, meta)
        ids = [r["resource_id"] for r in listed.model_response["resources"]]
        assert len(ids) == 2
        for resource_id in ids:
            context = await host.call("autocontext", {"resource_id": resource_id}, meta)
            assert not context.is_error, (resource_id, context.error)
            query = await host.call(
                "execute_sql", {"resource_id": resource_id, "sql": "SELECT count(*) AS n FROM orders"}, meta
            )
            assert query.rows() == [{"n": 1}], (resource_id, query.error)
