"""Fixtures shared by the connector tests of Google sources: ``meta`` for a call and a host serving the
connector in this process. Each connector's folder provides ``credentials`` and builds its own host
fixture with ``serve``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest

from shared import Connector
from shared.host import AcpHost

HostFactory = Callable[..., AbstractAsyncContextManager[AcpHost]]


@pytest.fixture
def meta(request: pytest.FixtureRequest) -> Callable[..., dict[str, Any]]:
    """``_meta.acp`` for a call: the folder's ``credentials`` and no first-call autocontext, plus ``extra``."""
    credentials = request.getfixturevalue("credentials")

    def build(**extra: Any) -> dict[str, Any]:
        return {"credentials": credentials, "autocontext_delivered": True, **extra}

    return build


@pytest.fixture
def serve(runtime_dirs: dict[str, str], in_process: Any) -> Callable[[Connector, Mapping[str, str]], HostFactory]:
    """``serve(connector, env)``: a factory for ``async with factory(**host_kwargs) as host``, the connector
    served in this process with the test's runtime folders, ``env`` and a call's own ``env=``."""

    def factory(connector: Connector, env: Mapping[str, str]) -> HostFactory:
        @asynccontextmanager
        async def start(**kwargs: Any) -> AsyncIterator[AcpHost]:
            merged = {**runtime_dirs, **env, **kwargs.pop("env", {})}
            async with in_process(connector, env=merged, **kwargs) as host:
                yield host

        return start

    return factory
