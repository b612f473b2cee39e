"""ACP 1.0 wire constants and shapes (spec Appendix A).

Everything here is plain data: constants and ``TypedDict`` shapes of the JSON the core
sends and receives. Behaviour lives in the other modules.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

ACP_VERSION = "1.0"
ACP_KEY = "acp"  # key in capabilities.experimental and in _meta
METHOD_CONFIGURE = "acp/configure"
METHOD_READ_TABLE = "acp/read_table"
TOOL_AUTOCONTEXT = "autocontext"
TOOL_AUTOCONTEXT_DATA = "autocontext_data"
RESERVED_TOOLS = (TOOL_AUTOCONTEXT, TOOL_AUTOCONTEXT_DATA)

DATE_ANNOTATION = "x-acp-date"  # "start" | "end" | "template"
INPUT_ANNOTATION = "x-acp-input"
INPUT_TABLE_REF = "table_ref"

RESOURCE_SUGGESTIONS = 25
INLINE_MAX_BYTES = 5 * 1024 * 1024
MAX_ROW_LIMIT = 5000
MAX_FIELD_LIMIT = 200
DEFAULT_FIELD_LIMIT = 20
MODEL_ROWS_SINGLE = 50
MODEL_ROWS_MULTI = 10
MODEL_VIEW_MAX_VALUE_CHARS = 80
# Extension (spec 12.2 lets clients ignore unknown fields): the smallest model_max_chars budget, the
# characters of content[0].text, that still holds an extraction's notice, columns and a few rows.
MIN_MODEL_MAX_CHARS = 500
# Extension: each value in an extraction's sampled rows is cut to this many characters, ending in "…"
# (spec 8.2.1 does the same for model_view at 80). Dates, names, URLs and a few lines of SQL stay whole;
# a 1 MB cell no longer reaches the model. The full value stays in system_data.
MODEL_MAX_VALUE_CHARS = 500
# Under a model_max_chars budget, values are cut down to this many characters before any row is dropped:
# an ISO date-time with milliseconds and zone (29) and most names and ids stay whole.
MODEL_MIN_VALUE_CHARS = 32
RECENT_HALF_LIFE_S = 14 * 24 * 3600  # spec 6.3: exponential decay, 14-day half-life
RESOURCE_LIST_TTL_S = 600  # spec 6.3: the reference caches the listing 600 s

JsonValue: TypeAlias = Any
JsonObject: TypeAlias = dict[str, Any]

AutocontextDelivery = Literal["inject", "suggest", "on_first_call"]
CostModel = Literal["free", "per_query", "per_byte", "per_row"]
ColumnType = Literal["string", "integer", "number", "boolean", "date", "datetime", "json"]
ColumnRole = Literal["dimension", "metric", "attribute"]
ResultKind = Literal["autocontext", "autocontext_data", "extraction", "info", "error"]
Sampling = Literal["head", "spread"]

COLUMN_TYPES: tuple[ColumnType, ...] = ("string", "integer", "number", "boolean", "date", "datetime", "json")


class Header(TypedDict):
    """A typed column of ``system_data`` (spec 8.6)."""

    name: str
    type: ColumnType
    role: NotRequired[ColumnRole]
    description: NotRequired[str]


class ResourceSummary(TypedDict):
    """One entry of the resource suggestions (spec 6.3)."""

    resource_id: str
    name: str
    description: NotRequired[str]
    group: NotRequired[str]
    recent: NotRequired[bool]
    configured: NotRequired[bool]


class BlockDescriptor(TypedDict):
    id: str
    description: str
    applies_to: NotRequired[list[str]]


class BlockResult(TypedDict):
    id: str
    description: str
    data: NotRequired[JsonValue]
    error: NotRequired[str]


class ErrorPayload(TypedDict):
    code: int
    name: str
    message: str
    data: NotRequired[JsonObject]
