"""What the model sees, in process: the value cap, the model_max_chars budget, and what a plain MCP client
gets (spec 2.2, 4.1, 8.2, 12.1; model_max_chars is an extension, spec 12.2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from toy_connector import TEST_CREDENTIALS, wide_value

from shared.host import ACP_HOST_CAPABILITY

pytestmark = pytest.mark.anyio
META = {"credentials": TEST_CREDENTIALS, "autocontext_delivered": True}
WIDE = {"rows": 25, "columns": 40, "width": 2000}


def _valid_within(text: str, budget: int) -> dict:
    assert len(text) <= budget, len(text)
    return json.loads(text)


async def test_a_wide_table_fits_a_3000_character_budget_and_system_data_stays_whole(toy_host) -> None:
    async with toy_host() as host:
        result = await host.call("wide", WIDE, {"model_max_chars": 3000})
        model = _valid_within(result.text, 3000)
        returned = model["returned_rows"]
        assert 1 <= returned < 25 and len(model["rows"]) == returned and model["truncated"] is True
        assert model["notice"].startswith(f"Showing {returned} of 25 extracted rows (model budget 3000 characters).")
        assert len(model["columns"]) == 40 and all(list(row) == model["columns"] for row in model["rows"])
        info = result.system_info
        assert info["model_max_chars"] == 3000 and info["returned_rows"] == returned
        assert info["model_trim"]["rows_dropped"] == 25 - returned
        assert info["model_trim"]["text_chars"] == len(result.text)
        assert info["messages"] == [model["notice"]]
        rows = result.rows()
        assert len(rows) == 25 and rows[24]["text_39"] == wide_value(24, 39, 2000)  # system_data: never cut


async def test_the_budget_from_configure_and_from_meta_follows_the_precedence(toy_host) -> None:
    async with toy_host() as host:
        effective = (await host.configure(model_max_chars=6000))["effective"]
        assert effective["model_max_chars"] == 6000
        configured = await host.call("wide", WIDE, {})
        assert 3000 < len(configured.text) <= 6000 and configured.system_info["model_max_chars"] == 6000
        tighter = await host.call("wide", WIDE, {"model_max_chars": 3000})
        assert len(tighter.text) <= 3000 and tighter.system_info["model_max_chars"] == 3000


async def test_without_a_budget_each_value_is_capped_and_the_notice_says_so(toy_host) -> None:
    async with toy_host() as host:
        result = await host.call("wide", WIDE, {})
        model = json.loads(result.text)
        assert model["returned_rows"] == 25 and "model_max_chars" not in result.system_info
        assert (
            model["notice"] == "Showing all 25 extracted rows. Longer values are cut to 500 characters (ending in …)."
        )
        assert model["rows"][3]["text_07"] == wide_value(3, 7, 2000)[:499] + "…"
        assert result.system_info["model_trim"]["values_shortened"] == 25 * 40
        assert result.rows()[3]["text_07"] == wide_value(3, 7, 2000)
        short = await host.call("wide", {**WIDE, "width": 40}, {})
        assert (
            "model_trim" not in short.system_info and short.model_response["notice"] == "Showing all 25 extracted rows."
        )


async def test_errors_and_autocontext_fit_the_budget_and_keep_their_names_and_ids(toy_host) -> None:
    async with toy_host() as host:
        whole = await host.call("autocontext", {"resource_id": "acc_1.web"}, META)
        assert len(whole.text) > 500 and not any("truncated" in b for b in whole.model_response)
        blocks = await host.call("autocontext", {"resource_id": "acc_1.web"}, {**META, "model_max_chars": 500})
        shown = _valid_within(blocks.text, 500)
        assert [b["id"] for b in shown] == ["fields", "broken", "slow", "segment_info"]
        assert any(b.get("truncated") for b in shown) and blocks.system_info["model_trim"]["parts_shortened"]
        page = await host.call("autocontext", {}, {**META, "model_max_chars": 800})
        listing = _valid_within(page.text, 800)
        count = len(listing["resources"])
        assert listing["notice"].startswith(f"Showing {count} of 60 available resources")
        assert "model budget of 800 characters" in listing["notice"]
        unknown = "x" * 3000
        failed = await host.call("report", {"resource_id": unknown}, {**META, "model_max_chars": 500})
        error = _valid_within(failed.text, 500)["error"]
        assert error["name"] == "ACP_INVALID_ARGUMENTS" and error["code"] == -32017
        assert failed.error["name"] == "ACP_INVALID_ARGUMENTS"


async def test_a_plain_client_gets_no_system_data_and_structured_content_mirroring_the_text(toy_host) -> None:
    async with toy_host(capability=None) as host:
        result = await host.call("wide", WIDE)
        assert result.system_data is None and result.kind == "extraction"
        assert result.raw["structuredContent"] == json.loads(result.text) == result.model_response
        assert result.system_info["messages"][-1] == (
            "system_data is left out: the client declared no ACP capability (spec 2.2, 4.1)."
        )
        # An array answer gets no structuredContent, which MCP defines as an object.
        listed = await host.call("autocontext_data", {})
        assert isinstance(listed.model_response, list) and "structuredContent" not in listed.raw
        report = {"resource_id": "acc_1", "start_date": "2026-01-01", "end_date": "2026-01-31", "rows": 3}
        failed = await host.call("report", report)
        assert failed.is_error and failed.raw["structuredContent"] == json.loads(failed.text)
        assert failed.raw["structuredContent"]["error"]["name"] == "ACP_CREDENTIALS_MISSING"
        # Exact decimals are numbers there too, as in the text (the SDK alone would write them as strings).
        with_decimals = await host.call("report", report, META)
        assert (
            with_decimals.raw["structuredContent"]["rows"][1]["revenue"]
            == 0.1
            == with_decimals.model_response["rows"][1]["revenue"]
        )


async def test_an_acp_host_gets_system_data_and_no_structured_content(toy_host) -> None:
    async with toy_host() as host:
        result = await host.call("wide", {**WIDE, "rows": 3})
        assert result.system_data["format"] == "inline" and "structuredContent" not in result.raw
    no_store = {**ACP_HOST_CAPABILITY, "stores_system_data": False}
    async with toy_host(capability=no_store) as host:
        result = await host.call("wide", {**WIDE, "rows": 3})
        assert result.system_data is None and "structuredContent" not in result.raw


async def test_a_plain_client_leaves_no_table_file_behind(toy_host, runtime_dirs) -> None:
    tmp = Path(runtime_dirs["ACP_TMP_DIR"])
    async with toy_host(capability=None) as host:
        spilled = await host.call("wide", WIDE, {"inline_max_bytes": 1000})  # the table goes to a file first
        assert spilled.system_data is None and spilled.model_response["total_rows"] == 25
    assert [p for p in tmp.rglob("*") if p.is_file()] == []
    async with toy_host() as host:
        kept = await host.call("wide", WIDE, {"inline_max_bytes": 1000})
        assert kept.system_data["format"] == "file" and len(kept.rows()) == 25


async def test_a_multi_table_answer_fits_the_budget_table_by_table(toy_host) -> None:
    async with toy_host() as host:
        whole = await host.call("browse", {"tables": ["hits", "cookies"]}, META)
        assert len(whole.text) > 2000
        for budget in (500, 1000, 1500, 2000):
            result = await host.call("browse", {"tables": ["hits", "cookies"]}, {**META, "model_max_chars": budget})
            model = _valid_within(result.text, budget)
            assert model["notice"].startswith("Extracted 4 table(s) with data: hits (60), cookies (9), network (3)")
            entries = model["tables"]  # under 1,100 characters, the last resort keeps only notices and counts
            shown = {t["name"]: t["returned_rows"] for t in result.system_info["tables"]}
            assert shown == {name: len(entries[name]["rows"]) if name in entries else 0 for name in shown}
            assert all(entries[n]["notice"].startswith(f"{n}: ") for n in entries)
            assert result.system_info["returned_rows"] == sum(shown.values())
            assert {t["name"] for t in result.system_data["tables"]} == {"hits", "cookies", "network", "summary"}
            assert len(result.tables()["hits"]) == 60  # the host still gets every row
