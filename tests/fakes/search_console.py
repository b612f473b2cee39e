"""``FakeSearchConsole``: the Search Console API on a loopback server, for the real google-api-python-client.

    with FakeSearchConsole() as fake:
        credentials = service_account.Credentials.from_service_account_info(
            fake.oauth.service_account_info("my-proj"), scopes=[WEBMASTERS_READONLY])
        service = build("searchconsole", "v1", credentials=credentials, static_discovery=True,
                        cache_discovery=False, client_options={"api_endpoint": fake.url})
        service.searchanalytics().query(siteUrl="sc-domain:example.com", body={...}).execute()

The discovery document puts every method under the one base URL, so ``api_endpoint`` serves all of
them: ``/webmasters/v3/sites…`` (sites, search analytics, sitemaps) and ``/v1/urlInspection/index:inspect``.
Paths are matched un-decoded (``sites/https%3A%2F%2Fwww.example.com%2F/searchAnalytics/query``).

Nothing is canned. Each property's traffic is generated from ``seed`` (queries with a long tail, pages,
countries, devices, hours, search appearances, search types, positions) and every answer is computed
from those facts (``facts(site)`` is the ground truth a test aggregates independently).

The data model, and where it simplifies Google:

- A fact is one (query, page, country, device, date, hour, searchAppearance, search type) with clicks,
  impressions and ``position_sum`` (the sum of the position of every impression, so that the average
  position weighted by impressions is ``position_sum / impressions``). Dates and hours are Pacific Time;
  a day has 24 wall-clock hours (the 23- and 25-hour days of DST changes are not modelled).
- A domain property (``sc-domain:example.com``) covers the pages of every host under its domain; a
  URL-prefix property covers the pages whose URL starts with its prefix. Properties of one domain share
  one set of facts, so ``https://www.example.com/blog/`` sees exactly the domain's facts under ``/blog/``.
- Anonymized queries are facts with ``query`` None: counted when neither grouping nor filtering by
  query, dropped otherwise (as Google does). Discover and Google News facts have no query at all.
- ``aggregationType``: by page (``byPage``) every fact counts. By property (``byProperty``), the facts
  that differ only by page are one search: the property's impressions are the largest page's, its
  clicks are the sum (at most the impressions), and its position is the best page's average position.
  Anonymized queries are never merged (each lands on one page). The generator makes such searches on
  purpose: about a third of the searches for a query with several landing pages also show a second
  page, lower and as a plain result, in the same hour, country and device. ``auto`` is by page when
  grouping or filtering by page, else by property; by property with a page grouping or filter is a 400.
- The per-day row cap (Google's 50,000 rows per day per search type): for each day, only the top
  ``row_cap_per_day`` rows of the requested grouping (by clicks, then impressions, then keys) count.
- Freshness: ``last_final_date`` is ``today - 3``. ``dataState: final`` stops there, ``all`` goes up to
  ``today`` (whose data stops at ``CURRENT_HOUR``), ``hourly_all`` too and allows the ``hour`` dimension
  over the last 10 days. ``metadata.firstIncompleteDate``/``firstIncompleteHour`` follow the discovery
  document's rules (grouped by date with ``all``, by hour with ``hourly_all``, range reaching fresh days).
- Rows are sorted by clicks, then impressions, descending, then by keys; a grouping by date and/or hour
  only comes in chronological order. ``startRow``/``rowLimit`` page through it (at most 25,000 rows);
  a page past the end has no ``rows`` key at all.
- Discover and Google News: grouping or filtering by query is a 400, and rows carry no position.
  Grouping by ``searchAppearance`` must be alone (Google's two-step process), else a 400.
- Permissions: a site not in ``sites``, or one with ``siteUnverifiedUser``, answers 403 ``forbidden``
  for data. Per-site quotas (``search_analytics_qpm``, ``inspection_qpm``, ``inspection_qpd``) answer 429
  in Google's shape (``usageLimits``; ``rateLimitExceeded`` per minute, ``quotaExceeded`` per day).

Faults by route name: ``fake.fail("searchanalytics.query", 500)``, ``fake.slow("sites.list", 0.5)``;
``fake.oauth.revoke_access_tokens()`` makes the next call a 401 that the client refreshes and replays.
"""

from __future__ import annotations

import bisect
import contextlib
import datetime as dt
import functools
import gc
import hashlib
import itertools
import math
import random
import re
import threading
import time
import urllib.parse
from array import array
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo

from fakes.google_oauth import FakeGoogleOAuth
from fakes.http import FakeHttpServer, RecordedRequest, Reply, ServedFake, google_error

DEFAULT_SITES: Mapping[str, str] = {
    "sc-domain:example.com": "siteOwner",
    "https://www.example.com/": "siteFullUser",
    "https://www.example.com/blog/": "siteRestrictedUser",
    "http://example.org/": "siteUnverifiedUser",
    "https://shop.example.net/": "siteOwner",
}
PERMISSION_LEVELS = frozenset({"siteOwner", "siteFullUser", "siteRestrictedUser", "siteUnverifiedUser"})
ROUTE_NAMES = (
    "sites.list",
    "sites.get",
    "searchanalytics.query",
    "sitemaps.list",
    "sitemaps.get",
    "urlInspection.index.inspect",
    "token",
)
DIMENSIONS = ("query", "page", "country", "device", "date", "hour", "searchAppearance")
FILTER_DIMENSIONS = ("query", "page", "country", "device", "searchAppearance")
OPERATORS = ("equals", "notEquals", "contains", "notContains", "includingRegex", "excludingRegex")
SEARCH_TYPES = ("web", "image", "video", "news", "discover", "googleNews")
QUERYLESS_SEARCH_TYPES = frozenset({"discover", "googleNews"})  # Google has neither queries nor positions there
DATA_STATES = ("final", "all", "hourly_all")
AGGREGATION_TYPES = ("auto", "byPage", "byProperty", "byNewsShowcasePanel")
MAX_ROW_LIMIT = 25_000
DEFAULT_ROW_LIMIT = 1_000
GOOGLE_ROW_CAP_PER_DAY = 50_000
FINAL_DATA_LAG_DAYS = 3  # the last final day is today - 3: Search Console data lands 2-3 days late
HOURLY_DAYS = 10  # hourly data covers the last 10 days
CURRENT_HOUR = 11  # "now" is today at 11:00 PT: today has data for hours 0-10 only
PACIFIC = ZoneInfo("America/Los_Angeles")
FORBIDDEN_HELP = "https://support.google.com/webmasters/answer/2451999"

# ISO 3166-1 alpha-3, lower case, as the API gives them; "zzz" is Google's unknown region.
COUNTRY_WEIGHTS: tuple[tuple[str, float], ...] = tuple(
    (code, float(weight))
    for code, weight in (
        item.split(":")
        for item in [
            "usa:27",
            "esp:12",
            "gbr:7",
            "ind:7",
            "mex:6",
            "deu:5",
            "fra:4",
            "can:3.5",
            "bra:3",
            "arg:3",
            "col:3",
            "ita:2.5",
            "aus:2.5",
            "nld:2",
            "chl:2",
            "jpn:1.5",
            "pol:1.5",
            "prt:1.5",
            "irl:1",
            "zaf:1",
            "zzz:0.3",
        ]
    )
)
COUNTRIES = tuple(code for code, _ in COUNTRY_WEIGHTS)
_SPANISH_SPEAKING = tuple(COUNTRIES.index(code) for code in ("esp", "mex", "arg", "col", "chl"))
DEVICE_WEIGHTS: tuple[tuple[str, float], ...] = (("MOBILE", 58), ("DESKTOP", 38), ("TABLET", 4))
DEVICES = tuple(name for name, _ in DEVICE_WEIGHTS)
SEARCH_TYPE_WEIGHTS = (84.0, 9.0, 2.0, 2.0, 2.5, 0.5)  # in SEARCH_TYPES order
APPEARANCES = tuple(
    [
        "AMP_BLUE_LINK",
        "AMP_TOP_STORIES",
        "RICHCARD",
        "REVIEW_SNIPPET",
        "VIDEO",
        "TRANSLATED_RESULT",
        "PRODUCT_SNIPPETS",
        "MERCHANT_LISTINGS",
    ]
)
# Share of searches per Pacific hour: quiet nights, busy working hours.
HOUR_WEIGHTS = (2, 1.5, 1.2, 1, 1, 1.3, 2, 3, 4, 4.5, 4.8, 5, 5, 5, 4.8, 4.6, 4.5, 4.4, 4.2, 4, 3.8, 3.5, 3, 2.5)
# Organic click-through rate by position (1-based; index 0 unused), then a flat tail.
_CTR_BY_POSITION = (0.0, 0.18, 0.09, 0.06, 0.045, 0.035, 0.028, 0.022, 0.018, 0.015, 0.012)


# ------------------------------------------------------------------------------------------ public records


class Fact(NamedTuple):
    """One generated fact: the ground truth behind every answer.

    ``query`` is None for anonymized queries and for Discover/Google News traffic; ``hour`` is the
    Pacific hour (0-23) of ``date``; ``search_type`` uses the API's spelling (``web`` … ``googleNews``);
    ``position_sum`` is the sum of the positions of all impressions (0 where Google has no position).
    """

    query: str | None
    page: str
    country: str
    device: str
    date: dt.date
    hour: int
    search_appearance: str | None
    search_type: str
    clicks: int
    impressions: int
    position_sum: int

    @property
    def position(self) -> float:
        """Average position weighted by impressions."""
        return self.position_sum / self.impressions


