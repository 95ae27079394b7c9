"""Writes of the attribution app: train, calibrate, attribute, and human labels.

``project_attribution_refresh`` is the one entry point that the Celery task and the
dashboard's refresh call; it is idempotent (the same labels and rollouts give the same
scorer version, the same calibration row and the same attributions) and writes in bulk.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction

from attribution.core.attribute import attribute, point_estimate, responsible_agent
from attribution.core.conformal import (
    GROUPING_LENGTH,
    TWO_SIDED,
    AlphaTooSmallError,
    calibrate,
    group_key,
    normalise,
)
from attribution.core.conformal import Calibration as CoreCalibration
from attribution.core.diagnostics import coverage_curve
from attribution.core.scorers import HeuristicScorer, LearnedScorer, StepScorer
from attribution.core.scorers.base import check_training_data
from attribution.core.scorers.judge import JudgeError, LLMJudgeScorer
from attribution.core.scorers.serialize import dump_scorer, scorer_version
from attribution.models import Calibration, TrainedScorer, TrajectoryAttribution
from ingest.columns import STEP_ANALYSIS_FIELDS
from ingest.core.records import Outcome
from ingest.models import Label, Trajectory
from ingest.selectors import decisive_labels, step_records_by_rollout
from projects.models import Project

logger = logging.getLogger(__name__)

JUDGE_BACKOFF = 0.5
# Below this many labelled failed rollouts there is too little to both train a model and
# keep a held-out half for calibration: the label-free heuristic scorer is used instead.
MIN_TRAINING_LABELS = 40
TRAIN_SHARE = 0.5
MIN_GROUP_SIZE = 30
BATCH_SIZE = 200
RANDOM_STATE = 0


def _records(trajectories: Sequence[Trajectory]) -> dict[int, SimpleNamespace]:
    """Label-free in-memory rollouts (steps in order) for the scorers, one query for steps."""
    records = {
        t.pk: SimpleNamespace(
            steps=[],
            task_text=t.task_text,
            environment=t.environment,
            agent_system=t.agent_system,
        )
        for t in trajectories
    }
    steps = step_records_by_rollout(list(records), fields=STEP_ANALYSIS_FIELDS)
    for rollout_id, rollout_steps in steps.items():
        records[rollout_id].steps = rollout_steps
    return records


def _batches(items: Sequence[Any], size: int = BATCH_SIZE) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _decisive_labels(project: Project) -> dict[int, int]:
    """trajectory id -> labelled decisive step of the project's failed rollouts."""
    chosen = decisive_labels(
        Label.objects.filter(trajectory__project=project, trajectory__outcome=Outcome.FAILURE)
    )
    return {trajectory_id: label.step_index for trajectory_id, label in chosen.items()}


def in_training_half(task: str) -> bool:
    """Whether a task's rollouts train the scorer (else they calibrate it); the exports
    use it too, to recalibrate at another alpha on the same held-out half."""
    # A stable hash of the task: the same task is always on the same side, across runs.
    digest = hashlib.sha256(task.encode("utf-8")).digest()
    return digest[0] / 256 < TRAIN_SHARE


def _split(trajectories: Sequence[Trajectory]) -> tuple[list[Trajectory], list[Trajectory]]:
    train = [t for t in trajectories if in_training_half(t.task_id or t.external_id)]
    calibration = [t for t in trajectories if not in_training_half(t.task_id or t.external_id)]
    return train, calibration


def _store_scorer(project: Project, scorer: StepScorer, metrics: dict[str, Any]) -> TrainedScorer:
    blob = dump_scorer(scorer)
    version = scorer_version(blob)
    row, _ = TrainedScorer.objects.get_or_create(
        project=project,
        version=version,
        defaults={
            "kind": scorer.kind,
            "params": scorer.get_params(),
            "blob": blob,
            "metrics": metrics,
        },
    )
    return row


