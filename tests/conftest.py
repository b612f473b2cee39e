"""Shared fixtures: the anyio backend, connectors discovered by ``acp.json``, hosts."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from toy_connector import COMMAND as TOY
from toy_connector import CONNECTOR as TOY_CONNECTOR

from shared import _redaction
from shared.declaration import Connector
from shared.host import AcpHost


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def runtime_dirs(tmp_path: Path) -> dict[str, str]:
    """Where servers keep caches and table files: outside their own folder (spec 13.1)."""
    cache, tmp = tmp_path / "acp-cache", tmp_path / "acp-tmp"
    cache.mkdir()
    tmp.mkdir()
    return {"ACP_CACHE_DIR": str(cache), "ACP_TMP_DIR": str(tmp)}


HostFactory = Callable[..., AbstractAsyncContextManager[AcpHost]]
InProcessFactory = Callable[..., AcpHost]


@pytest.fixture
def in_process(monkeypatch: pytest.MonkeyPatch) -> InProcessFactory:
    """``in_process(connector, env=..., **host_kwargs)``: a host whose server runs in this process.

    What a launched server has to itself is set up per test: ``env`` goes into ``os.environ``
    too (connector code reads settings there, like ``ACP_BIGQUERY_ENDPOINT``), and the
    secrets registered for redaction start empty, as in a new process.
    """
    monkeypatch.setattr(_redaction, "SECRETS", _redaction.SecretRegistry())

    def start(connector: Connector, env: Mapping[str, str] | None = None, **kwargs: Any) -> AcpHost:
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
        return AcpHost.in_process(connector, env=env, **kwargs)

    return start


@pytest.fixture
def toy_host(tmp_path: Path, runtime_dirs: dict[str, str], in_process: InProcessFactory) -> HostFactory:
    """The toy connector served in this process: ``async with toy_host(**host_kwargs) as host``."""
    state = tmp_path / "toy-state"
    state.mkdir(exist_ok=True)

    @asynccontextmanager
    async def start(**kwargs: Any) -> AsyncIterator[AcpHost]:
        env = {**runtime_dirs, "TOY_STATE_DIR": str(state), **kwargs.pop("env", {})}
        async with in_process(TOY_CONNECTOR, env=env, **kwargs) as host:
            yield host

    return start


@pytest.fixture
def toy_stdio(tmp_path: Path, runtime_dirs: dict[str, str]) -> HostFactory:
    """The toy connector as a process over stdio, for tests whose subject is the process or the pipe."""
    state = tmp_path / "toy-state"
    state.mkdir(exist_ok=True)

    @asynccontextmanager
    async def start(**kwargs: Any) -> AsyncIterator[AcpHost]:
        env = {**runtime_dirs, "TOY_STATE_DIR": str(state), **kwargs.pop("env", {})}
        async with AcpHost(TOY, env=env, **kwargs) as host:
            yield host

    return start


@pytest.fixture
def toy_state(tmp_path: Path) -> Path:
    return tmp_path / "toy-state"
