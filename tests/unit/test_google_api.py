"""The shared Google plumbing: client cache, endpoint override, retry deadline, and the error policy
read from real ``google.api_core`` and ``googleapiclient`` errors that a loopback server provoked."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httplib2
import pytest
import requests
from fakes.http import FakeHttpServer, RecordedRequest, Reply
from google.api_core import exceptions as core_exceptions
from google.api_core import retry as core_retry
from googleapiclient import discovery
from googleapiclient.errors import HttpError

from shared import (
    CostLimitExceeded,
    CredentialsInvalid,
    InvalidArguments,
    ResourceNotFound,
    UpstreamError,
)
from shared._redaction import register_secrets
from shared.error_policy import Rule
from shared.google_api import (
    GENERIC_RULES,
    MESSAGE_MAX_CHARS,
    ClientCache,
    GoogleErrorPolicy,
    api_error,
    bounded_retry,
    close_client,
    describe,
    endpoint_override,
    is_transient,
    retry_deadline_s,
)

ROOT = Path(__file__).resolve().parents[2]
CANARY = "ya29.canary-token-7f3c91"  # a credential value: it must never reach a message
register_secrets([CANARY])
POLICY = GoogleErrorPolicy("Search Console")


# -- a loopback server that answers what each test asks, so the libraries build their own errors --
class ErrorServer:
    def __init__(self, server: FakeHttpServer) -> None:
        self.server = server
        self.reply: tuple[int, Any] = (200, {})

    def api_core_error(self, status: int, body: Any) -> core_exceptions.GoogleAPICallError:
        """What BigQuery and the GAPIC REST transports raise: ``from_http_response`` over a real response."""
        self.reply = (status, body)
        response = requests.get(f"{self.server.url}/bigquery/v2/projects/p/datasets/ds?key={CANARY}", timeout=5)
        return core_exceptions.from_http_response(response)

    def http_error(self, status: int, body: Any) -> HttpError:
        """What Search Console's discovery client raises, from a real call."""
        self.reply = (status, body)
        service = discovery.build(
            "searchconsole",
            "v1",
            static_discovery=True,
            http=httplib2.Http(),
            client_options={"api_endpoint": self.server.url},
        )
        with pytest.raises(HttpError) as caught:
            service.sites().list().execute()
        service.close()
        return caught.value

    def errors(self, status: int, body: Any) -> list[BaseException]:
        return [self.api_core_error(status, body), self.http_error(status, body)]


@pytest.fixture(scope="module")
def fake() -> Iterator[ErrorServer]:
    server = FakeHttpServer()
    errors = ErrorServer(server)

    def answer(request: RecordedRequest, match: Any) -> Reply:
        status, body = errors.reply
        return Reply(status, body)

    server.add_route("GET", r"/bigquery/v2/projects/p/datasets/ds", answer, "datasets.get")
    server.add_route("GET", r"/webmasters/v3/sites", answer, "sites.list")
    with server:
        yield errors


