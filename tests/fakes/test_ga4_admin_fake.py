"""FakeGA4Admin driven by the real google-analytics-admin clients (v1beta and v1alpha, REST) and google-auth.

Expected values come from ``fakes.ga4_catalog`` (the fake's source of truth), read field by field here;
the wire bodies are also parsed strictly with the library's own message types.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests
from google.analytics import admin_v1alpha, admin_v1beta
from google.analytics.admin_v1alpha.services.analytics_admin_service.transports.rest import (
    AnalyticsAdminServiceRestTransport as AlphaRestTransport,
)
from google.analytics.admin_v1beta.services.analytics_admin_service.transports.rest import (
    AnalyticsAdminServiceRestTransport as BetaRestTransport,
)
from google.api_core import exceptions as core_exceptions
from google.auth.transport.requests import AuthorizedSession
from google.oauth2 import service_account
from google.protobuf import json_format

from fakes.ga4_admin import ROUTE_NAMES, FakeGA4Admin
from fakes.ga4_catalog import HIDDEN_PROPERTY, PROPERTIES, Property
from fakes.google_oauth import JWT_BEARER_GRANT, FakeGoogleOAuth
from fakes.http import FakeHttpServer

pytestmark = [
    pytest.mark.slow,  # real HTTP servers, the real Admin clients
    # The clients warn on every call of list_conversion_events (deprecated for key events); the fake serves both.
    pytest.mark.filterwarnings("ignore:AnalyticsAdminServiceClient.list_conversion_events is deprecated"),
]

SCOPES = ["https://www.googleapis.com/auth/analytics.readonly"]
QUERY = "$alt=json;enum-encoding=int"

# (path under properties/N, the response message type's name, route name) per API version.
PROPERTY_ROUTES_BOTH = [
    ("", "Property", "properties.get"),
    ("/dataRetentionSettings", "DataRetentionSettings", "properties.getDataRetentionSettings"),
    ("/keyEvents", "ListKeyEventsResponse", "properties.keyEvents.list"),
    ("/conversionEvents", "ListConversionEventsResponse", "properties.conversionEvents.list"),
    ("/customDimensions", "ListCustomDimensionsResponse", "properties.customDimensions.list"),
    ("/customMetrics", "ListCustomMetricsResponse", "properties.customMetrics.list"),
    ("/googleAdsLinks", "ListGoogleAdsLinksResponse", "properties.googleAdsLinks.list"),
]
PROPERTY_ROUTES_ALPHA = [
    ("/calculatedMetrics", "ListCalculatedMetricsResponse", "properties.calculatedMetrics.list"),
    ("/channelGroups", "ListChannelGroupsResponse", "properties.channelGroups.list"),
    ("/attributionSettings", "AttributionSettings", "properties.getAttributionSettings"),
    ("/reportingDataAnnotations", "ListReportingDataAnnotationsResponse", "properties.reportingDataAnnotations.list"),
]
MODULES = {"v1beta": admin_v1beta, "v1alpha": admin_v1alpha}


# ------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeGA4Admin]:
    with FakeGA4Admin() as server:
        yield server


@pytest.fixture(scope="module")
def credentials(fake: FakeGA4Admin) -> service_account.Credentials:
    info = fake.oauth.service_account_info("ga4-proj")
    return service_account.Credentials.from_service_account_info(info, scopes=SCOPES)


@pytest.fixture(scope="module")
def beta(fake: FakeGA4Admin, credentials: service_account.Credentials) -> admin_v1beta.AnalyticsAdminServiceClient:
    # A transport built here keeps always_use_jwt_access=False: the token endpoint is used, so a 401 refreshes.
    transport = BetaRestTransport(host=fake.url, credentials=credentials)
    return admin_v1beta.AnalyticsAdminServiceClient(transport=transport)


@pytest.fixture(scope="module")
def alpha(fake: FakeGA4Admin, credentials: service_account.Credentials) -> admin_v1alpha.AnalyticsAdminServiceClient:
    transport = AlphaRestTransport(host=fake.url, credentials=credentials)
    return admin_v1alpha.AnalyticsAdminServiceClient(transport=transport)


@pytest.fixture(scope="module")
def session(credentials: service_account.Credentials) -> AuthorizedSession:
    return AuthorizedSession(credentials)


@pytest.fixture(params=["v1beta", "v1alpha"])
def client(request: pytest.FixtureRequest, beta: Any, alpha: Any) -> Any:
    return beta if request.param == "v1beta" else alpha


@pytest.fixture(autouse=True)
def clean_fake(fake: FakeGA4Admin) -> Iterator[None]:
    yield
    fake.server.clear_faults()
    assert fake.server.handler_errors == []


# ------------------------------------------------------------------------------------------ wire format


@pytest.mark.parametrize("version", ["v1beta", "v1alpha"])
def test_every_route_answers_strictly_valid_proto3_json(
    fake: FakeGA4Admin, session: AuthorizedSession, version: str
) -> None:
    module = MODULES[version]
    routes = PROPERTY_ROUTES_BOTH + (PROPERTY_ROUTES_ALPHA if version == "v1alpha" else [])
    bodies: list[tuple[str, str]] = [(f"/{version}/accountSummaries", "ListAccountSummariesResponse")]
    bodies += [(f"/{version}/{prop.name}{suffix}", type_name) for prop in PROPERTIES for suffix, type_name, _ in routes]
    for path, type_name in bodies:
        response = session.get(f"{fake.url}{path}?{QUERY}")
        assert response.status_code == 200, (path, response.text)
        message_type = getattr(module, type_name)
        json_format.Parse(response.text, message_type.pb(message_type()), ignore_unknown_fields=False)


def test_v1alpha_only_routes_are_not_found_on_v1beta(fake: FakeGA4Admin, session: AuthorizedSession) -> None:
    for suffix, type_name, _ in PROPERTY_ROUTES_ALPHA:
        assert not hasattr(admin_v1beta, type_name)
        response = session.get(f"{fake.url}/v1beta/{PROPERTIES[0].name}{suffix}?{QUERY}")
        assert response.status_code == 404, suffix
        assert response.json()["error"]["status"] == "NOT_FOUND"
    assert not hasattr(admin_v1beta.AnalyticsAdminServiceClient, "list_calculated_metrics")


def test_every_route_name_takes_injected_faults(fake: FakeGA4Admin, session: AuthorizedSession) -> None:
    paths = {
        name: f"/v1alpha/{PROPERTIES[0].name}{suffix}"
        for suffix, _, name in PROPERTY_ROUTES_BOTH + PROPERTY_ROUTES_ALPHA
    }
    paths["accountSummaries.list"] = "/v1beta/accountSummaries"
    assert set(paths) == set(ROUTE_NAMES) == fake.server.route_names - {"token"}
    for name, path in paths.items():
        fake.server.fail(name, 500)
        assert session.get(f"{fake.url}{path}?{QUERY}").status_code == 500, name
        assert session.get(f"{fake.url}{path}?{QUERY}").status_code == 200, name


# ------------------------------------------------------------------------------------------ contents


def test_account_summaries_walk_pages_and_list_only_visible_properties(fake: FakeGA4Admin, client: Any) -> None:
    fake.server.clear_log()
    summaries = list(client.list_account_summaries(request={"page_size": 1}))
    expected_accounts = list(dict.fromkeys(prop.account for prop in PROPERTIES))
    assert [summary.display_name for summary in summaries] == [account.display_name for account in expected_accounts]
    assert [summary.account for summary in summaries] == [account.name for account in expected_accounts]
    listed = [(ps.property, ps.display_name, ps.parent) for summary in summaries for ps in summary.property_summaries]
    assert listed == [(prop.name, prop.display_name, prop.account.name) for prop in PROPERTIES]
    assert HIDDEN_PROPERTY.name not in {name for name, _, _ in listed}
    requests = fake.server.requests_for("accountSummaries.list")
    assert len(requests) == len(expected_accounts)
    assert requests[0].param("pageToken") is None and all(r.param("pageToken") for r in requests[1:])
    assert all(r.param("pageSize") == "1" for r in requests)


@pytest.mark.parametrize("prop", PROPERTIES, ids=lambda prop: prop.display_name)
def test_property_and_its_settings(client: Any, prop: Property) -> None:
    got = client.get_property(name=prop.name)
    assert (got.name, got.display_name, got.time_zone, got.currency_code) == (
        prop.name,
        prop.display_name,
        prop.time_zone,
        prop.currency_code,
    )
    assert (got.parent, got.account, got.industry_category.name) == (
        prop.account.name,
        prop.account.name,
        prop.industry_category,
    )
    assert got.create_time == prop.create_time
    retention = client.get_data_retention_settings(name=f"{prop.name}/dataRetentionSettings")
    assert retention.event_data_retention.name == prop.data_retention.event_data_retention
    assert retention.user_data_retention.name == prop.data_retention.user_data_retention
    assert retention.reset_user_data_on_new_activity is prop.data_retention.reset_user_data_on_new_activity


@pytest.mark.parametrize("prop", PROPERTIES, ids=lambda prop: prop.display_name)
def test_property_collections(client: Any, prop: Property) -> None:
    key_events = list(client.list_key_events(parent=prop.name))
    conversion_events = list(client.list_conversion_events(parent=prop.name))
    expected_events = [
        (k.event_name, k.counting_method, k.default_value.numeric_value if k.default_value else 0.0)
        for k in prop.key_events
    ]
    assert [
        (e.event_name, e.counting_method.name, e.default_value.numeric_value) for e in key_events
    ] == expected_events
    # Conversion events: the deprecated name of the same key events.
    assert [
        (e.event_name, e.counting_method.name, e.default_conversion_value.value) for e in conversion_events
    ] == expected_events
    currencies = [e.default_value.currency_code for e in key_events if e.default_value.currency_code]
    assert currencies and set(currencies) == {prop.currency_code}
    dimensions = list(client.list_custom_dimensions(parent=prop.name))
    assert [(d.parameter_name, d.display_name, d.scope.name) for d in dimensions] == [
        (d.parameter_name, d.display_name, d.scope) for d in prop.custom_dimensions
    ]
    metrics = list(client.list_custom_metrics(parent=prop.name))
    assert [(m.parameter_name, m.display_name, m.measurement_unit.name, m.scope.name) for m in metrics] == [
        (m.parameter_name, m.display_name, m.measurement_unit, m.scope) for m in prop.custom_metrics
    ]
    links = list(client.list_google_ads_links(parent=prop.name))
    assert [(link.customer_id, link.ads_personalization_enabled) for link in links] == [
        (link.customer_id, link.ads_personalization_enabled) for link in prop.google_ads_links
    ]


def test_properties_differ_where_tests_tell_them_apart() -> None:
    by_name = {prop.display_name: prop for prop in PROPERTIES}
    assert by_name["Store"].custom_metrics == () and by_name["ikaue.com"].custom_metrics
    assert by_name["Blog"].google_ads_links == () and by_name["ikaue.com"].google_ads_links
    assert len({prop.time_zone for prop in PROPERTIES}) == len({prop.currency_code for prop in PROPERTIES}) == 3


@pytest.mark.parametrize("prop", PROPERTIES, ids=lambda prop: prop.display_name)
def test_v1alpha_only_collections(alpha: Any, prop: Property) -> None:
    calculated = list(alpha.list_calculated_metrics(parent=prop.name))
    assert [(c.calculated_metric_id, c.formula, c.metric_unit.name) for c in calculated] == [
        (c.calculated_metric_id, c.formula, c.metric_unit) for c in prop.calculated_metrics
    ]
    groups = list(alpha.list_channel_groups(parent=prop.name))
    assert [(g.display_name, g.system_defined, g.primary) for g in groups] == [
        (g.display_name, g.system_defined, g.primary) for g in prop.channel_groups
    ]
    for group, expected in zip(groups, prop.channel_groups, strict=True):
        assert [rule.display_name for rule in group.grouping_rule] == [
            rule.display_name for rule in expected.grouping_rules
        ]
        for rule, expected_rule in zip(group.grouping_rule, expected.grouping_rules, strict=True):
            channel_filter = rule.expression.and_group.filter_expressions[0].or_group.filter_expressions[0].filter
            assert channel_filter.field_name == expected_rule.field_name
            values = list(channel_filter.in_list_filter.values) or [channel_filter.string_filter.value]
            assert values == list(expected_rule.values)
    attribution = alpha.get_attribution_settings(name=f"{prop.name}/attributionSettings")
    assert attribution.reporting_attribution_model.name == prop.attribution.reporting_attribution_model
    assert (
        attribution.acquisition_conversion_event_lookback_window.name
        == prop.attribution.acquisition_conversion_event_lookback_window
    )
    assert (
        attribution.other_conversion_event_lookback_window.name
        == prop.attribution.other_conversion_event_lookback_window
    )
    annotations = list(alpha.list_reporting_data_annotations(parent=prop.name))
    assert [(a.title, a.color.name, a.system_generated) for a in annotations] == [
        (a.title, a.color, a.system_generated) for a in prop.annotations
    ]
    for annotation, expected_annotation in zip(annotations, prop.annotations, strict=True):
        if expected_annotation.end_date is None:
            day = annotation.annotation_date
            assert (day.year, day.month, day.day) == expected_annotation.start_date.timetuple()[:3]
        else:
            end = annotation.annotation_date_range.end_date
            assert (end.year, end.month, end.day) == expected_annotation.end_date.timetuple()[:3]


def test_collections_page_with_small_page_sizes(fake: FakeGA4Admin, client: Any) -> None:
    prop = PROPERTIES[0]
    fake.server.clear_log()
    events = list(client.list_key_events(request={"parent": prop.name, "page_size": 1}))
    assert [e.event_name for e in events] == [k.event_name for k in prop.key_events]
    assert len(fake.server.requests_for("properties.keyEvents.list")) == len(prop.key_events)


# ------------------------------------------------------------------------------------------ errors


@pytest.mark.parametrize("property_id", [HIDDEN_PROPERTY.property_id, "111222333"])
def test_invisible_property_is_forbidden_on_every_property_route(client: Any, alpha: Any, property_id: str) -> None:
    name = f"properties/{property_id}"
    calls = [
        lambda: client.get_property(name=name),
        lambda: client.get_data_retention_settings(name=f"{name}/dataRetentionSettings"),
        lambda: list(client.list_key_events(parent=name)),
        lambda: list(client.list_conversion_events(parent=name)),
        lambda: list(client.list_custom_dimensions(parent=name)),
        lambda: list(client.list_custom_metrics(parent=name)),
        lambda: list(client.list_google_ads_links(parent=name)),
        lambda: list(alpha.list_calculated_metrics(parent=name)),
        lambda: list(alpha.list_channel_groups(parent=name)),
        lambda: alpha.get_attribution_settings(name=f"{name}/attributionSettings"),
        lambda: list(alpha.list_reporting_data_annotations(parent=name)),
    ]
    for call in calls:
        with pytest.raises(core_exceptions.Forbidden, match="sufficient permissions for this property"):
            call()


def test_a_property_name_that_is_not_a_number_is_a_bad_request(client: Any) -> None:
    with pytest.raises(core_exceptions.BadRequest, match="properties/abc"):
        client.get_property(name="properties/abc")


def test_a_bad_page_token_is_a_bad_request(client: Any) -> None:
    with pytest.raises(core_exceptions.BadRequest, match="page token"):
        list(client.list_account_summaries(request={"page_token": "not-a-token"}))


@pytest.mark.parametrize(
    ("status", "exception"),
    [
        (403, core_exceptions.Forbidden),
        (404, core_exceptions.NotFound),
        (429, core_exceptions.TooManyRequests),
        (500, core_exceptions.InternalServerError),
        (503, core_exceptions.ServiceUnavailable),
    ],
)
def test_injected_faults_map_to_api_core_exceptions(
    fake: FakeGA4Admin, beta: Any, status: int, exception: type[core_exceptions.GoogleAPICallError]
) -> None:
    prop = PROPERTIES[0]
    fake.server.fail("properties.get", status, reason="insufficientPermissions" if status == 403 else None)
    with pytest.raises(exception) as raised:
        beta.get_property(name=prop.name)
    if status == 403:
        assert raised.value.errors[0]["reason"] == "insufficientPermissions"
    assert beta.get_property(name=prop.name).display_name == prop.display_name  # one fault, then served again


def test_slow_answers_still_arrive(fake: FakeGA4Admin, alpha: Any) -> None:
    fake.server.slow("properties.channelGroups.list", 0.05)
    fake.server.clear_log()
    assert list(alpha.list_channel_groups(parent=PROPERTIES[1].name))
    assert [r.delayed_s for r in fake.server.requests_for("properties.channelGroups.list")] == [0.05]


def test_a_request_without_a_valid_token_is_unauthenticated(fake: FakeGA4Admin) -> None:
    response = requests.get(f"{fake.url}/v1beta/accountSummaries?{QUERY}", headers={"Authorization": "Bearer nope"})
    assert response.status_code == 401
    assert response.json()["error"]["status"] == "UNAUTHENTICATED"


def test_a_revoked_token_is_refreshed_and_the_call_replayed(fake: FakeGA4Admin, beta: Any) -> None:
    prop = PROPERTIES[2]
    beta.get_property(name=prop.name)  # holds a valid token first
    granted = fake.oauth.tokens_granted[JWT_BEARER_GRANT]
    fake.oauth.revoke_access_tokens()
    fake.server.clear_log()
    assert beta.get_property(name=prop.name).display_name == prop.display_name
    assert [r.status for r in fake.server.requests_for("properties.get")] == [401, 200]
    assert fake.oauth.tokens_granted[JWT_BEARER_GRANT] == granted + 1


def test_the_token_endpoint_can_be_shared_with_another_fake() -> None:
    token_server = FakeHttpServer()
    oauth = FakeGoogleOAuth(token_server)
    with token_server, FakeGA4Admin(oauth) as fake:
        assert "token" not in fake.server.route_names
        credentials = service_account.Credentials.from_service_account_info(
            oauth.service_account_info("ga4-proj"), scopes=SCOPES
        )
        client = admin_v1beta.AnalyticsAdminServiceClient(
            transport=BetaRestTransport(host=fake.url, credentials=credentials)
        )
        assert client.get_property(name=PROPERTIES[0].name).display_name == PROPERTIES[0].display_name
        assert oauth.tokens_granted[JWT_BEARER_GRANT] == 1