def _fingerprint(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def judge_from_settings() -> LLMJudgeScorer | None:
    """The optional LLM judge when FAULTLINE_JUDGE_URL and FAULTLINE_JUDGE_MODEL are set."""
    url = getattr(settings, "FAULTLINE_JUDGE_URL", "")
    model = getattr(settings, "FAULTLINE_JUDGE_MODEL", "")
    if not url or not model:
        return None
    return LLMJudgeScorer(
        url=url,
        model=model,
        key=getattr(settings, "FAULTLINE_JUDGE_KEY", ""),
        timeout=float(getattr(settings, "FAULTLINE_JUDGE_TIMEOUT", 30.0)),
        backoff=JUDGE_BACKOFF,
    )


Scored = dict[int, tuple[Any, SimpleNamespace]]


def _slim(record: SimpleNamespace) -> SimpleNamespace:
    """What storing an attribution reads of a rollout (its agents and environment): kept
    instead of the whole record while the other rollouts are scored, so that memory does
    not grow with the labelled rollouts' contents."""
    return SimpleNamespace(
        steps=[SimpleNamespace(agent=step.agent) for step in record.steps],
        task_text="",
        environment=record.environment,
        agent_system=record.agent_system,
    )


def _probabilities(scorer: LearnedScorer, matrix: Any) -> Any:
    """What ``scorer.step_probabilities`` gives, from a feature matrix already computed."""
    if matrix.shape[0] == 0:
        return np.zeros(0)
    return normalise(scorer.proba_from_matrix(matrix))


def _train(
    project: Project,
    labelled: list[Trajectory],
    labels: dict[int, int],
    fallback: StepScorer,
) -> tuple[StepScorer, TrainedScorer, list[Trajectory], Scored]:
    """The scorer, its stored row, the labelled rollouts left for calibration, and the
    training rollouts' probabilities and records by id (their features are computed once,
    for training and scoring both)."""
    if len(labelled) >= MIN_TRAINING_LABELS:
        train, held_out = _split(labelled)
        if train and len(held_out) >= MIN_TRAINING_LABELS // 4:
            records = _records(train)
            views, steps = check_training_data(
                [records[t.pk] for t in train], [labels[t.pk] for t in train]
            )
            learned = LearnedScorer(random_state=RANDOM_STATE)
            matrices = [learned.features(view) for view in views]
            learned.fit_matrices(matrices, steps)
            known = {
                t.pk: (_probabilities(learned, matrix), _slim(records[t.pk]))
                for t, matrix in zip(train, matrices, strict=True)
            }
            row = _store_scorer(
                project, learned, {"trained_on": len(train), "held_out": len(held_out)}
            )
            return learned, row, held_out, known
    row = _store_scorer(project, fallback, {"trained_on": 0, "held_out": len(labelled)})
    return fallback, row, labelled, {}


def _calibrate(
    project: Project,
    scorer: StepScorer,
    scorer_row: TrainedScorer,
    held_out: list[Trajectory],
    labels: dict[int, int],
    alpha: float,
) -> tuple[Calibration | None, Scored]:
    """The calibration (None when there are too few labels), and the held-out rollouts'
    probabilities and records by id (they need not be scored twice)."""
    records = _records(held_out)
    probabilities = {t.pk: scorer.step_probabilities(records[t.pk]) for t in held_out}
    known = {t.pk: (probabilities[t.pk], _slim(records[t.pk])) for t in held_out}
    if not held_out:
        return None, known
    steps = [labels[t.pk] for t in held_out]
    probs = [probabilities[t.pk] for t in held_out]
    groups = [
        group_key(GROUPING_LENGTH, n_steps=len(p), environment=t.environment)
        for t, p in zip(held_out, probs, strict=True)
    ]
    try:
        result = calibrate(
            probs,
            steps,
            alpha=alpha,
            variant=TWO_SIDED,
            grouping=GROUPING_LENGTH,
            groups=groups,
            min_group_size=MIN_GROUP_SIZE,
        )
    except AlphaTooSmallError:
        return None, known
    fingerprint = _fingerprint(
        scorer_row.version, result.to_dict(), sorted((t.pk, labels[t.pk]) for t in held_out)
    )
    latest = Calibration.objects.filter(project=project).first()
    if latest is not None and latest.fingerprint == fingerprint:
        return latest, known
    diagnostics = {
        "curve": coverage_curve(probs, steps, groups=groups, seed=RANDOM_STATE),
        "held_out": len(held_out),
    }
    calibration = Calibration.objects.create(
        project=project,
        scorer=scorer_row,
        scorer_version=scorer_row.version,
        alpha=result.alpha,
        variant=result.variant,
        grouping=result.grouping,
        pooled_tau=result.pooled_tau,
        tau_by_group=result.tau_by_group,
        m=result.m,
        m_by_group=result.m_by_group,
        min_group_size=result.min_group_size,
        diagnostics=diagnostics,
        fingerprint=fingerprint,
    )
    return calibration, known


def _core_calibration(calibration: Calibration) -> CoreCalibration:
    return CoreCalibration(
        alpha=calibration.alpha,
        variant=calibration.variant,
        grouping=calibration.grouping,
        pooled_tau=calibration.pooled_tau,
        m=calibration.m,
        tau_by_group=dict(calibration.tau_by_group),
        m_by_group=dict(calibration.m_by_group),
        min_group_size=calibration.min_group_size,
    )


UPDATE_FIELDS = [
    "project", "probabilities", "lo", "hi", "point_step", "agent", "rollback_step", "alpha",
    "tau", "group", "calibration_group", "calibration", "scorer_version", "updated_at",
]  # fmt: skip


def project_attribution_refresh(*, project_id: int, alpha: float | None = None) -> None:
    """Train (or fall back), calibrate and attribute every failed rollout of a project, at
    the project's miscoverage unless ``alpha`` says otherwise.

    With enough labels the learned scorer is trained on half of them (by task) and the
    other half calibrates it. With fewer, the LLM judge (when configured) or else the
    label-free heuristic scores the steps and all labels calibrate. A judge that fails
    after its retries is dropped for the heuristic, and the refresh starts over.
    """
    if alpha is None:
        alpha = Project.objects.filter(pk=project_id).values_list("miscoverage", flat=True).first()
        if alpha is None:
            return  # the project is gone
    judge = judge_from_settings()
    if judge is not None:
        try:
            _refresh(project_id, alpha, judge)
            return
        except JudgeError as error:
            logger.warning(
                "LLM judge failed for project %s, using the heuristic: %s", project_id, error
            )
    _refresh(project_id, alpha, HeuristicScorer())


def _refresh(project_id: int, alpha: float, fallback: StepScorer) -> None:
    project = Project.objects.get(pk=project_id)
    failed = list(
        Trajectory.objects.filter(
            project=project, outcome=Outcome.FAILURE, step_count__gt=0
        ).order_by("id")
    )
    labels = _decisive_labels(project)
    labelled = [t for t in failed if t.pk in labels]
    scorer, scorer_row, held_out, trained = _train(project, labelled, labels, fallback)
    calibration, known = _calibrate(project, scorer, scorer_row, held_out, labels, alpha)
    known.update(trained)
    core_calibration = _core_calibration(calibration) if calibration is not None else None
    for batch in _batches(failed):
        records = _records([t for t in batch if t.pk not in known])
        rows = []
        for trajectory in batch:
            if trajectory.pk in known:
                probabilities, record = known[trajectory.pk]
            else:
                record = records[trajectory.pk]
                probabilities = scorer.step_probabilities(record)
            rows.append(
                _attribution_row(
                    trajectory, record, probabilities, core_calibration, calibration, scorer_row
                )
            )
        with transaction.atomic():
            TrajectoryAttribution.objects.bulk_create(
                rows,
                update_conflicts=True,
                unique_fields=["trajectory"],
                update_fields=UPDATE_FIELDS,
            )
    # Rollouts that are no longer failed (or lost their steps) lose their attribution.
    TrajectoryAttribution.objects.filter(project=project).exclude(
        trajectory__outcome=Outcome.FAILURE, trajectory__step_count__gt=0
    ).delete()


def _attribution_row(
    trajectory: Trajectory,
    record: SimpleNamespace,
    probabilities: Any,
    core_calibration: CoreCalibration | None,
    calibration: Calibration | None,
    scorer_row: TrainedScorer,
) -> TrajectoryAttribution:
    if core_calibration is not None:
        result = attribute(record, probabilities, core_calibration)
        return TrajectoryAttribution(
            trajectory=trajectory,
            project_id=trajectory.project_id,
            probabilities=[round(p, 6) for p in result.probabilities],
            lo=result.lo,
            hi=result.hi,
            point_step=result.point_step,
            agent=result.agent,
            rollback_step=result.rollback_step,
            alpha=result.alpha,
            tau=result.tau,
            group=result.group,
            calibration_group=result.calibration_group,
            calibration=calibration,
            scorer_version=scorer_row.version,
        )
    agents = [step.agent for step in record.steps]
    return TrajectoryAttribution(
        trajectory=trajectory,
        project_id=trajectory.project_id,
        probabilities=[round(float(p), 6) for p in probabilities],
        lo=None,
        hi=None,
        point_step=point_estimate(probabilities),
        agent=responsible_agent(agents, probabilities) if agents else "",
        rollback_step=None,
        alpha=None,
        tau=None,
        group=group_key(GROUPING_LENGTH, n_steps=len(probabilities)),
        calibration_group="",
        calibration=None,
        scorer_version=scorer_row.version,
    )
