"""Fixtures for the Search Console connector tests: one fake Search Console per module (its calendar the
connector's, so that the default window and the freshness probe meet its fresh days as they would
meet Google's) and hosts pointed at it. Helpers and ground truth are in tests/gsc_support.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fakes.search_console import FakeSearchConsole
from gsc_support import gsc_env, service_account, today

from connectors.gsc import CONNECTOR, api, inspection, resources, search


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeSearchConsole]:
    with FakeSearchConsole(today=today()) as server:
        yield server


@pytest.fixture(scope="module")
def credentials(fake: FakeSearchConsole) -> dict[str, Any]:
    return service_account(fake)


@pytest.fixture(autouse=True)
def fresh_state(request: pytest.FixtureRequest) -> Iterator[None]:
    """What a new server process has: no remembered sites, reliable days, quota use or clients; and no
    fault left over from another test."""
    resources._sites.clear()
    search._reliable_days.clear()
    inspection._quotas.clear()
    api._clients.clear()
    yield
    if "fake" in request.fixturenames:
        server: FakeSearchConsole = request.getfixturevalue("fake")
        server.server.clear_faults()
        server.reset_quotas()


@pytest.fixture
def gsc_host(fake: FakeSearchConsole, serve: Any) -> Any:
    """``async with gsc_host(**host_kwargs) as host``: the connector served in this process, on the fake."""
    return serve(CONNECTOR, gsc_env(fake))
