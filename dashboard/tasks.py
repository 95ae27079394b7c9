from __future__ import annotations

import importlib
import logging

from celery import shared_task

logger = logging.getLogger(__name__)

# The later steps of a refresh, in order: attribution before the misbehaviour clustering,
# which reads its decisive sets.
REFRESH_STEPS = (
    ("attribution.services", "project_attribution_refresh"),
    ("analysis.services", "project_misbehaviours_refresh"),
)


@shared_task(acks_late=True)
def refresh_project(project_id: int) -> None:
    """After new rollouts: the action-level analysis, then attribution, then clustering.

    The action analysis needs neither of the others and runs first. A step whose app does
    not provide its service (yet) is skipped with a warning; an error inside a service
    still fails the task.
    """
    from dashboard.services import project_action_analysis_refresh, project_overview_refresh

    project_action_analysis_refresh(project_id=project_id)
    try:
        _later_steps(project_id)
    finally:
        # The overview's aggregates last: they include the attribution's point estimates.
        project_overview_refresh(project_id=project_id)


def _later_steps(project_id: int) -> None:
    for module_name, service_name in REFRESH_STEPS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            module = None
        service = getattr(module, service_name, None)
        if service is None:
            logger.warning(
                "refresh_project: %s.%s is not available; skipped", module_name, service_name
            )
            continue
        service(project_id=project_id)


@shared_task(acks_late=True)
def refresh_action_analysis(project_id: int) -> None:
    from dashboard.services import project_action_analysis_refresh

    project_action_analysis_refresh(project_id=project_id)
