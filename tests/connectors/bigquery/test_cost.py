"""The cost preflight arithmetic (spec 9.2): estimates, refusals, the byte cap."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from connectors.bigquery.cost import (
    MB,
    TIB,
    Preflight,
    estimated_bytes_billed,
    human_bytes,
    maximum_bytes_billed,
    money,
    usd,
)
from shared import CostLimitExceeded


def _preflight(processed: int, limit: float, **kw) -> Preflight:
    tables = kw.pop("tables", 1)
    price = kw.pop("price", 6.25)
    return Preflight(
        total_bytes_processed=processed,
        estimated_bytes_billed=estimated_bytes_billed(processed, tables),
        estimate_usd=usd(processed, price),
        limit_usd=limit,
        price_per_tib_usd=price,
        statement_type="SELECT",
        accuracy=kw.pop("accuracy", "PRECISE"),
        **kw,
    )


def test_the_spec_example_is_refused_with_the_spec_message_and_data() -> None:
    with pytest.raises(CostLimitExceeded) as caught:
        _preflight(674810580992, 1).check()
    assert caught.value.message == (
        "The query would cost about $3.84 and the limit is $1.00. Narrow the query (fewer columns, shorter date "
        "range, filter by partition) or ask the user to raise the limit."
    )
    data = caught.value.data
    assert data["estimate_usd"] == pytest.approx(3.836, abs=5e-4) and data["limit_usd"] == 1
    assert data["total_bytes_processed"] == 674810580992
    assert data["estimated_bytes_billed"] == math.ceil(674810580992 / MB) * MB  # billed in whole MB
    assert data["price_per_tib_usd"] == 6.25 and data["statement_type"] == "SELECT"
    assert data["accuracy"] == "PRECISE"


def test_upper_bound_says_the_real_cost_is_often_lower_and_lower_bound_is_refused_even_when_small() -> None:
    with pytest.raises(CostLimitExceeded) as upper:
        _preflight(TIB, 1, accuracy="UPPER_BOUND").check()
    assert "often far lower" in upper.value.message
    _preflight(MB, 1, accuracy="UPPER_BOUND").check()  # an upper bound under the limit proves it fits
    for accuracy in ("LOWER_BOUND", "UNKNOWN"):
        with pytest.raises(CostLimitExceeded) as lower:
            _preflight(MB, 100, accuracy=accuracy).check()
        assert "cannot be shown to fit" in lower.value.message


def test_zero_limit_refuses_any_positive_estimate_and_lets_free_queries_run() -> None:
    with pytest.raises(CostLimitExceeded):
        _preflight(1, 0).check()
    free = _preflight(0, 0)
    free.check()
    assert maximum_bytes_billed(free.allowance_usd, 6.25) == 1  # never 0: 0 would mean "no cap"


def test_the_10_mb_minimum_per_table_is_refused_upfront_when_it_passes_the_limit() -> None:
    # 1 KB processed fits a $0.00005 limit, but BigQuery bills 10 MB per table (~$0.000057).
    with pytest.raises(CostLimitExceeded) as caught:
        _preflight(1024, 0.00005).check()
    assert "at least 10 MB per table" in caught.value.message
    _preflight(1024, 0.001).check()


def test_session_budget_counts_what_was_spent() -> None:
    query = usd(100 * 2**30, 6.25)  # ~$0.61
    _preflight(100 * 2**30, 1, budget_usd=2.0, spent_usd=1.0).check()
    with pytest.raises(CostLimitExceeded) as caught:
        _preflight(100 * 2**30, 1, budget_usd=2.0, spent_usd=1.5).check()
    assert "session_budget_usd" in caught.value.message
    assert caught.value.data["session_spent_usd"] == 1.5
    assert _preflight(0, 1, budget_usd=2.0, spent_usd=1.5).allowance_usd == 0.5
    assert query < 1


@given(
    limit=st.floats(min_value=0, max_value=1000, allow_nan=False),
    price=st.floats(min_value=0.01, max_value=100, allow_nan=False),
)
def test_the_byte_cap_never_allows_more_than_the_limit(limit: float, price: float) -> None:
    cap = maximum_bytes_billed(limit, price)
    assert cap is not None and cap >= 1
    if cap > 1:
        assert usd(cap, price) <= limit * (1 + 1e-12)
        assert usd(cap + 1, price) > limit * (1 - 1e-9) or math.isclose(usd(cap + 1, price), limit)


def test_flat_rate_price_sets_no_cap_and_helpers_format() -> None:
    assert maximum_bytes_billed(1, 0) is None
    assert estimated_bytes_billed(0, 3) == 0
    assert estimated_bytes_billed(1, 3) == 30 * MB
    assert estimated_bytes_billed(50 * MB + 1, 1) == 51 * MB
    assert human_bytes(674810580992) == "628.5 GB" and human_bytes(512) == "512 B"
    assert money(3.836) == "$3.84" and money(0.0000568) == "$0.000057" and money(0) == "$0.00"
