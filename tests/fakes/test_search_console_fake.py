"""FakeSearchConsole driven only by the real google-api-python-client (static discovery) and google-auth.

Expected answers are computed here from ``fake.facts(site)`` by a deliberately plain reference
implementation of the documented model (``expected_rows``), never by the fake's own code.
"""

from __future__ import annotations

import collections
import datetime as dt
import functools
import math
import re
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from typing import Any
from zoneinfo import ZoneInfo

import google.oauth2.credentials
import google_auth_httplib2
import httplib2
import pytest
from google.oauth2 import service_account
from googleapiclient.discovery import build
from googleapiclient.errors import HttpError

from fakes.google_oauth import JWT_BEARER_GRANT, REFRESH_TOKEN_GRANT
from fakes.search_console import ROUTE_NAMES, Fact, FakeSearchConsole

pytestmark = pytest.mark.slow  # real HTTP servers, the real discovery client

WEBMASTERS_READONLY = "https://www.googleapis.com/auth/webmasters.readonly"
DOMAIN = "sc-domain:example.com"
WWW = "https://www.example.com/"
BLOG = "https://www.example.com/blog/"
UNVERIFIED = "http://example.org/"
SHOP = "https://shop.example.net/"
PACIFIC = ZoneInfo("America/Los_Angeles")
Totals = tuple[int, int, float]  # clicks, impressions, position_sum
FactsOf = Callable[[str], list[Fact]]  # site → its facts


# ------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeSearchConsole]:
    with FakeSearchConsole() as server:
        yield server


def _build(fake: FakeSearchConsole, credentials: Any = None, http: Any = None) -> Any:
    return build(
        "searchconsole",
        "v1",
        credentials=credentials,
        http=http,
        static_discovery=True,
        cache_discovery=False,
        client_options={"api_endpoint": fake.url},
    )


def _service_account(fake: FakeSearchConsole) -> service_account.Credentials:
    info = fake.oauth.service_account_info("seo-proj")
    return service_account.Credentials.from_service_account_info(info, scopes=[WEBMASTERS_READONLY])


@pytest.fixture(scope="module")
def facts(fake: FakeSearchConsole) -> FactsOf:
    """``facts(site)``: the fake's ground truth, fetched once per site for the module."""
    return functools.cache(fake.facts)


@pytest.fixture(scope="module")
def service(fake: FakeSearchConsole) -> Any:
    return _build(fake, _service_account(fake))


@pytest.fixture(autouse=True)
def clean_fake(request: pytest.FixtureRequest) -> Iterator[None]:
    """Leave no fault, quota or cap behind, and fail any test during which the fake crashed."""
    if "fake" not in request.fixturenames:
        yield
        return
    fake: FakeSearchConsole = request.getfixturevalue("fake")
    crashes_before = len(fake.server.handler_errors)
    yield
    fake.server.clear_faults()
    fake.reset_quotas()
    fake.search_analytics_qpm, fake.inspection_qpm, fake.inspection_qpd = 1_200, 600, 2_000
    fake.row_cap_per_day = 50_000
    assert fake.server.handler_errors[crashes_before:] == []


# ------------------------------------------------------------------------------------------ reference


def _matches(value: str | None, operator: str, expression: str, case_sensitive: bool) -> bool:
    """Google's filter semantics, written out plainly. A missing value only passes negative operators."""
    if value is None:
        return operator in ("notEquals", "notContains", "excludingRegex")
    if operator == "includingRegex":
        return re.search(expression, value) is not None
    if operator == "excludingRegex":
        return re.search(expression, value) is None
    if operator == "contains":
        return expression.lower() in value.lower()
    if operator == "notContains":
        return expression.lower() not in value.lower()
    same = value == expression if case_sensitive else value.lower() == expression.lower()
    return same if operator == "equals" else not same


def _key(fact: Fact, dimension: str) -> str | None:
    if dimension == "date":
        return fact.date.isoformat()
    if dimension == "hour":
        return dt.datetime.combine(fact.date, dt.time(fact.hour), tzinfo=PACIFIC).isoformat()
    if dimension == "searchAppearance":
        return fact.search_appearance
    return str(getattr(fact, dimension))


