"""A seeded generator of GA4 events: the BigQuery-export daily shards (``events_YYYYMMDD``) and the
event-level ground truth of the GA4 Data API fake (``fakes.ga4``).

The export rows carry the export's main columns with the real types and nesting, so that the usual GA4
SQL runs against them: ``event_params`` and ``user_properties`` are repeated key/value records, ``geo``,
``device``, ``traffic_source`` and ``collected_traffic_source`` are records, ``items`` is repeated,
``ecommerce`` is null except on purchases.

The visitors behave like a site's:

- Every day a cohort of new visitors arrives (``first_visit`` then ``session_start``); their first
  session's source is their first-user source, kept in ``traffic_source`` on all their later events.
- Visitors of the previous ``RETURN_WINDOW_DAYS`` cohorts come back, each visit a new session
  (``ga_session_id`` = the session's start in epoch seconds) from its own source/medium/campaign, which
  ``session_start`` and ``page_view`` carry as ``source``/``medium``/``campaign`` params and in
  ``collected_traffic_source`` (null for direct sessions). So first-user and session channels differ.
- A session is a run of page views (with ``user_engagement``, ``scroll``, ``view_item``,
  ``add_to_cart`` around them); some end in ``purchase`` (key event, ``discount_amount`` on some) or
  ``generate_lead`` (key event counted once per session, ``form_name`` param, sometimes sent twice).
- Pages carry a ``content_group`` param (none on the home page); the user property ``plan`` is set for
  most visitors.
- ``event_date`` is the day in the property's ``time_zone``; ``event_timestamp`` is UTC microseconds.

Determinism: each day's events depend only on ``(seed, day, events_per_day, time_zone,
content_groups)``: a day holds exactly ``events_per_day`` events (the last session is cut short), so a
test can regenerate any shard on its own and compute expected answers in Python. Timestamps are
strictly increasing within a day, so ``ORDER BY event_timestamp`` has no ties.
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo

_EVENT_PARAM_VALUE = {
    "name": "value",
    "type": "RECORD",
    "mode": "NULLABLE",
    "fields": [
        {"name": "string_value", "type": "STRING", "mode": "NULLABLE"},
        {"name": "int_value", "type": "INTEGER", "mode": "NULLABLE"},
        {"name": "float_value", "type": "FLOAT", "mode": "NULLABLE"},
        {"name": "double_value", "type": "FLOAT", "mode": "NULLABLE"},
    ],
}

GA4_EXPORT_SCHEMA: list[dict[str, Any]] = [
    {"name": "event_date", "type": "STRING", "mode": "NULLABLE", "description": "Date of the event (YYYYMMDD)."},
    {"name": "event_timestamp", "type": "INTEGER", "mode": "NULLABLE", "description": "Microseconds since epoch."},
    {"name": "event_name", "type": "STRING", "mode": "NULLABLE"},
    {
        "name": "event_params",
        "type": "RECORD",
        "mode": "REPEATED",
        "fields": [{"name": "key", "type": "STRING", "mode": "NULLABLE"}, _EVENT_PARAM_VALUE],
    },
    {"name": "user_pseudo_id", "type": "STRING", "mode": "NULLABLE"},
    {"name": "user_id", "type": "STRING", "mode": "NULLABLE"},
    {
        "name": "user_properties",
        "type": "RECORD",
        "mode": "REPEATED",
        "fields": [
            {"name": "key", "type": "STRING", "mode": "NULLABLE"},
            {
                "name": "value",
                "type": "RECORD",
                "mode": "NULLABLE",
                "fields": [
                    *_EVENT_PARAM_VALUE["fields"],  # type: ignore[list-item]
                    {"name": "set_timestamp_micros", "type": "INTEGER", "mode": "NULLABLE"},
                ],
            },
        ],
    },
    {
        "name": "device",
        "type": "RECORD",
        "mode": "NULLABLE",
        "fields": [
            {"name": "category", "type": "STRING", "mode": "NULLABLE"},
            {"name": "operating_system", "type": "STRING", "mode": "NULLABLE"},
        ],
    },
    {
        "name": "geo",
        "type": "RECORD",
        "mode": "NULLABLE",
        "fields": [
            {"name": "country", "type": "STRING", "mode": "NULLABLE"},
            {"name": "city", "type": "STRING", "mode": "NULLABLE"},
        ],
    },
    {
        "name": "traffic_source",
        "type": "RECORD",
        "mode": "NULLABLE",
        "description": "The user's first-user traffic source.",
        "fields": [
            {"name": "source", "type": "STRING", "mode": "NULLABLE"},
            {"name": "medium", "type": "STRING", "mode": "NULLABLE"},
            {"name": "name", "type": "STRING", "mode": "NULLABLE"},
        ],
    },
    {
        "name": "collected_traffic_source",
        "type": "RECORD",
        "mode": "NULLABLE",
        "description": "The traffic source collected with the event (session-level UTM values).",
        "fields": [
            {"name": "manual_source", "type": "STRING", "mode": "NULLABLE"},
            {"name": "manual_medium", "type": "STRING", "mode": "NULLABLE"},
            {"name": "manual_campaign_name", "type": "STRING", "mode": "NULLABLE"},
            {"name": "gclid", "type": "STRING", "mode": "NULLABLE"},
        ],
    },
    {
        "name": "ecommerce",
        "type": "RECORD",
        "mode": "NULLABLE",
        "fields": [
            {"name": "transaction_id", "type": "STRING", "mode": "NULLABLE"},
            {"name": "purchase_revenue", "type": "FLOAT", "mode": "NULLABLE"},
        ],
    },
    {
        "name": "items",
        "type": "RECORD",
        "mode": "REPEATED",
        "fields": [
            {"name": "item_id", "type": "STRING", "mode": "NULLABLE"},
            {"name": "item_name", "type": "STRING", "mode": "NULLABLE"},
            {"name": "price", "type": "FLOAT", "mode": "NULLABLE"},
            {"name": "quantity", "type": "INTEGER", "mode": "NULLABLE"},
        ],
    },
]

KEY_EVENTS = ("purchase", "generate_lead")
RETURN_WINDOW_DAYS = 28  # visitors come back within this many days of their first visit
_EVENTS_PER_NEW_VISITOR = 16  # one new visitor per this many daily events: about half the sessions are new

# (path, title, content group or None): the home page has no content group.
_PAGES = [
    ("/", "Home", None),
    ("/shoes", "Shoes", "Shop"),
    ("/shoes/blue-runner", "Blue Runner", "Shop"),
    ("/bags", "Bags", "Shop"),
    ("/cart", "Cart", "Shop"),
    ("/checkout", "Checkout", "Shop"),
    ("/blog/how-to-choose", "How to choose – guide", "Blog"),
    ("/blog/care", "Shoe care", "Blog"),
    ("/contact", "Contact", None),
]
_PAGE_CUM_WEIGHTS = list(itertools.accumulate([20, 12, 10, 8, 6, 4, 10, 6, 4]))
_SHOP_PAGES = {"/shoes", "/shoes/blue-runner", "/bags", "/cart", "/checkout"}
# City names with non-ASCII letters make STRING byte counts differ from character counts.
_PLACES = [
    ("France", "Paris"),
    ("Germany", "München"),
    ("United States", "New York"),
    ("Japan", "Tokyo"),
    ("United Kingdom", "London"),
    ("Spain", "Málaga"),
    ("Spain", "Madrid"),
    ("Brazil", "São Paulo"),
]
_DEVICES = [("desktop", ["Windows", "Macintosh", "Linux"]), ("mobile", ["Android", "iOS"]), ("tablet", ["iOS"])]
# (source, medium, campaign): the export's ``traffic_source.name`` style campaign names.
_SOURCES = [
    ("google", "organic", "(organic)"),
    ("(direct)", "(none)", "(direct)"),
    ("newsletter", "email", "spring_sale"),
    ("facebook", "cpc", "retargeting"),
    ("google", "cpc", "brand_search"),
    ("bing", "organic", "(organic)"),
    ("t.co", "referral", "(referral)"),
    ("partner.example.org", "referral", "(referral)"),
]
_FIRST_USER_SOURCE_WEIGHTS = [40, 12, 6, 14, 14, 6, 4, 4]  # how visitors find the site the first time
_SESSION_SOURCE_CUM_WEIGHTS = list(itertools.accumulate([25, 35, 14, 6, 6, 4, 4, 6]))  # how they come back
_PLANS = ["free", "free", "pro", "team", None]  # None: the user property is not set
_FORMS = ["contact", "newsletter_signup", "demo_request"]
_CATALOG = [
    ("SKU_001", "Blue Runner", 89.0),
    ("SKU_002", "Trail Boot", 129.5),
    ("SKU_003", "City Bag", 45.25),
    ("SKU_004", "Socks (3 pack)", 12.99),
]
_SHOP_URL = "https://shop.example.com"
_SEARCH_ENGINES = {"google", "bing", "yahoo", "duckduckgo", "baidu", "yandex"}
_SOCIAL_SITES = {"facebook", "instagram", "t.co", "twitter", "linkedin", "pinterest", "reddit", "youtube"}


def default_channel_group(source: str, medium: str) -> str:
    """GA4's Default Channel Group of a source/medium (the rules that matter for the generated sources)."""
    if source == "(direct)" and medium in ("(none)", "(not set)"):
        return "Direct"
    social = source in _SOCIAL_SITES
    if medium in ("cpc", "ppc", "paidsearch", "paid"):
        return "Paid Social" if social else "Paid Search" if source in _SEARCH_ENGINES else "Paid Other"
    if medium == "organic" or source in _SEARCH_ENGINES:
        return "Organic Search"
    if social or medium in ("social", "social-network", "sm"):
        return "Organic Social"
    if medium in ("email", "e-mail", "e_mail"):
        return "Email"
    if medium == "referral":
        return "Referral"
    return "Unassigned"


