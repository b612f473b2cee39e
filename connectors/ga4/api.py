"""The only module that talks to ``google-analytics-data`` and ``google-analytics-admin`` (imported
lazily, on first use).

Everything here is synchronous and runs in a worker thread (``ctx.run_blocking``). Clients speak
REST (``transport="rest"``) in production as in tests, so both run one code path, and are cached
per credentials, API version and endpoint (:class:`shared.google_api.ClientCache`). The transport is
built with ``always_use_jwt_access=False``: a service account then gets its access token from the
token endpoint (``ACP_GOOGLE_TOKEN_URI`` in tests) instead of signing its own JWT, and a 401 makes
``AuthorizedSession`` refresh the token and replay the request. ``ACP_GA4_DATA_ENDPOINT`` and
``ACP_GA4_ADMIN_ENDPOINT`` point the clients at another server (:func:`shared.google_api.endpoint_override`).

Requests are dicts with the protos' snake_case field names, exactly what ``RunReportRequest(**request)``
takes. Answers come back as plain values: a report as :class:`Report`, read straight from the
protobuf (a proto-plus wrapper per row costs more than the API's own parsing); everything else as
proto3 JSON dicts (camelCase), as the Data API documents them.

GA4's clients retry nothing by themselves. Here 5xx answers and an unreachable server are retried
with a bounded backoff for ``ACP_GA4_RETRY_S`` seconds (default 30); a 429 is not: GA4's quotas
refill per hour or per day, so another try a second later only spends the next request's tokens.
GA4's own error rows close this module.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from shared import InvalidArguments, ResourceNotFound, UpstreamError, google_auth
from shared.error_policy import Failure, Rule
from shared.google_api import (
    RATE_REASONS,
    ClientCache,
    GoogleErrorPolicy,
    api_error,
    bounded_retry,
    endpoint_override,
    is_transient,
    retry_deadline_s,
)

SCOPES = ("https://www.googleapis.com/auth/analytics.readonly",)
DATA_ENDPOINT_ENV = "ACP_GA4_DATA_ENDPOINT"
ADMIN_ENDPOINT_ENV = "ACP_GA4_ADMIN_ENDPOINT"
RETRY_ENV = "ACP_GA4_RETRY_S"
DEFAULT_RETRY_S = 30.0
HTTP_TIMEOUT_S = 60.0  # one HTTP request
PAGE_ROWS = 250_000  # runReport's largest limit
BATCH_REPORTS = 5  # batchRunReports takes at most five requests
ADMIN_PAGE_SIZE = 200  # the Admin API's largest page for most lists
T = TypeVar("T")


@dataclass(frozen=True)
class Settings:
    """How to reach GA4 for one call."""

    credentials: Mapping[str, Any]
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    page_size: int = PAGE_ROWS  # rows per runReport page (the page_size setting)


@dataclass
class Report:
    """One runReport / runRealtimeReport answer, read from the protobuf."""

    dimension_names: list[str]
    metric_names: list[str]
    metric_types: list[str]  # "TYPE_INTEGER", "TYPE_FLOAT", "TYPE_CURRENCY", "TYPE_SECONDS", ...
    rows: list[list[str]]  # dimension values then metric values, all strings as the API gives them
    totals: list[list[str]]  # metric values of each TOTAL row (one per date range); [] if none
    row_count: int
    metadata: dict[str, Any]  # the response metadata as proto3 JSON (camelCase); {} for realtime
    property_quota: dict[str, Any] | None  # camelCase: tokensPerDay {consumed, remaining}, tokensPerHour, ...


# -- clients -----------------------------------------------------------------------------------
_clients: ClientCache[Any] = ClientCache()


def data_endpoint(environ: Mapping[str, str]) -> str | None:
    """``ACP_GA4_DATA_ENDPOINT``: any ``https://`` URL, or ``http://`` on loopback only."""
    return endpoint_override(environ, DATA_ENDPOINT_ENV)


