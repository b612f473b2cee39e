"""resource_id: normalization, resolution against sites.list (each documented case), the listing,
and Search Console's calendar."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from gsc_support import BLOG, DOMAIN, PREFIX, SHOP, UNVERIFIED

from connectors.gsc.resources import closest, match_property, normalize
from connectors.gsc.search import months_before, pacific_today
from shared import InvalidArguments

SITES = [DOMAIN, PREFIX, BLOG, UNVERIFIED, SHOP]


@pytest.mark.parametrize(
    ("written", "property_"),
    [
        # exact, and the trailing slash
        ("sc-domain:example.com", DOMAIN),
        ("SC-Domain:Example.COM", DOMAIN),
        ("https://www.example.com/", PREFIX),
        ("https://www.example.com", PREFIX),
        ("HTTPS://WWW.EXAMPLE.COM", PREFIX),
        ("https://www.example.com/blog", BLOG),
        ("http://example.org", UNVERIFIED),  # unverified sites resolve too (they are flagged)
        # the other scheme, www or both
        ("http://www.example.com/", PREFIX),
        ("https://example.com/", PREFIX),
        ("http://example.com/blog/", BLOG),
        ("https://example.org/", UNVERIFIED),
        # a page: the longest URL prefix holding it
        ("https://www.example.com/blog/post-1", BLOG),
        ("https://www.example.com/shop/item?id=3", PREFIX),
        ("https://shop.example.net/p/42", SHOP),
        # then the domain property of its host or a parent domain
        ("https://docs.example.com/guide", DOMAIN),
        ("sc-domain:www.example.com", DOMAIN),
        # a bare domain: its domain property when there is one, else the URL prefix
        ("example.com", DOMAIN),
        ("www.example.com", DOMAIN),
        ("shop.example.net", SHOP),
        ("example.org", UNVERIFIED),
        ("www.example.com/blog/", BLOG),
        # a page under another scheme or www, held by no other property
        ("https://example.org/about", UNVERIFIED),
    ],
)
def test_each_way_of_writing_a_property_resolves_as_documented(written: str, property_: str) -> None:
    assert match_property(normalize(written).id, SITES) == property_


@pytest.mark.parametrize("written", ["example.net", "https://other.example.net/", "sc-domain:example.org", "acme.io"])
def test_what_no_property_holds_resolves_to_nothing(written: str) -> None:
    assert match_property(normalize(written).id, SITES) is None


@pytest.mark.parametrize("written", ["", "example", "ftp://example.com/", "sc-domain:", "sc-domain:exa mple.com"])
def test_text_that_is_no_property_at_all_is_invalid(written: str) -> None:
    with pytest.raises(InvalidArguments, match=r"sc-domain:example\.com"):
        normalize(written)


def test_the_closest_properties_share_the_most_spelling() -> None:
    from connectors.gsc.api import Site

    found = [Site(url, "siteOwner") for url in SITES]
    assert [s.url for s in closest("https://shop-example.net/", found)][:1] == [SHOP]
    assert {s.url for s in closest("exampel.com", found, 2)} == {DOMAIN, PREFIX}


def test_pacific_today_follows_the_pacific_calendar_across_daylight_changes() -> None:
    pacific = ZoneInfo("America/Los_Angeles")
    moment = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
    while moment < dt.datetime(2027, 1, 1, tzinfo=dt.UTC):  # every half hour of two years
        assert pacific_today(moment) == moment.astimezone(pacific).date(), moment
        moment += dt.timedelta(minutes=30)


@pytest.mark.parametrize(
    ("day", "months", "expected"),
    [
        (dt.date(2026, 9, 22), 1, dt.date(2026, 8, 22)),  # spec 15.2's default window
        (dt.date(2026, 9, 25), 16, dt.date(2025, 5, 25)),  # and its first_date
        (dt.date(2026, 3, 31), 1, dt.date(2026, 2, 28)),
        (dt.date(2026, 1, 15), 3, dt.date(2025, 10, 15)),
    ],
)
def test_months_before_keeps_the_day_within_the_month(day: dt.date, months: int, expected: dt.date) -> None:
    assert months_before(day, months) == expected


# -- through the server -----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_resolution_through_the_server_and_the_listing(gsc_host, meta) -> None:
    async with gsc_host() as host:
        resolved = await host.call("list_sitemaps", {"resource_id": "www.example.com/blog"}, meta())
        assert resolved.system_info["resource_id"] == BLOG and resolved.model_response["property"] == BLOG

        listing = (await host.call("autocontext", {}, meta())).model_response
        entries = {r["resource_id"]: r for r in listing["resources"]}
        assert set(entries) == set(SITES)
        assert entries[DOMAIN]["description"] == "Owner (siteOwner)"
        assert (
            entries[DOMAIN]["group"] == "Domain properties"
            and entries[DOMAIN]["name"] == "example.com (domain property)"
        )
        assert entries[BLOG]["description"] == "Restricted user (siteRestrictedUser)"
        assert entries[UNVERIFIED]["description"].startswith("UNVERIFIED (siteUnverifiedUser)")
        assert entries[PREFIX]["group"] == "URL-prefix properties"

        unknown = await host.call("list_sitemaps", {"resource_id": "https://shop-example.net/"}, meta())
        assert unknown.error_name == "ACP_RESOURCE_NOT_FOUND"
        assert SHOP in unknown.error["message"] and "autocontext" in unknown.error["message"]
        assert unknown.error["data"]["closest"][0] == SHOP

        invalid = await host.call("list_sitemaps", {"resource_id": "not a site"}, meta())
        assert invalid.error_name == "ACP_INVALID_ARGUMENTS"


@pytest.mark.anyio
async def test_an_unverified_property_is_flagged_and_its_data_refused_with_the_next_step(gsc_host, meta) -> None:
    async with gsc_host() as host:
        result = await host.call("search_analytics", {"resource_id": "example.org"}, meta())
        assert result.system_info["resource_id"] == UNVERIFIED
        assert result.error_name == "ACP_RESOURCE_NOT_FOUND"  # Search Console answers 403 for its data
        assert "verif" in result.error["message"]
        sitemaps = await host.call("autocontext", {"resource_id": UNVERIFIED, "request_data": ["sitemaps"]}, meta())
        assert any("unverified" in w for w in sitemaps.system_info["warnings"])
