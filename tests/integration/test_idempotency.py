"""The idempotency key of the writing tools, end to end: the databases connector on a real SQLite file,
served in process, retried as a gateway retries (seed 002: a new request, the same key)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from host_tables import StaticTable, StaticTables

from connectors.databases import CONNECTOR as DATABASES

pytestmark = pytest.mark.anyio
HEADERS = [{"name": "day", "type": "date"}, {"name": "visits", "type": "integer"}]
ROWS = [{"day": f"2026-08-{d:02d}", "visits": d * 7} for d in range(1, 11)]


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE visits (day TEXT, visits INTEGER)")
    return path


def _stored(path: Path) -> list[tuple[str, int]]:
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT day, visits FROM visits ORDER BY rowid").fetchall()
    finally:
        conn.close()


async def test_a_retried_insert_rows_writes_once(in_process, runtime_dirs, shop: Path) -> None:
    tables = StaticTables({"ds": StaticTable(HEADERS, ROWS), "ds2": StaticTable(HEADERS, ROWS[:2])})
    meta = {"credentials": {"type": "sqlite", "path": str(shop)}, "config": {"access_mode": "readAndOnlyAdd"}}
    insert = {"resource_id": "shop.visits", "table_ref": "ds", "idempotency_key": "9f2a7c-retry-1"}
    async with in_process(DATABASES, env=runtime_dirs, tables=tables) as host:
        published = {t["name"]: t for t in await host.list_tools()}
        assert "idempotency_key" in published["insert_rows"]["inputSchema"]["properties"]
        assert "idempotency_key" in published["insert_rows"]["description"]
        assert "idempotency_key" not in published["execute_sql"]["inputSchema"]["properties"]  # reads only
        first = await host.call("insert_rows", insert, meta)
        retry = await host.call("insert_rows", insert, meta)
        other_arguments = await host.call("insert_rows", {**insert, "table_ref": "ds2"}, meta)
        without_key = await host.call("insert_rows", {"resource_id": "shop.visits", "table_ref": "ds2"}, meta)
    assert not first.is_error and first.model_response["inserted_rows"] == 10
    assert retry.model_response == first.model_response  # the first call's answer
    assert any("nothing was written again" in w for w in retry.system_info["warnings"])
    assert other_arguments.error_name == "ACP_INVALID_ARGUMENTS"
    assert "different arguments" in other_arguments.error["message"]
    assert without_key.model_response["inserted_rows"] == 2  # no key: every call writes, as before
    assert _stored(shop) == [(r["day"], r["visits"]) for r in ROWS + ROWS[:2]]
    assert [r["ref"] for r in tables.requests] == ["ds", "ds2"]  # the retry never read the host table again


async def test_a_refused_write_keeps_no_key(in_process, runtime_dirs, shop: Path) -> None:
    """A first call that failed wrote nothing (one transaction), so its retry writes."""
    tables = StaticTables({"ds": StaticTable(HEADERS, ROWS)})
    credentials = {"type": "sqlite", "path": str(shop)}
    insert = {"resource_id": "shop.visits", "table_ref": "ds", "idempotency_key": "k-1"}
    async with in_process(DATABASES, env=runtime_dirs, tables=tables) as host:
        refused = await host.call("insert_rows", insert, {"credentials": credentials})  # onlyRead by default
        allowed = await host.call(
            "insert_rows", insert, {"credentials": credentials, "config": {"access_mode": "readAndOnlyAdd"}}
        )
    assert refused.error_name == "ACP_READ_ONLY_VIOLATION"
    assert allowed.model_response["inserted_rows"] == 10 and len(_stored(shop)) == 10


async def test_a_gateway_key_in_meta_makes_the_retry_safe(in_process, runtime_dirs, shop: Path) -> None:
    """Seed 002 sends its key in the request's _meta (``com.asixto/idempotencyKey``), not in the arguments;
    an ACP host may send ``_meta.acp.idempotency_key``. A retry with either writes once."""
    tables = StaticTables({"ds": StaticTable(HEADERS, ROWS[:3])})
    acp = {"credentials": {"type": "sqlite", "path": str(shop)}, "config": {"access_mode": "readAndOnlyAdd"}}
    arguments = {"resource_id": "shop.visits", "table_ref": "ds"}
    gateway = {"acp": acp, "com.asixto/idempotencyKey": "9f2a7c-gateway", "com.asixto/requestId": "req-1"}
    host_key = {"acp": {**acp, "idempotency_key": "host-key-1"}}
    async with in_process(DATABASES, env=runtime_dirs, tables=tables) as host:
        answers = [
            await host.request("tools/call", {"name": "insert_rows", "arguments": arguments, "_meta": meta})
            for meta in (gateway, {**gateway, "com.asixto/requestId": "req-2"}, host_key, host_key)
        ]
    assert not any(a.get("isError") for a in answers)
    assert _stored(shop) == [(r["day"], r["visits"]) for r in ROWS[:3] * 2]  # once per key, not four times
    assert [r["ref"] for r in tables.requests] == ["ds", "ds"]
