"""Writes of the OTLP receiver: storing spans (ingest.otlp.receive), assembling traces into
rollouts and closing them (here).

Life of a trace:
1. ``ingest.otlp.receive.spans_receive`` (in the request, before the 200) stores each span once, as it
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
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.db import DataError, IntegrityError, connection, transaction
from django.db.models import Q, Sum
from django.utils import timezone

from ingest.core.errors import TraceParseError
from ingest.core.otlp_stored import stored_spans
from ingest.core.otlp_trace import assemble_spans, rebuild_wait
from ingest.core.records import TrajectoryRecord
from ingest.models import (
    LiveTrace,
    LiveTraceState,
    ReceivedSpan,
    Trajectory,
)
from ingest.otlp.config import ReceiverConfig
from ingest.otlp.rollouts import RolloutsWritten, rollouts_write, stream_upload_recount

logger = logging.getLogger(__name__)

MSG_REFUSED = "The database refused this trace's rollout: {reason}"
# Errors of the data written, not of the database's state: the same write fails again.
REFUSED_WRITES = (DataError, IntegrityError)
CLOSE_BATCH = 1000
# A scheduled rebuild this late was lost (its task with it): the next request rebuilds.
REBUILD_LOST_AFTER_SECONDS = 30.0
CLEAR_BATCH = 1000  # rows per claim-clearing UPDATE: 4 parameters each, under SQLite's bound
READ_BATCH = 500  # trace ids per read of stored spans, under SQLite's bound on parameters
REASSEMBLE_BATCH = 200  # traces rebuilt per transaction by live_traces_reassemble


ChangedCallback = Callable[[int], object]
AssembledCallback = Callable[[int, list[int]], object]
DeferredCallback = Callable[[int, list[str], float], object]


def live_traces_assemble(
    *,
    project_id: int,
    trace_ids: list[str],
    on_changed: ChangedCallback | None = None,
    on_assembled: AssembledCallback | None = None,
    on_deferred: DeferredCallback | None = None,
    scheduled: bool = False,
    config: ReceiverConfig | None = None,
) -> int:
    """Assemble the pending traces among these, in one transaction; return how many.

    A long trace rebuilt moments ago waits (``rebuild_wait``): it stays pending, and
    ``on_deferred(project_id, trace_ids, seconds)`` runs on commit so that the caller
    calls this again, ``scheduled``, once the wait is over (without the callback, the
    trace is rebuilt by the next request after the wait or, once quiet, by the closing
    sweep). When the database refuses the batch's rows
    (a value it cannot store), each trace is assembled alone, so one bad trace is set
    aside (``live_trace_assemble``) and the others of its request do not wait for the
    sweep."""
    config = config or ReceiverConfig.from_env()
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
            claimed = _due(project_id, claimed, config, on_deferred, scheduled=scheduled)
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
            rebuild_due_at=None,
            error_message=MSG_REFUSED.format(reason=str(exc).strip()[:500]),
        )
        return False
    return True


@dataclass
class Reassembled:
    """What ``live_traces_reassemble`` did."""

    traces: int = 0
    rollouts: int = 0
    steps_before: int = 0
    steps_after: int = 0
    labels_moved: int = 0
    labels_unplaced: list[int] = field(default_factory=list)
    # (trace id, why) of the traces whose spans no longer make a rollout.
    failed: list[tuple[str, str]] = field(default_factory=list)


def live_traces_reassemble(
    *,
    project_id: int,
    trace_ids: list[str] | None = None,
    on_changed: ChangedCallback | None = None,
    on_assembled: AssembledCallback | None = None,
    batch: int = REASSEMBLE_BATCH,
) -> Reassembled:
    """Rebuild the project's live rollouts (or these traces') from their stored spans now.

    For after an upgrade whose assembly reads spans better: a rollout is otherwise rebuilt
    only when more of its spans arrive. Each rollout keeps its id, its outcome and its
    labels, which follow their steps (ingest.otlp.rollouts). Every trace is rebuilt at once,
    whatever ``rebuild_wait`` says, in transactions of ``batch`` traces; a trace an
    assembly holds is waited for, not skipped. A closed trace's rebuild calls
    ``on_changed`` as late spans do, so the project's analysis is refreshed."""
    traces = LiveTrace.objects.filter(project_id=project_id)
    if trace_ids is not None:
        traces = traces.filter(trace_id__in=trace_ids)
    pks = list(traces.order_by("pk").values_list("pk", flat=True))
    done = Reassembled()
    for start in range(0, len(pks), batch):
        part = pks[start : start + batch]
        try:
            _reassemble_batch(project_id, part, done, on_changed, on_assembled)
        except REFUSED_WRITES:
            # One trace's rollout the database refuses: the others of the batch go alone.
            for pk in part:
                try:
                    _reassemble_batch(project_id, [pk], done, on_changed, on_assembled)
                except REFUSED_WRITES as exc:
                    trace_id = LiveTrace.objects.get(pk=pk).trace_id
                    done.traces += 1
                    done.failed.append(
                        (trace_id, MSG_REFUSED.format(reason=str(exc).strip()[:500]))
                    )
    return done


