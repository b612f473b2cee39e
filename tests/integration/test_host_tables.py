"""acp/read_table during a tools/call (spec 8.8)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from host_tables import StaticTable, StaticTables

from shared.errors import TableTruncated
from shared.host import ACP_HOST_CAPABILITY

pytestmark = pytest.mark.anyio
HEADERS = [{"name": "date", "type": "date"}, {"name": "sessions", "type": "integer"}]
ROWS = [{"date": "2026-01-01", "sessions": 10}, {"date": "2026-01-02", "sessions": 12}]


def _tables() -> StaticTables:
    return StaticTables(
        {
            "ds_sessions": StaticTable(headers=HEADERS, rows=ROWS),
            "ds_big": StaticTable(headers=HEADERS, rows=ROWS * 500, as_file=True),
            "rep_sample": TableTruncated("Report rep_sample only keeps a sample; pass ds_x."),
        }
    )


async def test_reads_inline_and_file_answers_with_call_id(toy_host) -> None:
    tables = _tables()
    async with toy_host(tables=tables) as host:
        inline = await host.call(
            "merge_table", {"table_ref": "ds_sessions", "column": "sessions"}, {"call_id": "call-77"}
        )
        assert inline.model_response == {"ref": "ds_sessions", "rows": 2, "columns": ["date", "sessions"], "sum": 22}
        assert tables.requests == [{"ref": "ds_sessions", "call_id": "call-77", "conversation": None}]
        as_file = await host.call("merge_table", {"table_ref": "ds_big", "column": "sessions"})
        assert as_file.model_response["rows"] == 1000 and as_file.model_response["sum"] == 11000
        assert tables.requests[-1]["ref"] == "ds_big"


async def test_host_refusals_become_typed_errors_with_the_hosts_message(toy_host) -> None:
    async with toy_host(tables=_tables()) as host:
        missing = await host.call("merge_table", {"table_ref": "ds_nope", "column": "sessions"})
        assert missing.error_name == "ACP_TABLE_NOT_FOUND" and missing.error["code"] == -32021
        assert "ds_nope" in missing.error["message"]
        truncated = await host.call("merge_table", {"table_ref": "rep_sample", "column": "sessions"})
        assert truncated.error_name == "ACP_TABLE_TRUNCATED" and "pass ds_x" in truncated.error["message"]
        # The server keeps serving after the refusals.
        assert not (await host.call("merge_table", {"table_ref": "ds_sessions", "column": "sessions"})).is_error


@pytest.mark.parametrize("capability", [None, {**ACP_HOST_CAPABILITY, "host_tables": False}])
async def test_without_host_tables_the_server_never_asks(toy_host, capability) -> None:
    tables = _tables()
    async with toy_host(tables=tables, capability=capability) as host:
        result = await host.call("merge_table", {"table_ref": "ds_sessions", "column": "sessions"})
        assert result.error_name == "ACP_HOST_TABLES_UNSUPPORTED" and result.error["code"] == -32020
        assert tables.requests == []


async def test_the_resolver_hears_the_conversation_of_the_call_in_flight(toy_host) -> None:
    """Spec 8.8.1: a conversation's table resolves only for that conversation; no conversation, no private table."""
    tables = StaticTables({"ds_private": StaticTable(headers=HEADERS, rows=ROWS, conversation="conv-a")})
    async with toy_host(tables=tables) as host:
        mine = await host.call(
            "merge_table", {"table_ref": "ds_private", "column": "sessions"}, {"conversation_id": "conv-a"}
        )
        assert mine.model_response["sum"] == 22
        other = await host.call(
            "merge_table", {"table_ref": "ds_private", "column": "sessions"}, {"conversation_id": "conv-b"}
        )
        assert other.error_name == "ACP_TABLE_NOT_FOUND"
        by_session = await host.call(
            "merge_table", {"table_ref": "ds_private", "column": "sessions"}, {"session_id": "conv-a"}
        )
        assert by_session.model_response["sum"] == 22  # without conversation_id the session_id names the conversation
        anonymous = await host.call("merge_table", {"table_ref": "ds_private", "column": "sessions"})
        assert anonymous.error_name == "ACP_TABLE_NOT_FOUND"
        assert [r["conversation"] for r in tables.requests] == ["conv-a", "conv-b", "conv-a", None]
        # Every call got a call_id of its own from the host, and the host forgot them once the calls ended.
        call_ids = [r["call_id"] for r in tables.requests]
        assert all(isinstance(c, str) and c.startswith("call-") for c in call_ids) and len(set(call_ids)) == 4
        assert host._conversations == {} and host._call_files == {}


async def test_a_file_answer_is_removed_after_its_call(toy_host) -> None:
    seen: list[Path] = []

    class Recording(StaticTables):
        async def __call__(self, ref, *, call_id, conversation):
            answer = await super().__call__(ref, call_id=call_id, conversation=conversation)
            seen.append(answer.path)
            assert answer.path.exists()
            return answer

    async with toy_host(
        tables=Recording({"ds_big": StaticTable(headers=HEADERS, rows=ROWS * 500, as_file=True)})
    ) as host:
        result = await host.call("merge_table", {"table_ref": "ds_big", "column": "sessions"})
        assert result.model_response["sum"] == 11000
        assert len(seen) == 1 and not seen[0].exists()


async def test_a_slow_resolver_does_not_hold_up_other_calls(toy_host) -> None:
    """The host answers acp/read_table off its read loop: another call completes while one table is pending."""
    release = anyio.Event()

    class Waiting(StaticTables):
        async def __call__(self, ref, *, call_id, conversation):
            await release.wait()
            return await super().__call__(ref, call_id=call_id, conversation=conversation)

    async with toy_host(tables=Waiting({"ds": StaticTable(headers=HEADERS, rows=ROWS)})) as host:
        results: dict[str, object] = {}

        async def merge() -> None:
            results["merge"] = await host.call("merge_table", {"table_ref": "ds", "column": "sessions"})

        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(merge)
                config = await host.call("echo_config", {})
                assert not config.is_error and "merge" not in results
                release.set()
        assert results["merge"].model_response["sum"] == 22


async def test_a_failing_resolver_is_an_error_without_its_details(toy_host) -> None:
    class Broken(StaticTables):
        async def __call__(self, ref, *, call_id, conversation):
            raise RuntimeError("database password hunter2 rejected")

    async with toy_host(tables=Broken({})) as host:
        result = await host.call("merge_table", {"table_ref": "ds", "column": "sessions"})
        assert result.error_name == "ACP_UPSTREAM_ERROR" and "failed to read table 'ds'" in result.error["message"]
        assert "hunter2" not in json.dumps(result.raw)


async def test_a_host_without_a_resolver_finds_no_table(toy_host) -> None:
    async with toy_host() as host:
        result = await host.call("merge_table", {"table_ref": "ds", "column": "sessions"})
        assert result.error_name == "ACP_TABLE_NOT_FOUND" and "keeps no tables" in result.error["message"]
