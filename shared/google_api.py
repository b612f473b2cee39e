"""What every Google connector shares: cached clients, endpoint overrides, retry deadlines and
one error policy (BigQuery uses it; GA4 and Search Console are written against it).

Nothing here imports a Google library at module level: ``import connectors.<id>`` stays free
of vendor code, and a server without the connector's extra still starts (the core answers
the first call with the ``pip install`` to run, see :func:`shared.errors.missing_extra`).
A connector's ``api.py`` remains the only module that imports its client library.

**Clients.** Building a client costs tens of milliseconds and every client keeps its own
access token, so a connector keeps one :class:`ClientCache` and asks it for a client per
call; the cache holds clients per credentials (hashed, never stored as text), extra key parts
(a project, an API name) and endpoint, and closes the ones it evicts::

    _clients: ClientCache[Any] = ClientCache()

    def data_client(settings):
        api = endpoint_override(settings.environ, "ACP_GA4_ENDPOINT")

        def build():
            from google.analytics.data_v1beta import BetaAnalyticsDataClient

            return BetaAnalyticsDataClient(
                credentials=google_auth.build(settings.credentials, SCOPES, settings.environ),
                transport="rest",
                client_options={"api_endpoint": api} if api else None,
            )

        return _clients.get(settings.credentials, "data", endpoint=api, build=build)

A ``googleapiclient`` connector passes ``build=lambda: discovery.build("searchconsole", "v1",
credentials=…, static_discovery=True, client_options=…)`` the same way.

**Endpoint overrides** (:func:`endpoint_override`) let tests and emulators point the real
client at a local fake: any ``https://`` URL, or ``http://`` on loopback only, so a
misconfigured server never sends credentials in clear text across a network. Each connector
names its own variable (``ACP_BIGQUERY_ENDPOINT``) and documents it in its README; token
refreshes follow ``ACP_GOOGLE_TOKEN_URI`` (:mod:`shared.google_auth`, documented in the main
README).

**Retries.** :func:`retry_deadline_s` reads how long a connector lets the client retry
(``ACP_BIGQUERY_RETRY_S``); :func:`bounded_retry` applies it to a ``google.api_core``
``Retry``. ``googleapiclient`` does not retry unless asked (``execute(num_retries=N)``, whose
sleeps double without bound): its connectors wrap calls in ``bounded_retry(Retry(predicate=
is_transient), …)`` instead, :func:`is_transient` saying which failures are worth another try.

**Errors.** Google's libraries raise two shapes: ``google.api_core`` exceptions (BigQuery,
GA4: ``.code``, ``.errors``, ``.reason``) and ``googleapiclient.errors.HttpError`` (Search
Console: ``.resp.status`` and a JSON body). :func:`api_error` reads both into one
:class:`GoogleApiError` (HTTP status, reasons, the API's own message without the request
URL, redacted and bounded), so the policy keys on status and reason, never on exception
classes. A connector declares one :class:`GoogleErrorPolicy` and passes its ``translate``
as ``Connector.translate_error``::

    POLICY = GoogleErrorPolicy(
        "Google Analytics",
        rules=(  # the connector's own rows, tried first (shared.error_policy explains rows)
            Rule(InvalidArguments, "GA4 refused the report: {message}. Check the metric names with "
                 "autocontext.", reasons=("INVALID_ARGUMENT",)),
        ),
        messages={"not_found": "GA4 could not find it: {message}. Call autocontext to list the properties."},
    )

The table then reads: the connector's rows; ``google-auth`` failures
(:func:`shared.google_auth.translate`); then :data:`GENERIC_RULES`, in this order:

1. ``retries_exhausted``: ``google.api_core`` gave up retrying (``RetryError``) → UpstreamError;
2. ``unreachable``: no HTTP answer (requests, urllib3, httplib2, connection, DNS, TLS, timeout)
   → UpstreamError;
3. ``rate_limited``: HTTP 429, or a rate or quota reason (even on a 403) → UpstreamError;
4. ``internal_error``: ``backendError``, ``internalError``, ``badGateway`` → UpstreamError;
5. ``unauthenticated``: HTTP 401, ``authError``, ``invalidCredentials``, ``UNAUTHENTICATED``
   → CredentialsInvalid;
6. ``permission_denied``: HTTP 403, ``accessDenied``, ``PERMISSION_DENIED``, …
   → CredentialsInvalid;
7. ``not_found``: HTTP 404, ``notFound``, ``NOT_FOUND`` → ResourceNotFound;
8. ``invalid_request``: HTTP 400, ``invalid``, ``INVALID_ARGUMENT``
   → InvalidArguments;
9. ``failed``: any other API error, 5xx included → UpstreamError.

``messages`` replaces a generic row's message by name (its condition stays where it is, so a
403 that says ``rateLimitExceeded`` is still a rate limit). Templates may use ``{message}``
(the API's text), ``{service}``, ``{type}`` (the exception's class) and ``{reason}``. An
exception no row knows gives None, and the core's own answer applies.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
import threading
import time
import urllib.parse
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from . import google_auth
from ._http import is_loopback
from ._redaction import redact
from .error_policy import Failure, Rule, first_match, is_instance
from .errors import AcpError, CredentialsInvalid, InvalidArguments, ResourceNotFound, UpstreamError

ClientT = TypeVar("ClientT")
T = TypeVar("T")

MESSAGE_MAX_CHARS = 400
_HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
_API_CORE_ERROR = "google.api_core.exceptions.GoogleAPICallError"
_RETRY_ERROR = "google.api_core.exceptions.RetryError"
_HTTP_ERROR = "googleapiclient.errors.HttpError"
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


# -- clients -----------------------------------------------------------------------------------
def close_client(client: Any) -> None:
    """Close a Google client of any library: ``close()`` (BigQuery, discovery), else its transport (GAPIC)."""
    close = getattr(client, "close", None)
    if not callable(close):
        close = getattr(getattr(client, "transport", None), "close", None)
    if callable(close):
        close()


class ClientCache(Generic[ClientT]):
    """The most recently used clients, per credentials, extra key parts and endpoint (thread-safe).

    Credentials are keyed by a SHA-256 of their canonical JSON: the cache never holds them as
    text (the clients do, in memory, as every client must). An evicted client is closed.
    """

    def __init__(self, size: int = 16, close: Callable[[ClientT], None] = close_client) -> None:
        self.size = size
        self._close = close
        self._clients: OrderedDict[tuple[str, ...], ClientT] = OrderedDict()
        self._lock = threading.Lock()

    def get(
        self, credentials: Mapping[str, Any], *parts: str, endpoint: str | None, build: Callable[[], ClientT]
    ) -> ClientT:
        """The cached client for this key, or ``build()``'s, kept for the next call."""
        canonical = json.dumps(dict(credentials), sort_keys=True, default=str)
        key = (hashlib.sha256(canonical.encode()).hexdigest(), *parts, endpoint or "")
        with self._lock:
            found = self._clients.get(key)
            if found is not None:
                self._clients.move_to_end(key)
                return found
        built = build()  # outside the lock: building may take a while, and other keys need not wait
        evicted: list[ClientT] = []
        with self._lock:
            found = self._clients.get(key)
            if found is None:
                self._clients[key] = built
                while len(self._clients) > self.size:
                    evicted.append(self._clients.popitem(last=False)[1])
            else:  # another thread built the same client meanwhile: keep one
                self._clients.move_to_end(key)
                evicted.append(built)
        for client in evicted:
            self._close(client)
        return built if found is None else found

    def __len__(self) -> int:
        with self._lock:
            return len(self._clients)

    def clear(self) -> None:
        """Close and forget every client."""
        with self._lock:
            clients = list(self._clients.values())
            self._clients.clear()
        for client in clients:
            self._close(client)


