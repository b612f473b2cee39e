"""A seeded generator of GA4 BigQuery-export daily shards (``events_YYYYMMDD``).

The rows carry the export's main columns with the real types and nesting, so that the usual GA4 SQL
runs against them: ``event_params`` is a repeated key/value record, ``geo`` and ``device`` are
records, ``items`` is repeated, ``ecommerce`` is null except on purchases.

Determinism: each day's rows depend only on ``(seed, day, events_per_day)``, so a test can regenerate
any shard on its own and compute expected answers in Python, independently of the SQL under test.
Users come from a pool drawn from ``seed`` alone, so the same visitors return on several days
(window functions and first-touch queries over ``events_*`` have something to find).
Timestamps are strictly increasing within a day, so ``ORDER BY event_timestamp`` has no ties.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

_EVENT_PARAM_VALUE = {
    "name": "value",
    "type": "RECORD",
    "mode": "NULLABLE",
    "fields": [
        {"name": "string_value", "type": "STRING", "mode": "NULLABLE"},
        {"name": "int_value", "type": "INTEGER", "mode": "NULLABLE"},
        {"name": "float_value", "type": "FLOAT", "mode": "NULLABLE"},
        {"name": "double_value", "type": "FLOAT", "mode": "NULLABLE"},
    ],
}

GA4_EXPORT_SCHEMA: list[dict[str, Any]] = [
    {"name": "event_date", "type": "STRING", "mode": "NULLABLE", "description": "Date of the event (YYYYMMDD)."},
    {"name": "event_timestamp", "type": "INTEGER", "mode": "NULLABLE", "description": "Microseconds since epoch."},
    {"name": "event_name", "type": "STRING", "mode": "NULLABLE"},
    {
        "name": "event_params",
        "type": "RECORD",
        "mode": "REPEATED",
        "fields": [{"name": "key", "type": "STRING", "mode": "NULLABLE"}, _EVENT_PARAM_VALUE],
    },
    {"name": "user_pseudo_id", "type": "STRING", "mode": "NULLABLE"},
    {"name": "user_id", "type": "STRING", "mode": "NULLABLE"},
    {
        "name": "device",
        "type": "RECORD",
        "mode": "NULLABLE",
        "fields": [
            {"name": "category", "type": "STRING", "mode": "NULLABLE"},
            {"name": "operating_system", "type": "STRING", "mode": "NULLABLE"},
        ],
    },
    {
        "name": "geo",
        "type": "RECORD",
        "mode": "NULLABLE",
        "fields": [
            {"name": "country", "type": "STRING", "mode": "NULLABLE"},
            {"name": "city", "type": "STRING", "mode": "NULLABLE"},
        ],
    },
    {
        "name": "traffic_source",
        "type": "RECORD",
        "mode": "NULLABLE",
        "fields": [
            {"name": "source", "type": "STRING", "mode": "NULLABLE"},
            {"name": "medium", "type": "STRING", "mode": "NULLABLE"},
            {"name": "name", "type": "STRING", "mode": "NULLABLE"},
        ],
    },
    {
        "name": "ecommerce",
        "type": "RECORD",
        "mode": "NULLABLE",
        "fields": [
            {"name": "transaction_id", "type": "STRING", "mode": "NULLABLE"},
            {"name": "purchase_revenue", "type": "FLOAT", "mode": "NULLABLE"},
        ],
    },
    {
        "name": "items",
        "type": "RECORD",
        "mode": "REPEATED",
        "fields": [
            {"name": "item_id", "type": "STRING", "mode": "NULLABLE"},
            {"name": "item_name", "type": "STRING", "mode": "NULLABLE"},
            {"name": "price", "type": "FLOAT", "mode": "NULLABLE"},
            {"name": "quantity", "type": "INTEGER", "mode": "NULLABLE"},
        ],
    },
]

# Relative frequencies, roughly those of a small shop's property.
EVENT_WEIGHTS: dict[str, int] = {
    "page_view": 40,
    "user_engagement": 15,
    "scroll": 12,
    "session_start": 10,
    "view_item": 10,
    "first_visit": 5,
    "add_to_cart": 5,
    "purchase": 3,
}
_ITEM_EVENTS = {"view_item", "add_to_cart", "purchase"}
_PAGES = [
    ("/", "Home"),
    ("/shoes", "Shoes"),
    ("/shoes/blue-runner", "Blue Runner"),
    ("/bags", "Bags"),
    ("/cart", "Cart"),
    ("/checkout", "Checkout"),
    ("/blog/how-to-choose", "How to choose – guide"),
]
# City names with non-ASCII letters make STRING byte counts differ from character counts.
_PLACES = [
    ("France", "Paris"),
    ("Germany", "München"),
    ("United States", "New York"),
    ("Japan", "Tokyo"),
    ("United Kingdom", "London"),
    ("Spain", "Málaga"),
    ("Brazil", "São Paulo"),
]
_DEVICES = [("desktop", ["Windows", "Macintosh", "Linux"]), ("mobile", ["Android", "iOS"]), ("tablet", ["iOS"])]
_SOURCES = [
    ("google", "organic", "(organic)"),
    ("(direct)", "(none)", "(direct)"),
    ("newsletter", "email", "spring_sale"),
    ("facebook", "cpc", "retargeting"),
]
_CATALOG = [
    ("SKU_001", "Blue Runner", 89.0),
    ("SKU_002", "Trail Boot", 129.5),
    ("SKU_003", "City Bag", 45.25),
    ("SKU_004", "Socks (3 pack)", 12.99),
]
_SHOP_URL = "https://shop.example.com"


@dataclass(frozen=True)
class _Visitor:
    pseudo_id: str
    user_id: str | None
    device: dict[str, str]
    geo: dict[str, str]
    traffic_source: dict[str, str]


def shard_name(day: dt.date, prefix: str = "events_") -> str:
    return f"{prefix}{day:%Y%m%d}"


def as_date(value: dt.date | str) -> dt.date:
    """A date from ``date``, ``'YYYY-MM-DD'`` or ``'YYYYMMDD'``."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    text = value.strip()
    if len(text) == 8 and text.isdigit():
        return dt.date(int(text[:4]), int(text[4:6]), int(text[6:]))
    return dt.date.fromisoformat(text)


