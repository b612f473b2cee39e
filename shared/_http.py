"""MCP Streamable HTTP for every connector (spec 3.2, 8.5, 10.5, 13.3).

One server answers on ``/mcp`` and on the path-versioned alias ``/mcp/v1``, with stateful
sessions (``Mcp-Session-Id``, SSE responses by default so ``acp/read_table`` has a
back-channel; JSON-only clients still work). The 2026-07-28 stateless revision is served on
the same endpoint by the SDK's modern entry. Around it:

* ``/healthz`` for load balancers, outside MCP and outside auth;
* ``/tables/<token>``: single-use, short-lived downloads that replace ``file://`` table URIs;
* a bearer token on everything else: ``ACP_HTTP_TOKEN`` (an ACP host that sends its own
  credentials), or a token the operator's sources file binds to one source
  (:mod:`._token_sources`; re-read on SIGHUP); a refusal is a 401 whose body is a JSON-RPC
  error, so MCP clients show its message;
* Host/Origin validation against DNS rebinding and a request body limit (the SDK's), a refused
  Host or Origin answered with how to allow it;
* the JSON-RPC errors the transport answers before reading a request (an unknown or deleted
  session) carry the request's id, and a closed session says how to open a new one;
* start-up refusals: a non-loopback bind needs a token (``ACP_HTTP_TOKEN`` or a sources
  file), and TLS or ``--behind-tls-proxy``.

Request bodies carry credentials, so nothing here logs them; uvicorn's access log is off
(the table tokens travel in paths).
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import json
import signal
from collections.abc import AsyncIterator, Iterator, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

    from ._runtime import AcpRuntime
    from ._token_sources import TokenSources

JSON_ONLY_HEADER = b"x-acp-json-only"  # marks a request from a client that cannot read SSE
DEFAULT_PORT = 7413
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
MCP_PATHS = ("/mcp", "/mcp/v1")
_OPEN_PATHS = frozenset({"/healthz"})
BOUND_SOURCE_SCOPE_KEY = "acp.bound_source"  # the request's BoundSource, for the runtime
UNAUTHORIZED = -32001  # JSON-RPC server-error range: the bearer token is missing or not accepted
# A request body up to this size is read again to find its id for an error answered without it.
ID_LOOKUP_MAX_BYTES = 256 * 1024
SESSION_GONE = (
    "Session not found: it was closed (DELETE) or expired. Start a new one: send initialize without an "
    "Mcp-Session-Id header."
)


class StartRefused(Exception):
    """The requested HTTP configuration is unsafe; the message says how to fix it."""


@dataclass(frozen=True)
class HttpOptions:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    token: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    behind_tls_proxy: bool = False
    allowed_hosts: tuple[str, ...] = ()
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    log_level: str = "warning"
    sources: TokenSources | None = None

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    @property
    def public_scheme(self) -> str:
        return "https" if (self.tls_cert or self.behind_tls_proxy) else "http"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a hostname: it may resolve anywhere


def check_options(options: HttpOptions) -> None:
    """Refuse, before binding anything, a configuration that would expose the server unsafely."""
    if bool(options.tls_cert) != bool(options.tls_key):
        raise StartRefused("--tls-cert and --tls-key go together: pass both, or neither.")
    if options.loopback:
        return
    if not options.token and options.sources is None:
        raise StartRefused(
            f"Refusing to serve on {options.host}: outside this machine the server needs transport authentication "
            "(spec 3.2). Set ACP_HTTP_TOKEN to a long random secret (clients then send "
            "'Authorization: Bearer <token>'), or bind tokens to sources with --sources, or bind 127.0.0.1."
        )
    if not (options.tls_cert or options.behind_tls_proxy):
        raise StartRefused(
            f"Refusing to serve on {options.host} without TLS (spec 3.2): pass --tls-cert and --tls-key, or "
            "--behind-tls-proxy if a proxy in front of this server terminates TLS."
        )


def _security_settings(options: HttpOptions) -> Any:
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"] if options.loopback else []
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"] if options.loopback else []
    named = list(options.allowed_hosts)
    if not options.loopback and not named and options.host not in ("0.0.0.0", "::"):  # noqa: S104 - compared, not bound
        named.append(options.host)
    for name in named:
        hosts += [name, f"{name}:*"]
        origins += [f"{scheme}://{name}{port}" for scheme in ("https", "http") for port in ("", ":*")]
    if not hosts:
        # A wildcard bind with no --allowed-host: the bearer token (required here) is what stops
        # a rebinding page, which cannot send it.
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


class BearerAuth:
    """Every request but ``/healthz`` must carry ``Authorization: Bearer <token>``.

    The token is ``ACP_HTTP_TOKEN`` (an ordinary ACP session: the host sends its own
    credentials) or one the sources file binds to a source; the request's scope then carries
    that :class:`~._token_sources.BoundSource` for the runtime. Either way ``scope["user"]``
    names the token by its digest, so the SDK binds each MCP session to the token that opened
    it and answers 404 to a request that presents the session with another token.

    Tokens are compared as SHA-256 digests, each with :func:`hmac.compare_digest`. A refusal is
    a 401 with ``WWW-Authenticate: Bearer`` and a JSON-RPC error body that carries the
    request's id, which MCP clients surface instead of a bare status.
    """

    def __init__(self, app: ASGIApp, token: str | None, sources: TokenSources | None) -> None:
        from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
        from mcp.server.auth.provider import AccessToken

        from ._token_sources import token_digest

        self.app = app
        self.sources = sources
        self._digest = token_digest
        self._http_token = token_digest(token) if token else None
        self._user_types = AuthenticatedUser, AccessToken

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in _OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        scheme, _, given = dict(scope["headers"]).get(b"authorization", b"").partition(b" ")
        # RFC 7235 §2.1: the scheme is case-insensitive; only the token is secret.
        presented = given.strip(b" ") if scheme.lower() == b"bearer" else b""
        if presented:
            digest = self._digest(presented)
            if self._http_token is not None and hmac.compare_digest(digest, self._http_token):
                await self.app({**scope, "user": self._user("acp-http-token", digest)}, receive, send)
                return
            # Looked up when the request arrives: a reload later does not change this request.
            bound = self.sources.lookup(digest) if self.sources is not None else None
            if bound is not None:
                user = self._user(f"acp-source:{bound.id}", digest)
                await self.app({**scope, "user": user, BOUND_SOURCE_SCOPE_KEY: bound}, receive, send)
                return
        await self._refuse(scope, receive, send, presented=bool(presented))

    def _user(self, client: str, digest: bytes) -> Any:
        """The ``scope["user"]`` the SDK compares to bind a session to its token (the digest, never the token)."""
        user, access_token = self._user_types
        return user(access_token(token=digest.hex(), client_id=client, scopes=[], subject=digest.hex()))

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, presented: bool) -> None:
        which = (
            "a token the server operator issued (one bound to a source in its sources file, or ACP_HTTP_TOKEN)"
            if self.sources is not None
            else "the server's ACP_HTTP_TOKEN"
        )
        if presented:
            message = (
                "Unauthorized: this bearer token is not accepted here (unknown, or rotated by the server operator). "
                f"Send 'Authorization: Bearer <token>' with {which}."
            )
            challenge = b'Bearer realm="acp", error="invalid_token"'
        else:
            message = f"Unauthorized: send 'Authorization: Bearer <token>' with {which}."
            challenge = b'Bearer realm="acp"'
        post = scope.get("method") == "POST"
        request_id = _request_id(await _RequestBody(receive, scope).read()) if post else None
        body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": UNAUTHORIZED, "message": message}}
        await _json(send, 401, body, extra_headers=[(b"www-authenticate", challenge)])


_ALLOW_NAME = "restart it with --allowed-host <name> (repeatable) or ACP_ALLOWED_HOSTS=<name>[,...]."


class RebindingHints:
    """Answers the SDK's DNS-rebinding refusals with the next step, not its bare "421 Invalid Host
    header" and "403 Invalid Origin header" (the SDK's only uses of those statuses on /mcp).

    A deployment behind a real hostname, or a browser app on one, meets these refusals first, and the
    fix is one option away.
    """

    HINTS: ClassVar[dict[int, tuple[str, str]]] = {
        421: (
            "invalid_host",
            "This server does not answer to the hostname in the Host header (DNS-rebinding protection). If clients "
            f"reach it by that name, {_ALLOW_NAME}",
        ),
        403: (
            "invalid_origin",
            "This server does not accept requests from the web page origin in the Origin header (DNS-rebinding "
            f"protection). If a page on that host should reach it, {_ALLOW_NAME}",
        ),
    }

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refused: int | None = None

        async def hinted(message: MutableMapping[str, Any]) -> None:
            nonlocal refused
            if message["type"] == "http.response.start" and message["status"] in self.HINTS:
                refused = message["status"]
            elif refused is None:
                await send(message)
            elif not message.get("more_body"):
                error, text = self.HINTS[refused]
                await _json(send, refused, {"error": error, "message": text})

        await self.app(scope, receive, hinted)


class JsonOnlyClients:
    """Clients that accept only ``application/json`` still work (spec 3.2: JSON or SSE).

    The SDK's stateful transport answers their POST with 406, so this adapter asks for SSE on
    the client's behalf and returns the one JSON-RPC response of that stream as plain JSON.
    Such a client has no stream for server-to-client requests, so the request is marked and
    ``acp/read_table`` is refused at once instead of waiting for an answer that cannot come.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" or not _accepts_only_json(scope):
            await self.app(scope, receive, send)
            return
        headers = [(k, v) for k, v in scope["headers"] if k not in (b"accept", JSON_ONLY_HEADER)]
        headers += [(b"accept", b"application/json, text/event-stream"), (JSON_ONLY_HEADER, b"1")]
        start: dict[str, Any] = {}
        body: list[bytes] = []
        done = False

        async def capture(message: MutableMapping[str, Any]) -> None:
            nonlocal done
            if done:
                return
            if message["type"] == "http.response.start":
                start.update(message)
                return
            body.append(message.get("body", b""))
            streaming = dict(start.get("headers", [])).get(b"content-type", b"").startswith(b"text/event-stream")
            answer = _response_in_sse(b"".join(body)) if streaming else None
            if answer is not None:
                done = True
                kept = [(k, v) for k, v in start["headers"] if k.lower() == b"mcp-session-id"]
                await _json(send, start.get("status", 200), answer, kept)
            elif not message.get("more_body") and not streaming:
                done = True
                await send(start)
                await send({"type": "http.response.body", "body": b"".join(body)})

        await self.app({**scope, "headers": headers}, receive, capture)


