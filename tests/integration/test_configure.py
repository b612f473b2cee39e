"""acp/configure, _meta.acp and precedence, over stdio (spec 5)."""

from __future__ import annotations

import json

import pytest
from acp_spec import SYSTEM_INFO_REQUIRED
from toy_connector import TEST_CREDENTIALS

from shared.host import HostProtocolError

pytestmark = pytest.mark.anyio


async def _effective(host) -> dict:
    return (await host.configure())["effective"]


async def test_configure_merges_and_never_returns_credentials(toy_host) -> None:
    async with toy_host() as host:
        first = await host.configure(row_limit=50, credentials=TEST_CREDENTIALS, config={"region": "us"})
        assert first["ok"] is True
        second = await host.configure(cost_limit_usd=2, default_resource_id="acc_7")
        effective = second["effective"]
        # spec 5.1: absent fields keep their value; config merges key by key.
        assert effective["row_limit"] == 50
        assert effective["cost_limit_usd"] == 2
        assert effective["field_limit"] == 8  # the server default (capability defaults.field_limit)
        assert effective["has_credentials"] is True
        assert effective["default_resource_id"] == "acc_7"
        assert effective["config"] == {"region": "us"}
        text = json.dumps(second)
        assert TEST_CREDENTIALS["api_key"] not in text and "credentials" not in effective


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("row_limit", 5001),
        ("row_limit", -1),
        ("row_limit", 2.5),
        ("row_limit", True),
        ("row_limit", "10"),
        ("cost_limit_usd", -0.01),
        ("cost_limit_usd", "1"),
        ("field_limit", 0),
        ("field_limit", 201),
    ],
)
async def test_invalid_limit_is_32016_and_leaves_the_session_untouched(toy_host, field, value) -> None:
    async with toy_host() as host:
        await host.configure(row_limit=40, cost_limit_usd=1, field_limit=9)
        before = await _effective(host)
        with pytest.raises(HostProtocolError) as raised:
            await host.configure(**{field: value, "default_resource_id": "acc_2"})
        assert raised.value.code == -32016
        assert field in raised.value.message
        # The whole call is refused: not even the valid default_resource_id was applied.
        assert await _effective(host) == before


@pytest.mark.parametrize(
    "params",
    [
        {"credentials": "not-an-object"},
        {"credentials": {"type": "nope", "api_key": "CANARY-CONFIGURE-991"}},
        {"credentials": {"type": "api_key", "account": "x"}},
        {"config": {"unknown_key": 1}},
        {"config": {"region": "mars"}},
        {"config": {"rules": "{not json"}},
        {"tables": ["hits", "not_a_table"]},
        {"default_resource_id": 12},
    ],
)
async def test_other_bad_configure_is_invalid_params_and_untouched(toy_host, params) -> None:
    async with toy_host() as host:
        before = await _effective(host)
        with pytest.raises(HostProtocolError) as raised:
            await host.configure(**params)
        assert raised.value.code == -32602
        assert raised.value.data["acp_name"].startswith("ACP_")
        assert "CANARY-CONFIGURE-991" not in raised.value.message
        assert await _effective(host) == before


async def test_null_credentials_clear_them(toy_host) -> None:
    async with toy_host() as host:
        assert (await host.configure(credentials=TEST_CREDENTIALS))["effective"]["has_credentials"] is True
        assert (await host.configure(credentials=None))["effective"]["has_credentials"] is False
        missing = await host.call("report", {"resource_id": "acc_1", "start_date": "today", "end_date": "today"})
        assert missing.error_name == "ACP_CREDENTIALS_MISSING"


async def test_precedence_meta_over_configure_over_defaults(toy_host) -> None:
    """Spec 5.3: _meta.acp > acp/configure > capability defaults."""
    args = {"resource_id": "acc_1", "start_date": "2026-01-01", "end_date": "2026-01-31", "rows": 40}
    meta = {"credentials": TEST_CREDENTIALS, "autocontext_delivered": True}
    async with toy_host() as host:
        default = await host.call("report", args, meta)
        assert default.system_info["row_limit"] == 25 and default.model_response["returned_rows"] == 25
        await host.configure(row_limit=5)
        configured = await host.call("report", args, meta)
        assert configured.system_info["row_limit"] == 5 and configured.model_response["returned_rows"] == 5
        per_call = await host.call("report", args, {**meta, "row_limit": 3})
        assert per_call.system_info["row_limit"] == 3 and len(per_call.model_response["rows"]) == 3
        # The per-call value did not stick to the session.
        again = await host.call("report", args, meta)
        assert again.system_info["row_limit"] == 5


async def test_config_merges_by_key_in_precedence_order(toy_host) -> None:
    async with toy_host() as host:
        await host.configure(config={"region": "us"})
        result = await host.call("echo_config", {}, {"config": {"rules": "[]"}})
        assert result.model_response["config"] == {"region": "us", "rules": "[]"}
        overridden = await host.call("echo_config", {}, {"config": {"region": "eu"}})
        assert overridden.model_response["config"]["region"] == "eu"
        plain = await host.call("echo_config", {})
        assert plain.model_response["config"] == {"region": "us"}  # schema default eu overridden by configure


@pytest.mark.parametrize(
    "meta",
    [
        {"row_limit": 9000},
        {"cost_limit_usd": -1},
        {"field_limit": 500},
        {"sampling": "random"},
        {"inline_max_bytes": -5},
    ],
)
async def test_invalid_limit_in_meta_is_a_tool_error(toy_host, meta) -> None:
    async with toy_host() as host:
        result = await host.call("echo_config", {}, meta)
        assert result.is_error
        assert result.error["code"] == -32016 and result.error_name == "ACP_INVALID_LIMIT"
        assert result.model_response == {"error": result.error}
        # system_info is complete even on errors (spec 8.4).
        for key in SYSTEM_INFO_REQUIRED:
            assert key in result.system_info
        assert result.system_info["kind"] == "error"


@pytest.mark.parametrize("key", ["row_limit", "cost_limit_usd", "credentials", "config", "inline_max_bytes"])
async def test_limits_or_credentials_in_arguments_name_the_system_channel(toy_host, key) -> None:
    async with toy_host() as host:
        value = {"api_key": "CANARY-ARG-123456"} if key == "credentials" else 5
        result = await host.call("echo_config", {key: value})
        assert result.error_name == "ACP_INVALID_ARGUMENTS"
        assert "acp/configure or _meta.acp" in result.error["message"]
        assert "CANARY-ARG-123456" not in result.text
        assert "CANARY-ARG-123456" not in json.dumps(result.raw)
