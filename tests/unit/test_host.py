"""The host's table reading: the incremental JSON parser, ``open_table`` and ``ToolResponse.rows``."""

from __future__ import annotations

import gc
import json
import random
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import psutil
import pytest

from shared.host import TableReadError, ToolResponse, _JsonRowsParser, _same_origin, open_table

# Rows with what a chunk boundary can cut badly: brackets and commas in strings, escapes,
# multi-byte characters, nesting, integers past 64 bits and decimals past a float.
TABLE = (
    '[{"id": 1, "name": "plain", "score": 1.5},\n'
    ' {"id": 1180591620717411303425, "name": "brackets ] , { } [ in a string", "score": 12345678901234567.123456789},\n'
    ' {"id": -3, "name": "\u00fcn\u00efc\u00f8d\u00e9 \U0001f680", "score": null, "nested": {"a": [1, {"b": "]"}], "c": true}},\n'
    ' {"id": 4, "name": "escaped \\" quote \\\\ and \\n newline", "score": 1e-7}]'
).encode()


def _encoded(rows: list[dict[str, Any]]) -> bytes:
    return ("[\n" + ",\n".join(json.dumps(r) for r in rows) + "\n]\n").encode()


def _parse(data: bytes, sizes: list[int], exact: bool = False) -> list[dict[str, Any]]:
    parser, rows, pos = _JsonRowsParser(exact), [], 0
    for size in sizes:
        rows += parser.feed(data[pos : pos + size])
        pos += size
    rows += parser.feed(data[pos:])
    return rows + parser.finish()


def test_rows_cut_anywhere_by_chunks_parse_like_json_loads() -> None:
    data = TABLE
    expected = json.loads(data)
    assert _parse(data, [1] * len(data)) == expected  # one byte at a time: every boundary, emoji included
    generator = random.Random(7)
    for _ in range(50):
        sizes = [generator.randint(1, 40) for _ in range(len(data) // 10)]
        assert _parse(data, sizes) == expected


def test_exact_parsing_keeps_every_digit() -> None:
    rows = _parse(TABLE, [17] * 100, exact=True)
    assert rows[1]["id"] == 2**70 + 1 and rows[1]["score"] == Decimal("12345678901234567.123456789")
    assert isinstance(rows[0]["score"], Decimal) and rows[0]["score"] == Decimal("1.5")
    loose = _parse(TABLE, [17] * 100)
    assert loose[1]["id"] == 2**70 + 1 and isinstance(loose[1]["score"], float)


@pytest.mark.parametrize(
    "data",
    [b"[]", b"  [ ]  \n", b"\xef\xbb\xbf[]", b'[{"a":1}]', b'[\r\n\t{"a":1} ,\n {"a":2}\n]'],
)
def test_layouts_a_json_array_may_take(data: bytes) -> None:
    assert _parse(data, [3] * 10) == json.loads(data.decode("utf-8-sig"))


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b'{"a": 1}', "start with '['"),
        (b'[{"a": 1}] [', "after its closing"),
        (b'[{"a": 1}', "ends before"),
        (b'[{"a": 1} {"a": 2}]', "expected ','"),
        (b"[1, 2]", "JSON object"),
        (b'[{"a": tru}]', "not valid JSON"),
        (b'[{"a": "\xff"}]', "UTF-8"),
    ],
)
def test_malformed_tables_are_refused_with_a_reason(data: bytes, needle: str) -> None:
    with pytest.raises(TableReadError, match=re.escape(needle)):
        _parse(data, [4] * 20)


