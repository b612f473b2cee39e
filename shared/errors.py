"""The one ACP exception hierarchy (spec 12.1).

::

    AcpError                         base; never raised directly
    ├── CostLimitExceeded            -32010  the estimate is above cost_limit_usd
    ├── CredentialsMissing           -32011  the tool needs credentials and there are none
    ├── CredentialsInvalid           -32012  the source (or the schema) rejects them
    ├── ResourceRequired             -32013  no resource_id and no default
    ├── ResourceNotFound             -32014  unknown resource or no access
    ├── UnknownBlock                 -32015  request_data names a block that does not exist
    ├── InvalidLimit                 -32016  row_limit / cost_limit_usd / field_limit / delivery limits
    ├── InvalidArguments             -32017  arguments, unknown tool, configuration
    ├── UpstreamError                -32018  the source failed; default for untyped exceptions
    ├── ReadOnlyViolation            -32019  a write where only reads are allowed
    ├── HostTablesUnsupported        -32020  acp/read_table needed, host_tables not declared
    ├── TableNotFound                -32021  the host cannot resolve that table_ref
    └── TableTruncated               -32022  the host only has a sample of that table

Connectors raise these (or let their single error-translation function turn vendor
exceptions into them); :func:`shared._runtime` maps them to tool results in one place.
Every ``message`` is written for the model or the person and says what to do next.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .protocol import ErrorPayload, JsonObject


class AcpError(Exception):
    """Base of every ACP error. ``message`` tells the reader the next step."""

    code: ClassVar[int] = -32018
    name: ClassVar[str] = "ACP_UPSTREAM_ERROR"

    def __init__(self, message: str, data: JsonObject | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data

    def payload(self) -> ErrorPayload:
        body: ErrorPayload = {"code": self.code, "name": self.name, "message": self.message}
        if self.data:
            body["data"] = self.data
        return body


class CostLimitExceeded(AcpError):
    code = -32010
    name = "ACP_COST_LIMIT_EXCEEDED"


class CredentialsMissing(AcpError):
    code = -32011
    name = "ACP_CREDENTIALS_MISSING"


class CredentialsInvalid(AcpError):
    code = -32012
    name = "ACP_CREDENTIALS_INVALID"


class ResourceRequired(AcpError):
    code = -32013
    name = "ACP_RESOURCE_REQUIRED"


class ResourceNotFound(AcpError):
    code = -32014
    name = "ACP_RESOURCE_NOT_FOUND"


class UnknownBlock(AcpError):
    code = -32015
    name = "ACP_UNKNOWN_BLOCK"


class InvalidLimit(AcpError):
    code = -32016
    name = "ACP_INVALID_LIMIT"


class InvalidArguments(AcpError):
    code = -32017
    name = "ACP_INVALID_ARGUMENTS"


class UpstreamError(AcpError):
    code = -32018
    name = "ACP_UPSTREAM_ERROR"


class ReadOnlyViolation(AcpError):
    code = -32019
    name = "ACP_READ_ONLY_VIOLATION"


class HostTablesUnsupported(AcpError):
    code = -32020
    name = "ACP_HOST_TABLES_UNSUPPORTED"


class TableNotFound(AcpError):
    code = -32021
    name = "ACP_TABLE_NOT_FOUND"


class TableTruncated(AcpError):
    code = -32022
    name = "ACP_TABLE_TRUNCATED"


ERRORS_BY_CODE: dict[int, type[AcpError]] = {
    cls.code: cls
    for cls in (
        CostLimitExceeded,
        CredentialsMissing,
        CredentialsInvalid,
        ResourceRequired,
        ResourceNotFound,
        UnknownBlock,
        InvalidLimit,
        InvalidArguments,
        UpstreamError,
        ReadOnlyViolation,
        HostTablesUnsupported,
        TableNotFound,
        TableTruncated,
    )
}


def error_from_code(code: int, message: str, data: Any = None) -> AcpError:
    """Rebuild a typed error from a wire code (used for ``acp/read_table`` answers)."""
    cls = ERRORS_BY_CODE.get(code, UpstreamError)
    return cls(message, data if isinstance(data, dict) else None)


CREDENTIALS_MISSING_MESSAGE = (
    "This source needs credentials and none were configured. Ask the user to add them to the "
    "source in the host (they travel through acp/configure or _meta.acp, never in tool arguments)."
)


def missing_extra(exc: ImportError, connector_id: str) -> UpstreamError:
    """The one answer to a vendor library missing on the server: what to install (a person's fix)."""
    missing = exc.name or str(exc)
    return UpstreamError(
        f"A library this connector needs is not installed on the server ({missing}). "
        f"Ask the administrator to run: pip install 'acp-connectors[{connector_id}]'"
    )


def timed_out(setting: str, narrow: str = "add filters, aggregate, or add LIMIT") -> UpstreamError:
    """The one message for a query its time limit stopped; ``setting`` names the limit's config key."""
    return UpstreamError(
        f"The query ran past {setting} and was stopped. Narrow it ({narrow}), or ask the user to raise {setting}."
    )
