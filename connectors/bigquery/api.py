"""The only module that talks to ``google-cloud-bigquery`` (imported lazily, on first use).

Everything here is synchronous and runs in a worker thread (``ctx.run_blocking``). Results
are read page by page over REST (never the BigQuery Storage API, which ignores the endpoint
override and needs extra dependencies). The client's default retry keeps going for ten
minutes; here it gives up after ``ACP_BIGQUERY_RETRY_S`` seconds. The client cache, the endpoint
override, the retry deadline and the generic error rows come from :mod:`shared.google_api`; BigQuery's
own error rows close this module.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from shared import CostLimitExceeded, CredentialsInvalid, InvalidArguments, UpstreamError, google_auth
from shared.error_policy import Rule
from shared.errors import timed_out
from shared.google_api import (
    INTERNAL_ERROR,
    RATE_LIMITED,
    ClientCache,
    GoogleErrorPolicy,
    api_error,
    bounded_retry,
    endpoint_override,
    retry_deadline_s,
)

from .fields import row_decoder

SCOPES = ("https://www.googleapis.com/auth/bigquery",)
ENDPOINT_ENV = "ACP_BIGQUERY_ENDPOINT"
RETRY_ENV = "ACP_BIGQUERY_RETRY_S"
DEFAULT_RETRY_S = 30.0
HTTP_TIMEOUT_S = 60.0  # one HTTP request; a job's own duration is bounded by job_timeout_s


@dataclass(frozen=True)
class DryRun:
    """What a dry run tells before anything runs (free)."""

    total_bytes_processed: int
    accuracy: str  # PRECISE, UPPER_BOUND, LOWER_BOUND or UNKNOWN
    statement_type: str
    referenced_tables: list[str]  # "project.dataset.table"; BigQuery lists at most 50
    referenced_routines: list[str]  # "project.dataset.routine": the persistent UDFs the query calls
    schema: list[dict[str, Any]]  # the result's fields, REST shape


@dataclass
class JobOutcome:
    job_id: str
    location: str | None
    total_bytes_processed: int
    total_bytes_billed: int
    cache_hit: bool
    total_rows: int


@dataclass
class TableInfo:
    """``tables.get`` in the shape the tools and blocks use."""

    table_id: str
    kind: str
    schema: list[dict[str, Any]]
    num_rows: int | None
    num_bytes: int | None
    partitioning: dict[str, Any] | None
    clustering: list[str] | None
    description: str | None
    location: str | None
    created: str | None
    modified: str | None
    view_query: str | None = None
    require_partition_filter: bool = False


@dataclass
class TableItem:
    """One entry of ``tables.list``."""

    table_id: str
    kind: str
    partitioning: dict[str, Any] | None
    clustering: list[str] | None


@dataclass
class Settings:
    """How to reach BigQuery for one call."""

    credentials: Mapping[str, Any]
    project: str  # the project jobs run in (and are billed to)
    location: str | None = None
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)


class JobCancelled(Exception):
    """The call was cancelled while its job ran; the job was cancelled too."""


class JobTimedOut(Exception):
    """The job ran past job_timeout_s; it was cancelled."""


# -- clients -----------------------------------------------------------------------------------
_clients: ClientCache[Any] = ClientCache()


def endpoint(environ: Mapping[str, str]) -> str | None:
    """``ACP_BIGQUERY_ENDPOINT``: any ``https://`` URL, or ``http://`` on loopback only."""
    return endpoint_override(environ, ENDPOINT_ENV)


def client(settings: Settings) -> Any:
    """A cached ``bigquery.Client`` per credentials, project and endpoint (tokens stay in memory)."""
    api = endpoint(settings.environ)

    def build() -> Any:
        from google.cloud import bigquery

        return bigquery.Client(
            project=settings.project,
            credentials=google_auth.build(settings.credentials, SCOPES, settings.environ),
            client_options={"api_endpoint": api} if api else None,
        )

    return _clients.get(settings.credentials, settings.project, endpoint=api, build=build)


def retry(environ: Mapping[str, str]) -> Any:
    """The client's retry (429, 5xx, rate limits, connection errors) with a short deadline."""
    from google.cloud import bigquery

    return bounded_retry(bigquery.DEFAULT_RETRY, retry_deadline_s(environ, RETRY_ENV, DEFAULT_RETRY_S))


