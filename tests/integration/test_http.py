"""Streamable HTTP over real loopback sockets: uvicorn in a subprocess, the SDK's real client."""

from __future__ import annotations

import json
import secrets
import socket
import subprocess
import urllib.error
import urllib.request
from decimal import Decimal
from pathlib import Path

import anyio
import pytest
from host_tables import StaticTable, StaticTables
from http_support import HttpServer, http_server
from toy_connector import COMMAND as TOY
from toy_connector import TEST_CREDENTIALS, key_fingerprint

from shared._http import ID_LOOKUP_MAX_BYTES, SESSION_GONE, HttpOptions, StartRefused, check_options
from shared._runtime import NO_BACK_CHANNEL
from shared.host import ACP_HOST_CAPABILITY, AcpHost, HostProtocolError, TableReadError

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # real HTTP servers (uvicorn processes)
REPORT = {"resource_id": "acc_1", "start_date": "2026-01-01", "end_date": "2026-01-31", "rows": 40}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}


@pytest.fixture
def toy_http(tmp_path: Path, runtime_dirs: dict[str, str]):
    def start(extra_args=(), env=None, path="/mcp"):
        state = tmp_path / "toy-state"
        state.mkdir(exist_ok=True)
        return http_server(
            TOY, {**runtime_dirs, "TOY_STATE_DIR": str(state), **(env or {})}, tmp_path, extra_args, path
        )

    return start


def _post(server: HttpServer, body: bytes | dict, headers: dict[str, str] | None = None, path: str = "/mcp"):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        server.base + path,
        data=data,
        method="POST",
        headers={
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            **(headers or {}),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def _oversized_post_status(server: HttpServer, size: int) -> int:
    """Announce a body past the limit; the server must answer 413 without reading it all."""
    host, port = server.base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {size}\r\n\r\n"
        )
        sock.sendall(head.encode() + b'{"pad":"' + b"x" * 65536)
        answer = sock.recv(4096).decode("latin-1")
    return int(answer.split(" ", 2)[1])


