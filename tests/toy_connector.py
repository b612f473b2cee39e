"""A test-only connector that exercises every part of the core the real connectors do not
use yet: credential variants with login annotations, many resources, failing and slow
blocks, date-pair tools, multi-table results with a catalog and model views, host tables,
artifacts, tools without resources or credentials, cancellation and untyped failures.

The tests serve it in process (``AcpHost.in_process``); run it as a server with
``python tests/toy_connector.py``. Its ``TOY_STATE_DIR`` environment variable names a folder
where it records what it did (block fetches, cancellations), so black-box tests can check
effects at the source; ``TOY_SLOW_BLOCK_S`` makes the ``slow`` block take that long. It has
a conformance profile (``tests/conformance/profiles.py``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import sys
import threading
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

from shared import (
    Block,
    CallContext,
    CatalogEntry,
    Connector,
    Cost,
    Credentials,
    CredentialsInvalid,
    Defaults,
    Extraction,
    Info,
    InvalidArguments,
    ModelView,
    Principal,
    ResourceNotFound,
    ResourceRef,
    Resources,
    ResourceSummary,
    Tool,
    UpstreamError,
)

COMMAND = [sys.executable, str(Path(__file__).resolve())]
ACCOUNTS = 60
TEST_CREDENTIALS = {"type": "api_key", "account": "team-a", "api_key": "toy-key-0123456789"}
BIG_INT = 2**63 - 7
HUGE_INT = 2**70 + 1
EXACT_DECIMAL = Decimal("12345678901234567.123456789")


def _state(name: str) -> Path | None:
    folder = os.environ.get("TOY_STATE_DIR")
    return Path(folder) / name if folder else None


def _record(name: str, line: str) -> None:
    path = _state(name)
    if path is not None:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")


CREDENTIALS_SCHEMA = {
    "oneOf": [
        {
            "title": "API key",
            "type": "object",
            "properties": {
                "type": {"type": "string", "const": "api_key"},
                "account": {"type": "string", "title": "Account"},
                "api_key": {"type": "string", "title": "API key", "writeOnly": True},
            },
            "required": ["type", "account", "api_key"],
        },
        {
            "title": "Portal login",
            "type": "object",
            "required": ["type", "email"],
            "x-acp-login": {"provider": "analytika", "scopes": ["toy.readonly"]},
            "properties": {
                "type": {"type": "string", "const": "oauth"},
                "email": {"type": "string", "title": "Account", "x-acp-filled": True},
                "access_token": {"type": "string", "title": "Token", "writeOnly": True, "x-acp-filled": True},
            },
        },
    ]
}


def _secret(credentials: dict[str, Any]) -> str:
    return str(credentials.get("api_key") or credentials.get("access_token") or "")


def key_fingerprint(credentials: dict[str, Any]) -> str:
    """Names the secret a call runs with without revealing it: isolation tests compare it per session."""
    return hashlib.sha256(_secret(credentials).encode()).hexdigest()[:8]


def _account(credentials: dict[str, Any]) -> str:
    return str(credentials.get("account") or credentials.get("email") or "?")


def identify(credentials: dict[str, Any]) -> Principal:
    if credentials["type"] == "api_key":
        return Principal(identity=f"toy:{credentials['account']}", secrets=(str(credentials["api_key"]),))
    return Principal(identity=f"toy-oauth:{credentials['email']}", secrets=(str(credentials.get("access_token")),))


async def authenticate(credentials: dict[str, Any], ctx: CallContext) -> None:
    _record("authenticate.log", _account(credentials))
    if _secret(credentials).startswith("bad"):
        raise CredentialsInvalid("The toy source rejected these credentials. Ask the user to re-enter the API key.")


def normalize(text: str, credentials: dict[str, Any] | None = None) -> ResourceRef:
    cleaned = text.strip().strip("`").replace("/", ".")
    if cleaned.startswith("accounts."):
        cleaned = cleaned[len("accounts.") :]
    parts = cleaned.split(".")
    if not parts[0].startswith("acc_") or len(parts) > 2 or not all(parts):
        raise InvalidArguments("Invalid resource_id. Use acc_<n> or acc_<n>.<segment>, like acc_1 or acc_1.web.")
    return ResourceRef(id=cleaned, level="account" if len(parts) == 1 else "segment", parts=tuple(parts))


async def list_resources(ctx: CallContext) -> list[ResourceSummary]:
    _record("list.log", "listed")
    return [
        {"resource_id": f"acc_{n}", "name": f"Account {n}", "group": "Group A" if n % 2 else "Group B"}
        for n in range(1, ACCOUNTS + 1)
    ]


async def check(ref: ResourceRef, ctx: CallContext) -> None:
    number = ref.parts[0].removeprefix("acc_")
    if not number.isdigit() or not 1 <= int(number) <= ACCOUNTS:
        raise ResourceNotFound(f"No account '{ref.parts[0]}'. Call autocontext without arguments to list them.")


async def fetch_fields(ref: ResourceRef, ctx: CallContext) -> Any:
    _record("fields.log", ref.id)
    # Each account has a field of its own, so a block cached for one identity is recognisable in another.
    owner = {"name": "account", "type": "string", "description": f"Rows of {_account(ctx.require_credentials())}."}
    return [{"name": "sessions", "type": "integer"}, {"name": "revenue", "type": "number"}, owner]


async def fetch_slow(ref: ResourceRef, ctx: CallContext) -> Any:
    # Slow only when a test asks for it (TOY_SLOW_BLOCK_S), so that every other autocontext
    # call does not wait out the block budget.
    delay = float(os.environ.get("TOY_SLOW_BLOCK_S") or 0)
    await ctx.run_blocking(lambda: time.sleep(delay))
    return {"slept_s": delay}


async def fetch_broken(ref: ResourceRef, ctx: CallContext) -> Any:
    raise UpstreamError("The toy API failed for this block (503). The other blocks are fine.")


async def fetch_segment(ref: ResourceRef, ctx: CallContext) -> Any:
    return {"segment": ref.parts[1]}


def _rows(count: int, start: dt.date, key: str) -> list[dict[str, Any]]:
    return [
        {
            "date": (start + dt.timedelta(days=i % 30)).isoformat(),
            "channel": ("Organic", "Paid", "Direct")[i % 3],
            "sessions": i * 10,
            "revenue": Decimal("0.10") * i,
            "key": key,
        }
        for i in range(count)
    ]


async def report(arguments: dict[str, Any], ctx: CallContext) -> Extraction:
    count = int(arguments.get("rows", 40))
    start = dt.date.fromisoformat(arguments["start_date"])

    def build() -> Any:
        writer = ctx.table(
            columns=[
                {"name": "date", "type": "date", "role": "dimension"},
                {"name": "channel", "type": "string", "role": "dimension"},
                {"name": "sessions", "type": "integer", "role": "metric"},
                {"name": "revenue", "type": "number", "role": "metric"},
                {"name": "key", "type": "string", "role": "dimension"},
            ]
        )
        # The rows name the credential that read them, so a row served to another session shows.
        writer.extend(_rows(count, start, key_fingerprint(ctx.require_credentials())))
        return writer.finish()

    table = await ctx.run_blocking(build)
    return Extraction(
        tables=[table],
        description=f"Toy report of {ctx.require_resource().id}. Metrics: sessions, revenue. "
        "Dimensions: date, channel, key.",
        totals={"sessions": sum(i * 10 for i in range(count))},
        extra={"quota": {"used": 1}},
        applied_arguments={"rows": count},
        source={"api": "toy.report"},
    )


async def values(arguments: dict[str, Any], ctx: CallContext) -> Extraction:
    """Cells that test exactness: 64-bit and larger integers, long decimals, naive and aware times."""

    def build() -> Any:
        writer = ctx.table()
        writer.append(
            {
                "big": BIG_INT,
                "huge": HUGE_INT,
                "exact": EXACT_DECIMAL,
                "naive": dt.datetime(2026, 9, 1, 10, 15, 0),
                "aware": dt.datetime(2026, 9, 1, 12, 15, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))),
                "day": dt.date(2026, 9, 1),
                "blob": b"\x00\x01binary",
                "doc": {"a": [1, 2]},
            }
        )
        return writer.finish()

    table = await ctx.run_blocking(build)
    return Extraction(tables=[table], description="Toy cells with exact values.")


def wide_value(row: int, column: int, width: int) -> str:
    """The text of one cell of the ``wide`` tool: its row and column, then words up to ``width``."""
    head = f"r{row}c{column} "
    return head + ("lorem ipsum dolor sit amet " * (width // 27 + 1))[: max(width - len(head), 0)]


async def wide(arguments: dict[str, Any], ctx: CallContext) -> Extraction:
    """``columns`` text columns of ``width`` characters: what the model budget and the value cap are for."""
    rows, columns, width = (int(arguments.get(k, d)) for k, d in (("rows", 25), ("columns", 40), ("width", 2000)))

    def build() -> Any:
        writer = ctx.table()
        writer.extend({f"text_{c:02d}": wide_value(r, c, width) for c in range(columns)} for r in range(rows))
        return writer.finish()

    table = await ctx.run_blocking(build)
    return Extraction(tables=[table], description=f"Toy wide table: {columns} text columns of {width} characters.")


def _browse_tables(ctx: CallContext) -> list[Any]:
    hits = ctx.table(
        "hits",
        title="Hits",
        model_view=ModelView(fields=("en", "dl", "long", "params", "missing"), max_value_chars=20),
    )
    hits.extend(
        {
            "en": "page_view" if i % 2 else "click",
            "dl": f"https://shop.example/p/{i}",
            "long": "x" * 100,
            "params": {"k": i},
            "empty": "",
            "idx": i,
        }
        for i in range(60)
    )
    cookies = ctx.table("cookies", title="Cookies")
    cookies.extend({"name": f"c{i}", "value": str(i)} for i in range(9))
    network = ctx.table("network", title="Network")
    network.extend({"url": f"/r/{i}", "status": 200} for i in range(3))
    summary = ctx.table("summary", title="Summary", primary=True)
    summary.append({"pages": 1, "hits": 60})
    return [hits.finish(), cookies.finish(), network.finish(), summary.finish()]


async def browse(arguments: dict[str, Any], ctx: CallContext) -> Extraction:
    _record("browse.log", ",".join(ctx.tables_selected or []))
    tables = await ctx.run_blocking(lambda: _browse_tables(ctx))
    return Extraction(
        tables=tables,
        description="Toy browser capture of https://shop.example/.",
        manifest={"pages": [{"page_index": 0, "url": "https://shop.example/"}]},
        multi=True,
    )


async def merge_table(arguments: dict[str, Any], ctx: CallContext) -> Info:
    table = await ctx.read_table(arguments["table_ref"])
    column = arguments["column"]
    total = sum(row.get(column) or 0 for row in table.rows)
    return Info(
        data={"ref": table.ref, "rows": len(table.rows), "columns": [h["name"] for h in table.headers], "sum": total}
    )


async def screenshot(arguments: dict[str, Any], ctx: CallContext) -> Info:
    return Info(data={"screenshot_path": "/tmp/toy-shot.png", "pdf_path": "/tmp/toy.pdf", "note": "artifacts"})


# The smallest valid PNG: a 1x1 transparent pixel.
TINY_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000100e5270de40000000049454e44ae426082"
)


async def chart(arguments: dict[str, Any], ctx: CallContext) -> Extraction:
    """An extraction with a local artifact (spec 8.10): one row and a PNG written with ``ctx.artifact``."""

    def build() -> tuple[Any, Path]:
        path, handle = ctx.artifact(".png")
        with handle:
            handle.write(TINY_PNG)
        writer = ctx.table(columns=[{"name": "x", "type": "integer"}])
        writer.extend([{"x": 1}])
        return writer.finish(), path

    table, path = await ctx.run_blocking(build)
    return Extraction(tables=[table], description="Toy chart.", screenshot_path=path)


async def sleep(arguments: dict[str, Any], ctx: CallContext) -> Extraction:
    seconds = float(arguments["seconds"])
    stop = threading.Event()

    def work() -> Any:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if stop.is_set():
                _record("cancel.log", f"stopped at source after cancel ({ctx.call_id})")
                raise UpstreamError("stopped")
            time.sleep(0.01)
        writer = ctx.table()
        writer.append({"slept": seconds})
        return writer.finish()

    table = await ctx.run_blocking(work, cancel=stop.set)
    return Extraction(tables=[table], description="Toy sleep.")


async def stream(arguments: dict[str, Any], ctx: CallContext) -> Extraction:
    """Thinks for ``wait_s`` without a row (a long aggregation), then streams ``rows`` rows in
    batches of 1000, ``pause_s`` apart (a cursor fetching over a slow network)."""
    wait_s, pause_s, count = float(arguments.get("wait_s", 0)), float(arguments.get("pause_s", 0)), arguments["rows"]

    def work() -> Any:
        time.sleep(wait_s)
        writer = ctx.table(columns=[{"name": "n", "type": "integer"}, {"name": "label", "type": "string"}])
        for start in range(0, count, 1000):
            writer.extend([(n, f"row {n}") for n in range(start, min(start + 1000, count))])
            time.sleep(pause_s)
        return writer.finish()

    table = await ctx.run_blocking(work)
    return Extraction(tables=[table], description="Toy stream of numbered rows.")


async def tally(arguments: dict[str, Any], ctx: CallContext) -> Info:
    """Counts its calls per conversation and reports progress while it works."""
    steps = int(arguments.get("steps", 1))
    ctx.conversation["calls"] = ctx.conversation.get("calls", 0) + 1

    def work() -> None:
        for step in range(1, steps + 1):
            time.sleep(0.3)  # longer than the progress throttle, so each step is reported
            ctx.progress(step, steps, f"step {step} of {steps}")

    await ctx.run_blocking(work)
    return Info(data={"calls": ctx.conversation["calls"]})


async def crash(arguments: dict[str, Any], ctx: CallContext) -> Info:
    secret = str((ctx.credentials or {}).get("api_key", ""))
    raise RuntimeError(f"driver exploded while using key {secret} at line 3")


async def echo_config(arguments: dict[str, Any], ctx: CallContext) -> Info:
    return Info(data={"config": ctx.config, "row_limit": ctx.settings.row_limit})


async def whoami(arguments: dict[str, Any], ctx: CallContext) -> Info:
    principal = ctx.principal
    return Info(
        data={
            "identity": principal.identity if principal else None,
            "key": key_fingerprint(ctx.require_credentials()),
            "row_limit": ctx.settings.row_limit,
        }
    )


async def open_url(arguments: dict[str, Any], ctx: CallContext) -> Info:
    return Info(data={"opened": arguments["url"]})


TOOLS = (
    Tool(
        name="report",
        description="Toy report by date and channel.",
        kind="extraction",
        run=report,
        input_schema={
            "properties": {
                "start_date": {"type": "string", "x-acp-date": "start", "description": "Start date."},
                "end_date": {"type": "string", "x-acp-date": "end", "description": "End date."},
                "rows": {"type": "integer", "minimum": 0, "maximum": 100000},
            },
            "required": ["start_date", "end_date"],
        },
    ),
    Tool(name="values", description="Toy exact values.", kind="extraction", run=values),
    Tool(name="browse", description="Toy browser capture.", kind="extraction", run=browse, requires_resource=False),
    Tool(
        name="merge_table",
        description="Sums a column of a host table.",
        run=merge_table,
        requires_resource=False,
        requires_credentials=False,
        input_schema={
            "properties": {
                "table_ref": {"type": "string", "x-acp-input": "table_ref", "description": "Host dataset id."},
                "column": {"type": "string"},
            },
            "required": ["table_ref", "column"],
        },
    ),
    Tool(
        name="screenshot",
        description="Takes a toy screenshot.",
        run=screenshot,
        requires_resource=False,
        requires_credentials=False,
    ),
    Tool(
        name="chart",
        description="A one-row extraction with a chart.",
        kind="extraction",
        run=chart,
        requires_resource=False,
        requires_credentials=False,
    ),
    Tool(
        name="sleep",
        description="Sleeps at the source.",
        kind="extraction",
        run=sleep,
        input_schema={"properties": {"seconds": {"type": "number"}}, "required": ["seconds"]},
    ),
    Tool(
        name="stream",
        description="Waits, then streams numbered rows in batches.",
        kind="extraction",
        run=stream,
        requires_resource=False,
        requires_credentials=False,
        input_schema={
            "properties": {
                "rows": {"type": "integer", "minimum": 0, "maximum": 2000000},
                "wait_s": {"type": "number", "minimum": 0},
                "pause_s": {"type": "number", "minimum": 0},
            },
            "required": ["rows"],
        },
    ),
    Tool(name="crash", description="Fails with an untyped exception.", run=crash, requires_resource=False),
    Tool(
        name="wide",
        description="A toy table of wide text columns.",
        kind="extraction",
        run=wide,
        requires_resource=False,
        requires_credentials=False,
        input_schema={
            "properties": {
                "rows": {"type": "integer", "minimum": 0, "maximum": 5000},
                "columns": {"type": "integer", "minimum": 1, "maximum": 200},
                "width": {"type": "integer", "minimum": 0, "maximum": 2000000},
            }
        },
    ),
    Tool(
        name="tally",
        description="Counts its calls in this conversation; reports progress.",
        run=tally,
        requires_resource=False,
        input_schema={"properties": {"steps": {"type": "integer", "minimum": 1, "maximum": 10}}},
    ),
    Tool(
        name="open_url",
        description="Opens a toy document URL.",
        run=open_url,
        requires_resource=False,
        requires_credentials=False,
        input_schema={
            "properties": {"url": {"type": "string", "x-acp-url": ["^https?://docs\\.toy\\.example/"]}},
            "required": ["url"],
        },
    ),
    Tool(
        name="echo_config",
        description="Echoes the effective configuration.",
        run=echo_config,
        requires_resource=False,
        requires_credentials=False,
    ),
    Tool(name="whoami", description="Says whose credentials the call runs with.", run=whoami, requires_resource=False),
    Tool(
        name="segment_report",
        description="Only for segments.",
        kind="info",
        run=screenshot,
        levels=("segment",),
    ),
)

BLOCKS = (
    Block(id="fields", description="Available fields with their type.", fetch=fetch_fields, ttl_s=3600),
    Block(id="broken", description="A block whose API always fails.", fetch=fetch_broken),
    Block(id="slow", description="A block as slow as TOY_SLOW_BLOCK_S says.", fetch=fetch_slow),
    Block(id="segment_info", description="Only for segments.", fetch=fetch_segment, applies_to=("segment",)),
)

CONNECTOR = Connector(
    id="toy",
    title="Toy",
    version="9.9.9",
    description="Test-only connector.",
    instructions="Toy ACP: a fake analytics source for the core's tests.",
    credentials=Credentials(schema=CREDENTIALS_SCHEMA, identify=identify, authenticate=authenticate),
    resources=Resources(
        title="Account",
        description="Toy account id, optionally with .<segment>.",
        format="acc_<n>[.<segment>]",
        examples=("acc_1", "acc_1.web"),
        separators=(".", "/"),
        levels=("account", "segment"),
        normalize=normalize,
        list=list_resources,
        check=check,
    ),
    tools=TOOLS,
    blocks=BLOCKS,
    config_schema={
        "type": "object",
        "properties": {
            "region": {"type": "string", "title": "Region", "enum": ["eu", "us"], "default": "eu"},
            "rules": {"type": "string", "title": "Rules", "contentMediaType": "application/json"},
        },
    },
    defaults=Defaults(row_limit=25, cost_limit_usd=0, field_limit=8, tables=("hits",)),
    cost=Cost(model="free", description="Free."),
    table_catalog=(
        CatalogEntry(name="hits", title="Hits", group="Events", tools=("browse",)),
        CatalogEntry(name="cookies", title="Cookies", group="Storage", tools=("browse",)),
        CatalogEntry(name="network", title="Network", group="Network", required=True, tools=("browse",)),
    ),
    block_timeout_s=1.0,
)

if __name__ == "__main__":
    from shared.cli import main

    main(CONNECTOR)
