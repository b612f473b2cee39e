"""resource_id: the spellings of a property id, the refusals that say where the number is, the list from
account summaries, a property the credentials cannot see, and dates in the property's own time zone."""

from __future__ import annotations

import datetime as dt
import zoneinfo

import pytest
from fakes.ga4_catalog import HIDDEN_PROPERTY, PROPERTIES

from connectors.ga4.resources import normalize, today_in
from shared import InvalidArguments

pytestmark = pytest.mark.anyio
ID = "123456789"


@pytest.mark.parametrize(
    "text",
    [
        ID,
        f"  {ID} ",
        f"properties/{ID}",
        f"https://analytics.google.com/analytics/web/#/p{ID}/reports/intelligenthome",
        f"https://analytics.google.com/analytics/web/#/a1001p{ID}/admin/property/settings",
        f"analytics.google.com/analytics/web/#/p{ID}/reports/explorer?params=x",
    ],
)
def test_spellings_of_a_property_normalize_to_its_number(text: str) -> None:
    ref = normalize(text)
    assert (ref.id, ref.level) == (ID, "property")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("G-ABC1234XYZ", "measurement id"),
        ("UA-12345-1", "Universal Analytics"),
        ("https://analytics.google.com/analytics/web/#/a1w2p3/", "Universal Analytics"),
        ("ikaue.com", "Invalid resource_id"),
    ],
)
def test_ids_that_are_not_a_property_say_where_the_number_is(text: str, says: str) -> None:
    with pytest.raises(InvalidArguments) as refused:
        normalize(text)
    assert says in refused.value.message
    assert "Admin > Property settings > Property details" in refused.value.message


async def test_the_list_comes_from_account_summaries(ga4_host, meta) -> None:
    async with ga4_host() as host:
        result = await host.call("autocontext", {}, meta())
    listed = result.model_response["resources"]
    expected = [
        {"resource_id": p.property_id, "name": p.display_name, "group": p.account.display_name} for p in PROPERTIES
    ]
    assert sorted(listed, key=lambda r: r["resource_id"]) == sorted(expected, key=lambda r: r["resource_id"])
    assert HIDDEN_PROPERTY.property_id not in {r["resource_id"] for r in listed}


async def test_a_property_the_credentials_cannot_see_names_the_closest(ga4_host, meta, fake) -> None:
    async with ga4_host() as host:
        before = len(fake.data.server.requests_for("runReport"))
        result = await host.call(
            "run_report", {"resource_id": HIDDEN_PROPERTY.property_id, "metrics": ["sessions"]}, meta()
        )
    assert result.error_name == "ACP_RESOURCE_NOT_FOUND"
    assert len(result.error["data"]["closest"]) == 3
    assert all(pid in result.error["message"] for pid in result.error["data"]["closest"])
    assert "autocontext without arguments" in result.error["message"]
    assert len(fake.data.server.requests_for("runReport")) == before  # refused before any report


async def test_default_dates_are_the_28_days_ending_yesterday_in_the_propertys_time_zone(ga4_host, meta) -> None:
    async with ga4_host() as host:
        for prop in PROPERTIES:  # Madrid, New York, Tokyo: at most times of day two calendars differ

            def today(zone: str = prop.time_zone) -> dt.date:
                return dt.datetime.now(zoneinfo.ZoneInfo(zone)).date()

            days = {today()}
            result = await host.call("run_report", {"resource_id": prop.property_id, "metrics": ["sessions"]}, meta())
            days.add(today())  # a midnight there during the call
            windows = {((d - dt.timedelta(days=28)).isoformat(), (d - dt.timedelta(days=1)).isoformat()) for d in days}
            arguments = result.system_info["arguments"]
            assert result.kind == "extraction", result.error
            assert (arguments["start_date"], arguments["end_date"]) in windows, prop.time_zone
            assert result.model_response["dates"] == [arguments["start_date"], arguments["end_date"]]


async def test_relative_dates_resolve_in_the_propertys_calendar(ga4_host, meta) -> None:
    tokyo = next(p for p in PROPERTIES if p.time_zone == "Asia/Tokyo")

    def today() -> str:
        return dt.datetime.now(zoneinfo.ZoneInfo(tokyo.time_zone)).date().isoformat()

    days = {today()}
    async with ga4_host() as host:
        result = await host.call(
            "run_report",
            {"resource_id": tokyo.property_id, "metrics": ["sessions"], "start_date": "7daysAgo", "end_date": "today"},
            meta(),
        )
    days.add(today())  # a midnight in Tokyo during the call
    start, end = (dt.date.fromisoformat(result.system_info["arguments"][k]) for k in ("start_date", "end_date"))
    assert end.isoformat() in days and end - start == dt.timedelta(days=7)


def test_today_is_the_day_in_the_propertys_time_zone_or_unknown() -> None:
    late_in_utc = dt.datetime(2026, 9, 25, 23, 30, tzinfo=dt.UTC)
    assert today_in("Europe/Madrid", late_in_utc) == dt.date(2026, 9, 26)
    assert today_in("America/New_York", late_in_utc) == dt.date(2026, 9, 25)
    assert today_in("Mars/Olympus_Mons", late_in_utc) is None and today_in(None) is None