def pacific_hour(date: dt.date, hour: int) -> str:
    """The ``hour`` key the API gives: ``2026-11-27T14:00:00-08:00`` (Pacific Time, ISO 8601 with offset)."""
    return dt.datetime(date.year, date.month, date.day, hour, tzinfo=PACIFIC).isoformat()


# ------------------------------------------------------------------------------------------ generation


def _words(options: str) -> tuple[str, ...]:
    """A vocabulary written compactly: ``"a|b c|"`` → ("a", "b c", "")."""
    return tuple(options.split("|"))


@dataclass(frozen=True)
class _Section:
    name: str
    share: float
    base: str  # "www", "docs" or "legacy": which base URL of the root it lives under
    template: str  # "{slug}" or "{word}" within the base
    appearances: tuple[tuple[str | None, float], ...]
    submitted: bool = True  # listed in a sitemap


@dataclass(frozen=True)
class _Theme:
    brand: tuple[str, ...]
    heads: tuple[str, ...]
    prefixes: tuple[str, ...]
    suffixes: tuple[str, ...]
    sections: tuple[_Section, ...]


_CONTENT_THEME = _Theme(
    brand=("{name}", "{domain}", "{name} blog", "{name} analytics"),
    heads=_words(
        "ga4|google analytics|google analytics 4|search console|bigquery|looker studio|google tag manager|gtm|server side tagging|consent mode|core web vitals|utm parameters|attribution model|conversion tracking|ecommerce tracking|data layer|seo|technical seo|keyword research|sitemap"
    ),
    prefixes=("", "what is", "que es", "how to use", "como configurar", "best", "guia", "set up"),
    suffixes=_words(
        "|tutorial|api|events|vs universal analytics|pricing|dashboard|export|certification|2026|for beginners|en español|limits|filters|regex|example|template|course|error|not working"
    ),
    sections=(
        _Section(
            "blog",
            0.45,
            "www",
            "blog/{slug}/",
            ((None, 0.6), ("RICHCARD", 0.2), ("VIDEO", 0.1), ("REVIEW_SNIPPET", 0.1)),
        ),
        _Section("es-blog", 0.15, "www", "es/blog/{slug}/", ((None, 0.8), ("TRANSLATED_RESULT", 0.2))),
        _Section("amp", 0.05, "www", "amp/blog/{slug}/", (("AMP_BLUE_LINK", 1.0),)),
        _Section("services", 0.10, "www", "services/{slug}/", ((None, 0.7), ("REVIEW_SNIPPET", 0.3))),
        _Section("docs", 0.15, "docs", "{slug}", ((None, 1.0),)),
        _Section("legacy", 0.05, "legacy", "{slug}.html", ((None, 1.0),), submitted=False),
        _Section("tag", 0.05, "www", "blog/tag/{word}/", ((None, 1.0),), submitted=False),
    ),
)
_SHOP_THEME = _Theme(
    brand=("{name} shop", "{domain}", "{name} store"),
    heads=_words(
        "running shoes|trail running shoes|hiking boots|rain jacket|merino socks|backpack|trekking poles|sleeping bag|tent|headlamp|water bottle|fleece jacket|zapatillas running|botas montaña"
    ),
    prefixes=("", "buy", "best", "cheap", "comprar", "womens", "mens", "kids", "waterproof", "lightweight"),
    suffixes=_words("|sale|review|size guide|near me|black|blue|2026|discount code|free shipping|outlet|online"),
    sections=(
        _Section(
            "products",
            0.5,
            "www",
            "products/{slug}",
            ((None, 0.3), ("PRODUCT_SNIPPETS", 0.4), ("MERCHANT_LISTINGS", 0.3)),
        ),
        _Section("category", 0.15, "www", "category/{word}/", ((None, 1.0),)),
        _Section("blog", 0.25, "www", "blog/{slug}/", ((None, 0.7), ("RICHCARD", 0.2), ("VIDEO", 0.1))),
        _Section("help", 0.10, "www", "help/{slug}", ((None, 1.0),)),
    ),
)
_NEWS_SECTIONS = frozenset({"blog", "es-blog", "amp"})  # the pages Discover and Google News show


@dataclass(frozen=True)
class _Page:
    url: str
    section: str
    appearance: str | None
    submitted: bool


@dataclass
class _Catalog:
    """One generation root's queries, pages and query→page pairs; its facts come later, on first use."""

    root: str
    seed: int
    queries: list[str]
    pages: list[_Page]
    pair_query: list[int]  # -1: an anonymized query
    pair_page: list[int]
    pair_weight: list[float]
    pair_position: list[int]
    pair_scale: list[float]  # log-mean of impressions per fact
    brand_queries: int  # the first queries are the brand's (they land on the home page at position 1)


@dataclass
class _FactTable:
    """A root's facts in columns (codes into the catalog), sorted by day: ``day_start[d]`` is the first row
    of day ``d`` (0 = the first generated day). Each column has the narrowest typecode that fits: about
    34 bytes a fact."""

    query: array[int] = field(default_factory=functools.partial(array, "i"))  # -1: None
    page: array[int] = field(default_factory=functools.partial(array, "i"))
    country: array[int] = field(default_factory=functools.partial(array, "b"))
    device: array[int] = field(default_factory=functools.partial(array, "b"))
    day: array[int] = field(default_factory=functools.partial(array, "H"))
    # day * 24 + hour: the key of the hour dimension
    day_hour: array[int] = field(default_factory=functools.partial(array, "I"))
    appearance: array[int] = field(default_factory=functools.partial(array, "b"))  # -1: None
    search_type: array[int] = field(default_factory=functools.partial(array, "b"))
    clicks: array[int] = field(default_factory=functools.partial(array, "i"))
    impressions: array[int] = field(default_factory=functools.partial(array, "i"))
    position_sum: array[int] = field(default_factory=functools.partial(array, "q"))
    day_start: list[int] = field(default_factory=lambda: [0])

    def __len__(self) -> int:
        return len(self.page)


