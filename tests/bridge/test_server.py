"""The bridge's MCP tools over real ACP connectors served in this process (spec 16.4-16.6, 8.8-8.10, 12.1).

Every call goes through :meth:`Bridge.call`, as the MCP handler does; the connectors speak real ACP
to the bridge's :class:`~shared.host.AcpHost` over in-memory MCP streams.
"""

from __future__ import annotations

import base64
import csv
import json
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from loader import load_file
from toy_connector import TEST_CREDENTIALS, TINY_PNG

from bridge.server import CLIENT_CAPABILITY, TOOL_NAME, Bridge

support = load_file(Path(__file__).with_name("bridge_support.py"), "acp_tests_bridge_support")
payload, texts, snapshot = support.payload, support.texts, support.snapshot

pytestmark = pytest.mark.anyio
SECRET = "SENTINEL-do-not-leak-4c1d9e0b"
TOY = {"id": "shop", "acp": "toy", "label": "Shop", "default_resource_id": "acc_1", "credentials": TEST_CREDENTIALS}
LOCAL = {"id": "fc", "acp": "toy_local", "label": "Forecasts"}
ART = {"id": "art", "acp": "art"}
Serve = Callable[..., AbstractAsyncContextManager[Bridge]]


@pytest.fixture
def serve(tmp_path: Path, in_process: Any, runtime_dirs: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Serve:
    def start(sources: Any, **kwargs: Any) -> AbstractAsyncContextManager[Bridge]:
        return support.serving(
            tmp_path, sources, in_process=in_process, runtime_dirs=runtime_dirs, monkeypatch=monkeypatch, **kwargs
        )

    return start


def _csv(bridge: Bridge, dataset_id: str) -> list[dict[str, str]]:
    with (bridge.project / "acp-data" / f"{dataset_id}.csv").open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _meta(bridge: Bridge, dataset_id: str) -> dict[str, Any]:
    return json.loads((bridge.project / "acp-data" / f"{dataset_id}.meta.json").read_text("utf-8"))


def _saved_id(note: str) -> str:
    return note.split("«", 1)[1].split("»", 1)[0]


# -- tools/list ------------------------------------------------------------------------------------
async def test_each_source_publishes_its_tools_with_its_prefix(serve: Serve) -> None:
    second = {**TOY, "id": "shop-eu", "label": "Shop EU"}
    async with serve([TOY, second, LOCAL]) as bridge:
        tools = {t.name: t for t in await bridge.list_tools()}
    assert {"acp_sources", "acp_datasets", "acp_query"} <= set(tools)
    assert {"shop__report", "shop-eu__report", "fc__forecast", "shop__autocontext"} <= set(tools)
    assert all(TOOL_NAME.match(name) for name in tools)
    report = tools["shop__report"]
    assert report.description.startswith("[Shop · Toy] Toy report by date and channel.")
    assert "The full table is saved in acp-data as a new dataset" in report.description
    assert tools["shop-eu__report"].description.startswith("[Shop EU · Toy] ")
    assert "saved in acp-data" not in tools["shop__whoami"].description  # not an extraction tool
    assert report.annotations is not None
    assert report.annotations.read_only_hint is True
    table_ref = tools["fc__forecast"].input_schema["properties"]["table_ref"]
    assert "Id of a dataset in acp-data" in table_ref["description"]
    assert "start_date" not in tools["fc__forecast"].input_schema["properties"]
    assert (
        "This source's default: acc_1"
        in tools["shop__report"]
        .input_schema["properties"]
        .get("resource_id", {"description": "This source's default: acc_1"})["description"]
    )


async def test_a_date_template_gains_start_and_end_dates(serve: Serve, tmp_path: Path) -> None:
    """Spec 8.9 / 16.4, on the real databases connector's execute_sql."""
    import connectors.databases

    support.DECLARATIONS["databases"] = connectors.databases.CONNECTOR
    try:
        async with serve([{"id": "db", "acp": "databases", "credentials": {"type": "sqlite", "path": "x"}}]) as bridge:
            tools = {t.name: t for t in await bridge.list_tools()}
    finally:
        del support.DECLARATIONS["databases"]
    properties = tools["db__execute_sql"].input_schema["properties"]
    assert {"start_date", "end_date", "sql"} <= set(properties)
    assert "NdaysAgo" in properties["start_date"]["description"]
    assert "The bridge replaces {{start_date}} and {{end_date}}" in properties["sql"]["description"]
    assert tools["db__execute_sql"].input_schema.get("additionalProperties") is False


async def test_a_source_id_that_makes_a_tool_name_too_long_is_a_source_error(serve: Serve) -> None:
    long_id = "a" * 31  # + "__" + "export_the_quarterly_report_file" = 65 characters
    async with serve([{"id": long_id, "acp": "art"}, ART]) as bridge:
        names = [t.name for t in await bridge.list_tools()]
        sources = payload(await bridge.call("acp_sources", {}))
        called = await bridge.call(f"{long_id}__export", {"kind": "pdf_path", "path": "x"})
    assert "art__export_the_quarterly_report_file" in names
    assert not any(name.startswith(long_id) for name in names)
    broken = next(s for s in sources["sources"] if s["id"] == long_id)
    assert broken["status"] == "error"
    assert "at most 30 characters" in broken["errors"][0]
    assert called.is_error
    assert payload(called)["error"]["name"] == "ACP_INVALID_ARGUMENTS"


# -- extractions ------------------------------------------------------------------------------------
async def test_an_extraction_is_saved_whole_and_the_model_is_told_where(serve: Serve) -> None:
    async with serve([TOY]) as bridge:
        result = await bridge.call("shop__report", {"start_date": "2026-09-01", "end_date": "2026-09-30", "rows": 40})
        model = payload(result)
        note = texts(result)[1]
        dataset_id = _saved_id(note)
        rows, meta = _csv(bridge, dataset_id), _meta(bridge, dataset_id)
    assert not result.is_error
    assert model["total_rows"] == 40
    assert model["returned_rows"] == 25  # the connector's default row_limit
    assert note == (
        f"The full extraction was saved as dataset «{dataset_id}» in acp-data/{dataset_id}.csv. You saw 25 of 40 rows."
    )
    assert dataset_id.startswith("shop_report_")
    assert len(rows) == 40
    assert [r["sessions"] for r in rows] == [str(i * 10) for i in range(40)]
    assert Decimal(rows[3]["revenue"]) == Decimal("0.3")  # exact decimals, not binary floats
    assert meta["origin"] == "acp"
    assert (meta["source"], meta["acp"], meta["tool"], meta["resource_id"]) == ("shop", "toy", "report", "acc_1")
    assert meta["arguments"]["start_date"] == "2026-09-01"
    assert meta["dates"] == model["dates"]
    assert meta["description"] == model["description"]
    assert meta["row_count"] == 40
    assert [h["name"] for h in meta["headers"]] == ["date", "channel", "sessions", "revenue", "key"]


async def test_the_source_limits_and_session_reach_the_connector(serve: Serve) -> None:
    source = {**TOY, "row_limit": 3, "config": {"region": "us"}}
    async with serve([source]) as bridge:
        model = payload(await bridge.call("shop__echo_config", {}))
        whoami = payload(await bridge.call("shop__whoami", {}))
        tally = [payload(await bridge.call("shop__tally", {}))["calls"] for _ in range(2)]
    assert model == {"config": {"region": "us"}, "row_limit": 3}
    assert whoami["identity"] == "toy:team-a"
    assert tally == [1, 2]  # one conversation per source and bridge start (spec 16.5)


@pytest.mark.slow
async def test_a_table_too_big_to_travel_inline_is_streamed_from_its_file(
    serve: Serve, runtime_dirs: dict[str, str]
) -> None:
    rows = 250_000  # above the 5 MiB inline_max_bytes: the connector writes a table_uri file (spec 8.5)
    async with serve([TOY]) as bridge:
        result = await bridge.call("shop__stream", {"rows": rows})
        dataset_id = _saved_id(texts(result)[1])
        with (bridge.project / "acp-data" / f"{dataset_id}.csv").open(encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    assert texts(result)[1].endswith(f"You saw 25 of {rows} rows.")
    assert lines[0] == "n,label"
    assert lines[1] == "0,row 0"
    assert lines[-1] == f"{rows - 1},row {rows - 1}"
    assert len(lines) == rows + 1
    leftovers = [p for p in Path(runtime_dirs["ACP_TMP_DIR"]).rglob("*.json")]
    assert leftovers == []  # the bridge deleted the table file once it was saved


async def test_an_empty_extraction_saves_nothing(serve: Serve) -> None:
    async with serve([TOY]) as bridge:
        result = await bridge.call("shop__report", {"start_date": "2026-09-01", "end_date": "2026-09-30", "rows": 0})
        assert not (bridge.project / "acp-data").exists() or not list((bridge.project / "acp-data").glob("*.csv"))
    assert texts(result)[1] == "No data: the extraction returned no rows, so nothing was saved."


async def test_a_multi_table_extraction_becomes_one_dataset_per_table(serve: Serve) -> None:
    async with serve([TOY]) as bridge:
        result = await bridge.call("shop__browse", {})
        note = texts(result)[1].splitlines()
        saved = {line.split(":")[0][2:]: _saved_id(line) for line in note[1:] if "«" in line}
        hits = _csv(bridge, saved["hits"])
        meta = _meta(bridge, saved["hits"])
    assert note[0] == "The full extraction was saved in acp-data, one dataset per table:"
    assert saved["hits"].startswith("shop_browse_hits_")
    assert len(hits) == 60
    assert meta["table"] == "hits"
    assert meta["title"] == "Hits"
    assert any(line.startswith("- hits: dataset «") and line.endswith("You saw 10 of 60 rows.") for line in note)


async def test_an_empty_table_of_a_multi_table_extraction_is_not_saved(serve: Serve) -> None:
    async with serve([ART]) as bridge:
        result = await bridge.call("art__pair", {})
        saved = sorted(p.name for p in (bridge.project / "acp-data").glob("*.csv"))
    lines = texts(result)[1].splitlines()
    assert lines[1].startswith("- full: dataset «art_pair_full_")
    assert lines[1].endswith("You saw 3 of 3 rows.")
    assert lines[2] == "- No data: empty"
    assert len(saved) == 1
    assert saved[0].startswith("art_pair_full_")


async def test_extraction_ids_never_clash(serve: Serve) -> None:
    async with serve([TOY]) as bridge:
        notes = [
            texts(await bridge.call("shop__report", {"start_date": "2026-09-01", "end_date": "2026-09-02"}))[1]
            for _ in range(3)
        ]
        listed = payload(await bridge.call("acp_datasets", {}))
    ids = [_saved_id(n) for n in notes]
    assert len(set(ids)) == 3
    assert sorted(d["id"] for d in listed["datasets"]) == sorted(ids)


# -- host tables (spec 8.8) ----------------------------------------------------------------------
async def test_a_table_ref_reads_a_dataset(serve: Serve) -> None:
    async with serve([TOY, LOCAL]) as bridge:
        report = await bridge.call("shop__report", {"start_date": "2026-09-01", "end_date": "2026-09-30", "rows": 30})
        source_id = _saved_id(texts(report)[1])
        forecast = await bridge.call("fc__forecast", {"table_ref": source_id, "column": "sessions", "horizon": 5})
        model = payload(forecast)
        saved = _csv(bridge, _saved_id(texts(forecast)[1]))
    assert not forecast.is_error, model
    mean = sum(i * 10 for i in range(30)) / 30
    assert {float(r["forecast"]) for r in saved} == {mean}
    assert len(saved) == 5
    assert f"from host table {source_id} (30 rows)" in model["description"]


@pytest.mark.parametrize(
    "ref",
    ["../conf/sources.json", "/etc/passwd", "acp-data/../../conf/sources.json", "..", "a/b", "nope", "files/x.pdf"],
)
async def test_a_table_ref_outside_acp_data_or_unknown_is_not_found(serve: Serve, ref: str) -> None:
    async with serve([TOY, LOCAL]) as bridge:
        await bridge.call("shop__report", {"start_date": "2026-09-01", "end_date": "2026-09-02"})
        before = snapshot(bridge.project / "acp-data")
        result = await bridge.call("fc__forecast", {"table_ref": ref, "column": "sessions"})
        after = snapshot(bridge.project / "acp-data")
    assert result.is_error
    assert payload(result)["error"]["name"] == "ACP_TABLE_NOT_FOUND"
    assert after == before


# -- dates (spec 8.9) -------------------------------------------------------------------------------
SQL = "SELECT day, n FROM t WHERE day BETWEEN '{{start_date}}' AND '{{end_date}}' ORDER BY day"


@pytest.fixture
def sqlite_source(tmp_path: Path) -> dict[str, Any]:
    import sqlite3

    (tmp_path / "project" / "data").mkdir(parents=True)
    with sqlite3.connect(tmp_path / "project" / "data" / "t.sqlite") as conn:
        conn.execute("CREATE TABLE t (day DATE, n INTEGER)")
        conn.executemany("INSERT INTO t VALUES (?, ?)", [(f"2026-01-{d:02d}", d) for d in range(1, 32)])
    return {
        "id": "db",
        "acp": "databases",
        "default_resource_id": "t",
        "credentials": {"type": "sqlite", "path": {"projectPath": "data/t.sqlite"}},
    }


@pytest.fixture
def with_databases() -> Any:
    import connectors.databases

    support.DECLARATIONS["databases"] = connectors.databases.CONNECTOR
    yield
    del support.DECLARATIONS["databases"]


async def test_dates_are_resolved_substituted_and_not_forwarded(
    serve: Serve, sqlite_source: dict[str, Any], with_databases: None
) -> None:
    async with serve([sqlite_source]) as bridge:
        result = await bridge.call("db__execute_sql", {"sql": SQL, "start_date": "20260105", "end_date": "2026-01-09"})
        model = payload(result)
        meta = _meta(bridge, _saved_id(texts(result)[1]))
    assert not result.is_error, model
    assert model["total_rows"] == 5
    assert meta["arguments"]["sql"] == SQL.replace("{{start_date}}", "2026-01-05").replace("{{end_date}}", "2026-01-09")
    assert "start_date" not in meta["arguments"]
    assert meta["dates"][:2] == ["2026-01-05", "2026-01-09"]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"sql": SQL, "start_date": "2026-02-30", "end_date": "today"}, "start_date '2026-02-30' is not a date"),
        ({"sql": SQL, "start_date": "yesterday", "end_date": "3daysAgo"}, "The date window is reversed"),
        ({"sql": SQL, "start_date": "2026-01-01"}, "The query uses {{end_date}}: pass end_date"),
        ({"sql": SQL, "start_date": 20260101, "end_date": "today"}, "start_date must be a string"),
        ({"sql": "SELECT 1", "start_date": "today", "end_date": "today"}, "add the markers"),
    ],
)
async def test_bad_dates_are_refused_before_the_connector(
    serve: Serve, sqlite_source: dict[str, Any], with_databases: None, arguments: dict[str, Any], expected: str
) -> None:
    async with serve([sqlite_source]) as bridge:
        result = await bridge.call("db__execute_sql", arguments)
    assert result.is_error
    error = payload(result)["error"]
    assert error["name"] == "ACP_INVALID_ARGUMENTS"
    assert expected in error["message"]


