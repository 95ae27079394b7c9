"""The one place that chains the apps after new rollouts (or a late outcome): the
action-level analysis, attribution, clustering, then the overview's aggregates.

Dispatch is coalesced: a burst of uploads (the demo's 185 files) costs one refresh, plus
one for whatever arrived after it started.
"""

from __future__ import annotations

import contextlib

from django.core.cache import cache

from analysis.clustering import project_misbehaviours_refresh
from attribution.action_analysis import project_action_analysis_refresh
from attribution.services import project_attribution_refresh
from ingest.maintenance import tables_tidy
from ingest.models import Upload, UploadStatus
from pipeline.overview import project_overview_refresh

PENDING_TIMEOUT_S = 3600


def _pending_key(project_id: int) -> str:
    return f"faultline:refresh-pending:{project_id}"


def refresh_project_queue(*, project_id: int) -> bool:
    """Queue a refresh unless one is already waiting. Returns whether a task was queued."""
    from pipeline.tasks import refresh_project

    try:
        first = cache.add(_pending_key(project_id), 1, PENDING_TIMEOUT_S)
    except Exception:  # no shared cache: queue anyway, a refresh twice is only slower
        first = True
    if not first:
        return False
    refresh_project.delay(project_id)
    return True


def project_refresh_dispatch(*, project_id: int) -> None:
    """Queue the project's analysis once its last pending upload has finished."""
    busy = Upload.objects.filter(
        project_id=project_id, status__in=(UploadStatus.QUEUED, UploadStatus.RUNNING)
    ).exists()
    if busy:
        return
    refresh_project_queue(project_id=project_id)


def refresh_project_run(project_id: int) -> None:
    """After new rollouts: the action-level analysis, then attribution, then clustering.

    The action analysis needs neither of the others and runs first; attribution comes
    before the clustering, which reads its decisive sets.
    """
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
