"""Unit tests for SessionState in shared/_session.py: per-session ACP state stays bounded (spec 5.2, 7.5).

One record serves every stateless (2026-07-28) request of a process, so each gateway conversation
adds an on_first_call pair: without a bound a long-running server would grow with every one.
"""

from __future__ import annotations

from shared._session import CONVERSATIONS_KEPT, DELIVERIES_KEPT, SessionState


def test_on_first_call_deliveries_are_bounded_and_forget_the_least_recently_used() -> None:
    state = SessionState()
    state.mark_delivered(("toy:a", "active", "acc_1"))
    for n in range(3 * DELIVERIES_KEPT):
        state.mark_delivered(("toy:a", f"conversation-{n}", "acc_1"))
        if n % 100 == 0:
            assert state.was_delivered(("toy:a", "active", "acc_1"))  # in use: kept
    assert len(state.delivered) == DELIVERIES_KEPT
    assert state.was_delivered(("toy:a", "active", "acc_1"))
    assert state.was_delivered(("toy:a", f"conversation-{3 * DELIVERIES_KEPT - 1}", "acc_1"))
    assert not state.was_delivered(("toy:a", "conversation-0", "acc_1"))  # the oldest went first
    assert not state.was_delivered(("toy:b", "active", "acc_1"))  # another identity is a first time


def test_conversations_are_bounded_and_keep_their_state_while_used() -> None:
    state = SessionState()
    state.conversation("toy:a", "active")["calls"] = 1
    for n in range(2 * CONVERSATIONS_KEPT):
        state.conversation("toy:a", f"conversation-{n}")
        if n % 100 == 0:
            assert state.conversation("toy:a", "active") == {"calls": 1}
    assert len(state.conversations) == CONVERSATIONS_KEPT
    assert state.conversation("toy:a", "active") == {"calls": 1}
    assert state.conversation("toy:a", "conversation-0") == {}  # forgotten, so it starts over