# -- errors (spec 12.1) -----------------------------------------------------------------------------
async def test_credential_errors_send_the_person_to_the_sources_file(serve: Serve) -> None:
    sources = [
        {"id": "nokey", "acp": "toy", "default_resource_id": "acc_1"},
        {**TOY, "id": "badkey", "credentials": {**TEST_CREDENTIALS, "api_key": "bad-key-0123456789"}},
        ART,
    ]
    async with serve(sources) as bridge:
        missing = payload(await bridge.call("nokey__whoami", {}))["error"]
        invalid = payload(await bridge.call("badkey__autocontext", {"request_data": ["fields"]}))["error"]
        cost = payload(await bridge.call("art__expensive", {}))["error"]
        path = str(bridge.sources_path)
    assert missing["name"] == "ACP_CREDENTIALS_MISSING"
    assert invalid["name"] == "ACP_CREDENTIALS_INVALID"
    assert cost["name"] == "ACP_COST_LIMIT_EXCEEDED"
    assert cost["data"] == {"estimate_usd": 3.2, "limit_usd": 1.0}
    for error, source in ((missing, "nokey"), (invalid, "badkey"), (cost, "art")):
        assert path in error["note"]
        assert f"source '{source}'" in error["note"]
    assert "cost_limit_usd" in cost["note"]


