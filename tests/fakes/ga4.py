"""``FakeGA4Data``: the Google Analytics Data API (v1beta, and v1alpha's funnel report) over REST on a
loopback server, computing every answer from the generated events of ``fakes.ga4_export``; and
``FakeGA4``, the Data and Admin fakes behind one token endpoint.

    with FakeGA4(today=dt.date(2026, 10, 15)) as fake:
        transport = BetaAnalyticsDataRestTransport(host=fake.data_url, credentials=sa, always_use_jwt_access=False)
        BetaAnalyticsDataClient(transport=transport).run_report(request)
        fake.events("123456789")        # the ground truth the tests aggregate themselves

**Data.** Each property of ``fakes.ga4_catalog`` gets ``days`` (100) days of ``events_per_day`` (200)
events up to its ``today`` (the property's own calendar day of ``fake.now``; events after ``now`` are not
generated yet), in its time zone and currency, generated lazily on first use and kept.
``FakeGA4(today=D)`` fixes ``now`` at D 12:00 UTC (the same day D in Madrid, New York and Tokyo);
without ``today`` ``now`` is the wall clock when the fake was built.

**Semantics** (one line each; "the row's events" are the events of the row's date range that pass
``dimensionFilter`` and carry the row's dimension values):

- ``sessions``: distinct (user_pseudo_id, ga_session_id) among the row's events.
- ``totalUsers``: distinct users among the row's events.
- ``activeUsers``: distinct users among the row's events that belong to an engaged session or are a first_visit
  (in realtime reports: distinct users, any event).
- ``newUsers``: distinct users among the row's first_visit events.
- ``eventCount``: the row's events.
- ``screenPageViews``: the row's page_view events.
- ``engagedSessions``: distinct sessions of the row's events that are engaged (≥ 10 s of engagement time,
  ≥ 2 page views, or a key event).
- ``engagementRate``: engagedSessions / sessions (0 without sessions); ``bounceRate``: 1 − engagementRate.
- ``averageSessionDuration`` (seconds): mean over the row's sessions of (last event − first event) of the session.
- ``userEngagementDuration`` (seconds): sum of engagement_time_msec / 1000 over the row's events.
- ``keyEvents``: the row's key events (purchase each time; generate_lead once per session);
  ``keyEvents:<event>``: the same for one key event. Deprecated name ``conversions`` is accepted.
- ``sessionKeyEventRate``: sessions with a key event among the row's events / sessions.
- ``eventsPerSession``, ``screenPageViewsPerSession``: eventCount / sessions, screenPageViews / sessions.
- ``ecommercePurchases``: the row's purchase events; ``purchaseRevenue`` = ``totalRevenue`` (currency):
  sum of their value, converted into ``currencyCode`` when asked.
- ``customEvent:discount_amount`` (currency): sum of the discount_amount param.
- ``calcMetric:revenue_per_user`` (currency): totalRevenue / totalUsers (0 without users).

Dimensions: date/time ones are the property's local time; session-scoped (``session*``, ``landingPage``,
``newVsReturning``) come from the event's session; ``firstUser*`` from the user's first-user source;
the attributed ones (``defaultChannelGroup``, ``source``, ``medium``, ``sourceMedium``, ``campaignName``)
from the user's last non-direct session up to the event's session whose start is within 90 days before
it (cross-channel last click), else Direct. Custom dimensions missing on an event read ``(not set)``.

**Rules.** Unknown names: 400 "Field X is not a valid dimension/metric". Incompatible: the attributed
dimensions go only with key-event and revenue metrics (``keyEvents*``, ``ecommercePurchases``,
``purchaseRevenue``, ``totalRevenue``); a request mixing them is a 400 that names both sides.
Rows whose metrics are all 0 are dropped unless ``keepEmptyRows``. Without ``orderBys`` rows come by
the first metric descending, then by dimension values. ``totals``/``minimums``/``maximums`` have one row
per date range (``RESERVED_TOTAL``/``RESERVED_MIN``/``RESERVED_MAX``, the ``dateRange`` value kept);
totals recount distinct users and sessions over the union of the kept rows' events.
Several date ranges add a ``dateRange`` dimension (``DateRange.name`` or ``date_range_N``).

**Knobs** (per property, ``fake.knobs(property_id)``, reset by ``clear_knobs()``):
``sampling`` (fraction read: ``samplingMetadatas`` per date range, values unchanged),
``thresholded`` (``subjectToThresholding``), ``cardinality_limit`` (per dimension, values beyond the
N most frequent become ``(other)`` and ``dataLossFromOtherRow`` is set), ``revenue_restricted``
(revenue metrics read 0, ``schemaRestrictionResponse`` lists them, metadata shows ``blockedReasons``),
``empty_reason`` (no rows, ``emptyReason`` set). Quota: ``fake.quota(id)`` (mutable counters; each
report consumes 1 token + 1 per 5,000 events read), ``set_tokens(id, per_day=, per_hour=)``,
``exhaust_tokens(id, "day"|"hour")`` → 429 RESOURCE_EXHAUSTED "Exhausted property tokens per day ...".
``FakeGA4.clear_faults()`` clears the injected faults of both servers, the knobs and the quotas (for an
autouse fixture between tests).

**Realtime** reports read the events of the last 30 minutes of ``now`` (``LIVE_SESSIONS`` sessions start
in that span, so that there are some); ``minutesAgo`` is ``"00"``–``"29"``; only the Realtime API's own
dimensions (and ``customUser:*``) and metrics are accepted.
**Funnels** (v1alpha): steps match events (``funnelEventFilter`` by name, ``funnelFieldFilter`` on a
dimension, and/or/not); a user reaches step k+1 with the first event after the one that reached step k
(closed: entering at step 1; open: at any step). ``funnelStepCompletionRate`` = users(k+1)/users(k),
abandonments = users(k) − users(k+1), both 0 on the last step. A breakdown adds a ``RESERVED_TOTAL`` row
then the ``limit`` (5) largest values, read on the event where the user entered.

**Routes** (names for ``server.fail``/``slow``): ``runReport``, ``batchRunReports``, ``runPivotReport``,
``runRealtimeReport``, ``getMetadata``, ``checkCompatibility``, ``runFunnelReport`` (v1alpha), and
``token``. Every request needs a bearer token the shared ``FakeGoogleOAuth`` issued (else 401:
``oauth.revoke_access_tokens()`` makes the client refresh and replay). A hidden or unknown property
answers 403 PERMISSION_DENIED. Every response body is parsed strictly (``ignore_unknown_fields=False``)
against the client's message type before it leaves, on a copy cut to its first rows; a failure is a 500.
"""

from __future__ import annotations

import bisect
import collections
import copy
import dataclasses
import datetime as dt
import functools
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any
from zoneinfo import ZoneInfo

import orjson

from fakes import ga4_catalog
from fakes.ga4_export import Event, Session, default_channel_group, generate_day_events
from fakes.google_oauth import FakeGoogleOAuth
from fakes.http import FakeHttpServer, RecordedRequest, Reply, ServedFake, google_error

DAYS = 100
EVENTS_PER_DAY = 200
MAX_LIMIT = 250_000
DEFAULT_LIMIT = 10_000
MAX_DATE_RANGES = 4
MAX_BATCH = 5
LOOKBACK_DAYS = 90
LIVE_SESSIONS = 12  # sessions started in the last 30 minutes of ``now``, for realtime reports
REALTIME_WINDOW_US = 30 * 60 * 1_000_000
NOT_SET = "(not set)"
OTHER = "(other)"
SCHEMA_URL = "https://developers.google.com/analytics/devguides/reporting/data/v1/api-schema"
REALTIME_SCHEMA_URL = "https://developers.google.com/analytics/devguides/reporting/data/v1/realtime-api-schema"
PERMISSION_MESSAGE = (
    "User does not have sufficient permissions for this property. To learn more about Property ID, see "
    "https://developers.google.com/analytics/devguides/reporting/data/v1/property-id."
)
UNAUTHENTICATED_MESSAGE = (
    "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid "
    "authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."
)
# Currency units per US dollar (fixed: the fake converts revenue with them when currencyCode asks).
RATES_PER_USD = {"USD": 1.0, "EUR": 0.92, "JPY": 150.0, "GBP": 0.79}
COUNTRY_IDS = {
    "France": "FR",
    "Germany": "DE",
    "United States": "US",
    "Japan": "JP",
    "United Kingdom": "GB",
    "Spain": "ES",
    "Brazil": "BR",
}
SHOP_HOST = "shop.example.com"


# ------------------------------------------------------------------------------------------ schema


@dataclasses.dataclass(frozen=True)
class _Dimension:
    api_name: str
    ui_name: str
    category: str
    read: Callable[[Event, _PropertyData], str]
    description: str = ""
    custom: bool = False
    deprecated: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class _Metric:
    api_name: str
    ui_name: str
    category: str
    type: str  # TYPE_INTEGER | TYPE_FLOAT | TYPE_SECONDS | TYPE_CURRENCY
    compute: Callable[[Sequence[Event], _Scope], float]
    description: str = ""
    custom: bool = False
    deprecated: tuple[str, ...] = ()
    expression: str = ""
    revenue: bool = False  # restricted as REVENUE_DATA
    attributable: bool = False  # compatible with the attributed dimensions
    alias_of: str = ""  # a deprecated name: the metric it stands for (not listed in the metadata)


@dataclasses.dataclass(frozen=True)
class _Scope:
    """What metric computations need besides the events: the currency factor and restrictions."""

    currency_factor: float = 1.0
    revenue_restricted: bool = False


def _local(event: Event, data: _PropertyData) -> dt.datetime:
    return dt.datetime.fromtimestamp(event.timestamp_us / 1e6, data.zone)


def _attributed(event: Event, data: _PropertyData) -> Session | None:
    return data.attribution.get(event.session)


def _attributed_field(field: str, direct: str) -> Callable[[Event, _PropertyData], str]:
    def read(event: Event, data: _PropertyData) -> str:
        session = _attributed(event, data)
        return direct if session is None else getattr(session, field)

    return read


def _attributed_channel(event: Event, data: _PropertyData) -> str:
    session = _attributed(event, data)
    return "Direct" if session is None else session.channel


def _attributed_source_medium(event: Event, data: _PropertyData) -> str:
    session = _attributed(event, data)
    return "(direct) / (none)" if session is None else f"{session.source} / {session.medium}"