class RequestIdInErrors:
    """JSON-RPC errors the SDK's transport answers before it reads the request carry its id.

    A POST to an unknown or deleted session gets 404 with ``"id": null`` (so does a 400 such as a
    missing session id): a client that matches answers to requests by id cannot tell which request
    failed. JSON-RPC 2.0 wants the request's id whenever it can be read, so the body (the part the
    transport read, and the rest up to :data:`ID_LOOKUP_MAX_BYTES`) gives it back; a body that is
    larger, not JSON or not a request keeps ``null``. A 404 for a session also says what to do next.
    """

    STATUSES = frozenset({400, 404})

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        request = _RequestBody(receive, scope)
        start: MutableMapping[str, Any] | None = None
        body: list[bytes] = []

        async def answer(message: MutableMapping[str, Any]) -> None:
            nonlocal start
            if message["type"] == "http.response.start" and message["status"] in self.STATUSES:
                start = message  # held until the body says whether it is an id-less JSON-RPC error
                return
            if start is None:
                await send(message)
                return
            body.append(message.get("body", b""))
            if message.get("more_body"):
                return
            payload = await self._with_request_id(start["status"], b"".join(body), request)
            headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
            await send({**start, "headers": [*headers, (b"content-length", str(len(payload)).encode())]})
            await send({"type": "http.response.body", "body": payload})

        await self.app(scope, request.receive, answer)

    @staticmethod
    async def _with_request_id(status: int, payload: bytes, request: _RequestBody) -> bytes:
        try:
            error = json.loads(payload)
        except ValueError:
            return payload
        if not (isinstance(error, dict) and error.get("id", 0) is None and isinstance(error.get("error"), dict)):
            return payload
        request_id = _request_id(await request.read())
        if request_id is None and status != 404:
            return payload
        error["id"] = request_id
        if status == 404 and "session" in str(error["error"].get("message", "")).lower():
            error["error"]["message"] = SESSION_GONE
        return json.dumps(error).encode()