async def test_other_connector_errors_pass_through_without_a_note(serve: Serve) -> None:
    async with serve([TOY]) as bridge:
        result = await bridge.call("shop__report", {"start_date": "2026-09-01", "end_date": "2026-09-02", "rows": -1})
    error = payload(result)["error"]
    assert result.is_error
    assert error["name"] == "ACP_INVALID_ARGUMENTS"
    assert "note" not in error


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        (
            "nope__report",
            {},
            "Unknown tool 'nope__report'. Source tools are named <source>__<tool>; the sources are: shop",
        ),
        ("report", {}, "Unknown tool 'report'"),
        ("shop__nope", {}, "The source 'shop' has no tool 'nope'. Its tools are: autocontext"),
        ("acp_datasets", {"filter": 3}, "filter must be a string"),
        ("acp_datasets", {"where": "x"}, "Unknown argument(s) where; this tool takes filter"),
        ("acp_query", {}, "sql is required"),
        ("acp_query", {"sql": "SELECT 1", "save_as": 5}, "save_as must be a dataset id"),
        ("acp_sources", {"x": 1}, "Unknown argument(s) x"),
    ],
)
async def test_bad_calls_get_a_typed_error_that_says_what_to_do(
    serve: Serve, name: str, arguments: dict[str, Any], expected: str
) -> None:
    async with serve([TOY]) as bridge:
        result = await bridge.call(name, arguments)
    assert result.is_error
    error = payload(result)["error"]
    assert error["name"] == "ACP_INVALID_ARGUMENTS"
    assert expected in error["message"]