def google_body(code: int, message: str, *, reason: str | None = None, status: str | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if reason:
        error["errors"] = [{"reason": reason, "message": message, "domain": "global"}]
    if status:
        error["status"] = status
    return {"error": error}


def gapic_body(code: int, message: str, status: str, info_reason: str) -> dict[str, Any]:
    """The GA4 (GAPIC) shape: no errors[], a google.rpc.ErrorInfo in details[]."""
    info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": info_reason, "domain": "googleapis.com"}
    return {"error": {"code": code, "message": message, "status": status, "details": [info]}}


# -- reading an error ---------------------------------------------------------------------------
def test_both_shapes_give_status_reasons_and_the_apis_own_message(fake: ErrorServer) -> None:
    body = google_body(403, "User does not have sufficient permission.", reason="forbidden", status="PERMISSION_DENIED")
    for exc in fake.errors(403, body):
        found = api_error(exc)
        assert found is not None, type(exc)
        assert (found.status, found.reason, found.status_name) == (403, "forbidden", "PERMISSION_DENIED")
        assert found.message == "User does not have sufficient permission."  # no "GET http://…: " prefix
        assert found.reasons == {"forbidden", "PERMISSION_DENIED"}


def test_the_error_info_reason_of_gapic_apis_is_read(fake: ErrorServer) -> None:
    body = gapic_body(429, "Exhausted property tokens.", "RESOURCE_EXHAUSTED", "RATE_LIMIT_EXCEEDED")
    for exc in fake.errors(429, body):
        found = api_error(exc)
        assert found is not None
        assert found.reason is None and found.info_reason == "RATE_LIMIT_EXCEEDED"
        assert found.reasons == {"RATE_LIMIT_EXCEEDED", "RESOURCE_EXHAUSTED"}


def test_a_body_that_is_not_json_still_gives_the_status(fake: ErrorServer) -> None:
    for exc in fake.errors(502, "<html>Bad Gateway</html>"):
        found = api_error(exc)
        assert found is not None and found.status == 502 and found.reasons == frozenset()


def test_other_exceptions_are_not_api_errors() -> None:
    assert api_error(ValueError("x")) is None
    assert api_error(None) is None


# -- the policy ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("status", "reason", "expected", "says"),
    [
        (400, "invalid", InvalidArguments, "Fix the arguments"),
        (400, None, InvalidArguments, "Fix the arguments"),
        (401, "authError", CredentialsInvalid, "reconnect the source"),
        (401, None, CredentialsInvalid, "reconnect the source"),
        (403, "accessDenied", CredentialsInvalid, "lacks a permission"),
        (403, "insufficientPermissions", CredentialsInvalid, "lacks a permission"),
        (403, "rateLimitExceeded", UpstreamError, "Wait a minute"),
        (403, "userRateLimitExceeded", UpstreamError, "Wait a minute"),
        (403, "quotaExceeded", UpstreamError, "Wait a minute"),
        (403, "dailyLimitExceeded", UpstreamError, "Wait a minute"),
        (404, "notFound", ResourceNotFound, "call autocontext"),
        (404, None, ResourceNotFound, "call autocontext"),
        (429, "rateLimitExceeded", UpstreamError, "Wait a minute"),
        (429, None, UpstreamError, "Wait a minute"),
        (500, "backendError", UpstreamError, "internal error"),
        (500, None, UpstreamError, "Try again"),
        (503, None, UpstreamError, "Try again"),
    ],
)
def test_the_generic_rows_key_on_status_and_reason_in_both_shapes(
    fake: ErrorServer, status: int, reason: str | None, expected: type, says: str
) -> None:
    body = google_body(status, f"The API said {status}.", reason=reason)
    for exc in fake.errors(status, body):
        mapped = POLICY.translate(exc)
        assert type(mapped) is expected, (type(exc).__name__, mapped)
        assert says in mapped.message and "Search Console" in mapped.message


def test_status_names_and_error_info_reasons_decide_too(fake: ErrorServer) -> None:
    quota = gapic_body(403, "Quota exhausted.", "PERMISSION_DENIED", "RATE_LIMIT_EXCEEDED")
    for exc in fake.errors(403, quota):
        assert "Wait a minute" in POLICY.translate(exc).message  # a quota reason wins over its 403
    denied = gapic_body(403, "No access to property.", "PERMISSION_DENIED", "ACCESS_DENIED")
    for exc in fake.errors(403, denied):
        assert isinstance(POLICY.translate(exc), CredentialsInvalid)


def test_connector_rows_come_before_the_generic_rows(fake: ErrorServer) -> None:
    policy = GoogleErrorPolicy(
        "BigQuery",
        rules=(
            Rule(
                CostLimitExceeded,
                "{service} stopped at the byte limit ({message}). Narrow the query.",
                reasons=("bytesBilledLimitExceeded",),
                data=("reason",),
            ),
        ),
    )
    body = google_body(400, "Query exceeded limit for bytes billed.", reason="bytesBilledLimitExceeded")
    for exc in fake.errors(400, body):
        mapped = policy.translate(exc)
        assert isinstance(mapped, CostLimitExceeded), type(exc)
        assert (
            mapped.message
            == "BigQuery stopped at the byte limit (Query exceeded limit for bytes billed.). Narrow the query."
        )
        assert mapped.data == {"reason": "bytesBilledLimitExceeded"}
        assert isinstance(POLICY.translate(exc), InvalidArguments)  # without the row: the generic 400