def admin_endpoint(environ: Mapping[str, str]) -> str | None:
    """``ACP_GA4_ADMIN_ENDPOINT``: any ``https://`` URL, or ``http://`` on loopback only."""
    return endpoint_override(environ, ADMIN_ENDPOINT_ENV)


def _client(settings: Settings, name: str, endpoint: str | None, load: Callable[[], tuple[Any, Any]]) -> Any:
    """The cached client ``name`` (its class and REST transport class from ``load()``)."""

    def build() -> Any:
        client_class, transport_class = load()

        def transport(**options: Any) -> Any:
            # The client hands every option over; only the JWT shortcut is overridden (see the docstring).
            return transport_class(**{**options, "always_use_jwt_access": False})

        return client_class(
            credentials=google_auth.build(settings.credentials, SCOPES, settings.environ),
            transport=transport,
            client_options={"api_endpoint": endpoint} if endpoint else None,
        )

    return _clients.get(settings.credentials, name, endpoint=endpoint, build=build)


def data_client(settings: Settings) -> Any:
    def load() -> tuple[Any, Any]:
        from google.analytics.data_v1beta import BetaAnalyticsDataClient
        from google.analytics.data_v1beta.services.beta_analytics_data.transports.rest import (
            BetaAnalyticsDataRestTransport,
        )

        return BetaAnalyticsDataClient, BetaAnalyticsDataRestTransport

    return _client(settings, "data-v1beta", data_endpoint(settings.environ), load)


def alpha_data_client(settings: Settings) -> Any:
    def load() -> tuple[Any, Any]:
        from google.analytics.data_v1alpha import AlphaAnalyticsDataClient
        from google.analytics.data_v1alpha.services.alpha_analytics_data.transports.rest import (
            AlphaAnalyticsDataRestTransport,
        )

        return AlphaAnalyticsDataClient, AlphaAnalyticsDataRestTransport

    return _client(settings, "data-v1alpha", data_endpoint(settings.environ), load)


def admin_client(settings: Settings) -> Any:
    def load() -> tuple[Any, Any]:
        from google.analytics.admin_v1beta import AnalyticsAdminServiceClient
        from google.analytics.admin_v1beta.services.analytics_admin_service.transports.rest import (
            AnalyticsAdminServiceRestTransport,
        )

        return AnalyticsAdminServiceClient, AnalyticsAdminServiceRestTransport

    return _client(settings, "admin-v1beta", admin_endpoint(settings.environ), load)


def alpha_admin_client(settings: Settings) -> Any:
    def load() -> tuple[Any, Any]:
        from google.analytics.admin_v1alpha import AnalyticsAdminServiceClient
        from google.analytics.admin_v1alpha.services.analytics_admin_service.transports.rest import (
            AnalyticsAdminServiceRestTransport,
        )

        return AnalyticsAdminServiceClient, AnalyticsAdminServiceRestTransport

    return _client(settings, "admin-v1alpha", admin_endpoint(settings.environ), load)


def cache_key(settings: Settings, *parts: str) -> tuple[str, ...]:
    """A key for answers kept in memory: a hash of the credentials (never the text), the endpoints, ``parts``."""
    canonical = json.dumps(dict(settings.credentials), sort_keys=True, default=str)
    endpoints = (data_endpoint(settings.environ) or "", admin_endpoint(settings.environ) or "")
    return (hashlib.sha256(canonical.encode()).hexdigest(), *endpoints, *parts)


# -- sending -----------------------------------------------------------------------------------
def _retryable(exc: BaseException) -> bool:
    """5xx answers and no answer at all; never a 429 or a quota reason (see the module's docstring)."""
    found = api_error(exc)
    if found is None:
        return is_transient(exc)  # the network, a timeout
    return (found.status or 0) >= 500 and found.reasons.isdisjoint(RATE_REASONS)