# -- sources.json problems never stop the bridge (spec 16.3) -------------------------------------
async def test_a_malformed_sources_file_leaves_the_bridge_serving(serve: Serve) -> None:
    async with serve('{"sources": [{"id": "shop", "acp": "toy",}]}') as bridge:
        names = [t.name for t in await bridge.list_tools()]
        sources = payload(await bridge.call("acp_sources", {}))
        datasets = await bridge.call("acp_datasets", {})
        called = await bridge.call("shop__report", {})
    assert names == ["acp_sources", "acp_datasets", "acp_query"]
    assert (
        "is not valid JSON: Expecting property name enclosed in double quotes at line 1, column 42"
        in (sources["problems"][0])
    )
    assert sources["note"].startswith("Sources with errors cannot be used until the user fixes")
    assert not datasets.is_error
    assert called.is_error
    assert "Unknown tool 'shop__report'" in payload(called)["error"]["message"]


async def test_two_sources_with_one_id_are_both_refused(serve: Serve) -> None:
    async with serve([TOY, {**TOY, "label": "Other"}, LOCAL]) as bridge:
        names = [t.name for t in await bridge.list_tools()]
        sources = payload(await bridge.call("acp_sources", {}))
        called = await bridge.call("shop__whoami", {})
    assert "fc__forecast" in names
    assert not any(n.startswith("shop__") for n in names)
    shop = next(s for s in sources["sources"] if s["id"] == "shop")
    assert shop["status"] == "error"
    assert "The id 'shop' is used by sources[0] and sources[1]" in shop["errors"][0]
    message = payload(called)["error"]["message"]
    assert message.startswith("The source 'shop' cannot be used: The id 'shop' is used by sources[0] and sources[1]")
    assert str(sources["sources_file"]) in message


