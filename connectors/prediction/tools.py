"""Tools of the prediction connector: ``forecast``, ``backtest`` and ``detect_anomalies``, all
extractions over one host table (spec 8.8). The statistics run in the worker processes of
``worker.py`` (``models.py`` is the only module that imports numpy and statsmodels); this module
turns tables into series (``series.py``) and the results into tables and a chart."""

from __future__ import annotations

import datetime as dt
import importlib.util
import math
from collections.abc import Sequence
from typing import Any, Literal

from shared import CallContext, ColumnType, Extraction, Header, Tool, UpstreamError, table_ref_input
from shared.errors import missing_extra
from shared.values import json_safe

from . import series as ts

METHODS = ("auto", "ets", "holt_winters", "theta", "arima", "seasonal_naive", "naive")
INTERVALS = (0.8, 0.95)
MAX_HORIZON = 500
_STATISTICS = ("numpy", "statsmodels")


def _require_statistics() -> None:
    # The worker imports these before it reports ready: a missing one would only show as a dead worker.
    for name in _STATISTICS:
        if importlib.util.find_spec(name) is None:
            raise missing_extra(ModuleNotFoundError(name=name), "prediction")


def _run(name: str, kwargs: dict[str, Any]) -> tuple[Any, list[str]]:
    """``models.<name>(**kwargs)`` in a worker under the fit cap (blocking: call it in ``run_blocking``)."""
    from . import worker

    try:
        return worker.run_capped(name, kwargs)
    except worker.FitTimeout as exc:
        raise UpstreamError(
            f"The statistics were stopped at their time cap ({exc}). Pass a shorter table, fewer groups or a "
            "simpler method (seasonal_naive, naive), or ask the user to raise ACP_PREDICTION_FIT_CAP_S."
        ) from None
    except worker.WorkerCrashed as exc:
        raise UpstreamError(f"The statistics failed on the server ({exc}). Try again, or a simpler method.") from None


def _each_series(
    panel: ts.Panel, name: str, options: dict[str, Any], warnings: list[str]
) -> list[tuple[ts.Series, Any, str, list[str]]]:
    """``models.<name>`` on each series of the panel, with the same options and its own values: (series, result,
    its label for warnings, the warnings of the time cap). The cap's warnings are added to ``warnings``."""
    out = []
    for one in panel.series:
        result, capped = _run(name, {"values": one.values, "period": panel.period, **options})
        label = f"Group {one.group!r}: " if one.group is not None else ""
        warnings.extend(label + w for w in capped)
        out.append((one, result, label, capped))
    return out


async def _panel(arguments: dict[str, Any], ctx: CallContext) -> tuple[str, ts.Panel]:
    _require_statistics()
    ref = str(arguments["table_ref"])
    table = await ctx.read_table(ref)
    panel = await ctx.run_blocking(
        lambda: ts.load(
            table,
            time_column=str(arguments["time_column"]),
            value_column=str(arguments["value_column"]),
            group_column=arguments.get("group_column") or None,
            aggregate=arguments.get("aggregate"),
            seasonality=arguments.get("seasonality"),
        )
    )
    return ref, panel


def _number(value: float) -> float | None:
    # Ten significant digits: more is noise in a forecast, and costs the model's budget.
    return float(f"{value:.10g}") if math.isfinite(value) else None


def _time(panel: ts.Panel, moment: dt.datetime) -> dt.date | dt.datetime:
    return moment if panel.frequency.has_time_of_day else moment.date()


def _time_header(panel: ts.Panel) -> Header:
    kind: ColumnType = "datetime" if panel.frequency.has_time_of_day else "date"
    return {
        "name": "time",
        "type": kind,
        "role": "dimension",
        "description": f"Start of the {panel.frequency.name} period.",
    }


def _group_header(panel: ts.Panel, group_column: str | None) -> list[Header]:
    if group_column is None:
        return []
    return [{"name": "group", "type": "string", "role": "dimension", "description": f"Value of {group_column}."}]


def _span(panel: ts.Panel) -> list[str]:
    first = min(s.start for s in panel.series)
    last = max(s.time(panel.frequency, len(s.values) - 1) for s in panel.series)
    return [first.date().isoformat(), last.date().isoformat()]


def _subject(ref: str, arguments: dict[str, Any], panel: ts.Panel) -> str:
    grouped = f" by {arguments['group_column']}" if arguments.get("group_column") else ""
    aggregate = f", rows sharing a time combined by {arguments['aggregate']}" if arguments.get("aggregate") else ""
    return (
        f"{arguments['value_column']}{grouped} over {arguments['time_column']} from host table {ref} "
        f"({len(panel.series)} series, {panel.frequency.name}, seasonal period {panel.period}{aggregate})"
    )


