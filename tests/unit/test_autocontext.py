"""Unit tests for shared/_autocontext.py: the 25 suggestions (spec 6.3), blocks (7.3) and 7.5's table."""

from __future__ import annotations

from typing import Any

import pytest

from shared._autocontext import rank_suggestions, requested_blocks, should_attach, suggestions_notice
from shared._settings import CallMeta
from shared.declaration import Block
from shared.errors import UnknownBlock

PAGE = 25  # spec 6.3: ACP_RESOURCE_SUGGESTIONS


def _resources(count: int, group: str = "Acme") -> list[dict[str, Any]]:
    """``count`` resources in the source's (API) order."""
    return [{"resource_id": f"{1000 + i}", "name": f"Site {i} - GA4", "group": group} for i in range(count)]


def _ids(page: list[Any]) -> list[str]:
    return [r["resource_id"] for r in page]


def _says_partial(notice: str) -> bool:
    # spec 6.3 example: "Showing 25 of 142 available resources, ..."
    return "Showing" in notice


# -- rank_suggestions: order (spec 6.3) -----------------------------------------------------------


def test_without_default_or_recent_the_api_order_is_kept() -> None:
    resources = _resources(5)
    page, candidates = rank_suggestions(resources, [], None, None)
    assert _ids(page) == _ids(resources)
    assert candidates == 5


def test_default_first_then_recent_by_score_then_api_order() -> None:
    resources = _resources(6)
    recent = [("1004", 3.0), ("1002", 1.2)]  # highest score first, as RecencyStore.ranked returns
    page, _ = rank_suggestions(resources, recent, "1003", None)
    assert _ids(page) == ["1003", "1004", "1002", "1000", "1001", "1005"]


def test_each_resource_appears_once_even_if_default_and_recent() -> None:
    resources = _resources(4)
    page, _ = rank_suggestions(resources, [("1002", 2.0), ("1001", 1.0)], "1002", None)
    assert _ids(page) == ["1002", "1001", "1000", "1003"]
    assert len(_ids(page)) == len(set(_ids(page)))


def test_default_is_marked_configured() -> None:
    page, _ = rank_suggestions(_resources(3), [], "1001", None)
    assert page[0]["resource_id"] == "1001"
    assert page[0].get("configured") is True
    assert page[0]["name"] == "Site 1 - GA4"
    assert all(not r.get("configured") for r in page[1:])


def test_recent_resources_are_flagged_recent_and_others_are_not() -> None:
    page, _ = rank_suggestions(_resources(4), [("1003", 0.8)], None, None)
    by_id = {r["resource_id"]: r for r in page}
    assert by_id["1003"].get("recent") is True
    for rid in ("1000", "1001", "1002"):
        assert not by_id[rid].get("recent")


def test_default_that_is_also_recent_is_flagged_both() -> None:
    page, _ = rank_suggestions(_resources(3), [("1002", 1.0)], "1002", None)
    assert page[0]["resource_id"] == "1002"
    assert page[0].get("configured") is True
    assert page[0].get("recent") is True


def test_recent_resource_no_longer_listed_is_not_suggested() -> None:
    page, candidates = rank_suggestions(_resources(2), [("gone", 5.0), ("1001", 1.0)], None, None)
    assert _ids(page) == ["1001", "1000"]
    assert candidates == 2


def test_input_resources_are_not_mutated() -> None:
    resources = _resources(3)
    snapshot = [dict(r) for r in resources]
    rank_suggestions(resources, [("1001", 1.0)], "1002", None)
    assert resources == snapshot


# -- rank_suggestions: page of 25 and candidate count (spec 6.3) -----------------------------------


def test_page_has_at_most_25_and_counts_all_candidates() -> None:
    resources = _resources(142)
    page, candidates = rank_suggestions(resources, [], None, None)
    assert len(page) == PAGE
    assert candidates == 142
    assert _ids(page) == _ids(resources[:PAGE])


def test_recent_resources_beyond_the_first_25_enter_the_page() -> None:
    resources = _resources(100)
    page, _ = rank_suggestions(resources, [("1099", 2.0), ("1050", 1.0)], "1070", None)
    assert len(page) == PAGE
    assert _ids(page)[:3] == ["1070", "1099", "1050"]
    assert _ids(page)[3:] == _ids(resources[:22])


# -- rank_suggestions: query (spec 6.3) -------------------------------------------------------------


