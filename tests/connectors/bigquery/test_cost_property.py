"""Property: no query whose dry-run estimate exceeds the limit ever reaches BigQuery as a job.

Queries are generated over the GA4 export (column subsets, shard windows, aggregates) and
limits around their real cost; every call goes through the real connector and the real
client to the fake, which records every non-dry job it receives.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from bigquery_support import DATASET, PROJECT, bq_env, service_account
from fakes.bigquery import FakeBigQuery
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from connectors.bigquery.cost import TIB
from shared.host import AcpHost

COLUMNS = ("event_date", "event_name", "user_pseudo_id", "event_timestamp", "event_params", "geo", "items")
DAYS = [f"202609{d:02d}" for d in range(1, 8)]


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeBigQuery]:
    """A week of GA4 events weighing ~10⁵ times their stored size: queries cost cents, not nanodollars."""
    with FakeBigQuery() as server:
        server.add_project(PROJECT)
        server.add_ga4_export(PROJECT, DATASET, start=dt.date(2026, 9, 1), days=7, events_per_day=200, bytes_scale=1e5)
        yield server


@pytest.fixture(scope="module")
def running(fake: FakeBigQuery, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BlockingPortal, AcpHost]]:
    env = bq_env(fake, Path(tmp_path_factory.mktemp("property")))
    with start_blocking_portal() as portal, contextlib.ExitStack() as stack:
        host = AcpHost.for_module("bigquery", env=env)
        stack.enter_context(portal.wrap_async_context_manager(host))
        yield portal, host


@st.composite
def queries(draw: st.DrawFn) -> str:
    columns = draw(st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=4, unique=True))
    first = draw(st.sampled_from(DAYS))
    last = draw(st.sampled_from([d for d in DAYS if d >= first]))
    table = f"`{PROJECT}.{DATASET}.events_*`"
    where = f"WHERE _TABLE_SUFFIX BETWEEN '{first}' AND '{last}'"
    if draw(st.booleans()):
        return f"SELECT {', '.join(columns)} FROM {table} {where}"
    return f"SELECT event_name, COUNT(*) AS n FROM {table} {where} GROUP BY 1"


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sql=queries(), limit_micro_usd=st.integers(min_value=0, max_value=60_000))
@example(  # both outcomes, whatever hypothesis draws: a refusal…
    sql=f"SELECT event_params, items FROM `{PROJECT}.{DATASET}.events_*` WHERE _TABLE_SUFFIX BETWEEN '20260901' "
    "AND '20260907'",
    limit_micro_usd=1,
)
@example(  # …and a run
    sql=f"SELECT event_name FROM `{PROJECT}.{DATASET}.events_*` WHERE _TABLE_SUFFIX BETWEEN '20260901' AND '20260901'",
    limit_micro_usd=60_000,
)
def test_nothing_above_the_limit_ever_runs(running, fake: FakeBigQuery, sql: str, limit_micro_usd: int) -> None:
    portal, host = running
    limit = limit_micro_usd / 1_000_000
    credentials = service_account(fake)
    meta: dict[str, Any] = {
        "credentials": credentials,
        "cost_limit_usd": limit,
        "default_resource_id": f"{PROJECT}.{DATASET}",
        "autocontext_delivered": True,
        "row_limit": 0,
    }
    executed = len(fake.executed)
    result = portal.call(host.call, "execute_query", {"query": sql}, meta)
    dry = fake.dry_runs[-1]
    assert dry.sql == sql
    estimate = dry.total_bytes_processed / TIB * 6.25
    new_jobs = fake.executed[executed:]
    if estimate > limit:
        assert new_jobs == [] and result.error_name == "ACP_COST_LIMIT_EXCEEDED"
    else:
        # It may still be refused (BigQuery's 10 MB minimum per table), but what runs fits the cap.
        for job in new_jobs:
            assert job.maximum_bytes_billed is not None and job.total_bytes_billed <= job.maximum_bytes_billed
            assert job.maximum_bytes_billed / TIB * 6.25 <= limit + 1e-12 or job.maximum_bytes_billed == 1
        if not new_jobs:
            assert result.error_name == "ACP_COST_LIMIT_EXCEEDED"