_STANDARD_DIMENSIONS = [
    _Dimension("date", "Date", "Time", lambda e, d: f"{e.date:%Y%m%d}", "The date of the event, YYYYMMDD."),
    _Dimension("dateHour", "Date + hour (YYYYMMDDHH)", "Time", lambda e, d: f"{_local(e, d):%Y%m%d%H}"),
    _Dimension("dateHourMinute", "Date hour and minute", "Time", lambda e, d: f"{_local(e, d):%Y%m%d%H%M}"),
    _Dimension("hour", "Hour", "Time", lambda e, d: f"{_local(e, d):%H}"),
    _Dimension("dayOfWeek", "Day of week", "Time", lambda e, d: str(e.date.isoweekday() % 7)),
    _Dimension("dayOfWeekName", "Day of week name", "Time", lambda e, d: f"{e.date:%A}"),
    _Dimension("month", "Month", "Time", lambda e, d: f"{e.date:%m}"),
    _Dimension("year", "Year", "Time", lambda e, d: f"{e.date:%Y}"),
    _Dimension("yearMonth", "Year month", "Time", lambda e, d: f"{e.date:%Y%m}"),
    _Dimension("eventName", "Event name", "Event", lambda e, d: e.name),
    _Dimension("pagePath", "Page path", "Page / screen", lambda e, d: e.page_path),
    _Dimension("pageTitle", "Page title", "Page / screen", lambda e, d: e.page_title),
    _Dimension("unifiedScreenName", "Page title and screen name", "Page / screen", lambda e, d: e.page_title),
    _Dimension("pageLocation", "Page location", "Page / screen", lambda e, d: f"https://{SHOP_HOST}{e.page_path}"),
    _Dimension("hostName", "Hostname", "Page / screen", lambda e, d: SHOP_HOST),
    _Dimension("landingPage", "Landing page", "Page / screen", lambda e, d: e.session.landing_page),
    _Dimension(
        "landingPagePlusQueryString",
        "Landing page + query string",
        "Page / screen",
        lambda e, d: e.session.landing_page,
    ),
    _Dimension("contentGroup", "Content group", "Page / screen", lambda e, d: e.content_group or NOT_SET),
    _Dimension("country", "Country", "Geography", lambda e, d: e.session.visitor.country),
    _Dimension("countryId", "Country ID", "Geography", lambda e, d: COUNTRY_IDS[e.session.visitor.country]),
    _Dimension("city", "City", "Geography", lambda e, d: e.session.visitor.city),
    _Dimension(
        "deviceCategory", "Device category", "Platform / device", lambda e, d: e.session.visitor.device_category
    ),
    _Dimension(
        "operatingSystem", "Operating system", "Platform / device", lambda e, d: e.session.visitor.operating_system
    ),
    _Dimension("platform", "Platform", "Platform / device", lambda e, d: "web"),
    _Dimension("sessionSource", "Session source", "Traffic source", lambda e, d: e.session.source),
    _Dimension("sessionMedium", "Session medium", "Traffic source", lambda e, d: e.session.medium),
    _Dimension(
        "sessionSourceMedium",
        "Session source / medium",
        "Traffic source",
        lambda e, d: f"{e.session.source} / {e.session.medium}",
    ),
    _Dimension("sessionCampaignName", "Session campaign", "Traffic source", lambda e, d: e.session.campaign),
    _Dimension(
        "sessionDefaultChannelGroup", "Session default channel group", "Traffic source", lambda e, d: e.session.channel
    ),
    _Dimension("firstUserSource", "First user source", "Traffic source", lambda e, d: e.session.visitor.first_source),
    _Dimension("firstUserMedium", "First user medium", "Traffic source", lambda e, d: e.session.visitor.first_medium),
    _Dimension(
        "firstUserSourceMedium",
        "First user source / medium",
        "Traffic source",
        lambda e, d: f"{e.session.visitor.first_source} / {e.session.visitor.first_medium}",
    ),
    _Dimension(
        "firstUserCampaignName", "First user campaign", "Traffic source", lambda e, d: e.session.visitor.first_campaign
    ),
    _Dimension(
        "firstUserDefaultChannelGroup",
        "First user default channel group",
        "Traffic source",
        lambda e, d: default_channel_group(e.session.visitor.first_source, e.session.visitor.first_medium),
    ),
    _Dimension(
        "defaultChannelGroup",
        "Default channel group",
        "Attribution",
        _attributed_channel,
        "The key event's default channel group (cross-channel last non-direct click, 90 days).",
    ),
    _Dimension("source", "Source", "Attribution", _attributed_field("source", "(direct)")),
    _Dimension("medium", "Medium", "Attribution", _attributed_field("medium", "(none)")),
    _Dimension("sourceMedium", "Source / medium", "Attribution", _attributed_source_medium),
    _Dimension("campaignName", "Campaign", "Attribution", _attributed_field("campaign", "(direct)")),
    _Dimension("newVsReturning", "New / returning", "User", lambda e, d: "new" if e.session.is_first else "returning"),
]
ATTRIBUTION_DIMENSIONS = frozenset(d.api_name for d in _STANDARD_DIMENSIONS if d.category == "Attribution")

# Custom definitions by parameter name: how an event reads them.
_CUSTOM_DIMENSION_READERS: dict[str, Callable[[Event, _PropertyData], str]] = {
    "customEvent:form_name": lambda e, d: e.form_name or NOT_SET,
    "customUser:plan": lambda e, d: e.session.visitor.plan or NOT_SET,
}


def _distinct_sessions(events: Sequence[Event]) -> set[Session]:
    return {event.session for event in events}


def _users(events: Sequence[Event]) -> int:
    return len({event.session.visitor.pseudo_id for event in events})


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else 0.0


def _engagement_rate(events: Sequence[Event], scope: _Scope) -> float:
    sessions = _distinct_sessions(events)
    return _ratio(sum(session.engaged for session in sessions), len(sessions))


def _revenue(events: Sequence[Event], scope: _Scope) -> float:
    if scope.revenue_restricted:
        return 0.0
    return sum(event.revenue or 0.0 for event in events if event.name == "purchase") * scope.currency_factor


def _key_events(event_name: str | None) -> Callable[[Sequence[Event], _Scope], float]:
    def compute(events: Sequence[Event], scope: _Scope) -> float:
        return sum(
            1 for event in events if event.counts_as_key_event and (event_name is None or event.name == event_name)
        )

    return compute


_STANDARD_METRICS = [
    _Metric("sessions", "Sessions", "Session", "TYPE_INTEGER", lambda ev, s: len(_distinct_sessions(ev))),
    _Metric("totalUsers", "Total users", "User", "TYPE_INTEGER", lambda ev, s: _users(ev)),
    _Metric(
        "activeUsers",
        "Active users",
        "User",
        "TYPE_INTEGER",
        lambda ev, s: len({e.session.visitor.pseudo_id for e in ev if e.session.engaged or e.name == "first_visit"}),
    ),
    _Metric(
        "newUsers",
        "New users",
        "User",
        "TYPE_INTEGER",
        lambda ev, s: len({e.session.visitor.pseudo_id for e in ev if e.name == "first_visit"}),
    ),
    _Metric("eventCount", "Event count", "Event", "TYPE_INTEGER", lambda ev, s: len(ev)),
    _Metric(
        "screenPageViews",
        "Views",
        "Page / screen",
        "TYPE_INTEGER",
        lambda ev, s: sum(e.name == "page_view" for e in ev),
    ),
    _Metric(
        "engagedSessions",
        "Engaged sessions",
        "Session",
        "TYPE_INTEGER",
        lambda ev, s: sum(session.engaged for session in _distinct_sessions(ev)),
    ),
    _Metric("engagementRate", "Engagement rate", "Session", "TYPE_FLOAT", _engagement_rate),
    _Metric(
        "bounceRate",
        "Bounce rate",
        "Session",
        "TYPE_FLOAT",
        lambda ev, s: 1.0 - _engagement_rate(ev, s) if ev else 0.0,
    ),
    _Metric(
        "averageSessionDuration",
        "Average session duration",
        "Session",
        "TYPE_SECONDS",
        lambda ev, s: _ratio(
            sum(session.duration_s for session in _distinct_sessions(ev)), len(_distinct_sessions(ev))
        ),
    ),
    _Metric(
        "userEngagementDuration",
        "User engagement",
        "User",
        "TYPE_SECONDS",
        lambda ev, s: sum(e.engagement_time_msec or 0 for e in ev) / 1000,
    ),
    _Metric(
        "keyEvents",
        "Key events",
        "Event",
        "TYPE_FLOAT",  # GA4 may credit a key event in part (data-driven attribution): a float, as in spec 15.1
        _key_events(None),
        deprecated=("conversions",),
        attributable=True,
    ),
    _Metric(
        "sessionKeyEventRate",
        "Session key event rate",
        "Session",
        "TYPE_FLOAT",
        lambda ev, s: _ratio(len({e.session for e in ev if e.counts_as_key_event}), len(_distinct_sessions(ev))),
        deprecated=("sessionConversionRate",),
    ),
    _Metric(
        "eventsPerSession",
        "Events per session",
        "Event",
        "TYPE_FLOAT",
        lambda ev, s: _ratio(len(ev), len(_distinct_sessions(ev))),
    ),
    _Metric(
        "screenPageViewsPerSession",
        "Views per session",
        "Page / screen",
        "TYPE_FLOAT",
        lambda ev, s: _ratio(sum(e.name == "page_view" for e in ev), len(_distinct_sessions(ev))),
    ),
    _Metric(
        "ecommercePurchases",
        "Ecommerce purchases",
        "Ecommerce",
        "TYPE_INTEGER",
        lambda ev, s: sum(e.name == "purchase" for e in ev),
        attributable=True,
    ),
    _Metric(
        "purchaseRevenue", "Purchase revenue", "Revenue", "TYPE_CURRENCY", _revenue, revenue=True, attributable=True
    ),
    _Metric("totalRevenue", "Total revenue", "Revenue", "TYPE_CURRENCY", _revenue, revenue=True, attributable=True),
]

