"""The prediction connector end to end through ``shared.host.AcpHost``: the spec 16.7 flow (a databases
extraction stored by the host, then ``forecast`` on its id), ``backtest``, ``detect_anomalies``, the chart,
and every bad input, on one server that keeps serving."""

from __future__ import annotations

import datetime as dt
import math
import os
import sqlite3
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from host_tables import StaticTable, StaticTables

from connectors.databases import CONNECTOR as DATABASES
from connectors.prediction import CONNECTOR as PREDICTION
from shared.errors import TableTruncated
from shared.host import ACP_HOST_CAPABILITY, AcpHost

pytestmark = pytest.mark.anyio
REF = "ventas_execute_sql_20261012_101630"
START = dt.date(2026, 7, 1)
DAYS = 90
CHANNELS = {"organic": 120.0, "paid": 60.0, "email": 25.0}
WEEKLY = (1.0, 1.1, 1.15, 1.1, 1.05, 0.8, 0.7)  # Monday … Sunday


def _orders(day: int, base: float) -> int:
    moment = START + dt.timedelta(days=day)
    return round(base * WEEKLY[moment.weekday()] * (1 + 0.003 * day) + (day * 7919 % 13) - 6)


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """The example database of spec 16.7: 90 days of orders by channel, in a real SQLite file."""
    path = tmp_path / "ventas.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE ventas (fecha TEXT, canal TEXT, pedidos INTEGER)")
        conn.executemany(
            "INSERT INTO ventas VALUES (?, ?, ?)",
            [
                ((START + dt.timedelta(days=day)).isoformat(), channel, _orders(day, base))
                for day in range(DAYS)
                for channel, base in CHANNELS.items()
            ],
        )
    conn.close()
    return path


def _daily(values: list[Any], column: str = "pedidos", start: dt.date = START) -> list[dict[str, Any]]:
    return [{"fecha": (start + dt.timedelta(days=i)).isoformat(), column: v} for i, v in enumerate(values)]


HEADERS = [{"name": "fecha", "type": "date"}, {"name": "pedidos", "type": "integer"}]


@pytest.fixture
def predict(runtime_dirs: dict[str, str], in_process):
    """The prediction connector in this process, with a host that holds ``tables``."""

    @asynccontextmanager
    async def start(tables: dict[str, Any], **kwargs: Any) -> AsyncIterator[AcpHost]:
        async with in_process(PREDICTION, env=runtime_dirs, tables=StaticTables(tables), **kwargs) as host:
            yield host

    return start


async def _stored_extraction(shop: Path, runtime_dirs: dict[str, str], in_process, sql: str) -> StaticTable:
    """Run a databases extraction and keep its full table, as a host stores a dataset (spec 16.7 step 1)."""
    meta = {"credentials": {"type": "sqlite", "path": str(shop)}, "autocontext_delivered": True}
    async with in_process(DATABASES, env=runtime_dirs) as host:
        result = await host.call("execute_sql", {"resource_id": "ventas", "sql": sql}, meta)
    assert not result.is_error, result.text
    return StaticTable(headers=result.system_data["headers"], rows=result.rows())


