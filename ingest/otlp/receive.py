"""The receiver's writes (step 1 of a trace's life, ingest.otlp.services): in the request,
before the 200, each accepted span is stored once, as it arrived, and its trace marked
pending for the assembly; and the backlog bound the receiver checks first."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Sum
from django.utils import timezone

from ingest.core.otlp_stored import IncomingSpan
from ingest.models import LiveTrace, LiveTraceState, ReceivedSpan
from ingest.pg_copy import copy_rows
from projects.models import Project

SCRATCH_TABLE = "faultline_received_span_scratch"
SPAN_COLUMNS = ("project_id", "trace_id", "span_id", "encoding", "payload", "received_at")
UPSERT_BATCH = 1000  # traces per upsert: 8 parameters each, under SQLite's bound


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
                "root_ended, first_span_at, last_span_at, error_message, assembled_spans) VALUES "
                + ", ".join(["(%s, %s, %s, %s, %s, %s, %s, %s, '', 0)"] * len(batch))
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
