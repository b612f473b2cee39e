"""Facts the tests check against, copied from the spec rather than from the core's code."""

from __future__ import annotations

# Spec 8.4: the fields system_info carries on every response, errors included.
SYSTEM_INFO_REQUIRED = (
    "acp",
    "acp_version",
    "tool",
    "kind",
    "resource_id",
    "arguments",
    "row_limit",
    "cost_limit_usd",
    "cost_estimate_usd",
    "cost_actual_usd",
    "duration_ms",
    "fetched_at",
    "autocontext_attached",
    "messages",
    "warnings",
)

# Spec 8.6: the column types of a header.
COLUMN_TYPES = frozenset({"string", "integer", "number", "boolean", "date", "datetime", "json"})