def expected_rows(
    facts: Sequence[Fact],
    *,
    start: dt.date,
    end: dt.date,
    dimensions: Sequence[str] = (),
    filters: Sequence[tuple[str, str, str]] = (),
    search_type: str = "web",
    aggregation: str = "auto",
    cap_per_day: int | None = None,
) -> dict[tuple[str, ...], Totals]:
    """What the module docstring of ``fakes.search_console`` promises, computed one fact at a time."""
    field = {"searchAppearance": "search_appearance"}
    uses_query = "query" in dimensions or any(dimension == "query" for dimension, _, _ in filters)
    selected = [
        fact
        for fact in facts
        if fact.search_type == search_type
        and start <= fact.date <= end
        and not (uses_query and fact.query is None)
        and not ("searchAppearance" in dimensions and fact.search_appearance is None)
        and all(
            _matches(
                getattr(fact, field.get(dimension, dimension)), operator, expression, dimension in ("query", "page")
            )
            for dimension, operator, expression in filters
        )
    ]
    if aggregation == "auto":
        by_page = "page" in dimensions or any(dimension == "page" for dimension, _, _ in filters)
        aggregation = "byPage" if by_page else "byProperty"
    if aggregation == "byProperty":  # one search, however many of the site's pages it showed
        searches: dict[tuple[Any, ...], list[Any]] = {}
        for fact in selected:
            search = (fact.query, fact.page if fact.query is None else None, fact.country, fact.device)
            search += (fact.date, fact.hour, fact.search_appearance)
            if search not in searches:
                searches[search] = [fact, 0, 0, 101.0]
            entry = searches[search]
            entry[1] += fact.clicks
            entry[2] = max(entry[2], fact.impressions)
            entry[3] = min(entry[3], fact.position_sum / fact.impressions)
        selected = [
            Fact(*fact[:8], min(clicks, impressions), impressions, best * impressions)  # type: ignore[arg-type]
            for fact, clicks, impressions, best in searches.values()
        ]
    daily: dict[tuple[Any, ...], list[float]] = collections.defaultdict(lambda: [0, 0, 0.0])
    for fact in selected:
        totals = daily[(fact.date, *(_key(fact, dimension) for dimension in dimensions))]
        totals[0] += fact.clicks
        totals[1] += fact.impressions
        totals[2] += fact.position_sum
    if cap_per_day is not None:  # each day keeps its top rows: clicks, impressions, then keys
        by_day: dict[dt.date, list[tuple[tuple[Any, ...], list[float]]]] = collections.defaultdict(list)
        for key, totals in daily.items():
            by_day[key[0]].append((key, totals))
        daily = {}
        for entries in by_day.values():
            entries.sort(key=lambda entry: (-entry[1][0], -entry[1][1], entry[0][1:]))
            daily.update(entries[:cap_per_day])
    rows: dict[tuple[str, ...], list[float]] = collections.defaultdict(lambda: [0, 0, 0.0])
    for key, (clicks, impressions, position_sum) in daily.items():
        row = rows[key[1:]]
        row[0] += clicks
        row[1] += impressions
        row[2] += position_sum
    return {key: (int(c), int(i), p) for key, (c, i, p) in rows.items()}


def query_all(
    service: Any, site: str, body: dict[str, Any], row_limit: int = 25_000, *, until_empty: bool = False
) -> list[dict[str, Any]]:
    """Every row, paging with startRow: until a short page, or ``until_empty``, until an answer without ``rows``."""
    rows: list[dict[str, Any]] = []
    while True:
        page_body = {**body, "rowLimit": row_limit, "startRow": len(rows)}
        answer = service.searchanalytics().query(siteUrl=site, body=page_body).execute()
        if "rows" not in answer:
            return rows
        rows.extend(answer["rows"])
        if len(answer["rows"]) < row_limit and not until_empty:
            return rows


def assert_rows_equal(
    rows: list[dict[str, Any]], expected: dict[tuple[str, ...], Totals], *, positions: bool = True
) -> None:
    got = {tuple(row.get("keys", ())): row for row in rows}
    assert len(got) == len(rows), "a key appeared twice"
    assert set(got) == set(expected)
    for key, (clicks, impressions, position_sum) in expected.items():
        row = got[key]
        assert (row["clicks"], row["impressions"]) == (clicks, impressions), key
        assert math.isclose(row["ctr"], clicks / impressions, rel_tol=1e-9), key
        if positions:
            assert math.isclose(row["position"], position_sum / impressions, rel_tol=1e-9), key
            assert 1 <= row["position"] <= 100
        else:
            assert "position" not in row


def assert_ranked(rows: list[dict[str, Any]]) -> None:
    """Google's order: clicks descending, then (the fake's tie-break) impressions descending, then keys."""
    ranks = [(-row["clicks"], -row["impressions"], row.get("keys", [])) for row in rows]
    assert ranks == sorted(ranks)


def _error(excinfo: pytest.ExceptionInfo[HttpError]) -> dict[str, Any]:
    return excinfo.value.error_details[0]  # type: ignore[no-any-return]


# ------------------------------------------------------------------------------------------ the generated data


def test_generation_is_deterministic_by_seed() -> None:
    first, again, other = FakeSearchConsole(days=30), FakeSearchConsole(days=30), FakeSearchConsole(days=30, seed=15)
    assert first.facts(WWW) == again.facts(WWW)
    assert first.sitemaps == again.sitemaps and first.inspections == again.inspections
    assert first.facts(WWW) != other.facts(WWW)