@dataclass(frozen=True)
class Visitor:
    pseudo_id: str
    user_id: str | None
    device_category: str
    operating_system: str
    country: str
    city: str
    first_source: str  # the first-user traffic source (``traffic_source`` in the export)
    first_medium: str
    first_campaign: str
    plan: str | None  # the user property ``plan``
    first_visit_day: dt.date


@dataclass(eq=False)
class Session:
    """One session: a visitor's visit on one day (property time zone), from one source."""

    visitor: Visitor
    session_id: int  # ``ga_session_id``: the start in epoch seconds
    date: dt.date
    source: str
    medium: str
    campaign: str
    is_first: bool  # the visitor's first session (it has the first_visit event)
    start_us: int = 0
    end_us: int = 0
    landing_page: str = "(not set)"  # the path of the first page view
    page_views: int = 0
    engagement_msec: int = 0  # the sum of its events' engagement_time_msec
    has_key_event: bool = False
    events: list[Event] = field(default_factory=list, repr=False)

    @property
    def user(self) -> str:
        return self.visitor.pseudo_id

    @property
    def key(self) -> tuple[str, int]:
        """What identifies a session in GA4: (user_pseudo_id, ga_session_id)."""
        return (self.visitor.pseudo_id, self.session_id)

    @property
    def channel(self) -> str:
        return default_channel_group(self.source, self.medium)

    @property
    def duration_s(self) -> float:
        return (self.end_us - self.start_us) / 1e6

    @property
    def engaged(self) -> bool:
        """GA4: 10 seconds of engagement or more, or two page views or more, or a key event."""
        return self.engagement_msec >= 10_000 or self.page_views >= 2 or self.has_key_event


