"""What CallContext gives a tool across the wire: progress notifications and conversation state."""

from __future__ import annotations

import itertools
import json
import re

import pytest
from toy_connector import TEST_CREDENTIALS

pytestmark = pytest.mark.anyio
META = {"credentials": TEST_CREDENTIALS, "autocontext_delivered": True}


async def test_progress_reaches_a_client_that_sent_a_progress_token(toy_host) -> None:
    async with toy_host() as host:
        progress: list[dict] = []
        result = await host.call("tally", {"steps": 3}, META, progress=progress)
        assert not result.is_error
        assert [p["progress"] for p in progress] == [1, 2, 3]
        assert {p["total"] for p in progress} == {3}
        assert progress[-1]["message"] == "step 3 of 3"


async def test_no_progress_token_means_no_progress_notifications(toy_host) -> None:
    async with toy_host() as host:
        result = await host.call("tally", {"steps": 2}, META)  # no token: the tool's reports are dropped
        assert result.model_response == {"calls": 1}


def _increasing(progress: list[dict]) -> bool:
    values = [p["progress"] for p in progress]
    return all(a < b for a, b in itertools.pairwise(values))  # MCP: each larger than the last


async def test_rows_written_to_a_table_are_reported_as_they_arrive(toy_host) -> None:
    """Any connector streaming through TableWriter reports rows fetched, with no progress call of its own."""
    async with toy_host() as host:
        progress: list[dict] = []
        result = await host.call("stream", {"rows": 20_000, "pause_s": 0.05}, META, progress=progress)
        assert not result.is_error, result.error
        assert result.system_data["row_count"] == 20_000
        assert len(progress) >= 3 and _increasing(progress)
        assert all(p["total"] is None for p in progress)  # a cursor does not know its row count
        assert all(p["message"].startswith(f"{int(p['progress']):,} rows fetched (") for p in progress)
        assert progress[-1]["progress"] == 20_000  # the finished count goes out whatever the throttle says
        shown = re.fullmatch(r"20,000 rows fetched \((\d+\.\d) KB\)", progress[-1]["message"])
        assert shown, progress[-1]
        table_bytes = len(json.dumps(result.rows(), separators=(",", ":")))
        assert abs(float(shown.group(1)) * 1000 - table_bytes) < 0.05 * table_bytes  # the table's JSON, give or take


async def test_a_heartbeat_comes_while_the_source_has_no_row_yet(toy_host) -> None:
    """A long aggregation produces no row for a while: heartbeats say it is still running, and for how long."""
    async with toy_host(env={"ACP_PROGRESS_HEARTBEAT_S": "0.2"}) as host:
        progress: list[dict] = []
        result = await host.call("stream", {"rows": 3000, "wait_s": 1.0}, META, progress=progress)
        assert not result.is_error, result.error
        heartbeats = [p for p in progress if p["message"].startswith("Still running after ")]
        assert len(heartbeats) >= 2 and progress[: len(heartbeats)] == heartbeats  # all before the first row
        assert all(p["message"].endswith("s; no rows yet.") for p in heartbeats)
        assert progress[len(heartbeats) :] and _increasing(progress)
        assert progress[-1]["progress"] == 3000
        assert re.fullmatch(r"3,000 rows fetched \(\d+\.\d KB\)", progress[-1]["message"])


async def test_no_heartbeat_without_a_progress_token(toy_host) -> None:
    async with toy_host(env={"ACP_PROGRESS_HEARTBEAT_S": "0.05"}) as host:
        result = await host.call("stream", {"rows": 10, "wait_s": 0.3}, META)
        assert not result.is_error and result.system_data["row_count"] == 10


async def test_conversation_state_is_per_conversation_and_per_credentials(toy_host) -> None:
    async with toy_host() as host:
        first = {**META, "conversation_id": "conv-a"}
        assert (await host.call("tally", {}, first)).model_response == {"calls": 1}
        assert (await host.call("tally", {}, first)).model_response == {"calls": 2}
        # session_id stands in when there is no conversation_id (spec 5.2).
        other = {**META, "session_id": "conv-b"}
        assert (await host.call("tally", {}, other)).model_response == {"calls": 1}
        # Other credentials never see the state of the same conversation.
        stranger = {**first, "credentials": {**TEST_CREDENTIALS, "account": "team-b"}}
        assert (await host.call("tally", {}, stranger)).model_response == {"calls": 1}
        assert (await host.call("tally", {}, first)).model_response == {"calls": 3}
