"""The statistics (connectors/prediction/models.py) on generated series of known structure, and the worker's cap."""

from __future__ import annotations

import math

import numpy as np
import pytest

from connectors.prediction import models, worker

SEASON = np.array([0, 8, 14, 16, 14, 8, 0, -8, -14, -16, -14, -8], float)


def seasonal_series(n: int = 96, noise: float = 1.0, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return 100 + 0.3 * t + SEASON[t % 12] + rng.normal(0, noise, n)


def trend_series(n: int = 60, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 10 + 2.0 * np.arange(n) + rng.normal(0, 0.5, n)


MODEL_METHODS = ("auto", "ets", "holt_winters", "theta", "arima")


@pytest.mark.parametrize("method", models.METHODS)
def test_each_method_follows_the_season_and_its_interval_holds_the_future(method: str) -> None:
    full = seasonal_series(108)
    train, test = full[:96], full[96:]
    result = models.forecast(train.tolist(), 12, 12, method, 0.8)
    point, lower, upper = map(np.asarray, (result.point, result.lower, result.upper))
    assert len(point) == len(lower) == len(upper) == 12
    assert np.all(lower <= point) and np.all(point <= upper)
    if method == "naive":
        assert np.all(point == train[-1])
        return
    # The season's peak (month 3) stays above its trough (month 9) by most of the 32-point swing.
    assert point[3] - point[9] > 20
    assert np.corrcoef(point, test)[0, 1] > 0.9
    assert models.coverage(test, lower, upper) >= 0.6
    assert "fallback" not in result.params


@pytest.mark.parametrize("method", MODEL_METHODS)
def test_each_model_follows_a_trend(method: str) -> None:
    y = trend_series()
    result = models.forecast(y.tolist(), 1, 6, method)
    assert result.point[-1] > y[-1] + 4  # 2 per step; a flat forecast stays at y[-1]
    assert all(lo <= p <= hi for lo, p, hi in zip(result.lower, result.point, result.upper, strict=True))


def test_seasonal_naive_repeats_the_last_season_and_its_interval_widens_by_season() -> None:
    y = seasonal_series(48)
    result = models.forecast(y.tolist(), 12, 24, "seasonal_naive")
    assert result.point[:12] == pytest.approx(y[-12:].tolist())
    assert result.point[12:] == pytest.approx(y[-12:].tolist())
    widths = np.asarray(result.upper) - np.asarray(result.lower)
    assert widths[12] == pytest.approx(widths[0] * math.sqrt(2))


def test_auto_reports_its_choice_and_backtest() -> None:
    result = models.forecast(seasonal_series().tolist(), 12, 6, "auto")
    assert result.method == "auto"
    assert result.params["model"].startswith("ETS(")
    assert result.params["chosen_by"]
    assert result.backtest is not None
    assert 0 <= result.backtest["coverage"] <= 1
    assert result.backtest["smape"] < 10
    assert result.params["interval_scale"] >= 1
    # The calibration widens the interval only: the point forecast is ETS's own.
    assert result.point == models.forecast(seasonal_series().tolist(), 12, 6, "ets").point


def test_auto_widens_a_misspecified_models_interval_to_its_level() -> None:
    # Random walks with heavy-tailed steps whose scale grows fivefold: ETS assumes a constant variance, so its 80%
    # interval covers about half of the held-out points; the backtest's conformal factor should bring that to ~80%.
    rng = np.random.default_rng(0)
    raw, calibrated, scales = [], [], []
    for _ in range(10):
        y = 100 + np.cumsum(rng.standard_t(5, 80) * np.linspace(0.5, 3, 80))
        train, test = y[:-8].tolist(), y[-8:]
        auto = models.forecast(train, 1, 8, "auto", 0.8)
        point, lower, upper = np.asarray(auto.point), np.asarray(auto.lower), np.asarray(auto.upper)
        assert np.all(lower <= point) and np.all(point <= upper)
        scale = auto.params["interval_scale"]
        assert scale >= 1  # never narrower than the model's own interval
        scales.append(scale)
        # The model's own interval, before the widening (half-widths divided by the factor).
        raw.append(models.coverage(test, point - (point - lower) / scale, point + (upper - point) / scale))
        calibrated.append(models.coverage(test, lower, upper))
    assert sum(scale > 1 for scale in scales) >= 6
    assert np.mean(raw) < 0.7
    assert 0.65 <= np.mean(calibrated) <= 0.95


def test_interval_scale_is_the_conformal_quantile_of_the_backtest_ratios_and_never_below_one() -> None:
    def run(errors: list[float]) -> tuple[np.ndarray, np.ndarray, models._Fit]:
        zeros = np.zeros(len(errors))
        return zeros, np.asarray(errors), models._Fit(zeros, zeros - 1, zeros + 2, {})

    # Ratios 1..9 (positive errors are measured against the upper half-width, 2): with 9 ratios, the 80% conformal
    # rank is ceil(10 · 0.8) = 8.
    ratios = [-1.0, -2.0, -3.0, 8.0, 10.0, 12.0, 14.0, 16.0, 18.0]
    assert models.interval_scale([run(ratios[:4]), run(ratios[4:])], 0.8) == 8.0
    assert models.interval_scale([run([0.1, -0.2, 0.3])], 0.8) == 1.0


def test_a_wider_interval_is_wider() -> None:
    y = seasonal_series().tolist()
    narrow = models.forecast(y, 12, 6, "ets", 0.8)
    wide = models.forecast(y, 12, 6, "ets", 0.95)
    assert all(
        w[1] - w[0] > n[1] - n[0]
        for w, n in zip(
            zip(wide.lower, wide.upper, strict=True), zip(narrow.lower, narrow.upper, strict=True), strict=True
        )
    )


def test_fewer_than_two_seasons_drops_the_season_and_says_why() -> None:
    result = models.forecast(seasonal_series(18).tolist(), 12, 6, "holt_winters")
    assert result.params["period"] == 1
    assert "2 seasons of 12" in result.params["fallback"]


@pytest.mark.parametrize("method", models.METHODS)
def test_very_short_series_fall_back_to_naive(method: str) -> None:
    result = models.forecast([3.0, 5.0, 4.0], 1, 3, method)
    assert result.method == "naive"
    assert result.point == [4.0, 4.0, 4.0]
    if method != "naive":
        assert "fewer than 5" in result.params["fallback"]


def test_a_single_point_is_forecast_flat() -> None:
    result = models.forecast([7.0], 1, 2, "auto")
    assert result.point == [7.0, 7.0]
    assert result.lower == result.upper == [7.0, 7.0]


@pytest.mark.parametrize("method", models.METHODS)
def test_zeros_and_negatives_do_not_break_any_method(method: str) -> None:
    rng = np.random.default_rng(3)
    y = SEASON[np.arange(60) % 12] + rng.normal(0, 1, 60)  # crosses zero every half season
    y[::7] = 0.0
    result = models.forecast(y.tolist(), 12, 12, method)
    assert all(math.isfinite(v) for v in result.point + result.lower + result.upper)
    if method != "naive":
        assert result.point[3] > result.point[9]


def test_constant_series() -> None:
    for method in models.METHODS:
        result = models.forecast([5.0] * 30, 12, 4, method)
        assert result.point == pytest.approx([5.0] * 4, abs=1e-6), method


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method": "prophet"}, "unknown method"),
        ({"horizon": 0}, "horizon"),
        ({"interval": 1.5}, "interval"),
        ({"values": [1.0, float("nan"), 2.0]}, "missing"),
        ({"values": []}, "empty"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"values": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "period": 1, "horizon": 2, **kwargs}
    with pytest.raises(ValueError, match=message):
        models.forecast(**arguments)  # type: ignore[arg-type]


def test_backtest_ranks_a_seasonal_model_above_naive() -> None:
    methods = ("ets", "seasonal_naive", "naive")
    scores = {s.method: s for s in models.backtest(seasonal_series(120).tolist(), 12, 12, methods, origins=3)}
    assert set(scores) == set(methods)
    assert all(s.origins == 3 for s in scores.values())
    assert scores["ets"].mase < scores["naive"].mase
    assert scores["seasonal_naive"].mase < scores["naive"].mase
    assert all(0 <= s.coverage <= 1 for s in scores.values())


def test_backtest_of_a_series_too_short_for_one_origin_is_empty() -> None:
    assert models.backtest([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 1, 6, ("naive",)) == []


def test_m4_measures() -> None:
    assert models.smape([100.0, 0.0], [110.0, 0.0]) == pytest.approx(100 * (20 / 210) / 2)
    assert models.mase_scale([1.0, 2.0, 4.0, 7.0], 1) == pytest.approx(2.0)
    assert models.mase([10.0], [13.0], 2.0) == pytest.approx(1.5)
    assert models.coverage([1.0, 5.0], [0.0, 0.0], [2.0, 2.0]) == 0.5


@pytest.mark.parametrize("period", [12, 1])
def test_detect_anomalies_finds_injected_spikes_only(period: int) -> None:
    y = seasonal_series(120, noise=1.0, seed=5) if period == 12 else trend_series(120, seed=5)
    spikes = {30: 25.0, 77: -25.0, 101: 30.0}
    for index, delta in spikes.items():
        y[index] += delta
    found = models.detect_anomalies(y.tolist(), period, 0.99)
    assert {a.index for a in found} >= set(spikes)
    # Normal points may graze the 99% band (a handful of 117, see the report), but none scores like a spike.
    assert all(a.score < 1 for a in found if a.index not in spikes)
    assert len(found) <= len(spikes) + 8
    for anomaly in found:
        assert anomaly.lower <= anomaly.expected <= anomaly.upper
        assert anomaly.score > 0
        if anomaly.index in spikes:
            assert abs(anomaly.expected - (y[anomaly.index] - spikes[anomaly.index])) < 4
            assert anomaly.score > 1


def test_detect_anomalies_on_a_clean_series_finds_nothing_far_outside() -> None:
    found = models.detect_anomalies(seasonal_series(120, seed=9).tolist(), 12, 0.99)
    assert len(found) <= 8
    assert all(a.score < 1 for a in found)


# --- the worker: hard cap, fallback, errors ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pool() -> object:
    p = worker.WorkerPool(max_workers=1)
    yield p
    p.close()


def test_worker_runs_a_forecast(pool: worker.WorkerPool) -> None:
    result, warnings = pool.run_capped("forecast", {"values": [1.0, 2.0, 3.0, 4.0, 5.0], "period": 1, "horizon": 2})
    assert isinstance(result, models.Forecast)
    assert warnings == []


def test_worker_cap_stops_a_slow_fit_and_falls_back(pool: worker.WorkerPool) -> None:
    long_series = (np.random.default_rng(0).normal(size=4000).cumsum() + 1000).tolist()
    kwargs = {"values": long_series, "period": 12, "horizon": 6, "method": "arima"}
    result, warnings = pool.run_capped("forecast", kwargs, cap_s=0.01)
    assert result.method == "seasonal_naive"
    assert "took longer than 0.01 s" in warnings[0]
    assert "took longer" in result.params["fallback"]
    # The replacement worker serves the next call.
    again, _ = pool.run_capped(
        "forecast", {"values": [1.0, 2.0, 3.0, 4.0, 5.0], "period": 1, "horizon": 1, "method": "naive"}
    )
    assert again.point == [5.0]


def test_worker_cap_on_a_call_without_fallback_raises(pool: worker.WorkerPool) -> None:
    long_series = (np.random.default_rng(0).normal(size=4000).cumsum() + 1000).tolist()
    with pytest.raises(worker.FitTimeout, match="took longer"):
        pool.run_capped("backtest", {"values": long_series, "period": 12, "horizon": 6}, cap_s=0.01)


def test_worker_survives_a_call_that_raises(pool: worker.WorkerPool) -> None:
    with pytest.raises(ValueError, match="horizon must be at least 1"):
        pool.run_capped("forecast", {"values": [1.0, 2.0], "period": 1, "horizon": 0})
    result, _ = pool.run_capped(
        "forecast", {"values": [1.0, 2.0, 3.0, 4.0, 5.0], "period": 1, "horizon": 1, "method": "naive"}
    )
    assert result.point == [5.0]


def test_worker_refuses_an_unknown_function(pool: worker.WorkerPool) -> None:
    with pytest.raises(ValueError, match="unknown function"):
        pool.run_capped("exec", {})
