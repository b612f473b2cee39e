"""``run_report_by_regex_cluster``: the values of one dimension grouped into named clusters.

The clusters are an ordered list of regular expressions; each value goes to the first cluster whose
pattern it matches (``re.search``: anchor with ``^`` and ``$``), and ``Other`` collects the values no
pattern matches. The values come from the full report, every page of it, never from the model's sample.

Metrics are of two kinds here. An **additive** metric (event counts, key events, revenue, durations,
custom event metrics) is the sum of its values, so a cluster's figure is the sum over its values. A
metric that counts distinct users (``totalUsers``, ``activeUsers``...), a ratio (rates, averages,
``...PerSession``) or a calculated metric is not: a user who saw two blog pages would count twice. So do
sessions over a dimension that can change within a session (``pagePath``, ``eventName``), while over a
session-scoped one (``landingPage``, ``sessionSource``, ``firstUser...``) each session has one value and
sums are exact. For those metrics GA4 is asked once per cluster, with an ``in_list`` filter on the
cluster's values (five clusters per ``batchRunReports`` request), so every figure is GA4's own.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from shared import CallContext, Extraction, Header, InvalidArguments, TableData, Tool

from . import api, report
from .filters import FILTER_SCHEMA
from .resources import settings

OTHER = "Other"
API = "analyticsdata.v1beta.runReport"
OTHER_SHARE_WARNING = 0.2  # Other holding more than this share of the first metric gets a warning
OTHER_TOP_VALUES = 5  # the largest values of Other named in that warning

# Words of a metric's name (camelCase split) that make it a ratio or a count of distinct users.
_RATIO_WORDS = frozenset({"rate", "per", "average", "ratio", "percentage"})
_DISTINCT_WORDS = frozenset({"users", "purchasers", "dau", "wau", "mau"})
_RATIO_METRICS = frozenset({"returnOnAdSpend"})
# Dimensions with one value per session: a count of sessions is additive over their values.
_SESSION_SCOPED_PREFIXES = ("session", "landingPage", "firstUser")
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def additive(metric: str, dimension: str) -> bool:
    """Whether ``metric`` of a set of ``dimension`` values is the sum of the values' figures."""
    if metric.startswith("calcMetric:") or metric in _RATIO_METRICS:
        return False
    if metric.startswith(("customEvent:", "keyEvents:")):
        return True
    words = {w.lower() for w in _WORD.findall(metric)}
    if words & (_RATIO_WORDS | _DISTINCT_WORDS):
        return False
    if "sessions" in words:
        return dimension.startswith(_SESSION_SCOPED_PREFIXES)
    return True


# -- the request ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Cluster:
    name: str
    pattern: re.Pattern[str] | None  # None: Other


def clusters_from(raw_clusters: Sequence[Mapping[str, Any]]) -> list[Cluster]:
    """The clusters asked for, compiled, then Other; a pattern that does not compile names its cluster."""
    if not raw_clusters:
        raise InvalidArguments('clusters is empty. Give at least one, e.g. [{"name": "Blog", "pattern": "^/blog/"}].')
    clusters: list[Cluster] = []
    for raw in raw_clusters:
        name, pattern = str(raw.get("name") or "").strip(), str(raw.get("pattern") or "")
        if not name:
            raise InvalidArguments(f"A cluster has no name (pattern '{pattern}'). Give each cluster a name.")
        if name.casefold() == OTHER.casefold():
            raise InvalidArguments(
                f"Cluster name '{name}' is reserved: {OTHER} collects the values no pattern matches. Rename it."
            )
        if any(c.name == name for c in clusters):
            raise InvalidArguments(f"Two clusters are named '{name}'. Give each cluster its own name.")
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise InvalidArguments(
                f"Cluster '{name}': the pattern '{pattern}' is not a valid regular expression ({exc}). Fix it: "
                "patterns are Python regular expressions matched anywhere in the value (anchor them with ^ and $)."
            ) from None
        clusters.append(Cluster(name, compiled))
    return [*clusters, Cluster(OTHER, None)]


def assign(clusters: Sequence[Cluster], value: str) -> int:
    """The index of the first cluster whose pattern ``value`` matches; Other's (the last) when none does."""
    for index, cluster in enumerate(clusters):
        if cluster.pattern is None or cluster.pattern.search(value):
            return index
    raise AssertionError("Other, the last cluster, takes every value")