_CUSTOM_METRIC_COMPUTE: dict[str, Callable[[Sequence[Event], _Scope], float]] = {
    "customEvent:discount_amount": lambda ev, s: (
        0.0 if s.revenue_restricted else sum(e.discount_amount or 0.0 for e in ev) * s.currency_factor
    ),
}
_CALCULATED_METRIC_COMPUTE: dict[str, Callable[[Sequence[Event], _Scope], float]] = {
    "calcMetric:revenue_per_user": lambda ev, s: _ratio(_revenue(ev, s), _users(ev)),
}
_UNIT_TYPES = {"STANDARD": "TYPE_FLOAT", "CURRENCY": "TYPE_CURRENCY", "SECONDS": "TYPE_SECONDS"}

# The Realtime API's own list (https://developers.google.com/analytics/devguides/reporting/data/v1/realtime-api-schema)
REALTIME_DIMENSIONS: dict[str, Callable[[Event, _PropertyData], str]] = {
    "appVersion": lambda e, d: NOT_SET,
    "audienceId": lambda e, d: "1",
    "audienceName": lambda e, d: "All Users",
    "audienceResourceName": lambda e, d: f"properties/{d.prop.property_id}/audiences/1",
    "city": lambda e, d: e.session.visitor.city,
    "country": lambda e, d: e.session.visitor.country,
    "countryId": lambda e, d: COUNTRY_IDS[e.session.visitor.country],
    "deviceCategory": lambda e, d: e.session.visitor.device_category,
    "eventName": lambda e, d: e.name,
    "platform": lambda e, d: "web",
    "streamId": lambda e, d: f"{d.prop.property_id[:4]}01",
    "streamName": lambda e, d: f"{d.prop.display_name} web",
    "unifiedScreenName": lambda e, d: e.page_title,
}
REALTIME_METRICS = ("activeUsers", "eventCount", "keyEvents", "screenPageViews")
# Realtime counts as active every user with an event in the minutes asked (no engagement condition).
_REALTIME_METRIC_OVERRIDES = {
    "activeUsers": _Metric("activeUsers", "Active users", "User", "TYPE_INTEGER", lambda ev, s: _users(ev)),
}


# ------------------------------------------------------------------------------------------ errors


class _ApiError(Exception):
    def __init__(self, code: int, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason


def _bad_request(message: str) -> _ApiError:
    return _ApiError(400, message)


def _error_body(code: int, message: str, reason: str | None) -> dict[str, Any]:
    """Google's envelope; with a reason, also the ``google.rpc.ErrorInfo`` that api_core exposes as ``e.reason``."""
    body = google_error(code, None, message, reason)
    if reason is not None:
        body["error"]["details"] = [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": reason,
                "domain": "googleapis.com",
                "metadata": {"service": "analyticsdata.googleapis.com"},
            }
        ]
    return body


# ------------------------------------------------------------------------------------------ state


@dataclasses.dataclass
class Knobs:
    """Per-property switches a test sets (see the module docstring)."""

    sampling: float | None = None
    thresholded: bool = False
    cardinality_limit: int | None = None
    revenue_restricted: bool = False
    empty_reason: str | None = None


@dataclasses.dataclass
class QuotaStatus:
    consumed: int
    remaining: int

    def as_json(self) -> dict[str, int]:
        return {"consumed": self.consumed, "remaining": self.remaining}


@dataclasses.dataclass
class PropertyQuota:
    """Token counters of a property (standard-property limits); each report consumes from the token ones."""

    tokens_per_day: QuotaStatus = dataclasses.field(default_factory=lambda: QuotaStatus(0, 200_000))
    tokens_per_hour: QuotaStatus = dataclasses.field(default_factory=lambda: QuotaStatus(0, 40_000))
    concurrent_requests: QuotaStatus = dataclasses.field(default_factory=lambda: QuotaStatus(0, 10))
    server_errors_per_project_per_hour: QuotaStatus = dataclasses.field(default_factory=lambda: QuotaStatus(0, 10))
    potentially_thresholded_requests_per_hour: QuotaStatus = dataclasses.field(
        default_factory=lambda: QuotaStatus(0, 120)
    )
    tokens_per_project_per_hour: QuotaStatus = dataclasses.field(default_factory=lambda: QuotaStatus(0, 14_000))

    def as_json(self) -> dict[str, Any]:
        return {
            "tokensPerDay": self.tokens_per_day.as_json(),
            "tokensPerHour": self.tokens_per_hour.as_json(),
            "concurrentRequests": self.concurrent_requests.as_json(),
            "serverErrorsPerProjectPerHour": self.server_errors_per_project_per_hour.as_json(),
            "potentiallyThresholdedRequestsPerHour": self.potentially_thresholded_requests_per_hour.as_json(),
            "tokensPerProjectPerHour": self.tokens_per_project_per_hour.as_json(),
        }

    def check(self) -> None:
        for status, period in ((self.tokens_per_day, "day"), (self.tokens_per_hour, "hour")):
            if status.remaining <= 0:
                raise _ApiError(
                    429,
                    f"Exhausted property tokens per {period} for a property. To learn more, see "
                    "https://developers.google.com/analytics/devguides/reporting/data/v1/quotas",
                    "RATE_LIMIT_EXCEEDED",
                )

    def consume(self, tokens: int) -> None:
        for status in (self.tokens_per_day, self.tokens_per_hour, self.tokens_per_project_per_hour):
            spent = min(tokens, status.remaining)
            status.consumed += spent
            status.remaining -= spent


class _PropertyData:
    """A property's generated events, sessions and attribution, with the indexes reports need."""

    def __init__(self, prop: ga4_catalog.Property, today: dt.date, now_us: int, seed: int, days: int, per_day: int):
        self.prop = prop
        self.zone = ZoneInfo(prop.time_zone)
        self.today = today
        self.first_day = today - dt.timedelta(days=days - 1)
        groups = tuple(group for group in prop.content_groups if group != NOT_SET)
        events: list[Event] = []
        for offset in range(days):
            day = self.first_day + dt.timedelta(days=offset)
            day_events = generate_day_events(
                day,
                events_per_day=per_day,
                seed=seed,
                time_zone=prop.time_zone,
                content_groups=groups,
                currency=prop.currency_code,
                live_sessions=(LIVE_SESSIONS, now_us - REALTIME_WINDOW_US, now_us) if day == today else None,
            )
            events.extend(event for event in day_events if event.timestamp_us <= now_us)
        self.events = events
        self.dates = [event.date for event in events]  # sorted: days are generated in order
        self.timestamps = [event.timestamp_us for event in events]
        self.sessions = list(dict.fromkeys(event.session for event in events))
        self.attribution = _attribute(self.sessions)
        self._top_values: dict[str, set[str]] = {}

    def between(self, start: dt.date, end: dt.date) -> list[Event]:
        return self.events[bisect.bisect_left(self.dates, start) : bisect.bisect_right(self.dates, end)]

    def top_values(self, dimension: _Dimension, limit: int) -> set[str]:
        """The ``limit`` most frequent values of a dimension over the property's events (the rest is "(other)")."""
        key = f"{dimension.api_name}:{limit}"
        if key not in self._top_values:
            counts = collections.Counter(dimension.read(event, self) for event in self.events)
            self._top_values[key] = {value for value, _ in counts.most_common(limit)}
        return self._top_values[key]


def _attribute(sessions: Sequence[Session]) -> dict[Session, Session]:
    """Each session's credited session: the user's last non-direct one up to it within the lookback window."""
    credited: dict[Session, Session] = {}
    by_user: dict[str, list[Session]] = collections.defaultdict(list)
    for session in sessions:
        by_user[session.user].append(session)
    window_us = LOOKBACK_DAYS * 86_400 * 1_000_000
    for own in by_user.values():
        own.sort(key=lambda session: session.start_us)
        last_non_direct: Session | None = None
        for session in own:
            if session.source != "(direct)":
                last_non_direct = session
            if last_non_direct is not None and session.start_us - last_non_direct.start_us <= window_us:
                credited[session] = last_non_direct
    return credited


# ------------------------------------------------------------------------------------------ filters


def _compile_string_match(spec: dict[str, Any]) -> Callable[[str], bool]:
    match_type = spec.get("match_type", "EXACT")
    value = spec.get("value", "")
    case_sensitive = bool(spec.get("case_sensitive", False))
    if match_type in ("FULL_REGEXP", "PARTIAL_REGEXP"):
        try:
            pattern = re.compile(value, 0 if case_sensitive else re.IGNORECASE)
        except re.error as exc:
            raise _bad_request(f"Invalid regular expression '{value}': {exc}.") from exc
        if match_type == "FULL_REGEXP":
            return lambda text: pattern.fullmatch(text) is not None
        return lambda text: pattern.search(text) is not None
    wanted = value if case_sensitive else value.lower()
    fold: Callable[[str], str] = (lambda text: text) if case_sensitive else str.lower
    tests: dict[str, Callable[[str], bool]] = {
        "EXACT": lambda text: fold(text) == wanted,
        "MATCH_TYPE_UNSPECIFIED": lambda text: fold(text) == wanted,
        "BEGINS_WITH": lambda text: fold(text).startswith(wanted),
        "ENDS_WITH": lambda text: fold(text).endswith(wanted),
        "CONTAINS": lambda text: wanted in fold(text),
    }
    return tests[match_type]


def _number(value: dict[str, Any]) -> float:
    if "int64_value" in value:
        return float(int(value["int64_value"]))
    return float(value.get("double_value", 0.0))


_COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "EQUAL": lambda a, b: a == b,
    "OPERATION_UNSPECIFIED": lambda a, b: a == b,
    "LESS_THAN": lambda a, b: a < b,
    "LESS_THAN_OR_EQUAL": lambda a, b: a <= b,
    "GREATER_THAN": lambda a, b: a > b,
    "GREATER_THAN_OR_EQUAL": lambda a, b: a >= b,
}


def _as_float(value: str | float) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def _compile_filter(spec: dict[str, Any]) -> Callable[[str | float], bool]:
    """One ``Filter`` (without the field name) as a test of the field's value (a string or a number)."""
    if "string_filter" in spec:
        string_match = _compile_string_match(spec["string_filter"])
        return lambda value: string_match(value if isinstance(value, str) else _format_number(value))
    if "in_list_filter" in spec:
        in_list = spec["in_list_filter"]
        sensitive = bool(in_list.get("case_sensitive", False))
        values = set(in_list.get("values", [])) if sensitive else {v.lower() for v in in_list.get("values", [])}
        return lambda value: (str(value) if sensitive else str(value).lower()) in values
    if "numeric_filter" in spec:
        operation = _COMPARISONS[spec["numeric_filter"].get("operation", "EQUAL")]
        bound = _number(spec["numeric_filter"].get("value", {}))

        def numeric(value: str | float) -> bool:
            number = _as_float(value)
            return number is not None and operation(number, bound)

        return numeric
    if "between_filter" in spec:
        low = _number(spec["between_filter"].get("from_value", {}))
        high = _number(spec["between_filter"].get("to_value", {}))

        def between(value: str | float) -> bool:
            number = _as_float(value)
            return number is not None and low <= number <= high

        return between
    if "empty_filter" in spec:
        return lambda value: value in ("", NOT_SET)
    raise _bad_request("A filter needs one of stringFilter, inListFilter, numericFilter, betweenFilter, emptyFilter.")


