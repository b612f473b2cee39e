"""The GA4 accounts and properties that both GA4 fakes (Data and Admin) serve.

Plain frozen data, no server code. The Admin fake renders it as proto3 JSON; the Data fake takes the
time zone, currency, custom definitions and content groups from it. Spec 15.1 names the properties.

The properties differ on purpose so that tests can tell them apart: Store has no custom metric, Blog
has no Google Ads link, and each has its own time zone and currency. ``HIDDEN_PROPERTY`` exists (its
account does too) but the fake credentials cannot see it: every call about it answers 403.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

# The custom-definition scopes and the prefix of their Data API names (``customEvent:form_name``).
_API_NAME_PREFIX_BY_SCOPE = {"EVENT": "customEvent", "USER": "customUser", "ITEM": "customItem"}


@dataclass(frozen=True)
class Account:
    account_id: str
    display_name: str

    @property
    def name(self) -> str:
        return f"accounts/{self.account_id}"

    @property
    def summary_name(self) -> str:
        return f"accountSummaries/{self.account_id}"


@dataclass(frozen=True)
class Money:
    numeric_value: float
    currency_code: str


@dataclass(frozen=True)
class KeyEvent:
    key_event_id: str
    event_name: str
    counting_method: str  # ONCE_PER_EVENT | ONCE_PER_SESSION
    create_time: dt.datetime
    custom: bool
    deletable: bool
    default_value: Money | None = None


@dataclass(frozen=True)
class CustomDimension:
    custom_dimension_id: str
    parameter_name: str
    display_name: str
    scope: str  # EVENT | USER | ITEM
    description: str = ""
    disallow_ads_personalization: bool = False

    @property
    def api_name(self) -> str:
        """The name the Data API uses for it: ``customEvent:form_name``, ``customUser:plan``."""
        return f"{_API_NAME_PREFIX_BY_SCOPE[self.scope]}:{self.parameter_name}"


@dataclass(frozen=True)
class CustomMetric:
    custom_metric_id: str
    parameter_name: str
    display_name: str
    measurement_unit: str  # STANDARD | CURRENCY | SECONDS | ...
    scope: str  # EVENT
    description: str = ""
    restricted_metric_types: tuple[str, ...] = ()  # COST_DATA | REVENUE_DATA

    @property
    def api_name(self) -> str:
        return f"{_API_NAME_PREFIX_BY_SCOPE[self.scope]}:{self.parameter_name}"


@dataclass(frozen=True)
class CalculatedMetric:
    calculated_metric_id: str
    display_name: str
    formula: str
    metric_unit: str  # STANDARD | CURRENCY | ...
    description: str = ""
    restricted_metric_types: tuple[str, ...] = ()

    @property
    def api_name(self) -> str:
        return f"calcMetric:{self.calculated_metric_id}"


@dataclass(frozen=True)
class GroupingRule:
    """One channel of a channel group: the sessions whose ``field_name`` matches one of ``values``."""

    display_name: str
    field_name: str  # eachScopeDefaultChannelGroup | eachScopeSource | eachScopeMedium | ...
    match_type: str  # EXACT | BEGINS_WITH | ENDS_WITH | CONTAINS | FULL_REGEXP | PARTIAL_REGEXP
    values: tuple[str, ...]  # one value: a string filter with match_type; several: an in-list filter


@dataclass(frozen=True)
class ChannelGroup:
    channel_group_id: str
    display_name: str
    description: str
    system_defined: bool
    primary: bool
    grouping_rules: tuple[GroupingRule, ...]


@dataclass(frozen=True)
class GoogleAdsLink:
    link_id: str
    customer_id: str
    can_manage_clients: bool
    ads_personalization_enabled: bool
    create_time: dt.datetime
    update_time: dt.datetime
    creator_email_address: str


@dataclass(frozen=True)
class AttributionSettings:
    reporting_attribution_model: str
    acquisition_conversion_event_lookback_window: str
    other_conversion_event_lookback_window: str
    ads_web_conversion_data_export_scope: str


@dataclass(frozen=True)
class DataRetentionSettings:
    event_data_retention: str  # TWO_MONTHS | FOURTEEN_MONTHS | ...
    user_data_retention: str
    reset_user_data_on_new_activity: bool


@dataclass(frozen=True)
class Annotation:
    """A reporting data annotation: on one day (``end_date`` None) or over a date range."""

    annotation_id: str
    title: str
    description: str
    start_date: dt.date
    color: str  # PURPLE | BROWN | BLUE | GREEN | RED | CYAN | ORANGE
    system_generated: bool = False
    end_date: dt.date | None = None


@dataclass(frozen=True)
class Property:
    property_id: str
    display_name: str
    account: Account
    time_zone: str
    currency_code: str
    industry_category: str
    create_time: dt.datetime
    update_time: dt.datetime
    key_events: tuple[KeyEvent, ...]
    custom_dimensions: tuple[CustomDimension, ...]
    custom_metrics: tuple[CustomMetric, ...]
    calculated_metrics: tuple[CalculatedMetric, ...]
    channel_groups: tuple[ChannelGroup, ...]
    google_ads_links: tuple[GoogleAdsLink, ...]
    attribution: AttributionSettings
    data_retention: DataRetentionSettings
    annotations: tuple[Annotation, ...]
    # Values of the page parameter ``content_group`` in the generated events ("(not set)": no parameter).
    content_groups: tuple[str, ...] = ("Shop", "Blog", "(not set)")
    property_type: str = "PROPERTY_TYPE_ORDINARY"
    service_level: str = "GOOGLE_ANALYTICS_STANDARD"

    @property
    def name(self) -> str:
        return f"properties/{self.property_id}"


IKAUE = Account("1001", "IKAUE")
CLIENT_X = Account("2002", "Client X")
HIDDEN_ACCOUNT = Account("3003", "Hidden Co")
ACCOUNTS: tuple[Account, ...] = (IKAUE, CLIENT_X)


def _utc(year: int, month: int, day: int, hour: int = 9) -> dt.datetime:
    return dt.datetime(year, month, day, hour, 30, 15, 123000, tzinfo=dt.UTC)


def _key_events(currency_code: str, created: dt.datetime) -> tuple[KeyEvent, ...]:
    return (
        KeyEvent(
            "1",
            "purchase",
            "ONCE_PER_EVENT",
            created,
            custom=False,
            deletable=True,
            default_value=Money(1.0, currency_code),
        ),
        KeyEvent("2", "generate_lead", "ONCE_PER_SESSION", created + dt.timedelta(days=3), custom=True, deletable=True),
    )


_CUSTOM_DIMENSIONS = (
    CustomDimension("1", "form_name", "Form", "EVENT", description="Name of the submitted form."),
    CustomDimension("2", "plan", "Plan", "USER", description="Subscription plan of the user."),
)
_DISCOUNT = CustomMetric(
    "1",
    "discount_amount",
    "Discount",
    "CURRENCY",
    "EVENT",
    description="Discount applied to the purchase.",
    restricted_metric_types=("REVENUE_DATA",),
)
_REVENUE_PER_USER = CalculatedMetric(
    "revenue_per_user",
    "Revenue per user",
    "{{totalRevenue}} / {{totalUsers}}",
    "CURRENCY",
    description="Total revenue divided by total users.",
    restricted_metric_types=("REVENUE_DATA",),
)

# The rules below are a readable subset of Google's own Default Channel Group definition.
_DEFAULT_CHANNEL_GROUP = ChannelGroup(
    "1000",
    "Default Channel Group",
    "The system-defined channel group.",
    system_defined=True,
    primary=True,
    grouping_rules=(
        GroupingRule("Direct", "eachScopeSource", "EXACT", ("(direct)",)),
        GroupingRule("Organic Search", "eachScopeMedium", "EXACT", ("organic",)),
        GroupingRule("Paid Search", "eachScopeMedium", "FULL_REGEXP", ("^(cpc|ppc|paidsearch)$",)),
        GroupingRule("Email", "eachScopeMedium", "EXACT", ("email", "e-mail", "e_mail")),
        GroupingRule("Organic Social", "eachScopeMedium", "EXACT", ("social", "social-network", "sm")),
        GroupingRule("Referral", "eachScopeMedium", "EXACT", ("referral",)),
    ),
)
_MARKETING_CHANNEL_GROUP = ChannelGroup(
    "2001",
    "Marketing view",
    "Paid against everything else.",
    system_defined=False,
    primary=False,
    grouping_rules=(
        GroupingRule(
            "Paid",
            "eachScopeDefaultChannelGroup",
            "EXACT",
            ("Paid Search", "Paid Social", "Display", "Cross-network"),
        ),
        GroupingRule("Newsletter", "eachScopeMedium", "EXACT", ("email",)),
    ),
)
_CHANNEL_GROUPS = (_DEFAULT_CHANNEL_GROUP, _MARKETING_CHANNEL_GROUP)

_ATTRIBUTION = AttributionSettings(
    reporting_attribution_model="PAID_AND_ORGANIC_CHANNELS_DATA_DRIVEN",
    acquisition_conversion_event_lookback_window="ACQUISITION_CONVERSION_EVENT_LOOKBACK_WINDOW_30_DAYS",
    other_conversion_event_lookback_window="OTHER_CONVERSION_EVENT_LOOKBACK_WINDOW_90_DAYS",
    ads_web_conversion_data_export_scope="PAID_AND_ORGANIC_CHANNELS",
)
_RETENTION = DataRetentionSettings("FOURTEEN_MONTHS", "FOURTEEN_MONTHS", reset_user_data_on_new_activity=True)


def _annotations(site: str) -> tuple[Annotation, ...]:
    return (
        Annotation(
            "1",
            "Site redesign",
            f"New templates on {site}; landing pages changed.",
            dt.date(2026, 9, 14),
            "BLUE",
        ),
        Annotation(
            "2",
            "Black Friday campaign",
            "Paid search and email push.",
            dt.date(2026, 11, 23),
            "ORANGE",
            end_date=dt.date(2026, 11, 30),
        ),
        Annotation(
            "3",
            "Data collection gap",
            "Tag missing on checkout pages.",
            dt.date(2026, 10, 6),
            "RED",
            system_generated=True,
        ),
    )


def _ads_link(link_id: str, customer_id: str, created: dt.datetime) -> GoogleAdsLink:
    return GoogleAdsLink(
        link_id,
        customer_id,
        can_manage_clients=False,
        ads_personalization_enabled=True,
        create_time=created,
        update_time=created + dt.timedelta(days=30),
        creator_email_address="analyst@ikaue.com",
    )


IKAUE_COM = Property(
    "123456789",
    "ikaue.com",
    IKAUE,
    "Europe/Madrid",
    "EUR",
    "INTERNET_AND_TELECOM",
    create_time=_utc(2021, 3, 15),
    update_time=_utc(2026, 6, 1),
    key_events=_key_events("EUR", _utc(2021, 3, 16)),
    custom_dimensions=_CUSTOM_DIMENSIONS,
    custom_metrics=(_DISCOUNT,),
    calculated_metrics=(_REVENUE_PER_USER,),
    channel_groups=_CHANNEL_GROUPS,
    google_ads_links=(_ads_link("7001", "1234567890", _utc(2022, 1, 10)),),
    attribution=_ATTRIBUTION,
    data_retention=_RETENTION,
    annotations=_annotations("ikaue.com"),
)
BLOG = Property(
    "222333444",
    "Blog",
    IKAUE,
    "America/New_York",
    "USD",
    "NEWS",
    create_time=_utc(2022, 5, 2),
    update_time=_utc(2026, 2, 20),
    key_events=_key_events("USD", _utc(2022, 5, 3)),
    custom_dimensions=_CUSTOM_DIMENSIONS,
    custom_metrics=(_DISCOUNT,),
    calculated_metrics=(_REVENUE_PER_USER,),
    channel_groups=_CHANNEL_GROUPS,
    google_ads_links=(),
    attribution=_ATTRIBUTION,
    data_retention=_RETENTION,
    annotations=_annotations("the blog"),
    content_groups=("Blog", "(not set)"),
)
STORE = Property(
    "987654321",
    "Store",
    CLIENT_X,
    "Asia/Tokyo",
    "JPY",
    "SHOPPING",
    create_time=_utc(2023, 8, 21),
    update_time=_utc(2026, 7, 7),
    key_events=_key_events("JPY", _utc(2023, 8, 22)),
    custom_dimensions=_CUSTOM_DIMENSIONS,
    custom_metrics=(),
    calculated_metrics=(_REVENUE_PER_USER,),
    channel_groups=_CHANNEL_GROUPS,
    google_ads_links=(_ads_link("7002", "9876543210", _utc(2023, 9, 1)),),
    attribution=_ATTRIBUTION,
    data_retention=_RETENTION,
    annotations=_annotations("the store"),
)
HIDDEN_PROPERTY = Property(
    "555666777",
    "Hidden",
    HIDDEN_ACCOUNT,
    "Europe/London",
    "GBP",
    "OTHER",
    create_time=_utc(2020, 1, 5),
    update_time=_utc(2025, 1, 5),
    key_events=_key_events("GBP", _utc(2020, 1, 6)),
    custom_dimensions=_CUSTOM_DIMENSIONS,
    custom_metrics=(_DISCOUNT,),
    calculated_metrics=(),
    channel_groups=(_DEFAULT_CHANNEL_GROUP,),
    google_ads_links=(),
    attribution=_ATTRIBUTION,
    data_retention=_RETENTION,
    annotations=(),
)

# The properties the fake credentials can see, in account-summary order.
PROPERTIES: tuple[Property, ...] = (IKAUE_COM, BLOG, STORE)

_ALL_BY_ID = {prop.property_id: prop for prop in (*PROPERTIES, HIDDEN_PROPERTY)}
_VISIBLE_IDS = frozenset(prop.property_id for prop in PROPERTIES)


def property_by_id(property_id: str) -> Property | None:
    """The property with this bare numeric id, visible or hidden; None when it does not exist."""
    return _ALL_BY_ID.get(property_id)


def is_visible(property_id: str) -> bool:
    """Whether the fake credentials can see the property (an unknown id is not visible either)."""
    return property_id in _VISIBLE_IDS


def properties_of(account: Account) -> tuple[Property, ...]:
    """The visible properties of an account, in ``PROPERTIES`` order."""
    return tuple(prop for prop in PROPERTIES if prop.account == account)