def test_a_connector_replaces_a_generic_message_by_name_and_keeps_its_place(fake: ErrorServer) -> None:
    policy = GoogleErrorPolicy(
        "Search Console",
        messages={"permission_denied": "{service} denied access ({message}). Call autocontext to list the sites."},
    )
    for exc in fake.errors(403, google_body(403, "User lacks access.", reason="forbidden")):
        assert (
            policy.translate(exc).message
            == "Search Console denied access (User lacks access.). Call autocontext to list the sites."
        )
    for exc in fake.errors(403, google_body(403, "Slow down.", reason="rateLimitExceeded")):
        assert "Wait a minute" in policy.translate(exc).message
    with pytest.raises(ValueError, match="permision_denied"):
        GoogleErrorPolicy("X", messages={"permision_denied": "typo"})


def test_every_generic_row_is_named_and_says_what_to_do_next() -> None:
    names = [rule.name for rule in GENERIC_RULES]
    assert all(names)
    assert names[-1] == "failed"
    for rule in GENERIC_RULES:
        assert any(
            step in rule.message
            for step in ("Try again", "try again", "Ask the user", "ask the user", "call autocontext")
        )


def test_exhausted_retries_name_the_last_answer(fake: ErrorServer) -> None:
    def flaky() -> None:
        raise fake.api_core_error(503, google_body(503, "Backend unavailable.", reason="backendError"))

    policy = core_retry.Retry(predicate=lambda exc: True, initial=0.01, maximum=0.01, timeout=0.05)
    with pytest.raises(core_exceptions.RetryError) as caught:
        policy(flaky)()
    mapped = POLICY.translate(caught.value)
    assert isinstance(mapped, UpstreamError)
    assert "kept failing after retries (Backend unavailable.)" in mapped.message


@pytest.mark.parametrize(
    ("status", "reason", "transient"),
    [
        (429, None, True),
        (500, "backendError", True),
        (503, None, True),
        (403, "userRateLimitExceeded", True),  # a rate reason on a 403 is worth another try
        (403, "forbidden", False),
        (401, "authError", False),
        (404, "notFound", False),
        (400, "invalid", False),
    ],
)
def test_transient_failures_are_429_5xx_and_rate_reasons_in_both_shapes(
    fake: ErrorServer, status: int, reason: str | None, transient: bool
) -> None:
    for exc in fake.errors(status, google_body(status, "The API said no.", reason=reason)):
        assert is_transient(exc) is transient, type(exc).__name__


def test_no_answer_at_all_is_transient_and_a_bug_is_not() -> None:
    with pytest.raises(OSError) as refused:
        httplib2.Http(timeout=5).request(f"http://127.0.0.1:{_closed_port()}/")
    assert is_transient(refused.value)
    assert is_transient(TimeoutError("timed out"))
    assert not is_transient(ValueError("a bug"))


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_network_failures_of_each_library_say_the_service_could_not_be_reached() -> None:
    port = _closed_port()
    failures: list[BaseException] = []
    with pytest.raises(requests.ConnectionError) as by_requests:
        requests.get(f"http://127.0.0.1:{port}/", timeout=5)
    failures.append(by_requests.value)
    with pytest.raises(OSError) as by_httplib2:  # httplib2 lets the socket's ConnectionRefusedError through
        httplib2.Http(timeout=5).request(f"http://127.0.0.1:{port}/")
    failures.append(by_httplib2.value)
    failures.append(socket.gaierror(socket.EAI_NONAME, "Name or service not known"))  # as getaddrinfo raises it
    for exc in failures:
        mapped = POLICY.translate(exc)
        assert isinstance(mapped, UpstreamError), type(exc)
        assert mapped.message.startswith("Search Console could not be reached.")


