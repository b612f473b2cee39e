"""The declaration a connector makes; the core does the rest (spec 14.1).

A connector is a :class:`Connector` value: identity, credentials, resources, tools,
autocontext blocks and cost. Nothing here performs I/O.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from .errors import AcpError
from .protocol import (
    INPUT_ANNOTATION,
    INPUT_TABLE_REF,
    AutocontextDelivery,
    CostModel,
    JsonObject,
    JsonValue,
    ResourceSummary,
)

if TYPE_CHECKING:
    from .context import CallContext
    from .results import Extraction, Info

ToolKind = Literal["extraction", "info"]
MAX_ROWS_KEY = "max_rows"  # the config key of the extraction cap (Connector.max_rows)
MAX_RESULT_BYTES_KEY = "max_result_bytes"  # the config key of the size cap (Connector.max_result_bytes)


def max_rows_property(default: int) -> JsonObject:
    """The ``max_rows`` config property published for a connector's extraction cap."""
    return {
        "type": "integer",
        "title": "Maximum rows per extraction",
        "description": "An extraction stops here and says so; the table keeps the rows up to the cap.",
        "default": default,
        "minimum": 1,
    }


def max_result_bytes_property(default: int) -> JsonObject:
    """The ``max_result_bytes`` config property published for a connector's extraction size cap."""
    return {
        "type": "integer",
        "title": "Maximum result size per extraction (bytes)",
        "description": "An extraction whose table (as JSON) reaches this size stops there and says so, before "
        "memory or disk become the limit; the table keeps the rows up to the cap.",
        "default": default,
        "minimum": 1,
    }


@dataclass(frozen=True)
class ResourceRef:
    """A normalized ``resource_id`` and its level in the source's hierarchy.

    ``today`` is the resource's own calendar day, for a source whose resources keep their days
    in their own time zone (a GA4 property): :attr:`Resources.resolve` sets it, the date
    arguments of the call then resolve in it (spec 8.9), and it is ``CallContext.today``. It
    plays no part in equality: one resource is one resource whatever the day.
    """

    id: str
    level: str
    parts: tuple[str, ...] = ()
    today: dt.date | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Principal:
    """Who the credentials are, without the secret (spec 7.4, 10.1).

    ``identity`` keys caches and recency: a service-account email and key id, an OAuth
    client and user, ``user@host/db``, a file's real path. ``secrets`` are the strings
    the redactor must scrub (passwords, keys, tokens, a DSN's password).
    """

    identity: str
    secrets: tuple[str, ...] = ()


ANONYMOUS = Principal("anonymous")

SOURCE_REF = ResourceRef(id="", level="source")
"""What a block of a source without remote resources (spec 6.1, ``Resources.none()``) is fetched for."""


@dataclass(frozen=True)
class Credentials:
    """How a source authenticates.

    ``identify`` validates the (schema-checked) credentials and derives the principal
    without I/O. ``authenticate`` proves they work against the source; the core calls it
    before serving cached autocontext to credentials not yet proven in this process.
    """

    schema: JsonObject
    identify: Callable[[JsonObject], Principal]
    authenticate: Callable[[JsonObject, CallContext], Awaitable[None]] | None = None

    @property
    def required(self) -> bool:
        return bool(self.schema.get("oneOf") or self.schema.get("properties"))

    @classmethod
    def none(cls) -> Credentials:
        """A source that needs no credentials (spec 4.2)."""
        return cls(schema={"type": "object", "properties": {}}, identify=lambda _: ANONYMOUS)


@dataclass(frozen=True)
class Resources:
    """``resource_id`` metadata (spec 4.2, 6) and the functions behind it.

    ``normalize`` is syntactic (no I/O): it accepts reasonable variants and returns the
    canonical id and level. It also gets the call's credentials, or None when there are
    none, for sources whose id shape depends on the kind of account (a database engine).
    ``list`` returns every resource the credentials can reach, in the source's order; the
    core ranks the 25 suggestions. ``check`` verifies that a resource exists before
    autocontext runs its blocks.

    ``resolve`` is for sources whose canonical id depends on what the credentials can see
    (Search Console: ``example.com`` is ``sc-domain:example.com`` when that property exists,
    a page URL belongs to the longest URL-prefix property that contains it). It may do I/O:
    it gets the normalized ref and the call's context, and returns the ref the source
    knows, or raises ``ResourceNotFound`` naming the closest ones. The core calls it before
    a tool runs and before autocontext runs its blocks, and everything after it (the
    tool, ``system_info.resource_id``, caches, ``on_first_call``) sees its answer. A ref
    returned with ``today`` set makes the call's date arguments and ``CallContext.today``
    follow the resource's own calendar.
    """

    description: str
    format: str
    examples: tuple[str, ...]
    title: str | None = None
    separators: tuple[str, ...] = ()
    levels: tuple[str, ...] = ()
    normalize: Callable[[str, JsonObject | None], ResourceRef] | None = None
    list: Callable[[CallContext], Awaitable[Sequence[ResourceSummary]]] | None = None
    check: Callable[[ResourceRef, CallContext], Awaitable[None]] | None = None
    resolve: Callable[[ResourceRef, CallContext], Awaitable[ResourceRef]] | None = None

    @property
    def used(self) -> bool:
        return self.format != "none"

    @classmethod
    def none(cls, description: str = "Not used: this source works on host tables.") -> Resources:
        """No remote resource (spec 6.1): ``format: "none"``, no examples."""
        return cls(description=description, format="none", examples=())


