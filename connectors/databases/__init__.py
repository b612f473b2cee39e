"""Databases ACP connector: read-only SQL over SQLite, DuckDB, PostgreSQL and MySQL/MariaDB,
with schema autocontext and, when the source allows it, appends from host tables.

The declaration a reader opens first: credentials, configuration, resources, blocks, tools.
"""

from __future__ import annotations

from typing import Any

from shared import CallContext, Connector, Cost, Credentials, Principal, Resources
from shared.access import config_properties

from . import resources
from .blocks import BLOCKS
from .engine import engine_for, translate_any
from .tools import DEFAULT_TIMEOUT_S, MAX_RESULT_BYTES, MAX_ROWS, TOOLS

__version__ = "0.2.0"


def _file_variant(kind: str, title: str, example: str) -> dict[str, Any]:
    return {
        "title": title,
        "type": "object",
        "properties": {
            "type": {"type": "string", "const": kind},
            "path": {
                "type": "string",
                "title": "Database file",
                "description": "Absolute path of the database file.",
                "examples": [example],
            },
        },
        "required": ["type", "path"],
    }


def _server_variant(kind: str, title: str, port: int, tls: dict[str, Any]) -> dict[str, Any]:
    return {
        "title": title,
        "type": "object",
        "properties": {
            "type": {"type": "string", "const": kind},
            "host": {"type": "string", "title": "Host", "examples": ["db.example.com"]},
            "port": {"type": "integer", "title": "Port", "default": port, "minimum": 1, "maximum": 65535},
            "user": {"type": "string", "title": "User", "description": "Prefer a read-only user (least privilege)."},
            "password": {"type": "string", "title": "Password", "writeOnly": True},
            "database": {"type": "string", "title": "Database"},
            **tls,
        },
        "required": ["type", "host", "user", "database"],
    }


def _dsn_variant(kind: str, title: str, example: str) -> dict[str, Any]:
    return {
        "title": title,
        "type": "object",
        "properties": {
            "type": {"type": "string", "const": kind},
            "dsn": {
                "type": "string",
                "title": "Connection string",
                "description": f"For example {example}. It holds the password, so it is stored as a secret.",
                "writeOnly": True,
            },
        },
        "required": ["type", "dsn"],
    }


_PG_TLS = {
    "sslmode": {
        "type": "string",
        "title": "TLS mode",
        "enum": ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"],
        "default": "prefer",
    },
    "sslrootcert": {"type": "string", "title": "CA certificate file", "description": "For verify-ca / verify-full."},
}
_MYSQL_TLS = {
    "ssl_mode": {
        "type": "string",
        "title": "TLS mode",
        "enum": ["disabled", "preferred", "required", "verify_ca", "verify_identity"],
        "default": "preferred",
    },
    "ssl_ca": {"type": "string", "title": "CA certificate file", "description": "For verify_ca / verify_identity."},
}

CREDENTIALS_SCHEMA = {
    "oneOf": [
        _file_variant("sqlite", "SQLite file", "/data/shop.sqlite"),
        _file_variant("duckdb", "DuckDB file", "/data/warehouse.duckdb"),
        _server_variant("postgres", "PostgreSQL", 5432, _PG_TLS),
        _dsn_variant("postgres_dsn", "PostgreSQL connection string", "postgresql://reader:…@db.example.com/shop"),
        _server_variant("mysql", "MySQL or MariaDB", 3306, _MYSQL_TLS),
        _dsn_variant("mysql_dsn", "MySQL or MariaDB connection string", "mysql://reader:…@db.example.com:3306/shop"),
    ]
}

CONFIG_SCHEMA = {
    "type": "object",
    "properties": {
        **config_properties("execute_sql", "insert_rows"),
        "hidden": {
            "type": "string",
            "title": "Hidden tables and columns",
            "description": 'JSON list of regexes matched (whole, ignoring case) against "table", "schema.table", '
            '"table.column" and "schema.table.column" (on SQLite and MySQL the database is the schema), for example '
            '["customers\\\\.email", ".*\\\\.ssn"]. Hidden data never reaches the model or the host, and queries '
            "that use it anywhere, under any name, are refused.",
            "contentMediaType": "application/json",
        },
        "allowed_functions": {
            "type": "string",
            "title": "Allowed functions",
            "description": "JSON list of function names that queries may call besides the built-in allow-list "
            'of analytics functions, for example ["my_udf", "analytics.score", "similarity"]: your own functions '
            "and extensions you trust. A name with a schema allows only that schema's function.",
            "contentMediaType": "application/json",
        },
        "statement_timeout_s": {
            "type": "integer",
            "title": "Statement timeout (s)",
            "description": "One deadline per execute_sql call, for the query and every fetch of its rows "
            "together: past it the query is stopped at the database and the call says so.",
            "default": DEFAULT_TIMEOUT_S,
            "minimum": 1,
            "maximum": 86400,
        },
    },
    "required": [],
}


def identify(credentials: dict[str, Any]) -> Principal:
    return engine_for(credentials).identify(credentials)


async def authenticate(credentials: dict[str, Any], ctx: CallContext) -> None:
    """Open (or reuse) a connection: proves the credentials and the database work."""
    from .access import with_connection

    engine = engine_for(credentials)
    await with_connection(ctx, engine.default_database(credentials), lambda conn: conn.databases())


CONNECTOR = Connector(
    id="databases",
    title="Databases",
    version=__version__,
    description="Read-only SQL over SQLite, DuckDB, PostgreSQL and MySQL/MariaDB, with schema, date ranges and "
    "frequent values as autocontext.",
    instructions=(
        "A relational database (SQLite, DuckDB, PostgreSQL or MySQL/MariaDB) holding the user's business data, "
        "queried with read-only SQL in the engine's dialect. The model sees a sample of each result; the host keeps "
        "the full table."
    ),
    credentials=Credentials(schema=CREDENTIALS_SCHEMA, identify=identify, authenticate=authenticate),
    resources=Resources(
        title="Database, schema or table",
        description="A database, optionally followed by .<schema> (PostgreSQL, DuckDB) and .<table>. On SQLite and "
        "MySQL two parts are <database>.<table>.",
        format="<database>[.<schema>][.<table>]",
        examples=("shop", "shop.orders"),
        separators=(".", "/"),
        levels=resources.LEVELS,
        normalize=resources.normalize,
        list=resources.list_resources,
        check=resources.check,
    ),
    tools=TOOLS,
    blocks=BLOCKS,
    config_schema=CONFIG_SCHEMA,
    cost=Cost(model="free", description="Queries run on your own database; there is no monetary cost per call."),
    autocontext_ttl_s=21600,
    translate_error=translate_any,
    open_world=False,
    max_rows=MAX_ROWS,
    max_result_bytes=MAX_RESULT_BYTES,
)