async def test_the_example_session_of_16_7(shop: Path, runtime_dirs, in_process, predict) -> None:
    dataset = await _stored_extraction(
        shop,
        runtime_dirs,
        in_process,
        "SELECT fecha, SUM(pedidos) AS pedidos FROM ventas "
        "WHERE fecha BETWEEN '2026-07-01' AND '2026-09-28' GROUP BY fecha ORDER BY fecha",
    )
    assert len(dataset.rows) == DAYS
    tables = StaticTables({REF: dataset})
    async with in_process(PREDICTION, env=runtime_dirs, tables=tables) as host:
        arguments = {
            "table_ref": REF,
            "time_column": "fecha",
            "value_column": "pedidos",
            "horizon": 14,
            "method": "holt_winters",
        }
        result = await host.call("forecast", arguments)
    assert not result.is_error, result.text
    assert [r["ref"] for r in tables.requests] == [REF]  # the rows came from the host, never the arguments
    model, data = result.model_response, result.system_data
    assert model["columns"] == ["time", "kind", "value", "lower", "upper"]
    assert [(h["name"], h["type"]) for h in data["headers"]] == [
        ("time", "date"),
        ("kind", "string"),
        ("value", "number"),
        ("lower", "number"),
        ("upper", "number"),
    ]
    last = START + dt.timedelta(days=DAYS - 1)
    window = [(last + dt.timedelta(days=1)).isoformat(), (last + dt.timedelta(days=14)).isoformat()]
    assert model["dates"] == window
    rows = result.rows()
    forecasts = [r for r in rows if r["kind"] == "forecast"]
    actuals = [r for r in rows if r["kind"] == "actual"]
    assert len(forecasts) == 14 and len(actuals) == DAYS and len(rows) == model["total_rows"]
    assert [r["time"] for r in forecasts] == [(last + dt.timedelta(days=k)).isoformat() for k in range(1, 15)]
    assert all(r["lower"] is None and r["upper"] is None for r in actuals)
    assert model["rows"][0]["kind"] == "forecast"  # the model's sample shows the forecast first
    history = [r["value"] for r in actuals]
    for row in forecasts:
        assert row["lower"] <= row["value"] <= row["upper"]
        assert 0.5 * min(history) < row["value"] < 1.5 * max(history)
    # The weekly season carries into the forecast: Sundays stay below the Wednesdays around them.
    by_day = {dt.date.fromisoformat(r["time"]).weekday(): r["value"] for r in forecasts[:7]}
    assert by_day[6] < by_day[2]
    (series,) = model["extra"]["series"]
    assert series["method"] == "holt_winters" and series["observed_points"] == DAYS
    assert model["extra"]["frequency"] == "daily" and model["extra"]["seasonal_period"] == 7
    _assert_chart(Path(model["screenshot_path"]), runtime_dirs)


def _assert_chart(path: Path, runtime_dirs: dict[str, str]) -> None:
    """spec 8.10: a PNG on this machine, under ACP_TMP_DIR, readable by the owner only."""
    assert path.is_absolute() and path.parent == Path(runtime_dirs["ACP_TMP_DIR"]).resolve()
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000
    if os.name == "posix":
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


async def test_one_forecast_per_group(shop: Path, runtime_dirs, in_process, predict) -> None:
    dataset = await _stored_extraction(
        shop, runtime_dirs, in_process, "SELECT fecha, canal, pedidos FROM ventas ORDER BY fecha, canal"
    )
    async with predict({"by_channel": dataset}) as host:
        arguments = {
            "table_ref": "by_channel",
            "time_column": "fecha",
            "value_column": "pedidos",
            "group_column": "canal",
            "horizon": 7,
            "interval": 0.95,
            "method": "theta",
        }
        result = await host.call("forecast", arguments)
        assert not result.is_error, result.text
        model = result.model_response
        assert model["columns"] == ["time", "group", "kind", "value", "lower", "upper"]
        rows = result.rows()
        for channel, base in CHANNELS.items():
            forecasts = [r for r in rows if r["group"] == channel and r["kind"] == "forecast"]
            assert len(forecasts) == 7
            assert all(0.4 * base < r["value"] < 2 * base for r in forecasts)
            assert len([r for r in rows if r["group"] == channel and r["kind"] == "actual"]) == DAYS
        series = {s["group"]: s for s in model["extra"]["series"]}
        assert set(series) == set(CHANNELS) and {s["method"] for s in series.values()} == {"theta"}
        assert model["extra"]["interval"] == 0.95
        assert Path(model["screenshot_path"]).exists()

        off = await host.call("forecast", {**arguments, "chart": False, "method": "seasonal_naive"})
        assert not off.is_error and "screenshot_path" not in off.model_response


