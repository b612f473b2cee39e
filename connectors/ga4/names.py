"""Dimension and metric names, checked before a report is asked for.

Each name is looked up against the property's metadata (``getMetadata``, cached an hour, custom
definitions included), in this order:

1. the API name written exactly: kept;
2. a deprecated API name the metadata lists (``conversions`` → ``keyEvents``), the same name in
   another case or with ``_``/spaces (``Sessions``, ``bounce_rate``), the UI name
   (``Session default channel group``), or a common alias (:data:`METRIC_ALIASES`,
   :data:`DIMENSION_ALIASES`: ``purchases`` → ``ecommercePurchases``): replaced, with a warning
   ``Metric 'purchases' mapped to 'ecommercePurchases'.``;
3. a dimension asked for as a metric (or the reverse): ACP_INVALID_ARGUMENTS saying where it goes;
4. anything else: ACP_INVALID_ARGUMENTS listing the closest valid names.

Realtime reports accept another, fixed set of names (:data:`REALTIME_DIMENSIONS`,
:data:`REALTIME_METRICS`, from Google's Realtime API schema page), checked the same way without a
metadata call. When the API still refuses a combination as incompatible, :func:`explain_incompatible`
asks ``checkCompatibility`` which fields clash and what would fit instead.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from shared import InvalidArguments
from shared.google_api import TimedCache

from . import api

METADATA_TTL_S = 3600.0
CLOSEST_SHOWN = 5

# Common names models and people write for GA4 metrics and dimensions (keys folded: lower case, no
# spaces, "_" or "-"). GA4's own deprecated names come from the metadata's deprecatedApiNames.
METRIC_ALIASES: Mapping[str, str] = {
    "purchases": "ecommercePurchases",
    "transactions": "ecommercePurchases",
    "orders": "ecommercePurchases",
    "conversions": "keyEvents",
    "keyevent": "keyEvents",
    "conversionrate": "sessionKeyEventRate",
    "users": "totalUsers",
    "visitors": "totalUsers",
    "uniqueusers": "totalUsers",
    "pageviews": "screenPageViews",
    "views": "screenPageViews",
    "screenviews": "screenPageViews",
    "visits": "sessions",
    "revenue": "totalRevenue",
    "events": "eventCount",
    "avgsessionduration": "averageSessionDuration",
    "sessionduration": "averageSessionDuration",
    "pagespersession": "screenPageViewsPerSession",
    "pageviewspersession": "screenPageViewsPerSession",
    "engagedsession": "engagedSessions",
    "newvisitors": "newUsers",
}
DIMENSION_ALIASES: Mapping[str, str] = {
    "source": "sessionSource",
    "medium": "sessionMedium",
    "sourcemedium": "sessionSourceMedium",
    "campaign": "sessionCampaignName",
    "campaignname": "sessionCampaignName",
    "channel": "sessionDefaultChannelGroup",
    "channelgroup": "sessionDefaultChannelGroup",
    "defaultchannel": "sessionDefaultChannelGroup",
    "page": "pagePath",
    "url": "pageLocation",
    "pageurl": "pageLocation",
    "landingpageurl": "landingPage",
    "device": "deviceCategory",
    "devicetype": "deviceCategory",
    "event": "eventName",
    "day": "date",
    "month": "yearMonth",
    "week": "isoYearIsoWeek",
    "os": "operatingSystem",
    "referrer": "pageReferrer",
    "title": "pageTitle",
}
# Prefixes of the parameterized names, folded → as GA4 writes them; conversions:<event> is keyEvents:<event>.
PREFIXES: Mapping[str, str] = {
    "keyevents": "keyEvents",
    "conversions": "keyEvents",
    "sessionkeyeventrate": "sessionKeyEventRate",
    "sessionconversionrate": "sessionKeyEventRate",
    "userkeyeventrate": "userKeyEventRate",
    "userconversionrate": "userKeyEventRate",
    "customevent": "customEvent",
    "customuser": "customUser",
    "customitem": "customItem",
    "calcmetric": "calcMetric",
}

# https://developers.google.com/analytics/devguides/reporting/data/v1/realtime-api-schema (API name → UI name).
# Besides these, user-scoped custom dimensions (customUser:<parameter>) work in realtime reports.
REALTIME_DIMENSIONS: Mapping[str, str] = {
    "appVersion": "App version",
    "audienceId": "Audience ID",
    "audienceName": "Audience name",
    "audienceResourceName": "Audience resource name",
    "city": "City",
    "cityId": "City ID",
    "country": "Country",
    "countryId": "Country ID",
    "deviceCategory": "Device category",
    "eventName": "Event name",
    "minutesAgo": "Realtime minutes ago",
    "platform": "Platform",
    "streamId": "Stream ID",
    "streamName": "Stream name",
    "unifiedScreenName": "Page title and screen name",
}
REALTIME_METRICS: Mapping[str, str] = {
    "activeUsers": "Active users",
    "eventCount": "Event count",
    "keyEvents": "Key events",
    "screenPageViews": "Views",
}
REALTIME_DEPRECATED: Mapping[str, str] = {"conversions": "keyEvents"}
REALTIME_METRIC_ALIASES: Mapping[str, str] = {**METRIC_ALIASES, "users": "activeUsers", "visitors": "activeUsers"}
REALTIME_CUSTOM_PREFIX = "customUser:"
REALTIME = "of realtime reports"
SHOWN_WHOLE = 20  # a set this small is listed whole when nothing in it is close

_SEPARATORS = re.compile(r"[\s_\-]+")


def fold(name: str) -> str:
    """A name compared loosely: lower case, without spaces, ``_`` or ``-``; a parameterized name keeps its
    parameter (``keyEvents:purchase``) and only loosens it to lower case."""
    prefix, colon, parameter = name.strip().partition(":")
    folded = _SEPARATORS.sub("", prefix).lower()
    if not colon:
        return folded
    return f"{PREFIXES.get(folded, folded).lower()}:{parameter.strip().lower()}"


# -- the names of one kind ---------------------------------------------------------------------------
@dataclass
class Names:
    """The valid names of one kind (dimensions or metrics) and the ways to find them."""

    kind: str  # "dimension" or "metric"
    api_names: dict[str, str]  # API name → UI name
    deprecated: dict[str, str] = field(default_factory=dict)  # deprecated API name → API name
    aliases: Mapping[str, str] = field(default_factory=dict)  # folded alias → API name
    open_prefixes: tuple[str, ...] = ()  # names with these prefixes pass unchecked (realtime customUser:)
    where: str = "of this property"  # how a refusal names the set

    def __post_init__(self) -> None:
        self._folded: dict[str, str] = {}
        for api_name, ui_name in self.api_names.items():
            self._folded.setdefault(fold(ui_name), api_name)
        for old, new in self.deprecated.items():
            self._folded[fold(old)] = new
        for api_name in self.api_names:  # an API name's own fold wins over a UI name that folds alike
            self._folded[fold(api_name)] = api_name

    def find(self, name: str) -> str | None:
        """The API name ``name`` stands for, or None."""
        if name in self.api_names or name.startswith(self.open_prefixes):
            return name
        if name in self.deprecated:
            return self.deprecated[name]
        folded = fold(name)
        found = self._folded.get(folded)
        if found is not None:
            return found
        target = self.aliases.get(folded)
        return target if target in self.api_names else None

    def closest(self, name: str, count: int = CLOSEST_SHOWN) -> list[str]:
        """Valid API names nearest to ``name`` (by API name and UI name), best first."""
        by_fold: dict[str, str] = {}
        for api_name, ui_name in self.api_names.items():
            by_fold.setdefault(fold(api_name), api_name)
            by_fold.setdefault(fold(ui_name), api_name)
        found = difflib.get_close_matches(fold(name), list(by_fold), n=count * 3, cutoff=0.5)
        return list(dict.fromkeys(by_fold[f] for f in found))[:count]


@dataclass
class Catalog:
    """The dimensions and metrics a report may ask for."""

    dimensions: Names
    metrics: Names

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any]) -> Catalog:
        """From ``getMetadata`` (camelCase): apiName, uiName, deprecatedApiNames of each."""

        def names(entries: Iterable[Mapping[str, Any]], kind: str, aliases: Mapping[str, str]) -> Names:
            api_names: dict[str, str] = {}
            deprecated: dict[str, str] = {}
            for entry in entries:
                api_name = str(entry.get("apiName", ""))
                if not api_name:
                    continue
                api_names[api_name] = str(entry.get("uiName") or api_name)
                for old in entry.get("deprecatedApiNames", []):
                    deprecated[str(old)] = api_name
            return Names(kind, api_names, deprecated, aliases)

        return cls(
            names(metadata.get("dimensions", []), "dimension", DIMENSION_ALIASES),
            names(metadata.get("metrics", []), "metric", METRIC_ALIASES),
        )

    @classmethod
    def realtime(cls) -> Catalog:
        return cls(
            Names("dimension", dict(REALTIME_DIMENSIONS), {}, DIMENSION_ALIASES, (REALTIME_CUSTOM_PREFIX,), REALTIME),
            Names("metric", dict(REALTIME_METRICS), dict(REALTIME_DEPRECATED), REALTIME_METRIC_ALIASES, (), REALTIME),
        )

    def check(
        self, dimensions: Sequence[str], metrics: Sequence[str], unique: bool = True
    ) -> tuple[list[str], list[str], list[str]]:
        """``(dimensions, metrics, warnings)`` with every name as the API knows it; one ACP_INVALID_ARGUMENTS
        naming every name that is not. ``unique``: a name asked for twice is reported once (a report's
        columns); else the lists keep the positions of the names asked (filter fields)."""
        warnings: list[str] = []
        problems: dict[str, str] = {}  # name → why
        checked = []
        for asked, own, other in (
            (dimensions, self.dimensions, self.metrics),
            (metrics, self.metrics, self.dimensions),
        ):
            out: list[str] = []
            for name in asked:
                found = own.find(name)
                if found is None:
                    problems[name] = _problem(name, own, other)
                    continue
                if found != name:
                    warnings.append(f"{own.kind.capitalize()} '{name}' mapped to '{found}'.")
                if unique and found in out:
                    warnings.append(f"{own.kind.capitalize()} '{found}' was asked for twice; it is reported once.")
                    continue
                out.append(found)
            checked.append(out)
        if problems:
            raise InvalidArguments(
                " ".join(problems.values()) + " Use GA4 API names; autocontext lists the property's key events and "
                "custom definitions.",
                {"invalid_names": list(problems)},
            )
        return checked[0], checked[1], warnings


def _problem(name: str, own: Names, other: Names) -> str:
    """Why ``name`` is not one of ``own``: it belongs to the other kind, or the closest valid names."""
    elsewhere = other.find(name)
    plural = {"dimension": "dimensions", "metric": "metrics"}
    if elsewhere is not None:
        spelled = "" if elsewhere == name else f" ('{elsewhere}')"
        return f"'{name}' is a {other.kind}{spelled}, not a {own.kind}: move it to {plural[other.kind]}."
    near = own.closest(name)
    if near:
        hint = f" Closest valid {plural[own.kind]}: {', '.join(near)}."
    elif len(own.api_names) <= SHOWN_WHOLE:
        hint = f" Valid {plural[own.kind]}: {', '.join(own.api_names)}."
    else:
        hint = ""
    return f"'{name}' is not a {own.kind} {own.where}.{hint}"


# -- per property -------------------------------------------------------------------------------------
_metadata: TimedCache[dict[str, Any]] = TimedCache(METADATA_TTL_S)


def metadata(config: api.Settings, property_id: str) -> dict[str, Any]:
    """The property's ``getMetadata`` answer, kept an hour."""
    return _metadata.get(api.cache_key(config, "metadata", property_id), lambda: api.get_metadata(config, property_id))