class _RequestBody:
    """An ASGI ``receive`` that keeps what the app read, and can read the rest later (bounded)."""

    def __init__(self, receive: Receive, scope: Scope) -> None:
        self._receive = receive
        self._chunks: list[bytes] = []
        self._size = 0
        self._complete = False
        length = dict(scope.get("headers", [])).get(b"content-length", b"")
        self._too_large = length.isdigit() and int(length) > ID_LOOKUP_MAX_BYTES

    async def receive(self) -> MutableMapping[str, Any]:
        message = await self._receive()
        self._keep(message)
        return message

    def _keep(self, message: MutableMapping[str, Any]) -> None:
        if message["type"] != "http.request":
            self._complete = True  # a disconnect: nothing more will come
            return
        chunk = message.get("body", b"")
        self._size += len(chunk)
        if self._size > ID_LOOKUP_MAX_BYTES:
            self._too_large = True
        elif not self._too_large:
            self._chunks.append(chunk)
        self._complete = not message.get("more_body", False)

    async def read(self) -> bytes | None:
        """The whole body, or None past the size limit."""
        while not self._complete and not self._too_large:
            self._keep(await self._receive())
        return None if self._too_large else b"".join(self._chunks)


def _request_id(body: bytes | None) -> str | int | None:
    """The id of a JSON-RPC request body, when it is one."""
    if not body:
        return None
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
        return None
    request_id = message.get("id")
    return request_id if isinstance(request_id, (str, int)) and not isinstance(request_id, bool) else None