# -- queries -----------------------------------------------------------------------------------
def dry_run(settings: Settings, sql: str, *, default_dataset: str | None, labels: dict[str, str]) -> DryRun:
    from google.cloud import bigquery

    config = bigquery.QueryJobConfig(dry_run=True, use_query_cache=False, labels=labels)
    if default_dataset:
        config.default_dataset = default_dataset
    job = client(settings).query(
        sql,
        job_config=config,
        location=settings.location,
        retry=retry(settings.environ),
        timeout=HTTP_TIMEOUT_S,
        job_retry=None,
    )
    # The client exposes no property for the estimate's accuracy or the referenced routines (3.47 has
    # referenced_tables only); the job keeps the REST resource.
    stats = job._properties.get("statistics", {}).get("query", {})
    return DryRun(
        total_bytes_processed=int(job.total_bytes_processed or 0),
        accuracy=str(stats.get("totalBytesProcessedAccuracy") or "UNKNOWN"),
        statement_type=str(job.statement_type or "UNKNOWN"),
        referenced_tables=[f"{t.project}.{t.dataset_id}.{t.table_id}" for t in job.referenced_tables],
        referenced_routines=[
            f"{r['projectId']}.{r['datasetId']}.{r['routineId']}" for r in stats.get("referencedRoutines", ())
        ],
        schema=[column.to_api_repr() for column in job.schema or []],
    )


def run_query(
    settings: Settings,
    sql: str,
    *,
    job_id: str,
    default_dataset: str | None,
    maximum_bytes_billed: int | None,
    labels: dict[str, str],
    job_timeout_s: float,
    page_size: int,
    cancelled: threading.Event,
    on_schema: Callable[[list[dict[str, Any]]], None],
    on_page: Callable[[Sequence[tuple[Any, ...]], int, int], bool],
) -> JobOutcome:
    """Run the query as job ``job_id`` and hand its result to ``on_page`` page by page.

    ``on_page(rows, rows_so_far, total_rows)`` returns False to stop reading. The job is
    cancelled at the source if the call is cancelled or runs past ``job_timeout_s``.
    """
    from google.cloud import bigquery

    config = bigquery.QueryJobConfig(labels=labels, job_timeout_ms=int(job_timeout_s * 1000))
    if default_dataset:
        config.default_dataset = default_dataset
    if maximum_bytes_billed is not None:
        config.maximum_bytes_billed = maximum_bytes_billed
    bq = client(settings)
    policy = retry(settings.environ)
    deadline = time.monotonic() + job_timeout_s
    job = bq.query(
        sql,
        job_config=config,
        job_id=job_id,
        location=settings.location,
        retry=policy,
        timeout=HTTP_TIMEOUT_S,
        job_retry=None,
    )
    _wait(settings, job, deadline, cancelled, policy)
    rows = job.result(page_size=page_size, retry=policy, timeout=HTTP_TIMEOUT_S, job_retry=None)
    fields = [column.to_api_repr() for column in rows.schema]
    on_schema(fields)
    decode = row_decoder(fields)
    seen = 0
    for page in rows.pages:
        # The page's REST body, decoded in one pass; iterating the page would build a Row per row.
        values = decode(page.raw_page.get("rows", []))
        seen += len(values)
        if not on_page(values, seen, int(rows.total_rows or seen)):
            break
    return JobOutcome(
        job_id=job.job_id,
        location=job.location,
        total_bytes_processed=int(job.total_bytes_processed or 0),
        total_bytes_billed=int(job.total_bytes_billed or 0),
        cache_hit=bool(job.cache_hit),
        total_rows=int(rows.total_rows or seen),
    )


def _wait(settings: Settings, job: Any, deadline: float, cancelled: threading.Event, policy: Any) -> None:
    """Poll a job until it is done (backing off to 1 s), cancelling it at the source if the call is
    cancelled or the deadline passes; a failed job raises its own error."""
    pause = 0.05
    while job.state != "DONE":
        if cancelled.is_set():
            cancel(settings, job.job_id, job.location)
            raise JobCancelled
        time.sleep(min(pause, max(deadline - time.monotonic(), 0)))
        pause = min(pause * 1.6, 1.0)
        # The deadline is checked before the next poll, not after it: the job carries the same
        # limit (job_timeout_ms), and a poll that finds BigQuery already stopped it would skip
        # the cancel that every timed-out job gets.
        if time.monotonic() >= deadline:
            cancel(settings, job.job_id, job.location)
            raise JobTimedOut
        job.reload(retry=policy, timeout=HTTP_TIMEOUT_S)
    if job.error_result:
        raise _job_error(job)