def test_generated_data_looks_like_a_real_property(fake: FakeSearchConsole, facts: FactsOf) -> None:
    domain_facts = facts(DOMAIN)
    web = [fact for fact in domain_facts if fact.search_type == "web"]
    impressions = sum(fact.impressions for fact in web)
    by_query = collections.Counter[str]()
    for fact in web:
        if fact.query is not None:
            by_query[fact.query] += fact.impressions
    ranked = sorted(by_query.values(), reverse=True)
    head = sum(ranked[: len(ranked) // 10]) / sum(ranked)
    assert len(by_query) >= 250 and 0.4 < head < 0.85  # a few hundred queries: a head and a long tail
    assert ranked[-1] < ranked[0] / 50
    countries = {fact.country for fact in domain_facts}
    assert 20 <= len(countries) <= 22 and {"usa", "esp", "gbr"} <= countries
    assert all(re.fullmatch(r"[a-z]{3}", country) for country in countries)
    assert {fact.device for fact in domain_facts} == {"DESKTOP", "MOBILE", "TABLET"}
    appearances = {fact.search_appearance for fact in domain_facts} - {None}
    assert {"AMP_BLUE_LINK", "RICHCARD", "VIDEO"} <= appearances <= {
        "AMP_BLUE_LINK", "AMP_TOP_STORIES", "RICHCARD", "REVIEW_SNIPPET", "VIDEO", "TRANSLATED_RESULT",
        "PRODUCT_SNIPPETS", "MERCHANT_LISTINGS",
    }  # fmt: skip
    assert {fact.search_type for fact in domain_facts} == {"web", "image", "video", "news", "discover", "googleNews"}
    assert all(1 <= fact.position <= 100 for fact in web)
    assert 0.01 < sum(fact.clicks for fact in web) / impressions < 0.1
    assert 5 < sum(fact.position_sum for fact in web) / impressions < 40
    anonymized = sum(fact.impressions for fact in web if fact.query is None) / impressions
    assert 0.05 < anonymized < 0.35
    assert {fact.date for fact in domain_facts} == {fake.today - dt.timedelta(days=n) for n in range(fake.days)}
    assert all(fact.clicks <= fact.impressions for fact in domain_facts)


def test_properties_of_one_domain_share_its_facts(fake: FakeSearchConsole, facts: FactsOf) -> None:
    domain = facts(DOMAIN)
    assert facts(WWW) == [fact for fact in domain if fact.page.startswith(WWW)]
    assert facts(BLOG) == [fact for fact in domain if fact.page.startswith(BLOG)]
    hosts = {urllib.parse.urlsplit(fact.page).netloc for fact in domain}
    assert {"www.example.com", "docs.example.com"} <= hosts
    assert all(page.startswith(SHOP) for page in fake.pages(SHOP))
    assert len(fake.pages(SHOP)) == 150 and len(fake.pages(BLOG)) > 20


# ------------------------------------------------------------------------------------------ sites


def test_sites_list_and_get(fake: FakeSearchConsole, service: Any) -> None:
    answer = service.sites().list().execute()
    assert answer == {"siteEntry": [{"siteUrl": site, "permissionLevel": level} for site, level in fake.sites.items()]}
    assert {entry["permissionLevel"] for entry in answer["siteEntry"]} == {
        "siteOwner", "siteFullUser", "siteRestrictedUser", "siteUnverifiedUser",
    }  # fmt: skip
    assert service.sites().get(siteUrl=BLOG).execute() == {"siteUrl": BLOG, "permissionLevel": "siteRestrictedUser"}
    # The path carries the site percent-encoded: matched un-decoded, then decoded by the fake.
    assert (
        fake.server.requests_for("sites.get")[-1].path == "/webmasters/v3/sites/https%3A%2F%2Fwww.example.com%2Fblog%2F"
    )
    with pytest.raises(HttpError) as excinfo:
        service.sites().get(siteUrl="https://elsewhere.example/").execute()
    assert excinfo.value.status_code == 403
    assert set(ROUTE_NAMES) == fake.server.route_names


def test_an_account_without_sites_gets_an_empty_answer() -> None:
    with FakeSearchConsole(sites={}) as empty:
        assert _build(empty, _service_account(empty)).sites().list().execute() == {}


# ------------------------------------------------------------------------------------------ search analytics


def _window(fake: FakeSearchConsole, days: int = 28) -> tuple[dt.date, dt.date]:
    end = fake.last_final_date(DOMAIN)
    return end - dt.timedelta(days=days - 1), end


AGGREGATION_CASES = [
    pytest.param(DOMAIN, [], [], id="totals"),
    pytest.param(DOMAIN, ["query"], [("page", "contains", "/BLOG/")], id="15.2-query-on-blog-pages"),
    pytest.param(WWW, ["page"], [], id="pages"),
    pytest.param(DOMAIN, ["country", "device"], [("device", "notEquals", "mobile")], id="country-device"),
    pytest.param(DOMAIN, ["query", "page", "date"], [("query", "includingRegex", r"^(que|como) ")], id="regex"),
    pytest.param(
        DOMAIN, ["date"], [("query", "excludingRegex", "bigquery|ga4"), ("country", "equals", "ESP")], id="date"
    ),
    pytest.param(DOMAIN, ["searchAppearance"], [], id="search-appearance"),
    pytest.param(
        SHOP,
        ["query", "country"],
        [("query", "notContains", "Shoes"), ("searchAppearance", "notEquals", "VIDEO")],
        id="shop",
    ),
    pytest.param(DOMAIN, ["device"], [("searchAppearance", "equals", "VIDEO")], id="appearance-filter"),
    pytest.param(BLOG, ["query", "page"], [("query", "equals", "bigquery")], id="equals"),
]


@pytest.mark.parametrize(("site", "dimensions", "filters"), AGGREGATION_CASES)
def test_search_analytics_equals_an_independent_aggregation(
    fake: FakeSearchConsole,
    service: Any,
    site: str,
    dimensions: list[str],
    filters: list[tuple[str, str, str]],
    facts: FactsOf,
) -> None:
    start, end = _window(fake)
    body = {
        "startDate": start.isoformat(),
        "endDate": end.isoformat(),
        "dimensions": dimensions,
        "dimensionFilterGroups": [
            {"groupType": "and", "filters": [{"dimension": d, "operator": o, "expression": e} for d, o, e in filters]}
        ],
    }
    rows = query_all(service, site, body)
    expected = expected_rows(facts(site), start=start, end=end, dimensions=dimensions, filters=filters)
    assert expected, "the case must select some data"
    assert_rows_equal(rows, expected)
    if dimensions != ["date"]:
        assert_ranked(rows)


def test_wire_names_in_upper_case_are_accepted(fake: FakeSearchConsole, service: Any, facts: FactsOf) -> None:
    """The discovery document spells enums QUERY, BY_PAGE, FINAL; the API takes those and camelCase alike."""
    start, end = _window(fake, 7)
    dates = {"startDate": start.isoformat(), "endDate": end.isoformat()}
    lower = {**dates, "dimensions": ["query"], "type": "web", "dataState": "final", "aggregationType": "byPage"}
    upper = {**dates, "dimensions": ["QUERY"], "type": "WEB", "dataState": "FINAL", "aggregationType": "BY_PAGE"}
    assert query_all(service, DOMAIN, lower) == query_all(service, DOMAIN, upper)
    legacy = {
        **dates,
        "dimensions": ["query"],
        "aggregationType": "byPage",
        "searchType": "image",
    }  # "type" before 2021
    expected = expected_rows(
        facts(DOMAIN), start=start, end=end, dimensions=["query"], search_type="image", aggregation="byPage"
    )
    assert_rows_equal(query_all(service, DOMAIN, legacy), expected)


def test_paging_with_start_row_ends_with_an_answer_without_rows(fake: FakeSearchConsole, service: Any) -> None:
    start, end = _window(fake, 60)
    body = {"startDate": start.isoformat(), "endDate": end.isoformat(), "dimensions": ["query", "page", "date"]}
    fake.server.clear_log()
    paged = query_all(service, DOMAIN, body, row_limit=4_000, until_empty=True)
    starts = [request.json["startRow"] for request in fake.server.requests_for("searchanalytics.query")]
    assert len(paged) > 8_000 and starts == [*range(0, len(paged), 4_000), len(paged)]
    assert paged == query_all(service, DOMAIN, body)  # the same order whatever the page size
    past_the_end = service.searchanalytics().query(siteUrl=DOMAIN, body={**body, "startRow": len(paged)}).execute()
    assert past_the_end == {"responseAggregationType": "byPage"}
    assert service.searchanalytics().query(siteUrl=DOMAIN, body=body).execute()["rows"] == paged[:1_000]  # default


def test_paging_over_several_full_api_pages() -> None:
    """More than 60,000 distinct (query, page, date) rows: three answers of 25,000 and the empty one."""
    with FakeSearchConsole(days=42, queries=6_000, pages=1_500, facts_per_day=5_000) as big:
        service = _build(big, _service_account(big))
        start, end = big.first_date, big.last_final_date(DOMAIN)
        body = {"startDate": start.isoformat(), "endDate": end.isoformat(), "dimensions": ["query", "page", "date"]}
        rows = query_all(service, DOMAIN, body, until_empty=True)
        starts = [request.json["startRow"] for request in big.server.requests_for("searchanalytics.query")]
        assert len(rows) > 60_000 and starts == [*range(0, len(rows), 25_000), len(rows)]
        assert_rows_equal(
            rows, expected_rows(big.facts(DOMAIN), start=start, end=end, dimensions=["query", "page", "date"])
        )
        assert_ranked(rows)


def test_data_state_final_and_all(fake: FakeSearchConsole, service: Any, facts: FactsOf) -> None:
    last_final, first_incomplete = fake.last_final_date(DOMAIN), fake.first_incomplete_date(DOMAIN)
    assert (fake.today - last_final).days == 3 and first_incomplete == last_final + dt.timedelta(days=1)
    start = fake.today - dt.timedelta(days=13)
    body = {"startDate": start.isoformat(), "endDate": fake.today.isoformat(), "dimensions": ["date"]}
    final = service.searchanalytics().query(siteUrl=DOMAIN, body=body).execute()
    assert "metadata" not in final
    assert [row["keys"][0] for row in final["rows"]] == [
        (start + dt.timedelta(days=n)).isoformat() for n in range((last_final - start).days + 1)
    ]  # a time series comes in time order
    fresh = service.searchanalytics().query(siteUrl=DOMAIN, body={**body, "dataState": "all"}).execute()
    assert fresh["metadata"] == {"firstIncompleteDate": first_incomplete.isoformat()}
    assert fresh["rows"][-1]["keys"] == [fake.today.isoformat()]
    assert_rows_equal(fresh["rows"], expected_rows(facts(DOMAIN), start=start, end=fake.today, dimensions=["date"]))
    # Today's data is partial (only the hours before 11:00 PT have been collected).
    assert fresh["rows"][-1]["impressions"] < 0.7 * fresh["rows"][-4]["impressions"]
    # metadata only when grouped by date, and only when the range reaches the fresh days.
    by_query = service.searchanalytics().query(
        siteUrl=DOMAIN, body={**body, "dataState": "all", "dimensions": ["query"]}
    )
    assert "metadata" not in by_query.execute()
    older = {**body, "dataState": "all", "endDate": last_final.isoformat()}
    assert "metadata" not in service.searchanalytics().query(siteUrl=DOMAIN, body=older).execute()


def test_hourly_all_groups_by_pacific_hour(fake: FakeSearchConsole, service: Any, facts: FactsOf) -> None:
    start = fake.today - dt.timedelta(days=20)
    body = {"startDate": start.isoformat(), "endDate": fake.today.isoformat(), "dimensions": ["hour"]}
    with pytest.raises(HttpError) as excinfo:
        service.searchanalytics().query(siteUrl=DOMAIN, body={**body, "dataState": "all"}).execute()
    assert excinfo.value.status_code == 400
    answer = service.searchanalytics().query(siteUrl=DOMAIN, body={**body, "dataState": "hourly_all"}).execute()
    keys = [row["keys"][0] for row in answer["rows"]]
    assert keys == sorted(keys)  # time order
    assert all(re.fullmatch(r"2026-11-\d\dT\d\d:00:00-08:00", key) for key in keys)  # PST after Nov 1
    assert keys[0] == f"{fake.today - dt.timedelta(days=9)}T00:00:00-08:00"  # hourly data covers 10 days
    assert keys[-1] == f"{fake.today}T10:00:00-08:00"  # and stops at the current hour
    assert answer["metadata"] == {"firstIncompleteHour": f"{fake.first_incomplete_date(DOMAIN)}T00:00:00-08:00"}
    hourly_start = fake.today - dt.timedelta(days=9)
    expected = expected_rows(facts(DOMAIN), start=hourly_start, end=fake.today, dimensions=["hour"])
    assert_rows_equal(answer["rows"], expected)
    with_query = {**body, "dataState": "HOURLY_ALL", "dimensions": ["query", "hour"], "rowLimit": 25_000}
    rows = service.searchanalytics().query(siteUrl=DOMAIN, body=with_query).execute()["rows"]
    assert_rows_equal(
        rows, expected_rows(facts(DOMAIN), start=hourly_start, end=fake.today, dimensions=["query", "hour"])
    )


@pytest.mark.parametrize("search_type", ["web", "image", "video", "news", "discover", "googleNews"])
def test_search_types(fake: FakeSearchConsole, service: Any, search_type: str, facts: FactsOf) -> None:
    start, end = _window(fake, 60)
    body = {"startDate": start.isoformat(), "endDate": end.isoformat(), "dimensions": ["page"], "type": search_type}
    rows = query_all(service, DOMAIN, body)
    expected = expected_rows(facts(DOMAIN), start=start, end=end, dimensions=["page"], search_type=search_type)
    queryless = search_type in ("discover", "googleNews")
    assert_rows_equal(rows, expected, positions=not queryless)
    if queryless:  # neither queries nor positions exist there
        with pytest.raises(HttpError) as excinfo:
            service.searchanalytics().query(siteUrl=DOMAIN, body={**body, "dimensions": ["query"]}).execute()
        assert excinfo.value.status_code == 400


def test_aggregation_by_property_counts_a_search_once(fake: FakeSearchConsole, service: Any, facts: FactsOf) -> None:
    start, end = _window(fake)
    domain_facts = facts(DOMAIN)
    body = {"startDate": start.isoformat(), "endDate": end.isoformat(), "dimensions": ["query"]}
    results = {}
    for aggregation in ("byProperty", "byPage"):
        answer = (
            service.searchanalytics()
            .query(siteUrl=DOMAIN, body={**body, "aggregationType": aggregation, "rowLimit": 25_000})
            .execute()
        )
        assert answer["responseAggregationType"] == aggregation
        expected = expected_rows(domain_facts, start=start, end=end, dimensions=["query"], aggregation=aggregation)
        assert_rows_equal(answer["rows"], expected)
        results[aggregation] = {tuple(row["keys"]): row for row in answer["rows"]}
    # Several pages rank for some queries: by property their impressions count once, at the best position.
    merged = [
        key for key, row in results["byProperty"].items() if row["impressions"] < results["byPage"][key]["impressions"]
    ]
    assert len(merged) > 20
    assert all(results["byProperty"][key]["position"] <= results["byPage"][key]["position"] for key in merged)
    auto = service.searchanalytics().query(siteUrl=DOMAIN, body=body).execute()
    assert auto["responseAggregationType"] == "byProperty"
    with_page = {**body, "dimensions": ["query", "page"]}
    assert (
        service.searchanalytics().query(siteUrl=DOMAIN, body=with_page).execute()["responseAggregationType"] == "byPage"
    )
    for forbidden in (
        with_page,
        {**body, "dimensionFilterGroups": [{"filters": [{"dimension": "page", "expression": WWW}]}]},
    ):
        with pytest.raises(HttpError) as excinfo:
            service.searchanalytics().query(
                siteUrl=DOMAIN, body={**forbidden, "aggregationType": "byProperty"}
            ).execute()
        assert excinfo.value.status_code == 400


def test_the_per_day_row_cap_keeps_each_days_top_rows(fake: FakeSearchConsole, service: Any, facts: FactsOf) -> None:
    start, end = _window(fake, 7)
    body = {"startDate": start.isoformat(), "endDate": end.isoformat(), "aggregationType": "byPage"}
    domain_facts = facts(DOMAIN)
    uncapped = query_all(service, DOMAIN, {**body, "dimensions": ["query"]})
    fake.row_cap_per_day = 25
    capped = query_all(service, DOMAIN, {**body, "dimensions": ["query"]})
    expected = expected_rows(
        domain_facts, start=start, end=end, dimensions=["query"], aggregation="byPage", cap_per_day=25
    )
    assert_rows_equal(capped, expected)
    assert sum(row["impressions"] for row in capped) < sum(row["impressions"] for row in uncapped)
    by_date = query_all(service, DOMAIN, {**body, "dimensions": ["query", "date"]})
    assert len(by_date) == 25 * 7
    assert collections.Counter(row["keys"][1] for row in by_date) == {
        (start + dt.timedelta(days=n)).isoformat(): 25 for n in range(7)
    }
    # Without query or page, the grouping is small and nothing is cut.
    totals = service.searchanalytics().query(siteUrl=DOMAIN, body={**body, "dimensions": ["device"]}).execute()
    assert_rows_equal(
        totals["rows"], expected_rows(domain_facts, start=start, end=end, dimensions=["device"], aggregation="byPage")
    )


def test_anonymized_queries_count_in_totals_but_not_by_query(
    fake: FakeSearchConsole, service: Any, facts: FactsOf
) -> None:
    start, end = _window(fake)
    web = [fact for fact in facts(DOMAIN) if fact.search_type == "web" and start <= fact.date <= end]
    all_impressions = sum(fact.impressions for fact in web)
    named_impressions = sum(fact.impressions for fact in web if fact.query is not None)
    assert named_impressions < all_impressions
    body = {"startDate": start.isoformat(), "endDate": end.isoformat(), "aggregationType": "byPage"}
    total = service.searchanalytics().query(siteUrl=DOMAIN, body=body).execute()["rows"]
    assert total[0]["impressions"] == all_impressions and "keys" not in total[0]
    by_query = query_all(service, DOMAIN, {**body, "dimensions": ["query"]})
    assert sum(row["impressions"] for row in by_query) == named_impressions
    # Any filter on query drops them too, even one that every query passes.
    filtered = {
        **body,
        "dimensionFilterGroups": [
            {"filters": [{"dimension": "query", "operator": "notContains", "expression": "zzzz"}]}
        ],
    }
    assert (
        service.searchanalytics().query(siteUrl=DOMAIN, body=filtered).execute()["rows"][0]["impressions"]
        == named_impressions
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"rowLimit": 25_001}, "rowLimit"),
        ({"startRow": -1}, "startRow"),
        ({"startDate": "2026-11-20", "endDate": "2026-11-01"}, "startDate"),
        ({"endDate": None}, "endDate"),
        ({"dimensions": ["browser"]}, "dimensions"),
        ({"dimensions": ["query", "query"]}, "twice"),
        ({"dimensions": ["searchAppearance", "query"]}, "searchAppearance"),
        (
            {
                "dimensionFilterGroups": [
                    {"filters": [{"dimension": "query", "operator": "includingRegex", "expression": "("}]}
                ]
            },
            "regular",
        ),
        (
            {"dimensionFilterGroups": [{"filters": [{"dimension": "date", "expression": "2026-11-01"}]}]},
            "filter dimension",
        ),
        ({"dimensionFilterGroups": [{"groupType": "or", "filters": []}]}, "groupType"),
        ({"type": "shopping"}, "type"),
    ],
)
def test_invalid_requests_answer_400(service: Any, change: dict[str, Any], message: str) -> None:
    body = {"startDate": "2026-11-01", "endDate": "2026-11-20", "dimensions": ["query"]} | change
    body = {key: value for key, value in body.items() if value is not None}
    with pytest.raises(HttpError) as excinfo:
        service.searchanalytics().query(siteUrl=DOMAIN, body=body).execute()
    assert excinfo.value.status_code == 400
    assert message in excinfo.value.reason