def test_google_auth_failures_use_the_shared_credential_messages() -> None:
    from google.auth import exceptions as auth_exceptions

    mapped = POLICY.translate(auth_exceptions.RefreshError("invalid_grant: Bad Request", {"error": "invalid_grant"}))
    assert isinstance(mapped, CredentialsInvalid) and "(invalid_grant)" in mapped.message


def test_exceptions_no_row_knows_are_left_to_the_core() -> None:
    assert POLICY.translate(ValueError("a bug")) is None
    assert POLICY.translate(ModuleNotFoundError("No module named 'googleapiclient'", name="googleapiclient")) is None


def test_no_credential_reaches_a_message(fake: ErrorServer) -> None:
    body = google_body(403, f"Token {CANARY} lacks scope. " + "x" * 1000, reason="accessDenied")
    for exc in [*fake.errors(403, body), *fake.errors(500, body)]:
        assert CANARY in str(exc) or CANARY in exc.content.decode()  # the library's own text does carry it
        found = api_error(exc)
        assert found is not None and CANARY not in found.message and len(found.message) <= MESSAGE_MAX_CHARS
        failure = describe(exc, "Search Console")
        mapped = POLICY.translate(exc)
        assert CANARY not in mapped.message and CANARY not in json.dumps(mapped.data)
        assert CANARY not in json.dumps(failure.fields)


