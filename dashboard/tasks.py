from __future__ import annotations

import contextlib

from celery import shared_task
from django.core.cache import cache

PENDING_TIMEOUT_S = 3600


def _pending_key(project_id: int) -> str:
    return f"faultline:refresh-pending:{project_id}"


def refresh_project_queue(*, project_id: int) -> bool:
    """Queue a refresh unless one is already waiting: a burst of uploads (the demo's 185
    files) then costs one refresh, plus one for whatever arrived after it started.
    Returns whether a task was queued."""
    try:
        first = cache.add(_pending_key(project_id), 1, PENDING_TIMEOUT_S)
    except Exception:  # no shared cache: queue anyway, a refresh twice is only slower
        first = True
    if not first:
        return False
    refresh_project.delay(project_id)
    return True


@shared_task(acks_late=True)
def refresh_project(project_id: int) -> None:
    refresh_project_run(project_id)


def refresh_project_run(project_id: int) -> None:
    """After new rollouts: the action-level analysis, then attribution, then clustering.

    The action analysis needs neither of the others and runs first; attribution comes
    before the clustering, which reads its decisive sets.
    """
    from analysis.services import project_misbehaviours_refresh
    from attribution.services import project_attribution_refresh
    from dashboard.services import project_action_analysis_refresh, project_overview_refresh
    from ingest.maintenance import tables_tidy

    # From here on, new uploads need a refresh of their own.
    with contextlib.suppress(Exception):  # without a cache the key expires on its own
        cache.delete(_pending_key(project_id))
    tables_tidy()  # the uploads' COPY left rows without visibility hints (PostgreSQL)
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
