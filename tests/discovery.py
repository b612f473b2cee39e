"""Connectors are found by their ``acp.json`` (spec 13.1): no list to keep in sync."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def connector_folders() -> list[Path]:
    return sorted(p.parent for p in (ROOT / "connectors").glob("*/acp.json"))


def connector_ids() -> list[str]:
    return [json.loads((p / "acp.json").read_text("utf-8-sig"))["id"] for p in connector_folders()]