@dataclass(eq=False, slots=True)
class Event:
    """One generated event, flattened (the export row is ``export_row(event)``)."""

    date: dt.date  # the day in the property's time zone
    timestamp_us: int  # UTC epoch microseconds
    name: str
    session: Session
    page_path: str
    page_title: str
    content_group: str | None  # None: the page has no content group ("(not set)")
    engagement_time_msec: int | None = None
    percent_scrolled: int | None = None
    form_name: str | None = None
    discount_amount: float | None = None
    revenue: float | None = None  # purchase value, in the property's currency
    currency: str | None = None
    transaction_id: str | None = None
    items: tuple[tuple[str, str, float, int], ...] = ()  # (item_id, item_name, price, quantity)
    counts_as_key_event: bool = False  # purchase always; generate_lead once per session

    @property
    def visitor(self) -> Visitor:
        return self.session.visitor

    @property
    def user(self) -> str:
        return self.session.visitor.pseudo_id


def shard_name(day: dt.date, prefix: str = "events_") -> str:
    return f"{prefix}{day:%Y%m%d}"


def as_date(value: dt.date | str) -> dt.date:
    """A date from ``date``, ``'YYYY-MM-DD'`` or ``'YYYYMMDD'``."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    text = value.strip()
    if len(text) == 8 and text.isdigit():
        return dt.date(int(text[:4]), int(text[4:6]), int(text[6:]))
    return dt.date.fromisoformat(text)


def export_days(start: dt.date | str, days: int) -> list[dt.date]:
    first = as_date(start)
    return [first + dt.timedelta(days=offset) for offset in range(days)]


@functools.lru_cache(maxsize=8192)
def day_bounds_us(day: dt.date, time_zone: str = "UTC") -> tuple[int, int]:
    """[start, end) of a calendar day of ``time_zone`` in UTC epoch microseconds (23 or 25 h on DST days)."""
    zone = ZoneInfo(time_zone)
    start = dt.datetime(day.year, day.month, day.day, tzinfo=zone)
    following = day + dt.timedelta(days=1)
    end = dt.datetime(following.year, following.month, following.day, tzinfo=zone)
    return int(start.timestamp()) * 1_000_000, int(end.timestamp()) * 1_000_000


def _new_visitors_per_day(events_per_day: int) -> int:
    return max(1, events_per_day // _EVENTS_PER_NEW_VISITOR)


@functools.lru_cache(maxsize=4096)
def cohort(seed: int, day: dt.date, events_per_day: int, time_zone: str = "UTC") -> tuple[Visitor, ...]:
    """The visitors whose first visit is on ``day`` (the same whichever window is generated)."""
    rng = random.Random(f"ga4-cohort:{seed}:{events_per_day}:{day.isoformat()}")
    day_start_s = day_bounds_us(day, time_zone)[0] // 1_000_000
    visitors = []
    for index in range(_new_visitors_per_day(events_per_day)):
        category, systems = rng.choices(_DEVICES, weights=[55, 40, 5])[0]
        country, city = rng.choice(_PLACES)
        source, medium, campaign = rng.choices(_SOURCES, weights=_FIRST_USER_SOURCE_WEIGHTS)[0]
        visitors.append(
            Visitor(
                pseudo_id=f"{rng.randrange(10**9, 10**10)}.{day_start_s + index}",
                user_id=f"u{day:%y%m%d}{index:03d}" if rng.random() < 0.3 else None,
                device_category=category,
                operating_system=rng.choice(systems),
                country=country,
                city=city,
                first_source=source,
                first_medium=medium,
                first_campaign=campaign,
                plan=rng.choice(_PLANS),
                first_visit_day=day,
            )
        )
    return tuple(visitors)


def generate_day_events(
    day: dt.date | str,
    *,
    events_per_day: int = 300,
    seed: int = 0,
    time_zone: str = "UTC",
    content_groups: Sequence[str] = ("Shop", "Blog"),
    currency: str = "EUR",
    live_sessions: tuple[int, int, int] | None = None,
) -> list[Event]:
    """The events of one day, ordered by ``event_timestamp`` (strictly increasing), exactly ``events_per_day``.

    ``content_groups``: the groups the property uses; pages of another group carry no ``content_group``.
    ``live_sessions`` ``(count, start_us, end_us)``: that many more sessions of returning visitors, starting
    in that span (so that a realtime report of the last minutes has activity to show).
    """
    day = as_date(day)
    rng = random.Random(f"ga4-day:{seed}:{events_per_day}:{time_zone}:{day.isoformat()}")
    day_start_us, day_end_us = day_bounds_us(day, time_zone)
    budget = events_per_day
    events: list[Event] = []
    used_session_keys: set[tuple[str, int]] = set()
    # The day's new visitors first, so that every visitor of a cohort has had a first visit.
    plans: list[tuple[Visitor, bool]] = [(visitor, True) for visitor in cohort(seed, day, events_per_day, time_zone)]
    live_count, live_start_us, live_end_us = live_sessions or (0, 0, 0)
    while budget > 0 or live_count > 0:
        live = budget <= 0
        if not plans:
            back = min(RETURN_WINDOW_DAYS, 1 + int(rng.expovariate(1 / 6)))
            plans.append((rng.choice(cohort(seed, day - dt.timedelta(days=back), events_per_day, time_zone)), False))
        visitor, first = plans.pop(0)
        if first:
            source, medium, campaign = visitor.first_source, visitor.first_medium, visitor.first_campaign
        else:
            source, medium, campaign = rng.choices(_SOURCES, cum_weights=_SESSION_SOURCE_CUM_WEIGHTS)[0]
        if live:
            live_count -= 1
            start_us = live_start_us + rng.randrange(0, max(1, live_end_us - live_start_us))
        else:
            start_us = day_start_us + rng.randrange(0, max(1, day_end_us - day_start_us - 3_600_000_000))
        session_id = start_us // 1_000_000
        while (visitor.pseudo_id, session_id) in used_session_keys:
            session_id += 1
        used_session_keys.add((visitor.pseudo_id, session_id))
        session = Session(visitor, session_id, day, source, medium, campaign, is_first=first, start_us=start_us)
        produced = _session_events(rng, session, 1_000 if live else budget, content_groups, currency)
        budget -= 0 if live else len(produced)
        events.extend(produced)
    events.sort(key=lambda event: event.timestamp_us)
    for previous, event in itertools.pairwise(events):
        if event.timestamp_us <= previous.timestamp_us:  # keep timestamps strictly increasing
            event.timestamp_us = previous.timestamp_us + 1
    for event in events:
        session = event.session
        session.end_us = max(session.end_us, event.timestamp_us)
    return events


def _session_events(
    rng: random.Random, session: Session, budget: int, content_groups: Sequence[str], currency: str
) -> list[Event]:
    """One session's events in time order, at most ``budget`` of them."""
    names_and_pages: list[tuple[str, tuple[str, str, str | None], dict[str, Any]]] = []
    landing = rng.choices(_PAGES, cum_weights=_PAGE_CUM_WEIGHTS)[0]
    if session.is_first:
        names_and_pages.append(("first_visit", landing, {}))
    names_and_pages.append(("session_start", landing, {}))
    page = landing
    cart: list[tuple[str, str, float, int]] = []
    lead_sent = False
    for view in range(rng.choices([1, 2, 3, 4, 6], weights=[35, 25, 20, 12, 8])[0]):
        if view:
            page = rng.choices(_PAGES, cum_weights=_PAGE_CUM_WEIGHTS)[0]
        names_and_pages.append(("page_view", page, {}))
        if rng.random() < 0.5:
            names_and_pages.append(("user_engagement", page, {"engagement_time_msec": rng.randrange(100, 60_000)}))
        if rng.random() < 0.3:
            names_and_pages.append(("scroll", page, {"percent_scrolled": 90}))
        if page[0] in _SHOP_PAGES and rng.random() < 0.5:
            item = rng.choice(_CATALOG)
            names_and_pages.append(("view_item", page, {"items": ((*item, 1),)}))
            if rng.random() < 0.4:
                cart.append((*item, rng.randint(1, 3)))
                names_and_pages.append(("add_to_cart", page, {"items": (cart[-1],)}))
        if page[0] == "/contact" and not lead_sent and rng.random() < 0.6:
            form = rng.choice(_FORMS)
            names_and_pages.append(("generate_lead", page, {"form_name": form}))
            lead_sent = True
            if rng.random() < 0.25:  # a double submit: the key event still counts once in the session
                names_and_pages.append(("generate_lead", page, {"form_name": form}))
    if cart and rng.random() < 0.5:
        revenue = round(sum(price * quantity for _, _, price, quantity in cart), 2)
        purchase: dict[str, Any] = {"items": tuple(cart), "revenue": revenue}
        if rng.random() < 0.4:
            purchase["discount_amount"] = round(revenue * 0.1, 2)
        names_and_pages.append(("purchase", page, purchase))
    events: list[Event] = []
    timestamp = session.start_us
    lead_counted = False
    for name, (path, title, group), extra in names_and_pages[:budget]:
        if name != "session_start":  # first_visit and session_start arrive together
            timestamp += 1_000_000 + int(rng.random() * 89_000_000)
        counts = name == "purchase" or (name == "generate_lead" and not lead_counted)
        lead_counted = lead_counted or name == "generate_lead"
        event = Event(
            date=session.date,
            timestamp_us=timestamp,
            name=name,
            session=session,
            page_path=path,
            page_title=title,
            content_group=group if group in content_groups else None,
            engagement_time_msec=extra.get("engagement_time_msec"),
            percent_scrolled=extra.get("percent_scrolled"),
            form_name=extra.get("form_name"),
            discount_amount=extra.get("discount_amount"),
            revenue=extra.get("revenue"),
            currency=currency if name == "purchase" else None,
            transaction_id=f"T{session.session_id}-{session.visitor.pseudo_id[-4:]}" if name == "purchase" else None,
            items=extra.get("items", ()),
            counts_as_key_event=counts,
        )
        if name == "page_view":
            if session.page_views == 0:
                session.landing_page = path
            session.page_views += 1
        session.engagement_msec += event.engagement_time_msec or 0
        session.has_key_event = session.has_key_event or counts
        session.events.append(event)
        events.append(event)
    return events


