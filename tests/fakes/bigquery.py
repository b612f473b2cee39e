"""``FakeBigQuery``: the BigQuery v2 REST API on a loopback server, for the real google-cloud-bigquery client.

    with FakeBigQuery() as fake:
        fake.add_ga4_export("my-proj", start="2024-01-01", days=7)
        credentials = service_account.Credentials.from_service_account_info(
            fake.oauth.service_account_info("my-proj"), scopes=[BIGQUERY_SCOPE])
        client = bigquery.Client(project="my-proj", credentials=credentials,
                                 client_options={"api_endpoint": fake.url})
        rows = list(client.query("SELECT COUNT(*) FROM `my-proj.analytics_123.events_*`").result())

Queries really run: BigQuery SQL is transpiled to DuckDB and executed over the stored rows
(``fakes.bigquery_sql``). Nothing is canned: dry-run bytes are computed from the referenced columns,
job statistics from the same numbers, and results from the data.

What the wire looks like, and why some details matter (see /work/shared/notes/google-fakes.md §4):

- ``client.query()`` → ``POST …/jobs`` (jobs.insert). If the answer is DONE the client pages with
  ``GET …/queries/ID`` (getQueryResults, not tabledata.list); if RUNNING it polls ``jobs.get`` and
  getQueryResults, which must *wait* (up to ``timeoutMs``, at most ``long_poll_s``) instead of
  answering at once, because the client loops on it without sleeping.
- ``client.query_and_wait()`` → ``POST …/queries`` (jobs.query); one request when the result fits.
- A DONE job with ``status.errorResult`` makes the client raise by reason (invalidQuery → BadRequest,
  notFound → NotFound, accessDenied → Forbidden, stopped → 200-class GoogleAPICallError, anything
  unmapped such as bytesBilledLimitExceeded → InternalServerError). jobs.query and getQueryResults
  report a failed job as an HTTP error instead.
- Silent failures: without ``totalRows`` the client sees 0 rows, without ``schema`` empty rows,
  without ``statistics.query.totalBytesProcessed`` a dry run reports None. All are always sent.
- ``load_table_from_json`` uploads to ``/upload/bigquery/v2/projects/P/jobs``: ``uploadType=multipart``
  below 5 MB, else ``uploadType=resumable`` (POST the job, then PUT chunks of 100 MB with
  ``Content-Range``; 308 until the last one).

The fake never modifies data through SQL: DML, DDL and scripts are classified (dry runs report their
``statementType``) and refused with ``accessDenied`` when run. Only load jobs write.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import secrets
import threading
import time
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from fakes import ga4_export
from fakes.bigquery_sql import (
    SELECT,
    AccessDenied,
    BigQuerySqlError,
    DuckDBWarehouse,
    InvalidQuery,
    NotFound,
    QueryPlan,
    QueryResult,
    RoutineRef,
    TableInfo,
    TableRef,
    infer_schema,
    normalize_schema,
    schemas_compatible,
    validate_rows,
)
from fakes.google_oauth import FakeGoogleOAuth
from fakes.http import (
    FakeHttpServer,
    RecordedRequest,
    Reply,
    ServedFake,
    google_error,
    offset_from_page_token,
    opaque_page_token,
)

MIB = 1024 * 1024
MINIMUM_BILLED_BYTES_PER_TABLE = 10 * MIB  # BigQuery bills at least 10 MB per table a query reads
REFERENCED_TABLES_LIMIT = 50  # statistics.query.referencedTables lists at most this many
DEFAULT_GET_QUERY_RESULTS_WAIT_MS = 10_000  # BigQuery's default timeoutMs
ANONYMOUS_DATASET = "_fake_anonymous"  # where query results "live" (their destinationTable)
ROUTE_NAMES = (
    "jobs.insert",
    "jobs.get",
    "jobs.query",
    "jobs.getQueryResults",
    "jobs.cancel",
    "tabledata.list",
    "projects.list",
    "datasets.list",
    "datasets.get",
    "tables.list",
    "tables.get",
    "upload",
    "token",
)

# The HTTP status with which jobs.query and getQueryResults report a failed job, by reason.
_HTTP_STATUS_BY_REASON = {
    "notFound": 404,
    "accessDenied": 403,
    "duplicate": 409,
    "rateLimitExceeded": 429,
    "backendError": 500,
    "internalError": 500,
}


# ------------------------------------------------------------------------------------------- records


@dataclass(frozen=True)
class ExecutedQuery:
    """A non-dry query job the fake received, whatever became of it.

    ``total_bytes_processed`` is the query's estimate even when it did not run; ``total_bytes_billed``
    is what BigQuery would bill, so 0 unless ``outcome == "done"``. ``outcome`` is ``"done"``,
    ``"running"``, or the job's error reason (``"bytesBilledLimitExceeded"``, ``"invalidQuery"``,
    ``"notFound"``, ``"accessDenied"``, ``"timeout"``), or ``"cancelled"``.
    """

    job_id: str
    sql: str
    labels: dict[str, str]
    maximum_bytes_billed: int | None
    total_bytes_processed: int
    total_bytes_billed: int
    outcome: str
    project: str = ""
    statement_type: str | None = None
    api: str = "jobs.insert"  # or "jobs.query"


@dataclass(frozen=True)
class DryRun:
    """A dry-run query. ``referenced_tables`` lists every table read ("p.d.t"), before the response's
    truncation to 50, and ``referenced_routines`` every function called ("p.d.f"); ``outcome`` is
    ``"done"`` or the error reason the dry run was answered with."""

    sql: str
    labels: dict[str, str]
    total_bytes_processed: int
    statement_type: str | None
    referenced_tables: tuple[str, ...]
    accuracy: str | None
    outcome: str = "done"
    api: str = "jobs.insert"
    referenced_routines: tuple[str, ...] = ()


@dataclass(frozen=True)
class LoadRecord:
    job_id: str
    destination: str  # "p.d.t"
    rows_loaded: int
    write_disposition: str
    create_disposition: str
    outcome: str  # "done" or the error reason ("invalid", "notFound", "duplicate", "accessDenied")
    labels: dict[str, str]


@dataclass
class _Job:
    project: str
    job_id: str
    location: str
    kind: str  # "QUERY" or "LOAD"
    configuration: dict[str, Any]
    labels: dict[str, str]
    created_ms: int
    api: str = "jobs.insert"
    state: str = "DONE"
    done_at: float = 0.0  # time.monotonic() at which a RUNNING job completes
    timeout_at: float | None = None  # time.monotonic() at which jobTimeoutMs stops it
    ended_ms: int | None = None
    error: dict[str, Any] | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)
    outcome: str = "done"
    # query jobs
    sql: str = ""
    maximum_bytes_billed: int | None = None
    plan: QueryPlan | None = None
    result: QueryResult | None = None
    bytes_processed: int = 0
    bytes_billed: int = 0
    # load jobs
    load_statistics: dict[str, str] = field(default_factory=dict)


@dataclass
class _ResumableUpload:
    project: str
    metadata: dict[str, Any]
    data: bytearray = field(default_factory=bytearray)


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class _Page:
    """The page a getQueryResults or tabledata.list request asks for."""

    start: int
    max_results: int | None
    int64_timestamps: bool

    @classmethod
    def of(cls, request: RecordedRequest) -> _Page:
        """Raises ValueError for a page token this fake did not issue."""
        start = offset_from_page_token(request.param("pageToken"))
        max_results = request.param("maxResults")
        return cls(
            start=int(request.param("startIndex") or 0) if start is None else start,
            max_results=int(max_results) if max_results is not None else None,
            int64_timestamps=request.param("formatOptions.useInt64Timestamp", "").lower() == "true",
        )


def _error_reply(status: int, reason: str, message: str) -> Reply:
    return Reply(status, google_error(status, None, message, reason))


def _sql_error_reply(error: BigQuerySqlError) -> Reply:
    return _error_reply(error.http_status, error.reason, error.message)


def billed_bytes(processed: int, referenced_tables: int) -> int:
    """BigQuery's ``totalBytesBilled``: whole MB, at least 10 MB per table read; 0 when nothing was read."""
    if processed <= 0:
        return 0
    return max(math.ceil(processed / MIB) * MIB, MINIMUM_BILLED_BYTES_PER_TABLE * referenced_tables)