def _reassemble_batch(
    project_id: int,
    pks: list[int],
    done: Reassembled,
    on_changed: ChangedCallback | None,
    on_assembled: AssembledCallback | None,
) -> None:
    """Rebuild these traces in one transaction and add what it did to ``done``."""
    with transaction.atomic():
        claimed = list(LiveTrace.objects.select_for_update().filter(pk__in=pks).order_by("pk"))
        steps_before = _step_total([live.rollout_id for live in claimed if live.rollout_id])
        written = _assemble_claimed(project_id, claimed, on_changed, on_assembled)
        steps_after = _step_total(written.ids)
    done.traces += len(claimed)
    done.rollouts += len(written.ids)
    done.steps_before += steps_before
    done.steps_after += steps_after
    done.labels_moved += written.labels_moved
    done.labels_unplaced += written.labels_unplaced
    done.failed += [(live.trace_id, live.error_message) for live in claimed if live.error_message]


def _step_total(rollout_ids: list[int]) -> int:
    found = Trajectory.objects.filter(pk__in=rollout_ids).aggregate(total=Sum("step_count"))
    return int(found["total"] or 0)


def _due(
    project_id: int,
    claimed: list[LiveTrace],
    config: ReceiverConfig,
    on_deferred: DeferredCallback | None,
    *,
    scheduled: bool,
) -> list[LiveTrace]:
    """The claimed traces to rebuild now; the rest stay pending (see live_traces_assemble).

    A trace told to wait gets one scheduled rebuild (``rebuild_due_at``), however many
    requests reach it meanwhile; the scheduled task (``scheduled``) rebuilds it then. One
    whose scheduled rebuild is long overdue (its task was lost) is rebuilt at once."""
    now = timezone.now()
    due: list[LiveTrace] = []
    later: dict[str, float] = {}
    for live in claimed:
        if live.rebuild_due_at is not None:
            overdue = (now - live.rebuild_due_at).total_seconds() >= REBUILD_LOST_AFTER_SECONDS
            if scheduled or overdue:
                due.append(live)
            continue
        wait = rebuild_wait(
            built_from_spans=live.assembled_spans,
            seconds_since_built=(
                None if live.assembled_at is None else (now - live.assembled_at).total_seconds()
            ),
            seconds_per_span=config.rebuild_seconds_per_span,
            free_below_spans=config.rebuild_free_below_spans,
        )
        if wait <= 0:
            due.append(live)
        else:
            later[live.trace_id] = wait
    if later and on_deferred is not None:
        wait = max(later.values())
        LiveTrace.objects.filter(
            pk__in=[live.pk for live in claimed if live.trace_id in later]
        ).update(rebuild_due_at=now + timedelta(seconds=wait))
        transaction.on_commit(partial(on_deferred, project_id, sorted(later), wait))
    return due


def _assemble_claimed(
    project_id: int,
    claimed: list[LiveTrace],
    on_changed: ChangedCallback | None,
    on_assembled: AssembledCallback | None = None,
) -> RolloutsWritten:
    """Inside the caller's transaction, with the rows locked and pending."""
    if not claimed:
        return RolloutsWritten(ids=[])
    stored = _stored_rows(project_id, [live.trace_id for live in claimed])
    now = timezone.now()
    assembled: list[tuple[LiveTrace, TrajectoryRecord]] = []
    for live in claimed:
        live.pending, live.pending_spans = False, 0
        live.assembled_at, live.error_message = now, ""
        if not stored[live.trace_id]:
            continue
        live.assembled_spans = len(stored[live.trace_id])
        try:
            received = stored_spans(stored[live.trace_id])
            assembled.append((live, assemble_spans(received, trace_id=live.trace_id)))
        except TraceParseError as exc:
            # A broken tree (a parent cycle) cannot become a rollout; say why, do not retry.
            live.error_message = str(exc)
    written = rollouts_write(
        project_id=project_id,
        records=[(live.rollout_id, record) for live, record in assembled],
    )
    rollout_ids = written.ids
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
    return written


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
    row = "(CAST(%s AS bigint), CAST(%s AS bigint), CAST(%s AS text), CAST(%s AS integer))"
    at = connection.ops.adapt_datetimefield_value(now)
    for start in range(0, len(claimed), CLEAR_BATCH):
        batch = claimed[start : start + CLEAR_BATCH]
        params: list[Any] = []
        for live in batch:
            params += [live.pk, new_rollout.get(live.pk), live.error_message, live.assembled_spans]
        with connection.cursor() as cursor:
            cursor.execute(
                f"WITH changed (id, rollout_id, error_message, assembled_spans) AS (VALUES "
                f"{', '.join([row] * len(batch))}) "
                f"UPDATE {table} SET pending = %s, pending_spans = 0, assembled_at = %s, "
                "rebuild_due_at = NULL, error_message = changed.error_message, "
                "assembled_spans = changed.assembled_spans, "
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
