"""Helpers for the BigQuery connector tests (the fixtures are in tests/connectors/bigquery/conftest.py):
the fake's data, credentials it accepts, the server's environment and ``_meta.acp``.

Expected values are computed from the fake's stored rows (``fake.rows``) in plain Python,
never with the connector's own code.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from fakes.bigquery import FakeBigQuery

PROJECT = "acp-test-proj"
DATASET = "analytics_123"
GA4_START = dt.date(2026, 9, 1)
GA4_DAYS = 7
GA4_EVENTS_PER_DAY = 200


DAILY_SCHEMA = [
    {"name": "day", "type": "DATE", "description": "Calendar day"},
    {"name": "country", "type": "STRING"},
    {"name": "sessions", "type": "INTEGER"},
    {"name": "revenue", "type": "NUMERIC"},
    {"name": "conversion_rate", "type": "FLOAT"},
    {"name": "is_weekend", "type": "BOOLEAN"},
    {"name": "updated_at", "type": "TIMESTAMP"},
    {"name": "raw", "type": "BYTES"},
    {"name": "tags", "type": "STRING", "mode": "REPEATED"},
    {"name": "device", "type": "RECORD", "fields": [{"name": "category", "type": "STRING"}]},
]


def daily_rows() -> list[dict[str, Any]]:
    from decimal import Decimal

    rows = []
    for i in range(60):
        day = dt.date(2026, 8, 1) + dt.timedelta(days=i // 2)
        rows.append(
            {
                "day": day.isoformat(),
                "country": ("ES", "FR")[i % 2],
                "sessions": 100 + i,
                "revenue": str(Decimal("10.05") * (i + 1)),
                "conversion_rate": round(0.01 * (i % 7), 4),
                "is_weekend": day.weekday() >= 5,
                "updated_at": f"{day.isoformat()}T12:30:00Z",
                "raw": "AAEC",  # base64 of 00 01 02
                "tags": ["a", "b"] if i % 3 == 0 else [],
                "device": {"category": ("mobile", "desktop")[i % 2]},
            }
        )
    return rows


def service_account(fake: FakeBigQuery, project: str = PROJECT) -> dict[str, Any]:
    return {"type": "service_account", "service_account": json.dumps(fake.oauth.service_account_info(project))}


def bq_env(fake: FakeBigQuery, tmp: Path) -> dict[str, str]:
    cache, files = tmp / "acp-cache", tmp / "acp-tmp"
    cache.mkdir(exist_ok=True)
    files.mkdir(exist_ok=True)
    return {
        "ACP_BIGQUERY_ENDPOINT": fake.url,
        "ACP_GOOGLE_TOKEN_URI": fake.oauth.token_uri,
        "ACP_BIGQUERY_RETRY_S": "3",
        "ACP_CACHE_DIR": str(cache),
        "ACP_TMP_DIR": str(files),
    }


def meta(credentials: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """``_meta.acp`` for a call: credentials, a $1 limit, the dataset as default, no first-call autocontext."""
    return {
        "credentials": credentials,
        "cost_limit_usd": 1,
        "default_resource_id": f"{PROJECT}.{DATASET}",
        "autocontext_delivered": True,
        **extra,
    }


def ga4_rows(fake: FakeBigQuery, first: str = "20260901", last: str = "20260907") -> list[dict[str, Any]]:
    """The stored GA4 events of the shards between two suffixes (inclusive), straight from the fake."""
    out: list[dict[str, Any]] = []
    day = GA4_START
    for _ in range(GA4_DAYS):
        suffix = day.strftime("%Y%m%d")
        if first <= suffix <= last:
            out.extend(fake.rows(PROJECT, DATASET, f"events_{suffix}"))
        day += dt.timedelta(days=1)
    return out