class FakeBigQuery(ServedFake):
    """The BigQuery v2 REST fake; see the module docstring."""

    def __init__(self, require_auth: bool = True) -> None:
        self.require_auth = require_auth
        self.job_duration_s = 0.0
        # How long getQueryResults and jobs.query hold a request for a RUNNING job when the request
        # names no shorter timeoutMs. BigQuery holds up to 10 s; the client sends no timeoutMs from
        # job.result(timeout=…) and loops on the call without sleeping, so a short hold keeps the
        # client from spinning while letting client-side timeouts fire within about a second.
        self.long_poll_s = 1.0
        # Bytes a real job reads on top of what its dry run said: the table grew in between (streaming
        # inserts do that), so only maximumBytesBilled can stop the job.
        self.growth_bytes = 0
        self.server = FakeHttpServer()
        self.oauth = FakeGoogleOAuth(self.server)
        self.warehouse = DuckDBWarehouse()
        self._lock = threading.RLock()
        self._friendly_names: dict[str, str | None] = {}
        self._forbidden: set[tuple[str, str | None]] = set()
        self._jobs: dict[tuple[str, str], _Job] = {}
        self._executed: list[_Job] = []
        self._dry_runs: list[DryRun] = []
        self._loads: list[LoadRecord] = []
        self._cancelled: list[str] = []
        self._uploads: dict[str, _ResumableUpload] = {}
        self._register_routes()

    # ------------------------------------------------------------------------------ lifecycle

    def stop(self) -> None:
        super().stop()
        self.warehouse.close()

    # ------------------------------------------------------------------------------ data setup

    def add_project(self, project_id: str, friendly_name: str | None = None) -> None:
        self.warehouse.add_project(project_id)
        with self._lock:
            self._friendly_names[project_id] = friendly_name

    def add_dataset(
        self,
        project: str,
        dataset: str,
        *,
        location: str = "EU",
        description: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        if project not in self.warehouse.projects:
            self.add_project(project)
        self.warehouse.add_dataset(project, dataset, location=location, description=description, labels=labels)

    def add_table(
        self,
        project: str,
        dataset: str,
        table: str,
        schema: Sequence[Mapping[str, Any]] | None,
        rows: Iterable[Mapping[str, Any]] = (),
        *,
        description: str | None = None,
        partitioning: Mapping[str, Any] | None = None,
        clustering: Sequence[str] | None = None,
        kind: str = "TABLE",
        view_query: str | None = None,
        accuracy: str | None = None,
        bytes_scale: float = 1.0,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        """Create a table from REST schema fields and rows (dicts; nested dicts/lists for RECORD/REPEATED).

        A view (``kind="VIEW"``) takes ``view_query`` and may omit its schema. ``accuracy`` is the dry
        run's ``totalBytesProcessedAccuracy`` when the table is read; ``bytes_scale`` makes each stored
        row count as that many rows in byte accounting.
        """
        if self.warehouse.dataset(project, dataset) is None:
            raise ValueError(f"dataset {project}.{dataset} does not exist: call add_dataset first")
        self.warehouse.add_table(
            TableRef(project, dataset, table),
            schema,
            rows,
            kind=kind,
            view_query=view_query,
            description=description,
            partitioning=partitioning,
            clustering=clustering,
            accuracy=accuracy or "PRECISE",
            bytes_scale=bytes_scale,
            labels=labels,
        )

    def add_function(self, project: str, dataset: str, routine: str, arguments: Sequence[str], body: str) -> None:
        """A persistent SQL function, as ``CREATE FUNCTION dataset.routine(arguments) AS (body)`` makes one.

        Queries call it as ``dataset.routine(…)`` and dry runs list it in ``referencedRoutines``. The body
        is a BigQuery SQL expression of the arguments only (the fake runs it as a DuckDB macro)."""
        self.warehouse.add_function(RoutineRef(project, dataset, routine), arguments, body)

    def add_ga4_export(
        self,
        project: str,
        dataset: str = "analytics_123",
        *,
        start: dt.date | str,
        days: int,
        events_per_day: int = 300,
        seed: int = 0,
        bytes_scale: float = 1.0,
        intraday: bool = False,
    ) -> list[str]:
        """Daily ``events_YYYYMMDD`` shards from ``fakes.ga4_export`` (creating the dataset if needed), and
        with ``intraday`` the ``events_intraday_YYYYMMDD`` table GA4's streaming export keeps for the day
        after them (which ``events_*`` matches too, as in BigQuery). Returns the tables' names."""
        if self.warehouse.dataset(project, dataset) is None:
            self.add_dataset(project, dataset)
        export = ga4_export.generate_export(start, days, events_per_day=events_per_day, seed=seed)
        if intraday:
            today = ga4_export.as_date(start) + dt.timedelta(days=days)
            export |= ga4_export.generate_export(
                today, 1, events_per_day=events_per_day, seed=seed, prefix="events_intraday_"
            )
        self.warehouse.add_tables_with_shared_schema(
            ga4_export.GA4_EXPORT_SCHEMA,
            {TableRef(project, dataset, name): rows for name, rows in export.items()},
            bytes_scale=bytes_scale,
            description="GA4 export (fake)",
        )
        return list(export)

    def forbid(self, project: str, dataset: str | None = None) -> None:
        """Make a project (every dataset, and jobs billed to it) or one dataset answer 403 accessDenied."""
        with self._lock:
            self._forbidden.add((project, dataset))

    def rows(self, project: str, dataset: str, table: str) -> list[dict[str, Any]]:
        """A table's stored rows as Python values (to assert on what load jobs wrote)."""
        return self.warehouse.rows(TableRef(project, dataset, table))

    # ------------------------------------------------------------------------------ faults and records

    def requests_for_job(self, job_id: str) -> list[RecordedRequest]:
        """The requests whose path names ``job_id`` (jobs.get, getQueryResults, jobs.cancel)."""
        return [r for r in self.server.requests if job_id in urllib.parse.unquote(r.path).split("/")]

    @property
    def executed(self) -> list[ExecutedQuery]:
        with self._lock:
            jobs = list(self._executed)
            for job in jobs:
                self._refresh(job)
            return [
                ExecutedQuery(
                    job_id=job.job_id,
                    sql=job.sql,
                    labels=dict(job.labels),
                    maximum_bytes_billed=job.maximum_bytes_billed,
                    total_bytes_processed=job.bytes_processed,
                    total_bytes_billed=job.bytes_billed if job.outcome == "done" else 0,
                    outcome=job.outcome,
                    project=job.project,
                    statement_type=job.plan.statement_type if job.plan else None,
                    api=job.api,
                )
                for job in jobs
            ]

    @property
    def dry_runs(self) -> list[DryRun]:
        with self._lock:
            return list(self._dry_runs)

    @property
    def loads(self) -> list[LoadRecord]:
        with self._lock:
            return list(self._loads)

    @property
    def cancelled(self) -> list[str]:
        """Job ids that jobs.cancel was called for (whether or not the job was still running)."""
        with self._lock:
            return list(self._cancelled)

    # ------------------------------------------------------------------------------ routing

    def _register_routes(self) -> None:
        base = r"/bigquery/v2/projects"
        segment = r"([^/]+)"
        routes = [
            ("GET", base, self._projects_list, "projects.list"),
            ("POST", rf"{base}/{segment}/jobs", self._jobs_insert, "jobs.insert"),
            ("GET", rf"{base}/{segment}/jobs/{segment}", self._jobs_get, "jobs.get"),
            ("POST", rf"{base}/{segment}/jobs/{segment}/cancel", self._jobs_cancel, "jobs.cancel"),
            ("POST", rf"{base}/{segment}/queries", self._jobs_query, "jobs.query"),
            ("GET", rf"{base}/{segment}/queries/{segment}", self._get_query_results, "jobs.getQueryResults"),
            ("GET", rf"{base}/{segment}/datasets", self._datasets_list, "datasets.list"),
            ("GET", rf"{base}/{segment}/datasets/{segment}", self._datasets_get, "datasets.get"),
            ("GET", rf"{base}/{segment}/datasets/{segment}/tables", self._tables_list, "tables.list"),
            ("GET", rf"{base}/{segment}/datasets/{segment}/tables/{segment}", self._tables_get, "tables.get"),
            (
                "GET",
                rf"{base}/{segment}/datasets/{segment}/tables/{segment}/data",
                self._tabledata_list,
                "tabledata.list",
            ),
            ("POST", rf"/upload/bigquery/v2/projects/{segment}/jobs", self._upload_start, "upload"),
            ("PUT", rf"/upload/bigquery/v2/projects/{segment}/jobs", self._upload_chunk, "upload"),
        ]
        for method, pattern, handler, name in routes:
            self.server.add_route(method, pattern, self._guarded(handler), name)

    def _guarded(self, handler: Any) -> Any:
        """Authenticate every API request before its handler runs (the token route is not wrapped)."""

        def run(request: RecordedRequest, match: re.Match[str]) -> Reply:
            if self.require_auth and not self.oauth.bearer_token_is_valid(request):
                return _error_reply(
                    401,
                    "authError",
                    "Request had invalid authentication credentials. Expected OAuth 2 access token, "
                    "login cookie or other valid authentication credential.",
                )
            groups = [urllib.parse.unquote(group) for group in match.groups()]
            try:
                return handler(request, *groups)
            except BigQuerySqlError as exc:
                return _sql_error_reply(exc)

        return run

    def _authorize(self, project: str, dataset: str | None = None) -> None:
        """Raise AccessDenied for a forbidden project or dataset."""
        with self._lock:
            if (project, None) in self._forbidden:
                raise AccessDenied(
                    f"Access Denied: Project {project}: User does not have bigquery.jobs.create and "
                    f"bigquery.datasets.get permissions in project {project}."
                )
            if dataset is not None and (project, dataset) in self._forbidden:
                raise AccessDenied(
                    f"Access Denied: Dataset {project}:{dataset}: Permission bigquery.tables.getData denied "
                    f"on dataset {project}:{dataset} (or it may not exist)."
                )

    def _require_project(self, project: str) -> None:
        self._authorize(project)
        if project not in self.warehouse.projects:
            raise NotFound(f"Not found: Project {project}")

    def _require_dataset(self, project: str, dataset: str) -> Any:
        self._authorize(project, dataset)
        info = self.warehouse.dataset(project, dataset)
        if info is None:
            raise NotFound(f"Not found: Dataset {project}:{dataset}")
        return info

    def _require_table(self, project: str, dataset: str, table: str) -> TableInfo:
        self._require_dataset(project, dataset)
        info = self.warehouse.table(TableRef(project, dataset, table))
        if info is None:
            raise NotFound(f"Not found: Table {project}:{dataset}.{table}")
        return info

    # ------------------------------------------------------------------------------ query jobs

    def _jobs_insert(self, request: RecordedRequest, project: str) -> Reply:
        self._require_project(project)
        body = request.json if isinstance(request.json, dict) else None
        if body is None:
            return _error_reply(400, "invalid", "The request body must be a Job resource (JSON).")
        configuration = body.get("configuration") or {}
        reference = body.get("jobReference") or {}
        if "query" not in configuration:
            kinds = sorted(set(configuration) - {"labels", "dryRun", "jobTimeoutMs", "jobType"})
            return _error_reply(
                400, "invalid", f"The fake runs query jobs here (load jobs go through uploads), not {kinds}."
            )
        query_config = configuration["query"] or {}
        labels = dict(configuration.get("labels") or {})
        if configuration.get("dryRun"):
            return self._dry_run(
                project, query_config, labels, reference.get("location"), api="jobs.insert", configuration=configuration
            )
        job_id = str(reference.get("jobId") or f"job_{secrets.token_hex(12)}")
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,1024}", job_id):
            return _error_reply(400, "invalid", f"Invalid job ID {job_id!r}.")
        with self._lock:
            existing = self._jobs.get((project, job_id))
        if existing is not None:
            return _error_reply(409, "duplicate", f"Already Exists: Job {project}:{existing.location}.{job_id}")
        job = self._start_query(
            project,
            job_id,
            query_config,
            labels,
            requested_location=reference.get("location"),
            job_timeout_ms=configuration.get("jobTimeoutMs"),
            api="jobs.insert",
            configuration=configuration,
        )
        return Reply(200, self._job_resource(job))

    def _jobs_query(self, request: RecordedRequest, project: str) -> Reply:
        self._require_project(project)
        body = request.json if isinstance(request.json, dict) else None
        if body is None:
            return _error_reply(400, "invalid", "The request body must be a QueryRequest (JSON).")
        labels = dict(body.get("labels") or {})
        query_config = {
            key: body[key]
            for key in (
                "query",
                "useLegacySql",
                "useQueryCache",
                "defaultDataset",
                "maximumBytesBilled",
                "queryParameters",
                "parameterMode",
            )
            if key in body
        }
        if body.get("dryRun"):
            return self._dry_run(project, query_config, labels, body.get("location"), api="jobs.query")
        job = self._start_query(
            project,
            f"job_{secrets.token_hex(12)}",
            query_config,
            labels,
            requested_location=body.get("location"),
            job_timeout_ms=body.get("jobTimeoutMs"),
            api="jobs.query",
            configuration={"query": query_config, "labels": labels} if labels else {"query": query_config},
        )
        self._wait_for(job, body.get("timeoutMs"))
        int64_timestamps = bool((body.get("formatOptions") or {}).get("useInt64Timestamp"))
        max_results = body.get("maxResults")
        return self._query_results_reply(
            job,
            start=0,
            max_results=int(max_results) if max_results is not None else None,
            int64_timestamps=int64_timestamps,
            kind="bigquery#queryResponse",
        )

    def _dry_run(
        self,
        project: str,
        query_config: Mapping[str, Any],
        labels: dict[str, str],
        requested_location: str | None,
        *,
        api: str,
        configuration: Mapping[str, Any] | None = None,
    ) -> Reply:
        sql = str(query_config.get("query") or "")
        try:
            plan = self._plan(project, query_config, requested_location)
        except BigQuerySqlError as exc:
            with self._lock:
                self._dry_runs.append(DryRun(sql, labels, 0, None, (), None, outcome=exc.reason, api=api))
            return _sql_error_reply(exc)
        with self._lock:
            self._dry_runs.append(
                DryRun(
                    sql=sql,
                    labels=labels,
                    total_bytes_processed=plan.total_bytes_processed,
                    statement_type=plan.statement_type,
                    referenced_tables=tuple(str(ref) for ref in plan.referenced_tables),
                    accuracy=plan.accuracy,
                    api=api,
                    referenced_routines=tuple(str(ref) for ref in plan.referenced_routines),
                )
            )
        location = plan.location or requested_location or "US"
        query_statistics: dict[str, Any] = {
            "totalBytesProcessed": str(plan.total_bytes_processed),
            "totalBytesProcessedAccuracy": plan.accuracy,
            "totalBytesBilled": "0",
            "cacheHit": False,
            "statementType": plan.statement_type,
            "referencedTables": [ref.to_api() for ref in plan.referenced_tables[:REFERENCED_TABLES_LIMIT]],
        }
        if plan.referenced_routines:
            query_statistics["referencedRoutines"] = [ref.to_api() for ref in plan.referenced_routines]
        if plan.schema is not None:
            query_statistics["schema"] = {"fields": plan.schema}
        if api == "jobs.query":
            body: dict[str, Any] = {
                "kind": "bigquery#queryResponse",
                # A dry run has no job: the reference carries no jobId, as BigQuery's does.
                "jobReference": {"projectId": project, "location": location},
                "totalBytesProcessed": str(plan.total_bytes_processed),
                "jobComplete": False,
                "cacheHit": False,
            }
            if plan.schema is not None:
                body["schema"] = {"fields": plan.schema}
            return Reply(200, body)
        now = str(_now_ms())
        return Reply(
            200,
            {
                "kind": "bigquery#job",
                "jobReference": {"projectId": project, "location": location},
                "configuration": {**dict(configuration or {}), "jobType": "QUERY"},
                "status": {"state": "DONE"},
                "statistics": {
                    "creationTime": now,
                    "startTime": now,
                    "endTime": now,
                    "totalBytesProcessed": str(plan.total_bytes_processed),
                    "query": query_statistics,
                },
            },
        )

    def _plan(self, project: str, query_config: Mapping[str, Any], requested_location: str | None) -> QueryPlan:
        if query_config.get("useLegacySql", True):
            # The REST default is legacy SQL; the Python client always sends useLegacySql=false.
            raise InvalidQuery("Legacy SQL is not supported by the fake: set useLegacySql to false.")
        if query_config.get("destinationTable"):
            raise AccessDenied("The fake never writes query results to tables (destinationTable is refused).")
        default = query_config.get("defaultDataset")
        default_dataset = (default.get("projectId") or project, default["datasetId"]) if default else None
        plan = self.warehouse.plan_query(
            str(query_config.get("query") or ""),
            project=project,
            default_dataset=default_dataset,
            parameters=query_config.get("queryParameters"),
            authorize=self._authorize,
        )
        if requested_location and plan.location and requested_location.lower() != plan.location.lower():
            first = plan.referenced_tables[0] if plan.referenced_tables else None
            what = f"Dataset {first.project}:{first.dataset}" if first else "Dataset"
            raise NotFound(f"Not found: {what} was not found in location {requested_location}")
        return plan

    def _start_query(
        self,
        project: str,
        job_id: str,
        query_config: Mapping[str, Any],
        labels: dict[str, str],
        *,
        requested_location: str | None,
        job_timeout_ms: Any,
        api: str,
        configuration: Mapping[str, Any],
    ) -> _Job:
        maximum = query_config.get("maximumBytesBilled")
        job = _Job(
            project=project,
            job_id=job_id,
            location=requested_location or "US",
            kind="QUERY",
            configuration=dict(configuration),
            labels=labels,
            created_ms=_now_ms(),
            api=api,
            state="PENDING",  # visible to jobs.get while it is being planned and run
            outcome="running",
            sql=str(query_config.get("query") or ""),
            maximum_bytes_billed=int(maximum) if maximum is not None else None,
        )
        with self._lock:
            self._jobs[(project, job_id)] = job
            self._executed.append(job)
        try:
            plan = self._plan(project, query_config, requested_location)
            job.plan = plan
            job.location = plan.location or job.location
            job.bytes_processed = plan.total_bytes_processed
            if plan.statement_type != SELECT:
                raise AccessDenied(
                    f"The fake BigQuery never modifies data: a {plan.statement_type} statement is refused "
                    "(only SELECT queries run)."
                )
            job.bytes_billed = billed_bytes(plan.total_bytes_processed + self.growth_bytes, len(plan.referenced_tables))
            if job.maximum_bytes_billed is not None and job.bytes_billed > job.maximum_bytes_billed:
                self._fail_job(
                    job,
                    "bytesBilledLimitExceeded",
                    f"Query exceeded limit for bytes billed: {job.maximum_bytes_billed}. "
                    f"{job.bytes_billed} or higher required.",
                )
                return job
            job.result = self.warehouse.execute(plan)
        except BigQuerySqlError as exc:
            job.location = exc.location or job.location
            self._fail_job(job, exc.reason, exc.message)
            return job
        duration = float(self.job_duration_s)
        if duration > 0:
            job.state = "RUNNING"
            job.outcome = "running"
            job.done_at = time.monotonic() + duration
            if job_timeout_ms is not None and duration * 1000 > int(job_timeout_ms):
                job.timeout_at = time.monotonic() + int(job_timeout_ms) / 1000
        else:
            job.state = "DONE"
            job.outcome = "done"
            job.ended_ms = _now_ms()
        return job

    def _fail_job(
        self,
        job: _Job,
        reason: str,
        message: str,
        *,
        outcome: str | None = None,
        details: Sequence[dict[str, str]] = (),
    ) -> None:
        """DONE with ``errorResult``; ``details`` (e.g. per-row load errors) precede it in ``errors``."""
        job.state = "DONE"
        job.error = {"reason": reason, "message": message}
        job.errors = [*(dict(detail) for detail in details), {"reason": reason, "message": message}]
        job.outcome = outcome or reason
        job.ended_ms = _now_ms()
        if job.result is not None:
            self.warehouse.forget(job.result)
            job.result = None

    def _refresh(self, job: _Job) -> None:
        """Complete (or time out) a RUNNING job whose time has come."""
        with self._lock:
            if job.state != "RUNNING":
                return
            now = time.monotonic()
            if job.timeout_at is not None and now >= job.timeout_at:
                self._fail_job(job, "timeout", "Operation timed out: the query exceeded jobTimeoutMs.")
            elif now >= job.done_at:
                job.state = "DONE"
                job.outcome = "done"
                job.ended_ms = _now_ms()

    def _wait_for(self, job: _Job, timeout_ms: Any) -> None:
        """Block like BigQuery's long-polling calls: until the job is done, ``timeoutMs`` passes, or
        ``long_poll_s`` passes."""
        wait_s = (int(timeout_ms) if timeout_ms is not None else DEFAULT_GET_QUERY_RESULTS_WAIT_MS) / 1000
        deadline = time.monotonic() + max(0.0, min(wait_s, float(self.long_poll_s)))
        while True:
            self._refresh(job)
            if job.state == "DONE":
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            time.sleep(min(0.01, remaining))

    def _find_job(self, project: str, job_id: str, location: str | None) -> _Job:
        self._authorize(project)
        with self._lock:
            job = self._jobs.get((project, job_id))
        if job is None or (location and location.lower() != job.location.lower()):
            where = location or (job.location if job else "US")
            raise NotFound(f"Not found: Job {project}:{where}.{job_id}")
        self._refresh(job)
        return job

    def _jobs_get(self, request: RecordedRequest, project: str, job_id: str) -> Reply:
        job = self._find_job(project, job_id, request.param("location"))
        return Reply(200, self._job_resource(job))

    def _jobs_cancel(self, request: RecordedRequest, project: str, job_id: str) -> Reply:
        job = self._find_job(project, job_id, request.param("location"))
        with self._lock:
            self._cancelled.append(job_id)
            if job.state == "RUNNING":
                self._fail_job(
                    job, "stopped", "Job execution was cancelled: User requested cancellation", outcome="cancelled"
                )
        return Reply(200, {"kind": "bigquery#jobCancelResponse", "job": self._job_resource(job)})

    def _get_query_results(self, request: RecordedRequest, project: str, job_id: str) -> Reply:
        job = self._find_job(project, job_id, request.param("location"))
        if job.kind != "QUERY":
            return _error_reply(400, "invalid", f"Job {job_id} is not a query job.")
        self._wait_for(job, request.param("timeoutMs"))
        try:
            page = _Page.of(request)
        except ValueError as exc:
            return _error_reply(400, "invalid", str(exc))
        reply = self._query_results_reply(
            job,
            start=page.start,
            max_results=page.max_results,
            int64_timestamps=page.int64_timestamps,
            kind="bigquery#getQueryResultsResponse",
        )
        return _only_fields(reply, request.param("fields"))

    def _query_results_reply(
        self, job: _Job, *, start: int, max_results: int | None, int64_timestamps: bool, kind: str
    ) -> Reply:
        reference = {"projectId": job.project, "jobId": job.job_id, "location": job.location}
        if job.state != "DONE":
            return Reply(200, {"kind": kind, "jobReference": reference, "jobComplete": False})
        if job.error is not None:
            status = _HTTP_STATUS_BY_REASON.get(job.error["reason"], 400)
            return _error_reply(status, job.error["reason"], job.error["message"])
        result = job.result
        if result is None:  # cannot happen for a DONE query job without an error
            return _error_reply(500, "internalError", "The fake lost this job's result.")
        body: dict[str, Any] = {
            "kind": kind,
            "etag": secrets.token_hex(8),
            "schema": {"fields": result.schema},
            "jobReference": reference,
            "totalRows": str(result.total_rows),
            "totalBytesProcessed": str(job.bytes_processed),
            "totalBytesBilled": str(job.bytes_billed),
            "jobComplete": True,
            "cacheHit": False,
            "creationTime": str(job.created_ms),
            "startTime": str(job.created_ms),
            "endTime": str(job.ended_ms or job.created_ms),
        }
        if max_results != 0:
            rows, count = self.warehouse.result_rows_json(result, start, max_results, int64_timestamps=int64_timestamps)
            if rows:
                body["rows"] = orjson.Fragment(("[" + ",".join(rows) + "]").encode())
            if start + count < result.total_rows:
                body["pageToken"] = opaque_page_token(start + count)
        return Reply(200, body)

    def _job_resource(self, job: _Job) -> dict[str, Any]:
        self._refresh(job)
        reference = {"projectId": job.project, "jobId": job.job_id, "location": job.location}
        status: dict[str, Any] = {"state": job.state}
        if job.error is not None:
            status["errorResult"] = dict(job.error)
            status["errors"] = [dict(error) for error in job.errors]
        statistics: dict[str, Any] = {"creationTime": str(job.created_ms), "startTime": str(job.created_ms)}
        if job.state == "DONE":
            statistics["endTime"] = str(job.ended_ms or job.created_ms)
        configuration: dict[str, Any] = {**job.configuration, "jobType": job.kind}
        if job.labels:
            configuration["labels"] = dict(job.labels)
        if job.kind == "QUERY":
            query_statistics: dict[str, Any] = {"cacheHit": False}
            plan = job.plan
            if plan is not None:
                query_statistics["statementType"] = plan.statement_type
            if plan is not None and job.state == "DONE" and job.error is None:
                statistics["totalBytesProcessed"] = str(job.bytes_processed)
                query_statistics.update(
                    {
                        "totalBytesProcessed": str(job.bytes_processed),
                        "totalBytesBilled": str(job.bytes_billed),
                        "totalBytesProcessedAccuracy": plan.accuracy,
                        "billingTier": 1,
                        "totalSlotMs": "1",
                        "referencedTables": [ref.to_api() for ref in plan.referenced_tables[:REFERENCED_TABLES_LIMIT]],
                        "schema": {"fields": plan.schema or []},
                    }
                )
                if plan.referenced_routines:
                    query_statistics["referencedRoutines"] = [ref.to_api() for ref in plan.referenced_routines]
            statistics["query"] = query_statistics
            query_configuration = dict(configuration.get("query") or {})
            query_configuration["destinationTable"] = {
                "projectId": job.project,
                "datasetId": ANONYMOUS_DATASET,
                "tableId": f"anon_{job.job_id}",
            }
            configuration["query"] = query_configuration
        else:
            statistics["load"] = dict(job.load_statistics)
        return {
            "kind": "bigquery#job",
            "etag": secrets.token_hex(8),
            "id": f"{job.project}:{job.location}.{job.job_id}",
            "user_email": "fake-user@example.com",
            "jobReference": reference,
            "configuration": configuration,
            "status": status,
            "statistics": statistics,
        }

    # ------------------------------------------------------------------------------ catalog reads

    def _projects_list(self, request: RecordedRequest) -> Reply:
        with self._lock:
            visible = [project for project in self.warehouse.projects if (project, None) not in self._forbidden]
            names = dict(self._friendly_names)
        items = [
            {
                "kind": "bigquery#project",
                "id": project,
                "numericId": str(100_000_000_000 + index),
                "projectReference": {"projectId": project},
                "friendlyName": names.get(project) or project,
            }
            for index, project in enumerate(visible)
        ]
        page, token = _paginate(items, request)
        body: dict[str, Any] = {"kind": "bigquery#projectList", "etag": secrets.token_hex(8), "totalItems": len(items)}
        body["projects"] = page
        if token:
            body["nextPageToken"] = token
        return Reply(200, body)

    def _datasets_list(self, request: RecordedRequest, project: str) -> Reply:
        self._require_project(project)
        with self._lock:
            forbidden = set(self._forbidden)
        items = [
            {
                "kind": "bigquery#dataset",
                "id": f"{info.project}:{info.dataset}",
                "datasetReference": {"projectId": info.project, "datasetId": info.dataset},
                "location": info.location,
                **({"labels": dict(info.labels)} if info.labels else {}),
            }
            for info in self.warehouse.datasets(project)
            if (project, info.dataset) not in forbidden
        ]
        page, token = _paginate(items, request)
        body: dict[str, Any] = {"kind": "bigquery#datasetList", "etag": secrets.token_hex(8)}
        if page:
            body["datasets"] = page
        if token:
            body["nextPageToken"] = token
        return Reply(200, body)

    def _datasets_get(self, request: RecordedRequest, project: str, dataset: str) -> Reply:
        info = self._require_dataset(project, dataset)
        body: dict[str, Any] = {
            "kind": "bigquery#dataset",
            "etag": secrets.token_hex(8),
            "id": f"{project}:{dataset}",
            "datasetReference": {"projectId": project, "datasetId": dataset},
            "location": info.location,
            "creationTime": str(info.created_ms),
            "lastModifiedTime": str(info.modified_ms),
            "access": [],
            "type": "DEFAULT",
        }
        if info.description is not None:
            body["description"] = info.description
        if info.labels:
            body["labels"] = dict(info.labels)
        return Reply(200, body)

    def _tables_list(self, request: RecordedRequest, project: str, dataset: str) -> Reply:
        self._require_dataset(project, dataset)
        items = [self._table_list_item(info) for info in self.warehouse.tables(project, dataset)]
        page, token = _paginate(items, request)
        body: dict[str, Any] = {"kind": "bigquery#tableList", "etag": secrets.token_hex(8), "totalItems": len(items)}
        if page:
            body["tables"] = page
        if token:
            body["nextPageToken"] = token
        return Reply(200, body)

    @staticmethod
    def _table_list_item(info: TableInfo) -> dict[str, Any]:
        item: dict[str, Any] = {
            "kind": "bigquery#table",
            "id": info.ref.legacy_id,
            "tableReference": info.ref.to_api(),
            "type": info.kind,
            "creationTime": str(info.created_ms),
        }
        if info.partitioning:
            item["timePartitioning"] = dict(info.partitioning)
        if info.clustering:
            item["clustering"] = {"fields": list(info.clustering)}
        if info.labels:
            item["labels"] = dict(info.labels)
        if info.kind == "VIEW":
            item["view"] = {"useLegacySql": False}
        return item

    def _tables_get(self, request: RecordedRequest, project: str, dataset: str, table: str) -> Reply:
        if dataset == ANONYMOUS_DATASET and table.startswith("anon_"):
            return self._anonymous_table(project, table[len("anon_") :])
        info = self._require_table(project, dataset, table)
        dataset_info = self.warehouse.dataset(project, dataset)
        body = self._table_list_item(info)
        body.update(
            {
                "etag": secrets.token_hex(8),
                "schema": {"fields": self.warehouse.table_schema(info.ref)},
                "numRows": str(self.warehouse.num_rows(info.ref)),
                "numBytes": str(self.warehouse.logical_bytes(info.ref)),
                "numLongTermBytes": "0",
                "location": dataset_info.location if dataset_info else "US",
                "lastModifiedTime": str(info.modified_ms),
            }
        )
        if info.description is not None:
            body["description"] = info.description
        if info.kind == "VIEW":
            body["view"] = {"query": info.view_query, "useLegacySql": False}
        return Reply(200, body)

    def _tabledata_list(self, request: RecordedRequest, project: str, dataset: str, table: str) -> Reply:
        try:
            page = _Page.of(request)
        except ValueError as exc:
            return _error_reply(400, "invalid", str(exc))
        start, max_results, int64_timestamps = page.start, page.max_results, page.int64_timestamps
        selected_param = request.param("selectedFields")
        selected = [name.strip() for name in selected_param.split(",") if name.strip()] if selected_param else None
        if dataset == ANONYMOUS_DATASET and table.startswith("anon_"):
            return self._anonymous_table_data(project, table[len("anon_") :], start, max_results, int64_timestamps)
        info = self._require_table(project, dataset, table)
        if info.kind == "VIEW":
            return _error_reply(400, "invalid", f"Cannot list a table of type VIEW: {info.ref.legacy_id}.")
        if selected and any("." in name for name in selected):
            return _error_reply(400, "invalid", "The fake supports only top-level selectedFields.")
        total = self.warehouse.num_rows(info.ref)
        rows, count, _schema = self.warehouse.table_rows_json(
            info.ref, start, max_results, selected_fields=selected, int64_timestamps=int64_timestamps
        )
        body: dict[str, Any] = {"kind": "bigquery#tableDataList", "etag": secrets.token_hex(8), "totalRows": str(total)}
        if rows:
            body["rows"] = orjson.Fragment(("[" + ",".join(rows) + "]").encode())
        if start + count < total and count > 0:
            body["pageToken"] = opaque_page_token(start + count)
        return Reply(200, body)

    def _anonymous_result(self, project: str, job_id: str) -> tuple[_Job, QueryResult]:
        job = self._find_job(project, job_id, None)
        if job.result is None or job.state != "DONE":
            raise NotFound(f"Not found: Table {project}:{ANONYMOUS_DATASET}.anon_{job_id}")
        return job, job.result

    def _anonymous_table(self, project: str, job_id: str) -> Reply:
        """tables.get on a query's destinationTable (BigQuery keeps results in a hidden table)."""
        job, result = self._anonymous_result(project, job_id)
        reference = {"projectId": project, "datasetId": ANONYMOUS_DATASET, "tableId": f"anon_{job_id}"}
        return Reply(
            200,
            {
                "kind": "bigquery#table",
                "id": f"{project}:{ANONYMOUS_DATASET}.anon_{job_id}",
                "tableReference": reference,
                "type": "TABLE",
                "schema": {"fields": result.schema},
                "numRows": str(result.total_rows),
                "numBytes": str(job.bytes_processed),
                "location": job.location,
                "creationTime": str(job.created_ms),
                "lastModifiedTime": str(job.ended_ms or job.created_ms),
            },
        )

    def _anonymous_table_data(
        self, project: str, job_id: str, start: int, max_results: int | None, int64_timestamps: bool
    ) -> Reply:
        """tabledata.list on a query's destinationTable: the job's stored result."""
        _job, result = self._anonymous_result(project, job_id)
        rows, count = self.warehouse.result_rows_json(result, start, max_results, int64_timestamps=int64_timestamps)
        body: dict[str, Any] = {
            "kind": "bigquery#tableDataList",
            "etag": secrets.token_hex(8),
            "totalRows": str(result.total_rows),
        }
        if rows:
            body["rows"] = orjson.Fragment(("[" + ",".join(rows) + "]").encode())
        if start + count < result.total_rows and count > 0:
            body["pageToken"] = opaque_page_token(start + count)
        return Reply(200, body)

    # ------------------------------------------------------------------------------ load jobs

    def _upload_start(self, request: RecordedRequest, project: str) -> Reply:
        self._require_project(project)
        upload_type = request.param("uploadType")
        if upload_type == "multipart":
            try:
                metadata, data = _split_multipart(request)
            except ValueError as exc:
                return _error_reply(400, "invalid", f"Malformed multipart upload: {exc}")
            return self._run_load(project, metadata, data)
        if upload_type == "resumable":
            if not isinstance(request.json, dict):
                return _error_reply(400, "invalid", "A resumable upload starts with the Job resource as JSON.")
            upload_id = secrets.token_urlsafe(16)
            with self._lock:
                self._uploads[upload_id] = _ResumableUpload(project, request.json)
            location = (
                f"{self.url}/upload/bigquery/v2/projects/{urllib.parse.quote(project)}/jobs"
                f"?uploadType=resumable&upload_id={upload_id}"
            )
            return Reply(200, None, {"Location": location})
        return _error_reply(400, "invalid", f"Unsupported uploadType {upload_type!r}.")

    def _upload_chunk(self, request: RecordedRequest, project: str) -> Reply:
        upload_id = request.param("upload_id") or ""
        with self._lock:
            upload = self._uploads.get(upload_id)
        if upload is None or upload.project != project:
            return _error_reply(404, "notFound", f"No resumable upload {upload_id!r}.")
        content_range = request.headers.get("content-range", "")
        match = re.fullmatch(r"bytes (?:(\d+)-(\d+)|\*)/(\d+|\*)", content_range.strip())
        if match is None:
            return _error_reply(400, "invalid", f"Invalid Content-Range {content_range!r}.")
        first, _last, total = match.groups()
        if first is not None and int(first) != len(upload.data):
            # The client resends from what the server acknowledged (308's Range header).
            return _resume_incomplete(len(upload.data))
        upload.data.extend(request.body)
        if total == "*" or len(upload.data) < int(total):
            return _resume_incomplete(len(upload.data))
        with self._lock:
            self._uploads.pop(upload_id, None)
        return self._run_load(project, upload.metadata, bytes(upload.data))

    def _run_load(self, project: str, metadata: Mapping[str, Any], data: bytes) -> Reply:
        configuration = dict(metadata.get("configuration") or {})
        load = dict(configuration.get("load") or {})
        reference = dict(metadata.get("jobReference") or {})
        labels = dict(configuration.get("labels") or {})
        job_id = str(reference.get("jobId") or f"job_{secrets.token_hex(12)}")
        destination = load.get("destinationTable") or {}
        try:
            ref = TableRef(
                destination.get("projectId") or project, str(destination["datasetId"]), str(destination["tableId"])
            )
        except KeyError:
            return _error_reply(400, "invalid", "A load job needs configuration.load.destinationTable.")
        write_disposition = str(load.get("writeDisposition") or "WRITE_APPEND")
        create_disposition = str(load.get("createDisposition") or "CREATE_IF_NEEDED")
        dataset_info = self.warehouse.dataset(ref.project, ref.dataset)
        job = _Job(
            project=project,
            job_id=job_id,
            location=reference.get("location") or (dataset_info.location if dataset_info else "US"),
            kind="LOAD",
            configuration={"load": load},
            labels=labels,
            created_ms=_now_ms(),
        )
        with self._lock:
            if (project, job_id) in self._jobs:
                return _error_reply(409, "duplicate", f"Already Exists: Job {project}:{job.location}.{job_id}")
            self._jobs[(project, job_id)] = job
        rows_loaded = 0
        try:
            self._authorize(ref.project, ref.dataset)
            rows_loaded = self._load_rows(ref, load, data, job, write_disposition, create_disposition)
        except _LoadError as exc:
            self._fail_job(job, exc.reason, exc.message, details=exc.errors)
        except BigQuerySqlError as exc:
            self._fail_job(job, exc.reason, exc.message)
        job.ended_ms = job.ended_ms or _now_ms()
        with self._lock:
            self._loads.append(
                LoadRecord(
                    job_id=job_id,
                    destination=str(ref),
                    rows_loaded=rows_loaded,
                    write_disposition=write_disposition,
                    create_disposition=create_disposition,
                    outcome=job.outcome,
                    labels=labels,
                )
            )
        return Reply(200, self._job_resource(job))

    def _load_rows(
        self,
        ref: TableRef,
        load: Mapping[str, Any],
        data: bytes,
        job: _Job,
        write_disposition: str,
        create_disposition: str,
    ) -> int:
        """Validate every row, then write all of them or none. Returns the number of rows written."""
        source_format = str(load.get("sourceFormat") or "CSV")
        if source_format != "NEWLINE_DELIMITED_JSON":
            raise InvalidQuery(f"The fake loads only NEWLINE_DELIMITED_JSON, not {source_format}.")
        if self.warehouse.dataset(ref.project, ref.dataset) is None:
            raise NotFound(f"Not found: Dataset {ref.project}:{ref.dataset}")
        existing = self.warehouse.table(ref)
        if existing is None and create_disposition == "CREATE_NEVER":
            raise NotFound(f"Not found: Table {ref.legacy_id}")
        if existing is not None and existing.kind == "VIEW":
            raise _LoadError("invalid", f"Cannot load data into a view: {ref.legacy_id}")
        rows: list[Any] = []
        parse_errors: list[dict[str, str]] = []
        for line_number, line in enumerate(data.split(b"\n")):
            if not line.strip():
                continue
            try:
                rows.append(orjson.loads(line))
            except orjson.JSONDecodeError as exc:
                parse_errors.append(
                    {"reason": "invalid", "message": f"JSON parsing error in row starting at line {line_number}: {exc}"}
                )
        if parse_errors:
            raise _invalid_rows(parse_errors)
        job_fields = (load.get("schema") or {}).get("fields")
        if job_fields:
            schema = normalize_schema(job_fields)
        elif existing is not None:
            schema = existing.schema
        elif load.get("autodetect"):
            schema = infer_schema(rows)
        else:
            raise _LoadError("invalid", "No schema specified on job or table.")
        appending = existing is not None and write_disposition != "WRITE_TRUNCATE"
        if appending and job_fields and not schemas_compatible(existing.schema, schema):
            raise _LoadError("invalid", f"Provided Schema does not match Table {ref.legacy_id}.")
        if existing is not None and write_disposition == "WRITE_EMPTY" and self.warehouse.num_rows(ref) > 0:
            raise _LoadError("duplicate", f"Already Exists: Table {ref.legacy_id} (WRITE_EMPTY needs an empty table)")
        normalized, errors = validate_rows(rows, schema, ignore_unknown_values=bool(load.get("ignoreUnknownValues")))
        if errors:
            raise _invalid_rows(errors)
        self.warehouse.write_rows(ref, normalized, schema=schema, truncate=write_disposition == "WRITE_TRUNCATE")
        job.load_statistics = {
            "inputFiles": "1",
            "inputFileBytes": str(len(data)),
            "outputRows": str(len(normalized)),
            "outputBytes": str(self.warehouse.logical_bytes(ref)),
            "badRecords": "0",
        }
        return len(normalized)


class InvalidRequest(BigQuerySqlError):
    """A malformed API request (not a query problem): 400 ``invalid``."""

    reason = "invalid"
    http_status = 400


class _LoadError(BigQuerySqlError):
    def __init__(self, reason: str, message: str, errors: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.errors = errors or []


def _invalid_rows(errors: list[dict[str, str]]) -> _LoadError:
    summary = (
        "Error while reading data, error message: JSON table encountered too many errors, giving up. "
        f"Rows: {len(errors)}; errors: {len(errors)}. Please look into the errors[] collection for more details. "
        f"First error: {errors[0]['message']}"
    )
    return _LoadError("invalid", summary, errors[:5])


def _resume_incomplete(received: int) -> Reply:
    headers = {"Range": f"bytes=0-{received - 1}"} if received else {}
    return Reply(308, None, headers)


def _split_multipart(request: RecordedRequest) -> tuple[dict[str, Any], bytes]:
    """(metadata JSON, data) of a ``multipart/related`` upload as google-resumable-media builds it."""
    content_type = request.headers.get("content-type", "")
    match = re.search(r'boundary="?([^";]+)"?', content_type)
    if match is None:
        raise ValueError("no boundary in Content-Type")
    delimiter = b"--" + match.group(1).encode()
    parts = request.body.split(delimiter)
    # ['', metadata part, data part, '--'] — each part starts with CRLF and ends with CRLF.
    payloads = []
    for part in parts[1:]:
        if part.startswith(b"--"):
            break
        _headers, separator, content = part.partition(b"\r\n\r\n")
        if not separator:
            raise ValueError("a part has no header separator")
        payloads.append(content[:-2] if content.endswith(b"\r\n") else content)
    if len(payloads) != 2:
        raise ValueError(f"expected 2 parts, got {len(payloads)}")
    metadata = orjson.loads(payloads[0])
    if not isinstance(metadata, dict):
        raise ValueError("the first part is not a JSON object")
    return metadata, payloads[1]


def _paginate(items: list[dict[str, Any]], request: RecordedRequest) -> tuple[list[dict[str, Any]], str | None]:
    try:
        start = offset_from_page_token(request.param("pageToken")) or 0
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from exc
    max_results = request.param("maxResults")
    size = int(max_results) if max_results else 50
    page = items[start : start + size]
    return page, opaque_page_token(start + size) if start + size < len(items) else None


def _only_fields(reply: Reply, fields: str | None) -> Reply:
    """Honour a ``fields=a,b,c`` partial-response mask on top-level keys (what the client sends)."""
    if not fields or reply.status != 200 or not isinstance(reply.body, dict):
        return reply
    wanted = {name.strip().split("(")[0].split("/")[0] for name in fields.split(",")}
    return Reply(reply.status, {key: value for key, value in reply.body.items() if key in wanted}, reply.headers)
