"""The life of a background job (an upload, a refresh, a clustering run, an export): one
set of rules so that nothing accepted is lost or left "running".

- **Dispatch never fails a request.** ``job_dispatch`` sends the task and records when;
  with the broker down it logs and leaves the row queued without ``dispatched_at``, and
  the sweeper (``pipeline.jobs``, run by Celery beat) sends it once the broker is back.
- **Every delivery claims the job** with one conditional UPDATE that raises ``attempt``,
  unless the job is finished. A redelivered task (its worker was lost) takes over at once;
  a run that finds a newer attempt than its own stops and writes nothing more.
- **Running jobs beat.** ``heartbeat_at`` is renewed as the job progresses; a job whose
  heartbeat is older than the timeout is reaped: queued again (``reaped`` counts how
  often) up to a bound, then failed with the reason.

The models share the fields through :class:`JobState`; their own ``status``, ``task_id``,
``error_message``, ``started_at`` and ``finished_at`` keep their names.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db import models, transaction
from django.db.models import F, Q
from django.utils import timezone

logger = logging.getLogger(__name__)


class JobStatus(models.TextChoices):
    """The states of every job; the apps' UploadStatus, RunStatus, ExportStatus and
    RefreshStatus are this one class under their own names."""

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


QUEUED, RUNNING, DONE, FAILED = (
    JobStatus.QUEUED,
    JobStatus.RUNNING,
    JobStatus.DONE,
    JobStatus.FAILED,
)
FINISHED = (DONE, FAILED)
MSG_STALLED = (
    "The job stopped making progress (no heartbeat for {minutes:g} minutes) {times} time(s); "
    "it was given up. Retry it once the workers are healthy."
)

M = TypeVar("M", bound=models.Model)


class Superseded(Exception):
    """A newer attempt claimed the job: this run stops and leaves the job to that one."""


class JobState(models.Model):
    """What every job row carries for claims, dispatch, heartbeats and reaping."""

    # Raised by every claim; only the run holding the latest number may write.
    attempt = models.PositiveIntegerField(default=0)
    # How often the reaper queued the job again; a manual retry starts it over.
    reaped = models.PositiveSmallIntegerField(default=0)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


def job_dispatch(model: type[models.Model], pk: int, send: Callable[[], Any]) -> bool:
    """Send the job's task; record the task id and when. False when the broker refused
    (the row stays queued and undispatched, for the sweeper)."""
    try:
        result = send()
    except Exception:  # kombu's OperationalError and friends: the broker is down
        logger.warning(
            "could not dispatch %s %s (the task queue is unreachable); it stays queued and "
            "the sweeper sends it once the queue answers",
            model.__name__,
            pk,
        )
        return False
    model._default_manager.filter(pk=pk).update(
        task_id=getattr(result, "id", "") or "", dispatched_at=timezone.now()
    )
    return True


def job_claim(model: type[M], pk: int, **fields: Any) -> M | None:
    """Mark the job running under a new attempt unless it is finished; the claimed row,
    or None. One conditional UPDATE checks and claims, so two workers claiming at once get
    different attempts on SQLite too (where select_for_update does nothing).

    The row is read back in the UPDATE's transaction, which holds the row's lock until
    then: read after the commit, a claim racing this one could already have raised the
    attempt again, and both runs would believe they hold the latest and both store."""
    now = timezone.now()
    with transaction.atomic():
        claimed = (
            model._default_manager.filter(pk=pk)
            .exclude(status__in=FINISHED)
            .update(
                status=RUNNING,
                attempt=F("attempt") + 1,
                heartbeat_at=now,
                started_at=now,
                **fields,
            )
        )
        if not claimed:
            return None
        return model._default_manager.get(pk=pk)


def job_update(job: models.Model, **fields: Any) -> bool:
    """Update the job only while ``job``'s attempt is the latest (renewing its heartbeat);
    whether it still was."""
    model = type(job)
    current = model._default_manager.filter(pk=job.pk, attempt=job.attempt)  # type: ignore[attr-defined]
    return bool(current.update(heartbeat_at=timezone.now(), **fields))


def job_beat(job: models.Model, **fields: Any) -> None:
    """Renew the heartbeat (and write ``fields``); raise Superseded if a newer attempt took
    the job over."""
    if not job_update(job, **fields):
        raise Superseded(f"{type(job).__name__} {job.pk} attempt {job.attempt}")  # type: ignore[attr-defined]


def stale_running(model: type[M], *, timeout: timedelta, now: datetime | None = None) -> list[M]:
    """Running jobs whose heartbeat is older than ``timeout``."""
    now = now or timezone.now()
    before = now - timeout
    return list(
        model._default_manager.filter(status=RUNNING).filter(
            Q(heartbeat_at__lt=before) | Q(heartbeat_at__isnull=True, started_at__lt=before)
        )
    )


def undispatched(
    model: type[M], *, grace: timedelta, lost_after: timedelta, now: datetime | None = None
) -> list[M]:
    """Queued jobs whose dispatch never happened (older than ``grace``, so a request that
    is still committing is left alone), or whose message seems lost (dispatched longer
    than ``lost_after`` ago and still queued)."""
    now = now or timezone.now()
    never = Q(dispatched_at__isnull=True, created_at__lt=now - grace)
    lost = Q(dispatched_at__lt=now - lost_after)
    return list(model._default_manager.filter(status=QUEUED).filter(never | lost))


def job_reap(
    job: models.Model, *, max_reaps: int, timeout: timedelta, **failed_fields: Any
) -> bool:
    """Queue a stalled job again (True), or fail it with the reason once it was reaped
    ``max_reaps`` times (False). Only if nobody claimed it meanwhile."""
    model = type(job)
    current = model._default_manager.filter(
        pk=job.pk,
        attempt=job.attempt,  # type: ignore[attr-defined]
        status=RUNNING,
    )
    reaped = job.reaped  # type: ignore[attr-defined]
    if reaped < max_reaps:
        current.update(status=QUEUED, reaped=F("reaped") + 1, dispatched_at=None)
        return True
    current.update(
        status=FAILED,
        finished_at=timezone.now(),
        error_message=MSG_STALLED.format(minutes=timeout.total_seconds() / 60, times=reaped + 1),
        **failed_fields,
    )
    return False
