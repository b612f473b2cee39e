"""Helpers for the GA4 tests (the fixtures are in tests/connectors/ga4/conftest.py): the fake's main property,
credentials it accepts, the server's environment, and ground truth aggregated from the fake's events in
plain loops, never with the fake's report engine nor the connector's code.

A key function maps one event to the row key it counts under (a tuple, or any hashable), or to None
to leave the event out: ``sessions_by(fake, PROPERTY, lambda e: (e.session.channel,), start, end)``.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Hashable, Iterator
from typing import Any

from fakes.ga4 import FakeGA4
from fakes.ga4_export import Event, default_channel_group

PROPERTY = "123456789"  # ikaue.com, Europe/Madrid, EUR
BLOG = "222333444"  # America/New_York, USD
STORE = "987654321"  # Asia/Tokyo, JPY
HIDDEN = "555666777"  # exists, but the credentials cannot see it
RETRY_S = "0.5"  # a fault that never ends gives up within half a second
ANALYTICS_READONLY = "https://www.googleapis.com/auth/analytics.readonly"

KeyFunction = Callable[[Event], Hashable | None]


def service_account(fake: FakeGA4, project: str = "ga4-tests") -> dict[str, Any]:
    return {"type": "service_account", "service_account": json.dumps(fake.oauth.service_account_info(project))}


def ga4_env(fake: FakeGA4) -> dict[str, str]:
    return {
        "ACP_GA4_DATA_ENDPOINT": fake.data_url,
        "ACP_GA4_ADMIN_ENDPOINT": fake.admin_url,
        "ACP_GOOGLE_TOKEN_URI": fake.oauth.token_uri,
        "ACP_GA4_RETRY_S": RETRY_S,
    }


# -- ground truth ---------------------------------------------------------------------------------


def events_between(fake: FakeGA4, property_id: str, start: dt.date, end: dt.date) -> list[Event]:
    """The property's events whose day (property time zone) is within [start, end]."""
    return [event for event in fake.events(property_id) if start <= event.date <= end]


def _keyed(
    fake: FakeGA4, property_id: str, key: KeyFunction, start: dt.date, end: dt.date
) -> Iterator[tuple[Hashable, Event]]:
    for event in events_between(fake, property_id, start, end):
        row = key(event)
        if row is not None:
            yield row, event


def sessions_by(fake: FakeGA4, property_id: str, key: KeyFunction, start: dt.date, end: dt.date) -> dict[Hashable, int]:
    """Distinct (user_pseudo_id, ga_session_id) per key."""
    seen: dict[Hashable, set[tuple[str, int]]] = {}
    for row, event in _keyed(fake, property_id, key, start, end):
        seen.setdefault(row, set()).add((event.user, event.session.session_id))
    return {row: len(sessions) for row, sessions in seen.items()}


def users_by(fake: FakeGA4, property_id: str, key: KeyFunction, start: dt.date, end: dt.date) -> dict[Hashable, int]:
    """Distinct user_pseudo_id per key (``totalUsers``)."""
    seen: dict[Hashable, set[str]] = {}
    for row, event in _keyed(fake, property_id, key, start, end):
        seen.setdefault(row, set()).add(event.user)
    return {row: len(users) for row, users in seen.items()}


def event_counts_by(
    fake: FakeGA4, property_id: str, key: KeyFunction, start: dt.date, end: dt.date
) -> dict[Hashable, int]:
    """Events per key (``eventCount``; with a key that keeps page_view only, ``screenPageViews``)."""
    counts: dict[Hashable, int] = {}
    for row, _ in _keyed(fake, property_id, key, start, end):
        counts[row] = counts.get(row, 0) + 1
    return counts


def revenue_by(
    fake: FakeGA4, property_id: str, key: KeyFunction, start: dt.date, end: dt.date
) -> dict[Hashable, float]:
    """Purchase value per key, in the property's currency (``purchaseRevenue``/``totalRevenue``)."""
    sums: dict[Hashable, float] = {}
    for row, event in _keyed(fake, property_id, key, start, end):
        if event.name == "purchase":
            sums[row] = sums.get(row, 0.0) + (event.revenue or 0.0)
    return sums


def key_events_by(
    fake: FakeGA4, property_id: str, key: KeyFunction, start: dt.date, end: dt.date, event_name: str | None = None
) -> dict[Hashable, int]:
    """Key events per key: every purchase, and the first generate_lead of each session (ONCE_PER_SESSION)."""
    counted_leads: set[tuple[str, int]] = set()
    counts: dict[Hashable, int] = {}
    # The first lead of a session may fall outside [start, end] only if the session spans midnight, which
    # generated sessions never do; so walking the whole property in time order is exact.
    first_lead_events: set[int] = set()
    for event in fake.events(property_id):
        if event.name == "generate_lead" and (event.user, event.session.session_id) not in counted_leads:
            counted_leads.add((event.user, event.session.session_id))
            first_lead_events.add(id(event))
    for row, event in _keyed(fake, property_id, key, start, end):
        if event_name is not None and event.name != event_name:
            continue
        if event.name == "purchase" or id(event) in first_lead_events:
            counts[row] = counts.get(row, 0) + 1
    return counts


def first_user_channel(event: Event) -> str:
    """``firstUserDefaultChannelGroup`` of the event's user, from the export's ``traffic_source``."""
    return default_channel_group(event.visitor.first_source, event.visitor.first_medium)


def attributed_channel(fake: FakeGA4, property_id: str) -> Callable[[Event], str]:
    """``defaultChannelGroup`` of an event: the channel of the user's last non-direct session started at or
    before the event's session and within 90 days before it, else Direct."""
    sessions_of_user: dict[str, list[Any]] = {}
    for session in fake.sessions(property_id):
        sessions_of_user.setdefault(session.user, []).append(session)

    def channel(event: Event) -> str:
        own = event.session
        best = None
        for candidate in sessions_of_user[event.user]:
            too_old = own.start_us - candidate.start_us > 90 * 86_400 * 1_000_000
            if candidate.source == "(direct)" or candidate.start_us > own.start_us or too_old:
                continue
            if best is None or candidate.start_us > best.start_us:
                best = candidate
        return "Direct" if best is None else default_channel_group(best.source, best.medium)

    return channel