def _filter_fields(expression: dict[str, Any] | None) -> list[str]:
    if not expression:
        return []
    if "filter" in expression:
        return [expression["filter"].get("field_name", "")]
    if "not_expression" in expression:
        return _filter_fields(expression["not_expression"])
    group = expression.get("and_group") or expression.get("or_group") or {}
    return [name for sub in group.get("expressions", []) for name in _filter_fields(sub)]


def _compile_expression(expression: dict[str, Any], read: Callable[[str, Any], str | float]) -> Callable[[Any], bool]:
    """A ``FilterExpression`` as a predicate of an item, ``read(field, item)`` giving a field's value."""
    if "filter" in expression:
        field = expression["filter"].get("field_name", "")
        test = _compile_filter(expression["filter"])
        return lambda item: test(read(field, item))
    if "not_expression" in expression:
        inner = _compile_expression(expression["not_expression"], read)
        return lambda item: not inner(item)
    if "and_group" in expression or "or_group" in expression:
        group = expression.get("and_group") or expression.get("or_group") or {}
        parts = [_compile_expression(sub, read) for sub in group.get("expressions", [])]
        if "and_group" in expression:
            return lambda item: all(part(item) for part in parts)
        return lambda item: any(part(item) for part in parts)
    raise _bad_request("A FilterExpression needs one of andGroup, orGroup, notExpression, filter.")


# ------------------------------------------------------------------------------------------ numbers


def _format_number(value: float) -> str:
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return repr(round(float(value), 10))


def _format_metric(value: float, metric_type: str) -> str:
    if metric_type == "TYPE_INTEGER":
        return str(round(value))
    return _format_number(value)


# ------------------------------------------------------------------------------------------ reports


@dataclasses.dataclass
class _Table:
    """A computed report: rows of (dimension values, metric values, events), before paging."""

    dimension_names: list[str]
    metric_names: list[str]
    metric_types: list[str]
    rows: list[tuple[tuple[str, ...], list[float], list[Event]]]
    aggregates: dict[str, list[tuple[tuple[str, ...], list[float]]]]
    other_row: bool
    events_read: int
    range_events: list[int]
    restricted: list[str]


