"""The three-part result over stdio (spec 8): model_response, system_info, system_data."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import os
import stat
from decimal import Decimal
from pathlib import Path

import pytest
from acp_spec import SYSTEM_INFO_REQUIRED
from toy_connector import BIG_INT, EXACT_DECIMAL, HUGE_INT, TEST_CREDENTIALS, key_fingerprint

from shared.host import ACP_HOST_CAPABILITY, uri_path

pytestmark = pytest.mark.anyio
META = {"credentials": TEST_CREDENTIALS, "autocontext_delivered": True}


def _report(rows: int, **extra) -> dict:
    return {"resource_id": "acc_1", "start_date": "2026-03-01", "end_date": "20260331", "rows": rows, **extra}


async def test_single_table_extraction_shape(toy_host) -> None:
    async with toy_host() as host:
        result = await host.call("report", _report(254), META)
        model, info, data = result.model_response, result.system_info, result.system_data
        assert result.kind == "extraction" and result.acp["version"] == "1.0"
        assert model["notice"] == "Showing 25 of 254 extracted rows."
        assert (model["total_rows"], model["returned_rows"], model["truncated"]) == (254, 25, True)
        assert model["dates"] == ["2026-03-01", "2026-03-31"]  # the resolved x-acp-date window
        assert model["columns"] == [h["name"] for h in data["headers"]]
        assert all(list(row) == model["columns"] for row in model["rows"])
        assert model["totals"] == {"sessions": sum(i * 10 for i in range(254))}
        assert model["extra"] == {"quota": {"used": 1}}
        assert [h["type"] for h in data["headers"]] == ["date", "string", "integer", "number", "string"]
        assert data["headers"][2]["role"] == "metric"
        assert data["format"] == "inline" and data["row_count"] == 254 and len(data["table"]) == 254
        for key in (*SYSTEM_INFO_REQUIRED, "title", "total_rows", "returned_rows", "truncated"):
            assert key in info
        # system_info.arguments repeat the extraction: resolved dates and the defaults the tool applied.
        assert info["arguments"] == {"start_date": "2026-03-01", "end_date": "2026-03-31", "rows": 254}
        assert info["messages"] == [model["notice"]] and info["source"] == {"api": "toy.report"}
        assert dt.datetime.fromisoformat(info["fetched_at"].replace("Z", "+00:00")).tzinfo is not None


async def test_notices_row_limit_zero_and_spread_sampling(toy_host) -> None:
    async with toy_host() as host:
        empty = await host.call("report", _report(0), META)
        assert empty.model_response["notice"] == "The query returned no rows."
        small = await host.call("report", _report(7), META)
        assert small.model_response["notice"] == "Showing all 7 extracted rows."
        zero = await host.call("report", _report(100), {**META, "row_limit": 0})
        assert zero.model_response["rows"] == [] and zero.model_response["notice"] == "Showing 0 of 100 extracted rows."
        assert zero.system_data["row_count"] == 100
        spread = await host.call("report", _report(1000), {**META, "sampling": "spread", "row_limit": 10})
        sessions = [row["sessions"] for row in spread.model_response["rows"]]
        assert len(sessions) == 10 and sessions[0] == 0 and sessions[-1] == 9990  # first and last rows
        gaps = [b - a for a, b in itertools.pairwise(sessions)]
        assert min(gaps) > 0 and max(gaps) <= 3 * min(gaps)  # spread over the whole table, in order


async def test_large_table_goes_to_a_private_file_under_acp_tmp_dir(toy_host, runtime_dirs) -> None:
    async with toy_host() as host:
        result = await host.call("report", _report(3000), {**META, "inline_max_bytes": 10_000})
        data = result.system_data
        assert data["format"] == "file" and "table" not in data
        path = uri_path(data["table_uri"])
        assert path.parent == Path(runtime_dirs["ACP_TMP_DIR"]).resolve()
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert len(path.stem.split("-")[-1]) == 32  # random name
        rows = result.rows()
        assert len(rows) == 3000 == data["row_count"]
        key = key_fingerprint(TEST_CREDENTIALS)
        assert rows[2999] == {
            "date": "2026-03-30",
            "channel": "Direct",
            "sessions": 29990,
            "revenue": 299.9,
            "key": key,
        }
        inline = await host.call("report", _report(3000), META)
        assert inline.system_data["format"] == "inline" and inline.rows() == rows


async def test_stdio_keeps_tables_inline_up_to_inline_max_bytes(toy_host) -> None:
    """The HTTP size rule (tables past 768 KiB go as links) is HTTP's alone: stdio honours inline_max_bytes."""
    async with toy_host() as host:
        result = await host.call("report", _report(12_000), META)  # about 1.2 MB of rows
        assert result.system_data["format"] == "inline" and len(result.system_data["table"]) == 12_000
        async with host.open_table(result.system_data) as table:
            assert [row["sessions"] async for row in table] == [i * 10 for i in range(12_000)]