async def test_acp_sources_shows_status_and_never_credentials(serve: Serve) -> None:
    bad_limit = {"id": "lim", "acp": "toy", "row_limit": 9999, "credentials": {"api_key": SECRET}}
    async with serve([TOY, LOCAL, bad_limit, {"id": "ga", "acp": "ga4"}]) as bridge:
        answer = await bridge.call("acp_sources", {})
        called = await bridge.call("lim__whoami", {})
    sources = {s["id"]: s for s in payload(answer)["sources"]}
    assert sources["shop"]["status"] == "ok"
    assert sources["shop"]["has_credentials"] is True
    assert sources["shop"]["acp_name"] == "Toy"
    assert "shop__report" in sources["shop"]["tools"]
    assert sources["fc"]["has_credentials"] is False
    assert sources["lim"]["status"] == "error"
    assert sources["lim"]["has_credentials"] is True
    assert "row_limit must be an integer from 0 to 5000" in sources["lim"]["errors"][0]
    assert "the ACP 'ga4' is not installed" in sources["ga"]["errors"][0]
    assert {c["id"] for c in payload(answer)["installed_without_source"]} == {"art"}
    assert payload(called)["error"]["name"] == "ACP_INVALID_LIMIT"
    assert SECRET not in answer.content[0].text
    assert TEST_CREDENTIALS["api_key"] not in answer.content[0].text


async def test_no_secret_reaches_any_answer_log_or_file(
    serve: Serve, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "key.txt").write_text(f"{SECRET}-file\n")
    sources = [
        {**TOY, "id": "fromfile", "credentials": {**TEST_CREDENTIALS, "api_key": {"file": "key.txt"}}},
        {**TOY, "id": "fromenv", "credentials": {**TEST_CREDENTIALS, "api_key": {"env": "TOY_KEY"}}},
    ]
    caplog.set_level(logging.DEBUG)
    async with serve(sources, environ={"TOY_KEY": f"{SECRET}-env"}) as bridge:
        answers = [t.model_dump_json() for t in await bridge.list_tools()]
        for source in ("fromfile", "fromenv"):
            for name, arguments in (
                ("crash", {}),
                ("whoami", {}),
                ("report", {"start_date": "2026-09-01", "end_date": "2026-09-03"}),
                ("autocontext", {}),
            ):
                answers.append((await bridge.call(f"{source}__{name}", arguments)).model_dump_json())
        answers.append((await bridge.call("acp_sources", {})).model_dump_json())
        answers.append((await bridge.call("acp_datasets", {})).model_dump_json())
        files = [p.read_bytes() for p in (bridge.project / "acp-data").rglob("*") if p.is_file()]
    assert any("ACP_UPSTREAM_ERROR" in a for a in answers)  # the crash happened, with the key in its text
    assert len(files) == 4
    # The bridge's own log lines (in a process of their own, the connectors' lines are redacted by their core).
    bridge_log = "\n".join(
        logging.Formatter().format(r) for r in caplog.records if r.name.startswith(("acp.bridge", "acp.host"))
    )
    for text in [*answers, bridge_log]:
        assert SECRET not in text
    for content in files:
        assert SECRET.encode() not in content