# -- forecast ------------------------------------------------------------------------------------------------------
async def forecast(arguments: dict[str, Any], ctx: CallContext) -> Extraction:
    ref, panel = await _panel(arguments, ctx)
    horizon = int(arguments["horizon"])
    method = str(arguments.get("method", "auto"))
    interval = float(arguments.get("interval", 0.8))
    group_column = arguments.get("group_column") or None
    frequency = panel.frequency

    def build() -> tuple[Any, list[dict[str, Any]], list[str], Any]:
        warnings: list[str] = []
        fits = []
        options = {"horizon": horizon, "method": method, "interval": interval}
        for _, result, label, capped in _each_series(panel, "forecast", options, warnings):
            fallback = result.params.get("fallback")
            if fallback and not capped:  # the cap's own warning already says it
                warnings.append(f"{label}{fallback}.")
            fits.append(result)
        headers: list[Header] = [
            _time_header(panel),
            *_group_header(panel, group_column),
            {"name": "kind", "type": "string", "role": "dimension", "description": "actual or forecast."},
            {"name": "value", "type": "number", "role": "metric", "description": str(arguments["value_column"])},
            {"name": "lower", "type": "number", "role": "metric", "description": f"Lower bound, {interval:.0%}."},
            {"name": "upper", "type": "number", "role": "metric", "description": f"Upper bound, {interval:.0%}."},
        ]
        writer = ctx.table(columns=headers)
        # Forecast rows first: the model sees the first rows of the table (spec 8.2), and they are what it asked for.
        for one, fit in zip(panel.series, fits, strict=True):
            end = len(one.values)
            for k in range(horizon):
                row: dict[str, Any] = {"time": _time(panel, one.time(frequency, end + k))}
                if group_column is not None:
                    row["group"] = one.group
                row.update(kind="forecast", value=_number(fit.point[k]))
                row.update(lower=_number(fit.lower[k]), upper=_number(fit.upper[k]))
                writer.append(row)
        for one in panel.series:
            filled = set(one.filled)
            for i, value in enumerate(one.values):
                if i in filled:
                    continue
                row = {"time": _time(panel, one.time(frequency, i))}
                if group_column is not None:
                    row["group"] = one.group
                row.update(kind="actual", value=_number(value), lower=None, upper=None)
                writer.append(row)
        per_series = [
            {
                **({"group": one.group} if one.group is not None else {}),
                "method": fit.method,
                "params": json_safe(fit.params),
                "backtest": json_safe(fit.backtest),
                "observed_points": one.observed,
                "filled_points": len(one.filled),
            }
            for one, fit in zip(panel.series, fits, strict=True)
        ]
        chart = _chart(ctx, panel, fits, arguments, ref, interval, warnings) if arguments.get("chart", True) else None
        return writer.finish(), per_series, warnings, chart

    table, per_series, warnings, chart = await ctx.run_blocking(build)
    last = max(s.time(frequency, len(s.values) + horizon - 1) for s in panel.series)
    first = min(s.time(frequency, len(s.values)) for s in panel.series)
    return Extraction(
        tables=[table],
        description=f"Forecast of {_subject(ref, arguments, panel)}: {horizon} periods ahead, method {method}, "
        f"{interval:.0%} interval.",
        dates=[first.date().isoformat(), last.date().isoformat()],
        extra={
            "frequency": frequency.name,
            "seasonal_period": panel.period,
            "interval": interval,
            "series": per_series,
        },
        warnings=[*panel.warnings, *warnings],
        applied_arguments={"method": method, "interval": interval},
        source={"table_ref": ref},
        screenshot_path=chart,
    )


def _chart(
    ctx: CallContext,
    panel: ts.Panel,
    fits: Sequence[Any],
    arguments: dict[str, Any],
    ref: str,
    interval: float,
    warnings: list[str],
) -> Any:
    """The PNG of the call (worker thread), or None with a warning when matplotlib is missing."""
    from . import chart

    frequency = panel.frequency
    pairs = sorted(zip(panel.series, fits, strict=True), key=lambda pair: -math.fsum(pair[0].values))
    panels = []
    for one, fit in pairs[: chart.MAX_PANELS]:
        observed = [i for i in range(len(one.values)) if i not in set(one.filled)]
        end = len(one.values)
        panels.append(
            chart.Panel(
                title=f"{arguments['group_column']} = {one.group} · {fit.method}"
                if one.group is not None
                else fit.method,
                actual_times=[one.time(frequency, i) for i in observed],
                actual=[one.values[i] for i in observed],
                forecast_times=[one.time(frequency, end + k) for k in range(len(fit.point))],
                point=fit.point,
                lower=fit.lower,
                upper=fit.upper,
            )
        )
    if len(pairs) > chart.MAX_PANELS:
        warnings.append(
            f"The chart shows the {chart.MAX_PANELS} groups with the largest totals of {len(pairs)}; the table has all."
        )
    title = f"{arguments['value_column']} from {ref}: {frequency.name}, {interval:.0%} interval"
    path, handle = ctx.artifact(".png")
    try:
        with handle:
            chart.draw(panels, title, interval, handle)
    except ImportError as exc:
        path.unlink(missing_ok=True)
        warnings.append(f"No chart: {missing_extra(exc, 'prediction').message}")
        return None
    return path


