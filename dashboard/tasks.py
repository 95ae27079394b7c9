from __future__ import annotations

from celery import shared_task


@shared_task(acks_late=True)
def refresh_project(project_id: int) -> None:
    """After new rollouts: attribute failed rollouts, then re-cluster the wrong steps.

    Attribution runs first because the misbehaviour clustering reads its decisive sets.
    """
    from analysis.services import project_misbehaviours_refresh
    from attribution.services import project_attribution_refresh

    project_attribution_refresh(project_id=project_id)
    project_misbehaviours_refresh(project_id=project_id)