# -- connectors that fail -----------------------------------------------------------------------------
async def test_a_connector_that_cannot_start_is_a_source_error_and_the_rest_serves(serve: Serve) -> None:
    commands = {"toy": ["/nonexistent/python-for-toy"]}
    async with serve([TOY, LOCAL], processes=("toy",), commands=commands) as bridge:
        names = [t.name for t in await bridge.list_tools()]
        sources = {s["id"]: s for s in payload(await bridge.call("acp_sources", {}))["sources"]}
        called = await bridge.call("shop__whoami", {})
    assert "fc__forecast" in names
    assert not any(n.startswith("shop__") for n in names)
    assert sources["shop"]["status"] == "error"
    assert "its command was not found (/nonexistent/python-for-toy)" in sources["shop"]["errors"][0]
    assert sources["fc"]["status"] == "ok"
    error = payload(called)["error"]
    assert error["name"] == "ACP_UPSTREAM_ERROR"
    assert error["message"].startswith("The Toy connector (toy) could not start: its command was not found")


@pytest.mark.slow
async def test_a_connector_that_dies_is_started_again_on_the_next_call(serve: Serve) -> None:
    import psutil

    async with serve([TOY], processes=("toy",)) as bridge:
        first = payload(await bridge.call("shop__whoami", {}))
        for child in psutil.Process().children(recursive=True):
            if "toy_connector.py" in " ".join(child.cmdline()):
                child.kill()
                child.wait(10)
        died = await bridge.call("shop__whoami", {})
        again = await bridge.call("shop__whoami", {})
    assert first["identity"] == "toy:team-a"
    assert payload(died)["error"]["name"] == "ACP_UPSTREAM_ERROR"
    assert "stopped answering during the call" in payload(died)["error"]["message"]
    assert not again.is_error
    assert payload(again)["identity"] == "toy:team-a"


# -- artifacts (spec 8.10) ------------------------------------------------------------------------------
async def test_a_screenshot_is_attached_as_an_image(serve: Serve, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    shot.write_bytes(TINY_PNG)
    async with serve([ART]) as bridge:
        result = await bridge.call("art__export", {"kind": "screenshot_path", "path": str(shot)})
    images = [block for block in result.content if block.type == "image"]
    assert payload(result) == {"screenshot_path": str(shot)}  # the JSON keeps the path
    assert len(images) == 1
    assert images[0].mime_type == "image/png"
    assert base64.b64decode(images[0].data) == TINY_PNG


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (TINY_PNG + b"\0" * (4 * 1024 * 1024), "is larger than 4 MiB, so it was not attached"),
        (b"secret: not an image", "is not a PNG or JPEG file, so it was not attached"),
        (None, "The image could not be read (No such file or directory)"),
    ],
)
async def test_a_screenshot_that_cannot_be_attached_is_explained(
    serve: Serve, tmp_path: Path, content: bytes | None, expected: str
) -> None:
    shot = tmp_path / "shot.png"
    if content is not None:
        shot.write_bytes(content)
    async with serve([ART]) as bridge:
        result = await bridge.call("art__export", {"kind": "screenshot_path", "path": str(shot)})
    assert not [block for block in result.content if block.type == "image"]
    assert expected in texts(result)[1]


