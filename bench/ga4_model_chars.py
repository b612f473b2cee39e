"""What the model reads of a 1,000-row GA4 report: this connector's answer next to the official GA4 MCP server's.

The fake GA4 (``tests/fakes/ga4.py``) runs in this process on 127.0.0.1. One report, 1,000 rows (``limit``
1,000 of a larger one, dimensions and metrics below), is asked for twice on the same fake:

* **connector**: ``run_report`` through ``shared.host.AcpHost``, the connector served in this process, with
  ``row_limit`` 25 (its default) and again with ``row_limit`` 1,000 (every row to the model, for the format
  alone): the characters of ``content[0].text``, which is what the model reads. The host keeps the 1,000 rows
  in ``system_data`` either way.
* **official server** (`googleanalytics/google-analytics-mcp`): its ``run_report`` tool answers one Data API
  request with the whole ``RunReportResponse`` converted to a dict and serialized as indented JSON; every row
  reaches the model. Its format is reproduced here from its source (format only; none of its code is used),
  read at these commits:

  - ``analytics_mcp/tools/reporting/core.py`` @ 0d5310ba338cb1a820a180535af05dd3a6786da9: ``run_report``
    builds one ``RunReportRequest`` (no ``metric_aggregations``, so no totals; no ``limit`` unless the model
    gives one, and the API's default is 10,000 rows, so a 1,000-row report arrives whole) and returns
    ``proto_to_dict(response)``;
  - ``analytics_mcp/tools/utils.py`` @ 08a5dc06d4541741d37fb73ad558978056a176d8 (the same function at
    23ee8b1eac25a109d6378c0a34e98fd6029dbc21): ``proto_to_dict`` is proto-plus's ``Message.to_dict`` with
    ``use_integers_for_enums=False`` and ``preserving_proto_field_name=True`` (snake_case names, enum names,
    fields left at their defaults printed too);
  - ``analytics_mcp/coordinator.py`` @ e25fda58674d1c67a00d126b006654b33c12b0d4: the MCP ``call_tool``
    handler returns ``json.dumps(result, indent=2)`` as the one ``TextContent``.

  The bench asks the fake for the same report with the real ``BetaAnalyticsDataClient`` (REST) and formats
  the ``RunReportResponse`` it gets that way: ``to_dict`` with those two arguments, then ``json.dumps`` with
  ``indent=2``.

Both sides must hold the same 1,000 rows (checked: row count and each metric's sum). Tokens ≈ characters / 4.

    .venv/bin/python bench/ga4_model_chars.py [--rows 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "tests"):
    if str(path) not in sys.path:
        sys.path.append(str(path))

DIMENSIONS = ["date", "sessionSource", "deviceCategory", "landingPage"]
METRICS = ["sessions", "totalUsers", "screenPageViews", "keyEvents"]
WINDOW_DAYS = 90  # ending yesterday: enough of the fake's history for a 1,000-row report
ROW_LIMITS = (25, 1000)  # what the model is shown by the connector: its default, then every row


def official_text(response: Any) -> str:
    """What the official server puts in ``content[0].text`` for ``response`` (a ``RunReportResponse``)."""
    as_dict = type(response).to_dict(response, use_integers_for_enums=False, preserving_proto_field_name=True)
    return json.dumps(as_dict, indent=2)


def official_rows(response: Any) -> list[list[str]]:
    return [[v.value for v in row.dimension_values] + [v.value for v in row.metric_values] for row in response.rows]


def official_response(fake: Any, start: str, end: str, rows: int) -> Any:
    """The same report through the bare Data API client (REST), as the official server asks for it."""
    from ga4_support import ANALYTICS_READONLY, PROPERTY, service_account
    from google.analytics.data_v1beta import BetaAnalyticsDataClient, RunReportRequest
    from google.analytics.data_v1beta.services.beta_analytics_data.transports.rest import (
        BetaAnalyticsDataRestTransport,
    )
    from google.oauth2 import service_account as google_service_account

    info = json.loads(service_account(fake)["service_account"])
    credentials = google_service_account.Credentials.from_service_account_info(info, scopes=[ANALYTICS_READONLY])
    # A token from the fake's token endpoint rather than a self-signed JWT, which the fake cannot check.
    transport = BetaAnalyticsDataRestTransport(host=fake.data_url, credentials=credentials, always_use_jwt_access=False)
    client = BetaAnalyticsDataClient(transport=transport)
    request = RunReportRequest(
        property=f"properties/{PROPERTY}",
        date_ranges=[{"start_date": start, "end_date": end}],
        dimensions=[{"name": name} for name in DIMENSIONS],
        metrics=[{"name": name} for name in METRICS],
        limit=rows,
    )
    return client.run_report(request)


@dataclass
class ConnectorAnswer:
    text: str  # content[0].text
    shown: int  # the rows the model reads (model_response.returned_rows)
    rows: list[dict[str, Any]]  # what the host keeps (system_data)


async def connector_answers(fake: Any, start: str, end: str, rows: int) -> dict[int, ConnectorAnswer]:
    """``run_report``'s answer for each ``row_limit`` of :data:`ROW_LIMITS`."""
    from ga4_support import PROPERTY, ga4_env, service_account

    from connectors.ga4 import CONNECTOR
    from shared.host import AcpHost

    answers = {}
    with tempfile.TemporaryDirectory(prefix="ga4-model-chars-") as scratch:
        runtime = {"ACP_TMP_DIR": str(Path(scratch) / "tmp"), "ACP_CACHE_DIR": str(Path(scratch) / "cache")}
        env = {**runtime, **ga4_env(fake)}
        os.environ.update(env)  # the connector reads its endpoints from the process's environment
        arguments = {
            "resource_id": PROPERTY,
            "dimensions": DIMENSIONS,
            "metrics": METRICS,
            "start_date": start,
            "end_date": end,
            "limit": rows,
        }
        async with AcpHost.in_process(CONNECTOR, env=env) as host:
            for row_limit in ROW_LIMITS:
                meta = {"credentials": service_account(fake), "autocontext_delivered": True, "row_limit": row_limit}
                result = await host.call("run_report", arguments, meta)
                if result.is_error:
                    raise RuntimeError(f"run_report failed: {result.text[:1000]}")
                answers[row_limit] = ConnectorAnswer(result.text, result.model_response["returned_rows"], result.rows())
    return answers


