"""Writes of the OTLP receiver: storing spans, assembling traces into rollouts, closing them.

Life of a trace:
1. ``spans_receive`` (in the request, before the 200) stores each span once, as it
   arrived (``ReceivedSpan``, unique per project, trace and span id; the content is
   decoded only by the assembly: ingest.core.otlp_stored) and marks the trace's
   ``LiveTrace`` row *pending*, adding the request's spans to its ``pending_spans``; on
   commit the caller's ``dispatch`` queues the assembly (the pipeline's
   ``assemble_live_traces`` task). Back-pressure: the receiver first asks
   ``receive_backlog_full`` (the project's pending spans at or over the bound: 429), and
   a write that waits too long for a lock fails fast (``lock_timeout_seconds``: 503).
2. ``live_trace_assemble`` (worker) claims a pending trace under a row lock, rebuilds its
   rollout from all of its stored spans (ingest.core.otlp_trace.assemble_trace) and clears
   the claim in the same transaction: a task delivered twice finds nothing pending and
   does nothing; a worker that dies mid-way leaves the trace pending for the sweeper.
   The rollout is created when the first spans arrive and grows as more come
   (ingest.otlp.rollouts). One task takes the traces of one request, in one transaction.
3. ``live_traces_close`` (periodic) assembles pending traces whose task never ran and
   closes quiet ones (ingest.core.otlp_trace.trace_is_closed); for a project with newly
   closed rollouts the caller's ``on_changed(project_id)`` runs on commit (the pipeline
   queues the project's refresh: attribution, clustering). Late spans after closing
   update the rollout and call it again. Ingest never chains the apps above it itself.

Every assembly, of an open trace too, also calls ``on_assembled(project_id, rollout_ids)``
with the rollouts it wrote, inside its transaction, so what the callback records commits
or rolls back with the assembly (the pipeline notes them for the overview's counters,
which its closing sweep moves); the callback must be cheap and lock nothing an assembly
holds.
"""

from __future__ import annotations

import json
import logging
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.db import DataError, IntegrityError, connection, transaction
from django.db.models import Q, Sum
from django.utils import timezone

from ingest.core.errors import TraceParseError
from ingest.core.otlp_stored import IncomingSpan, stored_spans
from ingest.core.otlp_trace import assemble_spans
from ingest.core.records import TrajectoryRecord
from ingest.models import (
    LiveTrace,
    LiveTraceState,
    ReceivedSpan,
)
from ingest.otlp.config import ReceiverConfig
from ingest.otlp.rollouts import rollouts_write, stream_upload_recount
from ingest.pg_copy import copy_rows
from projects.models import Project

logger = logging.getLogger(__name__)

SCRATCH_TABLE = "faultline_received_span_scratch"
MSG_REFUSED = "The database refused this trace's rollout: {reason}"
# Errors of the data written, not of the database's state: the same write fails again.
REFUSED_WRITES = (DataError, IntegrityError)
SPAN_COLUMNS = ("project_id", "trace_id", "span_id", "encoding", "payload", "received_at")
CLOSE_BATCH = 1000
CLEAR_BATCH = 1000
UPSERT_BATCH = 1000  # traces per upsert: 8 parameters each, under SQLite's bound
READ_BATCH = 500  # trace ids per read of stored spans, under SQLite's bound on parameters  # rows per claim-clearing UPDATE: 3 parameters each, under SQLite's bound


ChangedCallback = Callable[[int], object]
AssembledCallback = Callable[[int, list[int]], object]


def pending_span_count(*, project_id: int) -> int:
    """Spans stored for the project that no assembly has taken yet (read from the
    ``live_trace_backlog`` partial index)."""
    total = LiveTrace.objects.filter(project_id=project_id, pending=True).aggregate(
        total=Sum("pending_spans")
    )["total"]
    return int(total or 0)


