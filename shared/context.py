"""What a tool or block function receives: credentials, resource, limits and helpers."""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread

from . import _jsonio as jsonio
from ._settings import Effective
from ._tablefiles import TableFiles, uri_path
from .declaration import MAX_RESULT_BYTES_KEY, MAX_ROWS_KEY, Principal, ResourceRef
from .errors import (
    CREDENTIALS_MISSING_MESSAGE,
    AcpError,
    CredentialsMissing,
    HostTablesUnsupported,
    ResourceRequired,
    UpstreamError,
)
from .protocol import MODEL_ROWS_SINGLE, Header, JsonObject
from .tables import ModelView, SampleBudget, TableWriter

log = logging.getLogger("acp")
T = TypeVar("T")

HostTableReader = Callable[[str], Awaitable[JsonObject]]
ProgressReporter = Callable[[float, float | None, str | None], Coroutine[Any, Any, None]]
_PROGRESS_INTERVAL_S = 0.25  # at most four notifications a second: progress is for people, not a log
# Seconds of silence after which blocking work that asked for progress sends a heartbeat: a client
# that resets its request timeout on progress (the TypeScript SDK's resetTimeoutOnProgress) then
# waits out a long aggregation however long it runs. ACP_PROGRESS_HEARTBEAT_S overrides it.
HEARTBEAT_S = 5.0


@dataclass(frozen=True)
class HostTableData:
    """A table the host resolved for a ``table_ref`` argument (spec 8.8)."""

    ref: str
    headers: list[Header]
    rows: list[JsonObject]

    @property
    def columns(self) -> list[Header]:
        """The declared headers; without any, string columns named by the rows' keys in first-seen order."""
        if self.headers:
            return list(self.headers)
        names = dict.fromkeys(key for row in self.rows for key in row)
        return [{"name": name, "type": "string"} for name in names]