def _request(server: HttpServer, path: str, method: str = "GET", headers: dict[str, str] | None = None):
    request = urllib.request.Request(server.base + path, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


async def test_extraction_on_both_paths_and_health(toy_http) -> None:
    for path in ("/mcp", "/mcp/v1"):
        with toy_http(path=path) as server:
            async with AcpHost(url=server.url) as host:
                assert host.server_info["name"] == "toy"
                assert (host.server_capability or {})["version"] == "1.0"
                await host.configure(credentials=TEST_CREDENTIALS)
                result = await host.call("report", REPORT, {"autocontext_delivered": True})
                assert result.model_response["notice"] == "Showing 25 of 40 extracted rows."
                assert len(result.rows()) == 40
            status, body = _request(server, "/healthz")
            assert status == 200 and json.loads(body) == {"status": "ok", "acp": "toy", "version": "9.9.9"}


async def test_a_chart_path_is_not_sent_over_http(toy_http, runtime_dirs) -> None:
    """spec 8.10: a remote host cannot read a path on the server, so it is left out, with a warning,
    and the file is removed at once."""
    with toy_http() as server:
        async with AcpHost(url=server.url) as host:
            result = await host.call("chart", {})
    assert not result.is_error and "screenshot_path" not in result.model_response
    assert any("chart is left out" in w for w in result.model_response["warnings"])
    assert result.rows() == [{"x": 1}]
    assert not list(Path(runtime_dirs["ACP_TMP_DIR"]).glob("*.png"))


async def test_fifty_concurrent_sessions_never_see_each_other(toy_http) -> None:
    """Spec 3.2: configuration, credentials, effective limits, caches and on_first_call are per HTTP session.

    Every answer that depends on the credential names it: whoami and the report rows carry a
    fingerprint of the api_key, the fields block names the account, so a leak shows as a stranger's.
    """
    canaries = [f"CANARY-{i:02d}-{secrets.token_hex(8)}" for i in range(50)]
    keys = [key_fingerprint({"api_key": canary}) for canary in canaries]
    assert len(set(keys)) == 50
    transcripts: dict[int, str] = {}

    async def session(server: HttpServer, i: int) -> None:
        account = f"acct-{i:02d}"
        credentials = {"type": "api_key", "account": account, "api_key": canaries[i]}
        owner = f"Rows of {account}."
        async with AcpHost(url=server.url) as host:
            effective = (
                await host.configure(
                    credentials=credentials, row_limit=i + 1, config={"region": "us" if i % 2 else "eu"}
                )
            )["effective"]
            seen = [json.dumps(effective)]
            assert effective["row_limit"] == i + 1 and effective["has_credentials"] is True
            # The same resource twice: the second answer comes from the block cache, while 49
            # other identities fill and read it for the same resource.
            fields = {"resource_id": "acc_1", "request_data": ["fields"]}
            contexts = [await host.call("autocontext", fields) for _ in range(2)]
            assert [c.system_info["cached"] for c in contexts] == [False, True]
            for context in contexts:
                assert context.model_response[0]["data"][2]["description"] == owner
                seen.append(json.dumps(context.raw))
            attached = []
            for _ in range(3):
                await anyio.sleep(0)
                me = await host.call("whoami", {})
                assert me.model_response == {"identity": f"toy:{account}", "key": keys[i], "row_limit": i + 1}
                config = await host.call("echo_config", {})
                assert config.model_response["config"]["region"] == ("us" if i % 2 else "eu")
                # Same conversation id and resource in every session: the first-call state is per transport session.
                report = await host.call("report", REPORT, {"session_id": "shared-conversation"})
                assert report.model_response["returned_rows"] == min(i + 1, 40)
                assert {row["key"] for row in report.rows()} == {keys[i]}
                attached.append(report.model_response.get("autocontext"))
                seen += [me.text, config.text, report.text, json.dumps(report.raw), json.dumps(report.rows())]
            assert [blocks is not None for blocks in attached] == [True, False, False]
            assert attached[0][0]["data"][2]["description"] == owner
            again = (await host.configure())["effective"]
            assert again == effective
            transcripts[i] = "\n".join(seen) + json.dumps(again)

    with toy_http() as server:
        async with anyio.create_task_group() as group:
            for i in range(50):
                group.start_soon(session, server, i)
        log = server.read_stderr()
    assert len(transcripts) == 50
    for i, text in transcripts.items():
        assert f'"{keys[i]}"' in text
        for j, canary in enumerate(canaries):
            assert canary not in text, (i, j)
            if j != i:
                assert f"acct-{j:02d}" not in text, (i, j)
                assert f'"{keys[j]}"' not in text, (i, j)
    assert not any(canary in log for canary in canaries)


async def test_bearer_token_guards_everything_but_health(toy_http) -> None:
    token = secrets.token_urlsafe(24)
    with toy_http(env={"ACP_HTTP_TOKEN": token}) as server:
        assert _post(server, INIT)[0] == 401
        status, headers, body = _post(server, INIT, {"authorization": "Bearer wrong-" + token})
        assert status == 401 and "Bearer" in headers.get("www-authenticate", "")
        refusal = json.loads(body)  # a JSON-RPC error with the request's id, which MCP clients show
        assert refusal["id"] == 1 and refusal["error"]["code"] == -32001
        assert "ACP_HTTP_TOKEN" in refusal["error"]["message"]
        # RFC 7235 §2.1: the scheme is case-insensitive, the token is not.
        for scheme in ("bearer", "BEARER"):
            assert _post(server, INIT, {"authorization": f"{scheme} {token}"})[0] == 200
        assert _post(server, INIT, {"authorization": f"Bearer {token.swapcase()}"})[0] == 401
        assert _post(server, INIT, {"authorization": f"Basic {token}"})[0] == 401
        assert _post(server, INIT, {"authorization": token})[0] == 401
        assert _request(server, "/healthz")[0] == 200
        async with AcpHost(url=server.url, token=token) as host:
            await host.configure(credentials=TEST_CREDENTIALS)
            result = await host.call("report", REPORT, {"inline_max_bytes": 100, "autocontext_delivered": True})
            uri = result.system_data["table_uri"]
            path = uri.split("127.0.0.1", 1)[1].split("/", 1)[1]
            assert _request(server, "/" + path)[0] == 401  # the download needs the same auth
            assert len(result.rows()) == 40
        with pytest.raises(BaseException):  # noqa: B017 - the SDK wraps the 401 in an exception group
            async with AcpHost(url=server.url, token="wrong"):
                pass


async def test_table_uri_is_a_single_use_link_kept_out_of_logs(toy_http) -> None:
    with toy_http(env={"ACP_LOG_LEVEL": "debug"}) as server:
        async with AcpHost(url=server.url) as host:
            await host.configure(credentials=TEST_CREDENTIALS)
            result = await host.call("report", REPORT, {"inline_max_bytes": 100, "autocontext_delivered": True})
            data = result.system_data
            assert data["format"] == "file" and data["table_uri"].startswith(server.base + "/tables/")
            token = data["table_uri"].rsplit("/", 1)[1]
            assert len(token) >= 40
            rows = result.rows()
            assert [r["sessions"] for r in rows] == [i * 10 for i in range(40)]
            status, body = _request(server, f"/tables/{token}")
            assert status == 404 and "already used" in json.loads(body)["message"]
        assert token not in server.read_stderr()


async def test_every_stderr_line_is_json_uvicorn_included(toy_http) -> None:
    """README and --help promise JSON lines on stderr: uvicorn's start and stop messages are no exception."""
    with toy_http(env={"ACP_LOG_LEVEL": "info"}) as server:
        async with AcpHost(url=server.url) as host:
            await host.call("whoami", {}, {"credentials": TEST_CREDENTIALS})
    loggers = set()
    for line in server.read_stderr().splitlines():  # read after the stop, so shutdown lines are in
        try:
            loggers.add(json.loads(line)["logger"])
        except (ValueError, KeyError):
            pytest.fail(f"not a JSON log line: {line!r}")
    assert {"uvicorn.error", "acp"} <= loggers


async def test_host_and_origin_checks(toy_http) -> None:
    with toy_http() as server:
        status, _, body = _post(server, INIT, {"host": "evil.example"})
        assert status == 421
        message = json.loads(body)["message"]
        assert "--allowed-host" in message and "ACP_ALLOWED_HOSTS" in message  # the next step, not a bare refusal
        status, _, body = _post(server, INIT, {"origin": "http://evil.example"})
        assert status == 403
        assert json.loads(body)["error"] == "invalid_origin" and "--allowed-host" in json.loads(body)["message"]
        assert _post(server, INIT, {"origin": "http://localhost:5173"})[0] == 200
    with toy_http(extra_args=["--allowed-host", "acp.example"]) as server:
        port = server.base.rsplit(":", 1)[1]
        assert _post(server, INIT, {"host": f"acp.example:{port}"})[0] == 200
        assert _post(server, INIT, {"host": "other.example"})[0] == 421
    with toy_http(env={"ACP_ALLOWED_HOSTS": "acp.example, data.example"}) as server:
        port = server.base.rsplit(":", 1)[1]
        for name in ("acp.example", "data.example"):
            assert _post(server, INIT, {"host": f"{name}:{port}"})[0] == 200
            assert _post(server, INIT, {"origin": f"https://{name}"})[0] == 200
        assert _post(server, INIT, {"host": "other.example"})[0] == 421


async def test_body_limit_delete_and_get(toy_http) -> None:
    with toy_http() as server:
        assert _oversized_post_status(server, 5 * 1024 * 1024) == 413
        assert _oversized_post_status(server, 64 * 1024 * 1024) == 413
        _, headers, _ = _post(server, INIT)
        session = headers["mcp-session-id"]
        _post(server, {"jsonrpc": "2.0", "method": "notifications/initialized"}, {"mcp-session-id": session})
        listed = _post(server, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, {"mcp-session-id": session})
        assert listed[0] == 200
        assert _request(server, "/mcp", "DELETE", {"mcp-session-id": session})[0] == 200
        gone = _post(server, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, {"mcp-session-id": session})
        assert gone[0] == 404
        modern_get = _request(server, "/mcp", "GET", {"mcp-protocol-version": "2026-07-28"})
        assert modern_get[0] == 405


async def test_errors_before_a_request_is_read_carry_its_id(toy_http) -> None:
    """A 404 for a deleted or unknown session (and a 400 for a missing one) answers with the request's
    id, not null, so a client that matches answers by id knows which request failed (JSON-RPC 2.0)."""
    with toy_http() as server:
        _, headers, _ = _post(server, INIT)
        session = {"mcp-session-id": headers["mcp-session-id"]}
        _post(server, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        assert _request(server, "/mcp", "DELETE", session)[0] == 200
        unknown = {"mcp-session-id": "0" * 32}
        json_only = {"accept": "application/json"}
        for request_id, extra in ((3, session), ("call-7", session), (4, unknown), (5, {**session, **json_only})):
            status, answer_headers, body = _post(
                server, {"jsonrpc": "2.0", "id": request_id, "method": "tools/list"}, extra
            )
            answer = json.loads(body)
            assert status == 404 and answer["id"] == request_id, (status, body)
            assert answer["error"]["message"] == SESSION_GONE
            assert int(answer_headers["content-length"]) == len(body)
        # Nothing to echo: a notification, a body that is not a request, one past the lookup limit.
        padded = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"pad": "x" * ID_LOOKUP_MAX_BYTES}}
        for request in ({"jsonrpc": "2.0", "method": "notifications/initialized"}, b"{not json", padded):
            status, _, body = _post(server, request, session)
            assert status == 404 and json.loads(body)["id"] is None, body
        missing = _post(server, {"jsonrpc": "2.0", "id": 6, "method": "tools/list"})
        assert missing[0] == 400 and json.loads(missing[2])["id"] == 6, missing