class FakeGA4Data(ServedFake):
    """The Data API fake; see the module docstring."""

    def __init__(
        self,
        *,
        today: dt.date | None = None,
        seed: int = 0,
        days: int = DAYS,
        events_per_day: int = EVENTS_PER_DAY,
        oauth: FakeGoogleOAuth | None = None,
    ) -> None:
        self.server = FakeHttpServer()
        self.oauth = oauth if oauth is not None else FakeGoogleOAuth(self.server)
        self.seed = seed
        self.days = days
        self.events_per_day = events_per_day
        if today is None:
            self.now = dt.datetime.now(dt.UTC)
        else:
            self.now = dt.datetime(today.year, today.month, today.day, 12, tzinfo=dt.UTC)
        self._lock = threading.Lock()
        self._data: dict[str, _PropertyData] = {}
        self._knobs: dict[str, Knobs] = {}
        self._quotas: dict[str, PropertyQuota] = {}
        self._table_cache: collections.OrderedDict[bytes, _Table] = collections.OrderedDict()
        self._register_routes()

    # ------------------------------------------------------------------------------ ground truth and knobs

    def today(self, property_id: str) -> dt.date:
        """The property's calendar day of ``now`` (its time zone)."""
        prop = self._property(property_id)
        return self.now.astimezone(ZoneInfo(prop.time_zone)).date()

    def events(self, property_id: str) -> list[Event]:
        """The property's events in time order (the ground truth; do not mutate)."""
        return self._property_data(property_id).events

    def sessions(self, property_id: str) -> list[Session]:
        return self._property_data(property_id).sessions

    def knobs(self, property_id: str) -> Knobs:
        """The property's knobs, to set (reports are cached per knob values, so a change shows at once)."""
        with self._lock:
            return self._knobs.setdefault(property_id, Knobs())

    def clear_knobs(self) -> None:
        with self._lock:
            self._knobs.clear()
            self._table_cache.clear()

    def quota(self, property_id: str) -> PropertyQuota:
        with self._lock:
            return self._quotas.setdefault(property_id, PropertyQuota())

    def set_tokens(self, property_id: str, *, per_day: int | None = None, per_hour: int | None = None) -> None:
        quota = self.quota(property_id)
        if per_day is not None:
            quota.tokens_per_day.remaining = per_day
        if per_hour is not None:
            quota.tokens_per_hour.remaining = per_hour

    def exhaust_tokens(self, property_id: str, period: str = "day") -> None:
        self.set_tokens(property_id, **{f"per_{period}": 0})

    def reset_quotas(self) -> None:
        with self._lock:
            self._quotas.clear()

    def _property(self, property_id: str) -> ga4_catalog.Property:
        prop = ga4_catalog.property_by_id(property_id)
        if prop is None or not ga4_catalog.is_visible(property_id):
            raise _ApiError(403, PERMISSION_MESSAGE, "ACCESS_DENIED")
        return prop

    def _property_data(self, property_id: str) -> _PropertyData:
        prop = self._property(property_id)
        with self._lock:
            data = self._data.get(property_id)
            if data is None:
                today = self.now.astimezone(ZoneInfo(prop.time_zone)).date()
                now_us = int(self.now.timestamp() * 1_000_000)
                data = _PropertyData(prop, today, now_us, self.seed, self.days, self.events_per_day)
                self._data[property_id] = data
        return data

    # ------------------------------------------------------------------------------ routing

    def _register_routes(self) -> None:
        number = r"([^/:]+)"
        routes: list[tuple[str, str, Callable[[str, Any], dict[str, Any]], str, str | None]] = [
            ("POST", rf"/v1beta/properties/{number}:runReport", self._run_report, "runReport", "RunReportRequest"),
            (
                "POST",
                rf"/v1beta/properties/{number}:batchRunReports",
                self._batch_run_reports,
                "batchRunReports",
                "BatchRunReportsRequest",
            ),
            (
                "POST",
                rf"/v1beta/properties/{number}:runPivotReport",
                self._run_pivot_report,
                "runPivotReport",
                "RunPivotReportRequest",
            ),
            (
                "POST",
                rf"/v1beta/properties/{number}:runRealtimeReport",
                self._run_realtime_report,
                "runRealtimeReport",
                "RunRealtimeReportRequest",
            ),
            ("GET", rf"/v1beta/properties/{number}/metadata", self._get_metadata, "getMetadata", None),
            (
                "POST",
                rf"/v1beta/properties/{number}:checkCompatibility",
                self._check_compatibility,
                "checkCompatibility",
                "CheckCompatibilityRequest",
            ),
            (
                "POST",
                rf"/v1alpha/properties/{number}:runFunnelReport",
                self._run_funnel_report,
                "runFunnelReport",
                "RunFunnelReportRequest",
            ),
        ]
        for method, pattern, handler, name, request_type in routes:
            self.server.add_route(
                method, pattern, self._guarded(handler, name, request_type), name, error_formatter=self._fault
            )

    @staticmethod
    def _fault(status: int, reason: str | None, message: str) -> Reply:
        return Reply(status, _error_body(status, message, reason))

    def _guarded(
        self, handler: Callable[[str, Any], dict[str, Any]], route: str, request_type: str | None
    ) -> Callable[[RecordedRequest, re.Match[str]], Reply]:
        def run(request: RecordedRequest, match: re.Match[str]) -> Reply:
            if not self.oauth.bearer_token_is_valid(request):
                return Reply(401, _error_body(401, UNAUTHENTICATED_MESSAGE, None))
            property_id = match.group(1)
            try:
                if not property_id.isdigit():
                    raise _bad_request(f"Invalid property ID: {property_id}. A property ID is a number.")
                if property_id != "0":
                    self._property(property_id)
                body = _parse_request(request.body, request_type, route) if request_type else None
                answer = handler(property_id, body)
            except _ApiError as exc:
                return Reply(exc.code, _error_body(exc.code, exc.message, exc.reason))
            _check_strictly(answer, _RESPONSE_TYPES[route])
            return Reply(200, answer)

        return run

    # ------------------------------------------------------------------------------ runReport

    def _names(
        self, property_id: str, request: dict[str, Any], *, realtime: bool = False
    ) -> tuple[list[str], list[str], dict[str, _Dimension], dict[str, _Metric]]:
        dimensions_known, metrics_known = _schema(property_id)
        dimension_names = [d.get("name", "") for d in request.get("dimensions", [])]
        metric_names = [m.get("name", "") for m in request.get("metrics", [])]
        url = REALTIME_SCHEMA_URL if realtime else SCHEMA_URL
        for name in [*dimension_names, *_filter_fields(request.get("dimension_filter"))]:
            if realtime:
                valid = name in REALTIME_DIMENSIONS or name == "minutesAgo"
                valid = valid or (name.startswith("customUser:") and name in dimensions_known)
            else:
                valid = name in dimensions_known or name == "dateRange"
            if not valid:
                raise _bad_request(
                    f"Field {name} is not a valid dimension. For a list of valid dimensions and metrics, see {url}"
                )
        for name in [*metric_names, *_filter_fields(request.get("metric_filter"))]:
            if name not in metrics_known or (realtime and name not in REALTIME_METRICS):
                raise _bad_request(
                    f"Field {name} is not a valid metric. For a list of valid dimensions and metrics, see {url}"
                )
        if len(set(dimension_names)) != len(dimension_names) or len(set(metric_names)) != len(metric_names):
            raise _bad_request("A dimension or metric is requested twice; each name may appear once.")
        if not realtime:
            incompatible = _incompatibility(
                [*dimension_names, *_filter_fields(request.get("dimension_filter"))],
                [*metric_names, *_filter_fields(request.get("metric_filter"))],
                metrics_known,
            )
            if incompatible:
                raise _bad_request(incompatible)
        return dimension_names, metric_names, dimensions_known, metrics_known

    def _date_ranges(self, data: _PropertyData, request: dict[str, Any]) -> list[tuple[str, dt.date, dt.date]]:
        ranges = request.get("date_ranges", [])
        if not ranges:
            raise _bad_request("Must specify at least one date range (dateRanges).")
        if len(ranges) > MAX_DATE_RANGES:
            raise _bad_request(f"Requests are limited to {MAX_DATE_RANGES} date ranges; {len(ranges)} were given.")
        resolved = []
        for index, spec in enumerate(ranges):
            start = _resolve_date(spec.get("start_date", ""), data.today, "startDate")
            end = _resolve_date(spec.get("end_date", ""), data.today, "endDate")
            if start > end:
                raise _bad_request(f"The dateRange's startDate {start} is after its endDate {end}.")
            name = spec.get("name") or f"date_range_{index}"
            if name.startswith(("date_range_", "RESERVED_")) and spec.get("name"):
                raise _bad_request(f"DateRange name '{name}' cannot begin with date_range_ or RESERVED_.")
            resolved.append((name, start, end))
        return resolved

    def _table(self, property_id: str, request: dict[str, Any]) -> _Table:
        """The full report for a runReport-like request (cached per request without its paging)."""
        knobs = self.knobs_snapshot(property_id)
        key_request = {k: v for k, v in request.items() if k not in ("offset", "limit", "return_property_quota")}
        key = orjson.dumps([property_id, key_request, dataclasses.asdict(knobs)], option=orjson.OPT_SORT_KEYS)
        with self._lock:
            cached = self._table_cache.get(key)
        if cached is not None:
            return cached
        table = self._compute_table(property_id, request, knobs)
        with self._lock:
            self._table_cache[key] = table
            while len(self._table_cache) > 32:
                self._table_cache.popitem(last=False)
        return table

    def knobs_snapshot(self, property_id: str) -> Knobs:
        with self._lock:
            return copy.copy(self._knobs.get(property_id, Knobs()))

    def _compute_table(self, property_id: str, request: dict[str, Any], knobs: Knobs) -> _Table:
        data = self._property_data(property_id)
        dimension_names, metric_names, dimensions_known, metrics_known = self._names(property_id, request)
        ranges = self._date_ranges(data, request)
        if len(ranges) > 1 and "dateRange" not in dimension_names:
            dimension_names = [*dimension_names, "dateRange"]
        scope = _Scope(
            currency_factor=_currency_factor(data.prop.currency_code, request.get("currency_code")),
            revenue_restricted=knobs.revenue_restricted,
        )
        metrics = [metrics_known[name] for name in metric_names]
        event_filter = _event_filter(request.get("dimension_filter"), dimensions_known, data)
        readers = _dimension_readers(dimension_names, dimensions_known, data, knobs.cardinality_limit)
        groups: dict[tuple[str, ...], list[Event]] = {}
        range_events: list[int] = []
        events_read = 0
        for range_name, start, end in ranges:
            selected = data.between(start, end)
            events_read += len(selected)
            range_events.append(len(selected))
            if knobs.empty_reason:
                continue
            for event in selected:
                if event_filter is not None and not event_filter(event):
                    continue
                key = tuple(range_name if read is None else read(event) for read in readers)
                groups.setdefault(key, []).append(event)
        metric_filter = _metric_filter(request.get("metric_filter"), metrics_known, scope)
        rows = []
        for key, events in groups.items():
            values = [metric.compute(events, scope) for metric in metrics]
            if not request.get("keep_empty_rows") and not any(values):
                continue
            if metric_filter is not None and not metric_filter(events):
                continue
            rows.append((key, values, events))
        _sort_rows(rows, request.get("order_bys", []), dimension_names, metric_names)
        aggregates = _aggregates(
            rows, request.get("metric_aggregations", []), dimension_names, metrics, scope, [r[0] for r in ranges]
        )
        return _Table(
            dimension_names=dimension_names,
            metric_names=metric_names,
            metric_types=[metric.type for metric in metrics],
            rows=rows,
            aggregates=aggregates,
            other_row=any(OTHER in key for key, _, _ in rows),
            events_read=events_read,
            range_events=range_events,
            restricted=[metric.api_name for metric in metrics if metric.revenue] if knobs.revenue_restricted else [],
        )

    def _charge(self, property_id: str, events_read: int) -> PropertyQuota:
        quota = self.quota(property_id)
        with self._lock:  # concurrent requests of one property share its counters
            quota.check()
            quota.consume(1 + events_read // 5000)
        return quota

    def _report_body(self, property_id: str, request: dict[str, Any]) -> dict[str, Any]:
        self.quota(property_id).check()
        table = self._table(property_id, request)
        quota = self._charge(property_id, table.events_read)
        knobs = self.knobs_snapshot(property_id)
        offset = int(request.get("offset", 0))
        limit = _limit(request.get("limit"))
        if offset < 0:
            raise _bad_request("offset must be non-negative.")
        page = table.rows[offset : offset + limit]
        data = self._property_data(property_id)
        body: dict[str, Any] = {
            "dimensionHeaders": [{"name": name} for name in table.dimension_names],
            "metricHeaders": [
                {"name": name, "type": kind} for name, kind in zip(table.metric_names, table.metric_types, strict=True)
            ],
        }
        if page:
            body["rows"] = [_row(key, values, table.metric_types) for key, values, _ in page]
        for field, rows in table.aggregates.items():
            body[field] = [_row(key, values, table.metric_types) for key, values in rows]
        if table.rows:
            body["rowCount"] = len(table.rows)
        body["metadata"] = self._metadata(data, request, knobs, table)
        if request.get("return_property_quota"):
            body["propertyQuota"] = quota.as_json()
        body["kind"] = "analyticsData#runReport"
        return body

    def _metadata(self, data: _PropertyData, request: dict[str, Any], knobs: Knobs, table: _Table) -> dict[str, Any]:
        metadata: dict[str, Any] = {
            "currencyCode": request.get("currency_code") or data.prop.currency_code,
            "timeZone": data.prop.time_zone,
        }
        if table.other_row:
            metadata["dataLossFromOtherRow"] = True
        if knobs.sampling is not None:
            metadata["samplingMetadatas"] = [
                {"samplesReadCount": str(int(count * knobs.sampling)), "samplingSpaceSize": str(count)}
                for count in table.range_events
            ]
        if knobs.thresholded:
            metadata["subjectToThresholding"] = True
        if table.restricted:
            metadata["schemaRestrictionResponse"] = {
                "activeMetricRestrictions": [
                    {"metricName": name, "restrictedMetricTypes": ["REVENUE_DATA"]} for name in table.restricted
                ]
            }
        if knobs.empty_reason:
            metadata["emptyReason"] = knobs.empty_reason
        return metadata

    def _run_report(self, property_id: str, request: dict[str, Any]) -> dict[str, Any]:
        return self._report_body(property_id, request)

    def _batch_run_reports(self, property_id: str, request: dict[str, Any]) -> dict[str, Any]:
        requests = request.get("requests", [])
        if len(requests) > MAX_BATCH:
            raise _bad_request(f"A batch can have at most {MAX_BATCH} requests; {len(requests)} were given.")
        for sub in requests:
            if sub.get("property") not in (None, "", f"properties/{property_id}"):
                raise _bad_request("Every request of a batch must be for the batch's property.")
        return {
            "reports": [self._report_body(property_id, sub) for sub in requests],
            "kind": "analyticsData#batchRunReports",
        }

    # ------------------------------------------------------------------------------ metadata, compatibility

    def _get_metadata(self, property_id: str, request: Any) -> dict[str, Any]:
        dimensions, metrics = _schema(property_id)
        restricted = property_id != "0" and self.knobs_snapshot(property_id).revenue_restricted
        return {
            "name": f"properties/{property_id}/metadata",
            "dimensions": [_dimension_metadata(d) for d in _listed(dimensions.values())],
            "metrics": [_metric_metadata(m, restricted) for m in _listed(metrics.values())],
        }

    def _check_compatibility(self, property_id: str, request: dict[str, Any]) -> dict[str, Any]:
        dimensions, metrics = _schema(property_id)
        asked_dimensions = [d.get("name", "") for d in request.get("dimensions", [])]
        asked_dimensions += _filter_fields(request.get("dimension_filter"))
        asked_metrics = [m.get("name", "") for m in request.get("metrics", [])]
        asked_metrics += _filter_fields(request.get("metric_filter"))
        for name in asked_dimensions:
            if name not in dimensions:
                raise _bad_request(
                    f"Field {name} is not a valid dimension. For a list of valid dimensions and metrics, see {SCHEMA_URL}"
                )
        for name in asked_metrics:
            if name not in metrics:
                raise _bad_request(
                    f"Field {name} is not a valid metric. For a list of valid dimensions and metrics, see {SCHEMA_URL}"
                )
        with_attribution = any(name in ATTRIBUTION_DIMENSIONS for name in asked_dimensions)
        with_unattributable = any(not metrics[name].attributable for name in asked_metrics)
        wanted = request.get("compatibility_filter")
        dimension_rows = []
        for dimension in _listed(dimensions.values()):
            compatible = not (dimension.api_name in ATTRIBUTION_DIMENSIONS and with_unattributable)
            verdict = "COMPATIBLE" if compatible else "INCOMPATIBLE"
            if wanted in (None, "COMPATIBILITY_UNSPECIFIED", verdict):
                dimension_rows.append({"dimensionMetadata": _dimension_metadata(dimension), "compatibility": verdict})
        metric_rows = []
        for metric in _listed(metrics.values()):
            verdict = "INCOMPATIBLE" if with_attribution and not metric.attributable else "COMPATIBLE"
            if wanted in (None, "COMPATIBILITY_UNSPECIFIED", verdict):
                metric_rows.append({"metricMetadata": _metric_metadata(metric, False), "compatibility": verdict})
        return {"dimensionCompatibilities": dimension_rows, "metricCompatibilities": metric_rows}

    # ------------------------------------------------------------------------------ pivot

    def _run_pivot_report(self, property_id: str, request: dict[str, Any]) -> dict[str, Any]:
        pivots = request.get("pivots", [])
        if not pivots:
            raise _bad_request("A pivot report needs at least one pivot.")
        dimension_names = [d.get("name", "") for d in request.get("dimensions", [])]
        pivot_fields = [name for pivot in pivots for name in pivot.get("field_names", [])]
        for name in pivot_fields:
            if name not in dimension_names and name != "dateRange":
                raise _bad_request(f"Pivot field {name} must be one of the request's dimensions.")
        if sorted(set(pivot_fields) - {"dateRange"}) != sorted(set(dimension_names)):
            raise _bad_request("Every dimension of the request must appear in exactly one pivot's fieldNames.")
        product = 1
        for pivot in pivots:
            if "limit" not in pivot:
                raise _bad_request("Each pivot needs a limit.")
            product *= int(pivot["limit"])
        if product > MAX_LIMIT:
            raise _bad_request(f"The product of the pivots' limits must not exceed {MAX_LIMIT}; it is {product}.")
        self.quota(property_id).check()
        flat_request = {k: v for k, v in request.items() if k != "pivots"}
        flat_request["order_bys"] = [order for pivot in pivots[:1] for order in pivot.get("order_bys", [])]
        table = self._table(property_id, flat_request)
        quota = self._charge(property_id, table.events_read)
        data = self._property_data(property_id)
        _, metrics_known = _schema(property_id)
        scope = _Scope(
            currency_factor=_currency_factor(data.prop.currency_code, request.get("currency_code")),
            revenue_restricted=self.knobs_snapshot(property_id).revenue_restricted,
        )
        positions = {name: index for index, name in enumerate(table.dimension_names)}
        headers = []
        visible: list[set[tuple[str, ...]]] = []
        for index, pivot in enumerate(pivots):
            fields = [positions[name] for name in pivot.get("field_names", [])]
            totals: dict[tuple[str, ...], list[Event]] = {}
            for key, _, events in table.rows:
                totals.setdefault(tuple(key[i] for i in fields), []).extend(events)
            combos = list(totals)
            if index > 0 or pivot.get("order_bys"):
                sortable = [
                    (combo, [m.compute(events, scope) for m in (metrics_known[n] for n in table.metric_names)], events)
                    for combo, events in totals.items()
                ]
                _sort_rows(sortable, pivot.get("order_bys", []), pivot.get("field_names", []), table.metric_names)
                combos = [combo for combo, _, _ in sortable]
            offset = int(pivot.get("offset", 0))
            shown = combos[offset : offset + int(pivot["limit"])]
            visible.append(set(shown))
            headers.append(
                {
                    "pivotDimensionHeaders": [{"dimensionValues": [{"value": v} for v in combo]} for combo in shown],
                    "rowCount": len(combos),
                }
            )
        field_positions = [[positions[name] for name in pivot.get("field_names", [])] for pivot in pivots]
        kept = [
            (key, values, events)
            for key, values, events in table.rows
            if all(
                tuple(key[i] for i in fields) in shown for fields, shown in zip(field_positions, visible, strict=True)
            )
        ]
        aggregates = []
        metrics = [metrics_known[name] for name in table.metric_names]
        for pivot, fields in zip(pivots, field_positions, strict=True):
            for aggregation in pivot.get("metric_aggregations", []):
                marker = _RESERVED[aggregation]
                buckets: dict[tuple[str, ...], list[tuple[list[float], list[Event]]]] = {}
                for key, values, events in kept:
                    masked = tuple(marker if i in fields else value for i, value in enumerate(key))
                    buckets.setdefault(masked, []).append((values, events))
                for masked, members in buckets.items():
                    if aggregation == "TOTAL":
                        union = [event for _, events in members for event in events]
                        values = [metric.compute(union, scope) for metric in metrics]
                    else:
                        pick = min if aggregation == "MINIMUM" else max
                        values = [pick(member[0][i] for member in members) for i in range(len(metrics))]
                    aggregates.append(_row(masked, values, table.metric_types))
        body: dict[str, Any] = {
            "pivotHeaders": headers,
            "dimensionHeaders": [{"name": name} for name in table.dimension_names],
            "metricHeaders": [
                {"name": name, "type": kind} for name, kind in zip(table.metric_names, table.metric_types, strict=True)
            ],
        }
        if kept:
            body["rows"] = [_row(key, values, table.metric_types) for key, values, _ in kept]
        if aggregates:
            body["aggregates"] = aggregates
        body["metadata"] = self._metadata(data, request, self.knobs_snapshot(property_id), table)
        if request.get("return_property_quota"):
            body["propertyQuota"] = quota.as_json()
        body["kind"] = "analyticsData#runPivotReport"
        return body

    # ------------------------------------------------------------------------------ realtime

    def _run_realtime_report(self, property_id: str, request: dict[str, Any]) -> dict[str, Any]:
        data = self._property_data(property_id)
        dimension_names, metric_names, dimensions_known, metrics_known = self._names(
            property_id, request, realtime=True
        )
        ranges = request.get("minute_ranges") or [{}]
        if len(ranges) > 2:
            raise _bad_request("Requests are limited to 2 minute ranges.")
        resolved = []
        for index, spec in enumerate(ranges):
            start_ago = int(spec.get("start_minutes_ago", 29))
            end_ago = int(spec.get("end_minutes_ago", 0))
            if not 0 <= end_ago <= start_ago <= 29:
                raise _bad_request("A minute range needs 0 <= endMinutesAgo <= startMinutesAgo <= 29.")
            resolved.append((spec.get("name") or f"date_range_{index}", start_ago, end_ago))
        if len(resolved) > 1 and "dateRange" not in dimension_names:
            dimension_names = [*dimension_names, "dateRange"]
        self.quota(property_id).check()
        now_us = int(self.now.timestamp() * 1_000_000)
        recent = data.events[bisect.bisect_left(data.timestamps, now_us - REALTIME_WINDOW_US) :]

        def minutes_ago(event: Event) -> int:
            return (now_us - event.timestamp_us) // 60_000_000

        def read_realtime(name: str, event: Event) -> str:
            if name == "minutesAgo":
                return f"{minutes_ago(event):02d}"
            reader = REALTIME_DIMENSIONS.get(name)
            return reader(event, data) if reader else dimensions_known[name].read(event, data)

        event_filter = None
        if request.get("dimension_filter"):
            event_filter = _compile_expression(request["dimension_filter"], read_realtime)
        scope = _Scope()
        metrics_known = {**metrics_known, **_REALTIME_METRIC_OVERRIDES}
        metrics = [metrics_known[name] for name in metric_names]
        groups: dict[tuple[str, ...], list[Event]] = {}
        for range_name, start_ago, end_ago in resolved:
            for event in recent:
                if not end_ago <= minutes_ago(event) <= start_ago:
                    continue
                if event_filter is not None and not event_filter(event):
                    continue
                key = tuple(range_name if n == "dateRange" else read_realtime(n, event) for n in dimension_names)
                groups.setdefault(key, []).append(event)
        metric_filter = _metric_filter(request.get("metric_filter"), metrics_known, scope)
        rows = []
        for key, events in groups.items():
            values = [metric.compute(events, scope) for metric in metrics]
            if not any(values) or (metric_filter is not None and not metric_filter(events)):
                continue
            rows.append((key, values, events))
        _sort_rows(rows, request.get("order_bys", []), dimension_names, metric_names)
        aggregates = _aggregates(
            rows, request.get("metric_aggregations", []), dimension_names, metrics, scope, [r[0] for r in resolved]
        )
        quota = self._charge(property_id, len(recent))
        types = [metric.type for metric in metrics]
        body: dict[str, Any] = {
            "dimensionHeaders": [{"name": name} for name in dimension_names],
            "metricHeaders": [{"name": m.api_name, "type": m.type} for m in metrics],
        }
        limit = _limit(request.get("limit"))
        if rows:
            body["rows"] = [_row(key, values, types) for key, values, _ in rows[:limit]]
        for field, aggregate_rows in aggregates.items():
            body[field] = [_row(key, values, types) for key, values in aggregate_rows]
        if rows:
            body["rowCount"] = len(rows)
        if request.get("return_property_quota"):
            body["propertyQuota"] = quota.as_json()
        body["kind"] = "analyticsData#runRealtimeReport"
        return body

    # ------------------------------------------------------------------------------ funnel

    def _run_funnel_report(self, property_id: str, request: dict[str, Any]) -> dict[str, Any]:
        data = self._property_data(property_id)
        dimensions_known, _ = _schema(property_id)
        steps = request.get("funnel", {}).get("steps", [])
        if not steps:
            raise _bad_request("A funnel needs at least one step.")
        if request.get("funnel_next_action") or request.get("segments"):
            raise _bad_request("The fake does not support funnelNextAction or segments.")
        ranges = self._date_ranges(data, request)
        if len(ranges) > 1:
            raise _bad_request("A funnel report takes one date range.")
        _, start, end = ranges[0]
        self.quota(property_id).check()

        def read_field(name: str, event: Event) -> str:
            if name not in dimensions_known:
                raise _bad_request(
                    f"Field {name} is not a valid dimension. For a list of valid dimensions and metrics, see {SCHEMA_URL}"
                )
            return dimensions_known[name].read(event, data)

        step_tests = [_funnel_step_test(step.get("filter_expression", {}), read_field) for step in steps]
        windows = [_duration_us(step.get("within_duration_from_prior_step")) for step in steps]
        event_filter = _event_filter(request.get("dimension_filter"), dimensions_known, data)
        selected = [e for e in data.between(start, end) if event_filter is None or event_filter(e)]
        by_user: dict[str, list[Event]] = collections.defaultdict(list)
        for event in selected:
            by_user[event.user].append(event)
        is_open = bool(request.get("funnel", {}).get("is_open_funnel"))
        breakdown = request.get("funnel_breakdown", {}).get("breakdown_dimension", {}).get("name")
        if breakdown is not None and breakdown not in dimensions_known:
            read_field(breakdown, selected[0] if selected else data.events[0])
        reached: dict[str, dict[int, Event]] = {}  # user -> {step index: the event that reached it}
        for user, events in by_user.items():
            progress = _funnel_progress(events, step_tests, windows, steps, is_open)
            if progress:
                reached[user] = progress
        labels = [f"{index + 1}. {step.get('name', '')}" for index, step in enumerate(steps)]

        def counts(users: Iterable[str]) -> list[int]:
            totals = [0] * len(steps)
            for user in users:
                for step_index in reached[user]:
                    totals[step_index] += 1
            return totals

        table_rows = []
        segments: list[tuple[str | None, list[str]]] = [(None, list(reached))]
        if breakdown is not None:
            by_value: dict[str, list[str]] = collections.defaultdict(list)
            for user, progress in reached.items():
                entry = next(iter(progress.values()))
                by_value[dimensions_known[breakdown].read(entry, data)].append(user)
            limit = int(request["funnel_breakdown"].get("limit", 5))
            ordered = sorted(by_value.items(), key=lambda item: (-len(item[1]), item[0]))
            segments = [("RESERVED_TOTAL", list(reached))] + [(value, users) for value, users in ordered[:limit]]
        for step_index, label in enumerate(labels):
            for value, users in segments:
                users_at = counts(users)
                active = users_at[step_index]
                following = users_at[step_index + 1] if step_index + 1 < len(steps) else None
                completion = _ratio(following, active) if following is not None else 0.0
                abandonments = active - following if following is not None else 0
                dimension_values = [{"value": label}] + ([] if value is None else [{"value": value}])
                table_rows.append(
                    {
                        "dimensionValues": dimension_values,
                        "metricValues": [
                            {"value": str(active)},
                            {"value": _format_number(completion)},
                            {"value": str(abandonments)},
                            {"value": _format_number(_ratio(abandonments, active))},
                        ],
                    }
                )
        table_headers = [{"name": "funnelStepName"}] + ([] if breakdown is None else [{"name": breakdown}])
        overall = counts(reached)
        trended = request.get("funnel_visualization_type") == "TRENDED_FUNNEL"
        visualization_rows = []
        if trended:
            per_day: dict[tuple[str, str], set[str]] = collections.defaultdict(set)
            for user, progress in reached.items():
                for step_index, event in progress.items():
                    per_day[(f"{event.date:%Y%m%d}", labels[step_index])].add(user)
            for (day, label), users in sorted(per_day.items()):
                visualization_rows.append(
                    {
                        "dimensionValues": [{"value": day}, {"value": label}],
                        "metricValues": [{"value": str(len(users))}],
                    }
                )
        else:
            for label, active in zip(labels, overall, strict=True):
                visualization_rows.append(
                    {"dimensionValues": [{"value": label}], "metricValues": [{"value": str(active)}]}
                )
        knobs = self.knobs_snapshot(property_id)
        sub_metadata: dict[str, Any] = {}
        if knobs.sampling is not None:
            sub_metadata["samplingMetadatas"] = [
                {"samplesReadCount": str(int(len(selected) * knobs.sampling)), "samplingSpaceSize": str(len(selected))}
            ]
        quota = self._charge(property_id, len(selected))
        body: dict[str, Any] = {
            "funnelTable": {
                "dimensionHeaders": table_headers,
                "metricHeaders": [
                    {"name": "activeUsers", "type": "TYPE_INTEGER"},
                    {"name": "funnelStepCompletionRate", "type": "TYPE_FLOAT"},
                    {"name": "funnelStepAbandonments", "type": "TYPE_INTEGER"},
                    {"name": "funnelStepAbandonmentRate", "type": "TYPE_FLOAT"},
                ],
                "rows": table_rows,
                "metadata": sub_metadata,
            },
            "funnelVisualization": {
                "dimensionHeaders": ([{"name": "date"}] if trended else []) + [{"name": "funnelStepName"}],
                "metricHeaders": [{"name": "activeUsers", "type": "TYPE_INTEGER"}],
                "rows": visualization_rows,
                "metadata": sub_metadata,
            },
        }
        if request.get("return_property_quota"):
            body["propertyQuota"] = quota.as_json()
        body["kind"] = "analyticsData#runFunnelReport"
        return body


# ------------------------------------------------------------------------------------------ helpers


_RESERVED = {"TOTAL": "RESERVED_TOTAL", "MINIMUM": "RESERVED_MIN", "MAXIMUM": "RESERVED_MAX"}
_AGGREGATE_FIELDS = {"TOTAL": "totals", "MINIMUM": "minimums", "MAXIMUM": "maximums"}


def _listed(items: Iterable[Any]) -> list[Any]:
    """The schema entries the metadata lists: not the deprecated names (``deprecatedApiNames`` has them)."""
    return [item for item in items if not getattr(item, "alias_of", "")]


@functools.lru_cache(maxsize=16)
def _schema(property_id: str) -> tuple[dict[str, _Dimension], dict[str, _Metric]]:
    """The property's dimensions and metrics by API name (deprecated names included); "0": standard only."""
    dimensions = {d.api_name: d for d in _STANDARD_DIMENSIONS}
    metrics: dict[str, _Metric] = {}
    for metric in _STANDARD_METRICS:
        metrics[metric.api_name] = metric
    prop = ga4_catalog.property_by_id(property_id)
    if prop is not None:
        for key_event in prop.key_events:
            metric = _Metric(
                f"keyEvents:{key_event.event_name}",
                f"Key events ({key_event.event_name})",
                "Event",
                "TYPE_FLOAT",
                _key_events(key_event.event_name),
                deprecated=(f"conversions:{key_event.event_name}",),
                attributable=True,
            )
            metrics[metric.api_name] = metric
        for custom in prop.custom_dimensions:
            reader = _CUSTOM_DIMENSION_READERS.get(custom.api_name)
            if reader is not None:
                dimensions[custom.api_name] = _Dimension(
                    custom.api_name, custom.display_name, "Custom", reader, custom.description, custom=True
                )
        for custom_metric in prop.custom_metrics:
            compute = _CUSTOM_METRIC_COMPUTE.get(custom_metric.api_name)
            if compute is not None:
                metrics[custom_metric.api_name] = _Metric(
                    custom_metric.api_name,
                    custom_metric.display_name,
                    "Custom",
                    _UNIT_TYPES.get(custom_metric.measurement_unit, "TYPE_FLOAT"),
                    compute,
                    custom_metric.description,
                    custom=True,
                    revenue="REVENUE_DATA" in custom_metric.restricted_metric_types,
                )
        for calculated in prop.calculated_metrics:
            compute = _CALCULATED_METRIC_COMPUTE.get(calculated.api_name)
            if compute is not None:
                metrics[calculated.api_name] = _Metric(
                    calculated.api_name,
                    calculated.display_name,
                    "Custom",
                    _UNIT_TYPES.get(calculated.metric_unit, "TYPE_FLOAT"),
                    compute,
                    calculated.description,
                    custom=True,
                    expression=calculated.formula,
                    revenue="REVENUE_DATA" in calculated.restricted_metric_types,
                )
    for metric in list(metrics.values()):
        for old in metric.deprecated:
            metrics[old] = dataclasses.replace(metric, api_name=old, alias_of=metric.api_name)
    return dimensions, metrics


def _dimension_metadata(dimension: _Dimension) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "apiName": dimension.api_name,
        "uiName": dimension.ui_name,
        "description": dimension.description or dimension.ui_name,
        "category": dimension.category,
    }
    if dimension.custom:
        entry["customDefinition"] = True
    if dimension.deprecated:
        entry["deprecatedApiNames"] = list(dimension.deprecated)
    return entry