def receive_backlog_full(*, project_id: int, max_pending_spans: int) -> bool:
    """Whether the receiver must refuse new spans for now (429): the project's backlog is
    at or over the bound. A request is taken whenever the backlog is under it, so a
    request larger than the bound still gets in once the workers have caught up."""
    return pending_span_count(project_id=project_id) >= max_pending_spans


@contextmanager
def _sqlite_lock_wait_limited(seconds: float | None) -> Iterator[None]:
    """Inside, a SQLite write waits at most ``seconds`` for the write lock, then fails
    with "database is locked" (an OperationalError: the receiver's 503) instead of
    waiting out the connection's 30 s, past the exporter's own timeout. A connection
    setting, so it is set before BEGIN IMMEDIATE (where SQLite waits) and put back."""
    if seconds is None or connection.vendor != "sqlite":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA busy_timeout")
        saved = int(cursor.fetchone()[0])
        cursor.execute(f"PRAGMA busy_timeout = {_millis(seconds)}")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA busy_timeout = {saved}")


def _postgres_lock_wait_limited(seconds: float | None) -> None:
    """The same on PostgreSQL (a row lock held by an assembly), for the current
    transaction only; its lock_timeout error is an OperationalError too."""
    if seconds is not None and connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL lock_timeout = {_millis(seconds)}")


def _millis(seconds: float) -> int:
    return max(1, int(seconds * 1000))


def spans_receive(
    *,
    project: Project,
    spans: list[IncomingSpan],
    dispatch: Callable[[int, list[str]], object] | None = None,
    lock_timeout_seconds: float | None = None,
) -> list[str]:
    """Store accepted spans durably and mark their traces pending; return the trace ids."""
    if not spans:
        return []
    now = timezone.now()
    received_at = connection.ops.adapt_datetimefield_value(now)
    root_ended: dict[str, bool] = {}
    per_trace: Counter[str] = Counter()
    rows = []
    for span in spans:
        root_ended[span.trace_id] = root_ended.get(span.trace_id, False) or span.root_ended
        per_trace[span.trace_id] += 1
        rows.append(
            (project.pk, span.trace_id, span.span_id, span.encoding, span.payload, received_at)
        )
    trace_ids = sorted(root_ended)
    with _sqlite_lock_wait_limited(lock_timeout_seconds), transaction.atomic():
        _postgres_lock_wait_limited(lock_timeout_seconds)
        _insert_spans(rows)
        _upsert_live_traces(project.pk, now, per_trace, root_ended)
        if dispatch is not None:
            project_id = project.pk
            transaction.on_commit(lambda: dispatch(project_id, trace_ids))
    return trace_ids


def _upsert_live_traces(
    project_id: int, now: datetime, per_trace: Counter[str], root_ended: dict[str, bool]
) -> None:
    """Create each trace's row, or mark it pending again: the request's spans added to its
    pending count (a span sent twice counts twice: the bound is on work, and that errs on
    the safe side), its last span now, its root ended once any copy of the root has.

    Upserts in trace id order (two requests lock shared rows in the same order), where
    the ORM took three statements with a CASE over the request's traces.
    """
    table = connection.ops.quote_name(LiveTrace._meta.db_table)
    at = connection.ops.adapt_datetimefield_value(now)
    traces = sorted(per_trace)
    with connection.cursor() as cursor:
        # One statement per batch of traces (each trace once in it, as ON CONFLICT needs):
        # the server plans it once, where it planned each row's statement of executemany.
        for start in range(0, len(traces), UPSERT_BATCH):
            batch = traces[start : start + UPSERT_BATCH]
            params: list[Any] = []
            for trace_id in batch:
                params += [project_id, trace_id, LiveTraceState.OPEN, True, per_trace[trace_id],
                           root_ended[trace_id], at, at]  # fmt: skip
            cursor.execute(
                f"INSERT INTO {table} (project_id, trace_id, state, pending, pending_spans, "
                "root_ended, first_span_at, last_span_at, error_message) VALUES "
                + ", ".join(["(%s, %s, %s, %s, %s, %s, %s, %s, '')"] * len(batch))
                + " ON CONFLICT (project_id, trace_id) DO UPDATE SET pending = excluded.pending, "
                f"pending_spans = {table}.pending_spans + excluded.pending_spans, "
                f"root_ended = ({table}.root_ended OR excluded.root_ended), "
                "last_span_at = excluded.last_span_at",
                params,
            )


