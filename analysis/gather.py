"""Reading the wrong steps of a project from the database into core records.

The decisive-set input is kept in :func:`decisive_sets`: labelled decisive steps from
``ingest.Label`` and, when the attribution app stores per-rollout prediction sets
(a model with a key to ``Trajectory`` and ``lo``/``hi``, optionally ``probabilities``),
the steps of each conformal set weighted by their probability.

Every wrong step (and every comparison step of a success) leaves here with the behaviour
signals of its whole rollout (``analysis.core.behaviour.with_signals``: the rollout's
steps in order, its task text, its gold actions when the trace has them, and the
decisive label's reason for the labelled step).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from analysis.core.behaviour import rollout_signals, signalled_actions, with_signals
from analysis.core.selection import RolloutFacts, comparison_steps, wrong_steps
from analysis.core.steps import WrongStep
from attribution.core.gold_actions import gold_actions
from attribution.models import TrajectoryAttribution
from ingest.columns import STEP_ANALYSIS_FIELDS
from ingest.core.records import LabelSource, Outcome
from ingest.models import Label, Step, Trajectory
from ingest.selectors import decisive_labels, usable_labels
from projects.models import Project

ROLLOUT_CHUNK = 200
#: Rollouts of each outcome whose agent actions are assigned for the failure-rate lift.
LIFT_SAMPLE_MAX = 500
# STEP_ANALYSIS_FIELDS holds is_mutating, which the unconfirmed-mutation signal reads.
STEP_FIELDS = ("id", "trajectory_id", *STEP_ANALYSIS_FIELDS)
TRAJECTORY_FIELDS = (
    "id",
    "outcome",
    "environment",
    "task_id",
    "task_text",
    "step_count",
    "policy_model",
    "agent_system",
)


@dataclass
class GatheredSteps:
    wrong: list[WrongStep] = field(default_factory=list)
    success: list[WrongStep] = field(default_factory=list)
    rollout_failed: dict[str, bool] = field(default_factory=dict)
    # Rollout key (str(pk)) -> its step count and its environment: the strata of the
    # length-stratified lift (analysis.core.lift).
    rollout_length: dict[str, int] = field(default_factory=dict)
    rollout_group: dict[str, str] = field(default_factory=dict)
    # The successful rollouts whose steps are in ``success`` (a sample when there are many).
    sampled_success: set[str] = field(default_factory=set)
    # Every agent action of a sample of the failed rollouts, assigned as the successes'
    # are: the lift measures a misbehaviour's presence the same way on both sides.
    failure: list[WrongStep] = field(default_factory=list)
    sampled_failure: set[str] = field(default_factory=set)


@dataclass
class DecisiveSets:
    labelled: dict[int, list[int]] = field(default_factory=dict)  # trajectory id -> indices
    # trajectory id -> {labelled index: the label's reason}, for the labels that give one.
    reasons: dict[int, dict[int, str]] = field(default_factory=dict)
    conformal: dict[int, dict[int, float]] = field(default_factory=dict)  # -> index: prob
    # trajectory id -> the scorer's probability per step, for a failed rollout whose
    # attribution makes no claim (no set): it ranks its signalled actions.
    ranked: dict[int, list[float]] = field(default_factory=dict)


def _ranked(indices: Sequence[int], probabilities: Sequence[float] | None) -> dict[int, float]:
    """Each signalled action's probability by the scorer (1.0 each when none ranked them)."""
    if not probabilities:
        return {index: 1.0 for index in indices}
    return {index: probabilities[index] if index < len(probabilities) else 0.0 for index in indices}


def step_key(rollout: RolloutFacts, step: Any) -> str:
    return str(step.pk)