def test_query_searches_name_group_and_id_case_insensitively() -> None:
    resources = [
        {"resource_id": "111", "name": "Shop ES", "group": "Client X"},
        {"resource_id": "222", "name": "Blog", "group": "SHOPPING Corp"},
        {"resource_id": "shop-333", "name": "Other", "group": "Y"},
        {"resource_id": "444", "name": "Unrelated", "group": "Z"},
        {"resource_id": "555", "name": "No group"},
    ]
    page, candidates = rank_suggestions(resources, [], None, "  sHoP ")
    assert _ids(page) == ["111", "222", "shop-333"]
    assert candidates == 3


def test_query_searches_all_resources_not_just_the_first_page() -> None:
    resources = _resources(200)
    resources[180]["name"] = "Needle store"
    page, candidates = rank_suggestions(resources, [], None, "needle")
    assert _ids(page) == ["1180"]
    assert candidates == 1


def test_query_page_is_cut_from_the_matches() -> None:
    resources = _resources(60, group="Other")
    for i, resource in enumerate(resources):
        if i % 2:
            resource["group"] = "Match"
    page, candidates = rank_suggestions(resources, [], None, "match")
    assert candidates == 30
    assert len(page) == PAGE
    assert all(r["group"] == "Match" for r in page)


def test_query_keeps_the_default_even_if_it_does_not_match() -> None:
    resources = [{"resource_id": "1", "name": "Alpha"}, {"resource_id": "2", "name": "Beta"}]
    page, candidates = rank_suggestions(resources, [], "1", "beta")
    assert _ids(page) == ["1", "2"]
    assert page[0].get("configured") is True
    assert candidates == 2  # the pool: the one match plus the configured default


def test_query_excludes_non_matching_recent_resources() -> None:
    resources = [{"resource_id": "1", "name": "Alpha"}, {"resource_id": "2", "name": "Beta"}]
    page, _ = rank_suggestions(resources, [("1", 5.0)], None, "beta")
    assert _ids(page) == ["2"]


def test_blank_query_is_no_query() -> None:
    page, candidates = rank_suggestions(_resources(3), [], None, "   ")
    assert len(page) == 3
    assert candidates == 3


# -- rank_suggestions: configured default missing from the listing (spec 6.3) ------------------------


def test_default_missing_from_listing_is_included_and_marked_configured() -> None:
    page, _ = rank_suggestions(_resources(3), [], "999999", None)
    assert page[0]["resource_id"] == "999999"
    assert page[0].get("configured") is True
    assert isinstance(page[0]["name"], str)
    assert page[0]["name"]
    assert _ids(page)[1:] == ["1000", "1001", "1002"]


def test_default_missing_from_an_empty_listing_is_still_shown() -> None:
    page, candidates = rank_suggestions([], [], "999999", None)
    assert _ids(page) == ["999999"]
    assert page[0].get("configured") is True
    assert candidates == 1  # the pool holds the configured default alone


def test_default_missing_from_listing_is_included_with_a_query_too() -> None:
    page, _ = rank_suggestions(_resources(3), [], "999999", "site 1")
    assert _ids(page) == ["999999", "1001"]


def test_page_with_missing_default_still_has_at_most_25() -> None:
    page, _ = rank_suggestions(_resources(40), [], "999999", None)
    assert len(page) == PAGE
    assert page[0]["resource_id"] == "999999"


# -- suggestions_notice (spec 6.3) -------------------------------------------------------------------


def test_notice_says_the_page_is_partial_when_fewer_than_total() -> None:
    notice = suggestions_notice(25, 142, 142, None, None)
    assert _says_partial(notice)
    assert "25" in notice
    assert "142" in notice
    assert "resource_id" in notice


def test_notice_for_a_complete_page_does_not_claim_it_is_partial() -> None:
    notice = suggestions_notice(7, 7, 7, None, None)
    assert not _says_partial(notice)
    assert "7" in notice


def test_notice_with_query_names_it_and_says_partial_when_matches_are_cut() -> None:
    notice = suggestions_notice(25, 30, 142, "shop", None)
    assert "shop" in notice
    assert _says_partial(notice)
    assert "30" in notice
    assert "142" in notice


def test_notice_with_query_and_all_matches_shown_gives_the_counts() -> None:
    notice = suggestions_notice(3, 3, 142, "shop", None)
    assert "shop" in notice
    assert "3" in notice
    assert "142" in notice


def test_notice_names_the_configured_default() -> None:
    # spec 6.3: "Si hay default_resource_id, notice lo nombra".
    assert "123456789" in suggestions_notice(25, 142, 142, None, "123456789")
    assert "123456789" in suggestions_notice(1, 1, 142, "blog", "123456789")