async def test_exact_integers_decimals_and_times(toy_host) -> None:
    """Spec 8.6 and the issue: 64-bit integers exact, decimals keep digits, naive times stay naive."""
    async with toy_host() as host:
        result = await host.call("values", {"resource_id": "acc_1"}, META)
        row = result.rows(exact=True)[0]
        assert row["big"] == BIG_INT and row["huge"] == HUGE_INT
        assert row["exact"] == EXACT_DECIMAL and isinstance(row["exact"], Decimal)
        assert row["naive"] == "2026-09-01T10:15:00"  # no invented time zone
        assert row["aware"] == "2026-09-01T10:15:00Z"  # converted to UTC
        assert row["day"] == "2026-09-01" and row["doc"] == {"a": [1, 2]}
        types = {h["name"]: h["type"] for h in result.system_data["headers"]}
        assert types == {
            "big": "integer",
            "huge": "integer",
            "exact": "number",
            "naive": "datetime",
            "aware": "datetime",
            "day": "date",
            "blob": "string",
            "doc": "json",
        }
        model_row = json.loads(result.text, parse_float=Decimal)["rows"][0]
        assert model_row["exact"] == EXACT_DECIMAL and model_row["huge"] == HUGE_INT
        assert any("binary" in w for w in result.system_info["warnings"])


async def test_multi_table_catalog_and_model_view(toy_host) -> None:
    async with toy_host() as host:
        result = await host.call("browse", {}, META)
        model, data, info = result.model_response, result.system_data, result.system_info
        # defaults.tables = ["hits"]; "network" is required; "summary" is outside the catalog.
        assert info["tables_selected"] == ["hits", "network"] == info["arguments"]["tables"]
        assert list(model["tables"]) == ["hits", "network", "summary"]
        assert model["not_extracted"] == {"cookies": 9}
        assert "Not extracted because they were not requested: cookies (9)." in model["notice"]
        assert model["manifest"]["pages"][0]["url"] == "https://shop.example/"
        assert data["format"] == "tables" and data["headers"] == [] and data["row_count"] == 64
        assert [t["name"] for t in data["tables"]] == ["hits", "network", "summary"]
        hits = model["tables"]["hits"]
        assert hits["fields"] == ["en", "dl", "long", "params"] and hits["fields_total"] == 6
        assert hits["returned_rows"] == 10 and hits["notice"] == "hits: 10 of 60 rows, 4 of 6 fields."
        assert hits["rows"][0]["long"] == "x" * 19 + "…" and hits["rows"][0]["params"] == '{"k":0}'
        assert "empty" not in hits["rows"][0]
        assert data["tables"][0]["model_view"]["fields"] == ["en", "dl", "long", "params", "missing"]
        assert info["field_limit"] == 8 and info["total_rows"] == 64
        assert {t["name"]: t["fields_shown"] for t in info["tables"]} == {"hits": 4, "network": 2, "summary": 2}
        assert len(result.tables()["hits"]) == 60


