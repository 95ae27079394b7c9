"""The sweeper and the reaper, run by Celery beat (``pipeline.tasks.jobs_sweep``).

- Sweep: a queued job whose dispatch never happened (the broker was down when it was
  accepted) or whose message seems lost is sent again.
- A label's recalibration is a refresh row written with the label (pipeline.refresh), so
  a lost dispatch of it is swept like any other refresh.
- Lost: a running job whose worker died whole (its main process too, so the message stays
  unacknowledged in Redis for an hour) is queued again as soon as a process on its machine
  sees that the processes recorded for its task are gone (pipeline.runners): a worker
  starting there, or the sweep. Its page says so ("its worker was lost") until it runs.
- Reap: a running job whose heartbeat stopped (its worker hangs, or died on a machine no
  sweep runs on) is queued again, at most FAULTLINE_JOB_MAX_REAPS times (lost and stalled
  together), then failed with the reason. The timeout is long (15 minutes) because some
  stages beat only when they end: a refresh's row is silent through its attribution and
  clustering stages. An ingest writes its rows in one transaction, so its heartbeat is
  read from the cache where its progress goes (ingest.progress), not only from its row.

Every kind of job the product runs is listed in ``JOB_KINDS``; it lives here because the
pipeline is the one layer that knows them all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from analysis.clustering import clustering_dispatch
from analysis.models import ClusteringRun
from exports.models import ExportJob
from exports.services import export_dispatch
from ingest.jobs import FAILED, QUEUED, RUNNING, job_reap, stale_running, undispatched
from ingest.models import Upload
from ingest.progress import heartbeat_read, progress_clear
from pipeline.models import ProjectRefresh
from pipeline.refresh import refresh_dispatch
from pipeline.runners import runners_gone
from pipeline.uploads import upload_dispatch

logger = logging.getLogger(__name__)

# What a job queued again because its worker died shows until a worker takes it (the
# stage of a refresh and a clustering run), and the reason it fails with past the bound.
STAGE_WORKER_LOST = "its worker was lost"
MSG_WORKER_LOST = (
    "The worker running the job was lost (killed or crashed) {times} time(s); it was given "
    "up. Retry it once the workers are healthy."
)


def _upload_alive(upload: Any, since: datetime) -> bool:
    beat = heartbeat_read(upload_id=upload.pk)
    return beat is not None and beat >= since.timestamp()


def _upload_lost(upload: Any) -> None:
    # The cached progress of the lost run would show again as the next run starts.
    progress_clear(upload_id=upload.pk)


@dataclass(frozen=True)
class JobKind:
    name: str
    model: type[models.Model]
    dispatch: Callable[[Any], object]
    # A sign of life besides the row's heartbeat (None: the row says it all).
    alive: Callable[[Any, datetime], bool] | None = None
    # Written on a job queued again because its worker was lost: what its page shows.
    lost_fields: dict[str, Any] = field(default_factory=dict)
    lost: Callable[[Any], None] | None = None


JOB_KINDS = (
    JobKind(
        "upload", Upload, lambda job: upload_dispatch(job.pk), _upload_alive, lost=_upload_lost
    ),
    JobKind(
        "refresh",
        ProjectRefresh,
        lambda job: refresh_dispatch(job.pk, job.project_id),
        lost_fields={"stage": STAGE_WORKER_LOST},
    ),
    JobKind(
        "clustering",
        ClusteringRun,
        clustering_dispatch,
        lost_fields={"stage": STAGE_WORKER_LOST, "progress": 0.0},
    ),
    JobKind(
        "export",
        ExportJob,
        lambda job: export_dispatch(job_id=job.pk),
        lost_fields={"progress_done": 0},
    ),
)


@dataclass
class SweepReport:
    dispatched: dict[str, int]
    requeued: dict[str, int]
    failed: dict[str, int]
    # Queued again because their worker was lost (also counted in requeued).
    lost: dict[str, int] = field(default_factory=dict)

    def total(self) -> int:
        return (
            sum(self.dispatched.values()) + sum(self.requeued.values()) + sum(self.failed.values())
        )


def _task_of(job: Any, tasks_by_job: dict[str, str]) -> str:
    """The task running the job: its own, or that of the job running it inside itself (a
    refresh's clustering run has no task; its ``origin`` names the refresh)."""
    return job.task_id or tasks_by_job.get(getattr(job, "origin", ""), "")


def jobs_lost_requeue() -> SweepReport:
    """Queue again (and send) every running job whose worker died, as far as this machine
    can see (pipeline.runners); fail one lost more often than FAULTLINE_JOB_MAX_REAPS. A
    job whose process is alive is left alone however long its stage is silent."""
    running: list[tuple[JobKind, list[Any]]] = [
        (kind, list(kind.model._default_manager.filter(status=RUNNING))) for kind in JOB_KINDS
    ]
    tasks_by_job = {
        job.job_name: job.task_id
        for _, jobs in running
        for job in jobs
        if isinstance(job, ProjectRefresh)
    }
    gone = runners_gone([_task_of(job, tasks_by_job) for _, jobs in running for job in jobs])
    report = SweepReport({}, {}, {}, {})
    timeout = timedelta(seconds=settings.FAULTLINE_JOB_HEARTBEAT_TIMEOUT_S)
    for kind, jobs in running:
        requeued = failed = 0
        for job in jobs:
            if _task_of(job, tasks_by_job) not in gone:
                continue
            if not job_reap(job, max_reaps=settings.FAULTLINE_JOB_MAX_REAPS, timeout=timeout):
                kind.model._default_manager.filter(
                    pk=job.pk, attempt=job.attempt, status=FAILED
                ).update(error_message=MSG_WORKER_LOST.format(times=job.reaped + 1))
                failed += 1
                logger.error("%s %s: its worker was lost too often; failed", kind.name, job.pk)
                continue
            # Only if the reap took it: a delivery may have claimed it meanwhile.
            taken = kind.model._default_manager.filter(
                pk=job.pk, attempt=job.attempt, status=QUEUED
            ).update(dispatched_at=None, **kind.lost_fields)
            if not taken:
                continue
            if kind.lost is not None:
                kind.lost(job)
            kind.dispatch(job)
            requeued += 1
            logger.warning("%s %s: its worker was lost; queued again", kind.name, job.pk)
        report.requeued[kind.name] = report.lost[kind.name] = requeued
        report.failed[kind.name] = failed
    return report


def jobs_sweep(*, now: datetime | None = None) -> SweepReport:
    """Queue again the jobs whose worker was lost, reap stalled jobs, then send every
    queued job that has no live message."""
    now = now or timezone.now()
    timeout = timedelta(seconds=settings.FAULTLINE_JOB_HEARTBEAT_TIMEOUT_S)
    report = jobs_lost_requeue()
    for kind in JOB_KINDS:
        requeued = failed = 0
        for job in stale_running(kind.model, timeout=timeout, now=now):
            if kind.alive is not None and kind.alive(job, now - timeout):
                continue
            if job_reap(job, max_reaps=settings.FAULTLINE_JOB_MAX_REAPS, timeout=timeout):
                requeued += 1
                logger.warning("%s %s stalled; queued again", kind.name, job.pk)
            else:
                failed += 1
                logger.error("%s %s stalled too often; failed", kind.name, job.pk)
        sent = 0
        for job in undispatched(
            kind.model,
            grace=timedelta(seconds=settings.FAULTLINE_JOB_SWEEP_GRACE_S),
            lost_after=timedelta(seconds=settings.FAULTLINE_JOB_LOST_AFTER_S),
            now=now,
        ):
            sent += bool(kind.dispatch(job))
        report.dispatched[kind.name] = sent
        report.requeued[kind.name] += requeued
        report.failed[kind.name] += failed
    return report