async def test_pdfs_and_downloads_are_copied_into_acp_data(serve: Serve, tmp_path: Path) -> None:
    pdf = tmp_path / "deck.pdf"
    pdf.write_bytes(b"%PDF-1.7 test")
    doc = tmp_path / "notes.md"
    doc.write_text("# Notes")
    async with serve([ART]) as bridge:
        exported = await bridge.call("art__export", {"kind": "pdf_path", "path": str(pdf)})
        downloaded = await bridge.call("art__export", {"kind": "download_path", "path": str(doc), "as": "markdown"})
        missing = await bridge.call("art__export", {"kind": "pdf_path", "path": str(tmp_path / "gone.pdf")})
        project = bridge.project
    assert payload(exported) == {"export_path": "acp-data/files/deck.pdf", "bytes": 13, "saved": True}
    assert (project / "acp-data" / "files" / "deck.pdf").read_bytes() == b"%PDF-1.7 test"
    assert texts(exported)[1] == "The file was saved in acp-data/files/deck.pdf."
    assert payload(downloaded)["export_path"] == "acp-data/files/notes.md"
    assert texts(downloaded)[1] == "The document was saved as Markdown in acp-data/files/notes.md."
    assert payload(missing) == {"export_path": None, "saved": False}
    assert str(tmp_path) not in missing.content[0].text  # the absolute path is gone from the model's JSON


# -- acp_datasets --------------------------------------------------------------------------------------
async def test_acp_datasets_lists_filters_and_reports_problems(serve: Serve) -> None:
    async with serve([TOY, LOCAL]) as bridge:
        await bridge.call("shop__report", {"start_date": "2026-09-01", "end_date": "2026-09-02"})
        data = bridge.project / "acp-data"
        (data / "zips.csv").write_text("zip,n\r\n00501,1\r\n10001,2\r\n", "utf-8")
        (data / "Bad Name.csv").write_text("a\r\n1\r\n", "utf-8")
        everything = payload(await bridge.call("acp_datasets", {}))
        filtered = payload(await bridge.call("acp_datasets", {"filter": "TOY REPORT"}))
        nothing = payload(await bridge.call("acp_datasets", {"filter": "zzz"}))
    by_id = {d["id"]: d for d in everything["datasets"]}
    zips = by_id["zips"]
    assert zips["origin"] == "csv"
    assert zips["columns"] == [{"name": "zip", "type": "string"}, {"name": "n", "type": "integer"}]
    assert zips["rows"] == 2
    report = next(d for d in everything["datasets"] if d["id"].startswith("shop_report_"))
    assert report["file"] == f"acp-data/{report['id']}.csv"
    assert {"source", "tool", "description", "dates", "created_at", "origin"} <= set(report)
    assert "Bad Name.csv is not a dataset" in everything["problems"][0]
    assert [d["id"] for d in filtered["datasets"]] == [report["id"]]
    assert nothing == {
        "acp_data": str(data),
        "datasets": [],
        "notice": "No dataset matches.",
        "problems": nothing["problems"],
    }


def test_the_bridge_declares_the_host_capability_of_16_5() -> None:
    assert CLIENT_CAPABILITY == {
        "version": "1.0",
        "stores_system_data": True,
        "multi_table": True,
        "host_tables": True,
        "autocontext_delivery": "on_first_call",
    }


# -- acp_query -------------------------------------------------------------------------------------------
async def _report(bridge: Bridge, rows: int = 40) -> str:
    result = await bridge.call("shop__report", {"start_date": "2026-09-01", "end_date": "2026-09-30", "rows": rows})
    return _saved_id(texts(result)[1])


async def test_acp_query_saves_the_whole_result_and_shows_at_most_50_rows(serve: Serve) -> None:
    async with serve([TOY]) as bridge:
        source = await _report(bridge, rows=120)
        result = await bridge.call("acp_query", {"sql": f"SELECT channel, sessions FROM {source} ORDER BY sessions"})
        answer = payload(result)
        saved, meta = _csv(bridge, answer["dataset"]), _meta(bridge, answer["dataset"])
        grouped = payload(
            await bridge.call(
                "acp_query",
                {"sql": f"SELECT channel, SUM(sessions) AS total FROM {source} GROUP BY channel ORDER BY 1"},
            )
        )
    assert not result.is_error, answer
    assert answer["row_count"] == 120
    assert len(answer["rows"]) == 50
    assert answer["rows"][:2] == [{"channel": "Organic", "sessions": 0}, {"channel": "Paid", "sessions": 10}]
    assert answer["headers"] == [{"name": "channel", "type": "string"}, {"name": "sessions", "type": "integer"}]
    assert answer["notice"] == (
        f"The full result was saved as dataset «{answer['dataset']}» in {answer['file']}. You saw 50 of 120 rows."
    )
    assert answer["dataset"].startswith("acp_query_")
    assert answer["engine"] in ("duckdb", "sqlite")
    assert len(saved) == 120
    assert meta["origin"] == "query"
    assert meta["sql"].startswith("SELECT channel, sessions FROM")
    totals = {r["channel"]: r["total"] for r in grouped["rows"]}
    assert totals == {
        c: sum(i * 10 for i in range(120) if i % 3 == k) for k, c in enumerate(("Organic", "Paid", "Direct"))
    }


