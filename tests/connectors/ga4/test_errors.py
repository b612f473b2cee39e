"""Every fault of the fake GA4 maps to the right ACP error with a next step, transient ones are retried
within ACP_GA4_RETRY_S, a 401 refreshes the token, a cancelled call stops paging, and the server keeps
serving afterwards."""

from __future__ import annotations

import datetime as dt
import json

import anyio
import pytest
from fakes.ga4 import FakeGA4
from ga4_support import PROPERTY

pytestmark = pytest.mark.anyio
REPORT = "runReport"


def call(fake: FakeGA4) -> tuple[str, dict[str, object]]:
    end = fake.today(PROPERTY) - dt.timedelta(days=1)
    start = end - dt.timedelta(days=6)
    arguments = {"resource_id": PROPERTY, "metrics": ["sessions"], "dimensions": ["deviceCategory"]}
    return "run_report", {**arguments, "start_date": str(start), "end_date": str(end)}


def attempts(fake: FakeGA4, route: str = REPORT) -> int:
    return len(fake.data.server.requests_for(route))


async def still_serves(host, meta, fake: FakeGA4) -> None:
    ok = await host.call(*call(fake), meta())
    assert ok.kind == "extraction" and ok.model_response["total_rows"] == 3, ok.error


@pytest.mark.parametrize(
    ("route", "status", "reason", "message", "error", "says"),
    [
        (REPORT, 403, "PERMISSION_DENIED", "No access", "ACP_RESOURCE_NOT_FOUND", "cannot read this property"),
        (REPORT, 403, "RATE_LIMIT_EXCEEDED", "Too many", "ACP_UPSTREAM_ERROR", "try again later"),
        (REPORT, 404, None, "Property not found", "ACP_RESOURCE_NOT_FOUND", "autocontext without arguments"),
        (REPORT, 400, None, "Field x is odd", "ACP_INVALID_ARGUMENTS", "Fix the arguments"),
        ("getMetadata", 503, None, "Down", "ACP_UPSTREAM_ERROR", "Wait a minute and try again"),
        ("token", 400, "invalid_grant", "Revoked", "ACP_CREDENTIALS_INVALID", "(invalid_grant)"),
    ],
)
async def test_each_lasting_fault_is_its_acp_error_and_the_server_keeps_serving(
    ga4_host, meta, fake: FakeGA4, route, status, reason, message, error, says
) -> None:
    fake.data.server.fail(route, status, reason=reason, message=message, times=100)  # outlasts every retry
    async with ga4_host() as host:
        failed = await host.call(*call(fake), meta())
        assert failed.error_name == error, failed.error
        assert says.lower() in failed.error["message"].lower()
        fake.data.server.clear_faults()
        await still_serves(host, meta, fake)


@pytest.mark.parametrize(("period", "refill"), [("day", "midnight Pacific Time"), ("hour", "within the hour")])
async def test_exhausted_quota_says_which_and_when_it_refills(ga4_host, meta, fake: FakeGA4, period, refill) -> None:
    async with ga4_host() as host:
        await still_serves(host, meta, fake)
        before = attempts(fake)
        fake.exhaust_tokens(PROPERTY, period)
        failed = await host.call(*call(fake), meta())
        assert failed.error_name == "ACP_UPSTREAM_ERROR"
        assert (
            f"{'daily' if period == 'day' else 'hourly'}" in failed.error["message"]
            and refill in failed.error["message"]
        )
        assert attempts(fake) - before == 1  # a 429 is not retried
        fake.data.reset_quotas()
        await still_serves(host, meta, fake)


@pytest.mark.parametrize("status", [500, 503])
async def test_a_passing_fault_is_retried_and_the_call_succeeds(ga4_host, meta, fake: FakeGA4, status) -> None:
    async with ga4_host() as host:
        await still_serves(host, meta, fake)  # metadata and property known: only the report is left
        before = attempts(fake)
        fake.data.server.fail(REPORT, status, times=2)
        await still_serves(host, meta, fake)
    assert attempts(fake) - before == 3  # two refused, then the answer


async def test_a_401_refreshes_the_token_and_replays(ga4_host, meta, fake: FakeGA4) -> None:
    async with ga4_host() as host:
        await still_serves(host, meta, fake)
        granted = sum(fake.oauth.tokens_granted.values())
        fake.oauth.revoke_access_tokens()  # the next request's token is refused: 401
        await still_serves(host, meta, fake)
    assert sum(fake.oauth.tokens_granted.values()) == granted + 1


async def test_a_slow_answer_is_waited_for(ga4_host, meta, fake: FakeGA4) -> None:
    async with ga4_host() as host:
        fake.data.server.slow(REPORT, 0.3, times=2)
        await still_serves(host, meta, fake)


async def test_a_cancelled_call_asks_for_no_more_pages(ga4_host, meta, fake: FakeGA4) -> None:
    end = fake.today(PROPERTY) - dt.timedelta(days=1)
    arguments = {
        "resource_id": PROPERTY,
        "metrics": ["eventCount"],
        "dimensions": ["date", "eventName"],
        "start_date": str(end - dt.timedelta(days=59)),
        "end_date": str(end),
    }
    pages = 10
    async with ga4_host() as host:
        await still_serves(host, meta, fake)
        before = attempts(fake)
        fake.data.server.slow(REPORT, 0.25, times=pages)
        with anyio.move_on_after(0.6):  # two or three pages in
            await host.call("run_report", arguments, meta(config={"page_size": 40}))
        await anyio.sleep(1.0)  # time for four more pages, had the paging gone on
        asked = attempts(fake) - before
        assert 1 <= asked <= 4
        fake.data.server.clear_faults()
        await still_serves(host, meta, fake)


async def test_a_lasting_500_gives_up_after_retries_without_leaking_a_credential(
    ga4_host, meta, fake: FakeGA4, credentials
) -> None:
    key_line = json.loads(credentials["service_account"])["private_key"].splitlines()[1]  # a PEM leaks by lines
    fake.data.server.fail(REPORT, 500, message=f"backend saw {key_line}", times=100)
    async with ga4_host() as host:
        failed = await host.call(*call(fake), meta())
        assert attempts(fake) > 1  # retried within ACP_GA4_RETRY_S
        assert failed.error_name == "ACP_UPSTREAM_ERROR" and "kept failing after retries" in failed.error["message"]
        assert "[REDACTED]" in failed.error["message"] and key_line not in json.dumps(failed.error)
        fake.data.server.clear_faults()
        await still_serves(host, meta, fake)


async def test_an_endpoint_that_is_neither_https_nor_loopback_is_refused(ga4_host, meta, fake: FakeGA4) -> None:
    async with ga4_host(env={"ACP_GA4_DATA_ENDPOINT": "http://analyticsdata.example.com"}) as host:
        result = await host.call(*call(fake), meta())
    assert result.error_name == "ACP_UPSTREAM_ERROR" and "ACP_GA4_DATA_ENDPOINT" in result.error["message"]


async def test_missing_credentials_are_named_before_any_request(ga4_host, fake: FakeGA4) -> None:
    before = len(fake.data.server.requests) + len(fake.admin.server.requests)
    async with ga4_host() as host:
        result = await host.call(*call(fake), {"autocontext_delivered": True})
    assert result.error_name == "ACP_CREDENTIALS_MISSING"
    assert len(fake.data.server.requests) + len(fake.admin.server.requests) == before
