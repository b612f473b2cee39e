"""``resource_id`` of the BigQuery connector: ``<project>[.<dataset>[.<table>]]``.

Reasonable variants are normalized (spec 6.2): backticks, ``/`` as a separator, the legacy
``project:dataset.table`` form, domain-scoped projects (``example.com:project``) and
wildcard tables (``events_*``).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from typing import Any

from shared import CallContext, InvalidArguments, ResourceNotFound, ResourceRef, ResourceSummary, google_auth

from . import api

LEVELS = ("project", "dataset", "table")
_PROJECT = re.compile(r"(?:[a-z0-9][a-z0-9.-]*[a-z0-9]:)?[a-z0-9][a-z0-9-]{0,62}")
_DATASET = re.compile(r"\w{1,1024}")
_TABLE = re.compile(r"[\w -]{1,1024}\*?|\*")
_SHARD = re.compile(r"(?P<prefix>.+_)(?P<day>\d{8})")
_PROJECTS_LISTED = 50
_PROJECTS_EXPANDED = 10  # projects whose datasets are listed among the suggestions
_DATASETS_LISTED = 200


def normalize(text: str, credentials: dict[str, Any] | None = None) -> ResourceRef:
    cleaned = text.strip().replace("`", "").replace("/", ".")
    if ":" in cleaned:
        before, _, after = cleaned.rpartition(":")
        head, *rest = after.split(".")
        # "example.com:project…" is a domain-scoped project; "project:dataset.table" the legacy form,
        # also of a domain-scoped project ("example.com:project:dataset.table"), hence the last colon.
        domain_scoped = "." in before and ":" not in before
        parts = [f"{before}:{head}", *rest] if domain_scoped else [before, head, *rest]
    else:
        parts = cleaned.split(".")
    valid = (
        1 <= len(parts) <= 3
        and _PROJECT.fullmatch(parts[0]) is not None
        and (len(parts) < 2 or _DATASET.fullmatch(parts[1]) is not None)
        and (len(parts) < 3 or _TABLE.fullmatch(parts[2]) is not None)
    )
    if not valid:
        raise InvalidArguments(
            f"Invalid resource_id '{text[:120]}'. Use <project>[.<dataset>[.<table>]], for example my-project, "
            "my-project.analytics_123 or my-project.analytics_123.events_*. Call autocontext without arguments "
            "to list them."
        )
    return ResourceRef(id=".".join(parts), level=LEVELS[len(parts) - 1], parts=tuple(parts))


def shard_prefix(table_id: str) -> str | None:
    """``name_`` of a date shard ``name_YYYYMMDD`` (a valid date), else None."""
    match = _SHARD.fullmatch(table_id)
    return match["prefix"] if match and _is_day(match["day"]) else None


def _is_day(text: str) -> bool:
    try:
        dt.date(int(text[:4]), int(text[4:6]), int(text[6:]))
    except ValueError:
        return False
    return True


def date_shards(table_ids: Iterable[str], wildcard: str) -> list[str]:
    """The date shards a wildcard names (``events_*``, or ``events_2026*``), oldest first.

    BigQuery's ``events_*`` also matches ``events_intraday_YYYYMMDD`` by prefix; those are another
    group, so a shard counts only when its own ``name_`` is within the wildcard's prefix.
    """
    prefix = wildcard.removesuffix("*")

    def named(table_id: str) -> bool:
        own = shard_prefix(table_id)
        return own is not None and table_id.startswith(prefix) and len(own) <= len(prefix)

    return sorted(filter(named, table_ids))


def default_project(ctx: CallContext) -> str | None:
    """Where jobs run when nothing else says: billing_project, else the service account's project."""
    billing = ctx.config.get("billing_project")
    if billing:
        return str(billing)
    credentials = ctx.require_credentials()
    if credentials.get("type") == "service_account":
        project = google_auth.service_account_info(credentials).get("project_id")
        return str(project) if project else None
    return None


def api_settings(ctx: CallContext, project: str | None = None) -> api.Settings:
    """How to reach BigQuery in this call; jobs are billed to ``billing_project`` when it is set."""
    billing = ctx.config.get("billing_project")
    chosen = str(billing) if billing else project or default_project(ctx)
    # The client needs a project even to list projects; that call never uses it.
    location = ctx.config.get("location") or None
    return api.Settings(credentials=ctx.require_credentials(), project=chosen or "acp-unset", location=location)


async def check(ref: ResourceRef, ctx: CallContext) -> None:
    """The project, dataset or table exists and the credentials can see it."""
    settings = api_settings(ctx, ref.parts[0])
    project = ref.parts[0]
    if ref.level == "project":
        await ctx.run_blocking(lambda: api.list_datasets(settings, project, 1))
    elif ref.level == "dataset":
        await ctx.run_blocking(lambda: api.get_dataset(settings, project, ref.parts[1]))
    elif ref.parts[2].endswith("*"):
        tables = await ctx.run_blocking(lambda: api.list_tables(settings, project, ref.parts[1], 10_000))
        if not date_shards((t.table_id for t in tables), ref.parts[2]):
            raise ResourceNotFound(
                f"No date shard (name_YYYYMMDD) in {project}.{ref.parts[1]} matches {ref.parts[2]}. Call autocontext "
                "with the dataset to list its tables."
            )
    else:
        await ctx.run_blocking(lambda: api.get_table(settings, project, ref.parts[1], ref.parts[2]))


async def list_resources(ctx: CallContext) -> list[ResourceSummary]:
    """Projects the credentials can list, then the datasets of the first few."""
    settings = api_settings(ctx)

    def read() -> list[ResourceSummary]:
        projects = api.list_projects(settings, _PROJECTS_LISTED)
        if not projects and settings.project != "acp-unset":
            projects = [(settings.project, None)]
        out: list[ResourceSummary] = [
            {"resource_id": project, "name": name or project, "group": "Projects"} for project, name in projects
        ]
        for project, _ in projects[:_PROJECTS_EXPANDED]:
            for dataset in api.list_datasets(settings, project, _DATASETS_LISTED):
                entry: ResourceSummary = {
                    "resource_id": f"{project}.{dataset['dataset']}",
                    "name": dataset["dataset"],
                    "group": project,
                }
                if dataset.get("location"):
                    entry["description"] = f"Dataset in {dataset['location']}"
                out.append(entry)
        return out

    return await ctx.run_blocking(read)
