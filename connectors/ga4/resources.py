"""``resource_id`` of the GA4 connector: a property's numeric id, ``123456789``.

:func:`normalize` only reads the text (no I/O): ``properties/123456789``, the number with spaces
around it, and a GA4 web-interface URL (``…/analytics/web/#/p123456789/…`` or ``#/a1001p123456789/…``)
all give ``123456789``; a measurement id (``G-…``) or a Universal Analytics id (``UA-…``) is refused
with where to find the number. :func:`resolve` then checks the property among those the credentials
see (``accountSummaries``) and sets the call's calendar to the property's time zone.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import difflib
import re
from dataclasses import dataclass
from typing import Any

from shared import CallContext, InvalidArguments, ResourceNotFound, ResourceRef, ResourceSummary
from shared.google_api import TimedCache

from . import api

LEVEL = "property"
SUMMARIES_TTL_S = 60.0  # accountSummaries is asked once a minute at most per credentials, not once per call
PROPERTY_TTL_S = 24 * 3600.0  # a property's time zone and currency seldom change
CLOSEST_SHOWN = 3
WHERE_THE_ID_IS = (
    "The numeric property id is in GA4 Admin > Property settings > Property details (top right), and in the "
    "address of any report (…/#/p123456789/…); or call autocontext without arguments to list the properties."
)

_NUMBER = re.compile(r"^[0-9]{1,20}$")
_PREFIXED = re.compile(r"^properties/([0-9]{1,20})/?$")
# GA4's web interface writes the property as p<id> in the fragment: #/p123/… or #/a<account>p<id>/…
_URL_PROPERTY = re.compile(r"[#/](?:a[0-9]+)?p([0-9]{1,20})(?=[/?&#]|$)")
_MEASUREMENT_ID = re.compile(r"^G-[A-Z0-9]{4,}$", re.IGNORECASE)
_UNIVERSAL_ID = re.compile(r"^UA-[0-9]+(-[0-9]+)?$", re.IGNORECASE)
_UNIVERSAL_URL = re.compile(r"[#/]a[0-9]+w[0-9]+p[0-9]+")  # Universal Analytics: account, web property, view


@dataclass(frozen=True)
class PropertySummary:
    """One property of ``accountSummaries``."""

    property_id: str
    name: str
    account: str  # the account's display name


_summaries: TimedCache[list[PropertySummary]] = TimedCache(SUMMARIES_TTL_S)
_properties: TimedCache[dict[str, Any]] = TimedCache(PROPERTY_TTL_S)


def settings(ctx: CallContext) -> api.Settings:
    """The call's credentials and the ``page_size`` setting."""
    page_size = ctx.config.get("page_size")
    size = int(page_size) if isinstance(page_size, int) and page_size > 0 else api.PAGE_ROWS
    return api.Settings(credentials=ctx.require_credentials(), page_size=min(size, api.PAGE_ROWS))


def summaries(config: api.Settings) -> list[PropertySummary]:
    """Every property these credentials see, in the API's order, asked at most once a minute."""

    def compute() -> list[PropertySummary]:
        out: list[PropertySummary] = []
        for account in api.account_summaries(config):
            for summary in account.get("propertySummaries", []):
                number = str(summary.get("property", "")).removeprefix("properties/")
                name = str(summary.get("displayName") or number)
                out.append(PropertySummary(number, name, str(account.get("displayName") or account.get("account"))))
        return out

    return _summaries.get(api.cache_key(config, "summaries"), compute)


def property_settings(config: api.Settings, property_id: str) -> dict[str, Any]:
    """The property (``properties.get``, camelCase): displayName, timeZone, currencyCode, industryCategory…;
    kept a day."""
    key = api.cache_key(config, "property", property_id)
    return _properties.get(key, lambda: api.get_property(config, property_id))


