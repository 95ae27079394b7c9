"""Attributions: one failed rollout's prediction set, rollback point and per-step
probabilities, and the project's current calibration with its coverage monitor."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest
from django.urls import reverse
from ninja import Query, Router, Schema
from pydantic import Field

from attribution.core.metrics import set_size
from attribution.models import Calibration, TrajectoryAttribution
from attribution.selectors import attribution_sentence, coverage_monitor, point_step_agent
from attribution.system_selectors import (
    QUEUE_PAGE_SIZE,
    labelling_queue_page,
    project_systems,
    system_progress,
    system_thresholds,
)
from dashboard.api.auth import request_project
from dashboard.api.errors import errors_documented
from dashboard.api.rollouts import ROLLOUT, rollout_or_404
from dashboard.api.schemas import (
    AttributionOut,
    CalibrationOut,
    CoverageMonitor,
    LabellingQueueOut,
    QueueEntryOut,
    SystemCalibrationOut,
    SystemProgressOut,
    finite,
)
from ingest.core.records import Outcome
from ingest.models import Trajectory

MSG_NO_ATTRIBUTION = (
    "This rollout has no attribution: only failed rollouts get one, after the refresh that "
    "follows their upload or outcome."
)

router = Router(tags=["attributions"])


@router.get(
    ROLLOUT + "/attribution",
    response={200: AttributionOut, **errors_documented(404)},
    url_name="rollout_attribution",
    summary="The rollout's prediction set, rollback point and step probabilities",
)
def rollout_attribution(request: HttpRequest, slug: str, external_id: str) -> AttributionOut:
    rollout = rollout_or_404(request_project(request), external_id)
    row = TrajectoryAttribution.objects.filter(trajectory=rollout).first()
    if row is None:
        raise Http404(MSG_NO_ATTRIBUTION)
    probabilities = [float(p) for p in row.probabilities]
    return AttributionOut(
        external_id=rollout.external_id,
        lo=row.lo,
        hi=row.hi,
        set_size=set_size(row.interval),
        rollback_step=row.rollback_step,
        point_step=row.point_step,
        point_probability=probabilities[row.point_step]
        if row.point_step < len(probabilities)
        else None,
        agent=row.agent,
        probabilities=probabilities,
        alpha=row.alpha,
        confidence=None if row.alpha is None else 1 - row.alpha,
        calibrated=row.is_calibrated,
        calibration_id=row.calibration_id,
        calibration_group=row.calibration_group,
        group=row.group,
        scorer_version=row.scorer_version,
        sentence=attribution_sentence(row, point_agent=point_step_agent(row)),
        updated_at=row.updated_at,
    )


@router.get(
    "/projects/{slug:slug}/calibration",
    response={200: CalibrationOut, **errors_documented(404)},
    url_name="calibration",
    summary="The current calibration (thresholds per agent system) and the coverage monitor",
)
def calibration(request: HttpRequest, slug: str) -> CalibrationOut:
    project = request_project(request)
    current = Calibration.objects.filter(project=project).first()
    monitor = coverage_monitor(project)
    attributed = TrajectoryAttribution.objects.filter(project=project).count()
    failed = Trajectory.objects.filter(project=project, outcome=Outcome.FAILURE).count()
    monitor_out = CoverageMonitor(**{k: monitor[k] for k in CoverageMonitor.model_fields})
    if current is None:
        return CalibrationOut(
            calibrated=False,
            id=None,
            alpha=project.miscoverage,
            confidence=1 - project.miscoverage,
            variant="",
            grouping="",
            pooled_tau=None,
            tau_by_group={},
            m=0,
            m_by_group={},
            systems=[_uncalibrated(row) for row in system_progress(project)],
            scorer_version="",
            created_at=None,
            attributed=attributed,
            failed=failed,
            monitor=monitor_out,
        )
    return CalibrationOut(
        calibrated=True,
        id=current.pk,
        alpha=current.alpha,
        confidence=1 - current.alpha,
        variant=current.variant,
        grouping=current.grouping,
        pooled_tau=finite(current.pooled_tau),
        tau_by_group={str(g): finite(t) for g, t in (current.tau_by_group or {}).items()},
        m=current.m,
        m_by_group={str(g): int(m) for g, m in (current.m_by_group or {}).items()},
        systems=[
            SystemCalibrationOut(
                **{
                    **row,
                    "pooled_tau": finite(row["pooled_tau"]),
                    "tau_by_group": {g: finite(t) for g, t in row["tau_by_group"].items()},
                }
            )
            for row in system_thresholds(current, project_systems(project))
        ],
        scorer_version=current.scorer_version,
        created_at=current.created_at,
        attributed=attributed,
        failed=failed,
        monitor=monitor_out,
    )


def _uncalibrated(progress: dict[str, Any]) -> SystemCalibrationOut:
    """A system of a project without any calibration yet: its labels and what it needs."""
    return SystemCalibrationOut(
        system=progress["system"],
        labels=progress["labels"],
        calibration="none",
        borrows_from="",
        labels_needed=progress["needed"],
        pooled_tau=None,
        tau_by_group={},
        m_by_group={},
        held_out_coverage=None,
        held_out_removal=None,
    )


class QueueQuery(Schema):
    limit: int = Field(QUEUE_PAGE_SIZE, ge=1, le=500, description="How many entries to list")


@router.get(
    "/projects/{slug:slug}/labelling-queue",
    response={200: LabellingQueueOut, **errors_documented(400, 404)},
    url_name="labelling_queue",
    summary="The failed rollouts to label next, in order, and each agent system's progress",
)
def labelling_queue(request: HttpRequest, slug: str, query: Query[QueueQuery]) -> LabellingQueueOut:
    project = request_project(request)
    page = labelling_queue_page(project, limit=query.limit)
    entries = [
        QueueEntryOut(
            rank=entry["rank"],
            rollout=entry["trajectory"].external_id,
            page_url=request.build_absolute_uri(
                reverse("dashboard:rollout_detail", args=[project.slug, entry["trajectory"].pk])
            ),
            system=entry["system"],
            reason=entry["reason"],
            point_step=entry["point_step"],
            steps=entry["steps"],
        )
        for entry in page["entries"]
    ]
    progress = [
        SystemProgressOut(**{k: row[k] for k in SystemProgressOut.model_fields})
        for row in page["progress"]
    ]
    return LabellingQueueOut(
        rule=page["rule"],
        labelling_rule=page["labelling_rule"],
        queued=page["queued"],
        entries=entries,
        progress=progress,
    )
