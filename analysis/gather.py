"""Reading the wrong steps of a project from the database into core records.

The decisive-set input is kept in :func:`decisive_sets`: labelled decisive steps from
``ingest.Label`` and, when the attribution app stores per-rollout prediction sets
(a model with a key to ``Trajectory`` and ``lo``/``hi``, optionally ``probabilities``),
the steps of each conformal set weighted by their probability.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from analysis.core.selection import RolloutFacts, comparison_steps, wrong_steps
from analysis.core.steps import WrongStep
from attribution.models import TrajectoryAttribution
from ingest.columns import STEP_ANALYSIS_FIELDS
from ingest.core.records import Outcome
from ingest.models import Label, Step, Trajectory
from ingest.selectors import decisive_labels
from projects.models import Project

ROLLOUT_CHUNK = 200
#: Successful rollouts whose agent actions are assigned for the failure-rate lift.
SUCCESS_ROLLOUTS_MAX = 500
STEP_FIELDS = ("id", "trajectory_id", *STEP_ANALYSIS_FIELDS)


@dataclass
class GatheredSteps:
    wrong: list[WrongStep] = field(default_factory=list)
    success: list[WrongStep] = field(default_factory=list)
    rollout_failed: dict[str, bool] = field(default_factory=dict)


@dataclass
class DecisiveSets:
    labelled: dict[int, list[int]] = field(default_factory=dict)  # trajectory id -> indices
    conformal: dict[int, dict[int, float]] = field(default_factory=dict)  # -> index: prob


def step_key(rollout: RolloutFacts, step: Any) -> str:
    return str(step.pk)


def decisive_sets(project: Project) -> DecisiveSets:
    """Labelled decisive steps (a human label wins over a dataset one) and conformal sets."""
    sets = DecisiveSets()
    for trajectory_id, label in decisive_labels(
        Label.objects.filter(trajectory__project=project)
    ).items():
        sets.labelled[trajectory_id] = [label.step_index]
    rows = TrajectoryAttribution.objects.filter(
        trajectory__project=project,
        trajectory__outcome=Outcome.FAILURE,
        lo__isnull=False,
        hi__isnull=False,
    ).values_list("trajectory_id", "lo", "hi", "probabilities")
    for trajectory_id, lo, hi, probabilities in rows:
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


def gather_wrong_steps(project: Project, *, all_failed_steps: bool = False) -> GatheredSteps:
    """The project's wrong steps, comparison steps of successes, and rollout outcomes."""
    gathered = GatheredSteps()
    trajectories = {
        t.pk: t
        for t in Trajectory.objects.filter(
            project=project, outcome__in=[Outcome.FAILURE, Outcome.SUCCESS]
        ).only("id", "outcome", "environment", "task_id", "policy_model", "agent_system")
    }
    for trajectory in trajectories.values():
        gathered.rollout_failed[str(trajectory.pk)] = trajectory.outcome == Outcome.FAILURE
    failed_ids = sorted(pk for pk, t in trajectories.items() if t.outcome == Outcome.FAILURE)
    sets = decisive_sets(project)
    if not all_failed_steps:
        with_errors = set(
            Step.objects.filter(
                trajectory__project=project, trajectory__outcome=Outcome.FAILURE, is_error=True
            )
            .values_list("trajectory_id", flat=True)
            .distinct()
        )
        interesting = set(sets.labelled) | set(sets.conformal) | with_errors
        failed_ids = [pk for pk in failed_ids if pk in interesting]
    for trajectory_id, steps in _steps_by_rollout(failed_ids):
        gathered.wrong.extend(
            wrong_steps(
                _facts(trajectories[trajectory_id]),
                steps,
                labelled=sets.labelled.get(trajectory_id, ()),
                conformal=sets.conformal.get(trajectory_id),
                all_failed_steps=all_failed_steps,
                key=step_key,
            )
        )
    success_ids = sorted(pk for pk, t in trajectories.items() if t.outcome == Outcome.SUCCESS)
    if len(success_ids) > SUCCESS_ROLLOUTS_MAX:  # evenly spaced, so reruns pick the same ones
        stride = len(success_ids) / SUCCESS_ROLLOUTS_MAX
        success_ids = [success_ids[int(i * stride)] for i in range(SUCCESS_ROLLOUTS_MAX)]
    for trajectory_id, steps in _steps_by_rollout(success_ids):
        gathered.success.extend(
            comparison_steps(_facts(trajectories[trajectory_id]), steps, key=step_key)
        )
    return gathered
