"""The export task; faultline/celery.py autodiscovers this package so Celery registers it."""

from __future__ import annotations

from celery import shared_task

from exports.services import export_run


@shared_task(acks_late=True)
def run_export(job_id: int) -> str:
    """Write one export job's files. Takes only the id; a finished job is not redone."""
    return export_run(job_id=job_id).status