async def test_gaps_are_filled_by_the_stated_rule_and_reported(predict) -> None:
    values: list[Any] = [float(10 + i % 7) for i in range(60)]
    rows = _daily(values)
    del rows[20:23]  # three missing days
    rows[40]["pedidos"] = None  # and an empty cell
    tables = {"gappy": StaticTable(HEADERS, rows)}
    async with predict(tables) as host:
        base = {"table_ref": "gappy", "time_column": "fecha", "value_column": "pedidos", "horizon": 3}
        result = await host.call("forecast", {**base, "chart": False})  # auto: a backtest on the series itself
        assert not result.is_error, result.text
        (series,) = result.model_response["extra"]["series"]
        assert series["backtest"] and math.isfinite(series["backtest"]["smape"]) and series["backtest"]["origins"] >= 1
        (warning,) = [w for w in result.model_response["warnings"] if "missing" in w]
        assert "4 missing daily period(s) filled by linear interpolation" in warning
        assert "2026-07-21" in warning
        actual_times = {r["time"] for r in result.rows() if r["kind"] == "actual"}
        assert len(actual_times) == 56 and "2026-07-21" not in actual_times  # filled points are not actuals
        assert result.model_response["extra"]["series"][0]["filled_points"] == 4


async def test_backtest_ranks_methods_with_smape_mase_and_coverage(predict) -> None:
    values = [100 + 20 * WEEKLY[(START + dt.timedelta(days=i)).weekday()] + i * 0.5 for i in range(84)]
    async with predict({"daily": StaticTable(HEADERS, _daily(values))}) as host:
        result = await host.call(
            "backtest",
            {
                "table_ref": "daily",
                "time_column": "fecha",
                "value_column": "pedidos",
                "methods": ["naive", "seasonal_naive", "holt_winters"],
            },
        )
    assert not result.is_error, result.text
    model = result.model_response
    assert model["columns"] == ["method", "smape", "mase", "coverage", "origins"]
    rows = result.rows()
    assert {r["method"] for r in rows} == {"naive", "seasonal_naive", "holt_winters"}
    assert [r["mase"] for r in rows] == sorted(r["mase"] for r in rows)  # best first
    assert all(0 <= r["coverage"] <= 1 and r["origins"] >= 1 for r in rows)
    assert rows[0]["method"] == "holt_winters"  # a clean weekly pattern with a trend: the seasonal model wins
    assert model["extra"]["horizon"] == 14  # the daily default
    assert model["dates"] == ["2026-07-01", (START + dt.timedelta(days=83)).isoformat()]


async def test_detect_anomalies_flags_the_spikes(predict) -> None:
    values = [100.0 + 10 * WEEKLY[(START + dt.timedelta(days=i)).weekday()] + (i % 3) for i in range(70)]
    values[30] = 400.0
    values[55] = 5.0
    async with predict({"daily": StaticTable(HEADERS, _daily(values))}) as host:
        result = await host.call(
            "detect_anomalies", {"table_ref": "daily", "time_column": "fecha", "value_column": "pedidos"}
        )
    assert not result.is_error, result.text
    assert result.model_response["columns"] == ["time", "value", "expected", "lower", "upper", "score"]
    flagged = {r["time"]: r for r in result.rows()}
    spike, dip = (START + dt.timedelta(days=30)).isoformat(), (START + dt.timedelta(days=55)).isoformat()
    assert spike in flagged and dip in flagged and len(flagged) <= 4
    assert flagged[spike]["value"] == 400 and flagged[spike]["value"] > flagged[spike]["upper"]
    assert flagged[dip]["value"] < flagged[dip]["lower"] < flagged[dip]["expected"]
    assert flagged[spike]["score"] > 0


