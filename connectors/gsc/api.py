"""The only module that talks to ``google-api-python-client`` (imported lazily, on first use).

Everything here is synchronous and runs in a worker thread (``ctx.run_blocking``). The client is
built from the Search Console document bundled with the library (``static_discovery``: no network
call to discover it) and cached per credentials and endpoint (:class:`shared.google_api.ClientCache`).
httplib2 is not thread-safe, so each thread sends its requests over its own authorized connection
(``execute(http=…)``), sharing the client and its token. Answers are read with orjson (the library's
JSON model, subclassed): a 25,000-row page is the largest thing a call parses.

``googleapiclient`` retries nothing by itself; every request here is retried on 429, 5xx, rate
reasons and network failures with a bounded backoff that gives up after ``ACP_GSC_RETRY_S`` seconds
(:func:`shared.google_api.bounded_retry`). Search Console's own error rows close this module.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shared import ResourceNotFound, google_auth
from shared.error_policy import Failure, Rule
from shared.google_api import (
    RATE_REASONS,
    ClientCache,
    GoogleErrorPolicy,
    bounded_retry,
    endpoint_override,
    is_transient,
    retry_deadline_s,
)

SCOPES = ("https://www.googleapis.com/auth/webmasters.readonly",)
ENDPOINT_ENV = "ACP_GSC_ENDPOINT"
RETRY_ENV = "ACP_GSC_RETRY_S"
DEFAULT_RETRY_S = 30.0
HTTP_TIMEOUT_S = 60.0  # one HTTP request
PAGE_ROWS = 25_000  # searchAnalytics.query's largest rowLimit


@dataclass(frozen=True)
class Settings:
    """How to reach Search Console for one call."""

    credentials: Mapping[str, Any]
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)


@dataclass(frozen=True)
class Site:
    """One entry of ``sites.list``."""

    url: str  # "sc-domain:example.com" or "https://www.example.com/"
    permission: str  # siteOwner, siteFullUser, siteRestrictedUser or siteUnverifiedUser


class Service:
    """A discovery client and its credentials; each thread sends over its own authorized connection."""

    def __init__(self, resource: Any, credentials: Any) -> None:
        self.resource = resource
        self.credentials = credentials
        self._local = threading.local()

    def http(self) -> Any:
        """This thread's ``AuthorizedHttp`` (it refreshes the shared token and replays a 401 once refreshed)."""
        found = getattr(self._local, "http", None)
        if found is None:
            import google_auth_httplib2
            import httplib2

            found = google_auth_httplib2.AuthorizedHttp(self.credentials, http=httplib2.Http(timeout=HTTP_TIMEOUT_S))
            self._local.http = found
        return found

    def close(self) -> None:
        self.resource.close()


# -- clients -----------------------------------------------------------------------------------
_clients: ClientCache[Service] = ClientCache()


def endpoint(environ: Mapping[str, str]) -> str | None:
    """``ACP_GSC_ENDPOINT``: any ``https://`` URL, or ``http://`` on loopback only."""
    return endpoint_override(environ, ENDPOINT_ENV)


def service(settings: Settings) -> Service:
    """The cached Search Console client for these credentials and endpoint."""
    api = endpoint(settings.environ)

    def build() -> Service:
        from googleapiclient import discovery

        credentials = google_auth.build(settings.credentials, SCOPES, settings.environ)
        resource = discovery.build(
            "searchconsole",
            "v1",
            credentials=credentials,
            static_discovery=True,
            cache_discovery=False,
            client_options={"api_endpoint": api} if api else None,
            model=_orjson_model(),
        )
        return Service(resource, credentials)

    return _clients.get(settings.credentials, endpoint=api, build=build)


def _orjson_model() -> Any:
    """The library's JSON model, reading answers with orjson: a 25,000-row page is most of a call's time
    in ``json.loads``, and orjson reads it into the same Python values several times faster."""
    import orjson
    from googleapiclient.model import JsonModel

    class OrjsonModel(JsonModel):  # type: ignore[misc]  # the library is untyped
        def deserialize(self, content: bytes | str) -> Any:
            try:
                return orjson.loads(content)
            except orjson.JSONDecodeError:  # not JSON: the library's own answer (the text)
                return super().deserialize(content)

    return OrjsonModel()


