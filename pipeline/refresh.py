"""The one place that chains the apps after new rollouts (or a late outcome): the
action-level analysis, attribution, clustering, then the overview's aggregates.

Each request is a :class:`ProjectRefresh` row. Requests coalesce: an upload that finishes
while others of the project are on their way leaves the refresh to the last of them, and
while one refresh waits queued later requests join it, so a burst of uploads (the demo's
185 files) costs one or two refreshes. A stuck upload (silent past the heartbeat timeout,
or never sent) never holds a refresh back. The row, not a cache key, says whether one is
waiting, so a lost dispatch is found by the sweeper (pipeline.jobs).

Most refreshes are incremental: only the new and changed rollouts are analysed, with
the scorer and calibration the last full refresh stored (pipeline.incremental says when
a full one is due instead, and each row says which kind ran and why). A label asks for a
full refresh: the row is written in the label's transaction (``label_refresh_request``,
registered with attribution.labels at start-up), so no recalibration is ever lost.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from analysis.clustering import project_misbehaviours_refresh
from attribution.action_analysis import project_action_analysis_refresh
from attribution.label_sources_refresh import project_derived_labels_refresh
from attribution.services import project_attribution_refresh
from ingest.jobs import Superseded, job_beat, job_claim, job_dispatch, job_update
from ingest.maintenance import tables_tidy
from ingest.models import Upload, UploadStatus
from ingest.progress import heartbeat_read
from pipeline.incremental import (
    MARGIN,
    RefreshPlan,
    full_basis,
    incremental_run,
    refresh_plan,
    window_uploads,
)
from pipeline.models import ProjectRefresh, RefreshKind, RefreshStatus
from pipeline.overview_counts import overview_counts_rebuild

logger = logging.getLogger(__name__)

MSG_REFRESH_FAILED = "The refresh failed at its {stage} stage ({kind}: {error})."
REASON_LABEL = "a label was added or changed"


def refresh_dispatch(refresh_id: int, project_id: int, *, countdown: float = 0.0) -> bool:
    """Send the refresh to a worker (to start ``countdown`` seconds from now); False (the
    row stays queued) with the broker down."""
    from pipeline.tasks import refresh_project

    return job_dispatch(
        ProjectRefresh,
        refresh_id,
        lambda: refresh_project.apply_async((project_id,), countdown=countdown or None),
    )


def refresh_project_queue(
    *,
    project_id: int,
    full: bool = False,
    reason: str = "",
    rollout_ids: Collection[int] = (),
    countdown: float = 0.0,
    dispatch: bool = True,
) -> bool:
    """Ask for a refresh unless one is already waiting (the request then joins it: a full
    one makes it full, named rollouts are added). Returns whether one was queued. Without
    ``dispatch`` no task is sent: the caller runs it (``refresh_project_run``, the CLI's
    --sync)."""
    refresh_id = _refresh_request(project_id, full, reason, rollout_ids)
    if refresh_id is None:
        return False
    if dispatch:
        refresh_dispatch(refresh_id, project_id, countdown=countdown)
    return True


def _refresh_request(
    project_id: int, full: bool, reason: str, rollout_ids: Collection[int]
) -> int | None:
    """The new request's id, or None when it joined the one waiting."""
    with transaction.atomic():
        waiting = (
            ProjectRefresh.objects.select_for_update()
            .filter(project_id=project_id, status=RefreshStatus.QUEUED)
            .order_by("created_at", "id")
            .first()
        )
        if waiting is not None:
            fields = []
            if full and not waiting.full_requested:
                waiting.full_requested, waiting.request_reason = True, reason[:200]
                fields += ["full_requested", "request_reason"]
            named = sorted(set(waiting.rollout_ids or []) | set(rollout_ids))
            if named != sorted(waiting.rollout_ids or []):
                waiting.rollout_ids = named
                fields.append("rollout_ids")
            if fields:
                # Only while it still waits: a refresh claimed meanwhile gets a new request.
                joined = ProjectRefresh.objects.filter(
                    pk=waiting.pk, status=RefreshStatus.QUEUED
                ).update(**{name: getattr(waiting, name) for name in fields})
                if not joined:
                    waiting = None
            if waiting is not None:
                return None
        refresh = ProjectRefresh.objects.create(
            project_id=project_id,
            full_requested=full,
            request_reason=reason[:200] if full else "",
            rollout_ids=sorted(set(rollout_ids)),
        )
    return refresh.pk


def label_refresh_request(project_id: int) -> None:
    """A label was added or changed: a full refresh recalibrates. attribution.labels calls
    it inside the label's transaction: the request commits with the label, and is sent
    once both are committed (or by the sweeper, with the broker down)."""
    refresh_id = _refresh_request(project_id, True, REASON_LABEL, ())
    if refresh_id is not None:
        transaction.on_commit(lambda: refresh_dispatch(refresh_id, project_id))


def _uploads_on_their_way(project_id: int) -> bool:
    """Whether another upload of the project will finish soon and ask for the refresh
    itself: one running with a recent heartbeat, or one sent to a worker recently. A stuck
    upload (silent past the heartbeat timeout, or never sent because the broker was down)
    does not count, so it never holds the refresh back."""
    now = timezone.now()
    timeout = timedelta(seconds=settings.FAULTLINE_JOB_HEARTBEAT_TIMEOUT_S)
    lost_after = timedelta(seconds=settings.FAULTLINE_JOB_LOST_AFTER_S)
    running = Upload.objects.filter(project_id=project_id, status=UploadStatus.RUNNING)
    for upload_id, heartbeat in running.values_list("pk", "heartbeat_at"):
        beat = heartbeat_read(upload_id=upload_id)
        recent = (
            max(heartbeat.timestamp() if heartbeat else 0.0, beat or 0.0)
            >= (now - timeout).timestamp()
        )
        if recent:
            return True
    return Upload.objects.filter(
        project_id=project_id, status=UploadStatus.QUEUED, dispatched_at__gte=now - lost_after
    ).exists()


