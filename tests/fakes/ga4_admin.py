"""``FakeGA4Admin``: the Google Analytics Admin API (v1beta and v1alpha, REST) on a loopback server.

    oauth = FakeGoogleOAuth(some_server)               # shared with the Data fake, or None for its own
    with FakeGA4Admin(oauth) as fake:
        transport = AnalyticsAdminServiceRestTransport(host=fake.url, credentials=service_account_credentials)
        client = admin_v1beta.AnalyticsAdminServiceClient(transport=transport)
        client.get_property(name="properties/123456789")

Every answer is rendered from ``fakes.ga4_catalog`` in proto3 JSON (camelCase, enums as names) and is
checked strictly against the client library's own message type before it leaves (``ParseError`` in
a handler becomes a visible 500): the clients parse with ``ignore_unknown_fields=True`` and would
silently drop a misspelled key.

Routes (``{v}`` is v1beta or v1alpha; the request carries ``$alt=json;enum-encoding=int``):

- ``accountSummaries.list``: ``GET /{v}/accountSummaries`` — the accounts with a visible property
- ``properties.get``: ``GET /{v}/properties/N``
- ``properties.getDataRetentionSettings``: ``GET /{v}/properties/N/dataRetentionSettings``
- ``properties.keyEvents.list``, ``properties.conversionEvents.list``, ``properties.customDimensions.list``,
  ``properties.customMetrics.list``, ``properties.googleAdsLinks.list``: ``GET /{v}/properties/N/<collection>``
- v1alpha only (on v1beta no route matches: a 404, as Google answers an unknown method):
  ``properties.calculatedMetrics.list``, ``properties.channelGroups.list``,
  ``properties.getAttributionSettings`` (``/attributionSettings``), ``properties.reportingDataAnnotations.list``

Lists page with ``pageSize`` (default 50, at most 200, as Google) and an opaque ``pageToken``.
A property the credentials cannot see (``HIDDEN_PROPERTY``, or an id that does not exist) answers
403 PERMISSION_DENIED with the Data API's message; an id that is not a number answers 400.

Every API request needs ``Authorization: Bearer <a token the FakeGoogleOAuth issued>``, else a 401:
``oauth.revoke_access_tokens()`` makes the next call a 401 that the client refreshes and replays.
Faults by route name: ``fake.server.fail("properties.get", 503)``, ``fake.server.slow("accountSummaries.list", 0.5)``.
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib
import re
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from fakes.ga4_catalog import (
    ACCOUNTS,
    Annotation,
    ChannelGroup,
    GroupingRule,
    KeyEvent,
    Property,
    is_visible,
    properties_of,
    property_by_id,
)
from fakes.google_oauth import FakeGoogleOAuth
from fakes.http import FakeHttpServer, RecordedRequest, Reply, ServedFake, offset_from_page_token, opaque_page_token

VERSIONS = ("v1beta", "v1alpha")
ROUTE_NAMES = (
    "accountSummaries.list",
    "properties.get",
    "properties.getDataRetentionSettings",
    "properties.keyEvents.list",
    "properties.conversionEvents.list",
    "properties.customDimensions.list",
    "properties.customMetrics.list",
    "properties.googleAdsLinks.list",
    "properties.calculatedMetrics.list",  # v1alpha only, as the four below
    "properties.channelGroups.list",
    "properties.getAttributionSettings",
    "properties.reportingDataAnnotations.list",
)
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 200
PERMISSION_DENIED_MESSAGE = (
    "User does not have sufficient permissions for this property. To learn more about Property ID, see "
    "https://developers.google.com/analytics/devguides/reporting/data/v1/property-id."
)
UNAUTHENTICATED_MESSAGE = (
    "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other "
    "valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."
)

JsonBody = dict[str, Any]
PropertyRenderer = Callable[[Property], JsonBody]
ItemsRenderer = Callable[[Property], list[JsonBody]]
Route = Callable[[RecordedRequest, "re.Match[str]"], Reply]


class _BadRequest(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _PermissionDenied(Exception):
    """The property is not visible to the credentials (hidden, or no such property)."""


class FakeGA4Admin(ServedFake):
    """The Admin API fake; see the module docstring."""

    def __init__(self, oauth: FakeGoogleOAuth | None = None) -> None:
        self.server = FakeHttpServer()
        # The Data fake and this one share one token endpoint, so one credential serves both APIs.
        self.oauth = oauth if oauth is not None else FakeGoogleOAuth(self.server)
        self._register_routes()

    # ------------------------------------------------------------------------------ routing

    def _register_routes(self) -> None:
        # (collection path under properties/N, route name, response type, renderer, versions)
        property_routes: list[tuple[str, str, str, PropertyRenderer, tuple[str, ...]]] = [
            ("", "properties.get", "Property", _property, VERSIONS),
            (
                "/dataRetentionSettings",
                "properties.getDataRetentionSettings",
                "DataRetentionSettings",
                _data_retention,
                VERSIONS,
            ),
            (
                "/attributionSettings",
                "properties.getAttributionSettings",
                "AttributionSettings",
                _attribution,
                ("v1alpha",),
            ),
        ]
        list_routes: list[tuple[str, str, str, ItemsRenderer, tuple[str, ...]]] = [
            ("keyEvents", "properties.keyEvents.list", "ListKeyEventsResponse", _key_events, VERSIONS),
            (
                "conversionEvents",
                "properties.conversionEvents.list",
                "ListConversionEventsResponse",
                _conversion_events,
                VERSIONS,
            ),
            (
                "customDimensions",
                "properties.customDimensions.list",
                "ListCustomDimensionsResponse",
                _custom_dimensions,
                VERSIONS,
            ),
            ("customMetrics", "properties.customMetrics.list", "ListCustomMetricsResponse", _custom_metrics, VERSIONS),
            (
                "googleAdsLinks",
                "properties.googleAdsLinks.list",
                "ListGoogleAdsLinksResponse",
                _google_ads_links,
                VERSIONS,
            ),
            (
                "calculatedMetrics",
                "properties.calculatedMetrics.list",
                "ListCalculatedMetricsResponse",
                _calculated_metrics,
                ("v1alpha",),
            ),
            (
                "channelGroups",
                "properties.channelGroups.list",
                "ListChannelGroupsResponse",
                _channel_groups,
                ("v1alpha",),
            ),
            (
                "reportingDataAnnotations",
                "properties.reportingDataAnnotations.list",
                "ListReportingDataAnnotationsResponse",
                _annotations,
                ("v1alpha",),
            ),
        ]
        for version in VERSIONS:
            summaries = functools.partial(self._account_summaries, version)
            self.server.add_route(
                "GET", rf"/{version}/accountSummaries", self._guarded(summaries), "accountSummaries.list"
            )
            for suffix, name, type_name, render, versions in property_routes:
                if version in versions:
                    handler = self._property_scoped(version, type_name, render)
                    self.server.add_route("GET", rf"/{version}/properties/([^/]+){suffix}", handler, name)
            for collection, name, type_name, render_items, versions in list_routes:
                if version in versions:
                    handler = self._property_list(version, type_name, collection, render_items)
                    self.server.add_route("GET", rf"/{version}/properties/([^/]+)/{collection}", handler, name)

    def _guarded(self, handler: Callable[[RecordedRequest, list[str]], JsonBody]) -> Route:
        """Authenticate, then answer the handler's body, or the error it raised in Google's envelope."""

        def run(request: RecordedRequest, match: re.Match[str]) -> Reply:
            if not self.oauth.bearer_token_is_valid(request):
                return _unauthenticated()
            groups = [urllib.parse.unquote(group) for group in match.groups()]
            try:
                body = handler(request, groups)
            except _BadRequest as exc:
                return _error(400, exc.message)
            except _PermissionDenied:
                return _error(403, PERMISSION_DENIED_MESSAGE)
            return Reply(200, body)

        return run

    def _property_scoped(self, version: str, type_name: str, render: PropertyRenderer) -> Route:
        def handler(request: RecordedRequest, groups: list[str]) -> JsonBody:
            return _checked(version, type_name, render(_visible_property(groups[0])))

        return self._guarded(handler)

    def _property_list(self, version: str, type_name: str, key: str, render_items: ItemsRenderer) -> Route:
        def handler(request: RecordedRequest, groups: list[str]) -> JsonBody:
            items = render_items(_visible_property(groups[0]))
            return _checked(version, type_name, _page(request, key, items))

        return self._guarded(handler)

    def _account_summaries(self, version: str, request: RecordedRequest, groups: list[str]) -> JsonBody:
        summaries = [
            {
                "name": account.summary_name,
                "account": account.name,
                "displayName": account.display_name,
                "propertySummaries": [
                    {
                        "property": prop.name,
                        "displayName": prop.display_name,
                        "propertyType": prop.property_type,
                        "parent": account.name,
                    }
                    for prop in properties_of(account)
                ],
            }
            for account in ACCOUNTS
            if properties_of(account)
        ]
        return _checked(version, "ListAccountSummariesResponse", _page(request, "accountSummaries", summaries))


# ---------------------------------------------------------------------------------- requests and errors


def _visible_property(property_id: str) -> Property:
    if not property_id.isdigit():
        raise _BadRequest(f"Invalid property resource name: properties/{property_id}. Expected properties/<number>.")
    prop = property_by_id(property_id)
    # Google cannot tell "does not exist" from "not yours": both are 403.
    if prop is None or not is_visible(property_id):
        raise _PermissionDenied
    return prop


def _page(request: RecordedRequest, key: str, items: Sequence[JsonBody]) -> JsonBody:
    """One page of ``items`` under ``key``, with ``nextPageToken`` when more remain (Google omits it at the end)."""
    raw_size = request.param("pageSize") or "0"
    try:
        page_size = int(raw_size)
    except ValueError:
        raise _BadRequest(f"Invalid value at 'page_size' (TYPE_INT32), \"{raw_size}\"") from None
    if page_size < 0:
        raise _BadRequest("page_size must not be negative.")
    page_size = min(page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    try:
        offset = offset_from_page_token(request.param("pageToken")) or 0
    except ValueError:
        raise _BadRequest("Invalid page token.") from None
    body: JsonBody = {}
    page = list(items[offset : offset + page_size])
    if page:
        body[key] = page  # proto3 JSON leaves an empty repeated field out
    if offset + page_size < len(items):
        body["nextPageToken"] = opaque_page_token(offset + page_size)
    return body


def _error(code: int, message: str, status: str | None = None) -> Reply:
    """Google's error envelope as the Analytics APIs send it: no ``errors`` list, ``details`` when any."""
    status = status or {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND"}[code]
    return Reply(code, {"error": {"code": code, "message": message, "status": status}})


def _unauthenticated() -> Reply:
    error_info = {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "ACCESS_TOKEN_EXPIRED",
        "domain": "googleapis.com",
        "metadata": {"service": "analyticsadmin.googleapis.com", "method": "AnalyticsAdminService"},
    }
    body = {
        "error": {"code": 401, "message": UNAUTHENTICATED_MESSAGE, "status": "UNAUTHENTICATED", "details": [error_info]}
    }
    return Reply(401, body)


@functools.cache
def _message_type(version: str, type_name: str) -> Any:
    module = importlib.import_module(f"google.analytics.admin_{version}")
    return getattr(module, type_name)


@functools.lru_cache(maxsize=4096)
def _check_json(version: str, type_name: str, text: bytes) -> None:
    from google.protobuf import json_format

    message_type = _message_type(version, type_name)
    json_format.Parse(text, message_type.pb(message_type()), ignore_unknown_fields=False)


def _checked(version: str, type_name: str, body: JsonBody) -> JsonBody:
    """``body`` after a strict parse as ``type_name`` of the client library (answers repeat: cached)."""
    _check_json(version, type_name, orjson.dumps(body))
    return body


# ---------------------------------------------------------------------------------- proto3 JSON renderers


def _timestamp(moment: dt.datetime) -> str:
    utc = moment.astimezone(dt.UTC)
    return f"{utc:%Y-%m-%dT%H:%M:%S}.{utc.microsecond // 1000:03d}Z"


def _date(day: dt.date) -> JsonBody:
    return {"year": day.year, "month": day.month, "day": day.day}


def _property(prop: Property) -> JsonBody:
    return {
        "name": prop.name,
        "propertyType": prop.property_type,
        "createTime": _timestamp(prop.create_time),
        "updateTime": _timestamp(prop.update_time),
        "parent": prop.account.name,
        "displayName": prop.display_name,
        "industryCategory": prop.industry_category,
        "timeZone": prop.time_zone,
        "currencyCode": prop.currency_code,
        "serviceLevel": prop.service_level,
        "account": prop.account.name,
    }


def _data_retention(prop: Property) -> JsonBody:
    retention = prop.data_retention
    return {
        "name": f"{prop.name}/dataRetentionSettings",
        "eventDataRetention": retention.event_data_retention,
        "userDataRetention": retention.user_data_retention,
        "resetUserDataOnNewActivity": retention.reset_user_data_on_new_activity,
    }


def _attribution(prop: Property) -> JsonBody:
    settings = prop.attribution
    return {
        "name": f"{prop.name}/attributionSettings",
        "acquisitionConversionEventLookbackWindow": settings.acquisition_conversion_event_lookback_window,
        "otherConversionEventLookbackWindow": settings.other_conversion_event_lookback_window,
        "reportingAttributionModel": settings.reporting_attribution_model,
        "adsWebConversionDataExportScope": settings.ads_web_conversion_data_export_scope,
    }


def _key_event(prop: Property, event: KeyEvent, collection: str) -> JsonBody:
    body: JsonBody = {
        "name": f"{prop.name}/{collection}/{event.key_event_id}",
        "eventName": event.event_name,
        "createTime": _timestamp(event.create_time),
        "deletable": event.deletable,
        "custom": event.custom,
        "countingMethod": event.counting_method,
    }
    if event.default_value is not None:
        # KeyEvent.DefaultValue {numericValue} and ConversionEvent.DefaultConversionValue {value}.
        field, value_key = (
            ("defaultValue", "numericValue") if collection == "keyEvents" else ("defaultConversionValue", "value")
        )
        body[field] = {value_key: event.default_value.numeric_value, "currencyCode": event.default_value.currency_code}
    return body


def _key_events(prop: Property) -> list[JsonBody]:
    return [_key_event(prop, event, "keyEvents") for event in prop.key_events]


def _conversion_events(prop: Property) -> list[JsonBody]:
    # Conversion events are the deprecated name of key events: the same events under another collection.
    return [_key_event(prop, event, "conversionEvents") for event in prop.key_events]


def _custom_dimensions(prop: Property) -> list[JsonBody]:
    return [
        {
            "name": f"{prop.name}/customDimensions/{dimension.custom_dimension_id}",
            "parameterName": dimension.parameter_name,
            "displayName": dimension.display_name,
            "description": dimension.description,
            "scope": dimension.scope,
            "disallowAdsPersonalization": dimension.disallow_ads_personalization,
        }
        for dimension in prop.custom_dimensions
    ]


def _custom_metrics(prop: Property) -> list[JsonBody]:
    return [
        {
            "name": f"{prop.name}/customMetrics/{metric.custom_metric_id}",
            "parameterName": metric.parameter_name,
            "displayName": metric.display_name,
            "description": metric.description,
            "measurementUnit": metric.measurement_unit,
            "scope": metric.scope,
            "restrictedMetricType": list(metric.restricted_metric_types),
        }
        for metric in prop.custom_metrics
    ]


def _calculated_metrics(prop: Property) -> list[JsonBody]:
    return [
        {
            "name": f"{prop.name}/calculatedMetrics/{metric.calculated_metric_id}",
            "description": metric.description,
            "displayName": metric.display_name,
            "calculatedMetricId": metric.calculated_metric_id,
            "metricUnit": metric.metric_unit,
            "restrictedMetricType": list(metric.restricted_metric_types),
            "formula": metric.formula,
            "invalidMetricReference": False,
        }
        for metric in prop.calculated_metrics
    ]


def _grouping_rule(rule: GroupingRule) -> JsonBody:
    if len(rule.values) == 1:
        channel_filter: JsonBody = {
            "fieldName": rule.field_name,
            "stringFilter": {"matchType": rule.match_type, "value": rule.values[0]},
        }
    else:
        channel_filter = {"fieldName": rule.field_name, "inListFilter": {"values": list(rule.values)}}
    # Google requires a rule's expression to be an AND of ORs, even for a single filter.
    expression = {"andGroup": {"filterExpressions": [{"orGroup": {"filterExpressions": [{"filter": channel_filter}]}}]}}
    return {"displayName": rule.display_name, "expression": expression}


def _channel_group(prop: Property, group: ChannelGroup) -> JsonBody:
    return {
        "name": f"{prop.name}/channelGroups/{group.channel_group_id}",
        "displayName": group.display_name,
        "description": group.description,
        "groupingRule": [_grouping_rule(rule) for rule in group.grouping_rules],
        "systemDefined": group.system_defined,
        "primary": group.primary,
    }


def _channel_groups(prop: Property) -> list[JsonBody]:
    return [_channel_group(prop, group) for group in prop.channel_groups]


def _google_ads_links(prop: Property) -> list[JsonBody]:
    return [
        {
            "name": f"{prop.name}/googleAdsLinks/{link.link_id}",
            "customerId": link.customer_id,
            "canManageClients": link.can_manage_clients,
            "adsPersonalizationEnabled": link.ads_personalization_enabled,
            "createTime": _timestamp(link.create_time),
            "updateTime": _timestamp(link.update_time),
            "creatorEmailAddress": link.creator_email_address,
        }
        for link in prop.google_ads_links
    ]


def _annotation(prop: Property, annotation: Annotation) -> JsonBody:
    body: JsonBody = {
        "name": f"{prop.name}/reportingDataAnnotations/{annotation.annotation_id}",
        "title": annotation.title,
        "description": annotation.description,
        "color": annotation.color,
        "systemGenerated": annotation.system_generated,
    }
    if annotation.end_date is None:
        body["annotationDate"] = _date(annotation.start_date)
    else:
        body["annotationDateRange"] = {"startDate": _date(annotation.start_date), "endDate": _date(annotation.end_date)}
    return body


def _annotations(prop: Property) -> list[JsonBody]:
    return [_annotation(prop, annotation) for annotation in prop.annotations]