def _insert_spans(rows: list[tuple[Any, ...]]) -> None:
    """Insert span rows, keeping the first copy of a span sent twice (an exporter's retry).

    Plain tuples to the driver: the ORM's per-value preparation was the largest cost of a
    request. The payload is bytes (bytea / BLOB): nothing for the database to parse.
    """
    table = connection.ops.quote_name(ReceivedSpan._meta.db_table)
    columns = f"({', '.join(SPAN_COLUMNS)})"
    conflict = "ON CONFLICT (project_id, trace_id, span_id) DO NOTHING"
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            sql = f"INSERT INTO {table} {columns} VALUES (%s, %s, %s, %s, %s, %s) {conflict}"
            cursor.executemany(sql, rows)
        return
    # Binary COPY is the driver's cheapest way in (executemany cost the receiver about
    # 15 us per row in its pipeline, and Django's client-side binding turned every payload
    # into an escaped literal for the server to parse). COPY has no ON CONFLICT: a request
    # is copied straight into the table, and only one that holds a span stored before
    # (a retry) is copied again, into a session's scratch table, and moved with one
    # INSERT ... SELECT that keeps the first copy of each span.
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            copy_rows(cursor, ReceivedSpan._meta.db_table, SPAN_COLUMNS, rows)
        return
    except IntegrityError:
        pass
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {SCRATCH_TABLE} (id bigserial, "
            "project_id bigint, trace_id text, span_id text, encoding text, payload bytea, "
            "received_at timestamptz) ON COMMIT DELETE ROWS"
        )
        copy_rows(cursor, SCRATCH_TABLE, SPAN_COLUMNS, rows)
        cursor.execute(
            f"INSERT INTO {table} {columns} SELECT {columns[1:-1]} FROM {SCRATCH_TABLE} "
            f"ORDER BY id {conflict}"
        )
        cursor.execute(f"DELETE FROM {SCRATCH_TABLE}")


def live_traces_assemble(
    *,
    project_id: int,
    trace_ids: list[str],
    on_changed: ChangedCallback | None = None,
    on_assembled: AssembledCallback | None = None,
) -> int:
    """Assemble the pending traces among these, in one transaction; return how many.

    When the database refuses the batch's rows (a value it cannot store), each trace is
    assembled alone, so one bad trace is set aside (``live_trace_assemble``) and the
    others of its request do not wait for the sweep."""
    try:
        with transaction.atomic():
            # Locked in id order, so two workers on overlapping traces cannot deadlock.
            # A trace locked by another assembly is skipped: that one read its spans after
            # they were committed (the request's upsert waits for any lock on the row), so
            # nothing of this request is missed.
            claimed = list(
                LiveTrace.objects.select_for_update(skip_locked=True)
                .filter(project_id=project_id, trace_id__in=trace_ids, pending=True)
                .order_by("pk")
            )
            _assemble_claimed(project_id, claimed, on_changed, on_assembled)
    except REFUSED_WRITES:
        pending = LiveTrace.objects.filter(
            project_id=project_id, trace_id__in=trace_ids, pending=True
        ).values_list("pk", flat=True)
        return sum(
            live_trace_assemble(live_trace_id=pk, on_changed=on_changed, on_assembled=on_assembled)
            for pk in sorted(pending)
        )
    return len(claimed)