async def test_table_selection_precedence(toy_host) -> None:
    async with toy_host() as host:
        by_argument = await host.call("browse", {"tables": ["cookies"]}, {**META, "tables": ["hits"]})
        assert by_argument.system_info["tables_selected"] == ["cookies", "network"]
        assert by_argument.model_response["not_extracted"] == {"hits": 60}
        await host.configure(tables=["hits", "cookies"])
        by_session = await host.call("browse", {}, META)
        assert by_session.system_info["tables_selected"] == ["hits", "cookies", "network"]
        nothing = await host.call("browse", {"tables": []}, META)
        assert nothing.system_info["tables_selected"] == ["network"]  # required tables always come
        unknown = await host.call("browse", {"tables": ["hits", "dom"]}, META)
        assert unknown.error_name == "ACP_INVALID_ARGUMENTS" and "hits" in unknown.error["message"]


async def test_client_without_multi_table_gets_the_primary_table_only(toy_host) -> None:
    capability = {**ACP_HOST_CAPABILITY, "multi_table": False}
    async with toy_host(capability=capability) as host:
        result = await host.call("browse", {}, META)
        assert result.system_data["format"] == "inline"
        assert result.model_response["columns"] == ["pages", "hits"]
        assert result.model_response["notice"] == "Showing all 1 extracted rows."


async def test_plain_mcp_client_still_gets_the_model_text(toy_host) -> None:
    """Spec 2.2: a client that declares no ACP capability."""
    async with toy_host(capability=None) as host:
        tools = [t["name"] for t in await host.list_tools()]
        assert tools[:2] == ["autocontext", "autocontext_data"]
        assert (await host.call("autocontext_data", {})).model_response[0]["id"] == "fields"
        missing = await host.call("report", _report(3))
        assert missing.is_error and json.loads(missing.text)["error"]["name"] == "ACP_CREDENTIALS_MISSING"
        ok = await host.call("report", _report(3), META)
        assert ok.model_response["notice"] == "Showing all 3 extracted rows."


async def test_host_that_does_not_store_system_data_gets_none(toy_host) -> None:
    capability = {**ACP_HOST_CAPABILITY, "stores_system_data": False}
    async with toy_host(capability=capability) as host:
        result = await host.call("report", _report(3), META)
        assert result.system_data is None and result.model_response["total_rows"] == 3


async def test_an_extraction_carries_a_local_chart_path_never_its_bytes(toy_host, runtime_dirs) -> None:
    """spec 8.10: an extraction's model_response may name a PNG on this machine, written owner-only
    with the table files (ACP_TMP_DIR), and swept with them."""
    async with toy_host() as host:
        result = await host.call("chart", {})
        assert not result.is_error and result.kind == "extraction"
        path = Path(result.model_response["screenshot_path"])
        assert path.is_absolute() and path.parent == Path(runtime_dirs["ACP_TMP_DIR"]).resolve()
        assert path.suffix == ".png" and path.read_bytes().startswith(b"\x89PNG")
        if os.name == "posix":
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert "PNG" not in result.text and "warnings" not in result.model_response
        assert result.rows() == [{"x": 1}]


async def test_tools_without_resource_or_credentials_and_artifacts(toy_host) -> None:
    async with toy_host() as host:
        shot = await host.call("screenshot", {})
        assert not shot.is_error and shot.kind == "info"
        # spec 8.10: artifact paths pass through unchanged
        assert shot.model_response["screenshot_path"] == "/tmp/toy-shot.png"
        assert shot.model_response["pdf_path"] == "/tmp/toy.pdf"
        assert shot.system_info["resource_id"] is None and shot.system_data is None
        needs_resource = await host.call("report", {"start_date": "today", "end_date": "today"}, META)
        assert needs_resource.error_name == "ACP_RESOURCE_REQUIRED"
        assert "autocontext without arguments" in needs_resource.error["message"]
        defaulted = await host.call(
            "report", {"start_date": "today", "end_date": "today"}, {**META, "default_resource_id": "accounts/acc_4"}
        )
        assert defaulted.system_info["resource_id"] == "acc_4"  # normalized
        wrong_level = await host.call("segment_report", {"resource_id": "acc_4"}, META)
        assert wrong_level.error_name == "ACP_INVALID_ARGUMENTS" and "segment" in wrong_level.error["message"]
