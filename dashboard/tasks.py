from __future__ import annotations

from celery import shared_task


@shared_task(acks_late=True)
def refresh_project(project_id: int) -> None:
    """After new rollouts: the action-level analysis, then attribution, then clustering.

    Attribution runs before the misbehaviour clustering because the clustering reads its
    decisive sets. The action analysis needs neither and runs first, so it is there even
    when a later step fails.
    """
    from dashboard.services import project_action_analysis_refresh

    project_action_analysis_refresh(project_id=project_id)

    from analysis.services import project_misbehaviours_refresh
    from attribution.services import project_attribution_refresh

    project_attribution_refresh(project_id=project_id)
    project_misbehaviours_refresh(project_id=project_id)


@shared_task(acks_late=True)
def refresh_action_analysis(project_id: int) -> None:
    from dashboard.services import project_action_analysis_refresh

    project_action_analysis_refresh(project_id=project_id)