async def test_a_client_that_accepts_only_json(toy_http) -> None:
    # It declares host_tables, as an ACP host would, to show that what it lacks is the stream.
    init = {**INIT, "params": {**INIT["params"], "capabilities": {"experimental": {"acp": ACP_HOST_CAPABILITY}}}}
    with toy_http() as server:
        status, headers, body = _post(server, init, {"accept": "application/json"})
        assert status == 200 and headers["content-type"] == "application/json"
        assert json.loads(body)["result"]["serverInfo"]["name"] == "toy"
        session = {"mcp-session-id": headers["mcp-session-id"], "accept": "application/json"}
        _post(server, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "report",
                "arguments": REPORT,
                "_meta": {"acp": {"credentials": TEST_CREDENTIALS, "autocontext_delivered": True}},
            },
        }
        status, _, body = _post(server, call, session)
        assert status == 200
        result = json.loads(body)["result"]
        assert json.loads(result["content"][0]["text"])["total_rows"] == 40
        # No stream means no back-channel: acp/read_table is refused at once, never awaited.
        merge = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "merge_table", "arguments": {"table_ref": "x", "column": "c"}},
        }
        with anyio.fail_after(10):
            status, _, body = await anyio.to_thread.run_sync(lambda: _post(server, merge, session))
        error = json.loads(body)["result"]["_meta"]["acp"]["error"]
        assert error["name"] == "ACP_HOST_TABLES_UNSUPPORTED" and error["message"] == NO_BACK_CHANNEL


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25"])
async def test_handshake_revisions_complete_an_extraction_and_read_tables(toy_http, version) -> None:
    tables = StaticTables({"ds": StaticTable(headers=[{"name": "v", "type": "integer"}], rows=[{"v": 2}, {"v": 5}])})
    with toy_http() as server:
        async with AcpHost(url=server.url, protocol_version=version, tables=tables) as host:
            assert host.initialize_result["protocolVersion"] == version
            await host.configure(credentials=TEST_CREDENTIALS)
            result = await host.call("report", REPORT, {"autocontext_delivered": True})
            assert result.model_response["total_rows"] == 40
            merged = await host.call("merge_table", {"table_ref": "ds", "column": "v"})
            assert merged.model_response["sum"] == 7  # acp/read_table rode the POST's SSE stream


