"""acp/read_table during a tools/call (spec 8.8)."""

from __future__ import annotations

import pytest

from shared.host import ACP_HOST_CAPABILITY, HostTable

pytestmark = pytest.mark.anyio
HEADERS = [{"name": "date", "type": "date"}, {"name": "sessions", "type": "integer"}]
ROWS = [{"date": "2026-01-01", "sessions": 10}, {"date": "2026-01-02", "sessions": 12}]


def _tables() -> dict[str, HostTable]:
    return {
        "ds_sessions": HostTable(headers=HEADERS, rows=ROWS),
        "ds_big": HostTable(headers=HEADERS, rows=ROWS * 500, as_file=True),
        "rep_sample": HostTable(error_code=-32022, error_message="Report rep_sample only keeps a sample; pass ds_x."),
    }


async def test_reads_inline_and_file_answers_with_call_id(toy_host) -> None:
    async with toy_host(tables=_tables()) as host:
        inline = await host.call(
            "merge_table", {"table_ref": "ds_sessions", "column": "sessions"}, {"call_id": "call-77"}
        )
        assert inline.model_response == {"ref": "ds_sessions", "rows": 2, "columns": ["date", "sessions"], "sum": 22}
        assert host.read_table_requests == [{"ref": "ds_sessions", "call_id": "call-77"}]
        as_file = await host.call("merge_table", {"table_ref": "ds_big", "column": "sessions"})
        assert as_file.model_response["rows"] == 1000 and as_file.model_response["sum"] == 11000
        assert host.read_table_requests[-1]["ref"] == "ds_big"


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
    async with toy_host(tables=_tables(), capability=capability) as host:
        result = await host.call("merge_table", {"table_ref": "ds_sessions", "column": "sessions"})
        assert result.error_name == "ACP_HOST_TABLES_UNSUPPORTED" and result.error["code"] == -32020
        assert host.read_table_requests == []
