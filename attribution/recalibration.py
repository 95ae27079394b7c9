"""A stored calibration redone at another miscoverage, by the same per-system rules.

An export may ask for sets at an alpha other than the project's. It must not promise more
than the pages do: the same calibrating labels (the refresh's held-out half, sources that
may calibrate), the same per-agent-system calibration (``calibrate_per_system``) with the
borrowing the stored calibration was made with, and the same refusal of a claim for a
system with too few labels at the asked alpha. Only the probabilities stored by the
calibration's scorer are read, so nothing is scored again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from attribution.core.conformal import GROUPING_LENGTH, GROUPING_NONE
from attribution.core.label_sources import may_calibrate
from attribution.core.system_calibration import SystemCalibration, calibrate_per_system
from attribution.models import Calibration, TrajectoryAttribution
from attribution.services import label_trains
from ingest.core.records import Outcome
from ingest.models import Label
from ingest.selectors import decisive_labels


@dataclass(frozen=True)
class CalibrationRollout:
    """One labelled held-out rollout as the calibration sees it."""

    rollout_id: int
    probabilities: list[float]
    step: int
    agent_system: str


def calibration_rollouts(calibration: Calibration) -> list[CalibrationRollout]:
    """The project's labelled failed rollouts that may calibrate ``calibration``: a label
    of a calibrating source, not in the scorer's training half, scored by its scorer."""
    project = calibration.project
    chosen = decisive_labels(
        Label.objects.filter(trajectory__project=project, trajectory__outcome=Outcome.FAILURE)
    )
    steps = {
        rollout_id: label.step_index
        for rollout_id, label in chosen.items()
        if may_calibrate(label.source, gold_actions_calibrate=project.gold_actions_calibrate)
    }
    metrics = calibration.scorer.metrics if calibration.scorer else {}
    rows = (
        TrajectoryAttribution.objects.filter(
            project=project,
            trajectory_id__in=list(steps),
            scorer_version=calibration.scorer_version,
        )
        .values_list(
            "trajectory_id",
            "probabilities",
            "trajectory__agent_system",
            "trajectory__task_id",
            "trajectory__external_id",
        )
        .order_by("trajectory_id")
    )
    found: list[CalibrationRollout] = []
    for rollout_id, probabilities, agent_system, task_id, external_id in rows:
        step = steps[rollout_id]
        if not probabilities or step >= len(probabilities):
            continue
        if label_trains(metrics, agent_system, task_id or external_id):
            continue
        found.append(CalibrationRollout(rollout_id, list(probabilities), step, agent_system))
    return found


def recalibrate_per_system(
    calibration: Calibration, alpha: float, rollouts: Sequence[CalibrationRollout] | None = None
) -> SystemCalibration:
    """``calibration`` at ``alpha``: per agent system, with its stored borrowing and
    minimum; a system below the fewest labels for ``alpha`` gets no tau (no claim)."""
    if rollouts is None:
        rollouts = calibration_rollouts(calibration)
    stored = SystemCalibration.from_dict(calibration.by_system) if calibration.by_system else None
    grouping = calibration.grouping
    if grouping not in (GROUPING_NONE, GROUPING_LENGTH):
        grouping = GROUPING_LENGTH
    return calibrate_per_system(
        [r.probabilities for r in rollouts],
        [r.step for r in rollouts],
        [r.agent_system for r in rollouts],
        alpha=alpha,
        variant=calibration.variant,
        grouping=grouping,
        min_group_size=calibration.min_group_size,
        min_labels=stored.min_labels if stored else 0,
        borrow=stored.borrow if stored else None,
    )