def _in_list(dimension: str, values: Sequence[str], also: dict[str, Any] | None) -> dict[str, Any]:
    condition = {
        "filter": {"field_name": dimension, "in_list_filter": {"values": list(values), "case_sensitive": True}}
    }
    return condition if also is None else {"and_group": {"expressions": [also, condition]}}


# -- the computation -----------------------------------------------------------------------------------
@dataclass
class ClusterRow:
    """One cluster (on one day with by_date): its metrics and the distinct values that went into it."""

    metrics: list[Any]
    values: set[str] = field(default_factory=set)


@dataclass
class Clustered:
    rows: dict[tuple[int, dt.date | None], ClusterRow]
    first: api.Report  # the full list's first page (rows dropped): names, types, metadata, totals
    distinct_values: list[set[str]]  # per cluster, over the whole window
    other_values: dict[str, Any]  # Other's values with their first metric, for the warning
    quota: dict[str, Any] | None
    requests: int
    asked_per_cluster: list[str]


def cluster_values(
    config: api.Settings,
    property_id: str,
    checked: report.Checked,
    clusters: Sequence[Cluster],
    by_date: bool,
    cancelled: threading.Event,
) -> Clustered:
    """Read every value of the dimension (per date with ``by_date``), group them, sum the additive
    metrics, and ask GA4 per cluster for the others."""
    dimension, metrics = checked.dimensions[0], checked.metrics
    memo: dict[str, int] = {}
    rows: dict[tuple[int, dt.date | None], ClusterRow] = {}
    distinct: list[set[str]] = [set() for _ in clusters]
    other_values: dict[str, Any] = {}
    other = len(clusters) - 1
    first: api.Report | None = None
    quota: dict[str, Any] | None = None
    requests = 0
    for page in report.pages(config, checked.request, cancelled=cancelled):
        requests += 1
        quota = page.property_quota or quota
        convert = report.row_converter(page.dimension_names, page.metric_types)
        width = len(page.dimension_names)
        for raw in page.rows:
            value = raw[0]
            typed = convert(raw)
            index = memo.get(value)
            if index is None:
                index = memo[value] = assign(clusters, value)
            figures = typed[width:]
            row = rows.get((index, typed[1] if by_date else None))
            if row is None:
                row = rows[(index, typed[1] if by_date else None)] = ClusterRow([0] * len(figures))
            row.metrics = [a + (b or 0) for a, b in zip(row.metrics, figures, strict=True)]  # None: unparsable
            row.values.add(value)
            distinct[index].add(value)
            if index == other:
                other_values[value] = other_values.get(value, 0) + figures[0]
        if first is None:
            first = page
        page.rows = []
    assert first is not None  # pages() yields at least one page

    per_cluster = [m for m in metrics if not additive(m, dimension)]
    asked = [index for index, values in enumerate(distinct) if values]
    if per_cluster and asked:
        slots = [metrics.index(m) for m in per_cluster]
        types = [first.metric_types[i] for i in slots]
        base = {
            key: value
            for key, value in checked.request.items()
            if key not in ("dimension_filter", "metric_aggregations")
        }
        base["dimensions"] = [{"name": "date"}] if by_date else []
        base["metrics"] = [{"name": m} for m in per_cluster]
        also = checked.request.get("dimension_filter")
        bodies = [{**base, "dimension_filter": _in_list(dimension, sorted(distinct[i]), also)} for i in asked]
        answers = api.batch_run_reports(config, property_id, bodies)
        requests += -(-len(bodies) // api.BATCH_REPORTS)
        converter = report.row_converter(["date"] if by_date else [], types)
        for index, answer in zip(asked, answers, strict=True):
            quota = answer.property_quota or quota
            found: dict[dt.date | None, list[Any]] = {}
            for raw in answer.rows:
                typed = converter(raw)
                found[typed[0] if by_date else None] = typed[1:] if by_date else typed
            for (cluster, day), row in rows.items():
                if cluster == index:
                    per_day = found.get(day)  # no row: GA4 leaves out rows whose metrics are all zero
                    for slot, position in enumerate(slots):
                        row.metrics[position] = per_day[slot] if per_day is not None else 0
    return Clustered(rows, first, distinct, other_values, quota, requests, per_cluster)


# -- the tool ------------------------------------------------------------------------------------------
async def run_report_by_regex_cluster(arguments: dict[str, Any], ctx: CallContext) -> Extraction:
    property_id = ctx.require_resource().id
    config = settings(ctx)
    clusters = clusters_from(arguments.get("clusters") or [])
    by_date = arguments.get("by_date") is True
    ranges = report.date_ranges(arguments, ctx.today)
    asked = {
        "metrics": arguments.get("metrics") or [],
        "dimensions": [arguments.get("dimension", ""), *(["date"] if by_date else [])],
        "dimension_filter": arguments.get("dimension_filter"),
    }

    def pull() -> tuple[TableData, report.Checked, Clustered]:
        checked = report.build_request(config, property_id, asked, ranges, None)
        clustered = cluster_values(config, property_id, checked, clusters, by_date, ctx.cancelled)
        first = clustered.first
        zone = first.metadata.get("timeZone")
        writer = ctx.table(
            columns=_columns(checked, first, str(zone) if zone else None), title=_title(property_id, checked, ranges)
        )
        writer.pages = clustered.requests
        if by_date:
            for (index, day), row in sorted(clustered.rows.items(), key=lambda item: (item[0][0], item[0][1])):
                writer.append([clusters[index].name, day, *row.metrics, len(row.values)])
        else:  # one row per cluster, in their order, the empty ones too
            for index, cluster in enumerate(clusters):
                found = clustered.rows.get((index, None))
                if found is None:
                    empty = [None if m in clustered.asked_per_cluster else 0 for m in checked.metrics]
                    writer.append([cluster.name, *empty, 0])
                else:
                    writer.append([cluster.name, *found.metrics, len(found.values)])
        return writer.finish(), checked, clustered

    table, checked, clustered = await ctx.run_blocking(pull)
    first = clustered.first
    typed = report.typed_totals(first)
    totals: dict[str, Any] = dict(zip(checked.metrics, typed[0], strict=False)) if typed else {}
    totals["distinct_values"] = sum(len(values) for values in clustered.distinct_values)
    warnings = [
        *checked.warnings,
        *_cluster_warnings(clusters, checked, clustered, totals),
        *report.response_warnings(first.metadata),
        *report.quota_warnings(clustered.quota),
    ]
    dimension = checked.dimensions[0]
    applied: dict[str, Any] = {
        "dimension": dimension,
        "clusters": [{"name": c.name, "pattern": c.pattern.pattern} for c in clusters if c.pattern],
        "metrics": checked.metrics,
        "by_date": by_date,
        "start_date": ranges.start.isoformat(),
        "end_date": ranges.end.isoformat(),
    }
    quota = report.quota_extra(clustered.quota)
    extra: dict[str, Any] = {"api_requests": clustered.requests, "asked_per_cluster": clustered.asked_per_cluster}
    if quota:
        extra["quota"] = quota
    source: dict[str, Any] = {"property": f"properties/{property_id}", "api": API, "pages": clustered.requests}
    if clustered.quota is not None:
        source["property_quota"] = clustered.quota
    return Extraction(
        tables=[table],
        description=_description(property_id, clusters, checked, clustered, ranges, by_date, arguments),
        dates=[ranges.start.isoformat(), ranges.end.isoformat()],
        title=_title(property_id, checked, ranges),
        totals=totals,
        extra=extra,
        warnings=warnings,
        source=source,
        applied_arguments=applied,
    )


def _columns(checked: report.Checked, first: api.Report, zone: str | None) -> list[Header]:
    dimension = checked.dimensions[0]
    return [
        {"name": "cluster", "type": "string", "role": "dimension", "description": f"Cluster of {dimension} values"},
        *report.headers(checked.dimensions[1:], first.metric_names, first.metric_types, zone),
        {
            "name": "distinct_values",
            "type": "integer",
            "role": "metric",
            "description": f"Distinct {dimension} values in the cluster",
        },
    ]


def _title(property_id: str, checked: report.Checked, ranges: report.Ranges) -> str:
    return f"GA4 {property_id} · {checked.dimensions[0]} clusters · {ranges.start}→{ranges.end}"


def _description(
    property_id: str,
    clusters: Sequence[Cluster],
    checked: report.Checked,
    clustered: Clustered,
    ranges: report.Ranges,
    by_date: bool,
    arguments: Mapping[str, Any],
) -> str:
    rules = "; ".join(f"{c.name} = /{c.pattern.pattern}/" for c in clusters if c.pattern)
    text = (
        f"GA4 property {property_id}, {ranges.start} to {ranges.end}: every {checked.dimensions[0]} value (runReport, "
        f"all pages) grouped by the first matching regular expression ({rules}; {OTHER}: no match). "
        f"Metrics: {', '.join(checked.metrics)}, distinct_values"
    )
    asked = clustered.asked_per_cluster
    text += f" ({', '.join(asked)} asked per cluster with batchRunReports)." if asked else " (summed per cluster)."
    text += f" Dimensions: cluster{', date' if by_date else ''}."
    if arguments.get("dimension_filter"):
        text += f" Filter: dimension_filter {json.dumps(arguments['dimension_filter'], separators=(',', ':'))}."
    return text


def _cluster_warnings(
    clusters: Sequence[Cluster], checked: report.Checked, clustered: Clustered, totals: Mapping[str, Any]
) -> list[str]:
    dimension, first_metric = checked.dimensions[0], checked.metrics[0]
    out = [
        f"Cluster '{cluster.name}' matched no {dimension} value: check its pattern, or an earlier cluster took them."
        for cluster, values in zip(clusters[:-1], clustered.distinct_values, strict=False)
        if not values
    ]
    total = totals.get(first_metric)
    other = sum(clustered.other_values.values())
    if isinstance(total, (int, float)) and total > 0 and other / total > OTHER_SHARE_WARNING:
        largest = sorted(clustered.other_values.items(), key=lambda item: (-item[1], item[0]))[:OTHER_TOP_VALUES]
        listed = ", ".join(f"{value} ({figure:g})" for value, figure in largest)
        out.append(
            f"{OTHER} holds {other / total:.0%} of {first_metric} ({len(clustered.other_values)} {dimension} values). "
            f"Its largest: {listed}. Add clusters for them if they matter."
        )
    return out


CLUSTER_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": f"The cluster's name (not '{OTHER}', which is reserved)."},
        "pattern": {"type": "string", "description": "Python regular expression, matched anywhere in the value."},
    },
    "required": ["name", "pattern"],
    "additionalProperties": False,
}