def export_days(start: dt.date | str, days: int) -> list[dt.date]:
    first = as_date(start)
    return [first + dt.timedelta(days=offset) for offset in range(days)]


def visitor_pool(seed: int, events_per_day: int) -> list[_Visitor]:
    """The property's visitors: about one per five daily events, at least ten."""
    rng = random.Random(f"ga4-visitors:{seed}:{events_per_day}")
    visitors = []
    for index in range(max(10, events_per_day // 5)):
        category, systems = rng.choices(_DEVICES, weights=[55, 40, 5])[0]
        country, city = rng.choice(_PLACES)
        source, medium, campaign = rng.choices(_SOURCES, weights=[45, 30, 15, 10])[0]
        visitors.append(
            _Visitor(
                pseudo_id=f"{rng.randrange(10**9, 10**10)}.{1_700_000_000 + index}",
                user_id=f"u{index:05d}" if rng.random() < 0.3 else None,
                device={"category": category, "operating_system": rng.choice(systems)},
                geo={"country": country, "city": city},
                traffic_source={"source": source, "medium": medium, "name": campaign},
            )
        )
    return visitors


def _param(key: str, *, string: str | None = None, integer: int | None = None, double: float | None = None) -> dict:
    return {
        "key": key,
        "value": {"string_value": string, "int_value": integer, "float_value": None, "double_value": double},
    }


def generate_day(day: dt.date | str, *, events_per_day: int = 300, seed: int = 0) -> list[dict[str, Any]]:
    """The rows of one daily shard, ordered by ``event_timestamp`` (strictly increasing)."""
    day = as_date(day)
    visitors = visitor_pool(seed, events_per_day)
    rng = random.Random(f"ga4-day:{seed}:{events_per_day}:{day.isoformat()}")
    day_start_us = int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp()) * 1_000_000
    offsets = sorted(rng.sample(range(86_400_000_000), events_per_day))
    names = rng.choices(list(EVENT_WEIGHTS), weights=list(EVENT_WEIGHTS.values()), k=events_per_day)
    event_date = f"{day:%Y%m%d}"
    rows: list[dict[str, Any]] = []
    for index, (offset, event_name) in enumerate(zip(offsets, names, strict=True)):
        visitor_index = rng.randrange(len(visitors))
        visitor = visitors[visitor_index]
        path, title = rng.choice(_PAGES)
        session_id = day_start_us // 1_000_000 + visitor_index  # one session per visitor and day
        params = [
            _param("page_location", string=_SHOP_URL + path),
            _param("page_title", string=title),
            _param("ga_session_id", integer=session_id),
        ]
        if event_name in ("user_engagement", "scroll", "page_view") and rng.random() < 0.7:
            params.append(_param("engagement_time_msec", integer=rng.randrange(100, 60_000)))
        if rng.random() < 0.6:
            params.append(_param("session_engaged", string="1"))
        if event_name == "scroll":
            params.append(_param("percent_scrolled", integer=90))
        items: list[dict[str, Any]] = []
        ecommerce = None
        if event_name in _ITEM_EVENTS:
            for item_id, item_name, price in rng.sample(_CATALOG, rng.randint(1, 3)):
                items.append(
                    {"item_id": item_id, "item_name": item_name, "price": price, "quantity": rng.randint(1, 3)}
                )
        if event_name == "purchase":
            revenue = round(sum(item["price"] * item["quantity"] for item in items), 2)
            params.append(_param("value", double=revenue))
            params.append(_param("currency", string=rng.choice(["EUR", "USD"])))
            ecommerce = {"transaction_id": f"T{event_date}-{index:05d}", "purchase_revenue": revenue}
        rows.append(
            {
                "event_date": event_date,
                "event_timestamp": day_start_us + offset,
                "event_name": event_name,
                "event_params": params,
                "user_pseudo_id": visitor.pseudo_id,
                "user_id": visitor.user_id,
                "device": dict(visitor.device),
                "geo": dict(visitor.geo),
                "traffic_source": dict(visitor.traffic_source),
                "ecommerce": ecommerce,
                "items": items,
            }
        )
    return rows


def generate_export(
    start: dt.date | str, days: int, *, events_per_day: int = 300, seed: int = 0, prefix: str = "events_"
) -> dict[str, list[dict[str, Any]]]:
    """``{shard name: rows}`` for ``days`` consecutive days from ``start``."""
    return {
        shard_name(day, prefix): generate_day(day, events_per_day=events_per_day, seed=seed)
        for day in export_days(start, days)
    }


def event_param(row: dict[str, Any], key: str) -> dict[str, Any] | None:
    """The ``value`` record of ``key`` in a generated row's ``event_params`` (for expected answers)."""
    return next((param["value"] for param in row["event_params"] if param["key"] == key), None)


def iter_rows(export: dict[str, list[dict[str, Any]]], prefix: str = "events_") -> Iterator[tuple[str, dict[str, Any]]]:
    """``(table suffix, row)`` over a generated export, as ``_TABLE_SUFFIX`` of ``prefix*`` sees them."""
    for name, rows in export.items():
        for row in rows:
            yield name[len(prefix) :], row
