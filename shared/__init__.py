"""The ACP 1.0 protocol core shared by every connector.

A connector declares a :class:`Connector`; :func:`shared.cli.main` serves it. The public
surface is what this module exports; everything else is private to the core.
"""

from .context import CallContext, HostTableData
from .declaration import (
    ANONYMOUS,
    Block,
    CatalogEntry,
    Connector,
    Cost,
    Credentials,
    Defaults,
    Principal,
    ResourceRef,
    Resources,
    Tool,
    table_ref_input,
)
from .errors import (
    AcpError,
    CostLimitExceeded,
    CredentialsInvalid,
    CredentialsMissing,
    HostTablesUnsupported,
    InvalidArguments,
    InvalidLimit,
    ReadOnlyViolation,
    ResourceNotFound,
    ResourceRequired,
    TableNotFound,
    TableTruncated,
    UnknownBlock,
    UpstreamError,
)
from .protocol import ACP_VERSION, ColumnType, Header, JsonObject, ResourceSummary
from .results import Extraction, Info
from .tables import CallCancelled, ModelView, TableData, TableWriter

__all__ = [
    "ACP_VERSION",
    "ANONYMOUS",
    "AcpError",
    "Block",
    "CallCancelled",
    "CallContext",
    "CatalogEntry",
    "ColumnType",
    "Connector",
    "Cost",
    "CostLimitExceeded",
    "Credentials",
    "CredentialsInvalid",
    "CredentialsMissing",
    "Defaults",
    "Extraction",
    "Header",
    "HostTableData",
    "HostTablesUnsupported",
    "Info",
    "InvalidArguments",
    "InvalidLimit",
    "JsonObject",
    "ModelView",
    "Principal",
    "ReadOnlyViolation",
    "ResourceNotFound",
    "ResourceRef",
    "ResourceRequired",
    "ResourceSummary",
    "Resources",
    "TableData",
    "TableNotFound",
    "TableTruncated",
    "TableWriter",
    "Tool",
    "UnknownBlock",
    "UpstreamError",
    "table_ref_input",
]