def cancel(settings: Settings, job_id: str, location: str | None) -> None:
    """``jobs.cancel``, so a job nobody waits for stops billing."""
    client(settings).cancel_job(job_id, location=location, retry=retry(settings.environ), timeout=HTTP_TIMEOUT_S)


def _job_error(job: Any) -> Exception:
    from google.api_core import exceptions

    error = job.error_result or {}
    message = str(error.get("message", "The job failed."))
    # The shape the client raises itself, so translate() reads errors[0].reason the same way.
    failed: Exception = exceptions.from_http_status(400, message, errors=[error])  # type: ignore[no-untyped-call]
    return failed


# -- catalog -----------------------------------------------------------------------------------
def list_projects(settings: Settings, limit: int) -> list[tuple[str, str | None]]:
    bq = client(settings)
    found = bq.list_projects(max_results=limit, retry=retry(settings.environ), timeout=HTTP_TIMEOUT_S)
    return [(p.project_id, p.friendly_name) for p in found]


def list_datasets(settings: Settings, project: str, limit: int) -> list[dict[str, Any]]:
    found = client(settings).list_datasets(
        project, max_results=limit, retry=retry(settings.environ), timeout=HTTP_TIMEOUT_S
    )
    out = []
    for item in found:
        props = item._properties  # the list item keeps the REST resource; location is only there
        out.append({"dataset": item.dataset_id, "location": props.get("location"), "labels": item.labels or None})
    return out


def get_dataset(settings: Settings, project: str, dataset: str) -> dict[str, Any]:
    found = client(settings).get_dataset(f"{project}.{dataset}", retry=retry(settings.environ), timeout=HTTP_TIMEOUT_S)
    return {"dataset": dataset, "location": found.location, "description": found.description}


def list_tables(settings: Settings, project: str, dataset: str, limit: int) -> list[TableItem]:
    found = client(settings).list_tables(
        f"{project}.{dataset}", max_results=limit, retry=retry(settings.environ), timeout=HTTP_TIMEOUT_S
    )
    out = []
    for item in found:
        props = item._properties
        out.append(
            TableItem(
                table_id=item.table_id,
                kind=str(item.table_type or "TABLE"),
                partitioning=_partitioning(props),
                clustering=list(item.clustering_fields) if item.clustering_fields else None,
            )
        )
    return out


def get_table(settings: Settings, project: str, dataset: str, table: str) -> TableInfo:
    found = client(settings).get_table(
        f"{project}.{dataset}.{table}", retry=retry(settings.environ), timeout=HTTP_TIMEOUT_S
    )
    props = found._properties
    return TableInfo(
        table_id=found.table_id,
        kind=str(found.table_type or "TABLE"),
        schema=[f.to_api_repr() for f in found.schema],
        num_rows=int(found.num_rows) if found.num_rows is not None else None,
        num_bytes=int(found.num_bytes) if found.num_bytes is not None else None,
        partitioning=_partitioning(props),
        clustering=list(found.clustering_fields) if found.clustering_fields else None,
        description=found.description,
        location=found.location,
        created=found.created.isoformat() if found.created else None,
        modified=found.modified.isoformat() if found.modified else None,
        view_query=found.view_query,
        require_partition_filter=bool(found.require_partition_filter),
    )


def read_rows(
    settings: Settings, project: str, dataset: str, table: str, fields: Sequence[dict[str, Any]], limit: int
) -> Iterator[dict[str, Any]]:
    """``tabledata.list`` (free): the first ``limit`` rows of ``fields`` (REST field shapes)."""
    from google.cloud import bigquery

    selected = [bigquery.SchemaField.from_api_repr(f) for f in fields]
    rows = client(settings).list_rows(
        f"{project}.{dataset}.{table}",
        selected_fields=selected,
        max_results=limit,
        retry=retry(settings.environ),
        timeout=HTTP_TIMEOUT_S,
    )
    for row in rows:
        yield dict(row.items())


def _partitioning(props: Mapping[str, Any]) -> dict[str, Any] | None:
    if "timePartitioning" in props:
        part = props["timePartitioning"]
        out: dict[str, Any] = {"type": part.get("type", "DAY"), "field": part.get("field") or "_PARTITIONTIME"}
        if part.get("expirationMs"):
            out["expiration_days"] = round(int(part["expirationMs"]) / 86_400_000, 2)
        return out
    if "rangePartitioning" in props:
        part = props["rangePartitioning"]
        return {"type": "RANGE", "field": part.get("field"), "range": part.get("range")}
    return None


