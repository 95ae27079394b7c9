"""Celery tasks of the pipeline: they take ids, call a service, and chain nothing else."""

from __future__ import annotations

import logging

from celery import shared_task

from attribution.action_analysis import project_action_analysis_refresh
from ingest.models import Upload, UploadStatus
from ingest.services import upload_ingest
from pipeline.refresh import failed_upload_dispatch, project_refresh_dispatch, refresh_project_run
from pipeline.uploads import upload_counted

logger = logging.getLogger(__name__)

FINISHED = (UploadStatus.DONE, UploadStatus.FAILED)


@shared_task(acks_late=True)
def ingest_upload(upload_id: int) -> str:
    """Parse one stored upload, then queue the project's refresh. A second run is a no-op."""
    before = Upload.objects.filter(pk=upload_id).values_list("status", flat=True).first()
    if before is None or before in FINISHED:
        return before or "missing"
    upload = upload_ingest(upload_id=upload_id)
    if upload.status == UploadStatus.DONE:
        upload_counted(upload=upload)
        project_refresh_dispatch(project_id=upload.project_id)
    elif upload.status == UploadStatus.FAILED:
        failed_upload_dispatch(project_id=upload.project_id)
    return upload.status


@shared_task(acks_late=True)
def refresh_project(project_id: int) -> None:
    refresh_project_run(project_id)


@shared_task(acks_late=True)
def refresh_action_analysis(project_id: int) -> None:
    project_action_analysis_refresh(project_id=project_id)


@shared_task
def jobs_sweep() -> dict[str, dict[str, int]]:
    """Celery beat's periodic sweep and reap (pipeline.jobs), and the overview counters
    of one project stored in an older shape rebuilt; cheap when all is well."""
    from pipeline.jobs import jobs_sweep as sweep
    from pipeline.overview_counts import overview_counts_upgrade

    report = sweep()
    try:  # best effort, after the jobs: a project it cannot rebuild must not stop them
        overview_counts_upgrade()
    except Exception:
        logger.exception("the overview counters could not be rebuilt in their new shape")
    return {
        "dispatched": report.dispatched,
        "requeued": report.requeued,
        "failed": report.failed,
        "lost": report.lost,
    }


@shared_task(acks_late=True)
def assemble_live_traces(project_id: int, trace_ids: list[str], scheduled: bool = False) -> int:
    """Rebuild the rollouts of these OTLP traces from their stored spans (pending ones only,
    so a second delivery does nothing); ``scheduled``: the rebuild a long trace waited for."""
    from pipeline.live import live_traces_assemble_run

    return live_traces_assemble_run(project_id, trace_ids, scheduled=scheduled)


@shared_task(acks_late=True)
def close_quiet_traces() -> int:
    """Periodic (Celery beat): close quiet OTLP traces, assemble any whose task was lost."""
    from pipeline.live import live_traces_close_run

    return live_traces_close_run()
