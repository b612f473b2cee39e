"""``resource_id`` of the Search Console connector: a property, ``sc-domain:example.com`` or
``https://www.example.com/``.

:func:`normalize` only tidies the text (no I/O); :func:`resolve` then finds the property among
those the credentials see (``sites.list``), in this order (the README states it too):

1. the property written exactly (a URL without its trailing slash included);
2. the same property written with the other scheme or with or without ``www.``;
3. for a URL, the longest URL-prefix property that contains it;
4. the domain property of its host, or of a parent domain (``sc-domain:example.com`` holds
   ``https://shop.example.com/…``);
5. the longest URL-prefix property that contains the URL under the other scheme or ``www.``.

A bare domain (``example.com`` or ``www.example.com``) is first its domain property
(``sc-domain:example.com``) when there is one, then a URL under ``https://`` and ``http://``.
Anything else is ``ACP_RESOURCE_NOT_FOUND`` naming the closest properties.
"""

from __future__ import annotations

import difflib
import urllib.parse
from collections.abc import Iterator, Sequence

from shared import CallContext, InvalidArguments, ResourceNotFound, ResourceRef, ResourceSummary
from shared.google_api import TimedCache

from . import api

LEVEL = "property"
DOMAIN = "sc-domain:"
SITES_TTL_S = 60.0  # sites.list is asked once a minute at most per credentials, not once per call
CLOSEST_SHOWN = 3
PERMISSIONS = {
    "siteOwner": "Owner (siteOwner)",
    "siteFullUser": "Full user (siteFullUser)",
    "siteRestrictedUser": "Restricted user (siteRestrictedUser)",
    "siteUnverifiedUser": "UNVERIFIED (siteUnverifiedUser): Search Console gives no data until the account is "
    "verified for it",
}
UNVERIFIED = "siteUnverifiedUser"
_INVALID = (
    "Invalid resource_id '{text}'. Use a Search Console property: sc-domain:example.com (a domain property) or "
    "https://www.example.com/ (a URL-prefix property). Call autocontext without arguments to list them."
)


_sites: TimedCache[list[api.Site]] = TimedCache(SITES_TTL_S)


def settings(ctx: CallContext) -> api.Settings:
    return api.Settings(credentials=ctx.require_credentials())


def sites(config: api.Settings) -> list[api.Site]:
    """The properties these credentials see, asked at most once a minute."""
    return _sites.get(api.cache_key(config, "sites"), lambda: api.list_sites(config))


# -- normalization (no I/O) ----------------------------------------------------------------------
def normalize(text: str, credentials: object = None) -> ResourceRef:
    """Tidy a property's spelling: lower-case scheme and host, ``sc-domain:`` domains in lower case."""
    cleaned = text.strip()
    if cleaned.lower().startswith(DOMAIN):
        domain = cleaned[len(DOMAIN) :].strip().strip("/").lower()
        if not _is_host(domain):
            raise InvalidArguments(_INVALID.format(text=text[:120]))
        return _ref(DOMAIN + domain)
    url = cleaned if "://" in cleaned else f"//{cleaned}"  # a bare host: urlsplit reads it as the netloc
    parts = urllib.parse.urlsplit(url)
    if parts.scheme.lower() not in ("", "http", "https") or not _is_host(parts.hostname or ""):
        raise InvalidArguments(_INVALID.format(text=text[:120]))
    netloc = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
    scheme = parts.scheme.lower()
    path = parts.path or ("/" if scheme else "")
    query = f"?{parts.query}" if parts.query else ""
    return _ref(f"{scheme}://{netloc}{path}{query}" if scheme else f"{netloc}{path}{query}")


def _ref(site: str) -> ResourceRef:
    return ResourceRef(id=site, level=LEVEL, parts=(site,))


def _is_host(host: str) -> bool:
    labels = host.split(".")
    return len(labels) >= 2 and all(label and all(c.isalnum() or c == "-" for c in label) for label in labels)


