"""Starting a connector for the conformance suite, over stdio or HTTP, with its profile's source."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from http_support import http_server, module_command
from profiles import Source

from shared.host import AcpHost

CANARY = "CANARY-7c1f9e3b5a2d4f60"
TRANSPORTS = ("stdio", "http")


@dataclass(frozen=True)
class ConformanceSource:
    source: Source
    env: dict[str, str]
    workdir: Path
    transport: str


@contextlib.asynccontextmanager
async def started(connector: str, conformance: ConformanceSource, **kwargs: Any) -> AsyncIterator[AcpHost]:
    env = {**conformance.env, **conformance.source.env, **kwargs.pop("env", {})}
    if conformance.transport == "stdio":
        async with AcpHost.for_module(connector, env=env, **kwargs) as host:
            yield host
        return
    with http_server(module_command(connector), env, conformance.workdir) as server:
        async with AcpHost(url=server.url, server_stderr=server.stderr, **kwargs) as host:
            yield host
