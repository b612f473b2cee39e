"""A test-only connector shaped like the planned prediction connector: no remote resource
(``resource_id.format: "none"``), no credentials, and an extraction that reads a host table
through ``acp/read_table`` (spec 6.1, 8.8). It lets the conformance suite run the checks
that apply to such a source.

Run as a server with ``python tests/toy_local_connector.py``.
"""

from __future__ import annotations

import datetime as dt
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

from shared import (
    Block,
    CallContext,
    Connector,
    Credentials,
    Extraction,
    InvalidArguments,
    Resources,
    Tool,
    table_ref_input,
)

COMMAND = [sys.executable, str(Path(__file__).resolve())]


async def forecast(arguments: dict[str, Any], ctx: CallContext) -> Extraction:
    """A flat forecast: the column's mean for each of the ``horizon`` days after the table's last date."""
    table = await ctx.read_table(arguments["table_ref"])
    column, horizon = arguments["column"], int(arguments.get("horizon", 30))
    values = [row[column] for row in table.rows if isinstance(row.get(column), (int, float))]
    dates = [dt.date.fromisoformat(row["date"]) for row in table.rows if isinstance(row.get("date"), str)]
    if not values or not dates:
        raise InvalidArguments(
            f"Table '{table.ref}' needs a 'date' column and numbers in '{column}'. Pass another table_ref or column."
        )
    mean = Decimal(sum(values)) / len(values)
    last = max(dates)

    def build() -> Any:
        writer = ctx.table(
            columns=[
                {"name": "date", "type": "date", "role": "dimension"},
                {"name": "forecast", "type": "number", "role": "metric"},
            ]
        )
        writer.extend({"date": last + dt.timedelta(days=day), "forecast": mean} for day in range(1, horizon + 1))
        return writer.finish()

    result = await ctx.run_blocking(build)
    first, final = last + dt.timedelta(days=1), last + dt.timedelta(days=horizon)
    return Extraction(
        tables=[result],
        description=f"Flat forecast of {column} from host table {table.ref} ({len(values)} rows).",
        dates=[first.isoformat(), final.isoformat()],
        applied_arguments={"horizon": horizon},
    )


async def fetch_methods(ref: Any, ctx: CallContext) -> Any:
    return [{"method": "flat", "description": "The mean of the history, for every day ahead."}]


FORECAST_INPUT = table_ref_input()
FORECAST_INPUT["properties"].update(
    {
        "column": {"type": "string", "description": "Numeric column to forecast."},
        "horizon": {"type": "integer", "minimum": 1, "maximum": 365, "description": "Days ahead; default 30."},
    }
)
FORECAST_INPUT["required"] = ["table_ref", "column"]

CONNECTOR = Connector(
    id="toy_local",
    title="Toy local",
    version="9.9.9",
    description="Test-only connector that works on host tables.",
    instructions="Toy local ACP: forecasts a host table; no remote source, no credentials.",
    credentials=Credentials.none(),
    resources=Resources.none(),
    tools=(
        Tool(
            name="forecast",
            description="Forecasts a numeric column of a host table.",
            kind="extraction",
            run=forecast,
            requires_resource=False,
            requires_credentials=False,
            input_schema=FORECAST_INPUT,
        ),
    ),
    blocks=(Block(id="methods", description="Forecasting methods this source offers.", fetch=fetch_methods),),
)

if __name__ == "__main__":
    from shared.cli import main

    main(CONNECTOR)