# -- resolution against sites.list ---------------------------------------------------------------
def match_property(text: str, properties: Sequence[str]) -> str | None:
    """The property ``text`` (already normalized) names, by the rules of this module's docstring."""
    listed = {p.lower(): p for p in properties}
    prefixes = sorted((p for p in properties if not p.startswith(DOMAIN)), key=len, reverse=True)
    if text.startswith(DOMAIN):
        domain = text[len(DOMAIN) :]
        return _domain_property(domain, listed) if domain.startswith("www.") else listed.get(text)
    bare = "://" not in text
    urls = [f"https://{text}", f"http://{text}"] if bare else [text]
    if bare and "/" not in text.rstrip("/"):  # a bare domain: its domain property first
        domain = text.rstrip("/").removeprefix("www.")
        if DOMAIN + domain in listed:
            return listed[DOMAIN + domain]
    for url in urls:  # 1. exactly, with or without the trailing slash
        for written in (url, url if url.endswith("/") else url + "/"):
            if written.lower() in listed:
                return listed[written.lower()]
    variants = [v for url in urls for v in _variants(url) if v not in urls]
    for url in variants:  # 2. another scheme or www
        for written in (url, url if url.endswith("/") else url + "/"):
            if written.lower() in listed:
                return listed[written.lower()]
    for url in urls:  # 3. the longest URL prefix that holds it
        found = _containing(url, prefixes)
        if found:
            return found
    host = urllib.parse.urlsplit(urls[0]).hostname or ""
    found = _domain_property(host, listed)  # 4. the domain property
    if found:
        return found
    for url in variants:  # 5. a URL prefix that holds it under another scheme or www
        found = _containing(url, prefixes)
        if found:
            return found
    return None


def _variants(url: str) -> Iterator[str]:
    """``url`` under the other scheme, with ``www.`` toggled, and both."""
    parts = urllib.parse.urlsplit(url)
    host = parts.netloc
    other_host = host[4:] if host.startswith("www.") else f"www.{host}"
    other_scheme = "http" if parts.scheme == "https" else "https"
    for scheme, netloc in ((other_scheme, host), (parts.scheme, other_host), (other_scheme, other_host)):
        yield urllib.parse.urlunsplit((scheme, netloc, parts.path, parts.query, ""))


def _containing(url: str, prefixes: Sequence[str]) -> str | None:
    lowered = url.lower()
    return next((p for p in prefixes if lowered.startswith(p.lower())), None)  # longest first


def _domain_property(host: str, listed: dict[str, str]) -> str | None:
    """``sc-domain:<host>``, else of each parent domain down to two labels."""
    labels = host.lower().split(".")
    for start in range(len(labels) - 1):
        found = listed.get(DOMAIN + ".".join(labels[start:]))
        if found:
            return found
    return None


def closest(text: str, found: Sequence[api.Site], count: int = CLOSEST_SHOWN) -> list[api.Site]:
    """The properties whose spelling is nearest to ``text``, best first."""

    def core(value: str) -> str:
        value = value.lower().removeprefix(DOMAIN).split("://", 1)[-1]
        return value.removeprefix("www.").rstrip("/")

    target = core(text)
    ranked = sorted(found, key=lambda s: difflib.SequenceMatcher(None, target, core(s.url)).ratio(), reverse=True)
    return ranked[:count]


async def resolve(ref: ResourceRef, ctx: CallContext) -> ResourceRef:
    """The property ``ref`` names among those the credentials see; ACP_RESOURCE_NOT_FOUND naming the closest."""
    config = settings(ctx)
    found = await ctx.run_blocking(lambda: sites(config))
    match = match_property(ref.id, [s.url for s in found])
    if match is None:
        near = closest(ref.id, found)
        listed = "; ".join(f"{s.url} ({PERMISSIONS.get(s.permission, s.permission)})" for s in near)
        hint = f" The closest: {listed}." if near else " These credentials see no property at all."
        raise ResourceNotFound(
            f"'{ref.id}' is not a Search Console property these credentials can read.{hint} Pass one of them as "
            "resource_id, or call autocontext without arguments to list them all; a property the account is not a "
            "user of must be shared with it in Search Console first.",
            {"resource_id": ref.id, "closest": [s.url for s in near]},
        )
    site = next(s for s in found if s.url == match)
    if site.permission == UNVERIFIED:
        ctx.warnings.append(
            f"{match} is unverified for this account (siteUnverifiedUser): Search Console returns no data for it "
            "until the user verifies the property."
        )
    return _ref(match)


async def list_resources(ctx: CallContext) -> list[ResourceSummary]:
    """Every property, domain properties first, with the permission level as description."""
    config = settings(ctx)
    found = await ctx.run_blocking(lambda: sites(config))
    out: list[ResourceSummary] = []
    for site in sorted(found, key=lambda s: (not s.url.startswith(DOMAIN), s.url)):
        domain = site.url.startswith(DOMAIN)
        out.append(
            {
                "resource_id": site.url,
                "name": f"{site.url[len(DOMAIN) :]} (domain property)" if domain else site.url,
                "description": PERMISSIONS.get(site.permission, site.permission),
                "group": "Domain properties" if domain else "URL-prefix properties",
            }
        )
    return out


def in_property(url: str, site: str) -> bool:
    """Whether ``url`` (absolute http or https) belongs to the property ``site``."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    if site.startswith(DOMAIN):
        domain = site[len(DOMAIN) :]
        return parts.hostname == domain or parts.hostname.endswith("." + domain)
    return url.lower().startswith(site.lower())