def same_rows(ours: list[dict[str, Any]], theirs: list[list[str]]) -> None:
    """Both sides hold the same report: as many rows, and each metric sums to the same figure."""
    if len(ours) != len(theirs):
        raise RuntimeError(f"the connector kept {len(ours)} rows, the official request {len(theirs)}")
    for index, metric in enumerate(METRICS, start=len(DIMENSIONS)):
        mine = sum(float(row[metric]) for row in ours)
        official = sum(float(row[index]) for row in theirs)
        if abs(mine - official) > 1e-6 * max(1.0, abs(official)):
            raise RuntimeError(f"{metric} sums to {mine} here and {official} in the official answer")


def without_rows(official: str) -> str:
    """The official answer with its rows emptied: what it costs besides the rows."""
    as_dict = json.loads(official)
    as_dict["rows"] = []
    return json.dumps(as_dict, indent=2)


def report(rows: int, official: str, ours: dict[int, ConnectorAnswer]) -> None:
    print(f"A {rows:,}-row GA4 report ({', '.join(DIMENSIONS)} × {', '.join(METRICS)}), what the model reads")
    print(f"{'answer':<64} {'chars':>10} {'~tokens':>9} {'rows shown':>11} {'vs official':>12}")
    lines = [("official google-analytics-mcp run_report (indented JSON, all rows)", official, rows)]
    for row_limit, answer in ours.items():
        lines.append((f"this connector's run_report, row_limit {row_limit}", answer.text, answer.shown))
    for label, text, shown in lines:
        print(f"{label:<64} {len(text):>10,} {len(text) // 4:>9,} {shown:>11,} {len(text) / len(official):>11.3f}×")
    rest = len(without_rows(official))
    print(f"official: {(len(official) - rest) / rows:,.0f} characters per row; {rest:,} for headers and metadata")
    for row_limit, answer in ours.items():
        per_row = "" if answer.shown == 0 else f"{len(answer.text) / answer.shown:,.0f} characters per row shown"
        print(f"connector, row_limit {row_limit}: {per_row} (everything included)")


def main(argv: list[str] | None = None) -> int:
    import datetime as dt

    import anyio
    from fakes.ga4 import FakeGA4
    from ga4_support import PROPERTY

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1000, help="rows of the report (its limit; default 1,000)")
    args = parser.parse_args(argv)
    with FakeGA4() as fake:
        today = fake.today(PROPERTY)
        start = str(today - dt.timedelta(days=WINDOW_DAYS))
        end = str(today - dt.timedelta(days=1))
        response = official_response(fake, start, end, args.rows)
        if len(response.rows) < args.rows:
            print(f"(the fake's report has {len(response.rows)} rows, fewer than {args.rows}: property {PROPERTY})")
        official = official_text(response)
        ours = anyio.run(connector_answers, fake, start, end, args.rows)
    for answer in ours.values():
        same_rows(answer.rows, official_rows(response))
    report(len(response.rows), official, ours)
    return 0


if __name__ == "__main__":
    sys.exit(main())
