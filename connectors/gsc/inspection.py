"""URL Inspection and sitemaps: ``inspect_url`` and ``list_sitemaps`` (info) and ``inspect_urls``
(an extraction of up to 100 URLs).

The URL Inspection API allows 600 requests a minute and 2,000 a day per property: ``inspect_urls``
keeps a few requests in flight and stays within the per-minute quota of the property across calls
of this process (:class:`MinuteQuota`); the daily one is Google's to enforce, and a URL it refuses
gets the error in its row. Mobile usability is left out: Google retired it in December 2023.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from shared import (
    AcpError,
    CallContext,
    CredentialsInvalid,
    Extraction,
    Header,
    Info,
    InvalidArguments,
    ResourceNotFound,
    Tool,
    UpstreamError,
)

from . import api
from .resources import in_property, settings
from .search import pacific_today

MAX_URLS = 100
IN_FLIGHT = 4
PER_MINUTE = 600  # URL Inspection: requests a minute per property
REFERRING_SHOWN = 10
DEFAULT_LANGUAGE = "en-US"


class MinuteQuota:
    """At most ``limit`` acquisitions in any ``window_s`` seconds (thread-safe); ``acquire`` waits its turn."""

    def __init__(
        self,
        limit: int,
        window_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.limit, self.window_s = limit, window_s
        self._clock, self._sleep = clock, sleep
        self._times: collections.deque[float] = collections.deque()
        self._lock = threading.Lock()

    def acquire(self, cancelled: threading.Event | None = None) -> None:
        while True:
            with self._lock:
                now = self._clock()
                while self._times and self._times[0] <= now - self.window_s:
                    self._times.popleft()
                if len(self._times) < self.limit:
                    self._times.append(now)
                    return
                wait_s = self._times[0] + self.window_s - now
            if cancelled is not None and cancelled.is_set():
                raise UpstreamError("The call was cancelled while it waited for Search Console's quota.")
            self._sleep(min(wait_s, 1.0))  # in steps, so a cancelled call stops waiting


_quotas: dict[tuple[str, ...], MinuteQuota] = {}
_quotas_lock = threading.Lock()


def quota(config: api.Settings, site: str) -> MinuteQuota:
    """The per-minute URL Inspection quota of one property, shared by this process's calls."""
    key = api.cache_key(config, "inspection", site)
    with _quotas_lock:
        return _quotas.setdefault(key, MinuteQuota(PER_MINUTE))


def _language(ctx: CallContext) -> str:
    return str(ctx.config.get("inspection_language") or DEFAULT_LANGUAGE)


def require_in_property(url: str, site: str) -> str:
    """``url`` trimmed, when it is an absolute URL of the property; ACP_INVALID_ARGUMENTS with the next step."""
    cleaned = url.strip()
    if not in_property(cleaned, site):
        raise InvalidArguments(
            f"'{cleaned[:200]}' is not a URL of the property {site}. Inspect absolute URLs (https://…) of this "
            "property, or pass the property that holds the URL as resource_id (call autocontext without arguments "
            "to list them)."
        )
    return cleaned


# -- inspect_url -------------------------------------------------------------------------------------
def summary(url: str, result: dict[str, Any]) -> dict[str, Any]:
    """An inspection result, compact: index status, coverage, canonicals, rich results and AMP."""
    index = result.get("indexStatusResult") or {}
    google, user = index.get("googleCanonical"), index.get("userCanonical")
    out: dict[str, Any] = {
        "url": url,
        "verdict": index.get("verdict"),
        "coverage_state": index.get("coverageState"),
        "indexing_state": index.get("indexingState"),
        "robots_txt_state": index.get("robotsTxtState"),
        "page_fetch_state": index.get("pageFetchState"),
        "last_crawl_time": index.get("lastCrawlTime"),
        "crawled_as": index.get("crawledAs"),
        "google_canonical": google,
        "user_canonical": user,
        "canonical_matches": google == user if google and user else None,
        "sitemaps": index.get("sitemap") or [],
        "referring_urls": (index.get("referringUrls") or [])[:REFERRING_SHOWN],
    }
    rich = result.get("richResultsResult")
    out["rich_results"] = (
        {
            "verdict": rich.get("verdict"),
            "detected": [
                {
                    "type": item.get("richResultType"),
                    "items": len(item.get("items") or []),
                    "issues": [
                        {"severity": issue.get("severity"), "message": issue.get("issueMessage")}
                        for found in item.get("items") or []
                        for issue in found.get("issues") or []
                    ],
                }
                for item in rich.get("detectedItems") or []
            ],
        }
        if rich
        else None
    )
    amp = result.get("ampResult")
    out["amp"] = (
        {
            "verdict": amp.get("verdict"),
            "amp_url": amp.get("ampUrl"),
            "index_status_verdict": amp.get("ampIndexStatusVerdict"),
            "indexing_state": amp.get("indexingState"),
            "issues": [
                {"severity": issue.get("severity"), "message": issue.get("issueMessage")}
                for issue in amp.get("issues") or []
            ],
        }
        if amp
        else None
    )
    out["inspection_link"] = result.get("inspectionResultLink")
    return out


