"""Fixtures for the GA4 connector tests: one fake GA4 (Data and Admin APIs, one token endpoint) per
module and hosts pointed at it. Helpers and ground truth are in tests/ga4_support.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fakes.ga4 import FakeGA4
from ga4_support import ga4_env, service_account

from connectors.ga4 import CONNECTOR, api, names, resources


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeGA4]:
    with FakeGA4(events_per_day=100) as server:  # enough rows for several pages, and quick to aggregate
        yield server


@pytest.fixture(scope="module")
def credentials(fake: FakeGA4) -> dict[str, Any]:
    return service_account(fake)


@pytest.fixture(autouse=True)
def fresh_state(request: pytest.FixtureRequest) -> Iterator[None]:
    """What a new server process has: no remembered summaries, properties, metadata or clients; and no
    fault, knob or spent quota left over from another test."""
    resources.clear_caches()
    names.clear_caches()
    api._clients.clear()
    yield
    if "fake" in request.fixturenames:
        server: FakeGA4 = request.getfixturevalue("fake")
        server.clear_faults()  # faults, knobs and quotas


@pytest.fixture
def ga4_host(fake: FakeGA4, serve: Any) -> Any:
    """``async with ga4_host(**host_kwargs) as host``: the connector served in this process, on the fake."""
    return serve(CONNECTOR, ga4_env(fake))
