"""The demo database and the scripted demo session."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from connectors.databases import demo

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    return demo.build_demo_database(tmp_path / "first" / "shop.sqlite")


def test_build_is_deterministic(shop: Path, tmp_path: Path, direct: Any) -> None:
    again = demo.build_demo_database(tmp_path / "second" / "shop.sqlite")
    first, second = direct.database_state(shop), direct.database_state(again)
    assert set(first["tables"]) >= {"channels", "orders"}
    assert second["tables"] == first["tables"]
    assert second["schema"] == first["schema"]


def test_build_replaces_an_existing_file(shop: Path, direct: Any) -> None:
    before = direct.table_checksums(shop)
    demo.build_demo_database(shop)  # written again over itself: same data, not appended
    assert direct.table_checksums(shop) == before


def test_orders_cover_about_ninety_days(shop: Path, direct: Any) -> None:
    first, last, days = direct.first_row(
        shop, "SELECT min(order_date), max(order_date), count(DISTINCT order_date) FROM orders"
    )
    assert (first, last) == ("2026-07-01", "2026-09-28")
    assert (dt.date.fromisoformat(last) - dt.date.fromisoformat(first)).days + 1 == days == 90


def test_orders_exist_for_all_six_channels(shop: Path, direct: Any) -> None:
    channels = direct.query(shop, "SELECT channel_id, name FROM channels ORDER BY channel_id")
    assert len(channels) == 6
    assert [c["name"] for c in channels] == [name for name, _, _ in demo.CHANNELS]
    used = direct.query(shop, "SELECT channel_id, count(*) AS n FROM orders GROUP BY channel_id ORDER BY channel_id")
    assert [u["channel_id"] for u in used] == [c["channel_id"] for c in channels]
    assert all(u["n"] > 0 for u in used)
    orphans = direct.scalar(
        shop, "SELECT count(*) FROM orders WHERE channel_id NOT IN (SELECT channel_id FROM channels)"
    )
    assert orphans == 0


def test_demo_session_prints_both_views_and_refuses_the_write() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "connectors.databases.demo"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    out = completed.stdout
    assert "what the model sees" in out and "what the host stores" in out
    write_step = out[out.rindex("what the model sees") :]  # the last step is the write attempt
    assert "ACP_READ_ONLY_VIOLATION" in write_step and "-32019" in write_step
    assert "Traceback" not in completed.stderr
