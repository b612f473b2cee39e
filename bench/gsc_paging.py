"""Search Analytics paging through the fake Search Console: the connector against the bare client, same pages.

The fake Search Console (``tests/fakes/search_console.py``) runs in this process on 127.0.0.1, with
enough generated traffic that splitting a domain property by query, page, country, device and date
over its whole history gives about ``--rows`` rows. Both sides ask for the same pages: 25,000 rows
from ``startRow`` 0, 25,000, … until an answer has no ``rows`` key. The fake's answers are computed
and cached by a first (warm-up) pull, so every measured pull reads the same cached result.

* **connector**: ``search_analytics`` on a fresh ``python -m connectors.gsc`` server driven over stdio
  by the ACP test host, ``row_limit`` 25: every page into the typed table and its ``table_uri`` file,
  totals over every row. Client-side wall time of the one call; the server's peak RSS (``VmHWM``)
  right after it.
* **baseline** (its own interpreter): the bare ``google-api-python-client`` (discovery client, the
  same service-account credentials) pages the same query, keeps every row as the API gives it and
  writes them with one ``orjson.dumps``.

Each size runs ``--repeat`` times, connector then baseline; medians are reported. Target: ratio
≤ 1.5× and a connector peak RSS that stays flat (well under 300 MB) at 200,000 rows.

    .venv/bin/python bench/gsc_paging.py [--rows 50000,200000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve()
ROOT = SCRIPT.parent.parent
for path in (ROOT, ROOT / "tests"):
    if str(path) not in sys.path:
        sys.path.append(str(path))

from bench.child import run_child  # noqa: E402 - after the path setup
from bench.connector_call import timed_extraction  # noqa: E402
from bench.db_extract import proc_status_kb  # noqa: E402

SITE = "sc-domain:example.com"
DIMENSIONS = ["query", "page", "country", "device", "date"]
PAGE_ROWS = 25_000  # the API's largest rowLimit, which the connector asks for
ROW_LIMIT = 25
TARGET_RATIO = 1.5
ROWS_PER_DAILY_FACT = 58  # rows of this split per generated fact a day, over the fake's 120 days
SCOPES = ["https://www.googleapis.com/auth/webmasters.readonly"]


def body(start: str, end: str) -> dict[str, Any]:
    return {"startDate": start, "endDate": end, "dimensions": DIMENSIONS, "type": "web", "dataState": "final"}


# -- connector ---------------------------------------------------------------------------------------
async def run_connector(spec: dict[str, Any], scratch: Path) -> dict[str, Any]:
    env = {
        "ACP_GSC_ENDPOINT": spec["url"],
        "ACP_GOOGLE_TOKEN_URI": spec["token_uri"],
        "ACP_TMP_DIR": str(scratch / "tmp"),
        "ACP_CACHE_DIR": str(scratch / "cache"),
    }
    meta = {
        "credentials": {"type": "service_account", "service_account": json.dumps(spec["info"])},
        "row_limit": ROW_LIMIT,
        "autocontext_delivered": True,
    }
    arguments = {"resource_id": SITE, "dimensions": DIMENSIONS, "start_date": spec["start"], "end_date": spec["end"]}
    warm = ("search_analytics", {"resource_id": SITE, "dimensions": ["device"]})
    return await timed_extraction("gsc", env, meta, warm, ("search_analytics", arguments), spec["rows"])


# -- baseline (its own interpreter) -------------------------------------------------------------------
def baseline_child(spec: dict[str, Any]) -> dict[str, Any]:
    import orjson
    from google.oauth2 import service_account
    from googleapiclient import discovery

    credentials = service_account.Credentials.from_service_account_info(spec["info"], scopes=SCOPES)
    service = discovery.build(
        "searchconsole",
        "v1",
        credentials=credentials,
        static_discovery=True,
        cache_discovery=False,
        client_options={"api_endpoint": spec["url"]},
    )
    service.sites().list().execute()  # the token, as the connector's warm-up call gets it
    start = time.perf_counter_ns()
    rows: list[dict[str, Any]] = []
    pages = 0
    while True:
        page = {**body(spec["start"], spec["end"]), "rowLimit": PAGE_ROWS, "startRow": len(rows)}
        answer = service.searchanalytics().query(siteUrl=SITE, body=page).execute()
        pages += 1
        if not answer.get("rows"):
            break
        rows.extend(answer["rows"])
    with open(spec["out"], "wb") as file:
        file.write(orjson.dumps(rows))
    return {
        "seconds": (time.perf_counter_ns() - start) / 1e9,
        "rows": len(rows),
        "pages": pages,
        "hwm_kb": proc_status_kb("self", "VmHWM"),
    }


def run_baseline(spec: dict[str, Any], scratch: Path) -> dict[str, Any]:
    target = scratch / "baseline.json"
    return run_child(
        [sys.executable, str(SCRIPT), "--baseline-child"], target, stdin=json.dumps({**spec, "out": str(target)})
    )


# -- driver --------------------------------------------------------------------------------------------
def warm_fake(fake: Any, info: dict[str, Any], start: str, end: str) -> int:
    """Pull the result once in this process, so the fake computes (and caches) it before any measurement."""
    from google.oauth2 import service_account
    from googleapiclient import discovery

    credentials = service_account.Credentials.from_service_account_info(info, scopes=SCOPES)
    service = discovery.build(
        "searchconsole", "v1", credentials=credentials, static_discovery=True, client_options={"api_endpoint": fake.url}
    )
    rows = 0
    while True:
        page = {**body(start, end), "rowLimit": PAGE_ROWS, "startRow": rows}
        found = service.searchanalytics().query(siteUrl=SITE, body=page).execute().get("rows")
        if not found:
            return rows
        rows += len(found)


def measure(target_rows: int, repeat: int) -> dict[str, Any]:
    import anyio
    from fakes.search_console import FakeSearchConsole

    from connectors.gsc.search import pacific_today

    facts_per_day = max(400, target_rows // ROWS_PER_DAILY_FACT)
    connector: list[dict[str, Any]] = []
    baseline: list[dict[str, Any]] = []
    with (
        FakeSearchConsole(today=pacific_today(), facts_per_day=facts_per_day) as fake,
        tempfile.TemporaryDirectory(prefix="gsc-paging-") as tmp,
    ):
        start, end = str(fake.first_date), str(fake.last_final_date(SITE))
        info = fake.oauth.service_account_info("gsc-bench")
        rows = warm_fake(fake, info, start, end)
        spec = {
            "url": fake.url,
            "token_uri": fake.oauth.token_uri,
            "info": info,
            "start": start,
            "end": end,
            "rows": rows,
        }
        scratch = Path(tmp)
        for rep in range(repeat):
            ran = anyio.run(run_connector, spec, scratch)
            base = run_baseline(spec, scratch)
            if base["rows"] != rows or base["pages"] != ran["pages"]:
                raise RuntimeError(f"the baseline read {base['rows']} rows in {base['pages']} pages, not {rows}")
            connector.append(ran)
            baseline.append(base)
            print(
                f"[{rows:,} rows, {ran['pages']} pages] {rep + 1}/{repeat} connector {ran['seconds']:6.2f} s "
                f"({rows / ran['seconds']:,.0f} rows/s, peak RSS {ran['hwm_kb'] / 1024:.0f} MB) | "
                f"bare client {base['seconds']:6.2f} s ({rows / base['seconds']:,.0f} rows/s, "
                f"peak RSS {base['hwm_kb'] / 1024:.0f} MB)",
                flush=True,
            )
    return {"rows": rows, "connector": connector, "baseline": baseline}


def report(results: list[dict[str, Any]], repeat: int) -> None:
    print()
    print(f"search_analytics split by {', '.join(DIMENSIONS)} through the fake Search Console, medians of {repeat}")
    print(f"{'rows':>9} {'pages':>6} {'connector rows/s':>17} {'bare rows/s':>12} {'ratio':>6} "
          f"{'connector peak RSS':>18} {'idle':>7} {'bare peak RSS':>14}")  # fmt: skip
    for result in results:
        rows = result["rows"]
        conn_s = statistics.median(r["seconds"] for r in result["connector"])
        base_s = statistics.median(r["seconds"] for r in result["baseline"])
        print(
            f"{rows:>9,} {result['connector'][0]['pages']:>6} {rows / conn_s:>17,.0f} {rows / base_s:>12,.0f} "
            f"{conn_s / base_s:>5.2f}× "
            f"{statistics.median(r['hwm_kb'] for r in result['connector']) / 1024:>15.0f} MB "
            f"{statistics.median(r['idle_kb'] for r in result['connector']) / 1024:>4.0f} MB "
            f"{statistics.median(r['hwm_kb'] for r in result['baseline']) / 1024:>11.0f} MB"
        )
    print(f"target: ratio ≤ {TARGET_RATIO:g}× against the bare client; connector peak RSS flat, < 300 MB at 200k rows")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="50000,200000", help="comma-separated approximate result sizes")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.baseline_child:
        print(json.dumps(baseline_child(json.loads(sys.stdin.read()))))
        return 0
    results = [measure(int(n), args.repeat) for n in args.rows.split(",")]
    report(results, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
