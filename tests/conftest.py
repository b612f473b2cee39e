"""Shared fixtures: the anyio backend, connectors discovered by ``acp.json``, hosts."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from toy_connector import COMMAND as TOY

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


@pytest.fixture
def toy_host(tmp_path: Path, runtime_dirs: dict[str, str]) -> HostFactory:
    """Start the toy connector: ``async with toy_host(**host_kwargs) as host``."""
    state = tmp_path / "toy-state"
    state.mkdir()

    @asynccontextmanager
    async def start(**kwargs: Any) -> AsyncIterator[AcpHost]:
        env = {**runtime_dirs, "TOY_STATE_DIR": str(state), **kwargs.pop("env", {})}
        async with AcpHost(TOY, env=env, **kwargs) as host:
            yield host

    return start


@pytest.fixture
def toy_state(tmp_path: Path) -> Path:
    return tmp_path / "toy-state"
