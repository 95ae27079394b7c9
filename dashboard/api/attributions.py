"""Attributions: one failed rollout's prediction set, rollback point and per-step
probabilities, and the project's current calibration with its coverage monitor."""

from __future__ import annotations

from django.http import Http404, HttpRequest
from ninja import Router

from attribution.core.metrics import set_size
from attribution.models import Calibration, TrajectoryAttribution
from attribution.selectors import attribution_sentence, coverage_monitor
from attribution.system_selectors import project_systems, system_thresholds
from dashboard.api.auth import request_project
from dashboard.api.errors import errors_documented
from dashboard.api.rollouts import ROLLOUT, rollout_or_404
from dashboard.api.schemas import (
    AttributionOut,
    CalibrationOut,
    CoverageMonitor,
    SystemCalibrationOut,
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
        sentence=attribution_sentence(row),
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
            systems=[],
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
