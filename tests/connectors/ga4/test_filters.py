"""filters: the model's filter lists become GA4 FilterExpressions the client library accepts, and every
mistake the schema cannot catch is refused naming the condition and what to write instead. (The
filters' effect on real rows is checked against the fake's events in test_report.py.)"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from google.analytics.data_v1beta.types import FilterExpression

from connectors.ga4.filters import FILTER_SCHEMA, MATCHES, NUMERIC_MATCHES, filter_fields, to_filter_expression
from shared import InvalidArguments

BLOG = {"field": "pagePath", "match": "begins_with", "value": "/blog/"}


def _proto(expression: dict[str, Any]) -> FilterExpression:
    return FilterExpression(**expression)  # raises on a field or enum name the API does not have


def test_every_match_translates_into_a_filter_the_client_accepts() -> None:
    values: dict[str, Any] = {"in_list": ["a", "b"], "between": [1, 2.5], **dict.fromkeys(NUMERIC_MATCHES, 10)}
    for match in MATCHES:
        kind = "metric" if match in NUMERIC_MATCHES or match == "between" else "dimension"
        condition = {"field": "f", "match": match}
        if match != "empty":
            condition["value"] = values.get(match, "x")
        jsonschema.validate([condition], FILTER_SCHEMA)
        expression = to_filter_expression([condition], kind)
        assert expression is not None and expression["filter"]["field_name"] == "f"
        _proto(expression)


def test_groups_nest_and_not_negates() -> None:
    spec = [
        {"field": "sessionDefaultChannelGroup", "match": "in_list", "value": ["Direct", "Organic Search"]},
        {"any": [BLOG, {"all": [{"field": "pagePath", "match": "contains", "value": "shop", "not": True}]}]},
    ]
    jsonschema.validate(spec, FILTER_SCHEMA)
    expression = to_filter_expression(spec)
    assert expression is not None
    first, second = expression["and_group"]["expressions"]
    assert first["filter"]["in_list_filter"]["values"] == ["Direct", "Organic Search"]
    blog, shop = second["or_group"]["expressions"]
    assert blog["filter"]["string_filter"] == {"match_type": "BEGINS_WITH", "value": "/blog/", "case_sensitive": False}
    assert shop["not_expression"]["filter"]["string_filter"]["match_type"] == "CONTAINS"
    _proto(expression)
    assert filter_fields(spec) == ["sessionDefaultChannelGroup", "pagePath"]


def test_numbers_keep_their_kind_and_renamed_fields_follow() -> None:
    spec = [
        {"field": "Sessions", "match": "between", "value": ["10", 20.5]},
        {"field": "x", "match": "equal", "value": 3.0},
    ]
    expression = to_filter_expression(spec, "metric", rename={"Sessions": "sessions"})
    assert expression is not None
    between, equal = expression["and_group"]["expressions"]
    assert between["filter"]["field_name"] == "sessions"
    assert between["filter"]["between_filter"] == {
        "from_value": {"int64_value": 10},
        "to_value": {"double_value": 20.5},
    }
    assert equal["filter"]["numeric_filter"]["value"] == {"int64_value": 3}


def test_nesting_deeper_than_two_groups_is_outside_the_schema() -> None:
    deep = [{"any": [{"all": [{"any": [BLOG]}]}]}]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(deep, FILTER_SCHEMA)
    jsonschema.validate([{"any": [{"all": [BLOG]}]}], FILTER_SCHEMA)


@pytest.mark.parametrize(
    ("kind", "condition", "says"),
    [
        ("dimension", {"field": "pagePath", "match": "matches", "value": "x"}, "unknown match 'matches'"),
        ("dimension", {"field": "pagePath", "match": "full_regexp", "value": "/blog/(["}, "does not compile"),
        ("dimension", {"field": "pagePath", "match": "partial_regexp", "value": "^(?!/blog)"}, "lookaround"),
        ("metric", {"field": "sessions", "match": "greater_than", "value": "many"}, "'many' is not a number"),
        ("metric", {"field": "sessions", "match": "between", "value": [1]}, "between needs two numbers"),
        ("metric", {"field": "sessions", "match": "contains", "value": "1"}, "a metric filter compares numbers"),
        ("dimension", {"field": "country", "match": "in_list", "value": []}, "in_list needs a non-empty list"),
        ("dimension", {"field": "", "match": "exact", "value": "x"}, "needs a field"),
    ],
)
def test_bad_conditions_are_refused_naming_the_condition(kind: Any, condition: dict[str, Any], says: str) -> None:
    with pytest.raises(InvalidArguments) as refused:
        to_filter_expression([BLOG, {"any": [condition]}] if kind == "dimension" else [condition], kind)
    message = refused.value.message
    assert says in message
    where = f"{kind}_filter[1].any[0]" if kind == "dimension" else f"{kind}_filter[0]"
    assert where in message


def test_an_empty_filter_is_no_filter() -> None:
    assert to_filter_expression([]) is None and to_filter_expression(None) is None
