"""What the conformance suite needs to know about each connector: how to give it a working
source. A new connector is covered by adding one entry to :data:`PROFILES`; a test fails
if a connector in ``connectors/`` (found by its ``acp.json``) has none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Source:
    """A working source for one connector, built in a test's temporary folder."""

    credentials: dict[str, Any]
    resource_id: str
    extraction: tuple[str, dict[str, Any]]  # a call returning more than 25 rows
    extraction_rows: int
    env: dict[str, str] = field(default_factory=dict)
    canary_credentials: tuple[dict[str, Any], ...] = ()  # invalid credentials carrying CANARY


@dataclass(frozen=True)
class Profile:
    connector_id: str
    build: Callable[[Path, str], Source]  # (folder, canary) -> Source


def _databases(folder: Path, canary: str) -> Source:
    from connectors.databases.demo import build_demo_database

    database = build_demo_database(folder / "shop.sqlite")
    return Source(
        credentials={"type": "sqlite", "path": str(database)},
        resource_id="shop",
        extraction=("execute_sql", {"sql": "SELECT * FROM orders WHERE order_date <= '2026-07-02' ORDER BY order_id"}),
        extraction_rows=_count(database, "SELECT count(*) FROM orders WHERE order_date <= '2026-07-02'"),
        canary_credentials=(
            {"type": "sqlite", "path": str(database), "password": canary},
            {"type": "postgres", "password": canary},
            {"type": "sqlite", "path": canary},
        ),
    )


def _count(database: Path, sql: str) -> int:
    import sqlite3

    with sqlite3.connect(database) as conn:
        return int(conn.execute(sql).fetchone()[0])


PROFILES: dict[str, Profile] = {
    "databases": Profile("databases", _databases),
}
