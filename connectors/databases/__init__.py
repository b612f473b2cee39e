"""Databases ACP connector: read-only SQL over SQLite files.

The declaration a reader opens first: credentials, resources, blocks and tools.
"""

from __future__ import annotations

from typing import Any

from shared import CallContext, Connector, Cost, Credentials, Principal, Resources

from . import resources, sqlite
from .blocks import BLOCKS
from .tools import EXECUTE_SQL

__version__ = "0.1.0"

CREDENTIALS_SCHEMA = {
    "title": "SQLite file",
    "type": "object",
    "properties": {
        "type": {"type": "string", "const": "sqlite"},
        "path": {
            "type": "string",
            "title": "Database file",
            "description": "Absolute path of the SQLite file. It is opened read-only.",
            "examples": ["/data/shop.sqlite"],
        },
    },
    "required": ["type", "path"],
}

CONFIG_SCHEMA = {
    "type": "object",
    "properties": {
        "statement_timeout_s": {
            "type": "integer",
            "title": "Statement timeout (s)",
            "description": "A query running longer is stopped by the engine.",
            "default": 300,
            "minimum": 1,
            "maximum": 86400,
        },
    },
    "required": [],
}


def identify(credentials: dict[str, Any]) -> Principal:
    path = str(credentials["path"])
    sqlite.validate_path(path)
    return Principal(identity=sqlite.identity(path))


async def authenticate(credentials: dict[str, Any], ctx: CallContext) -> None:
    """Open the file read-only and read its schema: proves it is a database we can read."""
    path = str(credentials["path"])

    def probe() -> None:
        with sqlite.opened(path, ctx.cancelled):
            pass

    await ctx.run_blocking(probe)


CONNECTOR = Connector(
    id="databases",
    title="Databases",
    version=__version__,
    description="Read-only SQL over relational databases (SQLite), with schema autocontext.",
    instructions=(
        "Databases ACP: a relational database (SQLite). Resources are <database> or <database>.<table>; "
        "the autocontext gives tables, columns, date ranges and frequent values."
    ),
    credentials=Credentials(schema=CREDENTIALS_SCHEMA, identify=identify, authenticate=authenticate),
    resources=Resources(
        title="Database or table",
        description="Database name (the file name without extension), optionally followed by .<table>.",
        format="<database>[.<table>]",
        examples=("shop", "shop.orders"),
        separators=(".", "/"),
        levels=resources.LEVELS,
        normalize=resources.normalize,
        list=resources.list_resources,
        check=resources.check,
    ),
    tools=(EXECUTE_SQL,),
    blocks=BLOCKS,
    config_schema=CONFIG_SCHEMA,
    cost=Cost(model="free", description="Queries run on your own database; there is no monetary cost per call."),
    autocontext_ttl_s=21600,
    translate_error=sqlite.translate,
    open_world=False,
)
