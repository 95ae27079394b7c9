from __future__ import annotations

from celery import shared_task


@shared_task(acks_late=True)
def refresh_project(project_id: int) -> None:
    """After new rollouts: the action-level analysis, then attribution, then clustering.

    The action analysis needs neither of the others and runs first; attribution comes
    before the clustering, which reads its decisive sets.
    """
    from analysis.services import project_misbehaviours_refresh
    from attribution.services import project_attribution_refresh
    from dashboard.services import project_action_analysis_refresh, project_overview_refresh

    project_action_analysis_refresh(project_id=project_id)
    try:
        project_attribution_refresh(project_id=project_id)
        project_misbehaviours_refresh(project_id=project_id)
    finally:
        # The overview's aggregates last: they include the attribution's point estimates.
        project_overview_refresh(project_id=project_id)


@shared_task(acks_late=True)
def refresh_action_analysis(project_id: int) -> None:
    from dashboard.services import project_action_analysis_refresh

    project_action_analysis_refresh(project_id=project_id)