def test_notice_when_nothing_is_available_says_so() -> None:
    notice = suggestions_notice(0, 0, 0, None, None)
    assert "No resources" in notice


def test_notice_is_partial_when_a_missing_default_displaces_a_listed_resource() -> None:
    # 25 listed resources + a configured default that is not in the listing: the page of 25
    # shows the default and only 24 of the 25 available resources, so it is partial (spec 6.3).
    resources = _resources(25)
    page, candidates = rank_suggestions(resources, [], "999999", None)
    shown_listed = [rid for rid in _ids(page) if rid != "999999"]
    assert len(shown_listed) < len(resources)
    notice = suggestions_notice(len(page), candidates, len(resources), None, "999999")
    assert _says_partial(notice)


def test_notice_from_ranked_page_for_a_large_account() -> None:
    resources = _resources(142)
    page, candidates = rank_suggestions(resources, [("1100", 1.0)], None, None)
    notice = suggestions_notice(len(page), candidates, len(resources), None, None)
    assert _says_partial(notice)
    assert f"{len(page)} of {len(resources)}" in notice


# -- requested_blocks (spec 7.3) -------------------------------------------------------------------


async def _fetch(_ref: Any, _ctx: Any) -> list[Any]:
    return []


BLOCKS = (
    Block("key_events", "Key events.", _fetch),
    Block("custom_dimensions", "Custom dimensions.", _fetch),
    Block("channels", "Channel groups.", _fetch, applies_to=("property",)),
)


def test_requested_blocks_are_returned_in_the_requested_order() -> None:
    chosen = requested_blocks(BLOCKS, ["channels", "key_events"])
    assert [b.id for b in chosen] == ["channels", "key_events"]


def test_requested_blocks_repeated_id_is_returned_once() -> None:
    chosen = requested_blocks(BLOCKS, ["key_events", "channels", "key_events"])
    assert [b.id for b in chosen] == ["key_events", "channels"]


def test_requested_blocks_empty_request_selects_none_here() -> None:
    # The caller treats empty as "all applicable"; requested_blocks itself names no block.
    assert requested_blocks(BLOCKS, []) == []


def test_unknown_block_fails_listing_the_valid_ids() -> None:
    with pytest.raises(UnknownBlock) as info:
        requested_blocks(BLOCKS, ["key_events", "conversions"])
    assert info.value.code == -32015
    assert info.value.name == "ACP_UNKNOWN_BLOCK"
    message = info.value.message
    assert "conversions" in message
    for block in BLOCKS:
        assert block.id in message


def test_unknown_block_names_every_unknown_id() -> None:
    with pytest.raises(UnknownBlock) as info:
        requested_blocks(BLOCKS, ["nope_one", "key_events", "nope_two"])
    assert "nope_one" in info.value.message
    assert "nope_two" in info.value.message


def test_unknown_block_with_no_blocks_declared() -> None:
    with pytest.raises(UnknownBlock) as info:
        requested_blocks((), ["key_events"])
    assert "key_events" in info.value.message


# -- should_attach: the on_first_call table of spec 7.5 ------------------------------------------------

# (autocontext_delivered, session_id present, first_time) -> attach?
#   true            any      -> never
#   false           absent   -> yes, on every call
#   absent          absent   -> no
#   false / absent  present  -> yes if first time for (session_id, resource_id), then no
TABLE = [
    (True, True, True, False),
    (True, True, False, False),
    (True, False, True, False),
    (True, False, False, False),
    (False, False, True, True),
    (False, False, False, True),
    (None, False, True, False),
    (None, False, False, False),
    (False, True, True, True),
    (False, True, False, False),
    (None, True, True, True),
    (None, True, False, False),
]


@pytest.mark.parametrize(("delivered", "has_session", "first_time", "attach"), TABLE)
def test_should_attach_follows_the_spec_7_5_table(
    delivered: bool | None, has_session: bool, first_time: bool, attach: bool
) -> None:
    meta = CallMeta(session_id="conv-8f2c" if has_session else None, autocontext_delivered=delivered)
    assert should_attach(meta, first_time) is attach


def test_should_attach_table_covers_every_combination() -> None:
    combos = {(d, s, f) for d, s, f, _ in TABLE}
    assert combos == {(d, s, f) for d in (True, False, None) for s in (True, False) for f in (True, False)}


def test_should_attach_ignores_conversation_id_without_session_id() -> None:
    # spec 5.2: conversation_id is informative and does not affect autocontext.
    meta = CallMeta(conversation_id="conv-1", autocontext_delivered=None)
    assert should_attach(meta, True) is False