def live_trace_assemble(
    *,
    live_trace_id: int,
    on_changed: ChangedCallback | None = None,
    on_assembled: AssembledCallback | None = None,
) -> bool:
    """Rebuild one pending trace's rollout; False when there was nothing to do.

    A trace whose rollout the database refuses (a value it cannot store, a broken key) is
    set aside with the reason instead: left pending, its task and every sweep after it
    would fail the same way, and the sweep would stop at it. A database that is down or
    locked is not the trace's fault: that error propagates and the trace stays pending."""
    try:
        with transaction.atomic():
            live = (
                LiveTrace.objects.select_for_update().filter(pk=live_trace_id, pending=True).first()
            )
            if live is None:
                return False
            _assemble_claimed(live.project_id, [live], on_changed, on_assembled)
    except REFUSED_WRITES as exc:
        logger.warning("live trace %s set aside: %s", live_trace_id, exc)
        LiveTrace.objects.filter(pk=live_trace_id, pending=True).update(
            pending=False,
            pending_spans=0,
            assembled_at=timezone.now(),
            error_message=MSG_REFUSED.format(reason=str(exc).strip()[:500]),
        )
        return False
    return True


def _assemble_claimed(
    project_id: int,
    claimed: list[LiveTrace],
    on_changed: ChangedCallback | None,
    on_assembled: AssembledCallback | None = None,
) -> None:
    """Inside the caller's transaction, with the rows locked and pending."""
    if not claimed:
        return
    stored = _stored_rows(project_id, [live.trace_id for live in claimed])
    now = timezone.now()
    assembled: list[tuple[LiveTrace, TrajectoryRecord]] = []
    for live in claimed:
        live.pending, live.pending_spans = False, 0
        live.assembled_at, live.error_message = now, ""
        if not stored[live.trace_id]:
            continue
        try:
            received = stored_spans(stored[live.trace_id])
            assembled.append((live, assemble_spans(received, trace_id=live.trace_id)))
        except TraceParseError as exc:
            # A broken tree (a parent cycle) cannot become a rollout; say why, do not retry.
            live.error_message = str(exc)
    rollout_ids = rollouts_write(
        project_id=project_id,
        records=[(live.rollout_id, record) for live, record in assembled],
    )
    created = []
    for (live, _), rollout_id in zip(assembled, rollout_ids):
        if live.rollout_id != rollout_id:
            created.append((rollout_id, live.pk))
        live.rollout_id = rollout_id
    _claims_clear(claimed, now, created)
    if on_assembled is not None and rollout_ids:
        on_assembled(project_id, list(rollout_ids))
    if on_changed is not None and any(live.state == LiveTraceState.CLOSED for live, _ in assembled):
        # Late spans changed a closed rollout: its attribution must be refreshed.
        transaction.on_commit(lambda: on_changed(project_id))


def _stored_rows(project_id: int, trace_ids: list[str]) -> dict[str, list[tuple[str, bytes, Any]]]:
    """Each trace's stored rows ``(encoding, payload, legacy span)`` in arrival order.

    Plain SQL: the ORM ran a JSON converter on every row's legacy ``span`` column (empty
    since spans are stored as they arrived), a tenth of an assembly's own time."""
    table = connection.ops.quote_name(ReceivedSpan._meta.db_table)
    stored: dict[str, list[tuple[str, bytes, Any]]] = defaultdict(list)
    rows: list[tuple[int, str, str, Any, Any]] = []
    with connection.cursor() as cursor:
        for start in range(0, len(trace_ids), READ_BATCH):
            batch = trace_ids[start : start + READ_BATCH]
            cursor.execute(
                f"SELECT id, trace_id, encoding, payload, span FROM {table} "
                f"WHERE project_id = %s AND trace_id IN ({', '.join(['%s'] * len(batch))})",
                [project_id, *batch],
            )
            rows.extend(cursor.fetchall())
    rows.sort(key=lambda row: row[0])
    for _, trace_id, encoding, payload, span in rows:
        if isinstance(span, str):
            span = json.loads(span)  # a row stored before payloads, as its JSON text
        # bytes on PostgreSQL, memoryview on SQLite; no payload in rows stored before it.
        stored[trace_id].append((encoding, bytes(payload or b""), span))
    return stored


