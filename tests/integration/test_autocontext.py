"""The reserved tools autocontext and autocontext_data, the cache and on_first_call (spec 6.3, 7)."""

from __future__ import annotations

from pathlib import Path

import pytest
from toy_connector import ACCOUNTS, TEST_CREDENTIALS

pytestmark = pytest.mark.anyio
META = {"credentials": TEST_CREDENTIALS}
REPORT = {"start_date": "2026-01-01", "end_date": "2026-01-02", "rows": 3}


def _lines(path: Path) -> list[str]:
    return path.read_text("utf-8").splitlines() if path.exists() else []


async def test_suggestions_page_total_and_partial_notice(toy_host) -> None:
    async with toy_host() as host:
        result = await host.call("autocontext", {}, META)
        body = result.model_response
        assert result.kind == "autocontext" and result.system_info["resource_id"] is None
        assert body["total_available"] == ACCOUNTS
        assert len(body["resources"]) == 25
        assert [r["resource_id"] for r in body["resources"]] == [f"acc_{n}" for n in range(1, 26)]  # API order
        assert "25 of 60" in body["notice"] and "may still exist" in body["notice"]


async def test_default_then_recent_then_api_order(toy_host, runtime_dirs) -> None:
    async with toy_host() as host:
        await host.configure(credentials=TEST_CREDENTIALS, default_resource_id="acc_50")
        for _ in range(3):
            await host.call("report", {"resource_id": "acc_40", **REPORT}, {"autocontext_delivered": True})
        await host.call("report", {"resource_id": "acc_30", **REPORT}, {"autocontext_delivered": True})
        body = (await host.call("autocontext", {})).model_response
        ids = [r["resource_id"] for r in body["resources"]]
        assert ids[:3] == ["acc_50", "acc_40", "acc_30"]  # default, then by decayed use score
        assert body["resources"][0].get("configured") is True
        assert body["resources"][1].get("recent") is True and "recent" not in body["resources"][3]
        assert "acc_50" in body["notice"]
    # Recency is kept per credential identity under ACP_CACHE_DIR: a new process still knows it.
    async with toy_host() as host:
        body = (await host.call("autocontext", {}, META)).model_response
        assert [r["resource_id"] for r in body["resources"][:2]] == ["acc_40", "acc_30"]
        other = {**TEST_CREDENTIALS, "account": "team-b"}
        body = (await host.call("autocontext", {}, {"credentials": other})).model_response
        assert body["resources"][0]["resource_id"] == "acc_1"  # another identity has no history


async def test_query_searches_every_resource_and_keeps_the_default(toy_host) -> None:
    async with toy_host() as host:
        meta = {**META, "default_resource_id": "acc_2"}
        body = (await host.call("autocontext", {"query": "account 5"}, meta)).model_response
        ids = [r["resource_id"] for r in body["resources"]]
        assert ids[0] == "acc_2"  # the configured default is always on the page
        assert set(ids[1:]) == {
            "acc_5",
            "acc_50",
            "acc_51",
            "acc_52",
            "acc_53",
            "acc_54",
            "acc_55",
            "acc_56",
            "acc_57",
            "acc_58",
            "acc_59",
        }
        grouped = (await host.call("autocontext", {"query": "group b"}, META)).model_response
        assert all(int(r["resource_id"][4:]) % 2 == 0 for r in grouped["resources"])
        by_id = (await host.call("autocontext", {"query": "ACC_60"}, META)).model_response
        assert [r["resource_id"] for r in by_id["resources"]] == ["acc_60"]


async def test_configured_default_missing_from_listing_is_marked(toy_host) -> None:
    async with toy_host() as host:
        body = (await host.call("autocontext", {}, {**META, "default_resource_id": "acc_999"})).model_response
        first = body["resources"][0]
        assert first["resource_id"] == "acc_999" and first["configured"] is True
        assert "not in this account's listing" in first["description"]


async def test_blocks_fail_individually_and_never_fail_the_call(toy_host) -> None:
    # The slow block sleeps 3 s against the toy's 1 s budget.
    async with toy_host(env={"TOY_SLOW_BLOCK_S": "3"}) as host:
        result = await host.call("autocontext", {"resource_id": "acc_3"}, META)
        assert not result.is_error
        blocks = {b["id"]: b for b in result.model_response}
        assert list(blocks) == ["fields", "broken", "slow"]  # segment_info does not apply to accounts
        assert blocks["fields"]["data"][0]["name"] == "sessions"
        assert "503" in blocks["broken"]["error"] and "data" not in blocks["broken"]
        assert "Timed out" in blocks["slow"]["error"] and "data" not in blocks["slow"]
        assert result.system_info["warnings"] == ["2 of 3 autocontext blocks failed; see their error field."]


async def test_request_data_order_levels_and_unknown_blocks(toy_host) -> None:
    async with toy_host() as host:
        ordered = await host.call(
            "autocontext", {"resource_id": "acc_3.web", "request_data": ["segment_info", "fields"]}, META
        )
        assert [b["id"] for b in ordered.model_response] == ["segment_info", "fields"]
        assert ordered.model_response[0]["data"] == {"segment": "web"}
        wrong_level = await host.call("autocontext", {"resource_id": "acc_3", "request_data": ["segment_info"]}, META)
        assert "segment" in wrong_level.model_response[0]["error"]
        unknown = await host.call("autocontext", {"resource_id": "acc_3", "request_data": ["fields", "nope"]}, META)
        assert unknown.error_name == "ACP_UNKNOWN_BLOCK" and unknown.error["code"] == -32015
        assert "nope" in unknown.error["message"]
        for block in ("fields", "broken", "slow", "segment_info"):
            assert block in unknown.error["message"]


