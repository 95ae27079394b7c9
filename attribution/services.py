"""Writes of the attribution app: train, calibrate, attribute, and human labels.

``project_attribution_refresh`` is the one entry point that the Celery task and the
dashboard's refresh call; it is idempotent (the same labels and rollouts give the same
scorer version, the same calibration row and the same attributions) and writes in bulk.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction

from attribution.calibration_store import attribution_row, calibration_store
from attribution.core.conformal import normalise
from attribution.core.features import FEATURE_VERSION
from attribution.core.label_sources import may_calibrate
from attribution.core.labelling_queue import QueueItem
from attribution.core.scorers import HeuristicScorer, LearnedScorer, StepScorer
from attribution.core.scorers.base import check_training_data
from attribution.core.scorers.judge import JudgeError, LLMJudgeScorer
from attribution.core.scorers.per_system import PerSystemScorer
from attribution.core.scorers.serialize import dump_scorer, scorer_version
from attribution.core.system_calibration import SystemCalibration, system_key
from attribution.labelling_queue_store import queue_ranks
from attribution.models import Calibration, TrainedScorer, TrajectoryAttribution
from attribution.refresh_basis import AttributionBasis, basis_made
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
# What stored scores depend on besides the data: the step features, the heuristic's rule
# and how the refresh trains (per agent system). Change it with any of them: the next
# refresh is then full, so no incremental refresh scores new rollouts with new code next
# to a tau calibrated on the old code's scores.
SCORING_RULES = f"features-{FEATURE_VERSION}/heuristic-10/per-system-1"
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


def _decisive(project: Project) -> dict[int, Label]:
    """trajectory id -> the label each failed rollout of the project is judged by."""
    return decisive_labels(
        Label.objects.filter(trajectory__project=project, trajectory__outcome=Outcome.FAILURE)
    )


def _decisive_labels(project: Project) -> dict[int, int]:
    """trajectory id -> labelled decisive step of the project's failed rollouts."""
    return {pk: label.step_index for pk, label in _decisive(project).items()}


def label_trains(metrics: dict[str, Any] | None, agent_system: str, task: str) -> bool:
    """Whether a label on a rollout of ``agent_system`` and ``task`` trains the scorer whose
    stored ``metrics`` these are, rather than calibrating it: its system has a scorer of
    its own and its task is in the training half. Scorers stored before per-system
    training name no systems: every system trained then."""
    metrics = metrics or {}
    if not metrics.get("trained_on"):
        return False
    systems = metrics.get("systems_trained")
    if isinstance(systems, dict) and system_key(agent_system) not in systems:
        return False
    return in_training_half(task)


def in_training_half(task: str) -> bool:
    """Whether a task's rollouts train the scorer (else they calibrate it); the exports
    use it too, to recalibrate at another alpha on the same held-out half."""
    # A stable hash of the task: the same task is always on the same side, across runs.
    digest = hashlib.sha256(task.encode("utf-8")).digest()
    return digest[0] / 256 < TRAIN_SHARE


def _split(
    trajectories: Sequence[Trajectory], calibrating: set[int]
) -> tuple[list[Trajectory], list[Trajectory]]:
    """Training and held-out rollouts: a label that may not calibrate always trains."""
    train: list[Trajectory] = []
    held_out: list[Trajectory] = []
    for t in trajectories:
        trains = t.pk not in calibrating or in_training_half(t.task_id or t.external_id)
        (train if trains else held_out).append(t)
    return train, held_out


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


def learned_scorer_labels_needed(labelled: int) -> int:
    """How many more labelled failed rollouts an agent system with ``labelled`` of them
    needs before a full refresh trains its own learned scorer (0: it has enough, and
    then at least ``MIN_HELD_OUT_LABELS`` of them must fall in the calibrating half).
    The refresh and the pages that say when the learned scorer takes over read it here.

    >>> learned_scorer_labels_needed(39), learned_scorer_labels_needed(45)
    (1, 0)
    """
    return max(0, MIN_TRAINING_LABELS - labelled)


# The calibrating half of a system's labels must hold this many for it to train its own.
MIN_HELD_OUT_LABELS = MIN_TRAINING_LABELS // 4


def _train_system(
    rollouts: list[Trajectory], labels: dict[int, int], calibrating: set[int]
) -> tuple[LearnedScorer, list[Trajectory], Scored] | None:
    """One agent system's own learned scorer, its labelled rollouts left to calibrate and
    the training rollouts' probabilities and records by id (their features are computed
    once, for training and scoring both); None when the system has too few labels."""
    if learned_scorer_labels_needed(len(rollouts)):
        return None
    train, held_out = _split(rollouts, calibrating)
    if not train or len(held_out) < MIN_HELD_OUT_LABELS:
        return None
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
    return learned, held_out, known


