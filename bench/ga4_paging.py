"""run_report paging through the fake GA4: the connector against the bare Data API client, same pages.

The fake GA4 (``tests/fakes/ga4.py``) runs in this process on 127.0.0.1. One report over the fake's whole
history, split finely enough (``DIMENSIONS``) to have tens of thousands of rows, is read in pages of
``--page-size`` rows (``offset`` 0, N, 2N… until ``rowCount``) by both sides; a first pull in this process
warms the fake and counts the rows.

* **connector**: ``run_report`` on a fresh ``python -m connectors.ga4`` server driven over stdio by the ACP
  test host, ``row_limit`` 25, ``page_size`` set through ``_meta.acp.config``: every page into the typed table
  (and its ``table_uri`` file), GA4's totals asked for with the first page. Client-side wall time of the
  second of two identical calls (the first warms imports, token, account summaries, metadata and the fake's
  answers); the server's peak RSS (``VmHWM``) right after it.
* **bare client** (its own interpreter): ``BetaAnalyticsDataClient`` (REST, the same service account) pages the
  same request and keeps every row as lists of the API's strings, then writes them with one ``orjson.dumps``:
  once reading the rows through the proto-plus wrappers (``response.rows``, the documented way), once from
  the underlying protobuf (``RunReportResponse.pb(response)``, what the connector does).

Each size runs ``--repeat`` times, connector then bare client; medians are reported. Target: ratio ≤ 1.5×
against the proto-plus reading, and a connector peak RSS that stays flat.

    .venv/bin/python bench/ga4_paging.py [--events-per-day 2000,6000] [--page-size 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import datetime as dt
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

DIMENSIONS = ["date", "sessionSource", "deviceCategory", "country", "pagePath"]
METRICS = ["screenPageViews", "eventCount", "sessions", "totalUsers"]
ROW_LIMIT = 25
TARGET_RATIO = 1.5
SCOPES = ["https://www.googleapis.com/auth/analytics.readonly"]


def request_fields(spec: dict[str, Any]) -> dict[str, Any]:
    """The report both sides read (the snake_case fields of RunReportRequest), without offset and limit."""
    return {
        "property": f"properties/{spec['property']}",
        "date_ranges": [{"start_date": spec["start"], "end_date": spec["end"]}],
        "dimensions": [{"name": name} for name in DIMENSIONS],
        "metrics": [{"name": name} for name in METRICS],
    }


def data_client(spec: dict[str, Any]) -> Any:
    """The Data API client over REST, as the connector builds it: a token from the (fake's) token endpoint."""
    from google.analytics.data_v1beta import BetaAnalyticsDataClient
    from google.analytics.data_v1beta.services.beta_analytics_data.transports.rest import (
        BetaAnalyticsDataRestTransport,
    )
    from google.oauth2 import service_account

    credentials = service_account.Credentials.from_service_account_info(spec["info"], scopes=SCOPES)
    transport = BetaAnalyticsDataRestTransport(host=spec["url"], credentials=credentials, always_use_jwt_access=False)
    return BetaAnalyticsDataClient(transport=transport)


def page_through(client: Any, spec: dict[str, Any], read: Any) -> tuple[list[list[str]], int]:
    """Every row of the report, ``spec["page_size"]`` at a time: (rows, pages)."""
    from google.analytics.data_v1beta import RunReportRequest

    rows: list[list[str]] = []
    pages = 0
    while True:
        request = RunReportRequest(**request_fields(spec), offset=len(rows), limit=spec["page_size"])
        response = client.run_report(request)
        pages += 1
        rows.extend(read(response))
        if not response.rows or len(rows) >= response.row_count:
            return rows, pages


def rows_through_wrappers(response: Any) -> list[list[str]]:
    return [[v.value for v in row.dimension_values] + [v.value for v in row.metric_values] for row in response.rows]


def rows_from_protobuf(response: Any) -> list[list[str]]:
    message = type(response).pb(response)
    return [[v.value for v in row.dimension_values] + [v.value for v in row.metric_values] for row in message.rows]


# -- connector ---------------------------------------------------------------------------------------
async def run_connector(spec: dict[str, Any], scratch: Path) -> dict[str, Any]:
    env = {
        "ACP_GA4_DATA_ENDPOINT": spec["url"],
        "ACP_GA4_ADMIN_ENDPOINT": spec["admin_url"],
        "ACP_GOOGLE_TOKEN_URI": spec["token_uri"],
        "ACP_TMP_DIR": str(scratch / "tmp"),
        "ACP_CACHE_DIR": str(scratch / "cache"),
    }
    meta = {
        "credentials": {"type": "service_account", "service_account": json.dumps(spec["info"])},
        "row_limit": ROW_LIMIT,
        "autocontext_delivered": True,
        "config": {"page_size": spec["page_size"]},
    }
    arguments = {
        "resource_id": spec["property"],
        "dimensions": DIMENSIONS,
        "metrics": METRICS,
        "start_date": spec["start"],
        "end_date": spec["end"],
    }
    # The warm call is the same report: the fake's answers are then cached for both sides, and the first
    # page's totals too.
    call = ("run_report", arguments)
    return await timed_extraction("ga4", env, meta, call, call, spec["rows"])


# -- bare client (its own interpreter) -----------------------------------------------------------------
def baseline_child(spec: dict[str, Any]) -> dict[str, Any]:
    import orjson
    from google.analytics.data_v1beta import RunReportRequest

    client = data_client(spec)
    client.run_report(RunReportRequest(**request_fields(spec), limit=1))  # the token, as the connector's warm-up
    results: dict[str, Any] = {}
    for name, read in (("wrappers", rows_through_wrappers), ("protobuf", rows_from_protobuf)):
        start = time.perf_counter_ns()
        rows, pages = page_through(client, spec, read)
        with open(spec["out"], "wb") as file:
            file.write(orjson.dumps(rows))
        results[name] = {"seconds": (time.perf_counter_ns() - start) / 1e9, "rows": len(rows), "pages": pages}
        del rows
    results["hwm_kb"] = proc_status_kb("self", "VmHWM")
    return results


def run_baseline(spec: dict[str, Any], scratch: Path) -> dict[str, Any]:
    target = scratch / "baseline.json"
    return run_child(
        [sys.executable, str(SCRIPT), "--baseline-child"], target, stdin=json.dumps({**spec, "out": str(target)})
    )


# -- driver --------------------------------------------------------------------------------------------
def measure(events_per_day: int, page_size: int, repeat: int) -> dict[str, Any]:
    import anyio
    from fakes.ga4 import FakeGA4
    from ga4_support import PROPERTY, service_account

    connector: list[dict[str, Any]] = []
    baseline: list[dict[str, Any]] = []
    with FakeGA4(events_per_day=events_per_day) as fake, tempfile.TemporaryDirectory(prefix="ga4-paging-") as tmp:
        fake.set_tokens(PROPERTY, per_day=10**9, per_hour=10**9)  # repeated large reads would spend a real quota
        today = fake.today(PROPERTY)
        spec: dict[str, Any] = {
            "url": fake.data_url,
            "admin_url": fake.admin_url,
            "token_uri": fake.oauth.token_uri,
            "info": json.loads(service_account(fake)["service_account"]),
            "property": PROPERTY,
            "start": str(today - dt.timedelta(days=fake.data.days)),  # the fake's whole history
            "end": str(today),
            "page_size": page_size,
        }
        rows, _ = page_through(data_client(spec), spec, rows_from_protobuf)  # warms the fake, counts the rows
        spec["rows"] = len(rows)
        del rows
        scratch = Path(tmp)
        for rep in range(repeat):
            ran = anyio.run(run_connector, spec, scratch)
            base = run_baseline(spec, scratch)
            for name in ("wrappers", "protobuf"):
                if base[name]["rows"] != spec["rows"] or base[name]["pages"] != ran["pages"]:
                    raise RuntimeError(f"the bare client ({name}) read {base[name]} and the connector {ran}")
            connector.append(ran)
            baseline.append(base)
            total = spec["rows"]
            print(
                f"[{total:,} rows, {ran['pages']} pages] {rep + 1}/{repeat} connector {ran['seconds']:6.2f} s "
                f"({total / ran['seconds']:,.0f} rows/s, peak RSS {ran['hwm_kb'] / 1024:.0f} MB) | bare client "
                f"{base['wrappers']['seconds']:6.2f} s ({total / base['wrappers']['seconds']:,.0f} rows/s), from the "
                f"protobuf {base['protobuf']['seconds']:6.2f} s ({total / base['protobuf']['seconds']:,.0f} rows/s), "
                f"peak RSS {base['hwm_kb'] / 1024:.0f} MB",
                flush=True,
            )
    return {"rows": spec["rows"], "connector": connector, "baseline": baseline}


def report(results: list[dict[str, Any]], repeat: int, page_size: int) -> None:
    print()
    print(f"run_report split by {', '.join(DIMENSIONS)}, pages of {page_size:,} rows, medians of {repeat}")
    print(f"{'rows':>9} {'pages':>6} {'connector rows/s':>17} {'bare rows/s':>12} {'ratio':>6} "
          f"{'protobuf rows/s':>16} {'ratio':>6} {'connector peak RSS':>18} {'warm':>7} "
          f"{'bare peak RSS':>14}")  # fmt: skip
    for result in results:
        rows = result["rows"]
        conn_s = statistics.median(r["seconds"] for r in result["connector"])
        wrappers_s = statistics.median(r["wrappers"]["seconds"] for r in result["baseline"])
        protobuf_s = statistics.median(r["protobuf"]["seconds"] for r in result["baseline"])
        print(
            f"{rows:>9,} {result['connector'][0]['pages']:>6} {rows / conn_s:>17,.0f} {rows / wrappers_s:>12,.0f} "
            f"{conn_s / wrappers_s:>5.2f}× {rows / protobuf_s:>16,.0f} {conn_s / protobuf_s:>5.2f}× "
            f"{statistics.median(r['hwm_kb'] for r in result['connector']) / 1024:>15.0f} MB "
            f"{statistics.median(r['idle_kb'] for r in result['connector']) / 1024:>4.0f} MB "
            f"{statistics.median(r['hwm_kb'] for r in result['baseline']) / 1024:>11.0f} MB"
        )
    print(f"target: ratio ≤ {TARGET_RATIO:g}× against the bare client (proto-plus rows); connector peak RSS flat")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events-per-day", default="2000,6000", help="comma-separated sizes of the fake's days")
    parser.add_argument("--page-size", type=int, default=10_000, help="rows per runReport page, both sides")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.baseline_child:
        print(json.dumps(baseline_child(json.loads(sys.stdin.read()))))
        return 0
    results = [measure(int(n), args.page_size, args.repeat) for n in args.events_per_day.split(",")]
    report(results, args.repeat, args.page_size)
    return 0


if __name__ == "__main__":
    sys.exit(main())