def _claims_clear(claimed: list[LiveTrace], now: datetime, created: list[tuple[int, int]]) -> None:
    """Store what the assembly changed on its rows in one UPDATE: the claim cleared, the
    error (if any) and a new rollout's id, each row written once. (ORM bulk_update built a
    CASE per field and row, most of an assembly's database time; a second UPDATE for the
    new rollouts wrote every row, and its six index entries, twice.)"""
    new_rollout = dict((live_pk, rollout_id) for rollout_id, live_pk in created)
    table = connection.ops.quote_name(LiveTrace._meta.db_table)
    row = "(CAST(%s AS bigint), CAST(%s AS bigint), CAST(%s AS text))"  # typed for NULLs
    at = connection.ops.adapt_datetimefield_value(now)
    for start in range(0, len(claimed), CLEAR_BATCH):
        batch = claimed[start : start + CLEAR_BATCH]
        params: list[Any] = []
        for live in batch:
            params += [live.pk, new_rollout.get(live.pk), live.error_message]
        with connection.cursor() as cursor:
            cursor.execute(
                f"WITH changed (id, rollout_id, error_message) AS (VALUES "
                f"{', '.join([row] * len(batch))}) "
                f"UPDATE {table} SET pending = %s, pending_spans = 0, assembled_at = %s, "
                "error_message = changed.error_message, "
                f"rollout_id = COALESCE(changed.rollout_id, {table}.rollout_id) "
                f"FROM changed WHERE {table}.id = changed.id",
                [*params, False, at],
            )


def live_traces_close(
    *,
    now: datetime | None = None,
    config: ReceiverConfig | None = None,
    on_changed: ChangedCallback | None = None,
    on_assembled: AssembledCallback | None = None,
) -> int:
    """The periodic sweep: assemble pending traces whose task never ran, close quiet traces
    (queueing one refresh per project that has new closed rollouts). Returns how many
    traces were closed; running it twice closes nothing the second time."""
    now = now or timezone.now()
    config = config or ReceiverConfig.from_env()
    stale = LiveTrace.objects.filter(
        pending=True, last_span_at__lte=now - timedelta(seconds=config.sweep_after_seconds)
    ).values_list("pk", flat=True)[:CLOSE_BATCH]
    for pk in list(stale):
        live_trace_assemble(live_trace_id=pk, on_changed=on_changed, on_assembled=on_assembled)
    quiet = LiveTrace.objects.filter(state=LiveTraceState.OPEN).filter(
        Q(root_ended=True, last_span_at__lte=now - timedelta(seconds=config.close_after_seconds))
        | Q(last_span_at__lte=now - timedelta(seconds=config.abandon_after_seconds))
    )
    # A quiet trace still pending (its assembly task has not run yet) is left to that task
    # and closed by a later sweep: assembling it here, one trace per transaction, would
    # race the ingest workers for the same rows under a backlog. A lost task's trace is
    # assembled above, once stale.
    closed = 0
    projects: set[int] = set()
    with transaction.atomic():
        # One statement closes the batch. The rows are locked first and the closing rule is
        # checked again on each locked row (PostgreSQL re-reads a row changed meanwhile), so
        # a trace that got spans since the query stays open; one locked by an assembly is
        # left for the next sweep.
        locked = (
            quiet.filter(pending=False)
            .select_for_update(skip_locked=True)
            .order_by("pk")
            .values_list("pk", "project_id", "rollout_id")[:CLOSE_BATCH]
        )
        rows = list(locked)
        if rows:
            closed = LiveTrace.objects.filter(
                pk__in=[pk for pk, _, _ in rows], state=LiveTraceState.OPEN, pending=False
            ).update(state=LiveTraceState.CLOSED, closed_at=now)
            projects = {project_id for _, project_id, rollout_id in rows if rollout_id}
    for project_id in sorted(projects):
        stream_upload_recount(project_id=project_id)
        if on_changed is not None:
            transaction.on_commit(partial(on_changed, project_id))
    return closed