# ------------------------------------------------------------------------------------------ sitemaps


def test_sitemaps_list_and_index(fake: FakeSearchConsole, service: Any) -> None:
    listed = service.sitemaps().list(siteUrl=WWW).execute()["sitemap"]
    assert listed == fake.sitemaps[WWW]
    index = next(entry for entry in listed if entry["isSitemapsIndex"])
    for entry in listed:
        assert {"path", "lastSubmitted", "isPending", "isSitemapsIndex", "type", "warnings", "errors"} <= set(entry)
        assert isinstance(entry["warnings"], str) and isinstance(entry["errors"], str)  # int64 as strings
        assert all(isinstance(content["submitted"], str) for content in entry["contents"])
    children = service.sitemaps().list(siteUrl=WWW, sitemapIndex=index["path"]).execute()["sitemap"]
    assert int(index["contents"][0]["submitted"]) == sum(int(child["contents"][0]["submitted"]) for child in children)
    # Each page in a sitemap says so in its inspection, and the counts agree.
    per_sitemap = collections.Counter(
        path for url in fake.pages(WWW) for path in fake.inspections[url]["indexStatusResult"].get("sitemap", [])
    )
    assert {child["path"]: int(child["contents"][0]["submitted"]) for child in children} == {
        path: count
        for path, count in per_sitemap.items()
        if re.fullmatch(re.escape(WWW) + r"[a-z-]+-sitemap\.xml", path)
    }
    child = children[0]
    assert service.sitemaps().get(siteUrl=WWW, feedpath=child["path"]).execute() == child
    domain = service.sitemaps().list(siteUrl=DOMAIN).execute()["sitemap"]
    assert {entry["path"] for entry in domain} == {
        "https://www.example.com/sitemap.xml",
        "https://docs.example.com/sitemap.xml",
    }
    for site in (UNVERIFIED, "https://elsewhere.example/"):
        with pytest.raises(HttpError) as excinfo:
            service.sitemaps().list(siteUrl=site).execute()
        assert excinfo.value.status_code == 403


