"""Upstream faults and bad input: typed errors that say what to do next, retries where they
are safe, and a server that keeps serving. No credential ever leaks."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from bigquery_support import DATASET, PROJECT, meta, service_account
from fakes.bigquery import FakeBigQuery

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # a server process per test, timed faults
QUERY = f"SELECT event_name FROM `{PROJECT}.{DATASET}.events_*` WHERE _TABLE_SUFFIX = '20260901'"


async def test_transient_429_and_500_are_retried(bq_host, fake: FakeBigQuery, credentials) -> None:
    async with bq_host() as host:
        for route, status in (("jobs.insert", 429), ("jobs.getQueryResults", 500), ("tables.list", 503)):
            fake.fail(route, status, times=1, reason="backendError" if status != 429 else "rateLimitExceeded")
            if route == "tables.list":
                result = await host.call(
                    "autocontext",
                    {"resource_id": f"{PROJECT}.{DATASET}", "request_data": ["tables"]},
                    meta(credentials),
                )
                assert "data" in result.model_response[0], result.model_response
            else:
                result = await host.call("execute_query", {"query": QUERY}, meta(credentials))
                assert result.kind == "extraction", (route, result.error)
            assert fake.server.pending_faults(route) == 0


async def test_persistent_faults_become_upstream_errors_and_the_server_keeps_serving(
    bq_host, fake: FakeBigQuery, credentials
) -> None:
    async with bq_host() as host:
        fake.fail("jobs.insert", 500, times=1000, reason="backendError")
        try:
            with anyio.fail_after(20):
                failed = await host.call("execute_query", {"query": QUERY}, meta(credentials))
        finally:
            fake.server.clear_faults()
        assert failed.error_name == "ACP_UPSTREAM_ERROR" and "Try again" in failed.error["message"]
        fake.fail("tables.get", 429, times=1000, reason="rateLimitExceeded")
        try:
            limited = await host.call("get_table", {"resource_id": f"{PROJECT}.reporting.daily"}, meta(credentials))
        finally:
            fake.server.clear_faults()
        assert limited.error_name == "ACP_UPSTREAM_ERROR"
        ok = await host.call("execute_query", {"query": QUERY}, meta(credentials))
        assert ok.kind == "extraction"


async def test_401_refreshes_and_replays_then_bad_credentials_are_invalid(bq_host, fake: FakeBigQuery) -> None:
    credentials = service_account(fake)
    async with bq_host() as host:
        assert (await host.call("execute_query", {"query": QUERY}, meta(credentials))).kind == "extraction"
        before = fake.oauth.token_requests["urn:ietf:params:oauth:grant-type:jwt-bearer"]
        fake.oauth.revoke_access_tokens()
        replayed = await host.call("execute_query", {"query": QUERY}, meta(credentials))
        assert replayed.kind == "extraction"
        assert fake.oauth.token_requests["urn:ietf:params:oauth:grant-type:jwt-bearer"] == before + 1

        expired = {"type": "oauth", "access_token": "ya29.not-issued-by-google", "email": "ana@example.com"}
        rejected = await host.call("execute_query", {"query": QUERY}, meta(expired))
        assert rejected.error_name == "ACP_CREDENTIALS_INVALID" and "reconnect" in rejected.error["message"]

        fake.fail("token", 400, reason="invalid_grant")
        revoked = await host.call("execute_query", {"query": QUERY}, meta(service_account(fake)))
        assert revoked.error_name == "ACP_CREDENTIALS_INVALID" and "invalid_grant" in revoked.error["message"]

        # What a Google login gives the host; refreshes go to ACP_GOOGLE_TOKEN_URI (the fake's endpoint).
        issued = fake.oauth.oauth_credentials(with_access_token=False)
        refreshing = {"type": "oauth", **{k: v for k, v in issued.items() if k != "token_uri"}}
        refreshed = await host.call("execute_query", {"query": QUERY}, meta(refreshing))
        assert refreshed.kind == "extraction", refreshed.error


async def test_403_and_404_are_typed(bq_host, fake: FakeBigQuery, credentials) -> None:
    fake.add_dataset(PROJECT, "private", location="EU")
    fake.add_table(PROJECT, "private", "salaries", [{"name": "amount", "type": "INTEGER"}], [{"amount": 1}])
    fake.forbid(PROJECT, "private")
    async with bq_host() as host:
        denied = await host.call(
            "execute_query", {"query": f"SELECT amount FROM `{PROJECT}.private.salaries`"}, meta(credentials)
        )
        assert denied.error_name == "ACP_CREDENTIALS_INVALID" and "permission" in denied.error["message"]
        missing = await host.call("autocontext", {"resource_id": f"{PROJECT}.no_such_dataset"}, meta(credentials))
        assert missing.error_name == "ACP_RESOURCE_NOT_FOUND"
        gone = await host.call("get_table", {"resource_id": f"{PROJECT}.reporting.gone"}, meta(credentials))
        assert gone.error_name == "ACP_RESOURCE_NOT_FOUND" and "autocontext" in gone.error["message"]


async def test_a_slow_answer_does_not_block_other_calls(bq_host, fake: FakeBigQuery, credentials) -> None:
    fake.slow("tables.get", 3)
    finished: list[str] = []
    async with bq_host() as host:

        async def slow() -> None:
            result = await host.call("get_table", {"resource_id": f"{PROJECT}.reporting.daily"}, meta(credentials))
            assert result.kind == "info"
            finished.append("slow")

        async def quick() -> None:
            await anyio.sleep(0.3)
            result = await host.call("validate_query", {"query": "SELECT 1"}, meta(credentials))
            assert result.model_response["valid"] is True
            finished.append("quick")

        async with anyio.create_task_group() as group:
            group.start_soon(slow)
            group.start_soon(quick)
    assert finished == ["quick", "slow"]


async def test_bad_input_gets_typed_errors(bq_host, fake: FakeBigQuery, credentials, tmp_path: Path) -> None:
    async with bq_host() as host:
        bad_id = await host.call(
            "execute_query", {"resource_id": "Not A Project!", "query": "SELECT 1"}, meta(credentials)
        )
        assert bad_id.error_name == "ACP_INVALID_ARGUMENTS" and "<project>" in bad_id.error["message"]
        no_query = await host.call("execute_query", {}, meta(credentials))
        assert no_query.error_name == "ACP_INVALID_ARGUMENTS"
        pasted_wrong = await host.call(
            "execute_query",
            {"query": "SELECT 1"},
            meta({"type": "service_account", "service_account": json.dumps({"type": "authorized_user"})}),
        )
        assert pasted_wrong.error_name == "ACP_CREDENTIALS_INVALID"
        bad_config = await host.call(
            "execute_query", {"query": "SELECT 1"}, meta(credentials, config={"price_per_tib_usd": -1})
        )
        assert bad_config.error_name == "ACP_INVALID_ARGUMENTS"
        leftover = await host.call("execute_query", {"query": "SELECT '{{start_date}}'"}, meta(credentials))
        assert leftover.error_name == "ACP_INVALID_ARGUMENTS"
    async with bq_host(env={"ACP_BIGQUERY_ENDPOINT": "http://203.0.113.7:9"}) as host:
        remote = await host.call("execute_query", {"query": "SELECT 1"}, meta(credentials))
        assert remote.error_name == "ACP_UPSTREAM_ERROR" and "127.0.0.1" in remote.error["message"]


async def test_no_credential_reaches_output_logs_caches_or_files(bq_host, fake: FakeBigQuery, tmp_path: Path) -> None:
    info = fake.oauth.service_account_info(PROJECT)
    credentials = {"type": "service_account", "service_account": json.dumps(info)}
    oauth = {"type": "oauth", **{k: v for k, v in fake.oauth.oauth_credentials().items() if k != "token_uri"}}
    secrets = [
        info["private_key"].splitlines()[1],
        oauth["access_token"],
        oauth["refresh_token"],
        oauth["client_secret"],
    ]
    seen: list[str] = []
    async with bq_host(env={"ACP_LOG_LEVEL": "debug"}) as host:
        for creds in (credentials, oauth):
            for name, args in (
                ("autocontext", {"resource_id": f"{PROJECT}.{DATASET}"}),
                ("execute_query", {"query": QUERY}),
                ("execute_query", {"query": "SELECT nope FROM"}),
                ("validate_query", {"query": QUERY}),
            ):
                seen.append(json.dumps((await host.call(name, args, meta(creds))).raw))
        fake.fail("jobs.insert", 403, reason="accessDenied", message="Access Denied")
        seen.append(json.dumps((await host.call("execute_query", {"query": QUERY}, meta(credentials))).raw))
        seen.append(host.stderr())
    for path in tmp_path.rglob("*"):
        if path.is_file():
            seen.append(path.read_text("utf-8", errors="replace"))
    blob = "\n".join(seen)
    assert blob and all(secret not in blob for secret in secrets)


async def test_a_server_without_the_bigquery_extra_says_how_to_install_it(
    bq_host, fake: FakeBigQuery, credentials, tmp_path: Path
) -> None:
    """A regular ``google`` package first on the path hides the installed Google libraries, as a missing extra would."""
    (tmp_path / "stub" / "google").mkdir(parents=True)
    (tmp_path / "stub" / "google" / "__init__.py").write_text("")
    async with bq_host(env={"PYTHONPATH": str(tmp_path / "stub")}) as host:
        result = await host.call("execute_query", {"query": "SELECT 1 AS one"}, meta(credentials))
        assert result.error_name == "ACP_UPSTREAM_ERROR"
        assert "pip install 'acp-connectors[bigquery]'" in result.error["message"]
        assert (await host.call("validate_query", {"query": "SELECT 1"}, meta(credentials))).error_name == (
            "ACP_UPSTREAM_ERROR"
        )  # and the server keeps serving