def _metric_metadata(metric: _Metric, restricted: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "apiName": metric.api_name,
        "uiName": metric.ui_name,
        "description": metric.description or metric.ui_name,
        "type": metric.type,
        "category": metric.category,
    }
    if metric.expression:
        entry["expression"] = metric.expression
    if metric.custom:
        entry["customDefinition"] = True
    if metric.deprecated:
        entry["deprecatedApiNames"] = list(metric.deprecated)
    if restricted and metric.revenue:
        entry["blockedReasons"] = ["NO_REVENUE_METRICS"]
    return entry


def _incompatibility(dimensions: Sequence[str], metrics: Sequence[str], known: dict[str, _Metric]) -> str | None:
    attributed = [name for name in dimensions if name in ATTRIBUTION_DIMENSIONS]
    unattributable = [name for name in metrics if name in known and not known[name].attributable]
    if not attributed or not unattributable:
        return None
    return (
        f"Please remove {', '.join(attributed)} to make the request compatible. The request's dimensions & metrics "
        f"are incompatible: {', '.join(attributed)} cannot be used with {', '.join(unattributable)}. To learn more, "
        "see https://ga-dev-tools.google/ga4/dimensions-metrics-explorer/"
    )


def _resolve_date(text: str, today: dt.date, field: str) -> dt.date:
    if text == "today":
        return today
    if text == "yesterday":
        return today - dt.timedelta(days=1)
    relative = re.fullmatch(r"(\d+)daysAgo", text)
    if relative:
        return today - dt.timedelta(days=int(relative.group(1)))
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            return dt.date.fromisoformat(text)
    except ValueError:
        pass
    raise _bad_request(f"Invalid {field} '{text}' in dateRange. Use YYYY-MM-DD, NdaysAgo, yesterday, or today.")