def project_refresh_dispatch(*, project_id: int, countdown: float = 0.0) -> None:
    """After an upload finished: queue the project's refresh, unless another upload is on
    its way and will ask when it finishes (a burst of 185 files costs one or two refreshes,
    not 185). ``countdown`` holds it back so that what follows joins it (live traces)."""
    if _uploads_on_their_way(project_id):
        return
    refresh_project_queue(project_id=project_id, countdown=countdown)


def failed_upload_dispatch(*, project_id: int) -> None:
    """After an upload failed: it adds nothing, but it may have been the last of a burst,
    the one the done uploads before it left the refresh to. Queue the refresh when an
    upload finished since the project's latest refresh was asked for (a file that fails
    alone queues nothing)."""
    latest = (
        ProjectRefresh.objects.filter(project_id=project_id)
        .order_by("-created_at")
        .values_list("created_at", flat=True)
        .first()
    )
    done = Upload.objects.filter(project_id=project_id, status=UploadStatus.DONE)
    if latest is not None:
        done = done.filter(finished_at__gte=latest)
    if done.exists():
        project_refresh_dispatch(project_id=project_id)


def refresh_project_run(project_id: int) -> ProjectRefresh | None:
    """Run the project's waiting refresh (or a new one when none waits: the CLI's --sync,
    tests). A refresh that another attempt took over stops at its next stage."""
    waiting = (
        ProjectRefresh.objects.filter(project_id=project_id, status=RefreshStatus.QUEUED)
        .order_by("created_at", "id")
        .values_list("pk", flat=True)
        .first()
    )
    if waiting is None:
        running = (
            ProjectRefresh.objects.filter(project_id=project_id, status=RefreshStatus.RUNNING)
            .order_by("created_at", "id")
            .values_list("pk", flat=True)
            .first()
        )
        # A redelivered task (its worker was lost) takes over the refresh it was running.
        waiting = running or ProjectRefresh.objects.create(project_id=project_id).pk
    # The stage says the refresh runs again (a lost worker's requeue named that instead).
    refresh = job_claim(ProjectRefresh, waiting, stage="planning")
    if refresh is None:
        return None
    return _run(refresh)


def _full_run(refresh: ProjectRefresh, plan: RefreshPlan, beat: Stage) -> None:
    """The whole chain over the whole project; leaves the basis on the plan."""
    project_id = refresh.project_id
    uploads_seen = window_uploads(project_id, (refresh.started_at or timezone.now()) - MARGIN)
    beat("tidy")
    tables_tidy()  # the uploads' COPY left rows without visibility hints (PostgreSQL)
    beat("action analysis")
    project_action_analysis_refresh(project_id=project_id)
    derived = project_derived_labels_refresh(project_id=project_id)  # gold-action, sibling
    try:
        beat("attribution")
        attribution = project_attribution_refresh(project_id=project_id)
        plan.basis = full_basis(
            project_id=project_id,
            attribution=attribution,
            neutral_tools=list(derived.neutral_tools if derived else ()),
            uploads_seen=uploads_seen,
        )
        beat("clustering")
        project_misbehaviours_refresh(project_id=project_id, origin=refresh.job_name)
    finally:
        # The overview's aggregates last: they include the attribution's point estimates.
        overview_counts_rebuild(project_id=project_id)
    plan.rollout_ids = []


class Stage:
    """The stage the refresh is at: written on the row with each heartbeat, and named by
    the error message when the refresh fails."""

    def __init__(self, refresh: ProjectRefresh) -> None:
        self.refresh, self.name = refresh, "planning"

    def __call__(self, name: str) -> None:
        self.name = name
        job_beat(self.refresh, stage=name)


def _run(refresh: ProjectRefresh) -> ProjectRefresh:
    project_id = refresh.project_id
    beat = Stage(refresh)
    plan = RefreshPlan(RefreshKind.FULL, "")
    try:
        plan = refresh_plan(refresh)
        job_update(refresh, kind=plan.kind, reason=plan.reason[:200])
        if plan.kind == RefreshKind.INCREMENTAL:
            plan = incremental_run(refresh, plan, beat)
        if plan.kind == RefreshKind.FULL:
            job_update(refresh, kind=plan.kind, reason=plan.reason[:200])
            _full_run(refresh, plan, beat)
    except Superseded:
        logger.info("refresh %s attempt %s was superseded", refresh.pk, refresh.attempt)
        return ProjectRefresh.objects.get(pk=refresh.pk)
    except Exception as exc:
        logger.exception("refresh %s of project %s failed", refresh.pk, project_id)
        job_update(
            refresh,
            status=RefreshStatus.FAILED,
            finished_at=timezone.now(),
            error_message=MSG_REFRESH_FAILED.format(
                stage=beat.name, kind=type(exc).__name__, error=str(exc)[:500]
            ),
        )
        return ProjectRefresh.objects.get(pk=refresh.pk)
    job_update(
        refresh,
        status=RefreshStatus.DONE,
        stage="done",
        finished_at=timezone.now(),
        kind=plan.kind,
        reason=plan.reason[:200],
        rollouts=(
            len(plan.rollout_ids)
            if plan.kind == RefreshKind.INCREMENTAL
            else plan.basis.get("rollouts", 0)
        ),
        basis=plan.basis,
    )
    return ProjectRefresh.objects.get(pk=refresh.pk)