async def test_stateless_2026_07_28_client(toy_http) -> None:
    """The gateway revision: no session; credentials per call; configure and read_table say why not."""
    with toy_http() as server:
        tables = StaticTables({"ds": StaticTable(rows=[{"v": 1}])})
        async with AcpHost(url=server.url, protocol_version="2026-07-28", tables=tables) as host:
            assert (host.server_capability or {})["version"] == "1.0"  # experimental.acp via server/discover
            assert host.server_info["name"] == "toy"
            with pytest.raises(HostProtocolError) as refused:
                await host.configure(credentials=TEST_CREDENTIALS)
            assert "_meta.acp" in refused.value.message
            result = await host.call("report", REPORT, {"credentials": TEST_CREDENTIALS, "autocontext_delivered": True})
            assert result.model_response["notice"] == "Showing 25 of 40 extracted rows."
            assert len(result.rows()) == 40
            with anyio.fail_after(10):
                merged = await host.call("merge_table", {"table_ref": "ds", "column": "v"})
            assert merged.error_name == "ACP_HOST_TABLES_UNSUPPORTED" and merged.error["message"] == NO_BACK_CHANNEL
            assert tables.requests == []
            # on_first_call still works without a transport session: keyed by identity and session_id.
            meta = {"credentials": TEST_CREDENTIALS, "session_id": "gateway-conversation"}
            attached = [(await host.call("report", REPORT, meta)).system_info["autocontext_attached"] for _ in range(2)]
            assert attached == [True, False]