def _currency_factor(property_currency: str, requested: str | None) -> float:
    if not requested or requested == property_currency:
        return 1.0
    if requested not in RATES_PER_USD:
        raise _bad_request(f"currencyCode {requested} is not a supported ISO 4217 currency.")
    return RATES_PER_USD[requested] / RATES_PER_USD[property_currency]


def _limit(value: Any) -> int:
    limit = int(value) if value not in (None, "", "0", 0) else DEFAULT_LIMIT
    if limit < 0 or limit > MAX_LIMIT:
        raise _bad_request(f"limit must be positive and at most {MAX_LIMIT}; it is {limit}.")
    return limit


def _row(key: Sequence[str], values: Sequence[float], types: Sequence[str]) -> dict[str, Any]:
    return {
        "dimensionValues": [{"value": value} for value in key],
        "metricValues": [{"value": _format_metric(v, t)} for v, t in zip(values, types, strict=True)],
    }


def _event_filter(
    expression: dict[str, Any] | None, known: dict[str, _Dimension], data: _PropertyData
) -> Callable[[Event], bool] | None:
    if not expression:
        return None
    return _compile_expression(expression, lambda name, event: known[name].read(event, data))


def _metric_filter(
    expression: dict[str, Any] | None, known: dict[str, _Metric], scope: _Scope
) -> Callable[[list[Event]], bool] | None:
    if not expression:
        return None
    return _compile_expression(expression, lambda name, events: known[name].compute(events, scope))