RUN_REPORT_BY_REGEX_CLUSTER = Tool(
    name="run_report_by_regex_cluster",
    title="Report by regex clusters",
    description=(
        "Groups every value of one dimension (pagePath, landingPage, eventName, sessionSource...) into named "
        "clusters given as ordered regular expressions: the first match wins and Other collects the rest. Returns "
        "one row per cluster (per cluster and date with by_date) with the metrics and distinct_values, the number of "
        "values matched. Computed from the full list of values, every page. Counts and sums are added up per "
        "cluster; users, rates, averages and sessions over a dimension that changes within a session are asked to "
        "GA4 per cluster (in_list filter on the cluster's values), so no one is counted twice."
    ),
    kind="extraction",
    run=run_report_by_regex_cluster,
    input_schema={
        "properties": {
            "dimension": {"type": "string", "description": "The dimension whose values are clustered."},
            "clusters": {
                "type": "array",
                "items": CLUSTER_SCHEMA,
                "minItems": 1,
                "description": 'In order, e.g. [{"name": "Blog", "pattern": "^/blog/"}, {"name": "Shop", "pattern": '
                '"^/(shoes|bags)"}]. A value goes to the first cluster it matches; ' + f"{OTHER} takes the rest.",
            },
            "metrics": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "description": "GA4 metric API names, e.g. sessions, screenPageViews, totalUsers, keyEvents:purchase.",
            },
            "by_date": {"type": "boolean", "default": False, "description": "One row per cluster and date."},
            "dimension_filter": FILTER_SCHEMA,
            "start_date": {"type": "string", "x-acp-date": "start", "description": report.DATE_DESCRIPTION},
            "end_date": {"type": "string", "x-acp-date": "end", "description": report.DATE_DESCRIPTION},
        },
        "required": ["dimension", "clusters", "metrics"],
    },
    idempotent=True,
)
