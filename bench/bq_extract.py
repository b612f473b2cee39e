"""Large BigQuery extraction through the fake: the connector against the bare client, same job.

The fake BigQuery (``tests/fakes/bigquery.py``) runs in this process on 127.0.0.1. The query
generates N rows × 6 columns in BigQuery SQL (the formulas of ``db_extract.py``: an INT64 id, a
DATE, a STRING of 7 values, a FLOAT64, a NUMERIC and a TIMESTAMP), so it reads no table.

* **connector**: ``execute_query`` on a fresh ``python -m connectors.bigquery`` server driven over
  stdio by the ACP test host, ``row_limit`` 25: dry run, job, every result page read over REST
  into the ``table_uri`` file. Client-side wall time of the one call; the server's peak RSS is its
  ``VmHWM`` read right after the call.
* **baseline** (same job, in its own interpreter): the bare ``google-cloud-bigquery`` client pages
  the finished job's result with ``job.result(page_size=…)`` (REST ``getQueryResults``, what
  ``list_rows`` does for a job) into a list and writes it with one ``orjson.dumps``; and, when the
  baseline interpreter has ``pyarrow``, ``to_arrow(create_bqstorage_client=False)``. The baseline
  does not run the query: it only downloads, so the ratio is conservative for the connector.

Each size runs ``--repeat`` times, connector then baseline; medians are reported. Target: ratio
≤ 1.5× and a connector peak RSS that does not grow with the row count.

    .venv/bin/python bench/bq_extract.py [--rows 250000,1000000] [--repeat 3]
                                         [--baseline-python /path/to/python-with-pyarrow]
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
from bench.db_extract import proc_status_kb  # noqa: E402

PROJECT = "bench-proj"
PAGE_SIZE = 20_000  # the connector's page size
ROW_LIMIT = 25
TARGET_RATIO = 1.5
INLINE_ROWS_MAX = 100_000
SCOPES = ["https://www.googleapis.com/auth/bigquery"]


def query(rows: int) -> str:
    return (
        "SELECT x AS id, DATE_ADD(DATE '2020-01-01', INTERVAL MOD(x, 1826) DAY) AS order_date, "
        "['new', 'paid', 'packed', 'shipped', 'delivered', 'returned', 'cancelled'][OFFSET(MOD(x, 7))] AS status, "
        "MOD(x * 7919, 1000003) / 100 AS amount, CAST(MOD(x * 104729, 100000000) AS NUMERIC) / 100 AS price, "
        "TIMESTAMP_ADD(TIMESTAMP '2020-01-01 00:00:00+00', INTERVAL MOD(x * 37, 157766400) SECOND) AS created_at "
        f"FROM UNNEST(GENERATE_ARRAY(1, {rows})) AS x"
    )


# -- connector ---------------------------------------------------------------------------------------
async def run_connector(url: str, info: dict[str, Any], rows: int, scratch: Path) -> dict[str, Any]:
    import psutil

    from shared.host import AcpHost, uri_path

    env = {"ACP_BIGQUERY_ENDPOINT": url, "ACP_TMP_DIR": str(scratch / "tmp"), "ACP_CACHE_DIR": str(scratch / "cache")}
    credentials = {"type": "service_account", "service_account": json.dumps(info)}
    meta = {
        "credentials": credentials,
        "row_limit": ROW_LIMIT,
        "default_resource_id": PROJECT,
        "autocontext_delivered": True,
    }
    async with AcpHost.for_module("bigquery", env=env, cwd=ROOT, read_timeout_s=max(120.0, rows / 2000)) as host:
        (pid,) = [p.pid for p in psutil.Process().children() if "connectors.bigquery" in " ".join(p.cmdline())]
        warm = await host.call("execute_query", {"query": query(10)}, meta)  # lazy imports, token, client
        if warm.is_error:
            raise RuntimeError(f"warm-up failed: {warm.text[:500]}\n{host.stderr()[-2000:]}")
        idle_kb = proc_status_kb(pid, "VmRSS")
        progress: list[dict[str, Any]] = []
        start = time.perf_counter_ns()
        response = await host.call("execute_query", {"query": query(rows)}, meta, progress=progress)
        elapsed = time.perf_counter_ns() - start
        hwm_kb = proc_status_kb(pid, "VmHWM")
        data = response.system_data or {}
        # Past inline_max_bytes (5 MiB, about 50,000 rows here) the table must be a file.
        expected = ("file",) if rows >= INLINE_ROWS_MAX else ("file", "inline")
        if response.is_error or data.get("format") not in expected or data.get("row_count") != rows:
            raise RuntimeError(f"unexpected answer: {response.text[:500]} stderr={host.stderr()[-2000:]}")
        if data["format"] == "file":
            path = uri_path(str(data["table_uri"]))
            size = path.stat().st_size
            path.unlink()
        else:
            size = len(json.dumps(data["table"], separators=(",", ":")))
        source = response.system_info["source"]
    return {
        "seconds": elapsed / 1e9,
        "hwm_kb": hwm_kb,
        "idle_kb": idle_kb,
        "bytes": size,
        "job_id": source["job_id"],
        "location": source["location"],
        "progress_notifications": len(progress),
        "types": [h["type"] for h in data["headers"]],
    }


# -- baseline (its own interpreter) -------------------------------------------------------------------
def baseline_child(spec: dict[str, Any]) -> dict[str, Any]:
    import orjson
    from google.cloud import bigquery
    from google.oauth2 import service_account

    credentials = service_account.Credentials.from_service_account_info(spec["info"], scopes=SCOPES)
    client = bigquery.Client(project=PROJECT, credentials=credentials, client_options={"api_endpoint": spec["url"]})
    client.list_datasets(PROJECT, max_results=1)  # the token, as the connector's warm-up call gets it
    out: dict[str, Any] = {}
    start = time.perf_counter_ns()
    job = client.get_job(spec["job_id"], location=spec["location"])
    result = job.result(page_size=PAGE_SIZE)
    names = [field.name for field in result.schema]
    rows = [dict(zip(names, row.values(), strict=True)) for row in result]
    with open(spec["out"], "wb") as file:
        file.write(orjson.dumps(rows, default=str))
    out["rows_seconds"] = (time.perf_counter_ns() - start) / 1e9
    out["rows"] = len(rows)
    del rows
    try:
        import pyarrow  # noqa: F401 - only to know whether to_arrow can run here
    except ImportError:
        out["arrow_seconds"] = None
    else:
        start = time.perf_counter_ns()
        table = client.get_job(spec["job_id"], location=spec["location"]).result(page_size=PAGE_SIZE)
        arrow = table.to_arrow(create_bqstorage_client=False)
        out["arrow_seconds"] = (time.perf_counter_ns() - start) / 1e9
        out["arrow_rows"] = arrow.num_rows
    out["hwm_kb"] = proc_status_kb("self", "VmHWM")
    return out


def run_baseline(python: str, url: str, info: dict[str, Any], job: dict[str, Any], scratch: Path) -> dict[str, Any]:
    target = scratch / "baseline.json"
    spec = {"url": url, "info": info, "job_id": job["job_id"], "location": job["location"], "out": str(target)}
    return run_child([python, str(SCRIPT), "--baseline-child"], target, stdin=json.dumps(spec))


# -- driver --------------------------------------------------------------------------------------------
def measure(rows: int, repeat: int, python: str) -> dict[str, Any]:
    import anyio
    from fakes.bigquery import FakeBigQuery

    connector: list[dict[str, Any]] = []
    baseline: list[dict[str, Any]] = []
    with FakeBigQuery() as fake, tempfile.TemporaryDirectory(prefix="bq-extract-") as tmp:
        fake.add_project(PROJECT)
        info = fake.oauth.service_account_info(PROJECT)
        scratch = Path(tmp)
        for rep in range(repeat):
            ran = anyio.run(run_connector, fake.url, info, rows, scratch)
            base = run_baseline(python, fake.url, info, ran, scratch)
            if base["rows"] != rows:
                raise RuntimeError(f"baseline read {base['rows']} rows, not {rows}")
            connector.append(ran)
            baseline.append(base)
            arrow = f", to_arrow {base['arrow_seconds']:.2f} s" if base.get("arrow_seconds") else ""
            print(
                f"[{rows:,}] {rep + 1}/{repeat} connector {ran['seconds']:6.2f} s "
                f"({rows / ran['seconds']:,.0f} rows/s, "
                f"peak RSS {ran['hwm_kb'] / 1024:.0f} MB, {ran['progress_notifications']} progress notes) | "
                f"bare client rows {base['rows_seconds']:6.2f} s{arrow}, peak RSS {base['hwm_kb'] / 1024:.0f} MB",
                flush=True,
            )
    return {"rows": rows, "connector": connector, "baseline": baseline}


def report(results: list[dict[str, Any]], repeat: int) -> None:
    print()
    print(f"execute_query of a generated N-row × 6-column result through the fake BigQuery, medians of {repeat}")
    print(f"{'rows':>10} {'connector rows/s':>17} {'bare rows/s':>12} {'ratio':>6} {'to_arrow rows/s':>16} "
          f"{'ratio':>6} {'connector peak RSS':>18} {'idle':>7} {'bare peak RSS':>14}")  # fmt: skip
    for result in results:
        rows = result["rows"]
        conn_s = statistics.median(r["seconds"] for r in result["connector"])
        base_s = statistics.median(r["rows_seconds"] for r in result["baseline"])
        arrows = [r["arrow_seconds"] for r in result["baseline"] if r.get("arrow_seconds")]
        arrow_s = statistics.median(arrows) if arrows else None
        arrow_cells = (
            f"{rows / arrow_s:>16,.0f} {conn_s / arrow_s:>5.2f}×" if arrow_s else f"{'(no pyarrow)':>16} {'':>6}"
        )
        print(
            f"{rows:>10,} {rows / conn_s:>17,.0f} {rows / base_s:>12,.0f} {conn_s / base_s:>5.2f}× {arrow_cells} "
            f"{statistics.median(r['hwm_kb'] for r in result['connector']) / 1024:>15.0f} MB "
            f"{statistics.median(r['idle_kb'] for r in result['connector']) / 1024:>4.0f} MB "
            f"{statistics.median(r['hwm_kb'] for r in result['baseline']) / 1024:>11.0f} MB"
        )
    print(f"target: ratio ≤ {TARGET_RATIO:g}× against the bare client's rows; connector peak RSS flat across sizes")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="250000,1000000", help="comma-separated result sizes")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline-python", default=sys.executable, help="interpreter for the bare client")
    parser.add_argument("--baseline-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.baseline_child:
        print(json.dumps(baseline_child(json.loads(sys.stdin.read()))))
        return 0
    results = [measure(int(n), args.repeat, args.baseline_python) for n in args.rows.split(",")]
    report(results, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
