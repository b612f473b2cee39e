"""The autocontext blocks against the fake Search Console, and their on_first_call delivery (spec 7.5)."""

from __future__ import annotations

import datetime as dt

import pytest
from fakes.search_console import FakeSearchConsole
from gsc_support import DOMAIN, PREFIX, by_page_truth, today

from connectors.gsc.blocks import CLUSTERS
from connectors.gsc.search import months_before

pytestmark = pytest.mark.anyio
ALL_BLOCKS = [
    "available_date_range",
    "position_clusters",
    "top_queries",
    "top_pages",
    "devices",
    "countries",
    "search_appearance",
    "sitemaps",
]


async def _blocks(host, meta, resource: str, *names: str) -> dict:
    result = await host.call("autocontext", {"resource_id": resource, "request_data": list(names)}, meta())
    assert result.kind == "autocontext", result.error
    return {b["id"]: b for b in result.model_response}


async def test_every_block_answers_for_a_property(gsc_host, meta) -> None:
    async with gsc_host() as host:
        result = await host.call("autocontext", {"resource_id": DOMAIN}, meta())
        again = await host.call("autocontext", {"resource_id": DOMAIN}, meta())
    assert [b["id"] for b in result.model_response] == ALL_BLOCKS
    assert all("data" in b for b in result.model_response), result.model_response
    assert again.system_info["cached"] is True and again.model_response == result.model_response  # within the TTLs


async def test_available_date_range_gives_16_months_and_the_last_reliable_day(gsc_host, meta, fake) -> None:
    async with gsc_host() as host:
        block = (await _blocks(host, meta, PREFIX, "available_date_range"))["available_date_range"]
    assert block["description"] == "Queryable date range (16 months) and the latest day with reliable data."
    assert block["data"] == {
        "first_date": str(months_before(today(), 16)),
        "last_reliable_date": str(fake.last_final_date(PREFIX)),
        "note": "Search Console keeps 16 months of data and publishes it with a 2-3 day delay.",
    }


async def test_position_clusters_count_every_query_of_three_months(gsc_host, meta, fake) -> None:
    end = fake.last_final_date(DOMAIN)
    window = {"start_date": str(months_before(end, 3)), "end_date": str(end)}
    async with gsc_host() as host:
        block = (await _blocks(host, meta, DOMAIN, "position_clusters"))["position_clusters"]
        queries = await host.call(
            "search_analytics", {"resource_id": DOMAIN, "dimensions": ["query"], **window}, meta()
        )
    assert block["description"].startswith("Queries grouped by position cluster (Top-3, Top-10, Top-30, Top-100, Out)")
    expected = {name: [0, 0, 0] for name, _ in CLUSTERS}
    for row in queries.rows():
        name = next(n for n, bound in CLUSTERS if row["position"] <= bound)
        expected[name] = [
            expected[name][0] + row["clicks"],
            expected[name][1] + row["impressions"],
            expected[name][2] + 1,
        ]
    assert block["data"] == [
        {"clusterPosition": name, "clicks": c, "impressions": i, "queries": q} for name, (c, i, q) in expected.items()
    ]


async def test_top_pages_are_the_facts_most_clicked_pages(gsc_host, meta, fake: FakeSearchConsole) -> None:
    end = fake.last_final_date(DOMAIN)
    start = end - dt.timedelta(days=27)
    truth = by_page_truth(fake, DOMAIN, ["page"], start, end)
    ranked = sorted(truth.items(), key=lambda kv: (-kv[1].clicks, -kv[1].impressions, kv[0]))[:20]
    async with gsc_host() as host:
        data = (await _blocks(host, meta, DOMAIN, "top_pages"))["top_pages"]["data"]
    assert (data["start_date"], data["end_date"]) == (str(start), str(end))
    assert [(r["page"], r["clicks"], r["impressions"]) for r in data["rows"]] == [
        (key[0], e.clicks, e.impressions) for key, e in ranked
    ]


@pytest.mark.parametrize(
    ("block", "dimension"),
    [
        ("top_queries", "query"),
        ("devices", "device"),
        ("countries", "country"),
        ("search_appearance", "searchAppearance"),
    ],
)
async def test_ranked_blocks_match_search_analytics_over_the_same_days(
    gsc_host, meta, fake, block: str, dimension: str
) -> None:
    async with gsc_host() as host:
        data = (await _blocks(host, meta, DOMAIN, block))[block]["data"]
        window = {"start_date": data["start_date"], "end_date": data["end_date"]}
        rows = (
            await host.call("search_analytics", {"resource_id": DOMAIN, "dimensions": [dimension], **window}, meta())
        ).rows()
    assert data["end_date"] == str(fake.last_final_date(DOMAIN))
    shown = data["rows"]
    assert 0 < len(shown) <= 20
    assert [(r[dimension], r["clicks"]) for r in shown] == [(r[dimension], r["clicks"]) for r in rows[: len(shown)]]
    if block == "countries":
        assert all(r["country_name"] for r in shown) and len(shown) <= 15


async def test_sitemaps_block_lists_what_was_submitted(gsc_host, meta, fake) -> None:
    async with gsc_host() as host:
        data = (await _blocks(host, meta, DOMAIN, "sitemaps"))["sitemaps"]["data"]
    assert [s["path"] for s in data] == [s["path"] for s in fake.sitemaps[DOMAIN]]
    assert all(isinstance(s["contents"][0]["submitted"], int) for s in data)


async def test_on_first_call_attaches_the_requested_blocks_once_per_session_and_property(gsc_host, meta) -> None:
    requested = ["available_date_range", "position_clusters"]
    first_meta = {**meta(), "session_id": "conv-8f2c", "autocontext_blocks": requested}
    first_meta.pop("autocontext_delivered")
    arguments = {"resource_id": DOMAIN, "dimensions": ["query"]}
    async with gsc_host() as host:
        first = await host.call("search_analytics", arguments, first_meta)
        second = await host.call("search_analytics", arguments, first_meta)
        spelled = await host.call("search_analytics", {**arguments, "resource_id": "example.com"}, first_meta)
        other = await host.call(
            "search_analytics", {**arguments, "resource_id": PREFIX}, {**first_meta, "autocontext_blocks": []}
        )
    assert first.system_info["autocontext_attached"] is True
    assert [b["id"] for b in first.model_response["autocontext"]] == requested
    assert second.system_info["autocontext_attached"] is False and "autocontext" not in second.model_response
    assert spelled.system_info["autocontext_attached"] is False  # the same property, written otherwise
    assert [b["id"] for b in other.model_response["autocontext"]] == ALL_BLOCKS  # another property: all blocks
