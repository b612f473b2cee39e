"""Command line of every connector: ``python -m connectors.<id> [--http ...]`` (spec 13.3)."""

from __future__ import annotations

import argparse
import atexit
import gc
import logging
import os
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn

from .declaration import Connector


def parse_args(connector: Connector, argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=f"python -m connectors.{connector.id}",
        description=f"{connector.title} ACP server. stdio by default; --http serves MCP Streamable HTTP on /mcp.",
    )
    parser.add_argument("--version", action="version", version=f"{connector.id} {connector.version} (ACP 1.0)")
    parser.add_argument("--http", action="store_true", help="serve Streamable HTTP instead of stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None, help="HTTP port (default $ACP_PORT or 7413)")
    parser.add_argument("--tls-cert", help="TLS certificate file (PEM) for HTTPS")
    parser.add_argument("--tls-key", help="TLS private key file (PEM) for HTTPS")
    parser.add_argument(
        "--behind-tls-proxy", action="store_true", help="a proxy in front terminates TLS (allows a non-loopback bind)"
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        help="a hostname clients use to reach the server (Host/Origin check); repeatable; also $ACP_ALLOWED_HOSTS",
    )
    parser.add_argument(
        "--log-level",
        default=os.environ.get("ACP_LOG_LEVEL", "warning"),
        choices=["debug", "info", "warning", "error"],
        help="log level; logs go to stderr as JSON lines",
    )
    return parser.parse_args(argv)


def main(connector: Connector, argv: Sequence[str] | None = None) -> None:
    """Run a connector over stdio (default) or Streamable HTTP."""
    args = parse_args(connector, argv)
    from ._redaction import configure_logging

    configure_logging(args.log_level)
    import anyio

    from ._runtime import AcpRuntime

    runtime = AcpRuntime(connector)
    # Everything imported so far lives as long as the process: keep it out of the
    # collector's full passes, which otherwise stall a call every few hundred (bench/).
    gc.freeze()
    if args.http:
        from ._http import HttpOptions, StartRefused, serve_http

        allowed = [h.strip() for h in os.environ.get("ACP_ALLOWED_HOSTS", "").split(",") if h.strip()]
        options = HttpOptions(
            host=args.host,
            port=args.port if args.port is not None else int(os.environ.get("ACP_PORT", "7413")),
            token=os.environ.get("ACP_HTTP_TOKEN") or None,
            tls_cert=args.tls_cert,
            tls_key=args.tls_key,
            behind_tls_proxy=args.behind_tls_proxy,
            allowed_hosts=tuple(allowed + args.allowed_host),
            log_level=args.log_level,
        )
        try:
            serve_http(runtime, options)
        except StartRefused as refused:
            print(f"{connector.id}: {refused}", file=sys.stderr)
            sys.exit(2)
        return
    from ._sdk import serve_stdio_handshake_era

    server = runtime.build_server()
    # A host may stop its server with SIGTERM rather than by closing stdin. Python's default dies on
    # the spot, so exit handlers (removing the private table folder) would never run.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        anyio.run(serve_stdio_handshake_era, server, server.create_initialization_options(), _client_gone)
    except KeyboardInterrupt:
        sys.exit(130)


def _exit_on_sigterm(signum: int, frame: object) -> None:
    _leave(128 + signum)


def _client_gone() -> NoReturn:
    # Not an error of this server: the client closed its end of stdout (it exited, or gave up on
    # the answer). Nothing can reach it any more, so the process ends, with code 0.
    logging.getLogger("acp").warning("The client went away (stdout closed) while an answer was being written; exiting.")
    _leave(0)


def _leave(code: int) -> NoReturn:
    # Run the exit handlers, then leave at once: a normal exit would wait for the worker thread
    # that is blocked reading stdin, which the host may not have closed.
    atexit._run_exitfuncs()
    os._exit(code)
