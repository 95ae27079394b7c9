"""The one place that chains the apps after new rollouts (or a late outcome): the
action-level analysis, attribution, clustering, then the overview's aggregates.

Each request is a :class:`ProjectRefresh` row. Requests coalesce: an upload that finishes
while others of the project are on their way leaves the refresh to the last of them, and
while one refresh waits queued later requests join it, so a burst of uploads (the demo's
185 files) costs one or two refreshes. A stuck upload (silent past the heartbeat timeout,
or never sent) never holds a refresh back. The row, not a cache key, says whether one is
waiting, so a lost dispatch is found by the sweeper (pipeline.jobs).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from analysis.clustering import project_misbehaviours_refresh
from attribution.action_analysis import project_action_analysis_refresh
from attribution.label_sources_refresh import project_derived_labels_refresh
from attribution.services import project_attribution_refresh
from ingest.jobs import Superseded, job_beat, job_claim, job_dispatch, job_update
from ingest.maintenance import tables_tidy
from ingest.models import Upload, UploadStatus
from ingest.progress import heartbeat_read
from pipeline.models import ProjectRefresh, RefreshStatus
from pipeline.overview import project_overview_refresh

logger = logging.getLogger(__name__)

MSG_REFRESH_FAILED = "The refresh failed at its {stage} stage ({kind}: {error})."


def refresh_dispatch(refresh_id: int, project_id: int) -> bool:
    """Send the refresh to a worker; False (the row stays queued) with the broker down."""
    from pipeline.tasks import refresh_project

    return job_dispatch(ProjectRefresh, refresh_id, lambda: refresh_project.delay(project_id))


def refresh_project_queue(*, project_id: int) -> bool:
    """Ask for a refresh unless one is already waiting. Returns whether one was queued."""
    with transaction.atomic():
        waiting = ProjectRefresh.objects.filter(
            project_id=project_id, status=RefreshStatus.QUEUED
        ).exists()
        if waiting:
            return False
        refresh = ProjectRefresh.objects.create(project_id=project_id)
    refresh_dispatch(refresh.pk, project_id)
    return True


def _uploads_on_their_way(project_id: int) -> bool:
    """Whether another upload of the project will finish soon and ask for the refresh
    itself: one running with a recent heartbeat, or one sent to a worker recently. A stuck
    upload (silent past the heartbeat timeout, or never sent because the broker was down)
    does not count, so it never holds the refresh back."""
    now = timezone.now()
    timeout = timedelta(seconds=settings.FAULTLINE_JOB_HEARTBEAT_TIMEOUT_S)
    lost_after = timedelta(seconds=settings.FAULTLINE_JOB_LOST_AFTER_S)
    running = Upload.objects.filter(project_id=project_id, status=UploadStatus.RUNNING)
    for upload_id, heartbeat in running.values_list("pk", "heartbeat_at"):
        beat = heartbeat_read(upload_id=upload_id)
        recent = (
            max(heartbeat.timestamp() if heartbeat else 0.0, beat or 0.0)
            >= (now - timeout).timestamp()
        )
        if recent:
            return True
    return Upload.objects.filter(
        project_id=project_id, status=UploadStatus.QUEUED, dispatched_at__gte=now - lost_after
    ).exists()


def project_refresh_dispatch(*, project_id: int) -> None:
    """After an upload finished: queue the project's refresh, unless another upload is on
    its way and will ask when it finishes (a burst of 185 files costs one or two refreshes,
    not 185)."""
    if _uploads_on_their_way(project_id):
        return
    refresh_project_queue(project_id=project_id)


def refresh_project_run(project_id: int) -> ProjectRefresh | None:
    """Run the project's waiting refresh (or a new one when none waits: the CLI's --sync,
    tests). A refresh that another attempt took over stops at its next stage."""
    waiting = (
        ProjectRefresh.objects.filter(project_id=project_id, status=RefreshStatus.QUEUED)
        .order_by("created_at", "id")
        .values_list("pk", flat=True)
        .first()
    )
    if waiting is None:
        running = (
            ProjectRefresh.objects.filter(project_id=project_id, status=RefreshStatus.RUNNING)
            .order_by("created_at", "id")
            .values_list("pk", flat=True)
            .first()
        )
        # A redelivered task (its worker was lost) takes over the refresh it was running.
        waiting = running or ProjectRefresh.objects.create(project_id=project_id).pk
    refresh = job_claim(ProjectRefresh, waiting)
    if refresh is None:
        return None
    return _run(refresh)


def _run(refresh: ProjectRefresh) -> ProjectRefresh:
    project_id = refresh.project_id
    stage = "tidy"
    try:
        tables_tidy()  # the uploads' COPY left rows without visibility hints (PostgreSQL)
        stage = "action analysis"
        job_beat(refresh, stage=stage)
        project_action_analysis_refresh(project_id=project_id)
        project_derived_labels_refresh(project_id=project_id)  # gold-action, sibling labels
        try:
            stage = "attribution"
            job_beat(refresh, stage=stage)
            project_attribution_refresh(project_id=project_id)
            stage = "clustering"
            job_beat(refresh, stage=stage)
            project_misbehaviours_refresh(project_id=project_id)
        finally:
            # The overview's aggregates last: they include the attribution's point estimates.
            project_overview_refresh(project_id=project_id)
    except Superseded:
        logger.info("refresh %s attempt %s was superseded", refresh.pk, refresh.attempt)
        return ProjectRefresh.objects.get(pk=refresh.pk)
    except Exception as exc:
        logger.exception("refresh %s of project %s failed", refresh.pk, project_id)
        job_update(
            refresh,
            status=RefreshStatus.FAILED,
            finished_at=timezone.now(),
            error_message=MSG_REFRESH_FAILED.format(
                stage=stage, kind=type(exc).__name__, error=str(exc)[:500]
            ),
        )
        return ProjectRefresh.objects.get(pk=refresh.pk)
    job_update(refresh, status=RefreshStatus.DONE, stage="done", finished_at=timezone.now())
    return ProjectRefresh.objects.get(pk=refresh.pk)
