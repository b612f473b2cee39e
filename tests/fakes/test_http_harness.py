"""The loopback harness itself: routing, the request log, error envelopes, injected faults."""

from __future__ import annotations

import threading
import time
import urllib.parse
from collections.abc import Iterator

import pytest
import requests

from fakes.http import (
    HANDLER_CRASH_REASON,
    FakeHttpServer,
    RecordedRequest,
    Reply,
    google_error,
    offset_from_page_token,
    opaque_page_token,
)


def _echo(request: RecordedRequest, match: object) -> Reply:
    groups = match.groups()  # type: ignore[attr-defined]
    return Reply(200, {"groups": list(groups), "json": request.json, "q": request.param("q")})


def _crash(request: RecordedRequest, match: object) -> Reply:
    raise RuntimeError("boom in the fake")


@pytest.fixture
def server() -> Iterator[FakeHttpServer]:
    fake = FakeHttpServer()
    fake.add_route("GET", r"/v1/sites/([^/]+)/things", _echo, "things.list")
    fake.add_route("POST", r"/v1/echo", _echo, "echo")
    fake.add_route("GET", r"/v1/crash", _crash, "crash")
    with fake:
        yield fake


def test_paths_are_routed_undecoded_so_encoded_slashes_stay_in_one_segment(server: FakeHttpServer) -> None:
    site = urllib.parse.quote("https://www.example.com/", safe="")
    response = requests.get(f"{server.url}/v1/sites/{site}/things", params={"q": "a b"}, timeout=5)
    assert response.status_code == 200
    assert response.json() == {"groups": ["https%3A%2F%2Fwww.example.com%2F"], "json": None, "q": "a b"}
    logged = server.requests[-1]
    assert (logged.method, logged.path, logged.route, logged.status) == (
        "GET",
        f"/v1/sites/{site}/things",
        "things.list",
        200,
    )
    assert logged.query == {"q": ["a b"]}
    assert logged.headers["host"] == f"127.0.0.1:{server.port}"


def test_json_bodies_are_parsed_into_the_log(server: FakeHttpServer) -> None:
    response = requests.post(f"{server.url}/v1/echo", json={"k": [1, 2]}, timeout=5)
    assert response.json()["json"] == {"k": [1, 2]}
    assert server.requests[-1].body == b'{"k": [1, 2]}'
    assert server.requests[-1].json == {"k": [1, 2]}


def test_unmatched_requests_get_a_google_404_envelope(server: FakeHttpServer) -> None:
    response = requests.get(f"{server.url}/v1/nothing-here", timeout=5)
    assert response.status_code == 404
    error = response.json()["error"]
    assert (error["code"], error["status"], error["errors"][0]["reason"]) == (404, "NOT_FOUND", "notFound")
    assert server.requests[-1].route is None


def test_a_crashing_handler_answers_500_instead_of_dropping_the_connection(server: FakeHttpServer) -> None:
    response = requests.get(f"{server.url}/v1/crash", timeout=5)
    assert response.status_code == 500
    error = response.json()["error"]
    assert error["errors"][0]["reason"] == HANDLER_CRASH_REASON
    assert "boom in the fake" in error["message"]
    assert len(server.handler_errors) == 1 and "RuntimeError" in server.handler_errors[0]


def test_fail_answers_the_next_requests_of_one_route_then_stops(server: FakeHttpServer) -> None:
    server.fail("echo", 503, times=2, reason="backendError", message="try later")
    statuses = [requests.post(f"{server.url}/v1/echo", json={}, timeout=5).status_code for _ in range(3)]
    assert statuses == [503, 503, 200]
    first = requests.Session()
    server.fail("echo", 429)
    body = first.post(f"{server.url}/v1/echo", json={}, timeout=5).json()
    assert body == google_error(429, "RESOURCE_EXHAUSTED", "Injected fault: HTTP 429 on echo", "rateLimitExceeded")
    # Faults are per route: the other route was never affected.
    assert requests.get(f"{server.url}/v1/sites/x/things", timeout=5).status_code == 200
    assert [r.status for r in server.requests_for("echo")] == [503, 503, 200, 429]


def test_slow_delays_only_the_requested_number_of_requests(server: FakeHttpServer) -> None:
    server.slow("echo", 0.3)
    assert server.pending_faults("echo") == 1
    started = time.monotonic()
    requests.post(f"{server.url}/v1/echo", json={}, timeout=5)
    assert time.monotonic() - started >= 0.3  # a lower bound: no load makes a sleep shorter
    requests.post(f"{server.url}/v1/echo", json={}, timeout=5)
    assert [r.delayed_s for r in server.requests_for("echo")] == [0.3, 0.0]
    assert server.pending_faults("echo") == 0


def test_a_client_timeout_during_a_delay_does_not_break_the_server(server: FakeHttpServer) -> None:
    server.slow("echo", 0.5)
    with pytest.raises(requests.exceptions.ReadTimeout):
        requests.post(f"{server.url}/v1/echo", json={}, timeout=0.1)
    time.sleep(0.5)
    assert requests.post(f"{server.url}/v1/echo", json={}, timeout=5).status_code == 200
    assert server.handler_errors == []


def test_faults_on_unknown_routes_are_refused(server: FakeHttpServer) -> None:
    with pytest.raises(ValueError, match="no route named 'ech0'"):
        server.fail("ech0", 500)
    with pytest.raises(ValueError, match="error status"):
        server.fail("echo", 200)


def test_concurrent_requests_are_all_logged(server: FakeHttpServer) -> None:
    def post(index: int) -> None:
        requests.post(f"{server.url}/v1/echo", json={"i": index}, timeout=5)

    threads = [threading.Thread(target=post, args=(index,)) for index in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r.json["i"] for r in server.requests_for("echo")) == list(range(20))


def test_the_server_binds_loopback_only_and_stops_listening() -> None:
    server = FakeHttpServer().start()
    port = server.port
    assert server.url == f"http://127.0.0.1:{port}"
    server.stop()
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}/", timeout=1)


def test_page_tokens_round_trip_and_reject_foreign_tokens() -> None:
    assert offset_from_page_token(opaque_page_token(12345)) == 12345
    assert offset_from_page_token(None) is None
    assert not opaque_page_token(50).isdigit()
    with pytest.raises(ValueError):
        offset_from_page_token("50")