def _sub_seed(*parts: object) -> int:
    digest = hashlib.sha256("\x1f".join(str(part) for part in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big")


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small lists and tuples.

    Generation and aggregation allocate hundreds of thousands of containers, none of them cyclic; the
    collector would otherwise run over all of them again and again and triple the time.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower().replace("ñ", "n")).strip("-") or "page"


def _root_names(root: str) -> tuple[str, str]:
    """(brand name, domain) of a root: ``sc-domain:example.com`` → ("example", "example.com")."""
    host = root.removeprefix("sc-domain:") if root.startswith("sc-domain:") else urllib.parse.urlsplit(root).netloc
    domain = host.removeprefix("www.")
    parts = domain.split(".")
    name = parts[-2] if len(parts) >= 2 else parts[0]
    return name, domain


def _theme_for(root: str) -> _Theme:
    return _SHOP_THEME if "shop" in root else _CONTENT_THEME


def _base_urls(root: str) -> dict[str, str]:
    if root.startswith("sc-domain:"):
        domain = root.removeprefix("sc-domain:")
        return {"www": f"https://www.{domain}/", "docs": f"https://docs.{domain}/", "legacy": f"http://{domain}/"}
    return {"www": root, "docs": root + "docs/", "legacy": root + "archive/"}


def _query_tiers(theme: _Theme) -> Iterator[Iterator[str]]:
    """Ever longer queries: prefix + head + suffix, then head + two suffixes, then a prefix as well."""
    suffixes = theme.suffixes[1:]
    yield (
        " ".join(part for part in (prefix, head, suffix) if part)
        for head in theme.heads
        for prefix in theme.prefixes
        for suffix in theme.suffixes
    )
    yield (f"{head} {first} {second}" for head in theme.heads for first in suffixes for second in suffixes)
    yield (
        f"{prefix} {head} {first} {second}"
        for head in theme.heads
        for prefix in theme.prefixes[1:]
        for first in suffixes
        for second in suffixes
    )


def _candidate_queries(theme: _Theme, rng: random.Random, wanted: int) -> list[str]:
    """Distinct natural-looking queries, the short (head) ones first: they get the popular ranks.

    The tiers of longer queries are only made when the shorter ones are not enough.
    """
    combos: list[str] = []
    for tier in _query_tiers(theme):
        if len(combos) >= wanted:
            break
        combos.extend(dict.fromkeys(query for query in tier if query.split()[-1] not in query.split()[:-1]))
    if len(combos) < wanted:
        raise ValueError(f"the generator can make at most {len(combos)} distinct queries, not {wanted}")
    rng.shuffle(combos)
    # Fewer words, more searches; the jitter mixes word counts a little, as real head terms do.
    combos.sort(key=lambda query: len(query.split()) + rng.random() * 1.5)
    return combos[:wanted]


def _generate_catalog(root: str, *, seed: int, queries: int, pages: int) -> _Catalog:
    rng = random.Random(_sub_seed(seed, root, "catalog"))
    theme = _theme_for(root)
    name, domain = _root_names(root)
    bases = _base_urls(root)
    brand = [template.format(name=name, domain=domain) for template in theme.brand]
    query_list = list(dict.fromkeys(brand + _candidate_queries(theme, rng, queries)))[: max(queries, len(brand))]

    page_list: list[_Page] = [_Page(bases["www"], "home", None, True)]
    urls = {page_list[0].url}
    topic_pages: dict[int, list[int]] = {}
    section_weights = [section.share for section in theme.sections]
    head_slugs = [_slugify(head) for head in theme.heads]
    attempts = 0
    while len(page_list) < pages and attempts < pages * 20:
        attempts += 1
        section = rng.choices(theme.sections, weights=section_weights)[0]
        topic = rng.randrange(len(brand), len(query_list)) if len(query_list) > len(brand) else 0
        slug = _slugify(query_list[topic])
        url = bases[section.base] + section.template.format(slug=slug, word=rng.choice(head_slugs))
        if url in urls:
            continue
        urls.add(url)
        appearance = rng.choices([value for value, _ in section.appearances], [w for _, w in section.appearances])[0]
        page_list.append(_Page(url, section.name, appearance, section.submitted))
        if "{slug}" in section.template:
            topic_pages.setdefault(topic, []).append(len(page_list) - 1)

    pair_query: list[int] = []
    pair_page: list[int] = []
    pair_weight: list[float] = []
    pair_position: list[int] = []
    pair_scale: list[float] = []
    top_weight = 1.0 / 3.0**0.95
    for rank in range(len(query_list)):
        popularity = 1.0 / (rank + 3) ** 0.95  # Zipf-like: a head and a long tail
        if rank < len(brand):
            popularity *= 0.3  # a small brand: most searches that find the site are not for its name
            landing = [0]
        else:
            landing = list(topic_pages.get(rank, []))[:2]
            extra = 1 + min(2, int(rng.expovariate(1.5))) + (1 if rank < 20 else 0)
            for _ in range(extra):
                candidate = rng.randrange(len(page_list))
                if candidate not in landing:
                    landing.append(candidate)
        shares = [0.7] + [0.3 / (len(landing) - 1)] * (len(landing) - 1) if len(landing) > 1 else [1.0]
        best = 1 if rank < len(brand) else _draw_position(rng)
        for order, (page, share) in enumerate(zip(landing, shares, strict=True)):
            pair_query.append(rank)
            pair_page.append(page)
            pair_weight.append(popularity * share)
            pair_position.append(best if order == 0 else min(100, best + rng.randint(2, 30)))
            # Popular queries draw more facts and bigger ones: impressions grow faster than linearly.
            pair_scale.append(math.log(1.5 + 6.0 * math.sqrt(popularity / top_weight)))
    # Anonymized queries: many rare ones, one landing page each: about a quarter of the facts and a sixth of
    # the impressions.
    named_weight = sum(pair_weight)
    anonymized = max(20, len(query_list) // 2)
    for _ in range(anonymized):
        pair_query.append(-1)
        pair_page.append(rng.randrange(len(page_list)))
        pair_weight.append(0.45 * named_weight / anonymized)
        pair_position.append(_draw_position(rng))
        pair_scale.append(math.log(2.0))
    return _Catalog(
        root=root,
        seed=seed,
        queries=query_list,
        pages=page_list,
        pair_query=pair_query,
        pair_page=pair_page,
        pair_weight=pair_weight,
        pair_position=pair_position,
        pair_scale=pair_scale,
        brand_queries=len(brand),
    )


def _draw_position(rng: random.Random) -> int:
    """Most ranking is on the first two result pages, with a tail down to 100."""
    if rng.random() < 0.25:
        return rng.randint(11, 100)
    return min(100, 1 + int(rng.expovariate(1 / 9)))


def _ctr(position: float) -> float:
    rounded = max(1, round(position))
    if rounded < len(_CTR_BY_POSITION):
        return _CTR_BY_POSITION[rounded]
    return 0.006 if rounded <= 20 else 0.0015 if rounded <= 50 else 0.0005


def _day_factor(rng: random.Random, date: dt.date, index: int, days: int, today: dt.date) -> float:
    weekday = (1.0, 1.02, 1.03, 1.0, 0.95, 0.78, 0.82)[date.weekday()]
    trend = 0.85 + 0.3 * index / max(1, days - 1)
    fresh = {2: 0.97, 1: 0.9}.get((today - date).days, 1.0)  # the last days are still being collected
    return weekday * trend * fresh * rng.uniform(0.92, 1.08)


def _merge(
    merged: dict[tuple[int, ...], list[int]], key: tuple[int, ...], clicks: int, impressions: int, position_sum: int
) -> None:
    slot = merged.get(key)
    if slot is None:
        merged[key] = [clicks, impressions, position_sum]
    else:
        slot[0] += clicks
        slot[1] += impressions
        slot[2] += position_sum


_TABLE_BITS = 12  # categorical draws use lookup tables of 4,096 slots: one getrandbits() call each


def _lookup_table(weights: Sequence[float]) -> list[int]:
    """Category indices laid out so that a uniform slot picks category ``i`` with about ``weights[i]``'s share."""
    size = 1 << _TABLE_BITS
    bounds = [round(size * cumulative / sum(weights)) for cumulative in itertools.accumulate(weights)]
    table: list[int] = []
    for category, bound in enumerate(bounds):
        table.extend([category] * (max(bound, len(table) + 1) - len(table)))
    return table[:size] + [len(weights) - 1] * (size - len(table))


def _generate_facts(catalog: _Catalog, *, first_date: dt.date, days: int, today: dt.date, per_day: int) -> _FactTable:
    """Draw ``per_day`` searches a day and merge identical ones into facts.

    The loop is the cost of building a fake (about 3 µs a draw), so every per-draw choice is a lookup:
    per-pair values are precomputed lists, categories come from ``_lookup_table`` with one
    ``getrandbits`` call, and impression counts from a pool of log-normal multipliers.
    """
    rng = random.Random(_sub_seed(catalog.seed, catalog.root, "facts"))
    uniform, bits, pick_pair = rng.random, rng.getrandbits, bisect.bisect_right
    pair_cum = list(itertools.accumulate(catalog.pair_weight))
    total_weight = pair_cum[-1]
    appearance_code = {name: code for code, name in enumerate(APPEARANCES)}
    page_appearance = [appearance_code[page.appearance] if page.appearance else -1 for page in catalog.pages]
    pair_page, pair_query, pair_position = catalog.pair_page, catalog.pair_query, catalog.pair_position
    pair_news = [catalog.pages[page].section in _NEWS_SECTIONS for page in pair_page]
    pair_spanish = [catalog.pages[page].section == "es-blog" for page in pair_page]
    pair_appearance = [page_appearance[page] for page in pair_page]
    pair_scale = [math.exp(scale) for scale in catalog.pair_scale]
    # 2x a uniform draw keeps the mean; brand searches click far more often.
    pair_boost = [2.0 * (2.5 if 0 <= query < catalog.brand_queries else 1.0) for query in pair_query]
    # The other landing pages of a pair's query: a search may show one of them too (see below).
    landing: dict[int, list[int]] = {}
    for pair, query in enumerate(pair_query):
        if query >= 0:
            landing.setdefault(query, []).append(pair)
    pair_others = [
        [other for other in landing[query] if other != pair] if query >= 0 else []
        for pair, query in enumerate(pair_query)
    ]
    types = _lookup_table(SEARCH_TYPE_WEIGHTS)
    countries = _lookup_table([weight for _, weight in COUNTRY_WEIGHTS])
    spanish = [_SPANISH_SPEAKING[code] for code in _lookup_table([1.0] * len(_SPANISH_SPEAKING))]
    devices = _lookup_table([weight for _, weight in DEVICE_WEIGHTS])
    hours = _lookup_table(HOUR_WEIGHTS)
    spread = [math.exp(rng.gauss(0.0, 0.9)) for _ in range(1 << _TABLE_BITS)]  # log-normal impressions
    jitter = (-1, 0, 0, 0, 0, 0, 1, 1)  # a fact's position moves a little around its pair's
    ctr = [_ctr(position) for position in range(101)]
    amp_blue_link, amp_top_stories = appearance_code["AMP_BLUE_LINK"], appearance_code["AMP_TOP_STORIES"]
    image, news = SEARCH_TYPES.index("image"), SEARCH_TYPES.index("news")
    discover = SEARCH_TYPES.index("discover")  # discover and googleNews are the last two types
    table = _FactTable()
    for index in range(days):
        date = first_date + dt.timedelta(days=index)
        hour_limit = CURRENT_HOUR if date == today else 24
        merged: dict[tuple[int, ...], list[int]] = {}
        for _ in range(round(per_day * _day_factor(rng, date, index, days, today))):
            hour = hours[bits(_TABLE_BITS)]
            pair = pick_pair(pair_cum, uniform() * total_weight)
            search_type = types[bits(_TABLE_BITS)]
            country = countries[bits(_TABLE_BITS)]
            device = devices[bits(_TABLE_BITS)]
            if hour >= hour_limit:
                continue
            query = pair_query[pair]
            if search_type >= discover:
                if pair_news[pair]:
                    query = -1
                else:
                    search_type = 0
            if pair_spanish[pair] and uniform() < 0.7:
                country = spanish[bits(_TABLE_BITS)]
            appearance = pair_appearance[pair] if uniform() < 0.6 else -1
            if appearance == amp_blue_link and search_type == news:
                appearance = amp_top_stories
            impressions = int(pair_scale[pair] * spread[bits(_TABLE_BITS)]) or 1
            if search_type >= discover:
                position_sum = 0
                expected = impressions * 0.06 * 2 * uniform()
            else:
                position = pair_position[pair] + jitter[bits(3)]
                if search_type == image:
                    position += bits(4)
                position = 1 if position < 1 else min(position, 100)
                # Each impression sits somewhere in [position, position + 1), and none below 100.
                position_sum = position * impressions + (int(uniform() * impressions) if position < 100 else 0)
                expected = impressions * ctr[position] * pair_boost[pair] * uniform()
                if search_type == image:
                    expected *= 0.3
            clicks = int(expected + uniform())  # rounded at random: the mean stays ``expected``
            clicks = min(clicks, impressions)
            others = pair_others[pair]
            if others and query >= 0 and uniform() < 0.35:
                # The same searches showed another page of the site, lower down, as a plain result (fewer
                # impressions: not every one of them scrolled that far). By property they count once.
                other = others[int(uniform() * len(others))]
                other_impressions = int(impressions * (0.3 + 0.7 * uniform())) or 1
                other_position = max(position_sum // impressions + 1, pair_position[other] + jitter[bits(3)])
                other_position = min(other_position, 100)
                other_expected = other_impressions * ctr[other_position] * pair_boost[other] * uniform()
                other_clicks = min(other_impressions, int(other_expected + uniform()))
                appearance = -1
                _merge(
                    merged,
                    (query, pair_page[other], country, device, hour, -1, search_type),
                    other_clicks,
                    other_impressions,
                    other_position * other_impressions
                    + (int(uniform() * other_impressions) if other_position < 100 else 0),
                )
            _merge(
                merged,
                (query, pair_page[pair], country, device, hour, appearance, search_type),
                clicks,
                impressions,
                position_sum,
            )
        if merged:
            queries, pages, countries_, devices_, hours_, appearances, types_ = zip(*merged, strict=True)
            clicks_, impressions_, positions = zip(*merged.values(), strict=True)
            table.query.extend(queries)
            table.page.extend(pages)
            table.country.extend(countries_)
            table.device.extend(devices_)
            table.day.extend([index] * len(merged))
            table.day_hour.extend([index * 24 + hour for hour in hours_])
            table.appearance.extend(appearances)
            table.search_type.extend(types_)
            table.clicks.extend(clicks_)
            table.impressions.extend(impressions_)
            table.position_sum.extend(positions)
        table.day_start.append(len(table.page))
    return table


# ------------------------------------------------------------------------------------------ requests


class _BadRequest(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _enum(value: Any, choices: Sequence[str], what: str) -> str:
    """Accept both spellings Google accepts: ``byPage``/``BY_PAGE``, ``googleNews``/``GOOGLE_NEWS``."""
    if isinstance(value, str):
        folded = value.replace("_", "").lower()
        for choice in choices:
            if choice.replace("_", "").lower() == folded:
                return choice
    raise _BadRequest(f"Invalid value for {what}: {value!r}. Expected one of {', '.join(choices)}.")


def _parse_date(value: Any, what: str) -> dt.date:
    if not isinstance(value, str):
        raise _BadRequest(f"{what} is required, in YYYY-MM-DD format.")
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise _BadRequest(f"Invalid {what}: {value!r} is not a YYYY-MM-DD date.") from None


def _parse_int(body: Mapping[str, Any], name: str, default: int) -> int:
    value = body.get(name, default)
    if isinstance(value, str) and value.lstrip("-").isdigit():
        value = int(value)  # int32 fields may arrive as strings
    if isinstance(value, bool) or not isinstance(value, int):
        raise _BadRequest(f"Invalid value for {name}: {value!r}.")
    return value


@dataclass(frozen=True)
class _Filter:
    dimension: str
    operator: str
    expression: str

    def predicate(self) -> Callable[[str], bool]:
        expression = self.expression
        case_sensitive = self.dimension in ("query", "page")
        if self.operator in ("includingRegex", "excludingRegex"):
            try:
                pattern = re.compile(expression)
            except re.error as exc:
                raise _BadRequest(f"Invalid regular expression {expression!r}: {exc}.") from None
            positive = self.operator == "includingRegex"
            return lambda value: (pattern.search(value) is not None) == positive
        if self.operator in ("contains", "notContains"):  # never case-sensitive
            needle = expression.lower()
            positive = self.operator == "contains"
            return lambda value: (needle in value.lower()) == positive
        positive = self.operator == "equals"
        if case_sensitive:
            return lambda value: (value == expression) == positive
        folded = expression.lower()
        return lambda value: (value.lower() == folded) == positive


@dataclass(frozen=True)
class _Plan:
    """A search analytics request, validated and normalized: the cache key of its sorted answer."""

    search_type: str
    start: dt.date
    end: dt.date
    data_state: str
    dimensions: tuple[str, ...]
    filters: tuple[_Filter, ...]
    aggregation: str  # "byPage" or "byProperty" (auto resolved)

    @classmethod
    def parse(cls, body: Mapping[str, Any]) -> _Plan:
        start = _parse_date(body.get("startDate"), "startDate")
        end = _parse_date(body.get("endDate"), "endDate")
        if start > end:
            raise _BadRequest("startDate must be earlier than or equal to endDate.")
        raw_type = body.get("type", body.get("searchType", "web"))
        search_type = _enum(raw_type, SEARCH_TYPES, "type")
        data_state = _enum(body.get("dataState", "final"), DATA_STATES, "dataState")
        raw_dimensions = body.get("dimensions") or []
        if not isinstance(raw_dimensions, list):
            raise _BadRequest("dimensions must be a list.")
        dimensions = tuple(_enum(value, DIMENSIONS, "dimensions[]") for value in raw_dimensions)
        if len(set(dimensions)) != len(dimensions):
            raise _BadRequest("A dimension cannot be requested twice.")
        if "hour" in dimensions and data_state != "hourly_all":
            raise _BadRequest("Grouping by HOUR requires dataState HOURLY_ALL.")
        if "searchAppearance" in dimensions and len(dimensions) > 1:
            raise _BadRequest(
                "searchAppearance cannot be grouped with other dimensions: group by it alone, then filter by "
                "searchAppearance and group by the other dimensions."
            )
        filters: list[_Filter] = []
        groups = body.get("dimensionFilterGroups") or []
        if not isinstance(groups, list):
            raise _BadRequest("dimensionFilterGroups must be a list.")
        for group in groups:
            if not isinstance(group, dict):
                raise _BadRequest("A dimensionFilterGroup must be an object.")
            _enum(group.get("groupType", "and"), ("and",), "groupType")
            for raw in group.get("filters") or []:
                if not isinstance(raw, dict) or not isinstance(raw.get("expression"), str):
                    raise _BadRequest("A filter needs a dimension, an operator and an expression.")
                filters.append(
                    _Filter(
                        _enum(raw.get("dimension"), FILTER_DIMENSIONS, "filter dimension"),
                        _enum(raw.get("operator", "equals"), OPERATORS, "filter operator"),
                        raw["expression"],
                    )
                )
        for item in filters:
            item.predicate()  # an invalid regular expression is a 400 even when no fact is read
        filtered = {item.dimension for item in filters}
        if search_type in QUERYLESS_SEARCH_TYPES and "query" in (set(dimensions) | filtered):
            raise _BadRequest(f"The QUERY dimension is not supported for type {search_type}.")
        aggregation = _enum(body.get("aggregationType", "auto"), AGGREGATION_TYPES, "aggregationType")
        by_page_needed = "page" in dimensions or "page" in filtered
        if aggregation == "byNewsShowcasePanel":
            raise _BadRequest("aggregationType byNewsShowcasePanel is not supported for this request.")
        if aggregation == "byProperty" and by_page_needed:
            raise _BadRequest("Cannot aggregate by property when grouping or filtering by page.")
        if aggregation == "auto":
            aggregation = "byPage" if by_page_needed else "byProperty"
        return cls(search_type, start, end, data_state, dimensions, tuple(filters), aggregation)


# ------------------------------------------------------------------------------------------ the fake


class FakeSearchConsole(ServedFake):
    """A Search Console REST API (webmasters/v3 + searchconsole/v1 URL inspection) on FakeHttpServer + FakeGoogleOAuth.

    ``queries`` and ``pages`` are per generation root (a domain property, or a URL-prefix property no
    other property contains); ``facts_per_day`` is how many searches are drawn per root and day (about
    one fact each, after co-ranked pages add some and identical ones merge). ``row_cap_per_day`` is
    Google's per-day row limit (settable later). Sizes: the defaults make ~52,000 facts per root in
    ~0.2 s; ``days=42, queries=6_000, pages=1_500, facts_per_day=5_000`` makes ~210,000 facts in ~1 s,
    with more than 60,000 distinct (query, page, date) rows of final web data.
    """

    def __init__(
        self,
        *,
        seed: int = 14,
        days: int = 120,
        today: dt.date = dt.date(2026, 11, 30),
        sites: dict[str, str] | None = None,
        queries: int = 300,
        pages: int = 150,
        facts_per_day: int = 400,
        row_cap_per_day: int = GOOGLE_ROW_CAP_PER_DAY,
    ) -> None:
        self.seed = seed
        self.days = days
        self.today = today
        self.first_date = today - dt.timedelta(days=days - 1)
        self.sites: dict[str, str] = dict(DEFAULT_SITES if sites is None else sites)
        for site, level in self.sites.items():
            if level not in PERMISSION_LEVELS:
                raise ValueError(f"unknown permission level {level!r} for {site}")
        self._queries = queries
        self._pages = pages
        self._facts_per_day = facts_per_day
        self._row_cap_per_day = row_cap_per_day
        # Per-site quotas, as Google's (searchanalytics 1,200 per minute; URL inspection 600 per minute and
        # 2,000 per day). Tests lower them to provoke a 429.
        self.search_analytics_qpm = 1_200
        self.inspection_qpm = 600
        self.inspection_qpd = 2_000
        self.server = FakeHttpServer()
        self.oauth = FakeGoogleOAuth(self.server)
        self._lock = threading.RLock()
        self._catalogs: dict[str, _Catalog] = {}
        self._tables: dict[str, _FactTable] = {}
        self._page_masks: dict[str, list[int]] = {}
        self._ranks: dict[str, dict[str, Sequence[int]]] = {}
        self._results: OrderedDict[tuple[str, _Plan, int], _Result] = OrderedDict()
        self._quota_calls: dict[tuple[str, str], deque[float]] = {}
        self._quota_days: Counter[tuple[str, str]] = Counter()
        self._date_keys = [(self.first_date + dt.timedelta(days=d)).isoformat() for d in range(days)]
        self._hour_keys: dict[int, str] = {}
        # API-shaped and computed from the generated pages at construction; tests may edit them.
        self.sitemaps: dict[str, list[dict[str, Any]]] = {}  # site → its submitted sitemaps (sitemaps.list)
        self.sitemap_indexes: dict[str, list[dict[str, Any]]] = {}  # index path → the sitemaps it lists
        # URL → inspectionResult without ``inspectionResultLink`` (added per request: it names the property).
        # A URL not in it is "URL is unknown to Google".
        self.inspections: dict[str, dict[str, Any]] = {}
        self._build_sitemaps_and_inspections()
        self._register_routes()

    def reset_quotas(self) -> None:
        """Forget the calls counted against the per-site quotas."""
        with self._lock:
            self._quota_calls.clear()
            self._quota_days.clear()

    # ------------------------------------------------------------------------------ ground truth

    @property
    def row_cap_per_day(self) -> int:
        return self._row_cap_per_day

    @row_cap_per_day.setter
    def row_cap_per_day(self, value: int) -> None:
        with self._lock:
            self._row_cap_per_day = value

    def last_final_date(self, site: str) -> dt.date:
        """The last day whose data is final (``today - 3``); ``dataState: final`` stops there."""
        return self.today - dt.timedelta(days=FINAL_DATA_LAG_DAYS)

    def first_incomplete_date(self, site: str) -> dt.date:
        """The first day still being collected: what ``metadata.firstIncompleteDate`` says."""
        return self.last_final_date(site) + dt.timedelta(days=1)

    def facts(self, site: str) -> list[Fact]:
        """Every generated fact of a property (all search types, dates up to ``today``), oldest day first."""
        catalog, table = self._table_for(site)
        mask = self._page_mask(site)
        rows = list(itertools.compress(range(len(table)), map(mask.__getitem__, table.page)))
        queries = [*catalog.queries, None]  # code -1: no query
        pages = [page.url for page in catalog.pages]
        appearances = [*APPEARANCES, None]
        dates = [self.first_date + dt.timedelta(days=day) for day in range(self.days)]

        def column(values: Sequence[Any], codes: array[int]) -> Iterator[Any]:
            return map(values.__getitem__, map(codes.__getitem__, rows))

        with _gc_paused():
            return list(
                map(
                    Fact._make,
                    zip(
                        column(queries, table.query),
                        column(pages, table.page),
                        column(COUNTRIES, table.country),
                        column(DEVICES, table.device),
                        column(dates, table.day),
                        (table.day_hour[row] % 24 for row in rows),
                        column(appearances, table.appearance),
                        column(SEARCH_TYPES, table.search_type),
                        map(table.clicks.__getitem__, rows),
                        map(table.impressions.__getitem__, rows),
                        map(table.position_sum.__getitem__, rows),
                        strict=True,
                    ),
                )
            )

    def pages(self, site: str) -> list[str]:
        """The URLs the generator made under a property (with or without search traffic)."""
        catalog = self._catalog_for(site)
        return [page.url for page in catalog.pages if _site_contains(site, page.url)]

    # ------------------------------------------------------------------------------ generation plumbing

    def _root_of(self, site: str) -> str:
        """The property whose facts ``site`` shares: its domain property, else the shortest URL prefix."""
        if site.startswith("sc-domain:"):
            return site
        domains = [other for other in self.sites if other.startswith("sc-domain:") and _site_contains(other, site)]
        if domains:
            return min(domains, key=len)  # the widest domain
        prefixes = [other for other in self.sites if not other.startswith("sc-domain:") and site.startswith(other)]
        return min(prefixes, key=len) if prefixes else site

    def _catalog_for(self, site: str) -> _Catalog:
        root = self._root_of(site)
        with self._lock:
            catalog = self._catalogs.get(root)
            if catalog is None:
                catalog = _generate_catalog(root, seed=self.seed, queries=self._queries, pages=self._pages)
                self._catalogs[root] = catalog
            return catalog

    def _table_for(self, site: str) -> tuple[_Catalog, _FactTable]:
        catalog = self._catalog_for(site)
        with self._lock:
            table = self._tables.get(catalog.root)
            if table is None:
                with _gc_paused():
                    table = _generate_facts(
                        catalog,
                        first_date=self.first_date,
                        days=self.days,
                        today=self.today,
                        per_day=self._facts_per_day,
                    )
                self._tables[catalog.root] = table
            return catalog, table

    def _page_mask(self, site: str) -> list[int]:
        """1 for each page of the root that belongs to ``site``."""
        with self._lock:
            mask = self._page_masks.get(site)
            if mask is None:
                catalog = self._catalog_for(site)
                mask = [1 if _site_contains(site, page.url) else 0 for page in catalog.pages]
                self._page_masks[site] = mask
            return mask

    # ------------------------------------------------------------------------------ sitemaps and inspections

    def _build_sitemaps_and_inspections(self) -> None:
        """Sitemaps per site, computed from the generated pages; an inspection result for every page."""
        page_sitemaps: dict[str, list[str]] = {}
        for site in self.sites:
            catalog = self._catalog_for(site)
            rng = random.Random(_sub_seed(self.seed, site, "sitemaps"))
            own = [page for page in catalog.pages if _site_contains(site, page.url)]
            entries: list[dict[str, Any]] = []
            if site.startswith("sc-domain:"):
                by_host: dict[str, list[_Page]] = {}
                for page in own:
                    if page.submitted:
                        parts = urllib.parse.urlsplit(page.url)
                        by_host.setdefault(f"{parts.scheme}://{parts.netloc}/", []).append(page)
                for base, host_pages in by_host.items():
                    entry = _sitemap_entry(base + "sitemap.xml", len(host_pages), rng, self.today)
                    entries.append(entry)
                    for page in host_pages:
                        page_sitemaps.setdefault(page.url, []).append(entry["path"])
            else:
                children: list[dict[str, Any]] = []
                by_section: dict[str, list[_Page]] = {}
                for page in own:
                    if page.submitted:
                        by_section.setdefault("pages" if page.section == "home" else page.section, []).append(page)
                for section, section_pages in sorted(by_section.items()):
                    child = _sitemap_entry(f"{site}{section}-sitemap.xml", len(section_pages), rng, self.today)
                    children.append(child)
                    for page in section_pages:
                        page_sitemaps.setdefault(page.url, []).append(child["path"])
                if children:
                    index = _sitemap_entry(f"{site}sitemap_index.xml", 0, rng, self.today)
                    index["isSitemapsIndex"] = True
                    index["contents"] = [
                        {"type": "web", "submitted": str(sum(int(c["contents"][0]["submitted"]) for c in children))}
                    ]
                    index["warnings"] = str(sum(int(c["warnings"]) for c in children))
                    index["errors"] = str(sum(int(c["errors"]) for c in children))
                    entries.append(index)
                    self.sitemap_indexes[index["path"]] = children
                if rng.random() < 0.5:  # a stale sitemap, submitted long ago and never processed
                    stale = _sitemap_entry(f"{site}old-sitemap.xml", 0, rng, self.today)
                    stale.update(isPending=True, errors="1", contents=[])
                    stale.pop("lastDownloaded")
                    entries.append(stale)
            if entries:
                self.sitemaps[site] = entries
        for catalog in list(self._catalogs.values()):
            for page in catalog.pages:
                self.inspections.setdefault(
                    page.url, _inspection_of(page, catalog, page_sitemaps.get(page.url, []), self.seed, self.today)
                )

    # ------------------------------------------------------------------------------ routing

    def _register_routes(self) -> None:
        base = "/webmasters/v3/sites"
        segment = r"([^/]+)"
        routes: list[tuple[str, str, Callable[..., Reply], str]] = [
            ("GET", base, self._sites_list, "sites.list"),
            ("GET", rf"{base}/{segment}", self._sites_get, "sites.get"),
            ("POST", rf"{base}/{segment}/searchAnalytics/query", self._search_analytics, "searchanalytics.query"),
            ("GET", rf"{base}/{segment}/sitemaps", self._sitemaps_list, "sitemaps.list"),
            ("GET", rf"{base}/{segment}/sitemaps/{segment}", self._sitemaps_get, "sitemaps.get"),
            # The discovery document's path "v1/urlInspection/index:inspect", under the same api_endpoint.
            ("POST", r"/v1/urlInspection/index(?::|%3A|%3a)inspect", self._inspect, "urlInspection.index.inspect"),
        ]
        for method, pattern, handler, name in routes:
            self.server.add_route(method, pattern, self._guarded(handler), name)

    def _guarded(self, handler: Callable[..., Reply]) -> Callable[[RecordedRequest, re.Match[str]], Reply]:
        def run(request: RecordedRequest, match: re.Match[str]) -> Reply:
            if not self.oauth.bearer_token_is_valid(request):
                return _error(
                    401,
                    "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie "
                    "or other valid authentication credential.",
                    "authError",
                )
            groups = [urllib.parse.unquote(group) for group in match.groups()]
            try:
                return handler(request, *groups)
            except _BadRequest as exc:
                return _error(400, exc.message, "badRequest")

        return run

    def _can_read(self, site: str) -> bool:
        return self.sites.get(site, "siteUnverifiedUser") != "siteUnverifiedUser"

    def _forbidden(self, site: str) -> Reply:
        return _error(
            403,
            f"User does not have sufficient permission for site '{site}'. See also: {FORBIDDEN_HELP}.",
            "forbidden",
        )

    def _take_quota(self, route: str, site: str, per_minute: int, per_day: int | None) -> Reply | None:
        """Count a call against the site's quotas; the 429 to answer when one is spent."""
        now = time.monotonic()
        with self._lock:
            calls = self._quota_calls.setdefault((route, site), deque())
            while calls and now - calls[0] >= 60.0:
                calls.popleft()
            if per_day is not None and self._quota_days[(route, site)] >= per_day:
                return _quota_error(route, "per day per site", "quotaExceeded")
            if len(calls) >= per_minute:
                return _quota_error(route, "per minute per site", "rateLimitExceeded")
            calls.append(now)
            self._quota_days[(route, site)] += 1
        return None

    # ------------------------------------------------------------------------------ sites

    def _sites_list(self, request: RecordedRequest) -> Reply:
        entries = [{"siteUrl": site, "permissionLevel": level} for site, level in self.sites.items()]
        return Reply(200, {"siteEntry": entries} if entries else {})

    def _sites_get(self, request: RecordedRequest, site: str) -> Reply:
        if site not in self.sites:
            return self._forbidden(site)
        return Reply(200, {"siteUrl": site, "permissionLevel": self.sites[site]})

    # ------------------------------------------------------------------------------ sitemaps

    def _sitemaps_list(self, request: RecordedRequest, site: str) -> Reply:
        if not self._can_read(site):
            return self._forbidden(site)
        index = request.param("sitemapIndex")
        if index is not None:
            if index not in {entry["path"] for entry in self.sitemaps.get(site, [])}:
                return _error(404, f"Sitemap index not found: {index}", "notFound")
            entries = self.sitemap_indexes.get(index, [])
        else:
            entries = self.sitemaps.get(site, [])
        return Reply(200, {"sitemap": entries} if entries else {})

    def _sitemaps_get(self, request: RecordedRequest, site: str, feedpath: str) -> Reply:
        if not self._can_read(site):
            return self._forbidden(site)
        for entry in itertools.chain(self.sitemaps.get(site, []), *self.sitemap_indexes.values()):
            if entry["path"] == feedpath and _site_contains(site, feedpath):
                return Reply(200, entry)
        return _error(404, "Sitemap not found.", "notFound")

    # ------------------------------------------------------------------------------ URL inspection

    def _inspect(self, request: RecordedRequest) -> Reply:
        body = request.json
        if not isinstance(body, dict) or not isinstance(body.get("inspectionUrl"), str):
            return _error(400, "Request contains an invalid argument: inspectionUrl is required.", "badRequest")
        site, url = body.get("siteUrl"), body["inspectionUrl"]
        if not isinstance(site, str):
            return _error(400, "Request contains an invalid argument: siteUrl is required.", "badRequest")
        if not urllib.parse.urlsplit(url).netloc:
            return _error(400, f"Request contains an invalid argument: {url!r} is not an absolute URL.", "badRequest")
        if not self._can_read(site) or not _site_contains(site, url):
            return _error(403, "You do not own this site, or the inspected URL is not part of this property.")
        refused = self._take_quota("urlInspection.index.inspect", site, self.inspection_qpm, self.inspection_qpd)
        if refused is not None:
            return refused
        result = dict(self.inspections.get(url) or _unknown_url_inspection())
        link_id = hashlib.sha256(url.encode()).hexdigest()[:22]
        result["inspectionResultLink"] = (
            "https://search.google.com/search-console/inspect?resource_id="
            f"{urllib.parse.quote(site, safe='')}&id={link_id}&utm_medium=link&utm_source=api"
        )
        return Reply(200, {"inspectionResult": result})

    # ------------------------------------------------------------------------------ search analytics

    def _search_analytics(self, request: RecordedRequest, site: str) -> Reply:
        if not self._can_read(site):
            return self._forbidden(site)
        body = request.json
        if not isinstance(body, dict):
            raise _BadRequest("The request body must be a JSON object.")
        plan = _Plan.parse(body)
        row_limit = _parse_int(body, "rowLimit", DEFAULT_ROW_LIMIT)
        start_row = _parse_int(body, "startRow", 0)
        if not 1 <= row_limit <= MAX_ROW_LIMIT:
            raise _BadRequest(f"rowLimit must be between 1 and {MAX_ROW_LIMIT}, not {row_limit}.")
        if start_row < 0:
            raise _BadRequest(f"startRow must be non-negative, not {start_row}.")
        refused = self._take_quota("searchanalytics.query", site, self.search_analytics_qpm, None)
        if refused is not None:
            return refused
        result = self._result(site, plan)
        answer: dict[str, Any] = {}
        page = result.rows[start_row : start_row + row_limit]
        if page:
            with_position = plan.search_type not in QUERYLESS_SEARCH_TYPES
            answer["rows"] = [_api_row(row, with_position) for row in page]
        answer["responseAggregationType"] = plan.aggregation
        if result.metadata:
            answer["metadata"] = result.metadata
        return Reply(200, answer)

    def _result(self, site: str, plan: _Plan) -> _Result:
        key = (site, plan, self._row_cap_per_day)
        with self._lock:
            cached = self._results.get(key)
            if cached is not None:
                self._results.move_to_end(key)
                return cached
        with _gc_paused():
            result = self._compute(site, plan)
        with self._lock:
            self._results[key] = result
            while len(self._results) > 16:  # a few paged pulls in flight; big results are memory
                self._results.popitem(last=False)
        return result

    def _compute(self, site: str, plan: _Plan) -> _Result:
        catalog, table = self._table_for(site)
        last_day = self.today if plan.data_state != "final" else self.last_final_date(site)
        first_day = self.first_date
        if "hour" in plan.dimensions:
            first_day = max(first_day, self.today - dt.timedelta(days=HOURLY_DAYS - 1))
        start = max(plan.start, first_day)
        end = min(plan.end, last_day)
        metadata = self._metadata(plan)
        if start > end:
            return _Result([], metadata)
        lo = table.day_start[(start - self.first_date).days]
        hi = table.day_start[(end - self.first_date).days + 1]
        selected = self._select(site, catalog, table, plan, lo, hi)
        frame = _frame(table, selected, plan)
        if plan.aggregation == "byProperty":
            frame = _collapse_pages(frame)
        groups = _group(frame, plan.dimensions, self._row_cap_per_day, self._rank_tables(catalog))
        rows = self._decoded_rows(catalog, plan, groups)
        if plan.dimensions and set(plan.dimensions) <= {"date", "hour"}:
            rows.sort(key=lambda row: row[0])  # Google lists a time series in time order
        return _Result(rows, metadata)

    def _decoded_rows(
        self, catalog: _Catalog, plan: _Plan, groups: dict[tuple[int, ...], list[Any]]
    ) -> list[tuple[Any, ...]]:
        """Rows in answer order (clicks, impressions, keys), each ``(keys, clicks, impressions, position_sum)``
        with its keys decoded to the API's strings.

        The sort compares flat tuples of ints (alphabetical ranks stand for the strings), built column by
        column: no Python function runs per comparison.
        """
        codes = list(groups)
        metrics = list(groups.values())
        code_columns = list(zip(*codes, strict=True)) if plan.dimensions else []
        ranks = self._rank_tables(catalog)
        sort_keys = list(
            zip(
                [-clicks for clicks, _, _ in metrics],
                [-impressions for _, impressions, _ in metrics],
                *(
                    map(ranks[dim].__getitem__, column)
                    for dim, column in zip(plan.dimensions, code_columns, strict=True)
                ),
                strict=True,
            )
        )
        order = sorted(range(len(codes)), key=sort_keys.__getitem__)
        decoders = self._decoders(catalog)
        decoded = [list(map(decoders[dim], column)) for dim, column in zip(plan.dimensions, code_columns, strict=True)]
        keys = list(zip(*decoded, strict=True)) if decoded else [()] * len(codes)
        return [(keys[row], *metrics[row]) for row in order]

    def _metadata(self, plan: _Plan) -> dict[str, str]:
        first_incomplete = self.first_incomplete_date("")
        if plan.end < first_incomplete or plan.start > self.today:
            return {}
        if plan.data_state == "all" and "date" in plan.dimensions:
            return {"firstIncompleteDate": first_incomplete.isoformat()}
        if plan.data_state == "hourly_all" and "hour" in plan.dimensions:
            return {"firstIncompleteHour": pacific_hour(first_incomplete, 0)}
        return {}

    def _select(self, site: str, catalog: _Catalog, table: _FactTable, plan: _Plan, lo: int, hi: int) -> list[int]:
        """Row numbers in [lo, hi) that pass the site, type and filters, as a bytewise AND of 0/1 masks.

        Each mask is built in C (``bytes(map(list.__getitem__, column))``) and masks are combined as big
        integers, so a selection over 200,000 facts costs milliseconds, not a Python loop per row.
        """
        dimension_values: dict[str, Sequence[str]] = {
            "query": catalog.queries,
            "page": [page.url for page in catalog.pages],
            "country": COUNTRIES,
            "device": DEVICES,
            "searchAppearance": APPEARANCES,
        }
        masks: dict[str, list[int]] = {
            "page": list(self._page_mask(site)),
            "search_type": [1 if name == plan.search_type else 0 for name in SEARCH_TYPES],
        }
        # Anonymized queries (and query-less types) live at index -1 of the query mask: the extra last slot.
        uses_query = "query" in plan.dimensions or any(item.dimension == "query" for item in plan.filters)
        if uses_query:
            masks["query"] = [1] * len(catalog.queries) + [0]
        for item in plan.filters:
            name = "appearance" if item.dimension == "searchAppearance" else item.dimension
            values = dimension_values[item.dimension]
            mask = masks.get(name)
            if mask is None:
                mask = [1] * len(values) + ([1] if name == "appearance" else [])
                masks[name] = mask
            predicate = item.predicate()
            for code, value in enumerate(values):
                if mask[code] and not predicate(value):
                    mask[code] = 0
            if name == "appearance":  # a fact without an appearance passes only the negative operators
                mask[-1] = mask[-1] and int(item.operator in ("notEquals", "notContains", "excludingRegex"))
        if "searchAppearance" in plan.dimensions:
            mask = masks.setdefault("appearance", [1] * len(APPEARANCES) + [1])
            mask[-1] = 0
        columns = {
            "page": table.page,
            "search_type": table.search_type,
            "query": table.query,
            "country": table.country,
            "device": table.device,
            "appearance": table.appearance,
        }
        combined = -1
        size = hi - lo
        for name, mask in masks.items():
            if all(mask):
                continue
            selector = bytes(map(mask.__getitem__, columns[name][lo:hi]))
            combined &= int.from_bytes(selector, "little")
        if combined == -1:
            return list(range(lo, hi))
        return list(itertools.compress(range(lo, hi), combined.to_bytes(size, "little")))

    def _decoders(self, catalog: _Catalog) -> dict[str, Callable[[int], str]]:
        pages = [page.url for page in catalog.pages]
        return {
            "query": catalog.queries.__getitem__,
            "page": pages.__getitem__,
            "country": COUNTRIES.__getitem__,
            "device": DEVICES.__getitem__,
            "date": self._date_keys.__getitem__,
            "hour": self._hour_key,
            "searchAppearance": APPEARANCES.__getitem__,
        }

    def _rank_tables(self, catalog: _Catalog) -> dict[str, Sequence[int]]:
        """Per dimension, each code's rank in the alphabetical order of its strings: rows sort on ints."""

        def ranks(values: Sequence[str]) -> list[int]:
            table = [0] * len(values)
            for rank, code in enumerate(sorted(range(len(values)), key=values.__getitem__)):
                table[code] = rank
            return table

        with self._lock:
            cached = self._ranks.get(catalog.root)
            if cached is None:
                cached = {
                    "query": ranks(catalog.queries),
                    "page": ranks([page.url for page in catalog.pages]),
                    "country": ranks(COUNTRIES),
                    "device": ranks(DEVICES),
                    "date": range(self.days),  # date and hour codes already sort in time order
                    "hour": range(self.days * 24),
                    "searchAppearance": ranks(APPEARANCES),
                }
                self._ranks[catalog.root] = cached
            return cached

    def _hour_key(self, day_hour: int) -> str:
        key = self._hour_keys.get(day_hour)
        if key is None:
            day, hour = divmod(day_hour, 24)
            key = pacific_hour(self.first_date + dt.timedelta(days=day), hour)
            self._hour_keys[day_hour] = key
        return key


# ------------------------------------------------------------------------------------------ aggregation


@dataclass
class _Result:
    """A request's whole answer, sorted: (keys, clicks, impressions, position_sum) per row."""

    rows: list[tuple[Any, ...]]
    metadata: dict[str, str]


@dataclass
class _Frame:
    """Selected facts as parallel lists: the dimension columns a request needs, and the metrics."""

    columns: dict[str, list[int]]  # some of: query, page, country, device, day, day_hour, appearance
    clicks: list[int]
    impressions: list[int]
    position_sum: list[float]


_DIMENSION_COLUMN = {
    "query": "query",
    "page": "page",
    "country": "country",
    "device": "device",
    "date": "day",
    "hour": "day_hour",
    "searchAppearance": "appearance",
}
_EVENT_COLUMNS = ("query", "page", "country", "device", "day_hour", "appearance")  # a search, less its page


def _frame(table: _FactTable, rows: list[int], plan: _Plan) -> _Frame:
    names = {"day"} | {_DIMENSION_COLUMN[dim] for dim in plan.dimensions}
    if plan.aggregation == "byProperty":
        names |= set(_EVENT_COLUMNS)

    def take(column: array[int]) -> list[int]:
        return list(map(column.__getitem__, rows))

    return _Frame(
        columns={name: take(getattr(table, name)) for name in sorted(names)},
        clicks=take(table.clicks),
        impressions=take(table.impressions),
        position_sum=take(table.position_sum),  # type: ignore[arg-type]  # ints are exact floats here
    )


def _collapse_pages(frame: _Frame) -> _Frame:
    """By property: facts that differ only by page are one search (see the module docstring)."""
    columns = frame.columns
    # Anonymized queries keep their page in the key: each is its own search.
    pages = [page if query < 0 else -1 for query, page in zip(columns["query"], columns["page"], strict=True)]
    keys = zip(*(pages if name == "page" else columns[name] for name in _EVENT_COLUMNS), strict=True)
    events: dict[tuple[int, ...], list[float]] = {}
    for key, clicks, impressions, position_sum in zip(
        keys, frame.clicks, frame.impressions, frame.position_sum, strict=True
    ):
        average = position_sum / impressions
        event = events.get(key)
        if event is None:
            events[key] = [clicks, impressions, average]
        else:
            event[0] += clicks
            event[1] = max(event[1], impressions)
            event[2] = min(event[2], average)
    if not events:
        return _Frame({name: [] for name in (*_EVENT_COLUMNS, "day")}, [], [], [])
    event_columns = dict(zip(_EVENT_COLUMNS, map(list, zip(*events, strict=True)), strict=True))
    event_columns["day"] = [day_hour // 24 for day_hour in event_columns["day_hour"]]
    event_clicks, event_impressions, event_best = zip(*events.values(), strict=True)
    return _Frame(
        event_columns,
        [int(min(c, i)) for c, i in zip(event_clicks, event_impressions, strict=True)],
        [int(i) for i in event_impressions],
        [b * i for b, i in zip(event_best, event_impressions, strict=True)],
    )


def _accumulate(keys: Iterable[tuple[int, ...]], frame: _Frame) -> dict[tuple[int, ...], list[Any]]:
    return _summed(zip(keys, frame.clicks, frame.impressions, frame.position_sum, strict=False))


def _summed(rows: Iterable[tuple[tuple[int, ...], int, int, int]]) -> dict[tuple[int, ...], list[Any]]:
    """(key, clicks, impressions, position_sum) rows summed by key."""
    groups: dict[tuple[int, ...], list[Any]] = {}
    for key, clicks, impressions, position_sum in rows:
        group = groups.get(key)
        if group is None:
            groups[key] = [clicks, impressions, position_sum]
        else:
            group[0] += clicks
            group[1] += impressions
            group[2] += position_sum
    return groups


def _group(
    frame: _Frame, dimensions: tuple[str, ...], cap_per_day: int, ranks: Mapping[str, Sequence[int]]
) -> dict[tuple[int, ...], list[Any]]:
    """Sum the frame by ``dimensions``, keeping only each day's top ``cap_per_day`` rows of that grouping.

    Within a day, rows rank by clicks, then impressions (both descending), then keys (alphabetical).
    """
    key_columns = [frame.columns[_DIMENSION_COLUMN[dim]] for dim in dimensions]
    days = frame.columns["day"]
    per_day = Counter(days)
    if not per_day or max(per_day.values()) <= cap_per_day:  # no day can have more groups than facts
        keys = zip(*key_columns, strict=True) if key_columns else itertools.repeat((), len(days))
        return _accumulate(keys, frame)
    daily = _accumulate(zip(days, *key_columns, strict=True), frame)
    rank_tables = [ranks[dim] for dim in dimensions]
    by_day: dict[int, list[tuple[tuple[int, ...], list[Any]]]] = {}
    for key, metrics in daily.items():
        by_day.setdefault(key[0], []).append((key[1:], metrics))
    for entries in by_day.values():
        if len(entries) > cap_per_day:
            entries.sort(
                key=lambda entry: (
                    -entry[1][0],
                    -entry[1][1],
                    tuple(rank[code] for rank, code in zip(rank_tables, entry[0], strict=True)),
                )
            )
            del entries[cap_per_day:]
    return _summed((key, *metrics) for entries in by_day.values() for key, metrics in entries)


def _api_row(row: tuple[Any, ...], with_position: bool) -> dict[str, Any]:
    keys, clicks, impressions, position_sum = row
    answer: dict[str, Any] = {"keys": list(keys)} if keys else {}
    answer["clicks"] = clicks
    answer["impressions"] = impressions
    answer["ctr"] = clicks / impressions
    if with_position:
        answer["position"] = position_sum / impressions
    return answer


# ------------------------------------------------------------------------------------------ helpers


def _error(status: int, message: str, reason: str | None = None) -> Reply:
    return Reply(status, google_error(status, None, message, reason))


def _quota_error(route: str, limit: str, reason: str) -> Reply:
    metric = "URL inspections" if route.startswith("urlInspection") else "Search Analytics queries"
    message = (
        f"Quota exceeded for quota metric '{metric}' and limit '{metric} {limit}' of service "
        "'searchconsole.googleapis.com'."
    )
    body = google_error(429, "RESOURCE_EXHAUSTED", message, reason)
    body["error"]["errors"][0]["domain"] = "usageLimits"
    return Reply(429, body)


def _site_contains(site: str, url: str) -> bool:
    """Whether ``url`` belongs to the property ``site`` (any scheme and subdomain for a domain property)."""
    if site.startswith("sc-domain:"):
        domain = site.removeprefix("sc-domain:").lower()
        parts = urllib.parse.urlsplit(url)
        host = (parts.hostname or "").lower()
        return parts.scheme in ("http", "https") and (host == domain or host.endswith("." + domain))
    return url.startswith(site)


def _timestamp(today: dt.date, rng: random.Random, max_days_ago: int, *, millis: bool = True) -> str:
    """An RFC 3339 UTC time within ``max_days_ago`` days before ``today``."""
    moment = dt.datetime(today.year, today.month, today.day, tzinfo=dt.UTC) - dt.timedelta(
        days=rng.randint(0, max_days_ago), seconds=rng.randint(0, 86_399)
    )
    fraction = f".{rng.randint(0, 999):03d}" if millis else ""
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + fraction + "Z"


def _sitemap_entry(path: str, urls: int, rng: random.Random, today: dt.date) -> dict[str, Any]:
    """A WmxSitemap: int64 counts are strings; ``indexed`` is deprecated and Google sends "0"."""
    warnings = rng.choice((0, 0, 0, 1, 3))
    return {
        "path": path,
        "lastSubmitted": _timestamp(today - dt.timedelta(days=30), rng, 300),
        "isPending": False,
        "isSitemapsIndex": False,
        "type": "sitemap",
        "lastDownloaded": _timestamp(today, rng, 6),
        "warnings": str(warnings),
        "errors": "0",
        "contents": [{"type": "web", "submitted": str(urls), "indexed": "0"}],
    }


def _unknown_url_inspection() -> dict[str, Any]:
    return {
        "indexStatusResult": {
            "verdict": "NEUTRAL",
            "coverageState": "URL is unknown to Google",
            "robotsTxtState": "ROBOTS_TXT_STATE_UNSPECIFIED",
            "indexingState": "INDEXING_STATE_UNSPECIFIED",
            "pageFetchState": "PAGE_FETCH_STATE_UNSPECIFIED",
        }
    }


_RICH_RESULT_TYPES = {
    "RICHCARD": "Breadcrumbs",
    "REVIEW_SNIPPET": "Review snippets",
    "VIDEO": "Videos",
    "PRODUCT_SNIPPETS": "Product snippets",
    "MERCHANT_LISTINGS": "Merchant listings",
}


def _inspection_of(page: _Page, catalog: _Catalog, sitemaps: list[str], seed: int, today: dt.date) -> dict[str, Any]:
    """An inspectionResult (without its link, which names the property) computed from the page."""
    rng = random.Random(_sub_seed(seed, page.url, "inspection"))
    roll = rng.random()
    crawled = {
        "lastCrawlTime": _timestamp(today, rng, 40, millis=False),
        "crawledAs": "MOBILE" if rng.random() < 0.95 else "DESKTOP",
        "robotsTxtState": "ALLOWED",
        "pageFetchState": "SUCCESSFUL",
        "indexingState": "INDEXING_ALLOWED",
    }
    status: dict[str, Any]
    if page.section == "legacy":
        canonical = catalog.pages[0].url
        if roll < 0.6:
            status = {"verdict": "NEUTRAL", "coverageState": "Page with redirect", **crawled}
            status["googleCanonical"] = canonical
        else:
            status = {
                "verdict": "NEUTRAL",
                "coverageState": "Not found (404)",
                **crawled,
                "pageFetchState": "NOT_FOUND",
            }
    elif page.section in ("tag", "category") and roll < 0.7:
        status = {
            "verdict": "NEUTRAL",
            "coverageState": "Excluded by ‘noindex’ tag",
            **crawled,
            "indexingState": "BLOCKED_BY_META_TAG",
        }
    elif roll < 0.85 or page.section == "home":
        state = "Submitted and indexed" if sitemaps else "Indexed, not submitted in sitemap"
        status = {"verdict": "PASS", "coverageState": state, **crawled, "googleCanonical": page.url}
        status["userCanonical"] = page.url
    elif roll < 0.91:
        status = {"verdict": "NEUTRAL", "coverageState": "Crawled - currently not indexed", **crawled}
    elif roll < 0.95:
        other = catalog.pages[rng.randrange(len(catalog.pages))].url
        status = {
            "verdict": "NEUTRAL",
            "coverageState": "Duplicate, Google chose different canonical than user",
            **crawled,
            "googleCanonical": other,
            "userCanonical": page.url,
        }
    elif roll < 0.98:
        status = {
            "verdict": "NEUTRAL",
            "coverageState": "Discovered - currently not indexed",
            "robotsTxtState": "ALLOWED",
            "indexingState": "INDEXING_STATE_UNSPECIFIED",
            "pageFetchState": "PAGE_FETCH_STATE_UNSPECIFIED",
        }
    else:
        status = {"verdict": "FAIL", "coverageState": "Server error (5xx)", **crawled, "pageFetchState": "SERVER_ERROR"}
    if sitemaps:
        status["sitemap"] = list(sitemaps)
    referrers = [catalog.pages[rng.randrange(len(catalog.pages))].url for _ in range(rng.randint(0, 3))]
    if referrers:
        status["referringUrls"] = sorted(set(referrers) - {page.url})
    result: dict[str, Any] = {"indexStatusResult": status}
    rich_type = _RICH_RESULT_TYPES.get(page.appearance or "")
    if rich_type and status["verdict"] == "PASS":
        broken = rng.random() < 0.15
        issues = (
            [{"issueMessage": 'Missing field "aggregateRating"', "severity": "WARNING"}] if rng.random() < 0.4 else []
        )
        if broken:
            issues.append(
                {
                    "issueMessage": 'Either "offers", "review", or "aggregateRating" should be specified',
                    "severity": "ERROR",
                }
            )
        result["richResultsResult"] = {
            "verdict": "FAIL" if broken else "PASS",
            "detectedItems": [{"richResultType": rich_type, "items": [{"name": "Unnamed item", "issues": issues}]}],
        }
    if page.section == "amp":
        result["ampResult"] = {
            "verdict": "PASS" if status["verdict"] == "PASS" else "NEUTRAL",
            "ampUrl": page.url,
            "ampIndexStatusVerdict": status["verdict"] if status["verdict"] == "PASS" else "NEUTRAL",
            "robotsTxtState": "ALLOWED",
            "indexingState": "AMP_INDEXING_ALLOWED",
            "pageFetchState": "SUCCESSFUL",
            "lastCrawlTime": status.get("lastCrawlTime", crawled["lastCrawlTime"]),
            "issues": [],
        }
    return result
