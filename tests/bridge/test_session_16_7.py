"""The session of spec 16.7, end to end: ``python -m bridge`` from this checkout, driven over stdio by the
``mcp`` SDK's plain ``ClientSession`` (no ACP capability), as Claude Desktop or Cursor would drive it.

One bridge process serves the whole module. The project holds a SQLite database with 90 days of sales
by channel; ``sources.json`` has a databases source over it, a prediction source, and two more
databases sources whose credentials carry a sentinel secret (through ``{"file"}`` and ``{"env"}``)
that must never appear anywhere but in ``sources.json`` and the files it points to.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import json
import random
import sqlite3
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from discovery import ROOT
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SECRET = "SENTINEL-7d04e1c9-never-shown"
START, DAYS, CHANNELS = dt.date(2026, 7, 1), 90, ("web", "tienda", "marketplace")
SQL = (
    "SELECT fecha, SUM(pedidos) AS pedidos, SUM(importe) AS importe FROM ventas "
    "WHERE fecha BETWEEN '{{start_date}}' AND '{{end_date}}' GROUP BY fecha ORDER BY fecha"
)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("session_16_7")
    project, conf = base / "project", base / "conf"
    (project / "data").mkdir(parents=True)
    (conf / "secrets").mkdir(parents=True)
    rng = random.Random(16_7)
    with sqlite3.connect(project / "data" / "ventas.sqlite") as conn:
        conn.execute("CREATE TABLE ventas (fecha DATE, canal TEXT, pedidos INTEGER, importe REAL)")
        conn.executemany(
            "INSERT INTO ventas VALUES (?, ?, ?, ?)",
            [
                ((START + dt.timedelta(days=day)).isoformat(), channel, n, round(n * rng.uniform(9, 31), 2))
                for day in range(DAYS)
                for channel in CHANNELS
                for n in [rng.randint(5, 60) + (day % 7) * 3]
            ],
        )
    conn.close()
    (conf / "secrets" / "pw.txt").write_text(f"{SECRET}-file\n", "utf-8")
    unreachable = {"host": "127.0.0.1", "port": 1, "user": "reader", "database": "ventas"}
    sources = {
        "defaults": {"row_limit": 25},
        "sources": [
            {
                "id": "ventas",
                "acp": "databases",
                "label": "Ventas (SQLite)",
                "default_resource_id": "ventas",
                "credentials": {"type": "sqlite", "path": {"projectPath": "data/ventas.sqlite"}},
            },
            {"id": "prevision", "acp": "prediction", "label": "Previsión local"},
            {
                "id": "almacen",
                "acp": "databases",
                "credentials": {"type": "postgres", **unreachable, "password": {"file": "secrets/pw.txt"}},
            },
            {"id": "dsn", "acp": "databases", "credentials": {"type": "postgres_dsn", "dsn": {"env": "VENTAS_DSN"}}},
        ],
    }
    (conf / "sources.json").write_text(json.dumps(sources, indent=2), "utf-8")
    return {"project": project, "conf": conf, "stderr": base / "bridge-stderr.log"}


@pytest.fixture(scope="module")
async def client(folders: dict[str, Path]) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "bridge", "--sources", str(folders["conf"] / "sources.json")],
        env={
            "PYTHONPATH": str(ROOT),
            "ACP_BRIDGE_PROJECT": str(folders["project"]),  # --project's default (spec 16.2)
            "VENTAS_DSN": f"postgresql://reader:{SECRET}-env@127.0.0.1:1/ventas",
        },
        cwd=str(folders["conf"]),
    )
    with folders["stderr"].open("w", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


def _texts(result: Any) -> list[str]:
    return [block.text for block in result.content if block.type == "text"]


def _expected_days(project: Path) -> list[tuple[str, int, float]]:
    """What the extraction must hold, computed straight from the database."""
    with sqlite3.connect(f"{(project / 'data' / 'ventas.sqlite').as_uri()}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT fecha, SUM(pedidos), SUM(importe) FROM ventas GROUP BY fecha ORDER BY fecha")
        return list(rows)


@pytest.fixture(scope="module")
async def session(client: ClientSession, folders: dict[str, Path]) -> dict[str, Any]:
    """The three steps of 16.7, once; the tests below check what each one returned."""
    tools = (await client.list_tools()).tools
    extraction = await client.call_tool(
        "ventas__execute_sql", {"sql": SQL, "start_date": "2026-07-01", "end_date": "2026-09-28"}
    )
    note = _texts(extraction)[1]
    dataset = note.split("«", 1)[1].split("»", 1)[0]
    again = await client.call_tool("ventas__execute_sql", {"sql": "SELECT COUNT(*) AS n FROM ventas"})
    forecast = await client.call_tool(
        "prevision__forecast",
        {
            "table_ref": dataset,
            "time_column": "fecha",
            "value_column": "pedidos",
            "horizon": 14,
            "method": "holt_winters",
        },
    )
    monthly = await client.call_tool(
        "acp_query",
        {"sql": f"SELECT strftime('%m', fecha) AS mes, SUM(pedidos) AS pedidos FROM {dataset} GROUP BY mes"},
    )
    return {
        "tools": tools,
        "extraction": extraction,
        "note": note,
        "dataset": dataset,
        "again": again,
        "forecast": forecast,
        "monthly": monthly,
    }


async def test_the_bridge_is_a_plain_mcp_server_with_each_source_prefixed(
    client: ClientSession, session: dict[str, Any]
) -> None:
    init = client.initialize_result
    assert init is not None
    assert init.server_info.name == "acp-bridge"
    assert "acp_query" in (init.instructions or "")
    tools = {t.name: t for t in session["tools"]}
    assert {"acp_sources", "acp_datasets", "acp_query", "ventas__execute_sql", "prevision__forecast"} <= set(tools)
    assert tools["ventas__execute_sql"].description.startswith("[Ventas (SQLite) · Databases] ")
    assert tools["prevision__forecast"].description.startswith("[Previsión local · Prediction] ")
    assert {"start_date", "end_date"} <= set(tools["ventas__execute_sql"].input_schema["properties"])


async def test_step_1_the_model_sees_25_of_90_rows_and_the_csv_holds_all_90(
    session: dict[str, Any], folders: dict[str, Path]
) -> None:
    extraction, dataset = session["extraction"], session["dataset"]
    model = json.loads(extraction.content[0].text)
    assert not extraction.is_error, model
    assert (model["returned_rows"], model["total_rows"]) == (25, 90)
    assert model["dates"] == ["2026-07-01", "2026-09-28"]
    assert {block["id"] for block in model["autocontext"]} >= {"tables", "table_schemas"}  # on the first call
    assert "autocontext" not in json.loads(session["again"].content[0].text)  # and only then (spec 7.5)
    assert dataset.startswith("ventas_execute_sql_")
    assert session["note"] == (
        f"The full extraction was saved as dataset «{dataset}» in acp-data/{dataset}.csv. You saw 25 of 90 rows."
    )
    with (folders["project"] / "acp-data" / f"{dataset}.csv").open(newline="", encoding="utf-8") as handle:
        saved = [(r["fecha"], int(r["pedidos"]), float(r["importe"])) for r in csv.DictReader(handle)]
    expected = _expected_days(folders["project"])
    assert len(saved) == 90
    assert [(d, n) for d, n, _ in saved] == [(d, n) for d, n, _ in expected]
    assert [s for *_, s in saved] == pytest.approx([s for *_, s in expected], abs=1e-9)
    meta = json.loads((folders["project"] / "acp-data" / f"{dataset}.meta.json").read_text("utf-8"))
    assert "2026-07-01' AND '2026-09-28'" in meta["arguments"]["sql"]
    assert (meta["source"], meta["acp"], meta["tool"], meta["resource_id"]) == (
        "ventas",
        "databases",
        "execute_sql",
        "ventas",
    )


async def test_step_2_the_forecast_reads_the_dataset_and_is_saved_too(
    session: dict[str, Any], folders: dict[str, Path]
) -> None:
    forecast = session["forecast"]
    model = json.loads(forecast.content[0].text)
    assert not forecast.is_error, model
    assert session["dataset"] in model["description"]
    note = _texts(forecast)[1]
    saved = note.split("«", 1)[1].split("»", 1)[0]
    assert saved.startswith("prevision_forecast_")
    with (folders["project"] / "acp-data" / f"{saved}.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert sum(1 for r in rows if r["kind"] == "forecast") == 14
    assert len(rows) == 14 + 90
    assert [block.type for block in forecast.content].count("image") == 1  # the chart (spec 8.10)


async def test_step_3_acp_query_totals_every_one_of_the_90_rows(
    session: dict[str, Any], folders: dict[str, Path]
) -> None:
    monthly = session["monthly"]
    answer = json.loads(monthly.content[0].text)
    assert not monthly.is_error, answer
    expected: dict[str, int] = {}
    for day, orders, _ in _expected_days(folders["project"]):
        expected[day[5:7]] = expected.get(day[5:7], 0) + orders
    assert {row["mes"]: row["pedidos"] for row in answer["rows"]} == expected
    assert set(expected) == {"07", "08", "09"}
    assert answer["row_count"] == 3
    assert (folders["project"] / "acp-data" / f"{answer['dataset']}.csv").is_file()


def _snapshot(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


BAD_INPUT = [
    ("nope__execute_sql", {"sql": "SELECT 1"}, "ACP_INVALID_ARGUMENTS", "Unknown tool 'nope__execute_sql'"),
    ("ventas__drop_everything", {}, "ACP_INVALID_ARGUMENTS", "The source 'ventas' has no tool 'drop_everything'"),
    ("acp_query", {"sql": "SELECT * FROM ventas_missing"}, "ACP_TABLE_NOT_FOUND", "No dataset 'ventas_missing'"),
    ("acp_query", {"sql": "DELETE FROM {ds}"}, "ACP_READ_ONLY_VIOLATION", ""),
    ("acp_query", {"sql": "DROP TABLE {ds}"}, "ACP_READ_ONLY_VIOLATION", ""),
    ("acp_query", {"sql": "SELECT 1 AS x", "save_as": "{ds}"}, "ACP_INVALID_ARGUMENTS", "is an extraction"),
    ("acp_query", {"sql": "SELECT content FROM read_text('../conf/sources.json')"}, None, ""),
    (
        "prevision__forecast",
        {"table_ref": "../conf/sources.json", "time_column": "fecha", "value_column": "pedidos", "horizon": 3},
        "ACP_TABLE_NOT_FOUND",
        "paths outside acp-data are refused",
    ),
    (
        "prevision__forecast",
        {"table_ref": "acp-data/../../conf/sources.json", "time_column": "f", "value_column": "p", "horizon": 3},
        "ACP_TABLE_NOT_FOUND",
        "",
    ),
    (
        "prevision__forecast",
        {"table_ref": "/etc/passwd", "time_column": "f", "value_column": "p", "horizon": 3},
        "ACP_TABLE_NOT_FOUND",
        "",
    ),
    (
        "ventas__execute_sql",
        {"sql": SQL, "start_date": "2026-09-31", "end_date": "today"},
        "ACP_INVALID_ARGUMENTS",
        "start_date '2026-09-31' is not a date",
    ),
    ("ventas__execute_sql", {"sql": "DELETE FROM ventas"}, "ACP_READ_ONLY_VIOLATION", ""),
]


async def test_bad_input_gets_a_typed_error_and_acp_data_does_not_change(
    client: ClientSession, session: dict[str, Any], folders: dict[str, Path]
) -> None:
    data = folders["project"] / "acp-data"
    before = _snapshot(data)
    assert len(before) >= 6  # the session's datasets are there to lose
    for name, arguments, error_name, message in BAD_INPUT:
        filled = {k: v.replace("{ds}", session["dataset"]) if isinstance(v, str) else v for k, v in arguments.items()}
        result = await client.call_tool(name, filled)
        assert result.is_error, (name, filled)
        error = json.loads(result.content[0].text)["error"]
        assert set(error) >= {"code", "name", "message"}
        if error_name is not None:
            assert error["name"] == error_name, (name, error)
        assert message in error["message"]
        assert "sources" not in filled.get("sql", "") or "toy" not in result.content[0].text
    assert _snapshot(data) == before


async def test_no_credential_appears_anywhere_but_the_sources_file(
    client: ClientSession, session: dict[str, Any], folders: dict[str, Path]
) -> None:
    seen = [t.model_dump_json() for t in session["tools"]]
    seen += [session[k].model_dump_json() for k in ("extraction", "again", "forecast", "monthly")]
    for name in ("almacen__execute_sql", "dsn__execute_sql", "almacen__autocontext"):
        failed = await client.call_tool(name, {"sql": "SELECT 1"} if "sql" in name else {})
        assert failed.is_error
        seen.append(failed.model_dump_json())
    sources = await client.call_tool("acp_sources", {})
    listed = {s["id"]: s for s in json.loads(sources.content[0].text)["sources"]}
    assert listed["almacen"]["has_credentials"] is True
    assert listed["prevision"]["has_credentials"] is False
    seen += [sources.model_dump_json(), (await client.call_tool("acp_datasets", {})).model_dump_json()]
    seen.append(folders["stderr"].read_text("utf-8"))
    for text in seen:
        assert SECRET not in text
    for path in (folders["project"] / "acp-data").rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
