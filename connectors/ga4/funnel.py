"""``run_funnel_report``: users through a sequence of steps (Data API v1alpha ``runFunnelReport``).

A step is an event, optionally narrowed by a condition on its parameters written like the report
filters (``{"field": "form_name", "match": "exact", "value": "contact"}``: ``field`` is an event
parameter). The answer has two sub-reports, each returned as its own typed table of one multi-table
extraction (spec 8.2.1): ``funnel_table`` (per step, and per breakdown value: active users, completion
and abandonment) and ``funnel_visualization`` (users per step, as GA4 draws the funnel).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from shared import CallContext, Extraction, InvalidArguments, TableData, Tool

from . import api, names, report
from .filters import FILTER_SCHEMA, to_filter_expression
from .resources import property_settings, settings

API = "analyticsdata.v1alpha.runFunnelReport"

TABLES = (
    ("funnel_table", "funnelTable", "Funnel table", "per step (and breakdown value): users, completion, abandonment"),
    ("funnel_visualization", "funnelVisualization", "Funnel visualization", "users per step, as GA4 draws the funnel"),
)
MAX_STEPS = 10
DEFAULT_BREAKDOWN_LIMIT = 5
MAX_BREAKDOWN_LIMIT = 15


@dataclass
class Step:
    name: str
    event: str
    filter: Any  # the step's filter as written (FILTER_SCHEMA), or None

    def body(self, dimensions: Collection[str]) -> dict[str, Any]:
        """The ``FunnelStep``: the event, and its filter's conditions on dimensions as ``funnelFieldFilter``s
        beside it, those on event parameters inside the event filter."""
        event: dict[str, Any] = {"event_name": self.event}
        on_fields: list[dict[str, Any]] = []
        expression = to_filter_expression(self.filter)
        if expression is not None:
            on_parameters: list[dict[str, Any]] = []
            items = expression["and_group"]["expressions"] if "and_group" in expression else [expression]
            for item in items:
                fields = set(_leaf_fields(item))
                if fields <= set(dimensions):
                    on_fields.append(_funnel_expression(item, "funnel_field_filter", self.name))
                elif fields.isdisjoint(dimensions):
                    on_parameters.append(_funnel_expression(item, "funnel_parameter_filter", self.name))
                else:
                    raise InvalidArguments(
                        f"Step '{self.name}': a group of its filter mixes dimensions and event parameters "
                        f"({', '.join(sorted(fields))}). Put dimension conditions and parameter conditions in "
                        "separate items of the filter list."
                    )
            if on_parameters:
                event["funnel_parameter_filter_expression"] = _and(on_parameters)
        return {"name": self.name, "filter_expression": _and([{"funnel_event_filter": event}, *on_fields])}


def _and(expressions: list[dict[str, Any]]) -> dict[str, Any]:
    return expressions[0] if len(expressions) == 1 else {"and_group": {"expressions": expressions}}


def _leaf_fields(expression: Mapping[str, Any]) -> Iterator[str]:
    for group in ("and_group", "or_group"):
        if group in expression:
            for member in expression[group]["expressions"]:
                yield from _leaf_fields(member)
    if "not_expression" in expression:
        yield from _leaf_fields(expression["not_expression"])
    if "filter" in expression:
        yield expression["filter"]["field_name"]


def _funnel_expression(expression: Mapping[str, Any], leaf_key: str, step: str) -> dict[str, Any]:
    """A report ``FilterExpression`` as a ``FunnelFilterExpression`` (leaves ``funnel_field_filter``) or a
    ``FunnelParameterFilterExpression`` (leaves ``funnel_parameter_filter``, the field an event parameter)."""
    for group in ("and_group", "or_group"):
        if group in expression:
            members = [_funnel_expression(e, leaf_key, step) for e in expression[group]["expressions"]]
            return {group: {"expressions": members}}
    if "not_expression" in expression:
        return {"not_expression": _funnel_expression(expression["not_expression"], leaf_key, step)}
    leaf = dict(expression["filter"])
    if "empty_filter" in leaf:
        raise InvalidArguments(
            f"Step '{step}': a funnel step cannot test that '{leaf['field_name']}' is empty. Use exact, contains, "
            "in_list or a numeric comparison."
        )
    if leaf_key == "funnel_parameter_filter":
        leaf["event_parameter_name"] = leaf.pop("field_name")
    return {leaf_key: leaf}


def steps_from(arguments: Mapping[str, Any]) -> list[Step]:
    raw_steps = arguments.get("steps") or []
    if not raw_steps:
        raise InvalidArguments(
            'steps is empty. Give the funnel\'s steps in order, e.g. [{"name": "Product", "event": "view_item"}, '
            '{"name": "Cart", "event": "add_to_cart"}, {"name": "Purchase", "event": "purchase"}].'
        )
    steps = []
    for index, raw in enumerate(raw_steps, start=1):
        event = str(raw.get("event") or "").strip()
        name = str(raw.get("name") or event).strip()
        if not event:
            raise InvalidArguments(f"Step {index} ('{name}') has no event. Give its event name, e.g. page_view.")
        steps.append(Step(name, event, raw.get("filter")))
    return steps


def _values(row: Mapping[str, Any], key: str) -> list[str]:
    return [cell.get("value", "") for cell in row.get(key, [])]  # proto3 JSON leaves "" out


async def run_funnel_report(arguments: dict[str, Any], ctx: CallContext) -> Extraction:
    property_id = ctx.require_resource().id
    config = settings(ctx)
    steps = steps_from(arguments)
    open_funnel = arguments.get("open_funnel") is True
    breakdown_limit = int(arguments.get("breakdown_limit") or DEFAULT_BREAKDOWN_LIMIT)
    ranges = report.date_ranges(arguments, ctx.today)
    dates = [ranges.start.isoformat(), ranges.end.isoformat()]
    asked = {
        "metrics": ["activeUsers"],  # what the funnel counts; only the breakdown and the filter are checked here
        "dimensions": [arguments["breakdown"]] if arguments.get("breakdown") else [],
        "dimension_filter": arguments.get("dimension_filter"),
    }

    def pull() -> tuple[list[TableData], dict[str, Any], report.Checked]:
        checked = report.build_request(config, property_id, asked, ranges, None)
        dimensions = names.catalog(config, property_id).dimensions.api_names
        request: dict[str, Any] = {
            "property": f"properties/{property_id}",
            "date_ranges": checked.request["date_ranges"],
            "funnel": {"is_open_funnel": open_funnel, "steps": [step.body(dimensions) for step in steps]},
            "return_property_quota": True,
        }
        if checked.dimensions:
            request["funnel_breakdown"] = {
                "breakdown_dimension": {"name": checked.dimensions[0]},
                "limit": breakdown_limit,
            }
        if "dimension_filter" in checked.request:
            request["dimension_filter"] = checked.request["dimension_filter"]
        answer = api.run_funnel_report(config, request)
        zone = property_settings(config, property_id).get("timeZone")
        tables = []
        for name, key, title, what in TABLES:
            sub = answer.get(key) or {}
            dimension_names = [h.get("name", "") for h in sub.get("dimensionHeaders", [])]
            metric_names = [h.get("name", "") for h in sub.get("metricHeaders", [])]
            metric_types = [h.get("type", "TYPE_FLOAT") for h in sub.get("metricHeaders", [])]
            writer = ctx.table(
                name,
                columns=report.headers(dimension_names, metric_names, metric_types, zone),
                title=f"{title} · GA4 {property_id} · {ranges.start}→{ranges.end}",
                description=f"GA4 property {property_id}, {ranges.start} to {ranges.end}, funnel of {len(steps)} "
                f"steps: {what}.",
                dates=dates,
                primary=name == "funnel_table",
            )
            convert = report.row_converter(dimension_names, metric_types)
            writer.extend(
                [convert([*_values(r, "dimensionValues"), *_values(r, "metricValues")]) for r in sub.get("rows", [])]
            )
            tables.append(writer.finish())
        return tables, answer, checked

    tables, answer, checked = await ctx.run_blocking(pull)
    breakdown = checked.dimensions[0] if checked.dimensions else None
    property_quota = answer.get("propertyQuota")
    metadata = (answer.get("funnelTable") or {}).get("metadata") or {}
    warnings = [*checked.warnings, *report.response_warnings(metadata), *report.quota_warnings(property_quota)]
    applied: dict[str, Any] = {
        "steps": [{"name": s.name, "event": s.event} for s in steps],
        "open_funnel": open_funnel,
        "start_date": ranges.start.isoformat(),
        "end_date": ranges.end.isoformat(),
    }
    if breakdown:
        applied.update(breakdown=breakdown, breakdown_limit=breakdown_limit)
    quota = report.quota_extra(property_quota)
    source: dict[str, Any] = {"property": f"properties/{property_id}", "api": API, "pages": 1}
    if property_quota is not None:
        source["property_quota"] = property_quota
    return Extraction(
        tables=tables,
        description=_description(property_id, steps, open_funnel, breakdown, ranges, arguments),
        dates=dates,
        title=f"GA4 {property_id} · funnel · {ranges.start}→{ranges.end}",
        extra={"quota": quota} if quota else None,
        warnings=warnings,
        source=source,
        multi=True,
        applied_arguments=applied,
    )


def _description(
    property_id: str,
    steps: list[Step],
    open_funnel: bool,
    breakdown: str | None,
    ranges: report.Ranges,
    arguments: Mapping[str, Any],
) -> str:
    listed = " → ".join(f"{s.name} ({s.event}{', filtered' if s.filter else ''})" for s in steps)
    text = (
        f"GA4 property {property_id}, {ranges.start} to {ranges.end}, {'open' if open_funnel else 'closed'} funnel "
        f"report (Data API v1alpha): {listed}."
    )
    if breakdown:
        text += f" Breakdown: {breakdown}."
    if arguments.get("dimension_filter"):
        text += f" Filter: dimension_filter {json.dumps(arguments['dimension_filter'], separators=(',', ':'))}."
    return text


STEP_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "The step's label (default: the event name)."},
        "event": {"type": "string", "description": "The event that completes the step, e.g. page_view, purchase."},
        "filter": {
            **FILTER_SCHEMA,
            "description": "Optional conditions the step's event must meet, written like dimension_filter. field is "
            "a dimension (pagePath, contentGroup, customEvent:form_name...) or else an event parameter (form_name, "
            'page_location, value...), e.g. [{"field": "pagePath", "match": "begins_with", "value": "/checkout"}]. '
            "A group (any/all) holds only dimensions or only parameters.",
        },
    },
    "required": ["event"],
    "additionalProperties": False,
}

RUN_FUNNEL_REPORT = Tool(
    name="run_funnel_report",
    title="Funnel report",
    description=(
        "How many users go through a sequence of steps (events, each optionally filtered on dimensions or its "
        "parameters) and "
        "where they drop off. Closed funnel by default (users must enter at the first step); open_funnel lets them "
        "enter at any step. Optional breakdown dimension (e.g. deviceCategory). Returns two tables: funnel_table "
        "(per step: active users, completion and abandonment rates) and funnel_visualization (users per step). "
        "GA4 Data API v1alpha. Default window: the last 28 days ending yesterday."
    ),
    kind="extraction",
    run=run_funnel_report,
    input_schema={
        "properties": {
            "steps": {"type": "array", "items": STEP_SCHEMA, "minItems": 1, "maxItems": MAX_STEPS},
            "open_funnel": {"type": "boolean", "default": False},
            "breakdown": {
                "type": "string",
                "description": "A dimension that splits funnel_table, e.g. deviceCategory.",
            },
            "breakdown_limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_BREAKDOWN_LIMIT,
                "default": DEFAULT_BREAKDOWN_LIMIT,
                "description": "Breakdown values kept (the rest are grouped by GA4).",
            },
            "dimension_filter": FILTER_SCHEMA,
            "start_date": {"type": "string", "x-acp-date": "start", "description": report.DATE_DESCRIPTION},
            "end_date": {"type": "string", "x-acp-date": "end", "description": report.DATE_DESCRIPTION},
        },
        "required": ["steps"],
    },
    idempotent=True,
)