def generate_events(
    start: dt.date | str,
    days: int,
    *,
    events_per_day: int = 300,
    seed: int = 0,
    time_zone: str = "UTC",
    content_groups: Sequence[str] = ("Shop", "Blog"),
    currency: str = "EUR",
) -> list[Event]:
    """The events of ``days`` consecutive days from ``start``, in time order."""
    events: list[Event] = []
    for day in export_days(start, days):
        events.extend(
            generate_day_events(
                day,
                events_per_day=events_per_day,
                seed=seed,
                time_zone=time_zone,
                content_groups=content_groups,
                currency=currency,
            )
        )
    return events


def _param(key: str, *, string: str | None = None, integer: int | None = None, double: float | None = None) -> dict:
    return {
        "key": key,
        "value": {"string_value": string, "int_value": integer, "float_value": None, "double_value": double},
    }


def export_row(event: Event) -> dict[str, Any]:
    """The event as a row of the BigQuery export."""
    session, visitor = event.session, event.session.visitor
    params = [
        _param("page_location", string=_SHOP_URL + event.page_path),
        _param("page_title", string=event.page_title),
        _param("ga_session_id", integer=session.session_id),
    ]
    if event.content_group is not None:
        params.append(_param("content_group", string=event.content_group))
    carries_source = event.name in ("session_start", "page_view")
    if carries_source:
        params.append(_param("source", string=session.source))
        params.append(_param("medium", string=session.medium))
        params.append(_param("campaign", string=session.campaign))
    if event.engagement_time_msec is not None:
        params.append(_param("engagement_time_msec", integer=event.engagement_time_msec))
    if session.engaged and event.name not in ("first_visit", "session_start"):
        params.append(_param("session_engaged", string="1"))
    if event.percent_scrolled is not None:
        params.append(_param("percent_scrolled", integer=event.percent_scrolled))
    if event.form_name is not None:
        params.append(_param("form_name", string=event.form_name))
    ecommerce = None
    if event.name == "purchase":
        params.append(_param("value", double=event.revenue))
        params.append(_param("currency", string=event.currency))
        if event.discount_amount is not None:
            params.append(_param("discount_amount", double=event.discount_amount))
        ecommerce = {"transaction_id": event.transaction_id, "purchase_revenue": event.revenue}
    user_properties = []
    if visitor.plan is not None:
        set_at = day_bounds_us(visitor.first_visit_day)[0]
        user_properties.append(
            {
                "key": "plan",
                "value": {
                    "string_value": visitor.plan,
                    "int_value": None,
                    "float_value": None,
                    "double_value": None,
                    "set_timestamp_micros": set_at,
                },
            }
        )
    collected = None
    if carries_source and session.source != "(direct)":
        collected = {
            "manual_source": session.source,
            "manual_medium": session.medium,
            "manual_campaign_name": session.campaign,
            "gclid": f"Cj0K{session.session_id}" if session.medium == "cpc" and session.source == "google" else None,
        }
    return {
        "event_date": f"{event.date:%Y%m%d}",
        "event_timestamp": event.timestamp_us,
        "event_name": event.name,
        "event_params": params,
        "user_pseudo_id": visitor.pseudo_id,
        "user_id": visitor.user_id,
        "user_properties": user_properties,
        "device": {"category": visitor.device_category, "operating_system": visitor.operating_system},
        "geo": {"country": visitor.country, "city": visitor.city},
        "traffic_source": {
            "source": visitor.first_source,
            "medium": visitor.first_medium,
            "name": visitor.first_campaign,
        },
        "collected_traffic_source": collected,
        "ecommerce": ecommerce,
        "items": [
            {"item_id": item_id, "item_name": name, "price": price, "quantity": quantity}
            for item_id, name, price, quantity in event.items
        ],
    }


