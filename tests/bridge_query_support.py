"""Datasets for the acp_query tests: CSV files written as the store writes them (RFC 4180, a header
row, CRLF, empty cell = NULL, booleans ``true``/``false``, ISO dates), and a ``lookup`` like
``DatasetStore.get``."""

from __future__ import annotations

import csv
import datetime as dt
import difflib
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bridge.datasets import Dataset
from shared.errors import TableNotFound
from shared.protocol import Header

VENTAS_HEADERS: list[Header] = [
    {"name": "fecha", "type": "date"},
    {"name": "channel", "type": "string"},
    {"name": "country", "type": "string"},
    {"name": "pedidos", "type": "integer"},
    {"name": "importe", "type": "number"},
    {"name": "ajuste", "type": "integer"},
    {"name": "is_new", "type": "boolean"},
    {"name": "nota", "type": "string"},
    {"name": "creado", "type": "datetime"},
]
CANALES_HEADERS: list[Header] = [
    {"name": "channel", "type": "string"},
    {"name": "label", "type": "string"},
    {"name": "objetivo", "type": "number"},
    {"name": "lanzado", "type": "date"},
    {"name": "activo", "type": "boolean"},
    {"name": "meta", "type": "json"},
]


def cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return str(value)


def write_dataset(folder: Path, dataset_id: str, headers: list[Header], rows: Sequence[Sequence[Any]]) -> Dataset:
    path = folder / f"{dataset_id}.csv"
    with path.open("w", encoding="utf-8", newline="") as file:
        writer = csv.writer(file, lineterminator="\r\n")
        writer.writerow([h["name"] for h in headers])
        writer.writerows([cell(v) for v in row] for row in rows)
    return Dataset(id=dataset_id, csv_path=path, headers=headers, row_count=len(rows), meta={"id": dataset_id})


def ventas_rows(count: int = 400, seed: int = 16) -> list[list[Any]]:
    """Sales by day, channel and country, with NULLs, negatives, mixed case and non-ASCII text."""
    rng = random.Random(seed)
    channels = ["web", "shop", "app", "Phone", None]
    countries = ["ES", "FR", "Éire", "DE", "İzmir", "pt"]
    notes = ["Promo", "promo 10%", "PROMO_X", "regalo", "Ñandú", "wEb order", None, "a_b", "x%y"]
    start = dt.date(2026, 5, 1)
    rows = []
    for index in range(count):
        day = start + dt.timedelta(days=index * 150 // count)
        importe = None if rng.random() < 0.05 else round(rng.uniform(-20, 900), 2)
        is_new = None if rng.random() < 0.05 else rng.random() < 0.4
        # Unique, so that ORDER BY creado is a total order.
        created = dt.datetime(day.year, day.month, day.day) + dt.timedelta(seconds=(index * 7919) % 86400)
        rows.append([
            day,
            rng.choice(channels),
            rng.choice(countries),
            None if rng.random() < 0.03 else rng.randrange(0, 40),
            importe,
            rng.randrange(-17, 18),
            is_new,
            rng.choice(notes),
            created,
        ])  # fmt: skip
    return rows


def canales_rows() -> list[list[Any]]:
    return [
        ["web", "Web store", 12000.0, dt.date(2019, 3, 1), True, '{"tier": 1}'],
        ["shop", "Shops", 8000.5, dt.date(2015, 1, 31), True, '{"tier": 2}'],
        ["app", "Mobile app", 4000.0, dt.date(2022, 10, 15), False, None],
        ["Phone", "phone line", None, None, None, '{"tier": 3}'],
        ["fax", "Fax", 0.0, dt.date(2001, 1, 1), False, "[]"],
    ]


def lookup_of(datasets: Sequence[Dataset]) -> Callable[[str], Dataset]:
    """A ``DatasetStore.get`` for these datasets: case-insensitive ids, TableNotFound naming the closest."""
    by_id = {d.id: d for d in datasets}

    def lookup(ref: str) -> Dataset:
        key = ref.lower()
        if key in by_id:
            return by_id[key]
        closest = difflib.get_close_matches(key, list(by_id), n=3, cutoff=0.3)
        hint = f" Closest: {', '.join(closest)}." if closest else ""
        raise TableNotFound(f"No dataset {ref!r} in acp-data.{hint} Available: {', '.join(sorted(by_id))}.")

    return lookup
