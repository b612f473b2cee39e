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
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from .declaration import Connector

if TYPE_CHECKING:
    from ._http import HttpOptions
    from ._token_sources import TokenSources

SOURCES_POLL_S = 2.0  # where there is no SIGHUP (Windows), how often the sources file is checked for changes


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
        "--sources",
        metavar="FILE",
        default=os.environ.get("ACP_SOURCES_FILE") or None,
        help="with --http: a JSON file binding bearer tokens to sources (credentials, config, limits, resources); "
        "owner-only; re-read on SIGHUP; also $ACP_SOURCES_FILE",
    )
    parser.add_argument(
        "--hash-token",
        action="store_true",
        help="read a bearer token on stdin and print the token_sha256 a sources file stores for it",
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
    if args.hash_token:
        sys.exit(_hash_token())
    if args.sources and not args.http:
        print(f"{connector.id}: --sources (ACP_SOURCES_FILE) binds tokens of --http; add --http.", file=sys.stderr)
        sys.exit(2)
    from ._redaction import configure_logging

    configure_logging(args.log_level)
    # The HTTP options first: a sources file that cannot be used stops the start before anything heavy loads.
    options = _http_options(connector, args) if args.http else None
    import anyio

    from ._runtime import AcpRuntime

    runtime = AcpRuntime(connector)
    # Everything imported so far lives as long as the process: keep it out of the
    # collector's full passes, which otherwise stall a call every few hundred (bench/).
    gc.freeze()
    if options is not None:
        from ._http import StartRefused, serve_http

        try:
            serve_http(runtime, options)
        except StartRefused as refused:
            _refuse_start(connector, refused)
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


def _http_options(connector: Connector, args: argparse.Namespace) -> HttpOptions:
    from ._http import HttpOptions, StartRefused

    allowed = [h.strip() for h in os.environ.get("ACP_ALLOWED_HOSTS", "").split(",") if h.strip()]
    token = os.environ.get("ACP_HTTP_TOKEN") or None
    try:
        sources = _token_sources(connector, args.sources, token) if args.sources else None
    except StartRefused as refused:
        _refuse_start(connector, refused)
    return HttpOptions(
        host=args.host,
        port=args.port if args.port is not None else int(os.environ.get("ACP_PORT", "7413")),
        token=token,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        behind_tls_proxy=args.behind_tls_proxy,
        allowed_hosts=tuple(allowed + args.allowed_host),
        log_level=args.log_level,
        sources=sources,
    )


def _refuse_start(connector: Connector, refused: Exception) -> NoReturn:
    print(f"{connector.id}: {refused}", file=sys.stderr)
    sys.exit(2)


def _token_sources(connector: Connector, path: str, http_token: str | None) -> TokenSources:
    """The sources file, loaded and checked before the server binds anything (``StartRefused`` if unusable)."""
    from ._http import StartRefused
    from ._token_sources import SourcesFileError, TokenSources, token_digest

    try:
        return TokenSources(
            Path(path),
            connector,
            poll_interval_s=None if hasattr(signal, "SIGHUP") else SOURCES_POLL_S,
            reserved=token_digest(http_token) if http_token else None,
        )
    except SourcesFileError as exc:
        raise StartRefused(f"the sources file cannot be used: {exc}") from None


def _hash_token() -> int:
    """``--hash-token``: the token on stdin (never an argument: it would sit in the shell history
    and the process list) to its ``token_sha256``; refused when too weak to bind a source."""
    from ._token_sources import token_digest, token_problem

    token = sys.stdin.readline().strip()
    problem = token_problem(token)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    print(token_digest(token).hex())
    return 0


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
