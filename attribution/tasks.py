"""Celery tasks: ids in, a service call, nothing else (see attribution.services)."""

from __future__ import annotations

from celery import shared_task

from attribution.services import project_attribution_refresh


@shared_task(acks_late=True)
def attribution_refresh(project_id: int) -> None:
    """Train or fall back, calibrate, and attribute every failed rollout of the project.

    Queue it after an ingest and after new human labels; running it twice changes nothing.
    """
    project_attribution_refresh(project_id=project_id)
