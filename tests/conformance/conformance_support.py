"""Starting a connector for the conformance suite with its profile's source."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from profiles import Source

from shared.host import AcpHost

CANARY = "CANARY-7c1f9e3b5a2d4f60"


@dataclass(frozen=True)
class ConformanceSource:
    source: Source
    env: dict[str, str]


@asynccontextmanager
async def started(connector: str, conformance: ConformanceSource, **kwargs: Any) -> AsyncIterator[AcpHost]:
    env = {**conformance.env, **conformance.source.env, **kwargs.pop("env", {})}
    async with AcpHost.for_module(connector, env=env, **kwargs) as host:
        yield host