async def inspect_url(arguments: dict[str, Any], ctx: CallContext) -> Info:
    site = ctx.require_resource().id
    url = require_in_property(str(arguments["url"]), site)
    config, language = settings(ctx), _language(ctx)

    def inspect() -> dict[str, Any]:
        quota(config, site).acquire(ctx.cancelled)
        return api.inspect(config, site, url, language)

    result = await ctx.run_blocking(inspect)
    return Info(
        data=summary(url, result),
        title=f"Search Console · inspect {url}",
        source={"api": "searchconsole.urlInspection.index.inspect", "site_url": site},
    )


# -- inspect_urls ------------------------------------------------------------------------------------
COLUMNS: list[Header] = [
    {"name": "url", "type": "string", "role": "dimension"},
    {"name": "verdict", "type": "string", "role": "attribute", "description": "PASS, PARTIAL, FAIL or NEUTRAL"},
    {"name": "coverage_state", "type": "string", "role": "attribute"},
    {"name": "indexing_state", "type": "string", "role": "attribute"},
    {"name": "page_fetch_state", "type": "string", "role": "attribute"},
    {"name": "robots_txt_state", "type": "string", "role": "attribute"},
    {"name": "last_crawl_time", "type": "datetime", "role": "attribute"},
    {"name": "crawled_as", "type": "string", "role": "attribute"},
    {"name": "google_canonical", "type": "string", "role": "attribute"},
    {"name": "user_canonical", "type": "string", "role": "attribute"},
    {"name": "canonical_matches", "type": "boolean", "role": "attribute"},
    {"name": "rich_results_verdict", "type": "string", "role": "attribute"},
    {"name": "rich_result_types", "type": "string", "role": "attribute", "description": "Comma-separated"},
    {"name": "amp_verdict", "type": "string", "role": "attribute"},
    {"name": "inspection_link", "type": "string", "role": "attribute"},
    {"name": "error", "type": "string", "role": "attribute", "description": "Why this URL has no result"},
]

# Failures that concern the property or the credentials, not one URL: the whole call fails with them.
_CALL_FAILURES = (CredentialsInvalid, ResourceNotFound)


def _row(url: str, result: dict[str, Any] | None, error: str | None) -> dict[str, Any]:
    if result is None:
        return {"url": url, "error": error}
    found = summary(url, result)
    rich, amp = found["rich_results"], found["amp"]
    return {
        **{k: found[k] for k in ("url", "verdict", "coverage_state", "indexing_state", "page_fetch_state")},
        **{k: found[k] for k in ("robots_txt_state", "last_crawl_time", "crawled_as", "google_canonical")},
        "user_canonical": found["user_canonical"],
        "canonical_matches": found["canonical_matches"],
        "rich_results_verdict": rich["verdict"] if rich else None,
        "rich_result_types": ", ".join(str(d["type"]) for d in rich["detected"]) if rich else None,
        "amp_verdict": amp["verdict"] if amp else None,
        "inspection_link": found["inspection_link"],
        "error": None,
    }


async def inspect_urls(arguments: dict[str, Any], ctx: CallContext) -> Extraction:
    site = ctx.require_resource().id
    urls = [str(u).strip() for u in arguments["urls"]]
    config, language = settings(ctx), _language(ctx)
    limiter = quota(config, site)

    def one(url: str) -> dict[str, Any]:
        require_in_property(url, site)
        limiter.acquire(ctx.cancelled)
        return api.inspect(config, site, url, language)

    def run() -> tuple[Any, int]:
        rows: list[dict[str, Any] | None] = [None] * len(urls)
        failed = 0
        with ThreadPoolExecutor(max_workers=IN_FLIGHT, thread_name_prefix="gsc-inspect") as pool:
            pending: dict[Future[dict[str, Any]], int] = {}
            queue = iter(range(len(urls)))

            def submit() -> None:
                index = next(queue, None)
                if index is not None and not ctx.cancelled.is_set():
                    pending[pool.submit(one, urls[index])] = index

            for _ in range(IN_FLIGHT):
                submit()
            done_count = 0
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    index = pending.pop(future)
                    error = future.exception()
                    if error is None:
                        rows[index] = _row(urls[index], future.result(), None)
                    else:
                        mapped = error if isinstance(error, AcpError) else api.translate(error)
                        if mapped is None:
                            raise error
                        if isinstance(mapped, _CALL_FAILURES):
                            for other in pending:
                                other.cancel()
                            raise mapped
                        rows[index] = _row(urls[index], None, mapped.message)
                        failed += 1
                    done_count += 1
                    ctx.progress(done_count, len(urls), f"{done_count} of {len(urls)} URLs inspected")
                    submit()
        writer = ctx.table(columns=COLUMNS, title=f"Search Console · URL inspection · {site}")
        writer.extend([row for row in rows if row is not None])
        return writer.finish(), failed

    table, failed = await ctx.run_blocking(run)
    warnings = [f"{failed} of {len(urls)} URLs could not be inspected; see their error column."] if failed else []
    return Extraction(
        tables=[table],
        description=f"Search Console URL Inspection of {len(urls)} URLs of property {site} (Google's index view: "
        "verdict, coverage, canonicals, rich results, AMP).",
        title=f"Search Console · URL inspection · {site}",
        warnings=warnings,
        extra={"inspected": len(urls) - failed, "failed": failed},
        source={"api": "searchconsole.urlInspection.index.inspect", "site_url": site, "language": language},
    )