class TimedCache(Generic[T]):
    """Answers kept for ``ttl_s`` per key, each computed by one thread at a time (thread-safe)."""

    def __init__(self, ttl_s: float, size: int = 256) -> None:
        self.ttl_s = ttl_s
        self.size = size
        self._values: dict[Hashable, tuple[float, T]] = {}
        self._locks: dict[Hashable, threading.Lock] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:  # concurrent askers of one key (blocks of one autocontext) wait for one answer
            found = self._values.get(key)
            if found is not None and found[0] > time.monotonic():
                return found[1]
            value = compute()
            with self._lock:
                if len(self._values) >= self.size:
                    now = time.monotonic()
                    self._values = {k: v for k, v in self._values.items() if v[0] > now}
                self._values[key] = (time.monotonic() + self.ttl_s, value)
            return value

    def clear(self) -> None:
        with self._lock:
            self._values.clear()


# -- endpoint and retries ----------------------------------------------------------------------
def endpoint_override(environ: Mapping[str, str], variable: str) -> str | None:
    """The API base URL in ``environ[variable]``: any ``https://`` URL, or ``http://`` on loopback only.

    None when the variable is unset or empty (the library's own endpoint); an UpstreamError
    that tells the operator what to fix when it names anything else.
    """
    value = environ.get(variable, "").strip().rstrip("/")
    if not value:
        return None
    parts = urllib.parse.urlsplit(value)
    if parts.scheme == "https" and parts.hostname:
        return value
    if parts.scheme == "http" and parts.hostname and is_loopback(parts.hostname):
        return value
    raise UpstreamError(
        f"{variable} must be an https:// URL, or an http:// URL on 127.0.0.1 (tests and emulators). "
        "Ask the operator to fix or unset it."
    )