# -- backtest ------------------------------------------------------------------------------------------------------
async def backtest(arguments: dict[str, Any], ctx: CallContext) -> Extraction:
    ref, panel = await _panel(arguments, ctx)
    horizon = int(arguments.get("horizon") or panel.frequency.horizon)
    interval = float(arguments.get("interval", 0.8))
    methods = list(arguments.get("methods") or METHODS[1:])
    group_column = arguments.get("group_column") or None

    def build() -> tuple[Any, list[str]]:
        warnings: list[str] = []
        writer = ctx.table(
            columns=[
                *_group_header(panel, group_column),
                {"name": "method", "type": "string", "role": "dimension"},
                {"name": "smape", "type": "number", "role": "metric", "description": "sMAPE (M4), percent."},
                {
                    "name": "mase",
                    "type": "number",
                    "role": "metric",
                    "description": "MASE (M4); below 1 beats seasonal naive in-sample.",
                },
                {
                    "name": "coverage",
                    "type": "number",
                    "role": "metric",
                    "description": f"Share of actuals inside the {interval:.0%} interval.",
                },
                {
                    "name": "origins",
                    "type": "integer",
                    "role": "attribute",
                    "description": "Rolling origins evaluated.",
                },
            ]
        )
        options = {"horizon": horizon, "methods": methods, "interval": interval}
        for one, scores, label, _ in _each_series(panel, "backtest", options, warnings):
            if not scores:
                warnings.append(
                    f"{label}{one.observed} points are too few for a rolling-origin backtest of horizon {horizon}: "
                    "pass a smaller horizon or a longer history."
                )
            for score in sorted(scores, key=lambda s: (not math.isfinite(s.mase), s.mase)):
                row: dict[str, Any] = {"group": one.group} if group_column is not None else {}
                row.update(
                    method=score.method,
                    smape=_number(score.smape),
                    mase=_number(score.mase),
                    coverage=_number(score.coverage),
                    origins=score.origins,
                )
                writer.append(row)
        return writer.finish(), warnings

    table, warnings = await ctx.run_blocking(build)
    return Extraction(
        tables=[table],
        description=f"Rolling-origin backtest of {_subject(ref, arguments, panel)}: horizon {horizon}, methods "
        f"{', '.join(methods)}, {interval:.0%} interval; rows by MASE, best first.",
        dates=_span(panel),
        extra={"frequency": panel.frequency.name, "seasonal_period": panel.period, "horizon": horizon},
        warnings=[*panel.warnings, *warnings],
        applied_arguments={"horizon": horizon, "interval": interval, "methods": methods},
        source={"table_ref": ref},
    )


# -- detect_anomalies ----------------------------------------------------------------------------------------------
async def detect_anomalies(arguments: dict[str, Any], ctx: CallContext) -> Extraction:
    ref, panel = await _panel(arguments, ctx)
    interval = float(arguments.get("interval", 0.95))
    group_column = arguments.get("group_column") or None

    def build() -> tuple[Any, list[str]]:
        warnings: list[str] = []
        writer = ctx.table(
            columns=[
                _time_header(panel),
                *_group_header(panel, group_column),
                {"name": "value", "type": "number", "role": "metric", "description": str(arguments["value_column"])},
                {"name": "expected", "type": "number", "role": "metric", "description": "Trend plus season."},
                {"name": "lower", "type": "number", "role": "metric"},
                {"name": "upper", "type": "number", "role": "metric"},
                {
                    "name": "score",
                    "type": "number",
                    "role": "metric",
                    "description": "Distance outside the band, in half-widths of the band: above 1, far outside.",
                },
            ]
        )
        for one, found, _, _ in _each_series(panel, "detect_anomalies", {"interval": interval}, warnings):
            filled = set(one.filled)
            for anomaly in found:
                if anomaly.index in filled:
                    continue  # a filled period is not an observation
                row: dict[str, Any] = {"time": _time(panel, one.time(panel.frequency, anomaly.index))}
                if group_column is not None:
                    row["group"] = one.group
                row.update(
                    value=_number(one.values[anomaly.index]),
                    expected=_number(anomaly.expected),
                    lower=_number(anomaly.lower),
                    upper=_number(anomaly.upper),
                    score=_number(anomaly.score),
                )
                writer.append(row)
        return writer.finish(), warnings

    table, warnings = await ctx.run_blocking(build)
    return Extraction(
        tables=[table],
        description=f"Anomalies in {_subject(ref, arguments, panel)}: points outside the {interval:.0%} band around a "
        "robust seasonal decomposition.",
        dates=_span(panel),
        extra={"frequency": panel.frequency.name, "seasonal_period": panel.period, "interval": interval},
        warnings=[*panel.warnings, *warnings],
        applied_arguments={"interval": interval},
        source={"table_ref": ref},
    )


