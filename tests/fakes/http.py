"""A loopback HTTP server harness for fakes of Google APIs.

One ``FakeHttpServer`` binds ``127.0.0.1`` on an ephemeral port and serves HTTP/1.1 from a thread per
connection. A fake registers routes on it::

    server = FakeHttpServer()
    server.add_route("GET", r"/v1/things/([^/]+)", handler, "things.get")
    with server:                      # start() … stop()
        client = make_client(endpoint=server.url)

A handler receives the ``RecordedRequest`` and the regex match and returns a ``Reply`` (or a tuple
``(status, body[, headers])``). Bodies that are dicts or lists are sent as JSON.

Why the details matter (see /work/shared/notes/google-fakes.md):

- Paths are matched **un-decoded**: Search Console sends ``sites/https%3A%2F%2Fexample.com%2F/...``,
  and decoding ``%2F`` before routing would mis-route it. Handlers unquote the groups they use.
- A handler that raises becomes a visible 500 with the traceback's last line, never a dropped socket:
  google-cloud-bigquery retries dropped connections for up to 10 minutes. The 500 carries the reason
  ``fakeHandlerCrashed``, which no Google client retries, so a bug in a fake fails its test at once.
- Faults are keyed by route name, so a test says what it means: ``server.fail("jobs.get", 503)``.

A fake of one API served by one such server subclasses ``ServedFake``, which gives it the lifecycle
(``start``/``stop``, ``with fake:``) and ``url``.
"""

from __future__ import annotations

import base64
import contextlib
import re
import socket
import threading
import time
import traceback
import urllib.parse
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import orjson

LOOPBACK_HOST = "127.0.0.1"

# HTTP status → the canonical ``error.status`` string that Google APIs put in their envelope.
GOOGLE_STATUS_BY_HTTP_CODE: Mapping[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ALREADY_EXISTS",
    412: "FAILED_PRECONDITION",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}

# The ``errors[0].reason`` an injected fault carries when the test names none. These are the reasons
# Google's JSON APIs really send; BigQuery's retry predicate keys on them (rateLimitExceeded and
# backendError are retried, accessDenied and notFound are not).
DEFAULT_REASON_BY_HTTP_CODE: Mapping[int, str] = {
    400: "invalid",
    401: "authError",
    403: "accessDenied",
    404: "notFound",
    409: "duplicate",
    429: "rateLimitExceeded",
    500: "backendError",
    502: "badGateway",
    503: "backendError",
    504: "timeout",
}

HANDLER_CRASH_REASON = "fakeHandlerCrashed"


def google_error(code: int, status: str | None, message: str, reason: str | None = None) -> dict[str, Any]:
    """The JSON error envelope of Google's APIs.

    ``{"error": {"code", "message", "status", "errors": [{"reason", "message", "domain": "global"}]}}``.
    google-api-core reads ``errors`` into ``exc.errors``, and BigQuery's retry predicate reads
    ``errors[0]["reason"]``, so the list is always present.
    """
    status = status or GOOGLE_STATUS_BY_HTTP_CODE.get(code, "UNKNOWN")
    reason = reason or DEFAULT_REASON_BY_HTTP_CODE.get(code, "unknown")
    return {
        "error": {
            "code": code,
            "message": message,
            "status": status,
            "errors": [{"reason": reason, "message": message, "domain": "global"}],
        }
    }