# -- clients ------------------------------------------------------------------------------------
class Recorder:
    """A stand-in client: what the cache does with a client (keep it, close it) is all it needs."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.closed = False

    def close(self) -> None:
        self.closed = True


SA = {"type": "service_account", "service_account": f'{{"private_key": "{CANARY}"}}'}
OTHER = {"type": "oauth", "access_token": "ya29.other-token"}


def test_the_cache_reuses_a_client_per_credentials_parts_and_endpoint() -> None:
    cache: ClientCache[Recorder] = ClientCache()
    builds: list[str] = []

    def client(credentials: dict[str, str], *parts: str, endpoint: str | None = None) -> Recorder:
        label = f"{credentials['type']}/{parts}/{endpoint}"
        return cache.get(credentials, *parts, endpoint=endpoint, build=lambda: builds.append(label) or Recorder(label))

    first = client(SA, "proj")
    assert client(dict(reversed(list(SA.items()))), "proj") is first  # the same credentials, in another key order
    assert len(builds) == 1
    separate = [
        client(OTHER, "proj"),
        client(SA, "other-proj"),
        client(SA, "proj", "admin"),
        client(SA, "proj", endpoint="http://127.0.0.1:9"),
    ]
    assert len({id(c) for c in [first, *separate]}) == 5 and len(builds) == 5
    assert CANARY not in repr(cache._clients.keys())  # keyed by a hash, never by the secret


def test_eviction_closes_the_least_recently_used_client() -> None:
    cache: ClientCache[Recorder] = ClientCache(size=2)
    a = cache.get(SA, "a", endpoint=None, build=lambda: Recorder("a"))
    b = cache.get(SA, "b", endpoint=None, build=lambda: Recorder("b"))
    assert cache.get(SA, "a", endpoint=None, build=lambda: Recorder("a2")) is a  # a is now the most recent
    c = cache.get(SA, "c", endpoint=None, build=lambda: Recorder("c"))
    assert b.closed and not a.closed and not c.closed and len(cache) == 2
    cache.clear()
    assert a.closed and c.closed and len(cache) == 0


def test_concurrent_first_calls_share_one_client_and_close_the_extra_ones() -> None:
    cache: ClientCache[Recorder] = ClientCache()
    barrier = threading.Barrier(8)
    built: list[Recorder] = []
    got: list[Recorder] = []

    def build() -> Recorder:
        client = Recorder(f"#{len(built)}")
        built.append(client)
        return client

    def worker() -> None:
        barrier.wait()
        got.append(cache.get(SA, "proj", endpoint=None, build=build))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(c) for c in got}) == 1 and not got[0].closed
    assert sum(c.closed for c in built) == len(built) - 1


def test_real_clients_of_both_libraries_are_closed_on_eviction() -> None:
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import bigquery

    closed: list[Any] = []

    def close(client: Any) -> None:
        close_client(client)
        closed.append(client)

    cache: ClientCache[Any] = ClientCache(size=1, close=close)
    bq = cache.get(
        SA,
        "proj",
        endpoint="http://127.0.0.1:9",
        build=lambda: bigquery.Client(
            project="proj", credentials=AnonymousCredentials(), client_options={"api_endpoint": "http://127.0.0.1:9"}
        ),
    )
    sc = cache.get(
        SA,
        "searchconsole",
        endpoint=None,
        build=lambda: discovery.build("searchconsole", "v1", static_discovery=True, http=httplib2.Http()),
    )
    assert closed == [bq]
    cache.clear()
    assert closed == [bq, sc]


# -- endpoint and retries -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", None),
        ("  ", None),
        ("https://bigquery.example.com/", "https://bigquery.example.com"),
        ("http://127.0.0.1:9050", "http://127.0.0.1:9050"),
        ("http://localhost:9050/", "http://localhost:9050"),
        ("http://[::1]:9050", "http://[::1]:9050"),
    ],
)
def test_endpoint_overrides_allow_https_and_loopback_http(value: str, expected: str | None) -> None:
    assert endpoint_override({"ACP_GSC_ENDPOINT": value}, "ACP_GSC_ENDPOINT") == expected
    assert endpoint_override({}, "ACP_GSC_ENDPOINT") is None


@pytest.mark.parametrize(
    "value", ["http://203.0.113.7:9", "http://bigquery.example.com", "ftp://127.0.0.1", "127.0.0.1:9"]
)
def test_any_other_endpoint_tells_the_operator_what_to_fix(value: str) -> None:
    with pytest.raises(UpstreamError) as refused:
        endpoint_override({"ACP_GSC_ENDPOINT": value}, "ACP_GSC_ENDPOINT")
    assert "ACP_GSC_ENDPOINT must be an https:// URL" in refused.value.message
    assert "127.0.0.1" in refused.value.message and "operator" in refused.value.message


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, 30.0),
        ({"R": "3"}, 3.0),
        ({"R": "0.5"}, 0.5),
        ({"R": "soon"}, 30.0),
        ({"R": "nan"}, 30.0),
        ({"R": "-1"}, 0.1),
    ],
)
def test_the_retry_deadline_comes_from_the_environment(environ: dict[str, str], expected: float) -> None:
    assert retry_deadline_s(environ, "R", 30.0) == expected


def test_a_bounded_retry_keeps_the_librarys_predicate_and_backs_off_within_the_deadline() -> None:
    from google.cloud import bigquery

    short = bounded_retry(bigquery.DEFAULT_RETRY, 3.0)
    assert short.timeout == 3.0 and short._initial == 0.25 and short._maximum == 1.5
    assert short._predicate is bigquery.DEFAULT_RETRY._predicate
    long = bounded_retry(bigquery.DEFAULT_RETRY, 30.0)
    assert long._initial == 0.25 and long._maximum == 4.0


def test_importing_the_plumbing_or_a_google_connector_loads_no_google_or_sdk_module() -> None:
    code = (
        "import sys, shared.google_api, shared.error_policy, connectors.bigquery; "
        "print([m for m in sys.modules if m.startswith(('google', 'googleapiclient', 'mcp'))])"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_the_timed_cache_computes_a_key_once_while_it_is_fresh() -> None:
    import threading
    import time

    from shared.google_api import TimedCache

    calls: list[str] = []

    def slow(key: str) -> str:
        calls.append(key)
        time.sleep(0.05)
        return key.upper()

    cache: TimedCache[str] = TimedCache(60)
    threads = [threading.Thread(target=cache.get, args=("a", lambda: slow("a"))) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert cache.get("a", lambda: slow("a")) == "A" and calls == ["a"]  # concurrent askers waited for one answer
    assert cache.get("b", lambda: slow("b")) == "B" and calls == ["a", "b"]
    stale: TimedCache[str] = TimedCache(0)
    stale.get("a", lambda: slow("a"))
    stale.get("a", lambda: slow("a"))
    assert calls == ["a", "b", "a", "a"]  # expired at once: asked again