GOOD = _daily([float(10 + i % 7) for i in range(40)])
BAD_INPUTS = [
    pytest.param("missing", {}, "ACP_TABLE_NOT_FOUND", "missing", id="unknown-ref"),
    pytest.param("sample", {}, "ACP_TABLE_TRUNCATED", "pass ds_full", id="truncated"),
    pytest.param("good", {"value_column": "ventas"}, "ACP_INVALID_ARGUMENTS", "value_column 'ventas'", id="no-column"),
    pytest.param("good", {"time_column": "dia"}, "ACP_INVALID_ARGUMENTS", "time_column 'dia'", id="no-time-column"),
    pytest.param("text_values", {}, "ACP_INVALID_ARGUMENTS", "non-numeric", id="non-numeric"),
    pytest.param("yyyymm", {}, "ACP_INVALID_ARGUMENTS", "202401", id="numeric-dates"),
    pytest.param("bad_dates", {}, "ACP_INVALID_ARGUMENTS", "not ISO dates", id="unparseable-dates"),
    pytest.param("duplicates", {}, "ACP_INVALID_ARGUMENTS", 'aggregate "sum" or "mean"', id="duplicates"),
    pytest.param("short", {}, "ACP_INVALID_ARGUMENTS", "at least 3", id="too-few-points"),
    pytest.param("minutes", {}, "ACP_INVALID_ARGUMENTS", "not a supported frequency", id="unsupported-frequency"),
]
BAD_TABLES: dict[str, Any] = {
    "good": StaticTable(HEADERS, GOOD),
    "sample": TableTruncated("Report 'sample' keeps only a sample; pass ds_full."),
    "text_values": StaticTable(HEADERS, [*GOOD[:5], {"fecha": "2026-08-20", "pedidos": "n/a"}]),
    "yyyymm": StaticTable(HEADERS, [{"fecha": 202401 + i, "pedidos": i} for i in range(10)]),
    "bad_dates": StaticTable(HEADERS, [*GOOD[:5], {"fecha": "31/12/2026", "pedidos": 3}]),
    "duplicates": StaticTable(HEADERS, [*GOOD, GOOD[3]]),
    "short": StaticTable(HEADERS, GOOD[:2]),
    "minutes": StaticTable(HEADERS, [{"fecha": f"2026-07-01T10:{m:02d}:00", "pedidos": m} for m in range(0, 60, 15)]),
}


@pytest.mark.parametrize(("ref", "change", "error", "says"), BAD_INPUTS)
async def test_each_bad_input_is_a_typed_error_and_the_server_keeps_serving(predict, ref, change, error, says) -> None:
    async with predict(BAD_TABLES) as host:
        arguments = {"table_ref": ref, "time_column": "fecha", "value_column": "pedidos", "horizon": 3, **change}
        failed = await host.call("forecast", arguments)
        assert failed.error_name == error, failed.text
        assert says in failed.error["message"]
        if error == "ACP_INVALID_ARGUMENTS":  # the message names what to do next
            assert any(word in failed.error["message"] for word in ("Pass", "pass", "Convert", "Aggregate"))
        fine = await host.call(
            "forecast", {"table_ref": "good", "time_column": "fecha", "value_column": "pedidos", "horizon": 3,
                         "method": "naive", "chart": False}
        )  # fmt: skip
        assert not fine.is_error, fine.text


async def test_aggregate_combines_rows_that_share_a_time(predict) -> None:
    async with predict(BAD_TABLES) as host:
        base = {"table_ref": "duplicates", "time_column": "fecha", "value_column": "pedidos", "horizon": 2}
        summed = await host.call("forecast", {**base, "aggregate": "sum", "method": "naive", "chart": False})
        meaned = await host.call("forecast", {**base, "aggregate": "mean", "method": "naive", "chart": False})
    day = GOOD[3]["fecha"]
    assert [r["value"] for r in summed.rows() if r["time"] == day] == [2 * GOOD[3]["pedidos"]]
    assert [r["value"] for r in meaned.rows() if r["time"] == day] == [GOOD[3]["pedidos"]]


@pytest.mark.parametrize("capability", [None, {**ACP_HOST_CAPABILITY, "host_tables": False}])
async def test_a_client_without_host_tables(predict, capability) -> None:
    async with predict(BAD_TABLES, capability=capability) as host:
        arguments = {"table_ref": "good", "time_column": "fecha", "value_column": "pedidos", "horizon": 3}
        result = await host.call("forecast", arguments)
    assert result.error_name == "ACP_HOST_TABLES_UNSUPPORTED"


async def test_the_methods_block_tells_the_rules(predict) -> None:
    async with predict({}) as host:
        result = await host.call("autocontext", {"request_data": ["methods"]})
    assert not result.is_error, result.text
    (block,) = result.model_response
    assert block["id"] == "methods"
    assert block["data"]["frequencies"]["daily"] == {"seasonal_period": 7}
    assert "auto" in block["data"]["methods"] and "202401" in block["data"]["times"]
