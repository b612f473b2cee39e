"""Every fault of the fake Search Console maps to the right ACP error with its next step, transient ones
are retried within ACP_GSC_RETRY_S, and the server keeps serving afterwards."""

from __future__ import annotations

import json

import pytest
from fakes.search_console import FakeSearchConsole
from gsc_support import DOMAIN, PREFIX

pytestmark = pytest.mark.anyio
QUERY = "searchanalytics.query"
CALL = (
    "search_analytics",
    {"resource_id": DOMAIN, "dimensions": ["device"], "start_date": "20daysAgo", "end_date": "5daysAgo"},
)


def _attempts(fake: FakeSearchConsole, route: str) -> int:
    return sum(1 for r in fake.requests if r.route == route)


async def _still_serves(host, meta) -> None:
    ok = await host.call(*CALL, meta())
    assert ok.kind == "extraction" and ok.model_response["total_rows"] == 3, ok.error


@pytest.mark.parametrize(
    ("route", "status", "reason", "error", "says"),
    [
        (QUERY, 401, "authError", "ACP_CREDENTIALS_INVALID", "reconnect the source"),
        (QUERY, 403, "forbidden", "ACP_RESOURCE_NOT_FOUND", "Users and permissions"),
        (QUERY, 403, "userRateLimitExceeded", "ACP_UPSTREAM_ERROR", "Wait a minute"),
        (QUERY, 429, "rateLimitExceeded", "ACP_UPSTREAM_ERROR", "Wait a minute"),
        (QUERY, 500, "backendError", "ACP_UPSTREAM_ERROR", "try again"),
        (QUERY, 503, None, "ACP_UPSTREAM_ERROR", "try again"),
        (QUERY, 400, "invalid", "ACP_INVALID_ARGUMENTS", "Fix the arguments"),
        ("sites.list", 500, "backendError", "ACP_UPSTREAM_ERROR", "try again"),
        ("sites.list", 401, "authError", "ACP_CREDENTIALS_INVALID", "reconnect the source"),
        ("token", 400, "invalid_grant", "ACP_CREDENTIALS_INVALID", "(invalid_grant)"),
    ],
)
async def test_each_lasting_fault_is_its_acp_error_and_the_server_keeps_serving(
    gsc_host, meta, fake: FakeSearchConsole, route: str, status: int, reason: str | None, error: str, says: str
) -> None:
    fake.fail(route, status, reason=reason, times=100)  # lasts past every retry and refresh
    async with gsc_host() as host:
        failed = await host.call(*CALL, meta())
        assert failed.error_name == error, failed.error
        assert says.lower() in failed.error["message"].lower()
        fake.server.clear_faults()
        await _still_serves(host, meta)


@pytest.mark.parametrize(("status", "reason"), [(429, "rateLimitExceeded"), (500, "backendError"), (503, None)])
async def test_a_passing_fault_is_retried_and_the_call_succeeds(gsc_host, meta, fake, status, reason) -> None:
    async with gsc_host() as host:
        await _still_serves(host, meta)  # properties listed, reliable day known: only the query is left
        before = _attempts(fake, QUERY)
        fake.fail(QUERY, status, reason=reason, times=2)
        await _still_serves(host, meta)
    assert _attempts(fake, QUERY) - before == 4  # two refused, then the page and the end of data


async def test_a_401_refreshes_the_token_and_replays(gsc_host, meta, fake: FakeSearchConsole) -> None:
    async with gsc_host() as host:
        await _still_serves(host, meta)
        granted = sum(fake.oauth.tokens_granted.values())
        fake.oauth.revoke_access_tokens()  # the next request's token is refused: 401
        await _still_serves(host, meta)
    assert sum(fake.oauth.tokens_granted.values()) == granted + 1


async def test_a_slow_answer_is_waited_for(gsc_host, meta, fake) -> None:
    async with gsc_host() as host:
        fake.slow(QUERY, 0.3, times=2)
        await _still_serves(host, meta)


async def test_a_failing_block_carries_its_error_and_the_others_arrive(gsc_host, meta, fake) -> None:
    fake.fail("sitemaps.list", 500, times=100)
    async with gsc_host() as host:
        result = await host.call(
            "autocontext", {"resource_id": DOMAIN, "request_data": ["sitemaps", "devices"]}, meta()
        )
    blocks = {b["id"]: b for b in result.model_response}
    assert "try again" in blocks["sitemaps"]["error"].lower() and "data" not in blocks["sitemaps"]
    assert blocks["devices"]["data"]["rows"]
    assert result.system_info["warnings"] == ["1 of 2 autocontext blocks failed; see their error field."]


async def test_inspect_urls_fails_whole_when_the_credentials_do(gsc_host, meta, fake) -> None:
    urls = fake.pages(DOMAIN)[:6]
    async with gsc_host() as host:
        await _still_serves(host, meta)
        fake.fail("urlInspection.index.inspect", 401, reason="authError", times=100)
        result = await host.call("inspect_urls", {"resource_id": DOMAIN, "urls": urls}, meta())
        assert result.error_name == "ACP_CREDENTIALS_INVALID"
        fake.server.clear_faults()
        await _still_serves(host, meta)


async def test_what_the_source_is_told_never_carries_a_credential(gsc_host, meta, fake, credentials) -> None:
    key_line = json.loads(credentials["service_account"])["private_key"].splitlines()[1]  # a PEM leaks by lines
    fake.fail(QUERY, 500, message=f"backend saw {key_line}", times=100)
    async with gsc_host() as host:
        failed = await host.call(*CALL, meta())
    assert failed.error_name == "ACP_UPSTREAM_ERROR" and "backend saw [REDACTED]" in failed.error["message"]
    assert key_line not in json.dumps(failed.error)


async def test_an_endpoint_that_is_neither_https_nor_loopback_is_refused(gsc_host, meta) -> None:
    async with gsc_host(env={"ACP_GSC_ENDPOINT": "http://searchconsole.example.com"}) as host:
        result = await host.call("list_sitemaps", {"resource_id": PREFIX}, meta())
    assert result.error_name == "ACP_UPSTREAM_ERROR" and "ACP_GSC_ENDPOINT" in result.error["message"]


async def test_missing_credentials_are_named_before_any_request(gsc_host, fake) -> None:
    before = len(fake.requests)
    async with gsc_host() as host:
        result = await host.call(*CALL, {"autocontext_delivered": True})
    assert result.error_name == "ACP_CREDENTIALS_MISSING" and len(fake.requests) == before