# -- normalization (no I/O) ----------------------------------------------------------------------
def normalize(text: str, credentials: object = None) -> ResourceRef:
    """The property id in ``text``: a number, ``properties/N``, or a GA4 URL."""
    cleaned = text.strip()
    if _MEASUREMENT_ID.match(cleaned):
        raise InvalidArguments(
            f"'{cleaned}' is a measurement id (a web data stream's tag id), not a property id. {WHERE_THE_ID_IS}"
        )
    if _UNIVERSAL_ID.match(cleaned) or _UNIVERSAL_URL.search(cleaned):
        raise InvalidArguments(
            f"'{cleaned[:120]}' is a Universal Analytics id; Universal Analytics is gone and GA4 properties have a "
            f"numeric id. {WHERE_THE_ID_IS}"
        )
    number = _property_number(cleaned)
    if number is None:
        raise InvalidArguments(
            f"Invalid resource_id '{text[:120]}': use a GA4 property id such as 123456789. {WHERE_THE_ID_IS}"
        )
    return _ref(number)


def _property_number(text: str) -> str | None:
    if _NUMBER.match(text):
        return text
    found = _PREFIXED.match(text)
    if found:
        return found.group(1)
    if "://" in text or text.startswith("analytics.google.com"):
        found = _URL_PROPERTY.search(text)
        if found:
            return found.group(1)
    return None


def _ref(property_id: str) -> ResourceRef:
    return ResourceRef(id=property_id, level=LEVEL, parts=(property_id,))


# -- resolution against accountSummaries --------------------------------------------------------
def closest(text: str, found: list[PropertySummary], count: int = CLOSEST_SHOWN) -> list[PropertySummary]:
    """The properties whose id (or name) is nearest to ``text``, best first."""

    def likeness(summary: PropertySummary) -> float:
        by_id = difflib.SequenceMatcher(None, text, summary.property_id).ratio()
        by_name = difflib.SequenceMatcher(None, text.lower(), summary.name.lower()).ratio()
        return max(by_id, by_name)

    return sorted(found, key=likeness, reverse=True)[:count]


def today_in(time_zone: str | None, now: dt.datetime | None = None) -> dt.date | None:
    """Today in ``time_zone`` (an IANA name); None when it is unknown here (no tz database)."""
    if not time_zone:
        return None
    import zoneinfo  # here, not at import: it loads the platform's sysconfig, which a declaration must not

    try:
        zone = zoneinfo.ZoneInfo(time_zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return None
    return (now or dt.datetime.now(dt.UTC)).astimezone(zone).date()


async def resolve(ref: ResourceRef, ctx: CallContext) -> ResourceRef:
    """The property among those the credentials see, its ``today`` in the property's time zone;
    ACP_RESOURCE_NOT_FOUND naming the closest ones."""
    config = settings(ctx)
    found = await ctx.run_blocking(lambda: summaries(config))
    if not any(s.property_id == ref.id for s in found):
        near = closest(ref.id, found)
        listed = "; ".join(f"{s.property_id} ({s.name}, account {s.account})" for s in near)
        hint = f" The closest: {listed}." if near else " These credentials see no GA4 property at all."
        raise ResourceNotFound(
            f"Property '{ref.id}' is not among the GA4 properties these credentials can read.{hint} Pass one of them "
            "as resource_id, or call autocontext without arguments to list them all; a property the account has no "
            "access to must be shared with it first (GA4 Admin > Property access management).",
            {"resource_id": ref.id, "closest": [s.property_id for s in near]},
        )
    details = await ctx.run_blocking(lambda: property_settings(config, ref.id))
    zone = details.get("timeZone")
    today = today_in(zone)
    if zone and today is None:
        ctx.warnings.append(
            f"The property's time zone {zone} is unknown to this server (no time-zone database: pip install tzdata), "
            "so relative dates are the server's own days."
        )
    return dataclasses.replace(_ref(ref.id), today=today)


async def list_resources(ctx: CallContext) -> list[ResourceSummary]:
    """Every property, grouped by account, in the API's order."""
    config = settings(ctx)
    found = await ctx.run_blocking(lambda: summaries(config))
    return [{"resource_id": s.property_id, "name": s.name, "group": s.account} for s in found]


def clear_caches() -> None:
    """Forget the remembered summaries and properties (what a new process has)."""
    _summaries.clear()
    _properties.clear()