async def test_autocontext_data_needs_no_credentials_and_filters_by_level(toy_host) -> None:
    async with toy_host() as host:
        everything = await host.call("autocontext_data", {})
        assert not everything.is_error and everything.kind == "autocontext_data"
        assert [b["id"] for b in everything.model_response] == ["fields", "broken", "slow", "segment_info"]
        assert everything.model_response[3]["applies_to"] == ["segment"]
        account = await host.call("autocontext_data", {"resource_id": "acc_1"})
        assert [b["id"] for b in account.model_response] == ["fields", "broken", "slow"]


async def test_unknown_resource_and_missing_credentials(toy_host) -> None:
    async with toy_host() as host:
        missing = await host.call("autocontext", {"resource_id": "acc_1"})
        assert missing.error_name == "ACP_CREDENTIALS_MISSING" and missing.error["code"] == -32011
        unknown = await host.call("autocontext", {"resource_id": "acc_404"}, META)
        assert (
            unknown.error_name == "ACP_RESOURCE_NOT_FOUND"
            and "autocontext without arguments" in unknown.error["message"]
        )
        malformed = await host.call("autocontext", {"resource_id": "zzz"}, META)
        assert malformed.error_name == "ACP_INVALID_ARGUMENTS"


async def test_cache_is_per_identity_and_only_for_proven_credentials(toy_host, toy_state, runtime_dirs) -> None:
    fields_log = toy_state / "fields.log"
    async with toy_host() as host:
        first = await host.call("autocontext", {"resource_id": "acc_3", "request_data": ["fields"]}, META)
        second = await host.call("autocontext", {"resource_id": "acc_3", "request_data": ["fields"]}, META)
        assert first.system_info["cached"] is False and second.system_info["cached"] is True
        assert _lines(fields_log) == ["acc_3"]  # fetched once, then served from cache
        other = {**TEST_CREDENTIALS, "account": "team-b"}
        await host.call("autocontext", {"resource_id": "acc_3", "request_data": ["fields"]}, {"credentials": other})
        assert _lines(fields_log) == ["acc_3", "acc_3"]  # another identity never shares entries
        # Same principal, wrong secret: it must not read what the right secret cached (spec 7.4).
        wrong = {**TEST_CREDENTIALS, "api_key": "bad-key-987654321"}
        refused = await host.call(
            "autocontext", {"resource_id": "acc_3", "request_data": ["fields"]}, {"credentials": wrong}
        )
        assert refused.error_name == "ACP_CREDENTIALS_INVALID"
        assert "data" not in refused.text
    # The disk cache outlives the process and holds no credential.
    cache_files = [p for p in Path(runtime_dirs["ACP_CACHE_DIR"]).rglob("*") if p.is_file()]
    assert cache_files
    for path in cache_files:
        text = path.read_text("utf-8")
        assert TEST_CREDENTIALS["api_key"] not in text and "bad-key-987654321" not in text
        assert "team-a" not in path.name
    async with toy_host() as host:
        again = await host.call("autocontext", {"resource_id": "acc_3", "request_data": ["fields"]}, META)
        assert again.system_info["cached"] is True
        assert _lines(fields_log) == ["acc_3", "acc_3"]
        assert _lines(toy_state / "authenticate.log")[-1] == "team-a"  # proven again in the new process first


OFC_ARGS = {"resource_id": "acc_9", **REPORT}


@pytest.mark.parametrize(
    ("delivered", "session", "expected"),
    [
        (True, None, [False, False]),
        (True, "conv-1", [False, False]),
        (False, None, [True, True]),
        (None, None, [False, False]),
        (False, "conv-1", [True, False]),
        (None, "conv-1", [True, False]),
    ],
)
async def test_on_first_call_table(toy_host, delivered, session, expected) -> None:
    """Spec 7.5, row by row: two extractions of the same resource in a row."""
    meta = dict(META)
    if delivered is not None:
        meta["autocontext_delivered"] = delivered
    if session is not None:
        meta["session_id"] = session
    async with toy_host() as host:
        attached = []
        for _ in range(2):
            result = await host.call("report", OFC_ARGS, meta)
            attached.append(result.system_info["autocontext_attached"])
            assert ("autocontext" in result.model_response) == attached[-1]
        assert attached == expected
        if session and delivered is not True:
            # The pair is (session_id, resource_id): another resource is a first time again.
            other = await host.call("report", {**OFC_ARGS, "resource_id": "acc_10"}, meta)
            assert other.system_info["autocontext_attached"] is True


async def test_on_first_call_uses_requested_blocks_and_autocontext_marks_delivery(toy_host) -> None:
    async with toy_host() as host:
        meta = {**META, "session_id": "conv-2", "autocontext_blocks": ["fields"]}
        result = await host.call("report", OFC_ARGS, meta)
        assert [b["id"] for b in result.model_response["autocontext"]] == ["fields"]
        # A model that called autocontext itself in that session is not served it again.
        await host.call("autocontext", {"resource_id": "acc_11"}, {**META, "session_id": "conv-2"})
        after = await host.call("report", {**OFC_ARGS, "resource_id": "acc_11"}, meta)
        assert after.system_info["autocontext_attached"] is False