def _train(
    project: Project,
    labelled: list[Trajectory],
    labels: dict[int, int],
    calibrating: set[int],
    fallback: StepScorer,
) -> tuple[StepScorer, TrainedScorer, list[Trajectory], Scored]:
    """The scorer, its stored row, the labelled rollouts left for calibration, and the
    training rollouts' probabilities and records by id. Each agent system with enough
    labels of its own gets a learned scorer trained on half of them (``PerSystemScorer``
    says why never on other systems' labels); the others are scored by ``fallback`` and
    all their calibrating labels calibrate. Only labels in ``calibrating`` calibrate."""
    by_system: dict[str, list[Trajectory]] = {}
    for trajectory in labelled:
        by_system.setdefault(system_key(trajectory.agent_system), []).append(trajectory)
    own: dict[str, StepScorer] = {}
    trained_on: dict[str, int] = {}
    held_out: list[Trajectory] = []
    known: Scored = {}
    for system, rollouts in sorted(by_system.items()):
        fitted = _train_system(rollouts, labels, calibrating)
        if fitted is None:
            held_out += [t for t in rollouts if t.pk in calibrating]
            continue
        own[system], rest, scored = fitted
        trained_on[system] = len(scored)
        held_out += rest
        known.update(scored)
    scorer: StepScorer = PerSystemScorer(own, fallback) if own else fallback
    metrics = {
        "trained_on": sum(trained_on.values()),
        "held_out": len(held_out),
        "systems_trained": trained_on,
    }
    return scorer, _store_scorer(project, scorer, metrics), held_out, known


def _calibrate(
    project: Project,
    scorer: StepScorer,
    scorer_row: TrainedScorer,
    held_out: list[Trajectory],
    labels: dict[int, int],
    sources: dict[int, str],
    alpha: float,
) -> tuple[Calibration | None, SystemCalibration, Scored]:
    """The calibration (None when there are too few labels), the per-system one, and the
    held-out rollouts' probabilities and records by id (they need not be scored twice)."""
    records = _records(held_out)
    probabilities = {t.pk: scorer.step_probabilities(records[t.pk]) for t in held_out}
    known = {t.pk: (probabilities[t.pk], _slim(records[t.pk])) for t in held_out}
    calibration, per_system = calibration_store(
        project=project,
        scorer_row=scorer_row,
        held_out=held_out,
        probabilities=probabilities,
        labels=labels,
        sources=sources,
        alpha=alpha,
    )
    return calibration, per_system, known


UPDATE_FIELDS = [
    "project", "probabilities", "lo", "hi", "point_step", "agent", "rollback_step", "alpha",
    "tau", "group", "calibration_group", "calibration", "scorer_version", "updated_at",
    "claim", "calibration_source", "calibration_system", "labels_needed", "queue_rank",
    "queue_reason",
]  # fmt: skip


def project_attribution_refresh(
    *, project_id: int, alpha: float | None = None
) -> AttributionBasis | None:
    """Train (or fall back), calibrate and attribute every failed rollout of a project, at
    the project's miscoverage unless ``alpha`` says otherwise.

    An agent system with enough labels of its own gets a learned scorer trained on half
    of them (by task), and the other half calibrates it. Every other system is scored by
    the LLM judge (when configured) or else the label-free heuristic, and all its labels
    calibrate (``_train``). A judge that fails
    after its retries is dropped for the heuristic, and the refresh starts over. Returns
    what it used (attribution.refresh_basis), None for a project that is gone.
    """
    if alpha is None:
        alpha = Project.objects.filter(pk=project_id).values_list("miscoverage", flat=True).first()
        if alpha is None:
            return None  # the project is gone
    judge = judge_from_settings()
    if judge is not None:
        try:
            return _refresh(project_id, alpha, judge)
        except JudgeError as error:
            logger.warning(
                "LLM judge failed for project %s, using the heuristic: %s", project_id, error
            )
    return _refresh(project_id, alpha, HeuristicScorer())


def _refresh(project_id: int, alpha: float, fallback: StepScorer) -> AttributionBasis:
    project = Project.objects.get(pk=project_id)
    failed = list(
        Trajectory.objects.filter(
            project=project, outcome=Outcome.FAILURE, step_count__gt=0
        ).order_by("id")
    )
    chosen = _decisive(project)
    labels = {pk: label.step_index for pk, label in chosen.items()}
    sources = {pk: label.source for pk, label in chosen.items()}
    calibrating = {
        pk
        for pk, source in sources.items()
        if may_calibrate(source, gold_actions_calibrate=project.gold_actions_calibrate)
    }
    labelled = [t for t in failed if t.pk in labels]
    scorer, scorer_row, held_out, trained = _train(project, labelled, labels, calibrating, fallback)
    calibration, per_system, known = _calibrate(
        project, scorer, scorer_row, held_out, labels, sources, alpha
    )
    known.update(trained)
    # Every rollout is scored before any row is written (its record dropped once scored,
    # only its agents kept): the labelling queue orders all unlabelled rollouts at once.
    for batch in _batches([t for t in failed if t.pk not in known]):
        records = _records(batch)
        for trajectory in batch:
            record = records[trajectory.pk]
            known[trajectory.pk] = (scorer.step_probabilities(record), _slim(record))
    ranks = queue_ranks(
        [
            QueueItem(
                str(t.pk),
                t.agent_system,
                known[t.pk][0],
                trains=label_trains(scorer_row.metrics, t.agent_system, t.task_id or t.external_id),
            )
            for t in failed
            if t.pk not in calibrating
        ],
        per_system.labels_by_system,
        alpha=alpha,
    )
    for batch in _batches(failed):
        rows = []
        for trajectory in batch:
            probabilities, record = known[trajectory.pk]
            row = attribution_row(
                trajectory, record, probabilities, per_system, calibration, scorer_row
            )
            row.queue_rank, row.queue_reason = ranks.get(trajectory.pk, (None, ""))
            rows.append(row)
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
    return basis_made(
        project=project,
        scorer_row=scorer_row,
        calibration=calibration,
        per_system=per_system,
        alpha=alpha,
        failed=failed,
        labelled=labelled,
        calibrating=calibrating,
        scoring_rules=SCORING_RULES,
    )