def catalog(config: api.Settings, property_id: str) -> Catalog:
    return Catalog.from_metadata(metadata(config, property_id))


def check_names(
    config: api.Settings,
    property_id: str,
    dimensions: Sequence[str],
    metrics: Sequence[str],
    realtime: bool = False,
    unique: bool = True,
) -> tuple[list[str], list[str], list[str]]:
    """``(dimensions, metrics, warnings)`` as the API knows them (see the module's docstring and
    :meth:`Catalog.check`); blocking."""
    found = Catalog.realtime() if realtime else catalog(config, property_id)
    return found.check(dimensions, metrics, unique)


def explain_incompatible(config: api.Settings, request: Mapping[str, Any]) -> InvalidArguments | None:
    """After GA4 refused ``request`` (a runReport request dict): the incompatible fields it holds, from
    ``checkCompatibility``, with compatible ones to use instead; None when none of them is incompatible."""
    query = {
        k: request[k]
        for k in ("property", "dimensions", "metrics", "dimension_filter", "metric_filter")
        if k in request
    }
    answer = api.check_compatibility(config, query)
    asked = {d["name"] for d in request.get("dimensions", [])} | {m["name"] for m in request.get("metrics", [])}
    clashes: dict[str, str] = {}  # name → "dimension 'name'"
    suggestions: list[str] = []
    for key, kind in (("dimensionCompatibilities", "dimension"), ("metricCompatibilities", "metric")):
        entries = answer.get(key, [])
        meta = "dimensionMetadata" if kind == "dimension" else "metricMetadata"
        compatible = [str(e.get(meta, {}).get("apiName")) for e in entries if e.get("compatibility") == "COMPATIBLE"]
        for entry in entries:
            name = str(entry.get(meta, {}).get("apiName", ""))
            if entry.get("compatibility") != "INCOMPATIBLE" or name not in asked:
                continue
            clashes[name] = f"{kind} '{name}'"
            near = [c for c in difflib.get_close_matches(name, compatible, n=3, cutoff=0.3) if c not in asked]
            if near:
                suggestions.append(f"instead of {name}: {', '.join(near)}")
    if not clashes:
        return None
    text = (
        f"GA4 cannot combine these fields in one report: {', '.join(clashes.values())} is incompatible with the rest."
    )
    if suggestions:
        text += f" Compatible alternatives ({'; '.join(suggestions)})."
    text += " Remove or replace the incompatible fields, or split the question into two reports."
    return InvalidArguments(text, {"incompatible": list(clashes)})


def clear_caches() -> None:
    _metadata.clear()