def test_unsafe_binds_are_refused_before_listening(tmp_path: Path) -> None:
    """A non-loopback bind needs ACP_HTTP_TOKEN, and TLS or an explicit TLS proxy (spec 3.2)."""
    for env, needle in (({}, "ACP_HTTP_TOKEN"), ({"ACP_HTTP_TOKEN": "t" * 32}, "TLS")):
        done = subprocess.run(
            [*TOY, "--http", "--host", "0.0.0.0", "--port", "9"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            env={"PATH": "/usr/bin:/bin", **env},
        )
        assert done.returncode == 2
        assert needle in done.stderr and "Traceback" not in done.stderr
    check_options(HttpOptions(host="10.0.0.5", token="t" * 32, behind_tls_proxy=True))
    check_options(HttpOptions(host="10.0.0.5", token="t" * 32, tls_cert="c.pem", tls_key="k.pem"))
    check_options(HttpOptions(host="::1"))
    with pytest.raises(StartRefused, match="go together"):
        check_options(HttpOptions(host="127.0.0.1", tls_cert="c.pem"))
    with pytest.raises(StartRefused):
        check_options(HttpOptions(host="acp.example", token="t" * 32))


async def test_https_round_trip_and_https_table_links(tmp_path: Path) -> None:
    """--tls-cert/--tls-key serve HTTPS, and the table links the server hands out are https too."""
    import ssl

    from http_support import free_port

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    openssl = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
    made = subprocess.run(
        [*openssl, "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    port = free_port()
    base = f"https://127.0.0.1:{port}"
    context = ssl.create_default_context(cafile=str(cert))
    process = subprocess.Popen(
        [*TOY, "--http", "--port", str(port), "--tls-cert", str(cert), "--tls-key", str(key)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def post(body: dict, session: str | None = None) -> tuple[dict, dict]:
        headers = {"content-type": "application/json", "accept": "application/json"}
        if session:
            headers["mcp-session-id"] = session
        request = urllib.request.Request(base + "/mcp", data=json.dumps(body).encode(), method="POST", headers=headers)
        with urllib.request.urlopen(request, context=context, timeout=30) as answer:
            raw = answer.read()
            return dict(answer.headers), (json.loads(raw) if raw else {})

    try:
        for _ in range(150):
            try:
                with urllib.request.urlopen(f"{base}/healthz", context=context, timeout=2) as answer:
                    assert answer.status == 200
                    break
            except (urllib.error.URLError, ConnectionError):
                await anyio.sleep(0.1)
        else:
            pytest.fail("HTTPS server did not start")
        # An ACP host: a client without the capability gets no system_data, and so no link (spec 2.2, 4.1).
        acp_init = {
            **INIT,
            "params": {**INIT["params"], "capabilities": {"experimental": {"acp": ACP_HOST_CAPABILITY}}},
        }
        headers, _ = await anyio.to_thread.run_sync(post, acp_init)
        session = headers["mcp-session-id"]
        meta = {"credentials": TEST_CREDENTIALS, "inline_max_bytes": 100, "autocontext_delivered": True}
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "report", "arguments": REPORT, "_meta": {"acp": meta}},
        }
        _, answer = await anyio.to_thread.run_sync(post, call, session)
        uri = answer["result"]["_meta"]["acp"]["system_data"]["table_uri"]
        assert uri.startswith(f"{base}/tables/")
        with urllib.request.urlopen(uri, context=context, timeout=30) as table:
            assert len(json.loads(table.read())) == 40
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.mark.parametrize("version", [None, "2026-07-28"])
async def test_cancellation_reaches_the_source_over_http(toy_http, tmp_path: Path, version) -> None:
    """notifications/cancelled (sessions) or the request going away (stateless) stops the work."""
    with toy_http() as server:
        async with AcpHost(url=server.url, protocol_version=version) as host:
            with anyio.move_on_after(1.0):
                await host.call("sleep", {"resource_id": "acc_1", "seconds": 30}, {"credentials": TEST_CREDENTIALS})
            log = tmp_path / "toy-state" / "cancel.log"
            with anyio.fail_after(8):
                while not log.exists():
                    await anyio.sleep(0.05)
            assert "stopped at source" in log.read_text("utf-8")
            again = await host.call("whoami", {}, {"credentials": TEST_CREDENTIALS})
            assert again.model_response["identity"] == "toy:team-a"


async def test_a_client_that_resets_its_timeout_on_progress_waits_out_a_long_query(toy_http) -> None:
    """A query longer than the client's read timeout: heartbeats, then rows, keep a client that resets
    its timeout on progress waiting (the TypeScript SDK's resetTimeoutOnProgress), over real HTTP.

    The installed ``mcp`` client has a progress callback and a read timeout but no reset option,
    so the reset is done here as that SDK does it: each notification moves the deadline on.
    """
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError

    timeout_s = 1.0
    long_query = {"rows": 3000, "wait_s": 2.0, "pause_s": 0.2}  # about 2.6 s, no row in the first 2
    with toy_http(env={"ACP_PROGRESS_HEARTBEAT_S": "0.3"}) as server:
        async with (
            streamable_http_client(server.url) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            messages: list[str] = []
            deadline = anyio.CancelScope(deadline=anyio.current_time() + timeout_s)

            async def reset_on_progress(progress: float, total: float | None, message: str | None) -> None:
                messages.append(message or "")
                deadline.deadline = anyio.current_time() + timeout_s

            with deadline:
                result = await session.call_tool("stream", long_query, progress_callback=reset_on_progress)
            assert not deadline.cancelled_caught, messages
            assert not result.is_error
            # A plain client gets no system_data (spec 2.2, 4.1): the model's text says how many rows came.
            assert json.loads(result.content[0].text)["total_rows"] == 3000
            assert messages[0].startswith("Still running after") and messages[-1].startswith("3,000 rows fetched")
            # The same call with the same timeout, never reset, fails: the query is longer than the timeout.
            with pytest.raises(MCPError, match="timed out"):
                await session.call_tool("stream", long_query, read_timeout_seconds=timeout_s)


LARGE_REPORT = {**REPORT, "rows": 12_000}  # about 1.2 MB of rows: past the mcp client's 1 MiB event limit


async def test_a_large_extraction_reaches_a_stock_mcp_client_as_a_link(toy_http) -> None:
    """Over HTTP a table past the safe event size goes as a single-use link whatever inline_max_bytes says,
    so a client with the SDK's default 1 MiB limit on server-sent events still gets the answer (spec 8.5).

    The SDK's own session, with the ACP capability declared (the stock one cannot declare it), gets the
    link; the stock one, a plain MCP client, gets no system_data at all (spec 2.2, 4.1), only the text.
    """
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from shared._sdk import AcpClientSession
    from shared.host import open_table

    async def no_tables(params: dict) -> dict:
        raise AssertionError("no acp/read_table expected")

    meta = {"acp": {"credentials": TEST_CREDENTIALS, "inline_max_bytes": 50_000_000}}
    with toy_http() as server:
        async with (
            streamable_http_client(server.url) as (read, write),
            AcpClientSession(read, write, experimental={"acp": ACP_HOST_CAPABILITY}, read_table=no_tables) as session,
        ):
            await session.initialize()
            with anyio.fail_after(60):
                result = await session.call_tool("report", LARGE_REPORT, meta=meta)
            assert not result.is_error
            data = result.meta["acp"]["system_data"]
            assert data["format"] == "file" and data["table_uri"].startswith(server.base + "/tables/")
            assert data["row_count"] == 12_000
            async with open_table(data, exact=True) as table:
                sessions = [row["sessions"] async for row in table]
            assert sessions == [i * 10 for i in range(12_000)]
        async with (
            streamable_http_client(server.url) as (read, write),
            ClientSession(read, write) as plain,
        ):
            await plain.initialize()
            with anyio.fail_after(60):
                answer = await plain.call_tool("report", LARGE_REPORT, meta=meta)
            assert not answer.is_error and "system_data" not in answer.meta["acp"]
            assert answer.structured_content == json.loads(answer.content[0].text)
            assert answer.structured_content["total_rows"] == 12_000
    assert "/tables/" not in server.read_stderr()


async def test_the_host_reads_large_tables_over_http_as_links_and_streams_them(toy_http) -> None:
    with toy_http() as server:
        async with AcpHost(url=server.url) as host:
            await host.configure(credentials=TEST_CREDENTIALS)
            result = await host.call("report", LARGE_REPORT, {"autocontext_delivered": True})
            assert result.system_data["format"] == "file"
            async with host.open_table(result.system_data, exact=True) as table:
                assert [h["name"] for h in table.headers] == ["date", "channel", "sessions", "revenue", "key"]
                rows = [row async for row in table]
            assert len(rows) == table.row_count == 12_000
            assert rows[11_999]["revenue"] == Decimal("1199.9") and rows[11_999]["sessions"] == 119_990
            # The link worked once: a second read is refused with the next step.
            with pytest.raises(TableReadError, match="already used"):
                async with host.open_table(result.system_data) as again:
                    [row async for row in again]
            # Small tables stay inline.
            small = await host.call("report", REPORT, {"autocontext_delivered": True})
            assert small.system_data["format"] == "inline" and len(small.rows()) == 40


async def test_every_answer_stays_under_the_stock_clients_event_limit(toy_http) -> None:
    """Over HTTP the model's text is held to HTTP_MODEL_MAX_CHARS whatever the answer: a 1.5 MB info answer
    and a wide table (500 K characters of capped values) reach a stock client, with its default 1 MiB event
    limit, as valid JSON within the budget; the table stays whole for the host."""
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from shared._runtime import HTTP_MODEL_MAX_CHARS

    rules = json.dumps({"note": "x" * 1_500_000})
    with toy_http() as server:
        async with AcpHost(url=server.url) as host:
            echoed = await host.call("echo_config", {}, {"config": {"rules": rules}})
            assert not echoed.is_error and len(echoed.text) <= HTTP_MODEL_MAX_CHARS
            assert echoed.model_response["config"]["rules"].startswith('{"note": "xxx')
            assert echoed.system_info["model_max_chars"] == HTTP_MODEL_MAX_CHARS
            wide = await host.call("wide", {"rows": 25, "columns": 40, "width": 2000})
            assert len(wide.text) <= HTTP_MODEL_MAX_CHARS and wide.model_response["returned_rows"] >= 1
            assert len(wide.rows()) == 25
        async with (
            streamable_http_client(server.url) as (read, write),
            ClientSession(read, write) as plain,
        ):
            await plain.initialize()
            answer = await plain.call_tool("echo_config", {}, meta={"acp": {"config": {"rules": rules}}})
            assert not answer.is_error and len(answer.content[0].text) <= HTTP_MODEL_MAX_CHARS
            assert answer.structured_content == json.loads(answer.content[0].text)


async def test_links_on_another_origin_never_get_the_token(toy_http) -> None:
    token = secrets.token_urlsafe(32)
    with toy_http(env={"ACP_HTTP_TOKEN": token}) as server:
        async with AcpHost(url=server.url, token=token) as host:
            elsewhere = {"format": "file", "row_count": 1, "headers": [], "table_uri": "http://127.0.0.2:9/tables/x"}
            with pytest.raises(TableReadError, match="origin"):
                async with host.open_table(elsewhere):
                    pass