def generate_day(
    day: dt.date | str, *, events_per_day: int = 300, seed: int = 0, time_zone: str = "UTC"
) -> list[dict[str, Any]]:
    """The rows of one daily shard, ordered by ``event_timestamp`` (strictly increasing)."""
    events = generate_day_events(day, events_per_day=events_per_day, seed=seed, time_zone=time_zone)
    return [export_row(event) for event in events]


def generate_export(
    start: dt.date | str,
    days: int,
    *,
    events_per_day: int = 300,
    seed: int = 0,
    prefix: str = "events_",
    time_zone: str = "UTC",
) -> dict[str, list[dict[str, Any]]]:
    """``{shard name: rows}`` for ``days`` consecutive days from ``start``."""
    return {
        shard_name(day, prefix): generate_day(day, events_per_day=events_per_day, seed=seed, time_zone=time_zone)
        for day in export_days(start, days)
    }


def export_rows_by_shard(events: Sequence[Event], prefix: str = "events_") -> dict[str, list[dict[str, Any]]]:
    """Already generated events (a property's, say) as ``{shard name: rows}`` of the export."""
    shards: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        shards.setdefault(shard_name(event.date, prefix), []).append(export_row(event))
    return shards


def event_param(row: dict[str, Any], key: str) -> dict[str, Any] | None:
    """The ``value`` record of ``key`` in a generated row's ``event_params`` (for expected answers)."""
    return next((param["value"] for param in row["event_params"] if param["key"] == key), None)


def iter_rows(export: dict[str, list[dict[str, Any]]], prefix: str = "events_") -> Iterator[tuple[str, dict[str, Any]]]:
    """``(table suffix, row)`` over a generated export, as ``_TABLE_SUFFIX`` of ``prefix*`` sees them."""
    for name, rows in export.items():
        for row in rows:
            yield name[len(prefix) :], row
