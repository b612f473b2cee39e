"""Spec 15.2 end to end: ``python -m connectors.gsc`` as a process, over stdio and over HTTP, driven by the
test host. The host does not inject: it sends a session_id without autocontext_delivered, so the first
extraction carries the two requested blocks and the second does not."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fakes.search_console import FakeSearchConsole
from gsc_support import DOMAIN, by_page_truth, gsc_env
from http_support import http_server, module_command

from connectors.gsc.search import months_before
from shared.host import AcpHost

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # a server process per test
BLOCKS = ["available_date_range", "position_clusters"]
FILTERS = [{"dimension": "page", "operator": "contains", "expression": "/blog/"}]


@contextlib.asynccontextmanager
async def _host(transport: str, env: dict[str, str], folder: Path) -> AsyncIterator[AcpHost]:
    if transport == "stdio":
        async with AcpHost.for_module("gsc", env=env) as host:
            yield host
        return
    with http_server(module_command("gsc"), env, folder) as server:
        async with AcpHost(url=server.url) as host:
            yield host


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_spec_15_2_autocontext_on_the_first_call(
    transport: str, fake: FakeSearchConsole, credentials, runtime_dirs, tmp_path: Path
) -> None:
    reliable = fake.last_final_date(DOMAIN)
    start = months_before(reliable, 1)
    truth = by_page_truth(fake, DOMAIN, ["query"], start, reliable, FILTERS)
    meta = {"credentials": credentials, "session_id": "conv-8f2c", "autocontext_blocks": BLOCKS}
    arguments = {"resource_id": DOMAIN, "dimensions": ["query"], "filters": FILTERS}
    async with _host(transport, {**runtime_dirs, **gsc_env(fake)}, tmp_path) as host:
        first = await host.call("search_analytics", arguments, meta)
        second = await host.call("search_analytics", arguments, meta)

    assert first.kind == "extraction", first.error
    model = first.model_response
    assert model["notice"] == f"Showing 25 of {len(truth)} extracted rows."
    assert (model["total_rows"], model["returned_rows"], model["truncated"]) == (len(truth), 25, True)
    assert model["columns"] == ["query", "clicks", "impressions", "ctr", "position"]
    clicks = sum(e.clicks for e in truth.values())
    impressions = sum(e.impressions for e in truth.values())
    assert (model["totals"]["clicks"], model["totals"]["impressions"]) == (clicks, impressions)
    assert model["totals"]["ctr"] == round(clicks / impressions, 4)

    # The two blocks the host asked for, with the ids, descriptions and data shapes of 15.2.
    date_range, clusters = model["autocontext"]
    assert date_range == {
        "id": "available_date_range",
        "description": "Queryable date range (16 months) and the latest day with reliable data.",
        "data": {
            "first_date": str(months_before(fake.today, 16)),
            "last_reliable_date": str(reliable),
            "note": "Search Console keeps 16 months of data and publishes it with a 2-3 day delay.",
        },
    }
    assert clusters["id"] == "position_clusters"
    assert clusters["description"] == (
        "Queries grouped by position cluster (Top-3, Top-10, Top-30, Top-100, Out) over the last 3 months."
    )
    assert [c["clusterPosition"] for c in clusters["data"]] == ["Top-3", "Top-10", "Top-30", "Top-100", "Out"]
    assert all({"clicks", "impressions"} <= c.keys() for c in clusters["data"])

    info = first.system_info
    assert info["resource_id"] == DOMAIN and info["autocontext_attached"] is True
    # The dates the server chose are in system_info.arguments, so the host can repeat the extraction.
    assert {k: info["arguments"][k] for k in ("dimensions", "filters", "start_date", "end_date", "search_type")} == {
        "dimensions": ["query"],
        "filters": FILTERS,
        "start_date": str(start),
        "end_date": str(reliable),
        "search_type": "web",
    }
    data = first.system_data
    assert data["row_count"] == len(truth)
    assert data["headers"] == [
        {"name": "query", "type": "string", "role": "dimension"},
        {"name": "clicks", "type": "integer", "role": "metric"},
        {"name": "impressions", "type": "integer", "role": "metric"},
        {"name": "ctr", "type": "number", "role": "metric", "description": "Fraction 0-1"},
        {
            "name": "position",
            "type": "number",
            "role": "metric",
            "description": "Average position weighted by impressions",
        },
    ]
    assert {row["query"]: row["clicks"] for row in first.rows()} == {key[0]: e.clicks for key, e in truth.items()}

    # The same session and property again: no autocontext.
    assert second.kind == "extraction" and second.model_response["total_rows"] == len(truth)
    assert "autocontext" not in second.model_response and second.system_info["autocontext_attached"] is False
