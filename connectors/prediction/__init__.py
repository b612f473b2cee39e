"""Prediction ACP connector: forecasts, rolling-origin backtests and anomaly detection over tables
the host already holds (spec 8.8), with a chart. It calls no remote source: no resource_id
(spec 6.1, ``format: "none"``) and no credentials.

The declaration a reader opens first: credentials, resources, blocks, tools.
"""

from __future__ import annotations

from typing import Any

from shared import Block, CallContext, Connector, Cost, Credentials, ResourceRef, Resources

from .series import FREQUENCIES
from .tools import METHODS, TOOLS

__version__ = "0.1.0"


async def fetch_methods(ref: ResourceRef, ctx: CallContext) -> Any:
    """What the tools can do, so the model picks arguments without a failed call first."""
    return {
        "methods": list(METHODS),
        "frequencies": {f.name: {"seasonal_period": f.period} for f in FREQUENCIES},
        "times": "YYYY-MM-DD dates or ISO 8601 datetimes; numbers such as 202401 are not read as dates.",
        "gaps": "Missing periods are filled: zero with aggregate sum, linear interpolation otherwise.",
        "intervals": [0.8, 0.95],
    }


CONNECTOR = Connector(
    id="prediction",
    title="Prediction",
    version=__version__,
    description="Forecasts, backtests and anomaly detection over host tables, with a chart; no remote source.",
    instructions=(
        "Forecasting over tables the host already holds: pass a dataset id as table_ref (never rows), with the "
        "time and value columns. forecast returns actuals and forecast rows with an interval and a chart; backtest "
        "compares methods; detect_anomalies flags unusual points."
    ),
    credentials=Credentials.none(),
    resources=Resources.none(),
    tools=TOOLS,
    blocks=(Block(id="methods", description="Forecasting methods, frequencies and input rules.", fetch=fetch_methods),),
    cost=Cost(model="free", description="Runs on this machine; there is no monetary cost per call."),
    open_world=False,
)
