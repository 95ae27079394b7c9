"""The sweeper and the reaper, run by Celery beat (``pipeline.tasks.jobs_sweep``).

- Sweep: a queued job whose dispatch never happened (the broker was down when it was
  accepted) or whose message seems lost is sent again.
- A label's recalibration is a refresh row written with the label (pipeline.refresh), so
  a lost dispatch of it is swept like any other refresh.
- Reap: a running job whose heartbeat stopped (its worker died without the message coming
  back, or hangs) is queued again, at most FAULTLINE_JOB_MAX_REAPS times, then failed with
  the reason. An ingest writes its rows in one transaction, so its heartbeat is read from
  the cache where its progress goes (ingest.progress), not only from its row.

Every kind of job the product runs is listed in ``JOB_KINDS``; it lives here because the
pipeline is the one layer that knows them all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from analysis.clustering import clustering_dispatch
from analysis.models import ClusteringRun
from exports.models import ExportJob
from exports.services import export_dispatch
from ingest.jobs import job_reap, stale_running, undispatched
from ingest.models import Upload
from ingest.progress import heartbeat_read
from pipeline.models import ProjectRefresh
from pipeline.refresh import refresh_dispatch
from pipeline.uploads import upload_dispatch

logger = logging.getLogger(__name__)


def _upload_alive(upload: Any, since: datetime) -> bool:
    beat = heartbeat_read(upload_id=upload.pk)
    return beat is not None and beat >= since.timestamp()


@dataclass(frozen=True)
class JobKind:
    name: str
    model: type[models.Model]
    dispatch: Callable[[Any], object]
    # A sign of life besides the row's heartbeat (None: the row says it all).
    alive: Callable[[Any, datetime], bool] | None = None


JOB_KINDS = (
    JobKind("upload", Upload, lambda job: upload_dispatch(job.pk), _upload_alive),
    JobKind("refresh", ProjectRefresh, lambda job: refresh_dispatch(job.pk, job.project_id)),
    JobKind("clustering", ClusteringRun, clustering_dispatch),
    JobKind("export", ExportJob, lambda job: export_dispatch(job_id=job.pk)),
)


@dataclass
class SweepReport:
    dispatched: dict[str, int]
    requeued: dict[str, int]
    failed: dict[str, int]

    def total(self) -> int:
        return (
            sum(self.dispatched.values()) + sum(self.requeued.values()) + sum(self.failed.values())
        )


def jobs_sweep(*, now: datetime | None = None) -> SweepReport:
    """Reap stalled jobs, then send every queued job that has no live message."""
    now = now or timezone.now()
    timeout = timedelta(seconds=settings.FAULTLINE_JOB_HEARTBEAT_TIMEOUT_S)
    report = SweepReport({}, {}, {})
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
        report.requeued[kind.name] = requeued
        report.failed[kind.name] = failed
    return report
