"""resource_id normalization (spec 6.2): the variants users paste."""

from __future__ import annotations

import pytest

from connectors.bigquery.resources import normalize
from shared import InvalidArguments


@pytest.mark.parametrize(
    ("text", "canonical", "level"),
    [
        ("my-project", "my-project", "project"),
        ("my-project.analytics_123", "my-project.analytics_123", "dataset"),
        (" `my-project.analytics_123.events_*` ", "my-project.analytics_123.events_*", "table"),
        ("`my-project`.`analytics_123`.`events_20260901`", "my-project.analytics_123.events_20260901", "table"),
        ("my-project/analytics_123", "my-project.analytics_123", "dataset"),
        ("my-project:analytics_123.events", "my-project.analytics_123.events", "table"),
        ("example.com:my-project", "example.com:my-project", "project"),
        ("example.com:my-project.ds.t", "example.com:my-project.ds.t", "table"),
        ("example.com:my-project:ds.t", "example.com:my-project.ds.t", "table"),
        ("example.com:my-project:ds", "example.com:my-project.ds", "dataset"),
    ],
)
def test_reasonable_variants_are_normalized(text: str, canonical: str, level: str) -> None:
    ref = normalize(text)
    assert (ref.id, ref.level) == (canonical, level)
    assert ".".join(ref.parts) == canonical


@pytest.mark.parametrize(
    "text", ["", "a.b.c.d", "My Project", "proj.data-set", "proj..t", "proj.ds.t;DROP", "https://x/y", "a:b:c:d"]
)
def test_invalid_ids_say_the_format(text: str) -> None:
    with pytest.raises(InvalidArguments) as caught:
        normalize(text)
    assert "<project>[.<dataset>[.<table>]]" in caught.value.message
