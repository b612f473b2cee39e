"""FakeGA4Data driven only by the real google-analytics-data clients (REST) and google-auth credentials.

Expected answers come from the fake's generated events through ``ga4_support``'s plain loops, never from
the fake's report engine, and never hard-coded. The last test checks the same events against the
BigQuery export fake through google-cloud-bigquery.
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import re
from collections.abc import Iterator
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from ga4_support import (
    ANALYTICS_READONLY,
    HIDDEN,
    PROPERTY,
    STORE,
    attributed_channel,
    event_counts_by,
    events_between,
    first_user_channel,
    key_events_by,
    revenue_by,
    sessions_by,
    users_by,
)
from google.analytics.data_v1alpha import AlphaAnalyticsDataClient
from google.analytics.data_v1alpha import types as alpha
from google.analytics.data_v1alpha.services.alpha_analytics_data.transports import AlphaAnalyticsDataRestTransport
from google.analytics.data_v1beta import BetaAnalyticsDataClient
from google.analytics.data_v1beta import types as T
from google.analytics.data_v1beta.services.beta_analytics_data.transports import BetaAnalyticsDataRestTransport
from google.api_core import exceptions as api_exceptions
from google.auth.transport.requests import AuthorizedSession
from google.oauth2 import service_account
from google.protobuf import json_format

from fakes import ga4_export
from fakes.ga4 import FakeGA4
from fakes.google_oauth import JWT_BEARER_GRANT

TODAY = dt.date(2026, 10, 15)
NAME = f"properties/{PROPERTY}"
START, END = TODAY - dt.timedelta(days=28), TODAY - dt.timedelta(days=1)


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeGA4]:
    with FakeGA4(today=TODAY) as server:
        yield server


@pytest.fixture(scope="module")
def credentials(fake: FakeGA4) -> service_account.Credentials:
    info = fake.oauth.service_account_info("ga4-fake-tests")
    return service_account.Credentials.from_service_account_info(info, scopes=[ANALYTICS_READONLY])


@pytest.fixture(scope="module")
def client(fake: FakeGA4, credentials: service_account.Credentials) -> BetaAnalyticsDataClient:
    # Built on the transport so that the service account goes through the token endpoint (not a self-signed JWT).
    transport = BetaAnalyticsDataRestTransport(host=fake.data_url, credentials=credentials, always_use_jwt_access=False)
    return BetaAnalyticsDataClient(transport=transport)


@pytest.fixture(scope="module")
def alpha_client(fake: FakeGA4, credentials: service_account.Credentials) -> AlphaAnalyticsDataClient:
    transport = AlphaAnalyticsDataRestTransport(
        host=fake.data_url, credentials=credentials, always_use_jwt_access=False
    )
    return AlphaAnalyticsDataClient(transport=transport)


@pytest.fixture(autouse=True)
def clean_fake(request: pytest.FixtureRequest) -> Iterator[None]:
    if "fake" not in request.fixturenames:
        yield
        return
    fake: FakeGA4 = request.getfixturevalue("fake")
    crashes = len(fake.data.server.handler_errors)
    yield
    fake.clear_faults()
    assert fake.data.server.handler_errors[crashes:] == []


def _date_range(start: dt.date = START, end: dt.date = END, name: str = "") -> T.DateRange:
    return T.DateRange(start_date=start.isoformat(), end_date=end.isoformat(), name=name)


def _report(client: BetaAnalyticsDataClient, dimensions: list[str], metrics: list[str], **extra: Any) -> Any:
    extra.setdefault("date_ranges", [_date_range()])
    return client.run_report(
        T.RunReportRequest(
            property=NAME,
            dimensions=[T.Dimension(name=name) for name in dimensions],
            metrics=[T.Metric(name=name) for name in metrics],
            **extra,
        )
    )


def _rows(response: Any) -> dict[tuple[str, ...], list[str]]:
    return {
        tuple(value.value for value in row.dimension_values): [value.value for value in row.metric_values]
        for row in response.rows
    }


def _ints(rows: dict[tuple[str, ...], list[str]], index: int = 0) -> dict[tuple[str, ...], int]:
    return {key: int(values[index]) for key, values in rows.items()}


def _day(event: ga4_export.Event) -> tuple[str]:
    return (f"{event.date:%Y%m%d}",)


# ------------------------------------------------------------------------------------------ the data


def test_events_are_local_days_of_utc_timestamps_and_sessions_have_their_own_sources(fake: FakeGA4) -> None:
    for property_id in (PROPERTY, STORE):
        zone = ZoneInfo(_time_zone(property_id))
        events = fake.events(property_id)
        assert events and all(
            dt.datetime.fromtimestamp(e.timestamp_us / 1e6, zone).date() == e.date for e in events[::97]
        )
        assert max(e.date for e in events) == fake.today(property_id) == TODAY
    sessions = fake.sessions(PROPERTY)
    returning = [s for s in sessions if not s.is_first]
    assert any(s.channel != default_first_channel(s) for s in returning)
    assert all(s.channel == default_first_channel(s) for s in sessions if s.is_first)
    users = collections.Counter(s.user for s in sessions)
    assert max(users.values()) >= 3  # visitors come back
    names = {e.name for e in fake.events(PROPERTY)}
    assert {"first_visit", "session_start", "page_view", "purchase", "generate_lead"} <= names
    assert any(e.form_name for e in fake.events(PROPERTY)) and any(e.discount_amount for e in fake.events(PROPERTY))


def _time_zone(property_id: str) -> str:
    from fakes.ga4_catalog import property_by_id

    prop = property_by_id(property_id)
    assert prop is not None
    return prop.time_zone


def default_first_channel(session: ga4_export.Session) -> str:
    return ga4_export.default_channel_group(session.visitor.first_source, session.visitor.first_medium)


def test_a_day_is_deterministic_with_exactly_its_events_and_export_rows_carry_the_new_columns() -> None:
    first = ga4_export.generate_day(dt.date(2026, 3, 29), events_per_day=120, seed=3, time_zone="Europe/Madrid")
    again = ga4_export.generate_day(dt.date(2026, 3, 29), events_per_day=120, seed=3, time_zone="Europe/Madrid")
    assert first == again and len(first) == 120
    timestamps = [row["event_timestamp"] for row in first]
    assert timestamps == sorted(set(timestamps))
    start, end = ga4_export.day_bounds_us(dt.date(2026, 3, 29), "Europe/Madrid")
    assert end - start == 23 * 3600 * 1_000_000 and all(start <= t < end for t in timestamps)  # the DST day
    starts = [row for row in first if row["event_name"] == "session_start"]
    sources = {ga4_export.event_param(row, "source")["string_value"] for row in starts}
    assert len(sources) > 1
    for row in starts:
        collected = row["collected_traffic_source"]
        source = ga4_export.event_param(row, "source")["string_value"]
        assert (collected is None) == (source == "(direct)")
    assert {field["name"] for field in ga4_export.GA4_EXPORT_SCHEMA} >= set(first[0])


# ------------------------------------------------------------------------------------------ runReport


def test_sessions_users_and_events_by_date_equal_the_events(client: BetaAnalyticsDataClient, fake: FakeGA4) -> None:
    response = _report(client, ["date"], ["sessions", "totalUsers", "eventCount", "screenPageViews"])
    rows = _rows(response)
    assert _ints(rows, 0) == sessions_by(fake, PROPERTY, _day, START, END)
    assert _ints(rows, 1) == users_by(fake, PROPERTY, _day, START, END)
    assert _ints(rows, 2) == event_counts_by(fake, PROPERTY, _day, START, END)
    views = event_counts_by(fake, PROPERTY, lambda e: _day(e) if e.name == "page_view" else None, START, END)
    assert _ints(rows, 3) == views
    assert response.row_count == len(rows) == 28
    assert [(h.name, h.type_.name) for h in response.metric_headers][:2] == [
        ("sessions", "TYPE_INTEGER"),
        ("totalUsers", "TYPE_INTEGER"),
    ]
    assert response.metadata.time_zone == "Europe/Madrid" and response.metadata.currency_code == "EUR"


def test_session_first_user_and_attributed_channels_follow_their_own_definitions(
    client: BetaAnalyticsDataClient, fake: FakeGA4
) -> None:
    session_rows = _rows(_report(client, ["sessionDefaultChannelGroup"], ["sessions", "keyEvents"]))
    assert _ints(session_rows) == sessions_by(fake, PROPERTY, lambda e: (e.session.channel,), START, END)
    first_rows = _rows(_report(client, ["firstUserDefaultChannelGroup"], ["totalUsers"]))
    assert _ints(first_rows) == users_by(fake, PROPERTY, lambda e: (first_user_channel(e),), START, END)
    channel = attributed_channel(fake, PROPERTY)
    attributed = _rows(_report(client, ["defaultChannelGroup"], ["keyEvents", "totalRevenue"]))
    expected = key_events_by(fake, PROPERTY, lambda e: (channel(e),), START, END)
    assert {k: v for k, v in _ints(attributed).items() if v} == expected
    revenue = revenue_by(fake, PROPERTY, lambda e: (channel(e),), START, END)
    assert {k: float(v[1]) for k, v in attributed.items() if float(v[1])} == pytest.approx(revenue)
    session_key_events = {k: int(v[1]) for k, v in session_rows.items() if int(v[1])}
    assert session_key_events != {k: v for k, v in _ints(attributed).items() if v}  # the views differ


def test_user_and_session_metrics_follow_the_docstring(client: BetaAnalyticsDataClient, fake: FakeGA4) -> None:
    metrics = ["activeUsers", "newUsers", "engagedSessions", "engagementRate", "bounceRate", "averageSessionDuration"]
    response = _report(client, ["deviceCategory"], [*metrics, "userEngagementDuration", "keyEvents:generate_lead"])
    assert [h.type_.name for h in response.metric_headers] == [
        "TYPE_INTEGER",
        "TYPE_INTEGER",
        "TYPE_INTEGER",
        "TYPE_FLOAT",
        "TYPE_FLOAT",
        "TYPE_SECONDS",
        "TYPE_SECONDS",
        "TYPE_FLOAT",
    ]
    groups: dict[str, list[ga4_export.Event]] = collections.defaultdict(list)
    for event in events_between(fake, PROPERTY, START, END):
        groups[event.visitor.device_category].append(event)
    leads = key_events_by(fake, PROPERTY, lambda e: (e.visitor.device_category,), START, END, "generate_lead")
    for (device,), values in _rows(response).items():
        events = groups[device]
        sessions = {e.session for e in events}
        engaged = [s for s in sessions if s.engaged]
        assert int(values[0]) == len({e.user for e in events if e.session.engaged or e.name == "first_visit"})
        assert int(values[1]) == len({e.user for e in events if e.name == "first_visit"})
        assert int(values[2]) == len(engaged)
        assert float(values[3]) == pytest.approx(len(engaged) / len(sessions))
        assert float(values[4]) == pytest.approx(1 - len(engaged) / len(sessions))
        assert float(values[5]) == pytest.approx(sum(s.duration_s for s in sessions) / len(sessions))
        assert float(values[6]) == pytest.approx(sum(e.engagement_time_msec or 0 for e in events) / 1000)
        assert int(values[7]) == leads.get((device,), 0)


def test_custom_definitions_and_the_calculated_metric(client: BetaAnalyticsDataClient, fake: FakeGA4) -> None:
    rows = _rows(_report(client, ["customUser:plan"], ["totalUsers", "totalRevenue", "calcMetric:revenue_per_user"]))
    users = users_by(fake, PROPERTY, lambda e: (e.visitor.plan or "(not set)",), START, END)
    revenue = revenue_by(fake, PROPERTY, lambda e: (e.visitor.plan or "(not set)",), START, END)
    assert _ints(rows) == users
    for key, values in rows.items():
        assert float(values[2]) == pytest.approx(revenue.get(key, 0.0) / users[key])
    forms = _rows(_report(client, ["customEvent:form_name"], ["eventCount", "customEvent:discount_amount"]))
    assert _ints(forms) == event_counts_by(fake, PROPERTY, lambda e: (e.form_name or "(not set)",), START, END)
    discount = sum(e.discount_amount or 0 for e in events_between(fake, PROPERTY, START, END))
    assert sum(float(values[1]) for values in forms.values()) == pytest.approx(discount)
    groups = _rows(_report(client, ["contentGroup"], ["screenPageViews"]))
    assert set(key for (key,) in groups) == {"Shop", "Blog", "(not set)"}


def test_paging_with_offset_and_limit_returns_the_whole_report_once(client: BetaAnalyticsDataClient) -> None:
    dimensions, metrics = ["date", "pagePath"], ["screenPageViews"]
    order = [T.OrderBy(dimension=T.OrderBy.DimensionOrderBy(dimension_name="date"))]
    whole = _report(client, dimensions, metrics, order_bys=order)
    pages, offset = [], 0
    while True:
        page = _report(client, dimensions, metrics, order_bys=order, limit=37, offset=offset)
        assert page.row_count == whole.row_count
        pages.extend(page.rows)
        offset += 37
        if offset >= page.row_count:
            break
    assert [list(r.dimension_values) for r in pages] == [list(r.dimension_values) for r in whole.rows]
    assert len(pages) == whole.row_count > 37


def test_dimension_filters_of_every_kind(client: BetaAnalyticsDataClient, fake: FakeGA4) -> None:
    def string(field: str, match: str, value: str, sensitive: bool = False) -> T.FilterExpression:
        spec = T.Filter.StringFilter(match_type=match, value=value, case_sensitive=sensitive)
        return T.FilterExpression(filter=T.Filter(field_name=field, string_filter=spec))

    def count(expression: T.FilterExpression) -> dict[tuple[str, ...], int]:
        return _ints(_rows(_report(client, ["pagePath"], ["eventCount"], dimension_filter=expression)))

    def truth(keep: Any) -> dict[tuple[str, ...], int]:
        return event_counts_by(fake, PROPERTY, lambda e: (e.page_path,) if keep(e) else None, START, END)

    assert count(string("pagePath", "FULL_REGEXP", "/(shoes|bags).*")) == truth(
        lambda e: re.fullmatch("/(shoes|bags).*", e.page_path)
    )
    assert count(string("pagePath", "PARTIAL_REGEXP", "BLOG")) == truth(lambda e: "blog" in e.page_path)
    assert count(string("pagePath", "PARTIAL_REGEXP", "BLOG", sensitive=True)) == {}
    assert count(string("pageTitle", "BEGINS_WITH", "shoe")) == truth(lambda e: e.page_title.lower().startswith("shoe"))
    assert count(string("pagePath", "ENDS_WITH", "runner")) == truth(lambda e: e.page_path.endswith("runner"))
    assert count(string("country", "CONTAINS", "united")) == truth(lambda e: "United" in e.visitor.country)
    in_list = T.FilterExpression(
        filter=T.Filter(field_name="eventName", in_list_filter=T.Filter.InListFilter(values=["purchase", "scroll"]))
    )
    assert count(in_list) == truth(lambda e: e.name in ("purchase", "scroll"))
    negated = T.FilterExpression(not_expression=string("deviceCategory", "EXACT", "mobile"))
    both = T.FilterExpression(
        and_group=T.FilterExpressionList(expressions=[negated, string("sessionSource", "EXACT", "google")])
    )
    assert count(both) == truth(lambda e: e.visitor.device_category != "mobile" and e.session.source == "google")
    either = T.FilterExpression(
        or_group=T.FilterExpressionList(
            expressions=[string("eventName", "EXACT", "purchase"), string("city", "EXACT", "münchen")]
        )
    )
    assert count(either) == truth(lambda e: e.name == "purchase" or e.visitor.city == "München")
    empty = T.FilterExpression(filter=T.Filter(field_name="customEvent:form_name", empty_filter=T.Filter.EmptyFilter()))
    assert count(T.FilterExpression(not_expression=empty)) == truth(lambda e: e.form_name is not None)


def test_metric_filters_orderings_and_aggregations(client: BetaAnalyticsDataClient, fake: FakeGA4) -> None:
    views = event_counts_by(fake, PROPERTY, lambda e: (e.page_path,) if e.name == "page_view" else None, START, END)
    low, high = sorted(views.values())[2], sorted(views.values())[-2]
    between = T.FilterExpression(
        filter=T.Filter(
            field_name="screenPageViews",
            between_filter=T.Filter.BetweenFilter(
                from_value=T.NumericValue(int64_value=low), to_value=T.NumericValue(double_value=high)
            ),
        )
    )
    response = _report(
        client,
        ["pagePath"],
        ["screenPageViews"],
        metric_filter=between,
        order_bys=[T.OrderBy(metric=T.OrderBy.MetricOrderBy(metric_name="screenPageViews"), desc=False)],
        metric_aggregations=[T.MetricAggregation.TOTAL, T.MetricAggregation.MINIMUM, T.MetricAggregation.MAXIMUM],
    )
    kept = {key: n for key, n in views.items() if low <= n <= high}
    assert _ints(_rows(response)) == kept
    assert [int(r.metric_values[0].value) for r in response.rows] == sorted(kept.values())
    assert [v.value for v in response.totals[0].dimension_values] == ["RESERVED_TOTAL"]
    assert int(response.totals[0].metric_values[0].value) == sum(kept.values())
    assert int(response.minimums[0].metric_values[0].value) == min(kept.values())
    assert int(response.maximums[0].metric_values[0].value) == max(kept.values())
    greater = T.FilterExpression(
        filter=T.Filter(
            field_name="sessions",
            numeric_filter=T.Filter.NumericFilter(operation="GREATER_THAN", value=T.NumericValue(int64_value=30)),
        )
    )
    by_date = _ints(_rows(_report(client, ["date"], ["sessions"], metric_filter=greater)))
    assert by_date == {k: v for k, v in sessions_by(fake, PROPERTY, _day, START, END).items() if v > 30}
    numeric_order = T.OrderBy(dimension=T.OrderBy.DimensionOrderBy(dimension_name="hour", order_type="NUMERIC"))
    hours = _report(client, ["hour"], ["eventCount"], order_bys=[numeric_order])
    ordered = [r.dimension_values[0].value for r in hours.rows]
    assert ordered == sorted(ordered, key=int) and len(ordered) > 10


def test_user_totals_count_distinct_users_not_the_sum_of_rows(client: BetaAnalyticsDataClient, fake: FakeGA4) -> None:
    response = _report(client, ["date"], ["totalUsers"], metric_aggregations=[T.MetricAggregation.TOTAL])
    total = int(response.totals[0].metric_values[0].value)
    assert total == len({e.user for e in events_between(fake, PROPERTY, START, END)})
    assert total < sum(int(r.metric_values[0].value) for r in response.rows)


def test_two_date_ranges_add_the_date_range_dimension(client: BetaAnalyticsDataClient, fake: FakeGA4) -> None:
    previous_start, previous_end = START - dt.timedelta(days=28), START - dt.timedelta(days=1)
    response = _report(
        client,
        ["deviceCategory"],
        ["sessions"],
        date_ranges=[_date_range(name="current"), _date_range(previous_start, previous_end)],
        metric_aggregations=[T.MetricAggregation.TOTAL],
    )
    assert [h.name for h in response.dimension_headers] == ["deviceCategory", "dateRange"]
    current = sessions_by(fake, PROPERTY, lambda e: (e.visitor.device_category, "current"), START, END)
    before = sessions_by(
        fake, PROPERTY, lambda e: (e.visitor.device_category, "date_range_1"), previous_start, previous_end
    )
    assert _ints(_rows(response)) == current | before
    assert [[v.value for v in r.dimension_values] for r in response.totals] == [
        ["RESERVED_TOTAL", "current"],
        ["RESERVED_TOTAL", "date_range_1"],
    ]


def test_relative_dates_currency_and_quota(client: BetaAnalyticsDataClient, fake: FakeGA4) -> None:
    before = fake.quota(PROPERTY).tokens_per_day.consumed
    response = _report(
        client,
        ["date"],
        ["purchaseRevenue"],
        date_ranges=[T.DateRange(start_date="7daysAgo", end_date="yesterday")],
        currency_code="USD",
        return_property_quota=True,
    )
    start, end = TODAY - dt.timedelta(days=7), TODAY - dt.timedelta(days=1)
    revenue = revenue_by(fake, PROPERTY, _day, start, end)
    assert {k: float(v[0]) for k, v in _rows(response).items() if float(v[0])} == pytest.approx(
        {k: v / 0.92 for k, v in revenue.items()}
    )
    assert response.metadata.currency_code == "USD"
    spent = response.property_quota.tokens_per_day.consumed
    assert spent > before and response.property_quota.tokens_per_day.remaining == 200_000 - spent


def test_knobs_other_row_sampling_thresholding_restrictions_and_empty_reason(
    client: BetaAnalyticsDataClient, fake: FakeGA4
) -> None:
    knobs = fake.knobs(PROPERTY)
    knobs.cardinality_limit, knobs.sampling, knobs.thresholded, knobs.revenue_restricted = 3, 0.25, True, True
    response = _report(client, ["pagePath"], ["eventCount", "totalRevenue"])
    top = collections.Counter(e.page_path for e in fake.events(PROPERTY)).most_common(3)
    assert {key for (key,) in _rows(response)} == {path for path, _ in top} | {"(other)"}
    assert sum(_ints(_rows(response)).values()) == len(events_between(fake, PROPERTY, START, END))
    metadata = response.metadata
    assert metadata.data_loss_from_other_row and metadata.subject_to_thresholding
    assert metadata.sampling_metadatas[0].sampling_space_size == len(events_between(fake, PROPERTY, START, END))
    assert [r.metric_name for r in metadata.schema_restriction_response.active_metric_restrictions] == ["totalRevenue"]
    assert {values[1] for values in _rows(response).values()} == {"0"}
    knobs.empty_reason = "No data for the requested dates."
    empty = _report(client, ["pagePath"], ["eventCount"])
    assert empty.row_count == 0 and not empty.rows and empty.metadata.empty_reason == knobs.empty_reason


# ------------------------------------------------------------------------------------------ errors


def test_unknown_and_incompatible_names_answer_400_with_googles_wording(client: BetaAnalyticsDataClient) -> None:
    with pytest.raises(api_exceptions.BadRequest, match="Field pageviews is not a valid metric"):
        _report(client, ["date"], ["pageviews"])
    with pytest.raises(api_exceptions.BadRequest, match="Field landing_page is not a valid dimension"):
        _report(client, ["landing_page"], ["sessions"])
    with pytest.raises(api_exceptions.BadRequest) as raised:
        _report(client, ["defaultChannelGroup"], ["sessions", "keyEvents"])
    assert "defaultChannelGroup" in raised.value.message and "sessions" in raised.value.message
    with pytest.raises(api_exceptions.BadRequest, match="not a valid metric"):  # Store has no custom metric
        client.run_report(
            T.RunReportRequest(
                property=f"properties/{STORE}",
                date_ranges=[_date_range()],
                metrics=[T.Metric(name="customEvent:discount_amount")],
            )
        )
    deprecated = _report(client, ["date"], ["conversions"])
    assert deprecated.metric_headers[0].name == "conversions" and deprecated.row_count == 28


def test_faults_map_to_api_core_classes_and_the_fake_keeps_serving(
    client: BetaAnalyticsDataClient, fake: FakeGA4
) -> None:
    with pytest.raises(api_exceptions.Forbidden) as hidden:
        client.run_report(T.RunReportRequest(property=f"properties/{HIDDEN}", date_ranges=[_date_range()]))
    assert "sufficient permissions" in hidden.value.message
    with pytest.raises(api_exceptions.Forbidden):
        client.get_metadata(name="properties/42/metadata")
    fake.data.server.fail("runReport", 403, reason="ACCESS_TOKEN_SCOPE_INSUFFICIENT")
    with pytest.raises(api_exceptions.Forbidden) as scope:
        _report(client, ["date"], ["sessions"])
    assert scope.value.reason == "ACCESS_TOKEN_SCOPE_INSUFFICIENT"
    for status, error in (
        (404, api_exceptions.NotFound),
        (429, api_exceptions.TooManyRequests),
        (500, api_exceptions.InternalServerError),
        (503, api_exceptions.ServiceUnavailable),
    ):
        fake.data.server.fail("runReport", status)
        with pytest.raises(error):
            _report(client, ["date"], ["sessions"])
    fake.exhaust_tokens(PROPERTY, "hour")
    with pytest.raises(api_exceptions.TooManyRequests, match="Exhausted property tokens per hour"):
        _report(client, ["date"], ["sessions"])
    fake.clear_faults()
    fake.data.server.slow("runReport", 0.05)
    assert _report(client, ["date"], ["sessions"]).row_count == 28
    assert fake.data.server.requests_for("runReport")[-1].delayed_s == 0.05


def test_a_revoked_token_is_refreshed_and_the_call_replayed(client: BetaAnalyticsDataClient, fake: FakeGA4) -> None:
    _report(client, ["date"], ["sessions"])
    granted = fake.oauth.tokens_granted[JWT_BEARER_GRANT]
    fake.oauth.revoke_access_tokens()
    fake.data.server.clear_log()
    assert _report(client, ["date"], ["sessions"]).row_count == 28
    assert [r.status for r in fake.data.server.requests_for("runReport")] == [401, 200]
    assert fake.oauth.tokens_granted[JWT_BEARER_GRANT] == granted + 1


# ------------------------------------------------------------------------------------------ other routes


def test_metadata_lists_custom_definitions_and_deprecated_names(client: BetaAnalyticsDataClient) -> None:
    metadata = client.get_metadata(name=f"{NAME}/metadata")
    dimensions = {d.api_name: d for d in metadata.dimensions}
    metrics = {m.api_name: m for m in metadata.metrics}
    assert dimensions["customEvent:form_name"].custom_definition and dimensions["customUser:plan"].custom_definition
    assert metrics["customEvent:discount_amount"].type_.name == "TYPE_CURRENCY"
    assert metrics["calcMetric:revenue_per_user"].expression == "{{totalRevenue}} / {{totalUsers}}"
    assert list(metrics["keyEvents"].deprecated_api_names) == ["conversions"] and "conversions" not in metrics
    assert {"keyEvents:purchase", "keyEvents:generate_lead"} <= set(metrics)
    store = client.get_metadata(name=f"properties/{STORE}/metadata")
    assert "customEvent:discount_amount" not in {m.api_name for m in store.metrics}


def test_check_compatibility_marks_the_attribution_conflicts(client: BetaAnalyticsDataClient) -> None:
    answer = client.check_compatibility(
        T.CheckCompatibilityRequest(
            property=NAME,
            dimensions=[T.Dimension(name="defaultChannelGroup")],
            metrics=[T.Metric(name="keyEvents")],
            compatibility_filter=T.Compatibility.INCOMPATIBLE,
        )
    )
    incompatible = {c.metric_metadata.api_name for c in answer.metric_compatibilities}
    assert "sessions" in incompatible and "keyEvents" not in incompatible and "totalRevenue" not in incompatible
    assert not answer.dimension_compatibilities
    both = client.check_compatibility(T.CheckCompatibilityRequest(property=NAME, metrics=[T.Metric(name="sessions")]))
    verdicts = {c.dimension_metadata.api_name: c.compatibility.name for c in both.dimension_compatibilities}
    assert verdicts["defaultChannelGroup"] == "INCOMPATIBLE" and verdicts["sessionDefaultChannelGroup"] == "COMPATIBLE"


def test_batch_run_reports_answers_each_request(client: BetaAnalyticsDataClient, fake: FakeGA4) -> None:
    requests = [
        T.RunReportRequest(
            date_ranges=[_date_range()], dimensions=[T.Dimension(name=name)], metrics=[T.Metric(name="sessions")]
        )
        for name in ("country", "deviceCategory")
    ]
    answer = client.batch_run_reports(T.BatchRunReportsRequest(property=NAME, requests=requests))
    assert _ints(_rows(answer.reports[0])) == sessions_by(fake, PROPERTY, lambda e: (e.visitor.country,), START, END)
    assert len(answer.reports) == 2
    with pytest.raises(api_exceptions.BadRequest, match="at most 5"):
        client.batch_run_reports(T.BatchRunReportsRequest(property=NAME, requests=requests * 3))


def test_realtime_reads_the_last_thirty_minutes(client: BetaAnalyticsDataClient, fake: FakeGA4) -> None:
    response = client.run_realtime_report(
        T.RunRealtimeReportRequest(
            property=NAME,
            dimensions=[T.Dimension(name="country")],
            metrics=[T.Metric(name="activeUsers"), T.Metric(name="eventCount")],
            metric_aggregations=[T.MetricAggregation.TOTAL],
        )
    )
    now_us = int(fake.now.timestamp() * 1_000_000)
    recent = [e for e in fake.events(PROPERTY) if 0 <= now_us - e.timestamp_us < 30 * 60 * 1_000_000]
    users: dict[tuple[str], set[str]] = collections.defaultdict(set)
    for event in recent:
        users[(event.visitor.country,)].add(event.user)
    assert recent and _ints(_rows(response)) == {key: len(found) for key, found in users.items()}
    assert int(response.totals[0].metric_values[1].value) == len(recent)
    with pytest.raises(api_exceptions.BadRequest, match="Field pagePath is not a valid dimension"):
        client.run_realtime_report(T.RunRealtimeReportRequest(property=NAME, dimensions=[T.Dimension(name="pagePath")]))


def test_pivot_rows_are_the_visible_combinations(client: BetaAnalyticsDataClient, fake: FakeGA4) -> None:
    response = client.run_pivot_report(
        T.RunPivotReportRequest(
            property=NAME,
            date_ranges=[_date_range()],
            dimensions=[T.Dimension(name="deviceCategory"), T.Dimension(name="country")],
            metrics=[T.Metric(name="sessions")],
            pivots=[
                T.Pivot(field_names=["deviceCategory"], limit=5),
                T.Pivot(
                    field_names=["country"],
                    limit=2,
                    order_bys=[T.OrderBy(metric=T.OrderBy.MetricOrderBy(metric_name="sessions"), desc=True)],
                ),
            ],
        )
    )
    by_country = sessions_by(fake, PROPERTY, lambda e: e.visitor.country, START, END)
    top_two = sorted(by_country, key=lambda c: -by_country[c])[:2]
    shown = [h.dimension_values[0].value for h in response.pivot_headers[1].pivot_dimension_headers]
    assert shown == top_two and response.pivot_headers[1].row_count == len(by_country)
    truth = sessions_by(fake, PROPERTY, lambda e: (e.visitor.device_category, e.visitor.country), START, END)
    assert _ints(_rows(response)) == {k: v for k, v in truth.items() if k[1] in top_two}


def test_funnel_counts_users_through_the_steps_in_order(alpha_client: AlphaAnalyticsDataClient, fake: FakeGA4) -> None:
    names = ["session_start", "view_item", "purchase"]
    steps = [
        alpha.FunnelStep(
            name=name,
            filter_expression=alpha.FunnelFilterExpression(
                funnel_event_filter=alpha.FunnelEventFilter(event_name=name)
            ),
        )
        for name in names
    ]
    response = alpha_client.run_funnel_report(
        alpha.RunFunnelReportRequest(
            property=NAME,
            date_ranges=[alpha.DateRange(start_date=START.isoformat(), end_date=END.isoformat())],
            funnel=alpha.Funnel(steps=steps),
        )
    )
    reached = collections.Counter()
    by_user: dict[str, list[ga4_export.Event]] = collections.defaultdict(list)
    for event in events_between(fake, PROPERTY, START, END):
        by_user[event.user].append(event)
    for events in by_user.values():
        step = 0
        for event in events:
            if step < len(names) and event.name == names[step]:
                reached[step] += 1
                step += 1
    table = [[v.value for v in r.metric_values] for r in response.funnel_table.rows]
    assert [int(row[0]) for row in table] == [reached[i] for i in range(3)]
    assert float(table[0][1]) == pytest.approx(reached[1] / reached[0])
    assert int(table[1][2]) == reached[1] - reached[2]
    assert [r.dimension_values[0].value for r in response.funnel_visualization.rows] == [
        "1. session_start",
        "2. view_item",
        "3. purchase",
    ]


# ------------------------------------------------------------------------------------------ wire format


def test_every_route_answers_a_strictly_valid_body(fake: FakeGA4, credentials: service_account.Credentials) -> None:
    """The whole bodies (the fake checks only their first rows at run time) parse with unknown fields refused."""
    session = AuthorizedSession(credentials)
    report = {
        "dateRanges": [{"startDate": START.isoformat(), "endDate": END.isoformat()}],
        "dimensions": [{"name": "date"}, {"name": "sessionSource"}],
        "metrics": [{"name": "sessions"}, {"name": "totalRevenue"}],
        "metricAggregations": ["TOTAL", "MINIMUM", "MAXIMUM"],
        "returnPropertyQuota": True,
    }
    pivot = {
        **report,
        "metricAggregations": None,
        "pivots": [
            {"fieldNames": ["date"], "limit": "100", "metricAggregations": ["TOTAL"]},
            {"fieldNames": ["sessionSource"], "limit": "5"},
        ],
    }
    pivot.pop("metricAggregations")
    funnel = {
        "dateRanges": report["dateRanges"],
        "funnel": {
            "isOpenFunnel": True,
            "steps": [
                {"name": "a", "filterExpression": {"funnelEventFilter": {"eventName": "page_view"}}},
                {
                    "name": "b",
                    "filterExpression": {
                        "funnelFieldFilter": {"fieldName": "eventName", "stringFilter": {"value": "purchase"}}
                    },
                },
            ],
        },
        "funnelBreakdown": {"breakdownDimension": {"name": "deviceCategory"}},
        "funnelVisualizationType": "TRENDED_FUNNEL",
    }
    from google.analytics.data_v1alpha import types as alpha_types

    calls = [
        ("POST", f"/v1beta/{NAME}:runReport", report, T.RunReportResponse),
        ("POST", f"/v1beta/{NAME}:batchRunReports", {"requests": [report, report]}, T.BatchRunReportsResponse),
        ("POST", f"/v1beta/{NAME}:runPivotReport", pivot, T.RunPivotReportResponse),
        (
            "POST",
            f"/v1beta/{NAME}:runRealtimeReport",
            {
                "dimensions": [{"name": "minutesAgo"}],
                "metrics": [{"name": "activeUsers"}],
                "metricAggregations": ["TOTAL"],
            },
            T.RunRealtimeReportResponse,
        ),
        ("GET", f"/v1beta/{NAME}/metadata", None, T.Metadata),
        (
            "POST",
            f"/v1beta/{NAME}:checkCompatibility",
            {"metrics": [{"name": "sessions"}]},
            T.CheckCompatibilityResponse,
        ),
        ("POST", f"/v1alpha/{NAME}:runFunnelReport", funnel, alpha_types.RunFunnelReportResponse),
    ]
    fake.knobs(PROPERTY).sampling = 0.5
    for method, path, body, message in calls:
        answer = session.request(method, fake.data_url + path, data=json.dumps(body) if body else None)
        assert answer.status_code == 200, (path, answer.text)
        json_format.Parse(answer.text, message.pb(message()), ignore_unknown_fields=False)
    rejected = session.post(fake.data_url + f"/v1beta/{NAME}:runReport", data=json.dumps({**report, "bogus": 1}))
    assert rejected.status_code == 400 and "bogus" in rejected.json()["error"]["message"]


# ------------------------------------------------------------------------------------------ BigQuery


def test_sessions_by_date_equal_the_sql_over_the_bigquery_export_of_the_same_events(
    client: BetaAnalyticsDataClient, fake: FakeGA4
) -> None:
    from google.cloud import bigquery

    from fakes.bigquery import FakeBigQuery

    start, end = TODAY - dt.timedelta(days=4), TODAY - dt.timedelta(days=1)
    shards = ga4_export.export_rows_by_shard(events_between(fake, PROPERTY, start, end))
    with FakeBigQuery() as warehouse:
        warehouse.add_dataset("ga4-proj", "analytics_123456789")
        for name, rows in shards.items():
            warehouse.add_table("ga4-proj", "analytics_123456789", name, ga4_export.GA4_EXPORT_SCHEMA, rows)
        info = warehouse.oauth.service_account_info("ga4-proj")
        bq_credentials = service_account.Credentials.from_service_account_info(
            info, scopes=["https://www.googleapis.com/auth/bigquery"]
        )
        bq = bigquery.Client(
            project="ga4-proj", credentials=bq_credentials, client_options={"api_endpoint": warehouse.url}
        )
        sql = """
            SELECT event_date,
                   COUNT(DISTINCT CONCAT(user_pseudo_id, '.',
                     CAST((SELECT value.int_value FROM UNNEST(event_params) WHERE key = 'ga_session_id') AS STRING)))
                     AS sessions
            FROM `ga4-proj.analytics_123456789.events_*`
            GROUP BY event_date"""
        by_sql = {row["event_date"]: row["sessions"] for row in bq.query_and_wait(sql, retry=None, job_retry=None)}
    response = _report(client, ["date"], ["sessions"], date_ranges=[_date_range(start, end)])
    assert {key[0]: n for key, n in _ints(_rows(response)).items()} == by_sql
    assert len(by_sql) == 4
