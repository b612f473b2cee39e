"""The demo: a generated shop database and a scripted ACP session against it.

``python -m connectors.databases.demo`` builds about 90 days of orders and revenue by
channel (deterministic: the same file every time), starts the databases connector over
stdio through the core's test host, and prints, for each step, what the model sees and
what the host stores.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

FIRST_DAY = dt.date(2026, 7, 1)
DAYS = 90
CHANNELS = (
    ("Organic Search", "organic", 0.34),
    ("Paid Search", "paid", 0.22),
    ("Direct", "direct", 0.18),
    ("Email", "owned", 0.12),
    ("Social", "paid", 0.09),
    ("Referral", "organic", 0.05),
)
COUNTRIES = (("ES", 0.45), ("FR", 0.2), ("DE", 0.15), ("IT", 0.12), ("PT", 0.08))
STATUSES = (("completed", 0.9), ("refunded", 0.06), ("cancelled", 0.04))


def build_demo_database(path: str | Path, seed: int = 7) -> Path:
    """Write the demo database to ``path`` (replacing it) and return the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    rng = random.Random(seed)  # noqa: S311 - reproducible demo data, not security
    conn = sqlite3.connect(target)
    try:
        conn.executescript(
            """
            CREATE TABLE channels (
                channel_id INTEGER PRIMARY KEY,
                name TEXT NOT NULL UNIQUE,
                kind TEXT NOT NULL
            );
            CREATE TABLE orders (
                order_id INTEGER PRIMARY KEY,
                order_date DATE NOT NULL,
                channel_id INTEGER NOT NULL REFERENCES channels(channel_id),
                country TEXT NOT NULL,
                items INTEGER NOT NULL,
                revenue NUMERIC NOT NULL,
                status TEXT NOT NULL
            );
            CREATE INDEX orders_by_date ON orders(order_date);
            CREATE VIEW daily_revenue AS
                SELECT o.order_date, c.name AS channel, count(*) AS orders, round(sum(o.revenue), 2) AS revenue
                FROM orders o JOIN channels c USING (channel_id)
                WHERE o.status = 'completed'
                GROUP BY o.order_date, c.name;
            """
        )
        conn.executemany(
            "INSERT INTO channels VALUES (?, ?, ?)", [(i + 1, name, kind) for i, (name, kind, _) in enumerate(CHANNELS)]
        )
        rows = []
        for offset in range(DAYS):
            day = FIRST_DAY + dt.timedelta(days=offset)
            weekly = 1.25 if day.weekday() < 5 else 0.8
            trend = 1 + offset / (DAYS * 3)
            for _ in range(int(rng.gauss(55, 6) * weekly * trend)):
                channel = rng.choices(range(1, len(CHANNELS) + 1), [w for *_, w in CHANNELS])[0]
                country = rng.choices([c for c, _ in COUNTRIES], [w for _, w in COUNTRIES])[0]
                status = rng.choices([s for s, _ in STATUSES], [w for _, w in STATUSES])[0]
                items = 1 + min(int(rng.expovariate(0.8)), 9)
                revenue = round(items * rng.uniform(12, 60), 2)
                rows.append((day.isoformat(), channel, country, items, revenue, status))
        conn.executemany(
            "INSERT INTO orders (order_date, channel_id, country, items, revenue, status) VALUES (?, ?, ?, ?, ?, ?)",
            rows,
        )
        conn.commit()
    finally:
        conn.close()
    return target


def _pretty(value: Any, indent: str = "") -> str:
    """JSON with short values kept on one line, so rows read as rows."""
    flat = json.dumps(value, ensure_ascii=False)
    if len(flat) + len(indent) <= 110 or not isinstance(value, (dict, list)) or not value:
        return flat
    inner = indent + "  "
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k)}: {_pretty(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    return "[\n" + ",\n".join(inner + _pretty(v, inner) for v in value) + f"\n{indent}]"


def _show(title: str, value: Any) -> None:
    print(f"\n── {title} " + "─" * max(4, 76 - len(title)))
    print(_pretty(value))


async def run_session(database: Path, workdir: Path) -> None:
    from shared.host import AcpHost

    env = {"ACP_TMP_DIR": str(workdir / "tmp"), "ACP_CACHE_DIR": str(workdir / "cache")}
    credentials = {"type": "sqlite", "path": str(database)}
    async with AcpHost.for_module("databases", env=env) as host:
        capability = host.server_capability or {}
        summary = {k: capability.get(k) for k in ("version", "defaults", "resource_id", "extraction_tools", "cost")}
        _show("1. The server announces ACP (initialize → capabilities.experimental.acp)", summary)
        effective = await host.configure(credentials=credentials, default_resource_id=database.stem, row_limit=10)
        _show("2. The host configures the session (acp/configure → effective, no secrets)", effective)

        suggestions = await host.call("autocontext", {})
        _show("3. autocontext without a resource: what the model sees", suggestions.model_response)

        context = await host.call(
            "autocontext", {"resource_id": database.stem, "request_data": ["tables", "date_ranges"]}
        )
        _show("4. autocontext for the database: what the model sees", context.model_response)

        template = (
            "SELECT order_date, channel, orders, revenue FROM daily_revenue "
            "WHERE order_date BETWEEN '{{start_date}}' AND '{{end_date}}' ORDER BY order_date, channel"
        )
        window = ("2026-09-01", "2026-09-28")
        sql = template.replace("{{start_date}}", window[0]).replace("{{end_date}}", window[1])
        print(f"\nThe model wrote:  {template}\nThe host substituted the window {window[0]} → {window[1]}.")
        # The host injected the autocontext in step 4, so it says so (spec 7.5).
        result = await host.call("execute_sql", {"sql": sql}, {"sampling": "spread", "autocontext_delivered": True})
        _show("5. execute_sql: what the model sees (content[0].text)", result.model_response)
        data = result.system_data or {}
        stored = {
            "format": data.get("format"),
            "row_count": data.get("row_count"),
            "headers": data.get("headers"),
            "first_rows": result.rows()[:3],
        }
        _show("6. execute_sql: what the host stores (_meta.acp.system_data)", stored)
        info = result.system_info
        _show("7. execute_sql: system_info for the host", {k: info[k] for k in ("title", "arguments", "messages")})

        refused = await host.call("execute_sql", {"sql": "DELETE FROM orders"})
        _show("8. A write attempt: what the model sees", refused.model_response)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Scripted ACP session against the demo SQLite database.")
    parser.add_argument("--database", help="where to write the demo database (default: a temporary folder)")
    parser.add_argument("--build-only", action="store_true", help="only write the database and print its path")
    args = parser.parse_args(argv)
    import anyio

    with tempfile.TemporaryDirectory(prefix="acp-demo-") as scratch:
        workdir = Path(scratch)
        database = build_demo_database(args.database or workdir / "shop.sqlite")
        print(f"Demo database: {database}", file=sys.stderr)
        if args.build_only:
            print(database)
            return
        anyio.run(run_session, database.resolve(), workdir)


if __name__ == "__main__":
    main()