# ------------------------------------------------------------------------------------------ URL inspection


def _inspect(service: Any, url: str, site: str = WWW) -> dict[str, Any]:
    body = {"inspectionUrl": url, "siteUrl": site, "languageCode": "en-US"}
    return service.urlInspection().index().inspect(body=body).execute()["inspectionResult"]  # type: ignore[no-any-return]


def test_url_inspection(fake: FakeSearchConsole, service: Any) -> None:
    pages = fake.pages(WWW)
    indexed = next(url for url in pages if fake.inspections[url]["indexStatusResult"]["verdict"] == "PASS")
    result = _inspect(service, indexed)
    assert fake.server.requests_for("urlInspection.index.inspect")[-1].path == "/v1/urlInspection/index:inspect"
    link = result.pop("inspectionResultLink")
    assert link.startswith(
        "https://search.google.com/search-console/inspect?resource_id=https%3A%2F%2Fwww.example.com%2F"
    )
    assert result == fake.inspections[indexed]
    status = result["indexStatusResult"]
    assert status["coverageState"] in ("Submitted and indexed", "Indexed, not submitted in sitemap")
    assert status["googleCanonical"] == indexed and status["pageFetchState"] == "SUCCESSFUL"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", status["lastCrawlTime"])
    assert "mobileUsabilityResult" not in result  # retired by Google in December 2023
    amp = next(url for url in pages if "/amp/" in url)
    assert _inspect(service, amp)["ampResult"]["ampUrl"] == amp
    states = {fake.inspections[url]["indexStatusResult"]["coverageState"] for url in fake.pages(DOMAIN)}
    assert len(states) >= 5  # indexed, redirects, noindex, not indexed…
    rich = [url for url in pages if "richResultsResult" in fake.inspections[url]]
    assert rich and _inspect(service, rich[0])["richResultsResult"]["detectedItems"][0]["items"]
    docs = next(url for url in fake.pages(DOMAIN) if url.startswith("https://docs.example.com/"))
    assert _inspect(service, docs, DOMAIN)["indexStatusResult"]["verdict"]  # a domain property covers subdomains
    unknown = _inspect(service, WWW + "never-linked/")
    assert unknown["indexStatusResult"]["coverageState"] == "URL is unknown to Google"
    fake.inspections[WWW + "custom/"] = {
        "indexStatusResult": {"verdict": "FAIL", "coverageState": "Server error (5xx)"}
    }
    try:
        assert _inspect(service, WWW + "custom/")["indexStatusResult"]["verdict"] == "FAIL"
    finally:
        del fake.inspections[WWW + "custom/"]
    for url, site in ((SHOP + "products/x", WWW), (indexed, UNVERIFIED)):
        with pytest.raises(HttpError) as excinfo:
            _inspect(service, url, site)
        assert excinfo.value.status_code == 403
        assert "not part of this property" in excinfo.value.reason


