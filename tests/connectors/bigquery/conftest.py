"""Fixtures for the BigQuery connector tests: one fake BigQuery per module and hosts pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from bigquery_support import (
    DAILY_SCHEMA,
    DATASET,
    GA4_DAYS,
    GA4_EVENTS_PER_DAY,
    GA4_START,
    PROJECT,
    bq_env,
    daily_rows,
    service_account,
)
from fakes.bigquery import FakeBigQuery

from shared.host import AcpHost


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeBigQuery]:
    """One fake per test module: a GA4 export (7 daily shards) and a small typed table."""
    with FakeBigQuery() as server:
        server.add_project(PROJECT, friendly_name="ACP test project")
        server.add_ga4_export(PROJECT, DATASET, start=GA4_START, days=GA4_DAYS, events_per_day=GA4_EVENTS_PER_DAY)
        server.add_dataset(PROJECT, "reporting", location="EU", description="Curated tables")
        server.add_table(PROJECT, "reporting", "daily", DAILY_SCHEMA, daily_rows(), description="Daily KPIs")
        yield server


@pytest.fixture(scope="module")
def ga4_intraday(fake: FakeBigQuery) -> str:
    """A GA4 export with today's ``events_intraday_YYYYMMDD`` beside three daily shards; ``events_*``
    matches it by prefix, but it is no date shard of ``events_*``."""
    fake.add_ga4_export(PROJECT, "analytics_456", start=GA4_START, days=3, events_per_day=20, intraday=True)
    return "analytics_456"


@pytest.fixture(scope="module")
def credentials(fake: FakeBigQuery) -> dict[str, Any]:
    return service_account(fake)


HostFactory = Callable[..., AbstractAsyncContextManager[AcpHost]]


@pytest.fixture
def bq_host(fake: FakeBigQuery, tmp_path: Path) -> HostFactory:
    """``async with bq_host(**host_kwargs) as host``: the connector over stdio, pointed at the fake."""

    @asynccontextmanager
    async def start(**kwargs: Any) -> AsyncIterator[AcpHost]:
        env = {**bq_env(fake, tmp_path), **kwargs.pop("env", {})}
        async with AcpHost.for_module("bigquery", env=env, **kwargs) as host:
            yield host

    return start
