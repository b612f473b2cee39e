"""Idempotency keys of the writing tools: the rules, one call at a time and concurrently. shared/_idempotency.py."""

from __future__ import annotations

from dataclasses import replace

import anyio
import pytest
from anyio import wait_all_tasks_blocked
from toy_connector import CONNECTOR as TOY

from shared._idempotency import IdempotentCalls, fingerprint
from shared._runtime import AcpRuntime
from shared.errors import InvalidArguments

pytestmark = pytest.mark.anyio
SCOPE = ("toy:team-a", "insert_rows", "key-1")


class Writer:
    """Counts the writes; each one waits for ``gate`` when one is set."""

    def __init__(self) -> None:
        self.writes = 0
        self.gate: anyio.Event | None = None

    async def __call__(self) -> dict[str, int]:
        self.writes += 1
        if self.gate is not None:
            await self.gate.wait()
        return {"inserted_rows": 10, "write": self.writes}


async def test_a_retry_returns_the_first_answer_without_running_again() -> None:
    calls, write = IdempotentCalls(), Writer()
    digest = fingerprint({"table_ref": "ds", "resource_id": "shop.visits"})
    first = await calls.run(SCOPE, digest, write)
    again = await calls.run(SCOPE, digest, write)
    assert first == ({"inserted_rows": 10, "write": 1}, False)
    assert again == ({"inserted_rows": 10, "write": 1}, True) and write.writes == 1
    # Another key, tool or identity is another write.
    for scope in (("toy:team-a", "insert_rows", "key-2"), ("toy:team-a", "load_rows", "key-1"), ("toy:b", *SCOPE[1:])):
        assert (await calls.run(scope, digest, write))[1] is False
    assert write.writes == 4


async def test_the_same_key_with_other_arguments_is_refused() -> None:
    calls, write = IdempotentCalls(), Writer()
    await calls.run(SCOPE, fingerprint({"table_ref": "ds"}), write)
    with pytest.raises(InvalidArguments) as refused:
        await calls.run(SCOPE, fingerprint({"table_ref": "other"}), write)
    assert "different arguments" in refused.value.message and refused.value.data == {"field": "idempotency_key"}
    assert write.writes == 1
    assert fingerprint({"a": 1, "b": [1, 2]}) == fingerprint({"b": [1, 2], "a": 1})  # key order does not matter


async def test_a_retry_during_the_first_call_waits_for_its_answer() -> None:
    calls, write = IdempotentCalls(), Writer()
    write.gate = anyio.Event()
    answers: list[tuple[dict[str, int], bool]] = []
    digest = fingerprint({"table_ref": "ds"})

    async def call() -> None:
        answers.append(await calls.run(SCOPE, digest, write))

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await wait_all_tasks_blocked()  # the first call is writing
        group.start_soon(call)
        await wait_all_tasks_blocked()  # the retry is blocked too: waiting, not writing
        assert write.writes == 1 and answers == []
        write.gate.set()
    assert answers == [({"inserted_rows": 10, "write": 1}, False), ({"inserted_rows": 10, "write": 1}, True)]


async def test_a_failed_or_cancelled_first_call_leaves_nothing_behind() -> None:
    calls, write = IdempotentCalls(), Writer()
    digest = fingerprint({"table_ref": "ds"})

    async def failing() -> dict[str, int]:
        raise RuntimeError("the source refused the write")

    with pytest.raises(RuntimeError):
        await calls.run(SCOPE, digest, failing)
    assert await calls.run(SCOPE, digest, write) == ({"inserted_rows": 10, "write": 1}, False)
    write.gate = anyio.Event()
    other = ("toy:team-a", "insert_rows", "key-9")
    with anyio.move_on_after(0.05):
        await calls.run(other, digest, write)
    write.gate.set()
    assert await calls.run(other, digest, write) == ({"inserted_rows": 10, "write": 3}, False)


async def test_answers_are_kept_for_a_bounded_time_and_number() -> None:
    now = [0.0]
    calls, write = IdempotentCalls(ttl_s=60, kept=3, clock=lambda: now[0]), Writer()
    digest = fingerprint({})
    await calls.run(SCOPE, digest, write)
    now[0] = 59.0
    assert (await calls.run(SCOPE, digest, write))[1] is True
    now[0] = 61.0
    assert (await calls.run(SCOPE, digest, write))[1] is False  # expired: a new write
    for n in range(5):
        await calls.run(("toy:team-a", "insert_rows", f"k{n}"), digest, write)
    assert len(calls._entries) == 3
    assert (await calls.run(("toy:team-a", "insert_rows", "k0"), digest, write))[1] is False  # the oldest went


def test_a_writing_tool_must_answer_with_info() -> None:
    """The replay of a retried write reuses the first call's Info; an extraction's tables could not be sent twice."""
    writer = replace(TOY.tools[0], name="write_report", kind="extraction", read_only=False)
    with pytest.raises(ValueError, match="writing tool"):
        AcpRuntime(replace(TOY, tools=(*TOY.tools, writer)))
    AcpRuntime(replace(TOY, tools=(*TOY.tools, replace(writer, kind="info"))))