def _dimension_readers(
    names: Sequence[str], known: dict[str, _Dimension], data: _PropertyData, cardinality_limit: int | None
) -> list[Callable[[Event], str] | None]:
    """How each requested dimension reads an event (None: the date range's name), "(other)" beyond the limit."""
    readers: list[Callable[[Event], str] | None] = []
    for name in names:
        if name == "dateRange":
            readers.append(None)
            continue
        dimension = known[name]
        if cardinality_limit is None or dimension.category == "Time":
            readers.append(lambda event, read=dimension.read: read(event, data))
            continue
        kept = data.top_values(dimension, cardinality_limit)

        def capped(event: Event, dimension: _Dimension = dimension, kept: set[str] = kept) -> str:
            value = dimension.read(event, data)
            return value if value in kept else OTHER

        readers.append(capped)
    return readers


def _sort_key_for(value: str, order_type: str) -> tuple[int, Any]:
    if order_type == "NUMERIC":
        number = _as_float(value)
        return (0, number) if number is not None else (1, value)
    if order_type == "CASE_INSENSITIVE_ALPHANUMERIC":
        return (0, value.lower())
    return (0, value)


def _sort_rows(
    rows: list[Any], order_bys: Sequence[dict[str, Any]], dimension_names: Sequence[str], metric_names: Sequence[str]
) -> None:
    """Sort in place rows ``(key, values, ...)`` by ``orderBys``; without them by the first metric descending."""
    rows.sort(key=lambda row: row[0])
    if not order_bys:
        if metric_names:
            rows.sort(key=lambda row: row[1][0], reverse=True)
        return
    for order in reversed(order_bys):
        descending = bool(order.get("desc"))
        if "metric" in order:
            name = order["metric"].get("metric_name", "")
            if name not in metric_names:
                raise _bad_request(f"orderBys metric {name} must be one of the request's metrics.")
            index = metric_names.index(name)
            rows.sort(key=lambda row, i=index: row[1][i], reverse=descending)
        elif "dimension" in order:
            name = order["dimension"].get("dimension_name", "")
            if name not in dimension_names:
                raise _bad_request(f"orderBys dimension {name} must be one of the request's dimensions.")
            index = list(dimension_names).index(name)
            order_type = order["dimension"].get("order_type", "ALPHANUMERIC")
            rows.sort(key=lambda row, i=index, t=order_type: _sort_key_for(row[0][i], t), reverse=descending)
        else:
            raise _bad_request("The fake orders by metric or dimension only (no pivot orderBy in runReport).")


def _aggregates(
    rows: Sequence[tuple[tuple[str, ...], list[float], list[Event]]],
    aggregations: Sequence[str],
    dimension_names: Sequence[str],
    metrics: Sequence[_Metric],
    scope: _Scope,
    range_names: Sequence[str],
) -> dict[str, list[tuple[tuple[str, ...], list[float]]]]:
    """``totals``/``minimums``/``maximums``: one row per date range, over the kept rows."""
    result: dict[str, list[tuple[tuple[str, ...], list[float]]]] = {}
    range_position = list(dimension_names).index("dateRange") if "dateRange" in dimension_names else None
    for aggregation in aggregations:
        marker = _RESERVED.get(aggregation)
        if marker is None:
            continue
        out = []
        for range_name in range_names:
            members = [row for row in rows if range_position is None or row[0][range_position] == range_name]
            key = tuple(range_name if i == range_position else marker for i in range(len(dimension_names)))
            if aggregation == "TOTAL":
                union = [event for _, _, events in members for event in events]
                values = [metric.compute(union, scope) for metric in metrics]
            else:
                pick = min if aggregation == "MINIMUM" else max
                values = [pick((row[1][i] for row in members), default=0.0) for i in range(len(metrics))]
            out.append((key, values))
        result[_AGGREGATE_FIELDS[aggregation]] = out
    return result


def _duration_us(text: str | None) -> int | None:
    if not text:
        return None
    return int(float(text.rstrip("s")) * 1_000_000)


def _funnel_step_test(expression: dict[str, Any], read_field: Callable[[str, Event], str]) -> Callable[[Event], bool]:
    if "funnel_event_filter" in expression:
        event_filter = expression["funnel_event_filter"]
        if "funnel_parameter_filter_expression" in event_filter:
            raise _bad_request("The fake does not support funnelParameterFilterExpression.")
        name = event_filter.get("event_name", "")
        return lambda event: event.name == name
    if "funnel_field_filter" in expression:
        field = expression["funnel_field_filter"].get("field_name", "")
        test = _compile_filter(expression["funnel_field_filter"])
        return lambda event: test(read_field(field, event))
    if "not_expression" in expression:
        inner = _funnel_step_test(expression["not_expression"], read_field)
        return lambda event: not inner(event)
    group = expression.get("and_group") or expression.get("or_group")
    if group is not None:
        parts = [_funnel_step_test(sub, read_field) for sub in group.get("expressions", [])]
        if "and_group" in expression:
            return lambda event: all(part(event) for part in parts)
        return lambda event: any(part(event) for part in parts)
    raise _bad_request("A funnel step needs a filterExpression.")


def _funnel_progress(
    events: Sequence[Event],
    tests: Sequence[Callable[[Event], bool]],
    windows: Sequence[int | None],
    steps: Sequence[dict[str, Any]],
    is_open: bool,
) -> dict[int, Event]:
    """The steps a user reached, each with the event that reached it first.

    From the user's earliest event matching the entry step, each next step is the first later event that
    matches it (within ``withinDurationFromPriorStep``; the very next event with ``isDirectlyFollowedBy``).
    Closed funnels enter at step 1 only; open ones at any step, a user counting at every step reached."""
    reached: dict[int, Event] = {}
    for first in range(len(tests)) if is_open else range(1):
        entry_index = next((i for i, event in enumerate(events) if tests[first](event)), None)
        if entry_index is None:
            continue
        reached.setdefault(first, events[entry_index])
        position = entry_index
        for step_index in range(first + 1, len(tests)):
            found = None
            for candidate_index in range(position + 1, len(events)):
                candidate = events[candidate_index]
                window = windows[step_index]
                if window is not None and candidate.timestamp_us - events[position].timestamp_us > window:
                    break
                if tests[step_index](candidate):
                    found = candidate_index
                    break
                if steps[step_index].get("is_directly_followed_by"):
                    break
            if found is None:
                break
            position = found
            previous = reached.get(step_index)
            if previous is None or events[found].timestamp_us < previous.timestamp_us:
                reached[step_index] = events[found]
    return dict(sorted(reached.items()))


def _parse_request(body: bytes, request_type: str, route: str) -> dict[str, Any]:
    """The request body through the client's own message type (strict), as a snake_case dict."""
    from google.protobuf import json_format

    message_class = _message_class(request_type, route)
    message = message_class.pb(message_class())
    try:
        json_format.Parse(body or b"{}", message, ignore_unknown_fields=False)
    except json_format.ParseError as exc:
        raise _bad_request(f"Invalid JSON payload received. {exc}") from exc
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def _message_class(name: str, route: str) -> Any:
    if route == "runFunnelReport":
        from google.analytics.data_v1alpha import types as alpha_types

        return getattr(alpha_types, name)
    from google.analytics.data_v1beta import types as beta_types

    return getattr(beta_types, name)


_RESPONSE_TYPES = {
    "runReport": "RunReportResponse",
    "batchRunReports": "BatchRunReportsResponse",
    "runPivotReport": "RunPivotReportResponse",
    "runRealtimeReport": "RunRealtimeReportResponse",
    "getMetadata": "Metadata",
    "checkCompatibility": "CheckCompatibilityResponse",
    "runFunnelReport": "RunFunnelReportResponse",
}
_CHECKED_ROWS = 3


def _cut(body: Any) -> Any:
    """A copy of a response with every list cut to its first few items (enough to check every shape)."""
    if isinstance(body, dict):
        return {key: _cut(value) for key, value in body.items()}
    if isinstance(body, list):
        return [_cut(item) for item in body[:_CHECKED_ROWS]]
    return body


def _check_strictly(body: dict[str, Any], response_type: str) -> None:
    """Parse the body with ``ignore_unknown_fields=False`` (the client drops unknown keys silently)."""
    from google.protobuf import json_format

    route = "runFunnelReport" if response_type == "RunFunnelReportResponse" else ""
    message_class = _message_class(response_type, route)
    json_format.Parse(orjson.dumps(_cut(body)), message_class.pb(message_class()), ignore_unknown_fields=False)


# ------------------------------------------------------------------------------------------ FakeGA4


class FakeGA4:
    """The Data and Admin fakes with one token endpoint (on the Data server)."""

    def __init__(self, today: dt.date | None = None, seed: int = 0, **data_options: Any) -> None:
        from fakes.ga4_admin import FakeGA4Admin

        self.data = FakeGA4Data(today=today, seed=seed, **data_options)
        self.oauth = self.data.oauth
        self.admin = FakeGA4Admin(self.oauth)

    def start(self) -> FakeGA4:
        self.data.start()
        try:
            self.admin.start()
        except BaseException:
            self.data.stop()
            raise
        return self

    def stop(self) -> None:
        self.admin.stop()
        self.data.stop()

    def __enter__(self) -> FakeGA4:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def data_url(self) -> str:
        return self.data.url

    @property
    def admin_url(self) -> str:
        return self.admin.url

    @property
    def now(self) -> dt.datetime:
        return self.data.now

    def today(self, property_id: str) -> dt.date:
        return self.data.today(property_id)

    def events(self, property_id: str) -> list[Event]:
        return self.data.events(property_id)

    def sessions(self, property_id: str) -> list[Session]:
        return self.data.sessions(property_id)

    def knobs(self, property_id: str) -> Knobs:
        return self.data.knobs(property_id)

    def quota(self, property_id: str) -> PropertyQuota:
        return self.data.quota(property_id)

    def set_tokens(self, property_id: str, *, per_day: int | None = None, per_hour: int | None = None) -> None:
        self.data.set_tokens(property_id, per_day=per_day, per_hour=per_hour)

    def exhaust_tokens(self, property_id: str, period: str = "day") -> None:
        self.data.exhaust_tokens(property_id, period)

    def clear_faults(self) -> None:
        """Faults, knobs and quotas back to normal (for an autouse fixture between tests)."""
        self.data.server.clear_faults()
        self.admin.server.clear_faults()
        self.data.clear_knobs()
        self.data.reset_quotas()