@dataclass(frozen=True)
class Cost:
    model: CostModel = "free"
    description: str = "No monetary cost per call."


@dataclass(frozen=True)
class Defaults:
    row_limit: int = 25
    cost_limit_usd: float = 0.0
    field_limit: int | None = None
    tables: tuple[str, ...] | None = None
    model_max_chars: int | None = None  # extension: a character budget for content[0].text


@dataclass(frozen=True)
class CatalogEntry:
    """A table that multi-table tools can produce (spec 8.7)."""

    name: str
    title: str
    description: str | None = None
    group: str | None = None
    required: bool = False
    tools: tuple[str, ...] | None = None


ToolRun = Callable[[JsonObject, "CallContext"], Awaitable["Extraction | Info"]]
BlockFetch = Callable[[ResourceRef, "CallContext"], Awaitable[JsonValue]]


@dataclass(frozen=True)
class Tool:
    """A tool. ``input_schema`` holds ``properties`` and ``required``; the core closes it
    (``additionalProperties: false``) and adds ``resource_id`` and ``tables`` as the spec says.

    Annotations tell the truth: a tool is read-only unless ``read_only=False``.

    ``today`` gives the date in the calendar the tool's source keeps its days in, which
    resolves ``today``, ``yesterday`` and ``NdaysAgo`` in its date arguments (spec 8.9) and is
    ``CallContext.today``; None: the server's local date. Search Console's days are Pacific Time.
    """

    name: str
    description: str
    run: ToolRun
    kind: ToolKind = "info"
    title: str | None = None
    input_schema: JsonObject = field(default_factory=lambda: {"properties": {}})
    requires_resource: bool = True
    requires_credentials: bool = True
    levels: tuple[str, ...] | None = None
    read_only: bool = True
    destructive: bool = False
    idempotent: bool | None = None
    validation_schema: JsonObject | None = None  # only the core's reserved tools need it
    today: Callable[[], dt.date] | None = None


def table_ref_input(description: str = "Id of a host dataset or report. The host resolves the rows.") -> JsonObject:
    """The input schema of a tool that reads one host table (spec 8.8): a required ``table_ref``
    the host resolves through ``acp/read_table``; the rows never travel in the arguments."""
    return {
        "properties": {"table_ref": {"type": "string", INPUT_ANNOTATION: INPUT_TABLE_REF, "description": description}},
        "required": ["table_ref"],
    }


@dataclass(frozen=True)
class Block:
    """An autocontext block (spec 7.1): stable id, what it contains, where it applies, its TTL."""

    id: str
    description: str
    fetch: BlockFetch
    applies_to: tuple[str, ...] | None = None
    ttl_s: int | None = None


@dataclass(frozen=True)
class Connector:
    """Everything the core needs to serve one ACP source.

    ``max_rows`` declares an extraction cap: the core adds it to ``config_schema`` as the
    ``max_rows`` property with this default (so a user can change it per source), and every
    table of a call (``ctx.table()``) stops at the effective value and says so.
    ``max_result_bytes`` does the same for the size of a table (its JSON bytes).
    """

    id: str
    title: str
    version: str
    description: str
    instructions: str
    credentials: Credentials
    resources: Resources
    tools: tuple[Tool, ...]
    blocks: tuple[Block, ...] = ()
    config_schema: JsonObject | None = None
    defaults: Defaults = Defaults()
    cost: Cost = Cost()
    autocontext_ttl_s: int = 21600
    delivery: tuple[AutocontextDelivery, ...] = ("inject", "suggest", "on_first_call")
    table_catalog: tuple[CatalogEntry, ...] = ()
    translate_error: Callable[[BaseException], AcpError | None] | None = None
    open_world: bool = True
    block_timeout_s: float = 30.0
    max_rows: int | None = None
    max_result_bytes: int | None = None

    def __post_init__(self) -> None:
        # The one definition of each cap's setting: its default reaches ctx.config like any other.
        caps: JsonObject = {}
        if self.max_rows is not None:
            caps[MAX_ROWS_KEY] = max_rows_property(self.max_rows)
        if self.max_result_bytes is not None:
            caps[MAX_RESULT_BYTES_KEY] = max_result_bytes_property(self.max_result_bytes)
        if caps:
            schema = self.config_schema or {"type": "object", "properties": {}, "required": []}
            properties = {**schema.get("properties", {}), **caps}
            object.__setattr__(self, "config_schema", {**schema, "properties": properties})

    @property
    def extraction_tools(self) -> list[str]:
        return [t.name for t in self.tools if t.kind == "extraction"]

    def catalog_for(self, tool: Tool) -> list[CatalogEntry]:
        """Catalog entries a tool produces; entries without ``tools`` cover every extraction tool."""
        return [
            e
            for e in self.table_catalog
            if (tool.name in e.tools if e.tools is not None else tool.kind == "extraction")
        ]
