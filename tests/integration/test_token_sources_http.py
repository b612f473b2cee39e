"""Token-bound sources over real HTTP: one databases server with a sources file, many clients.

The server binds five tokens: ``sales`` and ``sales-orders`` to one SQLite file (the second
limited to one table), ``other`` to another file, ``warehouse`` to PostgreSQL with a canary
password written literally in the file, and ``broken`` to a port where nothing listens (same
canary). ``ACP_HTTP_TOKEN`` is set too. Plain MCP clients (the SDK's ``ClientSession``, no ACP
capability, no ``_meta``) and ACP hosts use them in both MCP eras; the last test rotates
tokens with SIGHUP while a call is running. One process serves every test (test time).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import signal
import sqlite3
import subprocess
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import psutil
import psycopg
import pytest
from host_tables import StaticTable, StaticTables
from http_support import HttpServer, http_server, module_command

from shared._sdk import http_client
from shared.host import AcpHost, HostProtocolError

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # a real HTTP server process
CANARY = "CANARY-" + secrets.token_hex(16)
OTHER_ROW = "OTHER-SOURCE-ROW-" + secrets.token_hex(4)
MODERN = "2026-07-28"
INIT = {
    "jsonrpc": "2.0",
    "id": 42,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}


@dataclass
class Gateway:
    folder: Path
    sources_file: Path
    content: dict[str, Any]
    tokens: dict[str, str]
    sales: Path
    other: Path
    server: HttpServer | None = None

    def write(self) -> None:
        self.sources_file.write_text(json.dumps(self.content, indent=2), "utf-8")  # keeps its 0600 mode

    def bind(self, source_id: str, token: str) -> None:
        entry = next(e for e in self.content["sources"] if e["id"] == source_id)
        entry["token_sha256"] = hashlib.sha256(token.encode()).hexdigest()
        self.tokens[source_id] = token


def _sqlite(path: Path, script: str) -> Path:
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.executescript(script)
    return path


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    folder = tmp_path_factory.mktemp("gateway")
    orders = ", ".join(f"({i}, {i * 1.5}, 'order {i}')" for i in range(40))
    # 40 wide text columns: a 25-row sample of them is far beyond a gateway's 3,000 characters.
    wide_columns = ", ".join(f"c{c:02d} TEXT" for c in range(40))
    wide_rows = ", ".join(
        "(" + ", ".join("'" + f"row {r} col {c} " * 12 + "'" for c in range(40)) + ")" for r in range(30)
    )
    sales = _sqlite(
        folder / "sales.sqlite",
        "CREATE TABLE orders (id INTEGER, amount REAL, note TEXT); CREATE TABLE customers (id INTEGER, name TEXT); "
        f"INSERT INTO orders VALUES {orders}; CREATE TABLE wide ({wide_columns}); INSERT INTO wide VALUES {wide_rows};",
    )
    other = _sqlite(
        folder / "other.sqlite", f"CREATE TABLE ledger (entry TEXT); INSERT INTO ledger VALUES ('{OTHER_ROW}');"
    )
    (folder / "other-path.txt").write_text(str(other), "utf-8")
    tokens = {name: secrets.token_urlsafe(32) for name in ("sales", "sales-orders", "other", "warehouse", "broken")}
    postgres = {"type": "postgres", "host": "127.0.0.1", "user": {"env": "GATEWAY_PG_USER"}, "password": CANARY}
    content = {
        "defaults": {"model_max_chars": 3000},
        "sources": [
            {"id": "sales", "credentials": {"type": "sqlite", "path": str(sales)}, "default_resource_id": "sales"},
            {
                "id": "sales-orders",
                "credentials": {"type": "sqlite", "path": str(sales)},
                "resources": ["sales.orders"],
                "default_resource_id": "sales.orders",
                "row_limit": 5,
            },
            {"id": "other", "credentials": {"type": "sqlite", "path": {"file": "other-path.txt"}}},
            {
                "id": "warehouse",
                "credentials": {**postgres, "database": "postgres", "port": 5432, "sslmode": "disable"},
                "default_resource_id": "postgres",
                # pg_sleep is off the allow-list; the operator trusts it here for the in-flight call below.
                "config": {"statement_timeout_s": 60, "allowed_functions": json.dumps(["pg_sleep"])},
            },
            {"id": "broken", "credentials": {**postgres, "database": "postgres", "port": 1, "sslmode": "disable"}},
        ],
    }
    sources_file = folder / "sources.json"
    sources_file.touch(mode=0o600)
    env = {
        "ACP_HTTP_TOKEN": secrets.token_urlsafe(32),
        "GATEWAY_PG_USER": "postgres",
        "ACP_LOG_LEVEL": "debug",  # the most the server ever writes: the canary must be in none of it
        "ACP_CACHE_DIR": str(folder / "cache"),
        "ACP_TMP_DIR": str(folder / "tmp"),
    }
    state = Gateway(folder, sources_file, content, tokens, sales, other)
    for source_id, token in tokens.items():
        state.bind(source_id, token)
    state.tokens["http"] = env["ACP_HTTP_TOKEN"]
    state.write()
    with http_server(module_command("databases"), env, folder, ["--sources", str(sources_file)]) as server:
        state.server = server
        yield state


@contextlib.asynccontextmanager
async def plain_client(gateway: Gateway, token: str, era: str | None = None) -> AsyncIterator[Any]:
    """The SDK's own ClientSession: no ACP capability, no _meta, only a bearer token (a gateway)."""
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (
        http_client({"Authorization": f"Bearer {token}"}) as http,
        streamable_http_client(gateway.server.url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await (session.discover() if era == MODERN else session.initialize())
        yield session


def _answer(result: Any) -> Any:
    return json.loads(result.content[0].text)


def _post(gateway: Gateway, body: Any, headers: dict[str, str] | None = None, method: str = "POST") -> tuple:
    request = urllib.request.Request(
        gateway.server.url,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
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


def _bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


@pytest.mark.parametrize("era", ["2025-11-25", MODERN])
async def test_a_plain_mcp_client_extracts_with_a_bound_token(gateway: Gateway, era: str) -> None:
    async with plain_client(gateway, gateway.tokens["sales"], era) as session:
        tools = [t.name for t in (await session.list_tools()).tools]
        assert tools[:3] == ["autocontext", "autocontext_data", "execute_sql"]
        result = await session.call_tool("execute_sql", {"sql": "SELECT id, amount, note FROM orders ORDER BY id"})
        wide = await session.call_tool("execute_sql", {"sql": "SELECT * FROM wide"})
    # The sources file's model budget (3,000 characters) holds for 40 wide text columns, as valid JSON.
    assert not wide.is_error and len(wide.content[0].text) <= 3000
    wide_answer = _answer(wide)
    assert wide_answer["total_rows"] == 30 and len(wide_answer["columns"]) == 40
    assert wide_answer["notice"].startswith(f"Showing {wide_answer['returned_rows']} of 30 extracted rows")
    assert not result.is_error, result.content[0].text
    answer = _answer(result)
    assert answer["total_rows"] == 40 and answer["columns"] == ["id", "amount", "note"]
    with contextlib.closing(sqlite3.connect(f"{gateway.sales.as_uri()}?mode=ro", uri=True)) as conn:
        expected = [list(row) for row in conn.execute("SELECT id, amount, note FROM orders ORDER BY id LIMIT 3")]
    assert [[r["id"], r["amount"], r["note"]] for r in answer["rows"][:3]] == expected


async def test_a_bound_token_reaches_only_its_own_source(gateway: Gateway) -> None:
    transcript: list[str] = []
    async with plain_client(gateway, gateway.tokens["sales"]) as session:

        async def call(arguments: dict[str, Any], meta: dict[str, Any] | None = None) -> Any:
            result = await session.call_tool("execute_sql", arguments, meta=meta)
            transcript.append(result.model_dump_json())
            return _answer(result)

        elsewhere = await call({"sql": "SELECT * FROM ledger", "resource_id": "other"})
        assert elsewhere["error"]["name"] == "ACP_RESOURCE_NOT_FOUND" and "outside the resources" in str(elsewhere)
        swapped = await call(
            {"sql": "SELECT * FROM ledger"}, {"acp": {"credentials": {"type": "sqlite", "path": str(gateway.other)}}}
        )
        assert swapped["error"]["name"] == "ACP_INVALID_ARGUMENTS"
        assert "bound this token to the source 'sales'" in swapped["error"]["message"]
        wider = await call({"sql": "SELECT 1 AS one"}, {"acp": {"row_limit": 26}})
        assert wider["error"]["name"] == "ACP_INVALID_LIMIT"
        lower = await call({"sql": "SELECT id FROM orders"}, {"acp": {"row_limit": 2}})
        assert lower["returned_rows"] == 2
        attached = await call({"sql": f"ATTACH DATABASE '{gateway.other}' AS o"})
        missing = await call({"sql": "SELECT * FROM ledger"})
        assert "error" in attached and "error" in missing
    assert not any(OTHER_ROW in text for text in transcript)

    tables = StaticTables({"ds": StaticTable([{"name": "id", "type": "integer"}], [{"id": 1}])})
    async with AcpHost(url=gateway.server.url, token=gateway.tokens["sales-orders"], tables=tables) as host:
        listing = await host.call("autocontext", {})
        assert [r["resource_id"] for r in listing.model_response["resources"]] == ["sales.orders"]
        assert listing.model_response["total_available"] == 1  # the database and customers are not shown
        refused = [
            await host.call("execute_sql", {"sql": "SELECT * FROM customers", "resource_id": "sales.customers"}),
            await host.call("describe_table", {"resource_id": "sales.customers"}),
            await host.call("autocontext", {"resource_id": "sales.customers"}),
            await host.call("autocontext_data", {"resource_id": "sales"}),
            await host.call("insert_rows", {"resource_id": "sales.customers", "table_ref": "ds"}),
        ]
        assert [r.error_name for r in refused] == ["ACP_RESOURCE_NOT_FOUND"] * 5
        assert tables.requests == []  # refused before the host table was read
        rows = await host.call("execute_sql", {"sql": "SELECT id FROM orders"})
        assert rows.model_response["returned_rows"] == 5 and len(rows.rows()) == 40  # its own row_limit
        described = await host.call("describe_table", {})
        assert described.model_response["table"] == "sales.orders"
        effective = (await host.configure(row_limit=3))["effective"]
        assert effective["row_limit"] == 3 and effective["has_credentials"] is True
        assert effective["bound_source"] == "sales-orders" and "config" not in effective
        assert (await host.call("execute_sql", {"sql": "SELECT id FROM orders"})).model_response["returned_rows"] == 3
        for params, code in (({"row_limit": 6}, -32016), ({"credentials": {"type": "sqlite", "path": "/x"}}, -32602)):
            with pytest.raises(HostProtocolError) as refused_configure:
                await host.configure(**params)
            assert refused_configure.value.code == code and "operator" in refused_configure.value.message

    async with plain_client(gateway, gateway.tokens["other"], MODERN) as session:
        ledger = {"sql": "SELECT entry FROM ledger", "resource_id": "other"}  # no default: every database it reaches
        own = _answer(await session.call_tool("execute_sql", ledger))
        assert own["rows"] == [{"entry": OTHER_ROW}]
        sales = _answer(await session.call_tool("execute_sql", {"sql": "SELECT * FROM orders", "resource_id": "sales"}))
        assert "error" in sales


async def test_two_tokens_on_the_same_credentials_share_no_state(gateway: Gateway) -> None:
    """sales and sales-orders read the same file: still, each has its own autocontext cache entries and its
    own on_first_call record, even on the stateless revision with the same conversation id (spec 10.1.5)."""
    meta = {"session_id": "the-same-conversation"}
    seen: dict[str, list[Any]] = {}
    for name in ("sales", "sales-orders"):
        async with AcpHost(url=gateway.server.url, token=gateway.tokens[name], protocol_version=MODERN) as host:
            context = [await host.call("autocontext", {"resource_id": "sales.orders"}) for _ in range(2)]
            query = {"sql": "SELECT id FROM orders", "resource_id": "sales.orders"}
            calls = [await host.call("execute_sql", query, meta) for _ in range(2)]
            seen[name] = [c.system_info["cached"] for c in context] + [
                c.system_info["autocontext_attached"] for c in calls
            ]
    assert seen == {"sales": [False, True, True, False], "sales-orders": [False, True, True, False]}


async def test_an_mcp_session_belongs_to_the_token_that_opened_it(gateway: Gateway) -> None:
    status, headers, _ = _post(gateway, INIT, _bearer(gateway.tokens["sales"]))
    assert status == 200
    session = {"mcp-session-id": headers["mcp-session-id"]}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert _post(gateway, initialized, {**session, **_bearer(gateway.tokens["sales"])})[0] == 202
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    for other in ("sales-orders", "other", "http"):  # valid tokens, but not this session's
        assert _post(gateway, listing, {**session, **_bearer(gateway.tokens[other])})[0] == 404
    assert _post(gateway, listing, {**session, **_bearer(gateway.tokens["sales"])})[0] == 200


async def test_a_missing_or_wrong_token_gets_401_with_a_json_rpc_error(gateway: Gateway) -> None:
    for headers, challenge in (({}, 'Bearer realm="acp"'), (_bearer("x" * 43), 'error="invalid_token"')):
        status, answer_headers, body = _post(gateway, INIT, headers)
        assert status == 401 and challenge in answer_headers["www-authenticate"]
        error = json.loads(body)
        assert error["jsonrpc"] == "2.0" and error["id"] == 42 and error["error"]["code"] == -32001
        assert "Authorization: Bearer <token>" in error["error"]["message"]
    assert json.loads(_post(gateway, [INIT])[2])["id"] is None  # no single request id to echo
    assert json.loads(_post(gateway, None, method="DELETE")[2])["id"] is None
    # The mcp client shows the server's message instead of "Server returned an error response".
    for era in ("2025-11-25", MODERN):
        with pytest.raises(BaseException) as refused:
            async with plain_client(gateway, "wrong-" + gateway.tokens["sales"], era):
                pass
        errors = _leaves(refused.value)
        assert any(getattr(e, "code", None) == -32001 and "not accepted here" in str(e) for e in errors), errors


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


async def test_acp_http_token_still_opens_ordinary_acp_sessions(gateway: Gateway) -> None:
    async with AcpHost(url=gateway.server.url, token=gateway.tokens["http"]) as host:
        none = await host.call("execute_sql", {"sql": "SELECT 1 AS one", "resource_id": "other"})
        assert none.error_name == "ACP_CREDENTIALS_MISSING"  # nothing bound: the host brings its own
        await host.configure(credentials={"type": "sqlite", "path": str(gateway.other)}, row_limit=50)
        own = await host.call("execute_sql", {"sql": "SELECT entry FROM ledger", "resource_id": "other"})
        assert own.model_response["rows"] == [{"entry": OTHER_ROW}] and own.system_info["row_limit"] == 50


async def test_the_canary_never_leaks(gateway: Gateway) -> None:
    """A password written literally in the file: not in answers, errors, logs, nor any process environment."""
    seen: list[str] = []
    async with AcpHost(url=gateway.server.url, token=gateway.tokens["warehouse"]) as host:
        me = await host.call("execute_sql", {"sql": "SELECT current_user AS who"})
        assert me.model_response["rows"] == [{"who": "postgres"}]
        calls = [
            me,
            await host.call("execute_sql", {"sql": "SELECT * FROM no_such_table_anywhere"}),
            await host.call("autocontext", {}),
            await host.call("autocontext", {"resource_id": "postgres.public"}),
        ]
        assert calls[1].is_error and not calls[2].is_error and not calls[3].is_error
        seen += [json.dumps(c.raw) for c in calls]
        with pytest.raises(HostProtocolError) as refused:
            await host.configure(credentials={"type": "postgres", "host": "h", "user": "u", "database": "d"})
        seen.append(str(refused.value))
        seen.append(json.dumps(await host.configure()))
    async with plain_client(gateway, gateway.tokens["broken"], MODERN) as session:
        failed = await session.call_tool("execute_sql", {"sql": "SELECT 1 AS one", "resource_id": "postgres"})
        assert failed.is_error
        seen.append(failed.model_dump_json())
    assert not any(CANARY in text for text in seen)
    assert CANARY not in gateway.server.read_stderr()
    written = [f for folder in ("cache", "tmp") for f in (gateway.folder / folder).rglob("*") if f.is_file()]
    assert written and not any(CANARY.encode() in f.read_bytes() for f in written)  # caches and table files
    server = psutil.Process(gateway.server.process.pid)
    assert b"GATEWAY_PG_USER=postgres" in Path(f"/proc/{server.pid}/environ").read_bytes()  # the right process
    for process in [server, *server.children(recursive=True)]:
        assert CANARY.encode() not in Path(f"/proc/{process.pid}/environ").read_bytes()


async def test_sighup_rotation_without_restart_and_calls_in_flight_finish(gateway: Gateway) -> None:
    """The operator rotates two tokens and sends SIGHUP while a call with one of them is running."""
    old_sales, old_warehouse = gateway.tokens["sales"], gateway.tokens["warehouse"]
    marker = "in-flight-" + secrets.token_hex(4)
    done = anyio.Event()
    results: list[Any] = []

    async def long_call() -> None:
        async with plain_client(gateway, old_warehouse) as session:
            await session.list_tools()  # else the SDK lists them after the call, with the token by then rotated
            sql = f"SELECT 'slept' AS state, '{marker}' AS marker FROM pg_sleep(2)"
            results.append(await session.call_tool("execute_sql", {"sql": sql}))
        done.set()

    async with anyio.create_task_group() as group:
        group.start_soon(long_call)
        with anyio.fail_after(15):
            while not await anyio.to_thread.run_sync(_sleeping_in_postgres):
                assert not done.is_set(), results[0].content[0].text
                await anyio.sleep(0.05)
        gateway.bind("sales", secrets.token_urlsafe(32))
        gateway.bind("warehouse", secrets.token_urlsafe(32))
        gateway.write()
        os.kill(gateway.server.process.pid, signal.SIGHUP)
        with anyio.fail_after(10):
            while "sources file reloaded" not in gateway.server.read_stderr():
                await anyio.sleep(0.05)
        assert not done.is_set()  # the reload happened while the call was running
    assert not results[0].is_error, results[0].content[0].text
    assert _answer(results[0])["rows"] == [{"state": "slept", "marker": marker}]

    for old in (old_sales, old_warehouse):
        assert _post(gateway, INIT, _bearer(old))[0] == 401
    async with plain_client(gateway, gateway.tokens["sales"]) as session:
        assert _answer(await session.call_tool("execute_sql", {"sql": "SELECT count(*) AS n FROM orders"}))["rows"] == [
            {"n": 40}
        ]
    # A file cut short while being edited: the mapping in use stays, and the log says why.
    gateway.sources_file.write_text('{"sources": [', "utf-8")
    os.kill(gateway.server.process.pid, signal.SIGHUP)
    with anyio.fail_after(10):
        while "sources file not reloaded" not in gateway.server.read_stderr():
            await anyio.sleep(0.05)
    assert _post(gateway, INIT, _bearer(gateway.tokens["sales"]))[0] == 200
    warning = next(
        json.loads(line) for line in gateway.server.read_stderr().splitlines() if "sources file not reloaded" in line
    )
    assert warning["level"] == "warning" and "not valid JSON" in warning["msg"]
    assert CANARY not in gateway.server.read_stderr()


def _sleeping_in_postgres() -> bool:
    """Whether the connector's session on the ``postgres`` database is inside pg_sleep (a named cursor's
    FETCH runs the query, so its text is not in pg_stat_activity; other tests use their own databases)."""
    with contextlib.closing(psycopg.connect(host="127.0.0.1", user="postgres", dbname="postgres")) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = 'postgres' "
            "AND application_name = 'acp-databases' AND wait_event = 'PgSleep'"
        ).fetchone()
    return bool(row and row[0])


def test_an_unsafe_or_invalid_sources_file_stops_the_start(tmp_path: Path) -> None:
    """Refused before listening, with the reason and the fix, and no traceback (ACP_SOURCES_FILE works too)."""
    path = tmp_path / "sources.json"
    path.write_text(json.dumps({"sources": [{"id": "x", "token_sha256": "ab" * 32, "password": CANARY}]}), "utf-8")
    for mode, needle in ((0o644, f"chmod 600 {path}"), (0o600, "unknown key(s) password")):
        path.chmod(mode)
        done = subprocess.run(
            [*module_command("databases"), "--http", "--port", "9"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={
                "PATH": os.environ["PATH"],
                "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
                "ACP_SOURCES_FILE": str(path),
            },
        )
        assert done.returncode == 2 and needle in done.stderr, done.stderr
        assert "Traceback" not in done.stderr and CANARY not in done.stderr
