"""Starting a connector for the conformance suite with its profile's source: in this process over
in-memory MCP streams (every check), or as a process over stdio or HTTP (the smoke runs)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from host_tables import StaticTable, StaticTables
from http_support import http_server
from profiles import Profile, Source

from shared.host import AcpHost

CANARY = "CANARY-7c1f9e3b5a2d4f60"


@dataclass(frozen=True)
class ConformanceSource:
    profile: Profile
    source: Source
    env: dict[str, str]
    workdir: Path
    in_process: Callable[..., AcpHost]  # the in_process fixture of tests/conftest.py

    @property
    def meta(self) -> dict[str, Any]:
        """``_meta.acp`` that makes the extraction work: the credentials (if any) and the limits it needs."""
        credentials = {"credentials": self.source.credentials} if self.source.credentials is not None else {}
        return {**credentials, **self.source.limits}


@contextlib.asynccontextmanager
async def started(conformance: ConformanceSource, transport: str = "memory", **kwargs: Any) -> AsyncIterator[AcpHost]:
    """A host connected to the connector, holding the source's host tables."""
    env = {**conformance.env, **conformance.source.env, **kwargs.pop("env", {})}
    tables = StaticTables(
        {ref: StaticTable(headers=t.headers, rows=t.rows) for ref, t in conformance.source.host_tables.items()}
    )
    kwargs.setdefault("tables", tables)
    profile = conformance.profile
    if transport == "memory":
        async with conformance.in_process(profile.declaration(), env=env, **kwargs) as host:
            yield host
    elif transport == "stdio":
        async with AcpHost(profile.command(), env=env, **kwargs) as host:
            yield host
    else:
        with http_server(profile.command(), env, conformance.workdir) as server:
            async with AcpHost(url=server.url, server_stderr=server.stderr, **kwargs) as host:
                yield host


async def extraction_arguments(host: AcpHost, source: Source, with_resource: bool = True) -> dict[str, Any]:
    """The extraction's arguments, plus the source's resource_id when the tool publishes one (spec 6.2)."""
    tool, arguments = source.extraction
    published = {t["name"]: t["inputSchema"] for t in await host.list_tools()}
    if with_resource and "resource_id" in published[tool]["properties"]:
        return {"resource_id": source.resource_id, **arguments}
    return dict(arguments)
