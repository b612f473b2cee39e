"""names: what a model writes for metrics and dimensions becomes GA4's API names, with a warning for
each name fixed, and a name that is not there fails with the closest ones. Checked here on a
metadata answer written out (the shape getMetadata gives); test_report.py checks it through the fake."""

from __future__ import annotations

from typing import Any

import pytest

from connectors.ga4.names import Catalog
from shared import InvalidArguments

METADATA: dict[str, Any] = {
    "dimensions": [
        {"apiName": "date", "uiName": "Date"},
        {"apiName": "pagePath", "uiName": "Page path"},
        {"apiName": "sessionSource", "uiName": "Session source"},
        {"apiName": "sessionDefaultChannelGroup", "uiName": "Session default channel group"},
        {"apiName": "deviceCategory", "uiName": "Device category"},
        {"apiName": "customEvent:form_name", "uiName": "Form", "customDefinition": True},
    ],
    "metrics": [
        {"apiName": "sessions", "uiName": "Sessions", "type": "TYPE_INTEGER"},
        {"apiName": "totalUsers", "uiName": "Total users", "type": "TYPE_INTEGER"},
        {"apiName": "ecommercePurchases", "uiName": "Ecommerce purchases", "type": "TYPE_INTEGER"},
        {"apiName": "keyEvents", "uiName": "Key events", "type": "TYPE_FLOAT", "deprecatedApiNames": ["conversions"]},
        {"apiName": "keyEvents:purchase", "uiName": "Key events (purchase)", "type": "TYPE_FLOAT"},
        {"apiName": "sessionsPerUser", "uiName": "Sessions per user", "type": "TYPE_FLOAT"},
        {"apiName": "bounceRate", "uiName": "Bounce rate", "type": "TYPE_FLOAT"},
    ],
}


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog.from_metadata(METADATA)


def test_exact_names_pass_untouched(catalog: Catalog) -> None:
    assert catalog.check(["date", "customEvent:form_name"], ["sessions", "keyEvents:purchase"]) == (
        ["date", "customEvent:form_name"],
        ["sessions", "keyEvents:purchase"],
        [],
    )


@pytest.mark.parametrize(
    ("kind", "asked", "found"),
    [
        ("metric", "purchases", "ecommercePurchases"),  # an alias
        ("metric", "users", "totalUsers"),
        ("metric", "conversions", "keyEvents"),  # the metadata's deprecated name
        ("metric", "conversions:purchase", "keyEvents:purchase"),  # a parameterized alias
        ("metric", "Sessions", "sessions"),  # case
        ("metric", "bounce_rate", "bounceRate"),  # separators
        ("metric", "Total users", "totalUsers"),  # the UI name
        ("dimension", "page", "pagePath"),
        ("dimension", "source", "sessionSource"),
        ("dimension", "channel", "sessionDefaultChannelGroup"),
        ("dimension", "device", "deviceCategory"),
        ("dimension", "CustomEvent:form_name", "customEvent:form_name"),
    ],
)
def test_aliases_case_and_ui_names_are_mapped_with_a_warning(
    catalog: Catalog, kind: str, asked: str, found: str
) -> None:
    dimensions, metrics = ([asked], ["sessions"]) if kind == "dimension" else ([], [asked])
    got_dimensions, got_metrics, warnings = catalog.check(dimensions, metrics)
    assert (got_dimensions if kind == "dimension" else got_metrics)[0] == found
    assert warnings == [f"{kind.capitalize()} '{asked}' mapped to '{found}'."]


def test_a_name_asked_twice_is_reported_once(catalog: Catalog) -> None:
    _, metrics, warnings = catalog.check([], ["totalUsers", "users"])
    assert metrics == ["totalUsers"]
    assert warnings[-1] == "Metric 'totalUsers' was asked for twice; it is reported once."
    _, kept, _ = catalog.check([], ["totalUsers", "users"], unique=False)  # filter fields keep their positions
    assert kept == ["totalUsers", "totalUsers"]


def test_unknown_names_fail_together_with_the_closest_valid_ones(catalog: Catalog) -> None:
    with pytest.raises(InvalidArguments) as refused:
        catalog.check(["pagePth"], ["sesions", "keyEvents:purchse"])
    message = refused.value.message
    assert "'pagePth' is not a dimension of this property. Closest valid dimensions: pagePath" in message
    assert "'sesions' is not a metric of this property. Closest valid metrics: sessions" in message
    assert "Closest valid metrics: keyEvents:purchase" in message
    assert refused.value.data == {"invalid_names": ["pagePth", "sesions", "keyEvents:purchse"]}


def test_a_dimension_asked_as_a_metric_says_where_it_goes(catalog: Catalog) -> None:
    with pytest.raises(InvalidArguments) as refused:
        catalog.check(["sessions"], ["page"])
    message = refused.value.message
    assert "'sessions' is a metric, not a dimension: move it to metrics." in message
    assert "'page' is a dimension ('pagePath'), not a metric: move it to dimensions." in message


def test_realtime_names_come_from_the_documented_list() -> None:
    realtime = Catalog.realtime()
    dimensions, metrics, warnings = realtime.check(
        ["minutesAgo", "customUser:plan", "device"], ["users", "conversions"]
    )
    assert dimensions == ["minutesAgo", "customUser:plan", "deviceCategory"]
    assert metrics == ["activeUsers", "keyEvents"]
    assert len(warnings) == 3
    with pytest.raises(InvalidArguments) as refused:
        realtime.check(["sessionSource"], ["sessions"])
    assert "'sessionSource' is not a dimension of realtime reports." in refused.value.message
    assert (
        "'sessions' is not a metric of realtime reports. Valid metrics: activeUsers, eventCount, keyEvents, "
        "screenPageViews." in refused.value.message
    )