# ------------------------------------------------------------------------------------------ faults


def test_a_401_is_refreshed_and_replayed(fake: FakeSearchConsole, service: Any) -> None:
    service.sites().list().execute()  # a token in hand
    grants = fake.oauth.tokens_granted[JWT_BEARER_GRANT]
    fake.oauth.revoke_access_tokens()
    fake.server.clear_log()
    assert service.sites().list().execute()["siteEntry"]
    assert [request.status for request in fake.server.requests_for("sites.list")] == [401, 200]
    assert fake.oauth.tokens_granted[JWT_BEARER_GRANT] == grants + 1
    fake.fail("searchanalytics.query", 401)  # an injected 401 is refreshed the same way
    start, end = _window(fake, 3)
    body = {"startDate": start.isoformat(), "endDate": end.isoformat()}
    assert service.searchanalytics().query(siteUrl=DOMAIN, body=body).execute()["rows"]
    assert fake.oauth.tokens_granted[JWT_BEARER_GRANT] == grants + 2
    fake.fail("sites.list", 401, times=3)  # google-auth gives up after two refreshes
    with pytest.raises(HttpError) as excinfo:
        service.sites().list().execute()
    assert excinfo.value.status_code == 401


def test_user_oauth_credentials_refresh_through_the_token_endpoint(fake: FakeSearchConsole) -> None:
    grant = fake.oauth.oauth_credentials(with_access_token=False)
    credentials = google.oauth2.credentials.Credentials(
        token=None,
        refresh_token=grant["refresh_token"],
        token_uri=grant["token_uri"],
        client_id=grant["client_id"],
        client_secret=grant["client_secret"],
        scopes=[WEBMASTERS_READONLY],
    )
    before = fake.oauth.tokens_granted[REFRESH_TOKEN_GRANT]
    assert _build(fake, credentials).sites().get(siteUrl=SHOP).execute()["permissionLevel"] == "siteOwner"
    assert fake.oauth.tokens_granted[REFRESH_TOKEN_GRANT] == before + 1