def retry_deadline_s(environ: Mapping[str, str], variable: str, default_s: float) -> float:
    """Seconds a client may keep retrying, from ``environ[variable]`` (``default_s`` if unset or not a number).

    At least 0.1 s: the library treats a deadline of 0 as "no retry budget at all".
    """
    try:
        seconds = float(environ.get(variable, default_s))
    except ValueError:
        seconds = default_s
    if not math.isfinite(seconds):
        seconds = default_s
    return max(seconds, 0.1)


def bounded_retry(base: Any, deadline_s: float) -> Any:
    """A ``google.api_core.retry.Retry`` (``base``) that gives up after ``deadline_s``.

    It backs off from 0.25 s to 4 s at most (less for short deadlines, so a test's fake that
    keeps failing gives up quickly).
    """
    return base.with_deadline(deadline_s).with_delay(
        initial=min(0.25, deadline_s / 8), maximum=min(4.0, deadline_s / 2)
    )


# -- errors ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GoogleApiError:
    """What a Google API answered, whichever library raised it."""

    status: int | None  # the HTTP status (None: the error carried none)
    reason: str | None  # errors[0].reason (JSON APIs: BigQuery, Search Console)
    info_reason: str | None  # the google.rpc.ErrorInfo reason (GAPIC APIs: GA4)
    status_name: str | None  # the error's `status`, such as PERMISSION_DENIED
    message: str  # the API's own text, without the request URL, redacted and bounded

    @property
    def reasons(self) -> frozenset[str]:
        """Every machine-readable reason the answer gave (what ``Rule.reasons`` matches)."""
        return frozenset(r for r in (self.reason, self.info_reason, self.status_name) if r)


def api_error(exc: BaseException | None) -> GoogleApiError | None:
    """``exc`` read as a Google API error (``google.api_core`` or ``googleapiclient``); None otherwise."""
    if exc is None:
        return None
    if is_instance(exc, _API_CORE_ERROR):
        first = next(iter(getattr(exc, "errors", None) or ()), None)
        body = _error_body(_response_json(getattr(exc, "response", None)))
        info_reason = getattr(exc, "reason", None)
        code = getattr(exc, "code", None)
        return GoogleApiError(
            status=code if isinstance(code, int) else None,
            reason=_text_or_none(first.get("reason")) if isinstance(first, dict) else None,
            info_reason=info_reason if isinstance(info_reason, str) and info_reason else None,
            status_name=_text_or_none(body.get("status")),
            message=error_text(exc),
        )
    if is_instance(exc, _HTTP_ERROR):
        # HttpError keeps the raw body; its own .error_details holds only one of errors[] or details[].
        status = getattr(getattr(exc, "resp", None), "status", None)
        body = _error_body(_json_or_none(getattr(exc, "content", b"")))
        errors = body.get("errors")
        first = errors[0] if isinstance(errors, list) and errors else None
        details = body.get("details")
        infos = (
            [d for d in details if isinstance(d, dict) and d.get("@type") == _ERROR_INFO]
            if isinstance(details, list)
            else []
        )
        message = _text_or_none(body.get("message")) or str(getattr(exc, "reason", "") or "")
        return GoogleApiError(
            status=status if isinstance(status, int) else None,
            reason=_text_or_none(first.get("reason")) if isinstance(first, dict) else None,
            info_reason=_text_or_none(infos[0].get("reason")) if infos else None,
            status_name=_text_or_none(body.get("status")),
            message=_bounded(message),
        )
    return None