def test_a_row_larger_than_any_chunk_still_parses() -> None:
    rows = [{"i": 0, "blob": "x" * 3_000_000}, {"i": 1, "blob": "y"}]
    data = _encoded(rows)
    assert _parse(data, [64 * 1024] * (len(data) // (64 * 1024) + 1)) == rows


# -- open_table and ToolResponse -------------------------------------------------------------------
@pytest.mark.anyio
async def test_open_table_reads_inline_tables_and_files_alike(tmp_path: Path) -> None:
    headers = [{"name": "id", "type": "integer"}]
    path = tmp_path / "t.json"
    path.write_bytes(TABLE)
    inline = {"format": "inline", "row_count": 4, "headers": headers, "table": json.loads(TABLE)}
    by_file = {"format": "file", "row_count": 4, "headers": headers, "table_uri": path.as_uri()}
    async with open_table(inline) as a, open_table(by_file) as b:
        assert a.headers == b.headers == headers and a.row_count == b.row_count == 4
        assert [r async for r in a] == [r async for r in b] == json.loads(TABLE)
    async with open_table(by_file, exact=True) as exact:
        assert [r["score"] async for r in exact][1] == Decimal("12345678901234567.123456789")


@pytest.mark.anyio
async def test_open_table_says_what_it_cannot_read(tmp_path: Path) -> None:
    missing = {"format": "file", "row_count": 1, "headers": [], "table_uri": (tmp_path / "gone.json").as_uri()}
    with pytest.raises(TableReadError, match="call the tool again"):
        async with open_table(missing):
            pass
    with pytest.raises(TableReadError, match="each entry"):
        async with open_table({"format": "tables", "row_count": 0, "headers": [], "tables": []}):
            pass
    with pytest.raises(TableReadError, match="scheme 'ftp'"):
        async with open_table({"format": "file", "row_count": 0, "headers": [], "table_uri": "ftp://x/t.json"}):
            pass


def test_tool_response_rows_and_tables_use_the_same_reader(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(TABLE)
    entry = {"format": "file", "row_count": 4, "headers": [], "table_uri": path.as_uri()}
    single = ToolResponse({"_meta": {"acp": {"system_data": entry}}})
    assert single.rows() == json.loads(TABLE)
    assert single.rows(exact=True)[1]["score"] == Decimal("12345678901234567.123456789")
    multi = ToolResponse(
        {
            "_meta": {
                "acp": {
                    "system_data": {
                        "format": "tables",
                        "row_count": 5,
                        "headers": [],
                        "tables": [
                            {**entry, "name": "big"},
                            {"name": "small", "format": "inline", "row_count": 1, "headers": [], "table": [{"a": 1}]},
                        ],
                    }
                }
            }
        }
    )
    assert multi.tables() == {"big": json.loads(TABLE), "small": [{"a": 1}]}
    linked = ToolResponse({"_meta": {"acp": {"system_data": {**entry, "table_uri": "http://127.0.0.1:9/tables/t"}}}})
    with pytest.raises(TableReadError, match="no host"):
        linked.rows()


def test_links_carry_the_token_only_to_the_endpoints_origin() -> None:
    endpoint = "http://127.0.0.1:7413/mcp"
    assert _same_origin(endpoint, "http://127.0.0.1:7413/tables/abc")
    assert _same_origin("http://example.test/mcp", "http://example.test:80/tables/abc")  # the default port
    assert _same_origin("https://example.test/mcp", "https://example.test:443/tables/abc")
    assert not _same_origin(endpoint, "http://127.0.0.1:7414/tables/abc")
    assert not _same_origin(endpoint, "http://127.0.0.2:7413/tables/abc")
    assert not _same_origin("https://example.test/mcp", "http://example.test/tables/abc")  # no downgrade
    assert not _same_origin(endpoint, "http://127.0.0.1:notaport/tables/abc")


# -- memory -----------------------------------------------------------------------------------------
STREAMED_ROWS = 200_000


def _write_large_table(path: Path) -> None:
    """A table file in one line (no layout to lean on), written row by row so the test holds no table."""
    with path.open("w", encoding="utf-8") as handle:
        handle.write("[")
        for i in range(STREAMED_ROWS):
            if i:
                handle.write(",")
            row = {"id": i, "day": "2026-01-01", "channel": "Organic Search", "sessions": i * 7, "revenue": 12.5}
            handle.write(json.dumps({**row, "note": f"row {i}"}))
        handle.write("]")


@pytest.mark.anyio
async def test_streaming_a_200k_row_table_keeps_memory_far_below_the_file_size(tmp_path: Path) -> None:
    """Loading this table whole takes several times its file size; streaming it must take a fraction."""
    path = tmp_path / "large.json"
    _write_large_table(path)
    size = path.stat().st_size
    process = psutil.Process()
    gc.collect()
    baseline = peak = process.memory_info().rss
    count = total = 0
    entry = {"format": "file", "row_count": STREAMED_ROWS, "headers": [], "table_uri": path.as_uri()}
    async with open_table(entry, exact=True) as table:
        async for row in table:
            count += 1
            total += row["sessions"]
            if count % 5_000 == 0:
                peak = max(peak, process.memory_info().rss)
    assert count == STREAMED_ROWS and total == 7 * sum(range(STREAMED_ROWS))
    assert size > 20_000_000
    assert peak - baseline < size / 4, f"streaming grew RSS by {peak - baseline} bytes for a {size}-byte file"


def test_the_host_reaches_the_sdk_through_public_names_and_sdk_py_only() -> None:
    """Private SDK hooks live in shared/_sdk.py, where an SDK upgrade re-checks them."""
    import ast

    import shared.host

    source = Path(shared.host.__file__).read_text("utf-8")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("mcp", "mcp_types"):
            names = [*(node.module or "").split("."), *(alias.name for alias in node.names)]
            assert not any(name.startswith("_") for name in names), ast.unparse(node)
        if isinstance(node, ast.Import):
            assert not any(alias.name.startswith(("mcp.", "mcp_types.")) and "._" in alias.name for alias in node.names)
    for hook in ("_build_capabilities", "_on_request", ".adopt(", "_httpx_utils", "create_mcp_http_client"):
        assert hook not in source, hook