class CallContext:
    """Per-call view of the session: the only object connector code talks to."""

    def __init__(
        self,
        *,
        tool: str,
        settings: Effective,
        principal: Principal | None,
        resource: ResourceRef | None,
        call_id: str,
        files: TableFiles,
        host_tables: bool,
        read_host_table: HostTableReader | None,
        today: dt.date,
        tables_selected: list[str] | None = None,
        report_progress: ProgressReporter | None = None,
        conversation: dict[str, Any] | None = None,
        heartbeat_s: float = HEARTBEAT_S,
    ) -> None:
        self.tool = tool
        self.settings = settings
        self.principal = principal
        self.resource = resource
        self.call_id = call_id
        self.today = today
        self.tables_selected = tables_selected  # spec 8.7: a tool may skip tables nobody asked for
        self.warnings: list[str] = []
        self.cancelled = threading.Event()
        self._files = files
        self._host_tables = host_tables
        self._read_host_table = read_host_table
        self._writers: list[TableWriter] = []
        self._report_progress = report_progress
        self._started = time.monotonic()
        self._heartbeat_s = heartbeat_s
        # When the last notification was let through the throttle: a call shorter than the
        # interval sends none, however its rows arrive.
        self._progress_at = self._started
        self._progress_sent = 0.0  # the last progress value sent: MCP wants each one larger
        self._progress_total: float | None = None
        # Notifications leave in the order their values were chosen (only needed when there are any).
        self._progress_lock = anyio.Lock() if report_progress is not None else None
        # State the connector keeps across calls of one conversation (spec 5.2 conversation_id,
        # else session_id), per credential identity: a running spend, an open cursor…
        self.conversation: dict[str, Any] = conversation if conversation is not None else {}

    # -- values the connector reads ---------------------------------------------------------
    @property
    def config(self) -> JsonObject:
        """Effective source configuration (spec 5.3: merged by key)."""
        return self.settings.config

    @property
    def credentials(self) -> JsonObject | None:
        return self.settings.credentials

    def require_credentials(self) -> JsonObject:
        if not self.settings.credentials:
            raise CredentialsMissing(CREDENTIALS_MISSING_MESSAGE)
        return self.settings.credentials

    def require_resource(self) -> ResourceRef:
        if self.resource is None:
            raise ResourceRequired("This tool needs a resource_id. Call autocontext without arguments to list them.")
        return self.resource

    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress (MCP ``notifications/progress``) from the worker thread of :meth:`run_blocking`.

        Sent only when the client asked for progress (a ``progressToken``), and throttled; the
        final report (``done == total``) always goes out. ``done`` must grow from one report to
        the next (MCP): one that does not is dropped. Rows streamed through :meth:`table` and
        heartbeats during :meth:`run_blocking` are reported without any call to this.
        """
        if self._report_progress is None:
            return
        if time.monotonic() - self._progress_at < _PROGRESS_INTERVAL_S and (total is None or done < total):
            return
        self._send_from_thread(done, total, message)

    def _send_from_thread(self, done: float, total: float | None, message: str | None) -> None:
        if self.cancelled.is_set():
            return
        self._progress_at = time.monotonic()
        try:
            anyio.from_thread.run(self._notify, done, total, message)
        except Exception:  # progress is best effort: a closed stream must not fail the extraction
            log.debug("progress notification dropped", exc_info=True)

    def _rows_stored(self, writer: TableWriter, final: bool) -> None:
        """A writer of this call stored rows (worker thread): report the rows so far, throttled.

        Called once per stored batch, so the common case is one clock read and a comparison.
        """
        if final:
            if not self._progress_sent:
                return  # a call too short to have reported anything has no count to complete
        elif time.monotonic() - self._progress_at < _PROGRESS_INTERVAL_S:
            expected = _expected(writer)
            if expected is None or writer.row_count < expected:
                return
        self._send_from_thread(*self._rows_report())  # throttled above; a finished table's count always goes

    def _rows_report(self) -> tuple[int, int | None, str]:
        """Rows fetched so far over every table of the call, out of how many when the sources said."""
        writers = self._writers
        rows = sum(w.row_count for w in writers)
        expected_rows = [_expected(w) for w in writers]
        total = None if not writers or None in expected_rows else sum(e for e in expected_rows if e is not None)
        text = f"{rows:,} of {total:,} rows fetched" if total is not None else f"{rows:,} rows fetched"
        pages = sum(w.pages or 0 for w in writers)
        if pages:
            text += f", {pages:,} pages"
        return rows, total, text + f" ({_size(sum(w.bytes_written for w in writers))})"

    async def _notify(self, done: float | None, total: float | None, message: str | None) -> None:
        """Send one notification on the event loop; ``done`` None is a heartbeat, which moves the
        progress on by one (MCP: every notification's progress is larger than the last)."""
        assert self._report_progress is not None
        assert self._progress_lock is not None
        async with self._progress_lock:
            if done is None:
                done = self._progress_sent + 1
                total = self._progress_total if self._progress_total and self._progress_total >= done else None
            elif done <= self._progress_sent:
                return
            self._progress_sent, self._progress_total = done, total
            await self._report_progress(done, total, message)

    async def _heartbeat(self) -> None:
        """While blocking work runs: a notification after each ``heartbeat_s`` without one, with
        the rows fetched since the last one if there are any, else saying the work goes on."""
        quiet_since = time.monotonic()
        while not self.cancelled.is_set():
            wait = max(self._progress_at, quiet_since) + self._heartbeat_s - time.monotonic()
            if wait > 0:
                await anyio.sleep(wait)
                continue
            self._progress_at = time.monotonic()
            rows, total, text = self._rows_report()
            try:
                if rows > self._progress_sent:
                    await self._notify(rows, total, text)
                else:
                    so_far = f"{rows:,} rows fetched so far" if rows else "no rows yet"
                    elapsed = _duration(self._progress_at - self._started)
                    await self._notify(None, None, f"Still running after {elapsed}; {so_far}.")
            except Exception:
                log.debug("progress heartbeat dropped; no more for this work", exc_info=True)
                return

    # -- tables -----------------------------------------------------------------------------
    def table(
        self,
        name: str = "result",
        *,
        columns: Sequence[Header | str] | None = None,
        title: str | None = None,
        description: str | None = None,
        dates: Sequence[str] | None = None,
        model_view: ModelView | None = None,
        primary: bool = False,
    ) -> TableWriter:
        """A streaming sink for one result table; use it inside :meth:`run_blocking`.

        It stops at the effective ``max_rows`` and ``max_result_bytes`` config when the connector
        declares those caps (:attr:`~shared.declaration.Connector.max_rows`, ``max_result_bytes``).
        """
        settings = self.settings
        cap = settings.config.get(MAX_ROWS_KEY)
        size_cap = settings.config.get(MAX_RESULT_BYTES_KEY)
        spread = settings.row_limit if settings.sampling == "spread" else 0
        writer = TableWriter(
            name,
            budget=SampleBudget(
                head_rows=max(settings.row_limit, MODEL_ROWS_SINGLE),
                spread_rows=spread,
                inline_max_bytes=settings.inline_max_bytes,
            ),
            files=self._files,
            columns=columns,
            title=title,
            description=description,
            dates=dates,
            model_view=model_view,
            primary=primary,
            cancelled=self.cancelled,
            max_rows=int(cap) if cap is not None else None,
            max_bytes=int(size_cap) if size_cap is not None else None,
            on_rows=self._rows_stored if self._report_progress is not None else None,
        )
        self._writers.append(writer)
        return writer

    def artifact(self, suffix: str = ".png") -> tuple[Path, BinaryIO]:
        """A new file for a local artifact (spec 8.10), opened for writing: an image to return as
        :attr:`~shared.results.Extraction.screenshot_path`. It lives with the table files
        (``ACP_TMP_DIR``), readable by the owner only, and is swept after the same TTL."""
        return self._files.create(suffix)

    def discard_tables(self) -> None:
        for writer in self._writers:
            writer.discard()

    # -- blocking work ------------------------------------------------------------------------
    async def run_blocking(self, fn: Callable[[], T], *, cancel: Callable[[], None] | None = None) -> T:
        """Run a blocking driver call in a worker thread so the event loop keeps serving.

        If the request is cancelled (``notifications/cancelled`` or the client leaving),
        ``cancel`` interrupts the work at the source (``sqlite3.Connection.interrupt``,
        a query cancel, ``jobs.cancel``) and row loops stop at the next row.

        When the client asked for progress, a heartbeat goes out every ``heartbeat_s`` seconds
        in which nothing else did (a long aggregation has no rows to report), saying the work
        is still running and for how long.
        """
        if self._report_progress is None:
            return await self._in_thread(fn, cancel)
        failure: Exception | None = None
        async with anyio.create_task_group() as heartbeats:
            heartbeats.start_soon(self._heartbeat)
            try:
                result = await self._in_thread(fn, cancel)
            except Exception as exc:  # raised as is below, not wrapped in the task group's ExceptionGroup
                failure = exc
            finally:
                heartbeats.cancel_scope.cancel()
        if failure is not None:
            raise failure
        return result

    async def _in_thread(self, fn: Callable[[], T], cancel: Callable[[], None] | None) -> T:
        try:
            return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            self.cancelled.set()
            if cancel is not None:
                try:
                    cancel()
                except Exception:
                    log.warning("cancelling the work at the source failed", exc_info=True)
            raise

    # -- host tables (spec 8.8) -------------------------------------------------------------
    async def read_table(self, ref: str) -> HostTableData:
        """Ask the host for the table behind a ``table_ref`` argument."""
        if not self._host_tables or self._read_host_table is None:
            raise HostTablesUnsupported(
                "This tool reads a host table through acp/read_table, and this client did not declare "
                "host_tables. Use it from an ACP host (or the ACP bridge) that resolves table_ref ids."
            )
        answer = await self._read_host_table(ref)
        return await anyio.to_thread.run_sync(_host_table_from_answer, ref, answer)


def _expected(writer: TableWriter) -> int | None:
    """The rows a writer will hold when the source said how many the result has."""
    expected = writer.expected_rows
    if expected is None or writer.max_rows is None:
        return expected
    return min(expected, writer.max_rows)


def _size(count: int) -> str:
    value, unit = float(count), "bytes"
    for larger in ("KB", "MB", "GB"):
        if value < 1000:
            break
        value, unit = value / 1000, larger
    return f"{count} bytes" if unit == "bytes" else f"{value:.1f} {unit}"


def _duration(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = int(seconds)
    return f"{whole} s" if whole < 60 else f"{whole // 60} min {whole % 60} s"


def _host_table_from_answer(ref: str, answer: JsonObject) -> HostTableData:
    malformed = UpstreamError(
        f"The host answered acp/read_table for '{ref}' with a malformed table. "
        "Ask the user to check the dataset in the host, or pass another table_ref."
    )
    headers = answer.get("headers")
    if not isinstance(headers, list) or not all(isinstance(h, dict) and "name" in h for h in headers):
        raise malformed
    if answer.get("format") == "file":
        rows = _read_uri(str(answer.get("table_uri", "")), malformed)
    else:
        rows = answer.get("table")
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise malformed
    return HostTableData(ref=ref, headers=headers, rows=rows)


def _read_uri(uri: str, malformed: AcpError) -> Any:
    # Only local files: fetching a host-given URL from the server would let any host aim it anywhere.
    try:
        return jsonio.loads(uri_path(uri).read_bytes())
    except (OSError, ValueError):
        raise malformed from None