def error_text(exc: BaseException) -> str:
    """An exception's text without the ``"POST https://…: "`` prefix the client adds, redacted and bounded."""
    if is_instance(exc, _HTTP_ERROR):
        found = api_error(exc)
        return found.message if found else ""
    text = str(getattr(exc, "message", None) or exc)
    if ": " in text and text.split(" ", 1)[0] in _HTTP_METHODS:
        text = text.split(": ", 1)[1]
    return _bounded(text)


def describe(exc: BaseException, service: str) -> Failure:
    """``exc`` as a :class:`~shared.error_policy.Failure` for the Google rows.

    ``code`` is the HTTP status and ``reasons`` Google's reasons for an API error; both are
    empty otherwise. For a ``RetryError`` the message is its last cause's.
    """
    found = api_error(exc)
    if found is not None:
        message, code, reasons = found.message, found.status, found.reasons
    elif is_instance(exc, _RETRY_ERROR):
        cause = getattr(exc, "cause", None)
        message, code, reasons = (error_text(cause) if cause is not None else "no answer"), None, frozenset()
    else:
        message, code, reasons = error_text(exc), None, frozenset()
    fields = {"service": service, "type": type(exc).__name__, "reason": found.reason if found else None}
    return Failure(exc, message, code=code, reasons=reasons, fields=fields)


def _unreachable(failure: Failure) -> bool:
    """The request never got an HTTP answer: the network, DNS, TLS or a timeout."""
    exc = failure.exc
    if type(exc).__module__.split(".")[0] in ("requests", "urllib3", "httplib2"):
        return True
    return isinstance(exc, ConnectionError | TimeoutError) or any(
        is_instance(exc, name) for name in ("socket.gaierror", "ssl.SSLError")
    )


RATE_LIMITED = "{service} is rate-limiting these requests ({message}). Wait a minute and try again."
INTERNAL_ERROR = "{service} had an internal error ({message}). Try again in a moment."
# Google's reasons for a rate or quota refusal, whatever the HTTP status (a 403 may carry one): a
# connector row that keys on a status uses them to leave rate limits to the generic row.
RATE_REASONS = (
    "rateLimitExceeded",
    "userRateLimitExceeded",
    "quotaExceeded",
    "dailyLimitExceeded",
    "RESOURCE_EXHAUSTED",
    "RATE_LIMIT_EXCEEDED",
    "RESOURCE_QUOTA_EXCEEDED",
)
_UNAUTHENTICATED = (
    "{service} rejected the credentials. Ask the user to reconnect the source (a new key or a new sign-in)."
)
_PERMISSION_DENIED = (
    "{service} denied access ({message}). The account lacks a permission on this resource: ask the user to "
    "grant it or to use other credentials."
)
_NOT_FOUND = (
    "{service} could not find it: {message}. Check the names, or call autocontext to list what these credentials "
    "can see."
)
_INVALID_REQUEST = "{service} refused the request: {message}. Fix the arguments and try again."
_FAILED = "{service} failed ({type}: {message}). Try again; if it keeps failing, simplify the request."