@pytest.mark.parametrize("site", ["https://elsewhere.example/", UNVERIFIED])
def test_a_site_the_credentials_cannot_read_is_a_403(service: Any, site: str) -> None:
    with pytest.raises(HttpError) as excinfo:
        service.searchanalytics().query(
            siteUrl=site, body={"startDate": "2026-11-01", "endDate": "2026-11-02"}
        ).execute()
    assert excinfo.value.status_code == 403
    assert excinfo.value.reason == (
        f"User does not have sufficient permission for site '{site}'. See also: "
        "https://support.google.com/webmasters/answer/2451999."
    )
    assert _error(excinfo)["reason"] == "forbidden"


def test_per_site_quotas_answer_429(fake: FakeSearchConsole, service: Any) -> None:
    fake.search_analytics_qpm = 2
    body = {"startDate": "2026-11-01", "endDate": "2026-11-02"}
    for _ in range(2):
        service.searchanalytics().query(siteUrl=WWW, body=body).execute()
    with pytest.raises(HttpError) as excinfo:
        service.searchanalytics().query(siteUrl=WWW, body=body).execute()
    assert excinfo.value.status_code == 429
    assert (_error(excinfo)["reason"], _error(excinfo)["domain"]) == ("rateLimitExceeded", "usageLimits")
    assert "per minute per site" in excinfo.value.reason
    service.searchanalytics().query(siteUrl=SHOP, body=body).execute()  # the quota is per site
    fake.inspection_qpd = 1
    url = fake.pages(SHOP)[0]
    _inspect(service, url, SHOP)
    with pytest.raises(HttpError) as excinfo:
        _inspect(service, url, SHOP)
    assert excinfo.value.status_code == 429 and _error(excinfo)["reason"] == "quotaExceeded"


