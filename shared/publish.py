"""What a server publishes: the ACP capability (spec 4.2) and the tools of ``tools/list``.

:func:`capability` turns a declaration into ``capabilities.experimental.acp``;
:class:`ToolCatalog` closes each tool's input schema, adds ``resource_id`` and ``tables``
where the spec says (6.2, 8.7) and ``idempotency_key`` on writing tools, and builds the
MCP tool list in a stable order: the two reserved autocontext tools first, then the
connector's tools as declared, the same in every process (a changing order invalidates a
model's prompt cache). :func:`mcp_tool` builds one MCP tool with honest annotations and no
``outputSchema``; the bridge uses it for the tools it re-publishes. Nothing here needs a
running server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._autocontext import autocontext_data_schema, autocontext_description, autocontext_schema, resource_argument
from ._idempotency import IDEMPOTENCY_KEY, key_property
from .declaration import Connector, Tool
from .protocol import ACP_VERSION, TOOL_AUTOCONTEXT, TOOL_AUTOCONTEXT_DATA, JsonObject

if TYPE_CHECKING:
    import mcp_types as types

__all__ = ["ToolCatalog", "capability", "mcp_tool"]

IDEMPOTENT_RETRY = " To make a retry safe, pass idempotency_key: the same key and arguments never write twice."


def capability(connector: Connector) -> JsonObject:
    """``capabilities.experimental.acp`` of this connector (spec 4.2), keys in the spec's order."""
    c = connector
    defaults: JsonObject = {"row_limit": c.defaults.row_limit, "cost_limit_usd": c.defaults.cost_limit_usd}
    if c.defaults.field_limit is not None:
        defaults["field_limit"] = c.defaults.field_limit
    if c.defaults.tables is not None:
        defaults["tables"] = list(c.defaults.tables)
    if c.defaults.model_max_chars is not None:
        defaults["model_max_chars"] = c.defaults.model_max_chars
    resource: JsonObject = {}
    if c.resources.title:
        resource["title"] = c.resources.title
    resource.update({"description": c.resources.description, "format": c.resources.format})
    if c.resources.separators:
        resource["separators"] = list(c.resources.separators)
    resource["examples"] = list(c.resources.examples)
    if c.resources.levels:
        resource["levels"] = list(c.resources.levels)
    published: JsonObject = {
        "version": ACP_VERSION,
        "defaults": defaults,
        "credentials_schema": c.credentials.schema,
    }
    if c.config_schema is not None:
        published["config_schema"] = c.config_schema
    published.update(
        {
            "resource_id": resource,
            "autocontext": {"cache_ttl_s": c.autocontext_ttl_s, "delivery": list(c.delivery)},
            "cost": {"currency": "USD", "model": c.cost.model, "description": c.cost.description},
            "extraction_tools": c.extraction_tools,
        }
    )
    if c.table_catalog:
        published["table_catalog"] = [
            {k: v for k, v in vars(e).items() if v not in (None, False)} for e in c.table_catalog
        ]
    return published


def mcp_tool(
    name: str,
    description: str,
    input_schema: JsonObject,
    *,
    title: str | None = None,
    read_only: bool = True,
    destructive: bool = False,
    idempotent: bool | None = None,
    open_world: bool = True,
) -> types.Tool:
    """One MCP tool. Annotations tell the truth: idempotent defaults to read-only.

    It has no ``outputSchema``: a client that gets one validates every ``structuredContent``
    against it, and an ACP result has no fixed shape (each query's columns, one or several
    tables, autocontext attached or not, an error object), so no schema would hold exactly.
    """
    import mcp_types as types

    annotations = types.ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=read_only if idempotent is None else idempotent,
        open_world_hint=open_world,
    )
    return types.Tool(
        name=name, title=title, description=description, input_schema=input_schema, annotations=annotations
    )


class ToolCatalog:
    """The published tools of one connector, built once and cached."""

    def __init__(self, connector: Connector) -> None:
        self.connector = connector
        self._schemas: dict[str, JsonObject] = {}
        self._tools: list[types.Tool] | None = None

    def input_schema(self, tool: Tool) -> JsonObject:
        """The published input schema: closed, with resource_id and tables where the spec says, and
        an optional idempotency_key on a writing tool."""
        cached = self._schemas.get(tool.name)
        if cached is not None:
            return cached
        connector = self.connector
        properties = dict(tool.input_schema.get("properties", {}))
        if tool.requires_resource and connector.resources.used:
            properties = {"resource_id": resource_argument(connector), **properties}
        catalog = connector.catalog_for(tool)
        if catalog:
            listed = "; ".join(f"{e.name} ({e.title})" for e in catalog)
            properties["tables"] = {
                "type": "array",
                "items": {"type": "string", "enum": [e.name for e in catalog]},
                "uniqueItems": True,
                "description": "Datasets to extract. If omitted, the source defaults are used. "
                f"Request only what the analysis needs. Tables: {listed}.",
            }
        if not tool.read_only:
            properties[IDEMPOTENCY_KEY] = key_property()
        schema: JsonObject = {"type": "object", "properties": properties, "additionalProperties": False}
        if tool.input_schema.get("required"):
            schema["required"] = list(tool.input_schema["required"])
        self._schemas[tool.name] = schema
        return schema

    def tools(self) -> list[types.Tool]:
        """``tools/list``: the reserved autocontext tools, then the declared tools in order."""
        if self._tools is None:
            c = self.connector
            published, _ = autocontext_schema(c)
            reserved: dict[str, Any] = {"read_only": True, "idempotent": True}
            tools = [
                mcp_tool(
                    TOOL_AUTOCONTEXT,
                    autocontext_description(c),
                    published,
                    title="Autocontext",
                    open_world=c.open_world,
                    **reserved,
                ),
                mcp_tool(
                    TOOL_AUTOCONTEXT_DATA,
                    "Lists the autocontext blocks (id and what each contains) you can request from autocontext.",
                    autocontext_data_schema(c),
                    title="Autocontext blocks",
                    open_world=False,
                    **reserved,
                ),
            ]
            tools.extend(
                mcp_tool(
                    tool.name,
                    tool.description if tool.read_only else tool.description + IDEMPOTENT_RETRY,
                    self.input_schema(tool),
                    title=tool.title,
                    read_only=tool.read_only,
                    destructive=tool.destructive,
                    idempotent=tool.idempotent,
                    open_world=c.open_world,
                )
                for tool in c.tools
            )
            self._tools = tools
        return self._tools