# -- declarations --------------------------------------------------------------------------------------------------
def _input(*, horizon: Literal["required", "optional", "none"], extra: dict[str, Any]) -> dict[str, Any]:
    schema = table_ref_input("Id of a host dataset or report holding the history. The host resolves the rows.")
    schema["properties"].update(
        {
            "time_column": {
                "type": "string",
                "description": "Column with the period of each row: YYYY-MM-DD dates or ISO 8601 datetimes "
                f"({ts.SUPPORTED}; numbers such as 202401 are not read as dates).",
            },
            "value_column": {"type": "string", "description": "Numeric column to model."},
            "group_column": {
                "type": "string",
                "description": f"Optional column splitting the table into series (at most {ts.MAX_GROUPS}), "
                "one model each.",
            },
            "seasonality": {
                "type": "integer",
                "minimum": 1,
                "maximum": 366,
                "description": "Seasonal period in periods (1: none). Default from the frequency: hourly 24, daily 7, "
                "weekly 52 (1 under two years), monthly 12, quarterly 4, yearly 1.",
            },
            "aggregate": {
                "type": "string",
                "enum": ["sum", "mean"],
                "description": "How to combine rows that share a time (within a group). Without it, repeated times "
                "are an error. With sum, missing periods count as zero; otherwise they are interpolated.",
            },
            **extra,
        }
    )
    if horizon != "none":
        default = " Default: 14 daily, 13 weekly, 18 monthly, 8 quarterly, 6 yearly, 48 hourly."
        schema["properties"]["horizon"] = {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_HORIZON,
            "description": "Periods ahead, in the table's frequency." + (default if horizon == "optional" else ""),
        }
    schema["required"] = ["table_ref", "time_column", "value_column", *(["horizon"] if horizon == "required" else [])]
    return schema


FORECAST = Tool(
    name="forecast",
    title="Forecast a host table",
    description=(
        "Forecasts a numeric column of a host dataset (pass its id as table_ref, never the rows), one series per "
        "group, with a prediction interval and a chart. The frequency is inferred; method auto picks by a "
        "backtest on the series itself. Forecast rows come first in the table, then the actuals."
    ),
    kind="extraction",
    run=forecast,
    requires_resource=False,
    requires_credentials=False,
    input_schema=_input(
        horizon="required",
        extra={
            "method": {
                "type": "string",
                "enum": list(METHODS),
                "default": "auto",
                "description": "Forecasting method.",
            },
            "interval": {
                "type": "number",
                "enum": list(INTERVALS),
                "default": 0.8,
                "description": "Coverage of the prediction interval.",
            },
            "chart": {
                "type": "boolean",
                "default": True,
                "description": "Draw a PNG of the forecast (screenshot_path).",
            },
        },
    ),
)

BACKTEST = Tool(
    name="backtest",
    title="Backtest forecasting methods",
    description=(
        "Rolling-origin evaluation of the forecasting methods on a host dataset (table_ref): sMAPE, MASE and "
        "interval coverage per method (and group), best first, to justify the method of a forecast."
    ),
    kind="extraction",
    run=backtest,
    requires_resource=False,
    requires_credentials=False,
    input_schema=_input(
        horizon="optional",
        extra={
            "methods": {
                "type": "array",
                "items": {"type": "string", "enum": list(METHODS[1:])},
                "minItems": 1,
                "uniqueItems": True,
                "description": "Methods to compare; default all.",
            },
            "interval": {
                "type": "number",
                "enum": list(INTERVALS),
                "default": 0.8,
                "description": "Interval whose coverage is measured.",
            },
        },
    ),
)

DETECT_ANOMALIES = Tool(
    name="detect_anomalies",
    title="Find anomalies in a host table",
    description=(
        "Flags the points of a host dataset (table_ref) outside a robust band around its seasonal decomposition, "
        "with the expected value, the bounds and a score."
    ),
    kind="extraction",
    run=detect_anomalies,
    requires_resource=False,
    requires_credentials=False,
    input_schema=_input(
        horizon="none",
        extra={
            "interval": {
                "type": "number",
                "enum": [0.9, 0.95, 0.99],
                "default": 0.95,
                "description": "Width of the band; points outside it are flagged.",
            }
        },
    ),
)
TOOLS = (FORECAST, BACKTEST, DETECT_ANOMALIES)