def decisive_sets(project: Project, rollout_ids: Collection[int] | None = None) -> DecisiveSets:
    """Labelled decisive steps (a human label wins over a dataset one) and conformal sets
    (of ``rollout_ids`` only, when given)."""
    sets = DecisiveSets()
    labels = Label.objects.filter(trajectory__project=project)
    attributions = TrajectoryAttribution.objects.filter(trajectory__project=project)
    if rollout_ids is not None:
        # The ids are the project's: no join to it, which would read all of its rows.
        labels = Label.objects.filter(trajectory_id__in=sorted(rollout_ids))
        attributions = TrajectoryAttribution.objects.filter(trajectory_id__in=sorted(rollout_ids))
    # Where a failed trial leaves a successful one is a guess for training, not a decisive
    # step: on an unseen support agent 7 of 15 such labels named the wrong step, and each
    # was clustered as the error at full weight. Those rollouts go by their set instead.
    labels = labels.exclude(source=LabelSource.SIBLING_DIVERGENCE)
    for trajectory_id, label in decisive_labels(labels).items():
        sets.labelled[trajectory_id] = [label.step_index]
        diagnosis = LabelSource.diagnosis(label.source, label.reason)
        if diagnosis:
            sets.reasons[trajectory_id] = {label.step_index: diagnosis}
    # A labelled rollout is judged by its label: its probabilities are not even read.
    unlabelled = attributions.exclude(
        trajectory_id__in=usable_labels(labels).values("trajectory_id")
    )
    rows = unlabelled.filter(trajectory__outcome=Outcome.FAILURE).values_list(
        "trajectory_id", "lo", "hi", "probabilities"
    )
    for trajectory_id, lo, hi, probabilities in rows:
        if lo is None or hi is None:
            if isinstance(probabilities, list):
                sets.ranked[trajectory_id] = [float(p) for p in probabilities]
            continue
        span = range(int(lo or 0), int(hi or 0) + 1)
        if isinstance(probabilities, list) and probabilities:
            weights = {i: float(probabilities[i]) if i < len(probabilities) else 0.0 for i in span}
        else:
            weights = {i: 1.0 / len(span) for i in span}
        sets.conformal[trajectory_id] = weights
    return sets


def _facts(trajectory: Trajectory) -> RolloutFacts:
    return RolloutFacts(
        key=str(trajectory.pk),
        failed=trajectory.outcome == Outcome.FAILURE,
        environment=trajectory.environment,
        task=trajectory.task_id,
        policy_model=trajectory.policy_model or trajectory.agent_system,
    )


def _steps_by_rollout(trajectory_ids: Sequence[int]) -> Iterator[tuple[int, list[Step]]]:
    for start in range(0, len(trajectory_ids), ROLLOUT_CHUNK):
        chunk = trajectory_ids[start : start + ROLLOUT_CHUNK]
        grouped: dict[int, list[Step]] = {trajectory_id: [] for trajectory_id in chunk}
        rows = Step.objects.filter(trajectory_id__in=chunk).only(*STEP_FIELDS)
        for step in rows.order_by("trajectory_id", "index").iterator(chunk_size=5000):
            grouped[step.trajectory_id].append(step)
        yield from grouped.items()


def lift_sample(ids: Sequence[int]) -> list[int]:
    """The rollouts of one outcome (sorted ids) whose agent actions are assigned for the
    lift: all of them up to ``LIFT_SAMPLE_MAX``, else that many evenly spaced, so reruns
    and the profile refresh pick the same ones."""
    if len(ids) <= LIFT_SAMPLE_MAX:
        return list(ids)
    stride = len(ids) / LIFT_SAMPLE_MAX
    return [ids[int(i * stride)] for i in range(LIFT_SAMPLE_MAX)]


@dataclass(frozen=True)
class LiftSample:
    """The rollouts of one outcome whose agent actions are assigned for the lift, and how
    many rollouts of that outcome each stands for."""

    ids: list[int]
    scale: float

    def keys(self) -> set[str]:
        return {str(pk) for pk in self.ids}


def _sampled(ids: Sequence[int]) -> LiftSample:
    chosen = lift_sample(ids)
    return LiftSample(chosen, len(ids) / len(chosen) if chosen else 1.0)


