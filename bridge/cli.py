"""``python -m bridge``: the flags of spec 16.2.

============  ===========================================================  ==========================================
Flag          Default                                                      Use
============  ===========================================================  ==========================================
--project P   ``ACP_BRIDGE_PROJECT``, else the current folder              where ``acp-data/`` is created
--sources F   ``<root>/sources.json``                                      the sources file (one per project if wanted)
--root R      the bridge's folder: the unpacked bundle, or the checkout    the folder holding ``acps/``
============  ===========================================================  ==========================================

Logs go to stderr only, as JSON lines with secrets scrubbed: stdout is the MCP channel.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["default_root", "main", "parse_args"]


def default_root(package: Path | None = None) -> Path:
    """The bridge's folder (spec 16.2): the unpacked bundle, or the source checkout.

    The folder above the ``bridge`` package (``package``, this one by default), except in a
    bundle, where the package sits in ``<bundle>/lib/`` beside ``<bundle>/manifest.json``: then
    the bundle's folder.
    """
    above = (package or Path(__file__).resolve().parent).parent
    if above.name == "lib" and (above.parent / "manifest.json").is_file():
        return above.parent
    return above


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    from .server import BRIDGE_VERSION

    parser = argparse.ArgumentParser(
        prog="python -m bridge",
        description="ACP Bridge: an MCP server over stdio that serves the installed ACP connectors "
        "to any MCP client, and saves every extraction in the project's acp-data folder.",
    )
    parser.add_argument(
        "--project",
        type=Path,
        default=None,
        help="project folder where acp-data/ is created (default: $ACP_BRIDGE_PROJECT, else the current folder)",
    )
    parser.add_argument("--sources", type=Path, default=None, help="sources file (default: <root>/sources.json)")
    parser.add_argument(
        "--root", type=Path, default=None, help="the bridge's folder, holding acps/ (default: the bundle or checkout)"
    )
    parser.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="log level (default info); logs go to stderr as JSON lines",
    )
    parser.add_argument("--version", action="version", version=f"ACP Bridge {BRIDGE_VERSION}")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the bridge over stdio until the client closes it."""
    args = parse_args(argv)
    from shared._redaction import configure_logging

    configure_logging(args.log_level)
    root = (args.root or default_root()).expanduser().resolve()
    project = (args.project or Path(os.environ.get("ACP_BRIDGE_PROJECT") or os.getcwd())).expanduser().resolve()
    sources = (args.sources or root / "sources.json").expanduser().absolute()
    log = logging.getLogger("acp.bridge")
    if not project.is_dir():
        # The one start-up refusal: without a project folder there is nowhere to keep acp-data.
        print(f"acp-bridge: the project folder {project} does not exist; create it or fix --project.", file=sys.stderr)
        sys.exit(2)
    log.info("project %s, sources %s, root %s", project, sources, root)
    import anyio

    from .server import Bridge, serve_stdio

    bridge = Bridge(project=project, sources_path=sources, root=root)
    try:
        anyio.run(serve_stdio, bridge)
    except KeyboardInterrupt:
        sys.exit(130)