# Each row that keys on an HTTP status sits beside the one that keys on the matching reasons,
# so a failure's status and its reasons are weighed in one order: a reason that says rate or
# quota wins over the 403 it comes with.
GENERIC_RULES: tuple[Rule, ...] = (
    Rule(
        UpstreamError,
        "{service} kept failing after retries ({message}). Try again in a minute; if it persists, simplify the "
        "request or check the {service} status page.",
        classes=(_RETRY_ERROR,),
        name="retries_exhausted",
    ),
    Rule(
        UpstreamError,
        "{service} could not be reached. Try again in a moment; if it keeps failing, check the network.",
        when=_unreachable,
        name="unreachable",
    ),
    Rule(UpstreamError, RATE_LIMITED, codes=(429,), name="rate_limited"),
    Rule(UpstreamError, RATE_LIMITED, reasons=RATE_REASONS, name="rate_limited"),
    Rule(UpstreamError, INTERNAL_ERROR, reasons=("backendError", "internalError", "badGateway"), name="internal_error"),
    Rule(CredentialsInvalid, _UNAUTHENTICATED, codes=(401,), name="unauthenticated"),
    Rule(
        CredentialsInvalid,
        _UNAUTHENTICATED,
        reasons=("authError", "invalidCredentials", "UNAUTHENTICATED", "ACCESS_TOKEN_EXPIRED"),
        name="unauthenticated",
    ),
    Rule(CredentialsInvalid, _PERMISSION_DENIED, codes=(403,), name="permission_denied"),
    Rule(
        CredentialsInvalid,
        _PERMISSION_DENIED,
        reasons=("accessDenied", "forbidden", "insufficientPermissions", "PERMISSION_DENIED"),
        name="permission_denied",
    ),
    Rule(ResourceNotFound, _NOT_FOUND, codes=(404,), name="not_found"),
    Rule(ResourceNotFound, _NOT_FOUND, reasons=("notFound", "NOT_FOUND"), name="not_found"),
    Rule(InvalidArguments, _INVALID_REQUEST, codes=(400,), name="invalid_request"),
    Rule(
        InvalidArguments,
        _INVALID_REQUEST,
        reasons=("invalid", "INVALID_ARGUMENT"),
        name="invalid_request",
    ),
    Rule(UpstreamError, _FAILED, classes=(_API_CORE_ERROR, _HTTP_ERROR), name="failed"),
)


def is_transient(exc: BaseException) -> bool:
    """Whether a Google call that raised ``exc`` is worth retrying: HTTP 429 or 5xx, a rate or quota
    reason (even on a 403), or no HTTP answer at all (the network, a timeout).

    The predicate of a ``google.api_core.retry.Retry`` for clients that do not retry by themselves
    (``googleapiclient``): ``bounded_retry(Retry(predicate=is_transient), deadline_s)``.
    """
    found = api_error(exc)
    if found is None:
        return _unreachable(Failure(exc, ""))
    status = found.status or 0
    return status == 429 or status >= 500 or not found.reasons.isdisjoint(RATE_REASONS)


class GoogleErrorPolicy:
    """One Google connector's error table: its own rows, google-auth's answers, then :data:`GENERIC_RULES`."""

    def __init__(self, service: str, rules: Sequence[Rule] = (), messages: Mapping[str, str] | None = None) -> None:
        messages = dict(messages or {})
        unknown = set(messages) - {rule.name for rule in GENERIC_RULES}
        if unknown:
            raise ValueError(f"no generic Google row is named {', '.join(sorted(unknown))}")
        self.service = service
        self.rules = tuple(rules)
        self.generic = tuple(replace(r, message=messages.get(r.name, r.message)) for r in GENERIC_RULES)

    def translate(self, exc: BaseException) -> AcpError | None:
        """``exc`` as an ACP error with a next step; None when no row knows it."""
        failure = describe(exc, self.service)
        found = first_match(self.rules, failure)
        # google-auth's exceptions can only exist once google.auth is loaded; a server without
        # the extra must not import it here (ImportError is the core's to answer).
        if found is None and "google.auth.exceptions" in sys.modules:
            found = google_auth.translate(exc)
        return found if found is not None else first_match(self.generic, failure)


def _bounded(text: str) -> str:
    return redact(text)[:MESSAGE_MAX_CHARS]


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _json_or_none(content: Any) -> Any:
    try:
        return json.loads(content)
    except (TypeError, ValueError):  # not JSON (an HTML error page, an empty body)
        return None


def _response_json(response: Any) -> Any:
    reader = getattr(response, "json", None)
    if not callable(reader):
        return None
    try:
        return reader()
    except ValueError:
        return None


def _error_body(payload: Any) -> dict[str, Any]:
    """The ``error`` object of a Google error body (``{"error": {…}}``, or a list of those)."""
    if isinstance(payload, list):
        payload = next((item for item in payload if isinstance(item, dict)), None)
    error = payload.get("error") if isinstance(payload, dict) else None
    return error if isinstance(error, dict) else {}