def _accepts_only_json(scope: Scope) -> bool:
    accept = dict(scope["headers"]).get(b"accept", b"").lower()
    return b"application/json" in accept and b"text/event-stream" not in accept


def _response_in_sse(stream: bytes) -> Any:
    """The JSON-RPC response (an object with an id and a result or an error) in an SSE stream."""
    for event in stream.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = b"\n".join(line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:"))
        if not data:
            continue
        try:
            message = json.loads(data)
        except ValueError:
            continue
        if isinstance(message, dict) and "id" in message and ("result" in message or "error" in message):
            return message
    return None


async def _json(send: Send, status: int, body: Any, extra_headers: list[tuple[bytes, bytes]] | None = None) -> None:
    payload = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra_headers or [])})
    await send({"type": "http.response.body", "body": payload})


def build_app(runtime: AcpRuntime, options: HttpOptions) -> ASGIApp:
    """The ASGI application: MCP on both paths, health, table downloads, and the guards."""
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
    from starlette.applications import Starlette
    from starlette.background import BackgroundTask
    from starlette.requests import Request
    from starlette.responses import FileResponse, JSONResponse, Response
    from starlette.routing import Route

    server = runtime.build_server()
    runtime.http_scheme = options.public_scheme
    server.streamable_http_app(
        json_response=False,
        stateless_http=False,
        max_request_body_size=options.max_body_bytes,
        transport_security=_security_settings(options),
        host=options.host,
    )
    mcp_app = StreamableHTTPASGIApp(server.session_manager)
    connector = runtime.connector

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "acp": connector.id, "version": connector.version})

    async def table(request: Request) -> Response:
        path = runtime.table_links.take(request.path_params["token"])
        if path is None:
            return JSONResponse(
                {
                    "error": "not_found",
                    "message": "This table link is unknown, expired or already used. "
                    "Call the tool again for a new one.",
                },
                status_code=404,
            )
        # Single use: the file goes once it is sent (the host keeps its own copy).
        return FileResponse(path, media_type="application/json", background=BackgroundTask(path.unlink, True))

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        with _reload_on_sighup(options.sources):
            async with server.session_manager.run():
                yield

    routes = [Route(path, endpoint=RebindingHints(JsonOnlyClients(RequestIdInErrors(mcp_app)))) for path in MCP_PATHS]
    routes += [Route("/healthz", health, methods=["GET"]), Route("/tables/{token}", table, methods=["GET"])]
    app: ASGIApp = Starlette(routes=routes, lifespan=lifespan)
    if options.token or options.sources is not None:
        app = BearerAuth(app, options.token, options.sources)
    return app


@contextlib.contextmanager
def _reload_on_sighup(sources: TokenSources | None) -> Iterator[None]:
    """SIGHUP re-reads the sources file, on the event loop, between requests (no restart).

    Windows has no SIGHUP: there the sources file is polled for changes instead (``cli``).
    """
    if sources is None or not hasattr(signal, "SIGHUP"):
        yield
        return
    import asyncio

    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGHUP, sources.reload)
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGHUP)


def serve_http(runtime: AcpRuntime, options: HttpOptions) -> None:
    import uvicorn

    check_options(options)
    uvicorn.run(
        build_app(runtime, options),
        host=options.host,
        port=options.port,
        log_level=options.log_level,
        # uvicorn's own loggers then reach the root handler: JSON lines, redacted, like every other log.
        log_config=None,
        access_log=False,
        ssl_certfile=options.tls_cert,
        ssl_keyfile=options.tls_key,
        server_header=False,
    )