def cache_key(settings: Settings, *parts: str) -> tuple[str, ...]:
    """A key for answers kept in memory: a hash of the credentials (never the text), the endpoint, ``parts``."""
    canonical = json.dumps(dict(settings.credentials), sort_keys=True, default=str)
    return (hashlib.sha256(canonical.encode()).hexdigest(), endpoint(settings.environ) or "", *parts)


def _execute(settings: Settings, build_request: Any) -> dict[str, Any]:
    """Send the request ``build_request(resource)`` makes, retrying transient failures until the deadline."""
    from google.api_core.retry import Retry

    client = service(settings)
    request = build_request(client.resource)
    retry = bounded_retry(Retry(predicate=is_transient), retry_deadline_s(settings.environ, RETRY_ENV, DEFAULT_RETRY_S))
    answer: dict[str, Any] = retry(lambda: request.execute(http=client.http()))()
    return answer


# -- calls -------------------------------------------------------------------------------------
def list_sites(settings: Settings) -> list[Site]:
    """``sites.list``: every property these credentials see, with their permission level."""
    answer = _execute(settings, lambda r: r.sites().list())
    return [Site(str(e["siteUrl"]), str(e.get("permissionLevel", ""))) for e in answer.get("siteEntry", [])]


def query(settings: Settings, site: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """One ``searchAnalytics.query`` page. No ``rows`` key means no (more) rows."""
    return _execute(settings, lambda r: r.searchanalytics().query(siteUrl=site, body=dict(body)))


def list_sitemaps(settings: Settings, site: str, sitemap_index: str | None = None) -> list[dict[str, Any]]:
    """``sitemaps.list``: the sitemaps submitted for the property (or listed in one sitemap index)."""
    extra = {"sitemapIndex": sitemap_index} if sitemap_index else {}
    answer = _execute(settings, lambda r: r.sitemaps().list(siteUrl=site, **extra))
    return list(answer.get("sitemap", []))


def inspect(settings: Settings, site: str, url: str, language: str) -> dict[str, Any]:
    """``urlInspection.index.inspect``: Google's index view of one URL of the property."""
    body = {"inspectionUrl": url, "siteUrl": site, "languageCode": language}
    answer = _execute(settings, lambda r: r.urlInspection().index().inspect(body=body))
    result: dict[str, Any] = answer.get("inspectionResult", {})
    return result


# -- errors ------------------------------------------------------------------------------------
def _no_access(failure: Failure) -> bool:
    return failure.reasons.isdisjoint(RATE_REASONS)


# Search Console answers 403 for a property the account cannot read (not a user of it, or not
# verified): an unknown resource for this account (spec 12.1), unless the 403 carries a rate reason.
POLICY = GoogleErrorPolicy(
    "Search Console",
    rules=(
        Rule(
            ResourceNotFound,
            "Search Console denied access to this property ({message}). The account is not a verified user of it: "
            "ask the user to add it in Search Console (Settings > Users and permissions) or to verify the property, "
            "or call autocontext without arguments to list the properties it can read.",
            codes=(403,),
            when=_no_access,
        ),
    ),
    messages={
        "rate_limited": "Search Console's quota is used up for now ({message}). Its per-minute quotas refill within "
        "a minute: wait a minute and try again, with fewer requests (URL Inspection allows 600 a minute and 2,000 a "
        "day per property).",
        "retries_exhausted": "Search Console kept refusing after retries ({message}). Wait a minute and try again; "
        "if it persists, narrow the request or check the Search Console status page.",
        "not_found": "Search Console could not find it: {message}. Check the property and the URL, or call "
        "autocontext without arguments to list the properties.",
        "invalid_request": "Search Console refused the request: {message}. Fix the arguments (dimensions, filters, "
        "dates, search_type) and try again.",
    },
)
translate = POLICY.translate