def lift_samples(rollouts: Mapping[int, tuple[str, bool]]) -> tuple[LiftSample, LiftSample]:
    """The successes and the failures assigned for the lift, from each rollout's
    (environment, failed). Failures only of environments with a success, the only ones a
    lift compares: in the demo, Who&When's 184 long group chats would have doubled a
    refresh for nothing.

    >>> successes, failures = lift_samples({1: ("GAIA", True), 2: ("air", True), 4: ("air", False)})
    >>> successes.ids, failures.ids, failures.scale
    ([4], [2], 1.0)
    """
    success_ids = sorted(pk for pk, (_, failed) in rollouts.items() if not failed)
    with_success = {rollouts[pk][0] for pk in success_ids}
    failed_ids = sorted(
        pk
        for pk, (environment, failed) in rollouts.items()
        if failed and environment in with_success
    )
    return _sampled(success_ids), _sampled(failed_ids)


def _gold_by_rollout(project: Project, rollouts: Any) -> dict[int, Any]:
    """Each rollout's raw gold actions (tau-bench's ``info.task.actions``), if it has some."""
    return dict(
        rollouts.filter(metadata__info__task__actions__isnull=False).values_list(
            "id", "metadata__info__task__actions"
        )
    )


def gather_wrong_steps(
    project: Project, *, all_failed_steps: bool = False, rollout_ids: Collection[int] | None = None
) -> GatheredSteps:
    """The project's wrong steps, comparison steps of successes, and rollout outcomes; with
    ``rollout_ids``, the wrong steps of those rollouts only (no successes: an assignment
    between full runs reads nothing else)."""
    gathered = GatheredSteps()
    rollouts = Trajectory.objects.filter(project=project)
    if rollout_ids is not None:
        rollouts = rollouts.filter(pk__in=sorted(rollout_ids))
    trajectories = {
        t.pk: t
        for t in rollouts.filter(outcome__in=[Outcome.FAILURE, Outcome.SUCCESS]).only(
            *TRAJECTORY_FIELDS
        )
    }
    for trajectory in trajectories.values():
        key = str(trajectory.pk)
        gathered.rollout_failed[key] = trajectory.outcome == Outcome.FAILURE
        gathered.rollout_length[key] = int(trajectory.step_count or 0)
        gathered.rollout_group[key] = trajectory.environment
    failed_ids = sorted(pk for pk, t in trajectories.items() if t.outcome == Outcome.FAILURE)
    successes, failures = lift_samples(
        {pk: (t.environment, t.outcome == Outcome.FAILURE) for pk, t in trajectories.items()}
    )
    compared_failures = set() if rollout_ids is not None else set(failures.ids)
    gathered.sampled_failure = {str(pk) for pk in compared_failures}
    sets = decisive_sets(project, rollout_ids)
    gold_raw = _gold_by_rollout(project, rollouts)
    # Every failed rollout is read: one with a label or a set gives those (and its error
    # calls), one with neither its error calls and signalled actions (selection.wrong_steps).
    for trajectory_id, steps in _steps_by_rollout(failed_ids):
        trajectory = trajectories[trajectory_id]
        gold = gold_actions(gold_raw.get(trajectory_id))
        found = rollout_signals(steps, task_text=trajectory.task_text, gold=gold)
        wrong = wrong_steps(
            _facts(trajectory),
            steps,
            labelled=sets.labelled.get(trajectory_id, ()),
            conformal=sets.conformal.get(trajectory_id),
            signalled=_ranked(signalled_actions(found), sets.ranked.get(trajectory_id)),
            all_failed_steps=all_failed_steps,
            key=step_key,
        )
        if trajectory_id in compared_failures:
            gathered.failure.extend(
                with_signals(
                    comparison_steps(_facts(trajectory), steps, key=step_key),
                    steps,
                    task_text=trajectory.task_text,
                    gold=gold,
                    found=found,
                )
            )
        gathered.wrong.extend(
            with_signals(
                wrong,
                steps,
                task_text=trajectory.task_text,
                gold=gold,
                reasons=sets.reasons.get(trajectory_id),
                found=found,
            )
        )
    if rollout_ids is not None:
        return gathered
    gathered.sampled_success = successes.keys()
    for trajectory_id, steps in _steps_by_rollout(successes.ids):
        trajectory = trajectories[trajectory_id]
        gathered.success.extend(
            with_signals(
                comparison_steps(_facts(trajectory), steps, key=step_key),
                steps,
                task_text=trajectory.task_text,
                gold=gold_actions(gold_raw.get(trajectory_id)),
            )
        )
    return gathered