def test_a_500_then_the_fake_keeps_serving(
    fake: FakeSearchConsole, service: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = {"startDate": "2026-11-01", "endDate": "2026-11-02", "dimensions": ["device"]}
    fake.fail("searchanalytics.query", 500)
    with pytest.raises(HttpError) as excinfo:
        service.searchanalytics().query(siteUrl=DOMAIN, body=body).execute()
    assert excinfo.value.status_code == 500 and _error(excinfo)["reason"] == "backendError"
    assert len(service.searchanalytics().query(siteUrl=DOMAIN, body=body).execute()["rows"]) == 3
    sleeps: list[float] = []
    monkeypatch.setattr("googleapiclient.http.time.sleep", sleeps.append)
    fake.fail("searchanalytics.query", 500)
    assert service.searchanalytics().query(siteUrl=DOMAIN, body=body).execute(num_retries=1)["rows"]
    assert len(sleeps) == 1  # the client retried once


def test_slow_answers(fake: FakeSearchConsole) -> None:
    credentials = _service_account(fake)
    impatient = _build(fake, http=google_auth_httplib2.AuthorizedHttp(credentials, http=httplib2.Http(timeout=0.2)))
    assert impatient.sites().list().execute()["siteEntry"]
    fake.slow("sites.list", 0.6)
    with pytest.raises(TimeoutError):
        impatient.sites().list().execute()
    fake.slow("sites.list", 0.1)
    assert impatient.sites().list().execute()["siteEntry"]  # slow, but within the timeout
    assert [request.delayed_s for request in fake.server.requests_for("sites.list")][-2:] == [0.6, 0.1]
