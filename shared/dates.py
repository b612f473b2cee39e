"""Date windows (spec 8.9): ``x-acp-date`` start/end pairs and SQL templates."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any

from .errors import InvalidArguments
from .protocol import DATE_ANNOTATION, JsonObject

# ASCII digits only: \d would also accept other scripts' digits.
_DAYS_AGO = re.compile(r"^([0-9]{1,5})daysAgo$")
_COMPACT = re.compile(r"^[0-9]{8}$")
_ISO = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
TEMPLATE_MARKERS = ("{{start_date}}", "{{end_date}}")
DATE_FORMS = "YYYY-MM-DD, YYYYMMDD, today, yesterday or NdaysAgo"


def resolve_date(text: str, today: dt.date) -> dt.date:
    """Resolve ``YYYY-MM-DD``, ``YYYYMMDD``, ``today``, ``yesterday`` or ``NdaysAgo``."""
    value = text.strip()
    if value == "today":
        return today
    if value == "yesterday":
        return today - dt.timedelta(days=1)
    match = _DAYS_AGO.match(value)
    if match:
        return today - dt.timedelta(days=int(match.group(1)))
    if _COMPACT.match(value):
        value = f"{value[:4]}-{value[4:6]}-{value[6:]}"
    if _ISO.match(value):  # fromisoformat alone would also take ISO week dates
        return dt.date.fromisoformat(value)
    raise ValueError(value)


def date_properties(schema: JsonObject) -> dict[str, str]:
    """Property name → ``x-acp-date`` role for a tool's input schema."""
    return {
        name: prop[DATE_ANNOTATION]
        for name, prop in schema.get("properties", {}).items()
        if isinstance(prop, dict) and DATE_ANNOTATION in prop
    }


def resolve_date_arguments(arguments: dict[str, Any], roles: Mapping[str, str], today: dt.date) -> list[str] | None:
    """Resolve start/end arguments in place; check templates. Return the window, if any."""
    window: dict[str, str] = {}
    for name, role in roles.items():
        value = arguments.get(name)
        if not isinstance(value, str):
            continue
        if role in ("start", "end"):
            try:
                resolved = resolve_date(value, today).isoformat()
            except ValueError:
                raise InvalidArguments(
                    f"Argument '{name}' must be a date: {DATE_FORMS}. Fix it and call again."
                ) from None
            arguments[name] = resolved
            window[role] = resolved
        elif role == "template":
            leftover = [m for m in TEMPLATE_MARKERS if m in value]
            if leftover:
                raise InvalidArguments(
                    f"Argument '{name}' still contains {' and '.join(leftover)}. The host substitutes these "
                    "markers with the date window before calling; this client did not. Write the dates "
                    "as literals (YYYY-MM-DD) and call again."
                )
    if "start" in window and "end" in window:
        if window["start"] > window["end"]:
            raise InvalidArguments(
                f"The date window is reversed: start {window['start']} is after end {window['end']}. "
                "Swap them and call again."
            )
        return [window["start"], window["end"]]
    return list(window.values()) or None


def local_today() -> dt.date:
    return dt.date.today()
