"""Helpers for the Search Console connector tests (the fixtures are in tests/connectors/gsc/conftest.py):
the fake's properties, credentials it accepts, the server's environment, and ground truth aggregated
from the fake's facts in plain Python, never with the connector's own code.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fakes.search_console import FakeSearchConsole

from connectors.gsc.search import pacific_today

DOMAIN = "sc-domain:example.com"
PREFIX = "https://www.example.com/"
BLOG = "https://www.example.com/blog/"
UNVERIFIED = "http://example.org/"
SHOP = "https://shop.example.net/"
RETRY_S = "0.5"  # a fault that never ends gives up within half a second


def today() -> dt.date:
    """The connector's calendar (Pacific Time), which the fakes of these tests share."""
    return pacific_today()


def service_account(fake: FakeSearchConsole, project: str = "gsc-tests") -> dict[str, Any]:
    return {"type": "service_account", "service_account": json.dumps(fake.oauth.service_account_info(project))}


def gsc_env(fake: FakeSearchConsole) -> dict[str, str]:
    return {"ACP_GSC_ENDPOINT": fake.url, "ACP_GOOGLE_TOKEN_URI": fake.oauth.token_uri, "ACP_GSC_RETRY_S": RETRY_S}


# -- ground truth ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Expected:
    clicks: int
    impressions: int
    position_sum: float

    @property
    def ctr(self) -> float:
        return self.clicks / self.impressions

    @property
    def position(self) -> float:
        return self.position_sum / self.impressions


def _matches(value: str | None, operator: str, expression: str, case_sensitive: bool) -> bool:
    if value is None:
        return False
    if operator in ("includingRegex", "excludingRegex"):
        return (re.search(expression, value) is not None) == (operator == "includingRegex")
    if operator in ("contains", "notContains"):
        return (expression.lower() in value.lower()) == (operator == "contains")
    same = value == expression if case_sensitive else value.lower() == expression.lower()
    return same == (operator == "equals")


_FIELDS = {"searchAppearance": "search_appearance"}


def by_page_truth(
    fake: FakeSearchConsole,
    site: str,
    dimensions: Sequence[str],
    start: dt.date,
    end: dt.date,
    filters: Sequence[dict[str, str]] = (),
    search_type: str = "web",
) -> dict[tuple[Any, ...], Expected]:
    """Rows by page aggregation (every fact counts on its own page), keyed by the dimension values as the
    API writes them. Facts with an anonymized query count only when neither grouping nor filtering by query."""
    by_query = "query" in dimensions or any(f["dimension"] == "query" for f in filters)
    sums: dict[tuple[Any, ...], list[float]] = {}
    for fact in fake.facts(site):
        if fact.search_type != search_type or not start <= fact.date <= end:
            continue
        if by_query and fact.query is None:
            continue
        values = {name: getattr(fact, _FIELDS.get(name, name)) for name in ("query", "page", "country", "device")}
        values["searchAppearance"] = fact.search_appearance
        if not all(
            _matches(values[f["dimension"]], f["operator"], f["expression"], f["dimension"] in ("query", "page"))
            for f in filters
        ):
            continue
        key = tuple(fact.date.isoformat() if d == "date" else values[d] for d in dimensions)
        found = sums.setdefault(key, [0, 0, 0.0])
        found[0] += fact.clicks
        found[1] += fact.impressions
        found[2] += fact.position_sum
    return {key: Expected(int(c), int(i), p) for key, (c, i, p) in sums.items()}