# -- loads -------------------------------------------------------------------------------------
def load_rows(
    settings: Settings,
    destination: str,
    rows: Sequence[dict[str, Any]],
    *,
    schema: Sequence[dict[str, Any]] | None,
    create: bool,
    job_id: str,
    labels: dict[str, str],
    job_timeout_s: float,
    cancelled: threading.Event,
) -> int:
    """Append (or create and fill) a table through one load job: free, and all or nothing."""
    from google.cloud import bigquery

    config = bigquery.LoadJobConfig(
        source_format=bigquery.SourceFormat.NEWLINE_DELIMITED_JSON,
        write_disposition=bigquery.WriteDisposition.WRITE_APPEND,
        create_disposition=(
            bigquery.CreateDisposition.CREATE_IF_NEEDED if create else bigquery.CreateDisposition.CREATE_NEVER
        ),
        labels=labels,
        job_timeout_ms=int(job_timeout_s * 1000),
    )
    if schema is not None:
        config.schema = [bigquery.SchemaField.from_api_repr(f) for f in schema]
    bq = client(settings)
    job = bq.load_table_from_json(
        list(rows), destination, job_config=config, job_id=job_id, location=settings.location, timeout=HTTP_TIMEOUT_S
    )
    _wait(settings, job, time.monotonic() + job_timeout_s, cancelled, retry(settings.environ))
    return int(job.output_rows or 0)


def table_exists(settings: Settings, project: str, dataset: str, table: str) -> bool:
    from google.api_core import exceptions

    try:
        get_table(settings, project, dataset, table)
    except exceptions.NotFound:
        return False
    return True


# -- errors ------------------------------------------------------------------------------------
def error_reason(exc: BaseException) -> str | None:
    """BigQuery's ``errors[0].reason`` (the exception class alone is ambiguous)."""
    found = api_error(exc)
    return found.reason if found else None


_JOB_TIMED_OUT = timed_out("job_timeout_s", "shorter date range, fewer tables, pre-aggregate")
_REFUSED = "BigQuery refused the query: {message}. Fix the SQL and try again."
_DENIED = (
    "BigQuery denied access ({message}). The account lacks a permission (for example BigQuery Data Viewer on the "
    "dataset and BigQuery Job User on the billing project): ask the user to grant it or to use other credentials."
)

# BigQuery's own rows, before the generic Google ones. A failed job's reason decides: the client
# maps several (stopped, timeout, bytesBilledLimitExceeded) to whatever HTTP class, even 200 or 500.
POLICY = GoogleErrorPolicy(
    "BigQuery",
    rules=(
        Rule(
            CostLimitExceeded,
            "BigQuery stopped the query at the byte limit derived from cost_limit_usd ({message}). Narrow the query "
            "(fewer columns, shorter date range, filter by partition) or ask the user to raise the limit.",
            reasons=("bytesBilledLimitExceeded",),
            data=("reason",),
        ),
        Rule.fixed(_JOB_TIMED_OUT, classes=(JobTimedOut,)),  # the connector cancelled it
        Rule.fixed(_JOB_TIMED_OUT, reasons=("timeout",)),  # BigQuery stopped it (job_timeout_ms)
        Rule(
            UpstreamError,
            "The BigQuery job was cancelled before it finished. Run it again if it is still needed.",
            reasons=("stopped",),
        ),
        Rule(UpstreamError, RATE_LIMITED, reasons=("jobRateLimitExceeded",)),
        Rule(UpstreamError, INTERNAL_ERROR, reasons=("jobBackendError", "jobInternalError")),
        Rule(
            InvalidArguments,
            "The query needs more resources than BigQuery allows ({message}). Aggregate or filter more.",
            reasons=("resourcesExceeded", "responseTooLarge"),
        ),
        Rule(CredentialsInvalid, _DENIED, reasons=("billingNotEnabled",)),
        Rule(InvalidArguments, _REFUSED, reasons=("invalidQuery",)),
    ),
    messages={
        "permission_denied": _DENIED,
        "not_found": "BigQuery could not find it: {message}. Check the names (table names are case-sensitive) or "
        "call autocontext to list datasets and tables.",
        "invalid_request": _REFUSED,
    },
)
translate = POLICY.translate
