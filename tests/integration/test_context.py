"""What CallContext gives a tool across the wire: progress notifications and conversation state."""

from __future__ import annotations

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