async def test_save_as_names_the_result_and_replaces_only_query_results(serve: Serve) -> None:
    async with serve([TOY]) as bridge:
        source = await _report(bridge, rows=6)
        first = payload(await bridge.call("acp_query", {"sql": f"SELECT * FROM {source}", "save_as": "weekly"}))
        second = payload(await bridge.call("acp_query", {"sql": f"SELECT 1 AS one FROM {source}", "save_as": "weekly"}))
        before = snapshot(bridge.project / "acp-data")
        refused = await bridge.call("acp_query", {"sql": "SELECT 1 AS one", "save_as": source})
        invalid = await bridge.call("acp_query", {"sql": "SELECT 1 AS one", "save_as": "Select"})
        after = snapshot(bridge.project / "acp-data")
        weekly = _csv(bridge, "weekly")
    assert first["dataset"] == second["dataset"] == "weekly"
    assert weekly == [{"one": "1"}] * 6
    assert payload(refused)["error"]["name"] == "ACP_INVALID_ARGUMENTS"
    assert "is an extraction; save_as only replaces an earlier acp_query result" in payload(refused)["error"]["message"]
    assert payload(invalid)["error"]["name"] == "ACP_INVALID_ARGUMENTS"
    assert after == before


@pytest.mark.parametrize(
    ("sql", "name"),
    [
        ("DELETE FROM {ds}", "ACP_READ_ONLY_VIOLATION"),
        ("DROP TABLE {ds}", "ACP_READ_ONLY_VIOLATION"),
        ("UPDATE {ds} SET sessions = 0", "ACP_READ_ONLY_VIOLATION"),
        ("INSERT INTO {ds} VALUES (1)", "ACP_READ_ONLY_VIOLATION"),
        ("CREATE TABLE x AS SELECT * FROM {ds}", "ACP_READ_ONLY_VIOLATION"),
        ("COPY {ds} TO 'out.csv'", "ACP_READ_ONLY_VIOLATION"),
        ("SELECT 1; DELETE FROM {ds}", "ACP_READ_ONLY_VIOLATION"),
        ("SELECT * FROM no_such_dataset", "ACP_TABLE_NOT_FOUND"),
        ("SELECT * FROM read_csv('../conf/sources.json')", None),
        ("SELECT content FROM read_text('../conf/sources.json')", None),
        ("SELECT sessions FROM {ds} WHERE", "ACP_INVALID_ARGUMENTS"),
        ("SELECT no_such_column FROM {ds}", "ACP_INVALID_ARGUMENTS"),
    ],
)
async def test_acp_query_never_changes_acp_data_on_bad_sql(serve: Serve, sql: str, name: str | None) -> None:
    async with serve([TOY]) as bridge:
        dataset = await _report(bridge, rows=5)
        before = snapshot(bridge.project / "acp-data")
        result = await bridge.call("acp_query", {"sql": sql.format(ds=dataset)})
        after = snapshot(bridge.project / "acp-data")
    assert result.is_error
    error = payload(result)["error"]
    if name is not None:
        assert error["name"] == name
    assert "[sources]" not in result.content[0].text and "toy-key" not in result.content[0].text
    assert after == before


@pytest.mark.slow
async def test_a_connector_that_failed_to_start_is_launched_again_by_the_next_call(
    serve: Serve, tmp_path: Path
) -> None:
    import sys

    import toy_connector

    script = tmp_path / "late_toy.py"
    changed: list[bool] = []

    async def tools_changed() -> None:
        changed.append(True)

    async with serve([TOY], processes=("toy",), commands={"toy": [sys.executable, str(script)]}) as bridge:
        failed = {s["id"]: s for s in payload(await bridge.call("acp_sources", {}))["sources"]}["shop"]
        # The person fixes the installation; the bridge is not restarted.
        script.write_text(
            f"import runpy, sys\nsys.path.insert(0, {str(Path(toy_connector.__file__).parent)!r})\n"
            f"runpy.run_path({toy_connector.__file__!r}, run_name='__main__')\n"
        )
        called = await bridge.call("shop__whoami", {}, tools_changed)
        names = [t.name for t in await bridge.list_tools()]
    assert failed["status"] == "error"
    assert "can't open file" in failed["errors"][0]
    assert payload(called)["identity"] == "toy:team-a"
    assert changed == [True]
    assert "shop__report" in names
