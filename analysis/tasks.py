"""Celery tasks of the analysis app: they take ids, fetch, and call a service."""

from __future__ import annotations

from celery import shared_task

from analysis.clustering import project_misbehaviours_refresh


@shared_task(name="analysis.misbehaviours_refresh", acks_late=True)
def misbehaviours_refresh_task(project_id: int, run_id: int, force_full: bool = False) -> None:
    """Embed, cluster or assign the project's wrong steps; progress is kept on the run row.

    A run that is already done or failed is left alone, so a redelivered task does nothing.
    """
    project_misbehaviours_refresh(project_id=project_id, run_id=run_id, force_full=force_full)
