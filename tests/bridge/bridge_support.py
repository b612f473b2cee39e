"""A bridge over in-process connectors, for the server's tests: real ACP over in-memory MCP, no process.

``serving(tmp_path, sources)`` writes ``sources.json`` and a root whose ``acps/`` folder lists the
connectors of :data:`DECLARATIONS`, then runs a :class:`~bridge.server.Bridge` whose connectors are
served in this process (``AcpHost.in_process``) unless a test asks for a real process.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import toy_connector
import toy_local_connector

from bridge.server import Bridge
from bridge.sources import InstalledConnector
from shared import CallContext, Connector, CostLimitExceeded, Credentials, Extraction, Info, Resources, Tool
from shared.host import AcpHost


async def export(arguments: dict[str, Any], ctx: CallContext) -> Info:
    data = {arguments["kind"]: arguments["path"], **({"download_as": arguments["as"]} if "as" in arguments else {})}
    return Info(data=data)


async def expensive(arguments: dict[str, Any], ctx: CallContext) -> Info:
    raise CostLimitExceeded(
        "The query would cost $3.20, above cost_limit_usd $1.00. Narrow it.", {"estimate_usd": 3.2, "limit_usd": 1.0}
    )


async def nothing(arguments: dict[str, Any], ctx: CallContext) -> Info:
    return Info(data={})


async def pair(arguments: dict[str, Any], ctx: CallContext) -> Extraction:
    """A multi-table extraction with one empty table (spec 8.2.1)."""

    def build() -> list[Any]:
        full = ctx.table("full", title="Full", columns=[{"name": "n", "type": "integer"}])
        full.extend({"n": n} for n in range(3))
        empty = ctx.table("empty", title="Empty", columns=[{"name": "n", "type": "integer"}])
        return [full.finish(), empty.finish()]

    return Extraction(tables=await ctx.run_blocking(build), description="Two tables, one empty.", multi=True)


# A connector for what the real ones do not do yet: artifacts of every kind (spec 8.10), a cost limit
# refusal (12.1) and a tool name long enough to break MCP's 64 characters with a long source id.
ARTIFACTS = Connector(
    id="art",
    title="Artifacts",
    version="1.0.0",
    description="Test-only connector that returns local files.",
    instructions="Returns the artifact paths it is given.",
    credentials=Credentials.none(),
    resources=Resources.none(),
    tools=(
        Tool(
            name="export",
            description="Returns an artifact path.",
            run=export,
            requires_resource=False,
            requires_credentials=False,
            input_schema={
                "properties": {
                    "kind": {"type": "string", "enum": ["screenshot_path", "pdf_path", "download_path"]},
                    "path": {"type": "string"},
                    "as": {"type": "string"},
                },
                "required": ["kind", "path"],
            },
        ),
        Tool(name="expensive", description="Always too expensive.", run=expensive, requires_resource=False),
        Tool(
            name="pair",
            description="Two tables.",
            kind="extraction",
            run=pair,
            requires_resource=False,
            requires_credentials=False,
        ),
        Tool(
            name="export_the_quarterly_report_file",
            description="A tool with a long name.",
            run=nothing,
            requires_resource=False,
            requires_credentials=False,
        ),
    ),
)

DECLARATIONS: dict[str, Connector] = {
    "toy": toy_connector.CONNECTOR,
    "toy_local": toy_local_connector.CONNECTOR,
    "art": ARTIFACTS,
}
PROCESS_COMMANDS = {"toy": toy_connector.COMMAND, "toy_local": toy_local_connector.COMMAND}


def write_root(root: Path, commands: Mapping[str, list[str]] | None = None) -> Path:
    """A bridge folder whose ``acps/`` holds one server folder per declaration (spec 13.2)."""
    for cid, connector in DECLARATIONS.items():
        command = (commands or {}).get(cid) or PROCESS_COMMANDS.get(cid) or [sys.executable, "-c", "pass"]
        folder = root / "acps" / cid
        folder.mkdir(parents=True, exist_ok=True)
        manifest = {
            "acp_version": "1.0",
            "id": cid,
            "name": connector.title,
            "transport": {"type": "stdio", "command": command[0], "args": command[1:]},
        }
        (folder / "acp.json").write_text(json.dumps(manifest), "utf-8")
    return root


def write_sources(path: Path, sources: list[Any] | str, defaults: Mapping[str, Any] | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(sources, str):
        path.write_text(sources, "utf-8")
    else:
        path.write_text(json.dumps({"defaults": dict(defaults or {}), "sources": sources}), "utf-8")
    return path


@asynccontextmanager
async def serving(
    tmp_path: Path,
    sources: list[Any] | str,
    *,
    in_process: Callable[..., AcpHost],
    runtime_dirs: Mapping[str, str],
    monkeypatch: Any,
    environ: Mapping[str, str] | None = None,
    processes: tuple[str, ...] = (),
    commands: Mapping[str, list[str]] | None = None,
) -> AsyncIterator[Bridge]:
    """A running bridge; connectors in ``processes`` run as real processes, the rest in this process."""
    root = write_root(tmp_path / "bridge", commands)
    sources_path = write_sources(tmp_path / "conf" / "sources.json", sources)
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    launch = InstalledConnector.host

    def host(self: InstalledConnector, env: Mapping[str, str], **kwargs: Any) -> AcpHost:
        if self.id in processes or self.id not in DECLARATIONS:
            return launch(self, {**env, **runtime_dirs}, **kwargs)
        return in_process(DECLARATIONS[self.id], env=dict(runtime_dirs), **kwargs)

    monkeypatch.setattr(InstalledConnector, "host", host)
    bridge = Bridge(project, sources_path, root, environ=environ or {})
    async with bridge.running():
        yield bridge


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` by relative path, with a digest of its bytes."""
    if not folder.exists():
        return {}
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def payload(result: Any) -> Any:
    """content[0] of a tool result, parsed."""
    return json.loads(result.content[0].text)


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content if block.type == "text"]