# -- list_sitemaps -----------------------------------------------------------------------------------
def _count(value: Any) -> int:
    return int(value or 0)  # int64 counts come as strings


async def list_sitemaps(arguments: dict[str, Any], ctx: CallContext) -> Info:
    site = ctx.require_resource().id
    config = settings(ctx)
    index = arguments.get("sitemap_index")
    found = await ctx.run_blocking(lambda: api.list_sitemaps(config, site, index))
    sitemaps = [sitemap_entry(entry) for entry in found]
    totals = {
        "sitemaps": len(sitemaps),
        "submitted": sum(c["submitted"] for s in sitemaps for c in s["contents"]),
        "indexed": sum(c["indexed"] for s in sitemaps for c in s["contents"]),
        "errors": sum(s["errors"] for s in sitemaps),
        "warnings": sum(s["warnings"] for s in sitemaps),
    }
    data: dict[str, Any] = {"property": site, "sitemaps": sitemaps, "totals": totals}
    if index:
        data["sitemap_index"] = index
    return Info(
        data=data,
        title=f"Search Console · sitemaps · {site}",
        source={"api": "searchconsole.sitemaps.list", "site_url": site},
    )


def sitemap_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """One ``sitemaps.list`` entry with numbers as numbers."""
    return {
        "path": entry.get("path"),
        "type": entry.get("type"),
        "is_index": bool(entry.get("isSitemapsIndex")),
        "is_pending": bool(entry.get("isPending")),
        "last_submitted": entry.get("lastSubmitted"),
        "last_downloaded": entry.get("lastDownloaded"),
        "errors": _count(entry.get("errors")),
        "warnings": _count(entry.get("warnings")),
        "contents": [
            {"type": c.get("type"), "submitted": _count(c.get("submitted")), "indexed": _count(c.get("indexed"))}
            for c in entry.get("contents") or []
        ],
    }


URL_DESCRIPTION = "An absolute URL of the property (https://www.example.com/page)."

INSPECT_URLS = Tool(
    name="inspect_urls",
    title="Inspect URLs",
    description=(
        "Google's index view of up to 100 URLs of the property, one row each: verdict, coverage, indexing and fetch "
        "state, last crawl, canonicals (Google's and the page's), rich results and AMP. A URL that fails gets its "
        "error in its row. Quota: 600 a minute and 2,000 a day per property."
    ),
    kind="extraction",
    run=inspect_urls,
    input_schema={
        "properties": {
            "urls": {
                "type": "array",
                "items": {"type": "string", "description": URL_DESCRIPTION},
                "minItems": 1,
                "maxItems": MAX_URLS,
                "uniqueItems": True,
                "description": f"Up to {MAX_URLS} absolute URLs of the property.",
            }
        },
        "required": ["urls"],
    },
    idempotent=True,
    today=pacific_today,
)

INSPECT_URL = Tool(
    name="inspect_url",
    title="Inspect one URL",
    description=(
        "Google's index view of one URL of the property (URL Inspection API): verdict, coverage, indexing, "
        "robots.txt and fetch state, last crawl, Google's and the declared canonical, sitemaps and referring URLs, "
        "rich results with their issues, AMP."
    ),
    run=inspect_url,
    input_schema={"properties": {"url": {"type": "string", "description": URL_DESCRIPTION}}, "required": ["url"]},
    idempotent=True,
    today=pacific_today,
)

LIST_SITEMAPS = Tool(
    name="list_sitemaps",
    title="List sitemaps",
    description=(
        "The sitemaps submitted for the property: type, last submitted and downloaded, errors and warnings, and per "
        "content type the URLs submitted and indexed, with totals."
    ),
    run=list_sitemaps,
    input_schema={
        "properties": {
            "sitemap_index": {
                "type": "string",
                "description": "Optional: the URL of a sitemap index, to list the sitemaps it contains.",
            }
        },
        "required": [],
    },
    idempotent=True,
    today=pacific_today,
)