def _call(settings: Settings, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``method(*args, **kwargs)`` with the bounded retry and the request timeout."""
    from google.api_core.retry import Retry

    deadline = retry_deadline_s(settings.environ, RETRY_ENV, DEFAULT_RETRY_S)
    retry = bounded_retry(Retry(predicate=_retryable), deadline)
    return method(*args, retry=retry, timeout=HTTP_TIMEOUT_S, **kwargs)


def _json(message: Any) -> dict[str, Any]:
    """A proto-plus or protobuf message as proto3 JSON (camelCase)."""
    from google.protobuf import json_format  # type: ignore[import-untyped]

    found: dict[str, Any] = json_format.MessageToDict(getattr(message, "_pb", message))
    return found


def _listed(settings: Settings, method: Callable[..., Iterable[Any]], parent: str) -> list[dict[str, Any]]:
    """Every item of an Admin list call, all pages followed (the pager re-sends with the same retry)."""
    pager = _call(settings, method, request={"parent": parent, "page_size": ADMIN_PAGE_SIZE})
    return [_json(item) for item in pager]


def _property(property_id: str) -> str:
    return f"properties/{property_id}"


# -- reports -----------------------------------------------------------------------------------
def _metric_type(number: int) -> str:
    from google.analytics.data_v1beta.types import MetricType

    try:
        return str(MetricType(number).name)
    except ValueError:  # a type newer than this library
        return "TYPE_UNSPECIFIED"


def _report(pb: Any) -> Report:
    """A runReport / runRealtimeReport response (the raw protobuf) as a :class:`Report`."""
    rows = [[*[v.value for v in row.dimension_values], *[v.value for v in row.metric_values]] for row in pb.rows]
    metadata: dict[str, Any] = {}
    if "metadata" in pb.DESCRIPTOR.fields_by_name and pb.HasField("metadata"):
        metadata = _json(pb.metadata)
    quota = _json(pb.property_quota) if pb.HasField("property_quota") else None
    return Report(
        dimension_names=[h.name for h in pb.dimension_headers],
        metric_names=[h.name for h in pb.metric_headers],
        metric_types=[_metric_type(h.type_) for h in pb.metric_headers],
        rows=rows,
        totals=[[v.value for v in row.metric_values] for row in pb.totals],
        row_count=int(pb.row_count),
        metadata=metadata,
        property_quota=quota,
    )


def run_report(settings: Settings, request: dict[str, Any]) -> Report:
    """``runReport``: one page of a report (``limit`` and ``offset`` in ``request``)."""
    from google.analytics.data_v1beta.types import RunReportRequest

    client = data_client(settings)
    response = _call(settings, client.run_report, request=RunReportRequest(**request))
    return _report(response._pb)


def batch_run_reports(settings: Settings, property_id: str, requests: list[dict[str, Any]]) -> list[Report]:
    """``batchRunReports``: several reports of one property, five per round trip, in order."""
    from google.analytics.data_v1beta.types import BatchRunReportsRequest, RunReportRequest

    client = data_client(settings)
    out: list[Report] = []
    for start in range(0, len(requests), BATCH_REPORTS):
        chunk = [
            RunReportRequest(**{k: v for k, v in r.items() if k != "property"})
            for r in requests[start : start + BATCH_REPORTS]
        ]
        batch = BatchRunReportsRequest(property=_property(property_id), requests=chunk)
        response = _call(settings, client.batch_run_reports, request=batch)
        out.extend(_report(pb) for pb in response._pb.reports)
    return out


def run_realtime_report(settings: Settings, request: dict[str, Any]) -> Report:
    """``runRealtimeReport``: the last 30 minutes (60 on GA4 360); ``metadata`` is {}."""
    from google.analytics.data_v1beta.types import RunRealtimeReportRequest

    client = data_client(settings)
    response = _call(settings, client.run_realtime_report, request=RunRealtimeReportRequest(**request))
    return _report(response._pb)


def run_pivot_report(settings: Settings, request: dict[str, Any]) -> dict[str, Any]:
    """``runPivotReport``, answered as proto3 JSON (camelCase)."""
    from google.analytics.data_v1beta.types import RunPivotReportRequest

    client = data_client(settings)
    return _json(_call(settings, client.run_pivot_report, request=RunPivotReportRequest(**request)))


def run_funnel_report(settings: Settings, request: dict[str, Any]) -> dict[str, Any]:
    """``runFunnelReport`` (Data API v1alpha), answered as proto3 JSON (camelCase)."""
    from google.analytics.data_v1alpha.types import RunFunnelReportRequest

    client = alpha_data_client(settings)
    return _json(_call(settings, client.run_funnel_report, request=RunFunnelReportRequest(**request)))


def get_metadata(settings: Settings, property_id: str) -> dict[str, Any]:
    """``getMetadata``: the property's dimensions and metrics, custom ones included (camelCase)."""
    client = data_client(settings)
    return _json(_call(settings, client.get_metadata, name=f"{_property(property_id)}/metadata"))


def check_compatibility(settings: Settings, request: dict[str, Any]) -> dict[str, Any]:
    """``checkCompatibility``: ``dimensionCompatibilities`` and ``metricCompatibilities`` (camelCase)."""
    from google.analytics.data_v1beta.types import CheckCompatibilityRequest

    client = data_client(settings)
    return _json(_call(settings, client.check_compatibility, request=CheckCompatibilityRequest(**request)))


# -- Admin -------------------------------------------------------------------------------------
def account_summaries(settings: Settings) -> list[dict[str, Any]]:
    """``accountSummaries.list``: every account these credentials see with its properties, all pages."""
    client = admin_client(settings)
    pager = _call(settings, client.list_account_summaries, request={"page_size": ADMIN_PAGE_SIZE})
    return [_json(item) for item in pager]


def get_property(settings: Settings, property_id: str) -> dict[str, Any]:
    """``properties.get``: display name, time zone, currency, industry, service level, ..."""
    client = admin_client(settings)
    return _json(_call(settings, client.get_property, name=_property(property_id)))


def get_data_retention_settings(settings: Settings, property_id: str) -> dict[str, Any]:
    client = admin_client(settings)
    name = f"{_property(property_id)}/dataRetentionSettings"
    return _json(_call(settings, client.get_data_retention_settings, name=name))


def list_key_events(settings: Settings, property_id: str) -> list[dict[str, Any]]:
    return _listed(settings, admin_client(settings).list_key_events, _property(property_id))


def list_custom_dimensions(settings: Settings, property_id: str) -> list[dict[str, Any]]:
    return _listed(settings, admin_client(settings).list_custom_dimensions, _property(property_id))


def list_custom_metrics(settings: Settings, property_id: str) -> list[dict[str, Any]]:
    return _listed(settings, admin_client(settings).list_custom_metrics, _property(property_id))


def list_google_ads_links(settings: Settings, property_id: str) -> list[dict[str, Any]]:
    return _listed(settings, admin_client(settings).list_google_ads_links, _property(property_id))


def list_calculated_metrics(settings: Settings, property_id: str) -> list[dict[str, Any]]:
    """Admin v1alpha."""
    return _listed(settings, alpha_admin_client(settings).list_calculated_metrics, _property(property_id))


def list_channel_groups(settings: Settings, property_id: str) -> list[dict[str, Any]]:
    """Admin v1alpha."""
    return _listed(settings, alpha_admin_client(settings).list_channel_groups, _property(property_id))


def get_attribution_settings(settings: Settings, property_id: str) -> dict[str, Any]:
    """Admin v1alpha: the reporting attribution model and the lookback windows."""
    client = alpha_admin_client(settings)
    name = f"{_property(property_id)}/attributionSettings"
    return _json(_call(settings, client.get_attribution_settings, name=name))


def list_reporting_data_annotations(settings: Settings, property_id: str) -> list[dict[str, Any]]:
    """Admin v1alpha."""
    return _listed(settings, alpha_admin_client(settings).list_reporting_data_annotations, _property(property_id))


# -- errors ------------------------------------------------------------------------------------
def is_invalid_argument(exc: BaseException) -> bool:
    """Whether GA4 refused a request as invalid (HTTP 400 / INVALID_ARGUMENT): the callers that can
    explain it better (an incompatible dimension and metric) look at it before the policy does."""
    found = api_error(exc)
    return found is not None and (found.status == 400 or "INVALID_ARGUMENT" in found.reasons)


def error_message(exc: BaseException) -> str:
    """The API's own text of a GA4 error (redacted, bounded, without the request URL)."""
    found = api_error(exc)
    return found.message if found else str(exc)


def _no_access(failure: Failure) -> bool:
    return failure.reasons.isdisjoint(RATE_REASONS)


_QUOTA = (429,)
_EXHAUSTED = ("RESOURCE_EXHAUSTED",)
_QUOTA_NEXT = " Meanwhile ask for less: a shorter window, fewer dimensions or a lower limit spend fewer tokens."


def _quota_rule(contains: str, message: str) -> tuple[Rule, Rule]:
    """One quota's row, for a 429 and for the RESOURCE_EXHAUSTED reason on any status."""
    return (
        Rule(UpstreamError, message, codes=_QUOTA, contains=(contains,)),
        Rule(UpstreamError, message, reasons=_EXHAUSTED, contains=(contains,)),
    )


# GA4 names the quota it refused in its message ("Exhausted property tokens per day quota ...").
# Most specific first: "per project per hour" also says "per hour".
POLICY = GoogleErrorPolicy(
    "Google Analytics",
    rules=(
        *_quota_rule(
            "per project per hour",
            "GA4 refused the report: this Google Cloud project used its hourly tokens for the property ({message}). "
            "They refill within the hour: try again later." + _QUOTA_NEXT,
        ),
        *_quota_rule(
            "per day",
            "GA4 refused the report: the property's daily quota tokens are used up ({message}). They refill at "
            "midnight Pacific Time: try again after that." + _QUOTA_NEXT,
        ),
        *_quota_rule(
            "per hour",
            "GA4 refused the report: the property's hourly quota is used up ({message}). It refills within the hour: "
            "try again later." + _QUOTA_NEXT,
        ),
        *_quota_rule(
            "concurrent",
            "GA4 refused the report: too many requests run at once on this property ({message}). Wait a few seconds "
            "and try again, one report at a time.",
        ),
        Rule(
            ResourceNotFound,
            "Google Analytics denied access to this property ({message}): the account cannot read this property. "
            "List the properties it can read with autocontext without arguments, or ask the user to add the account "
            "to the property (GA4 Admin > Property access management, Viewer is enough).",
            codes=(403,),
            when=_no_access,
        ),
        Rule(
            InvalidArguments,
            "GA4 refused the request ({message}). Fix the arguments (metric and dimension names as autocontext lists "
            "them, dates as YYYY-MM-DD, filters on the fields the report asks for) and try again.",
            codes=(400,),
        ),
        Rule(
            InvalidArguments,
            "GA4 refused the request ({message}). Fix the arguments (metric and dimension names as autocontext lists "
            "them, dates as YYYY-MM-DD, filters on the fields the report asks for) and try again.",
            reasons=("INVALID_ARGUMENT",),
        ),
    ),
    messages={
        "rate_limited": "GA4's quota for this property is used up for now ({message}). Hourly quotas refill within "
        "the hour and daily ones at midnight Pacific Time: try again later, with a smaller report.",
        "retries_exhausted": "Google Analytics kept failing after retries ({message}). Wait a minute and try again; "
        "if it persists, ask for a smaller report or check the Google Analytics status page.",
        "not_found": "Google Analytics could not find it: {message}. Check the property id, or call autocontext "
        "without arguments to list the properties these credentials can read.",
    },
)
translate = POLICY.translate