@dataclass
class RecordedRequest:
    """One request as the fake received it. ``path`` is not percent-decoded (see the module doc)."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # names lowercased
    body: bytes
    json: Any  # the parsed body when it is JSON, else None
    route: str | None  # the route name that matched, None when no route did
    received_at: float  # time.monotonic()
    status: int | None = None  # the HTTP status answered; None while the request is being handled
    delayed_s: float = 0.0  # the delay injected with ``slow`` before answering

    def param(self, name: str, default: str | None = None) -> str | None:
        """The first value of a query-string parameter."""
        values = self.query.get(name)
        return values[0] if values else default

    def form(self) -> dict[str, str]:
        """The body parsed as ``application/x-www-form-urlencoded`` (first value of each key)."""
        parsed = urllib.parse.parse_qs(self.body.decode("utf-8", "replace"), keep_blank_values=True)
        return {key: values[0] for key, values in parsed.items()}


@dataclass
class Reply:
    """What a handler answers. ``body``: dict/list (sent as JSON), bytes, str, or None."""

    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[RecordedRequest, "re.Match[str]"], "Reply | tuple[Any, ...]"]
# Formats an injected fault for a route whose errors are not Google envelopes (an OAuth endpoint).
ErrorFormatter = Callable[[int, str | None, str], Any]


@dataclass(frozen=True)
class _Route:
    method: str
    pattern: re.Pattern[str]
    handler: Handler
    name: str
    error_formatter: ErrorFormatter | None


@dataclass
class _Fault:
    status: int | None  # None: only a delay
    delay_s: float = 0.0
    reason: str | None = None
    message: str | None = None


class FakeHttpServer:
    """A threaded HTTP/1.1 server on ``127.0.0.1:0`` with a route table, a log and fault injection."""

    def __init__(self) -> None:
        self._routes: list[_Route] = []
        self._log: list[RecordedRequest] = []
        self._errors: list[str] = []
        self._failures: dict[str, deque[_Fault]] = {}
        self._delays: dict[str, deque[_Fault]] = {}
        self._lock = threading.Lock()
        self._open_connections: set[socket.socket] = set()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ----------------------------------------------------------------- routes

    def add_route(
        self,
        method: str,
        path_regex: str,
        handler: Handler,
        name: str,
        *,
        error_formatter: ErrorFormatter | None = None,
    ) -> None:
        """Route ``method`` + a regex that must match the whole un-decoded path to ``handler``.

        Routes are tried in the order they were added. ``name`` is what ``fail``/``slow`` and the
        request log refer to; several routes may share one name (a POST and a PUT of one upload).
        """
        route = _Route(method.upper(), re.compile(path_regex), handler, name, error_formatter)
        with self._lock:
            self._routes.append(route)

    @property
    def route_names(self) -> set[str]:
        with self._lock:
            return {route.name for route in self._routes}

    # ----------------------------------------------------------------- faults

    def fail(
        self,
        route_name: str,
        status: int,
        *,
        times: int = 1,
        reason: str | None = None,
        message: str | None = None,
    ) -> None:
        """Answer the next ``times`` requests of ``route_name`` with an error of HTTP ``status``."""
        self._check_route_name(route_name)
        if not 400 <= status <= 599:
            raise ValueError(f"an injected failure needs an error status, not {status}")
        with self._lock:
            queue = self._failures.setdefault(route_name, deque())
            queue.extend(_Fault(status, reason=reason, message=message) for _ in range(times))

    def slow(self, route_name: str, seconds: float, *, times: int = 1) -> None:
        """Delay the next ``times`` requests of ``route_name`` by ``seconds`` before answering them."""
        self._check_route_name(route_name)
        with self._lock:
            queue = self._delays.setdefault(route_name, deque())
            queue.extend(_Fault(None, delay_s=seconds) for _ in range(times))

    def clear_faults(self) -> None:
        with self._lock:
            self._failures.clear()
            self._delays.clear()

    def pending_faults(self, route_name: str) -> int:
        """How many injected failures and delays of ``route_name`` have not fired yet."""
        with self._lock:
            return len(self._failures.get(route_name, ())) + len(self._delays.get(route_name, ()))

    def _check_route_name(self, route_name: str) -> None:
        names = self.route_names
        if route_name not in names:
            # A typo would otherwise inject nothing, and the test would pass for the wrong reason.
            raise ValueError(f"no route named {route_name!r}; known routes: {sorted(names)}")

    def _take_faults(self, route_name: str) -> tuple[float, _Fault | None]:
        with self._lock:
            delays = self._delays.get(route_name)
            delay = delays.popleft().delay_s if delays else 0.0
            failures = self._failures.get(route_name)
            failure = failures.popleft() if failures else None
        return delay, failure

    # ----------------------------------------------------------------- log

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first (a copy)."""
        with self._lock:
            return list(self._log)

    def requests_for(self, route_name: str) -> list[RecordedRequest]:
        with self._lock:
            return [request for request in self._log if request.route == route_name]

    def clear_log(self) -> None:
        with self._lock:
            self._log.clear()

    @property
    def handler_errors(self) -> list[str]:
        """Tracebacks of handlers that raised (each was answered with a 500)."""
        with self._lock:
            return list(self._errors)

    # ----------------------------------------------------------------- lifecycle

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the fake server is not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``, the scheme included: Google clients need it to speak plain HTTP."""
        return f"http://{LOOPBACK_HOST}:{self.port}"

    def start(self) -> FakeHttpServer:
        if self._httpd is not None:
            raise RuntimeError("the fake server is already started")
        httpd = _LoopbackHTTPServer((LOOPBACK_HOST, 0), self._make_handler_class())
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name=f"fake-http-{self.port}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        # Keep-alive connections would otherwise park their threads until the client goes away.
        with self._lock:
            connections = list(self._open_connections)
        for connection in connections:
            with contextlib.suppress(OSError):  # already closed by the client
                connection.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeHttpServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ----------------------------------------------------------------- dispatch

    def _dispatch(self, method: str, raw_path: str, headers: dict[str, str], body: bytes) -> Reply:
        request, reply = self._answer(method, raw_path, headers, body)
        request.status = reply.status
        return reply

    def _answer(
        self, method: str, raw_path: str, headers: dict[str, str], body: bytes
    ) -> tuple[RecordedRequest, Reply]:
        split = urllib.parse.urlsplit(raw_path)
        query = urllib.parse.parse_qs(split.query, keep_blank_values=True)
        with self._lock:
            routes = list(self._routes)
        matched: tuple[_Route, re.Match[str]] | None = None
        for route in routes:
            if route.method != method:
                continue
            match = route.pattern.fullmatch(split.path)
            if match:
                matched = (route, match)
                break
        parsed_json = None
        if body and ("json" in headers.get("content-type", "") or body[:1] in (b"{", b"[")):
            try:
                parsed_json = orjson.loads(body)
            except orjson.JSONDecodeError:
                parsed_json = None
        request = RecordedRequest(
            method=method,
            path=split.path,
            query=query,
            headers=headers,
            body=body,
            json=parsed_json,
            route=matched[0].name if matched else None,
            received_at=time.monotonic(),
        )
        with self._lock:
            self._log.append(request)
        if matched is None:
            message = f"The fake has no route for {method} {split.path}"
            return request, Reply(404, google_error(404, "NOT_FOUND", message, "notFound"))
        route, match = matched
        delay, failure = self._take_faults(route.name)
        if delay:
            request.delayed_s = delay
            time.sleep(delay)
        if failure is not None and failure.status is not None:
            message = failure.message or f"Injected fault: HTTP {failure.status} on {route.name}"
            if route.error_formatter is not None:
                return request, _coerce_reply(route.error_formatter(failure.status, failure.reason, message))
            return request, Reply(failure.status, google_error(failure.status, None, message, failure.reason))
        try:
            return request, _coerce_reply(route.handler(request, match))
        except Exception as exc:
            trace = traceback.format_exc()
            with self._lock:
                self._errors.append(trace)
            message = f"The fake's handler for {route.name} crashed: {exc!r}"
            return request, Reply(500, google_error(500, "INTERNAL", message, HANDLER_CRASH_REASON))

    def _make_handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class _RequestHandler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as Google's servers do
            # Headers and body go out in two writes: with Nagle's algorithm on, each answer waited ~40 ms
            # for the client's delayed ACK, which made every fake request cost that much.
            disable_nagle_algorithm = True

            def setup(self) -> None:
                super().setup()
                with server._lock:
                    server._open_connections.add(self.connection)

            def finish(self) -> None:
                with server._lock:
                    server._open_connections.discard(self.connection)
                with contextlib.suppress(OSError):  # the client hung up first
                    super().finish()

            def log_message(self, format: str, *args: Any) -> None:  # the request log replaces stderr
                pass

            def _read_body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            self.rfile.readline()
                            break
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                    return b"".join(chunks)
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else b""

            def _handle(self) -> None:
                body = self._read_body()
                headers = {name.lower(): value for name, value in self.headers.items()}
                reply = server._dispatch(self.command, self.path, headers, body)
                payload, content_type = _encode_body(reply.body)
                try:
                    self.send_response(reply.status)
                    extra = dict(reply.headers)
                    self.send_header("Content-Type", extra.pop("Content-Type", content_type))
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in extra.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    # The client gave up (a timeout during an injected delay); nothing left to answer.
                    self.close_connection = True

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        return _RequestHandler


class ServedFake:
    """The lifecycle of a fake served by one ``FakeHttpServer`` (``server``, which the subclass creates):
    ``start()`` returning the fake, ``stop()``, ``with fake:``, and ``url``. A fake with more to release
    overrides ``stop`` and calls ``super().stop()``."""

    server: FakeHttpServer

    def start(self) -> Self:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The ``api_endpoint`` (or transport ``host``) to give the client: ``http://127.0.0.1:PORT``."""
        return self.server.url

    def fail(
        self, route_name: str, status: int, *, times: int = 1, reason: str | None = None, message: str | None = None
    ) -> None:
        """Answer the next ``times`` requests of a route (the fake's route names) with an error in Google's envelope."""
        self.server.fail(route_name, status, times=times, reason=reason, message=message)

    def slow(self, route_name: str, seconds: float, *, times: int = 1) -> None:
        """Delay the next ``times`` requests of a route by ``seconds``."""
        self.server.slow(route_name, seconds, times=times)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far (token requests included), oldest first."""
        return self.server.requests


class _LoopbackHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # The default backlog of 5 makes bursts of parallel connections wait for SYN retransmits (1 s).
    request_queue_size = 128


def _coerce_reply(result: Reply | tuple[Any, ...]) -> Reply:
    if isinstance(result, Reply):
        return result
    status, body, *rest = result
    return Reply(int(status), body, dict(rest[0]) if rest else {})


def _encode_body(body: Any) -> tuple[bytes, str]:
    if body is None:
        return b"", "application/json; charset=UTF-8"
    if isinstance(body, bytes):
        return body, "application/octet-stream"
    if isinstance(body, str):
        return body.encode(), "text/plain; charset=UTF-8"
    return orjson.dumps(body), "application/json; charset=UTF-8"


def opaque_page_token(offset: int) -> str:
    """A page token that does not look like a number, so no caller is tempted to compute one."""
    return base64.urlsafe_b64encode(f"offset:{offset}".encode()).decode().rstrip("=")


def offset_from_page_token(token: str | None) -> int | None:
    """The offset inside a token made by ``opaque_page_token``; None when there is no token.

    Raises ValueError for a token this fake did not make.
    """
    if not token:
        return None
    padded = token + "=" * (-len(token) % 4)
    try:
        text = base64.urlsafe_b64decode(padded.encode()).decode()
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"invalid page token {token!r}") from exc
    prefix, _, number = text.partition(":")
    if prefix != "offset" or not number.isdigit():
        raise ValueError(f"invalid page token {token!r}")
    return int(number)
