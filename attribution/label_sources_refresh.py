"""Labels that need no hand-labelling, stored after the action analysis of each refresh.

Two rules (attribution.core.label_sources and attribution.core.sibling_divergence):

- ``gold_actions``: failed rollouts whose task carries gold actions (tau-bench's
  ``info.task.actions``) get the earliest deviation that can flip the outcome. The tools
  whose deviations are as common in successful rollouts (a hand-off to a human agent)
  are judged on the project's own rollouts with gold actions, successes and failures.
- ``sibling_divergence``: failed rollouts of a task with a successful trial get the
  first tool call where they leave the closest one.

Each rollout keeps at most one label per rule: a refresh replaces what the last one
stored, keeps an unchanged label as it is (same row, same date) and removes the labels
of rollouts that no longer fail or no longer deviate, so running it twice changes nothing.
Human and dataset labels are never touched.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from attribution.core.gold_actions import GoldAction, gold_actions
from attribution.core.label_sources import (
    DerivedLabel,
    gold_action_label,
    outcome_neutral_tools,
)
from attribution.core.sibling_divergence import divergence_reason, label_divergence
from ingest.core.records import LabelSource, Outcome, StepKind
from ingest.models import Label, Trajectory
from ingest.selectors import step_records_by_rollout
from projects.models import Project

LABEL_BATCH = 500
# What the gold-action rule reads of a rollout to judge which tools are outcome-neutral.
CALL_KINDS = (StepKind.TOOL_CALL, StepKind.TOOL_RESULT)


@dataclass(frozen=True)
class DerivedLabelsResult:
    """How many labels of each rule the project holds after the refresh, and the changes."""

    gold_actions: int
    sibling_divergence: int
    created: int
    deleted: int
    # The tools judged outcome-neutral (an incremental refresh reuses them), and the
    # rollouts whose derived labels were created or deleted, by label source.
    neutral_tools: tuple[str, ...] = ()
    changed: dict[str, list[int]] = field(default_factory=dict)


def _batches(items: Sequence[Any], size: int = LABEL_BATCH) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _with_gold(
    project: Project, only: Collection[int] | None = None
) -> list[tuple[int, str, list[GoldAction]]]:
    """(id, outcome, gold actions) of the project's finished rollouts with gold actions."""
    rows = (
        _scoped(Trajectory.objects.filter(project=project), only)
        .filter(metadata__info__task__actions__isnull=False)
        .exclude(outcome=Outcome.UNKNOWN)
        .order_by("id")
        .values_list("id", "outcome", "metadata__info__task__actions")
    )
    found = []
    for pk, outcome, raw in rows:
        gold = gold_actions(raw)
        if gold:
            found.append((pk, outcome, gold))
    return found


def _scoped(rows: QuerySet[Trajectory], only: Collection[int] | None) -> QuerySet[Trajectory]:
    return rows if only is None else rows.filter(pk__in=sorted(only))


def _neutral_tools(project: Project) -> frozenset[str]:
    """The tools whose deviations are as common in successes (judged on every rollout)."""
    judged: list[tuple[Any, Sequence[GoldAction], bool]] = []
    for batch in _batches(_with_gold(project)):
        steps = step_records_by_rollout([pk for pk, _, _ in batch], kinds=CALL_KINDS)
        for pk, outcome, gold in batch:
            judged.append((SimpleNamespace(steps=steps[pk]), gold, outcome == Outcome.SUCCESS))
    return frozenset(outcome_neutral_tools(judged))


def _gold_action_labels(
    project: Project, neutral: frozenset[str], only: Collection[int] | None = None
) -> dict[int, DerivedLabel]:
    rollouts = _with_gold(project, only)
    labels: dict[int, DerivedLabel] = {}
    failed = [(pk, gold) for pk, outcome, gold in rollouts if outcome == Outcome.FAILURE]
    for batch in _batches(failed):
        steps = step_records_by_rollout([pk for pk, _ in batch])
        for pk, gold in batch:
            label = gold_action_label(SimpleNamespace(steps=steps[pk]), gold, neutral_tools=neutral)
            if label is not None:
                # Positions are step indices: stored steps are 0-based and contiguous.
                labels[pk] = label
    return labels


def _sibling_labels(
    project: Project, only_tasks: Collection[str] | None = None
) -> dict[int, DerivedLabel]:
    rows = Trajectory.objects.filter(project=project)
    if only_tasks is not None:
        rows = rows.filter(task_id__in=sorted(only_tasks))
    finished = (
        rows.filter(outcome__in=[Outcome.SUCCESS, Outcome.FAILURE])
        .exclude(task_id="")
        .order_by("id")
        .values_list("id", "external_id", "task_id", "outcome")
    )
    by_task: dict[str, dict[str, list[tuple[int, str]]]] = {}
    for pk, external_id, task_id, outcome in finished:
        by_task.setdefault(task_id, {}).setdefault(outcome, []).append((pk, external_id))
    tasks = [
        (task, trials)
        for task, trials in sorted(by_task.items())
        if trials.get(Outcome.SUCCESS) and trials.get(Outcome.FAILURE)
    ]
    labels: dict[int, DerivedLabel] = {}
    # One task at a time (in batches of tasks): trials are only compared within a task.
    for batch in _batches(tasks, size=50):
        ids = [pk for _, trials in batch for rows in trials.values() for pk, _ in rows]
        # Calls and their results: a call both trials made alike that failed in one only
        # parts them (attribution.core.sibling_divergence).
        calls = step_records_by_rollout(ids, kinds=(StepKind.TOOL_CALL, StepKind.TOOL_RESULT))
        for task, trials in batch:
            successes = [
                SimpleNamespace(external_id=ext, task_id=task, steps=calls[pk])
                for pk, ext in trials[Outcome.SUCCESS]
            ]
            for pk, external_id in trials[Outcome.FAILURE]:
                failed = SimpleNamespace(external_id=external_id, task_id=task, steps=calls[pk])
                divergence = label_divergence(failed, successes)
                if divergence is None:
                    continue
                # Only calls and results were loaded: the record's index is the rollout's step.
                step = failed.steps[divergence.failed_step]
                labels[pk] = DerivedLabel(
                    step.index,
                    LabelSource.SIBLING_DIVERGENCE,
                    "divergence",
                    divergence_reason(divergence),
                    step.agent,
                )
    return labels


def project_derived_labels_refresh(*, project_id: int) -> DerivedLabelsResult | None:
    """Store the gold-action and sibling-divergence labels of a project's failed rollouts."""
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return None
    neutral = _neutral_tools(project)
    found = {
        LabelSource.GOLD_ACTIONS: _gold_action_labels(project, neutral),
        LabelSource.SIBLING_DIVERGENCE: _sibling_labels(project),
    }
    existing = Label.objects.filter(trajectory__project=project, source__in=LabelSource.DERIVED)
    return _store(found, existing, neutral)


def rollouts_derived_labels_refresh(
    *, project_id: int, rollout_ids: Collection[int], neutral_tools: Collection[str]
) -> DerivedLabelsResult | None:
    """The same labels for these rollouts only, with the outcome-neutral tools a full
    refresh judged: their gold-action labels, and the sibling labels of every failed trial
    of their tasks (a new success can move where its failed siblings diverge)."""
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return None
    ids = set(rollout_ids)
    tasks = set(
        Trajectory.objects.filter(project=project, pk__in=sorted(ids))
        .exclude(task_id="")
        .values_list("task_id", flat=True)
    )
    siblings = _sibling_labels(project, tasks)
    in_tasks = set(
        Trajectory.objects.filter(project=project, task_id__in=sorted(tasks)).values_list(
            "pk", flat=True
        )
    )
    found = {
        LabelSource.GOLD_ACTIONS: _gold_action_labels(project, frozenset(neutral_tools), ids),
        LabelSource.SIBLING_DIVERGENCE: siblings,
    }
    # Sibling labels are redone for every trial of the tasks, gold ones for ``ids`` only.
    existing = Label.objects.filter(
        source=LabelSource.SIBLING_DIVERGENCE, trajectory_id__in=sorted(ids | in_tasks)
    ) | Label.objects.filter(source=LabelSource.GOLD_ACTIONS, trajectory_id__in=sorted(ids))
    return _store(found, existing, frozenset(neutral_tools))


def _store(
    found: dict[str, dict[int, DerivedLabel]],
    existing_labels: QuerySet[Label],
    neutral: frozenset[str],
) -> DerivedLabelsResult:
    """Replace ``existing_labels`` (the derived labels in scope) by ``found``."""
    wanted: dict[tuple[int, str], DerivedLabel] = {}
    for source, labels in found.items():
        for pk, label in labels.items():
            wanted[(pk, source)] = label
    existing = existing_labels.values_list(
        "id", "trajectory_id", "source", "step_index", "agent", "reason"
    )
    stale: list[int] = []
    changed: dict[str, set[int]] = {}
    kept: set[tuple[int, str]] = set()
    for label_id, pk, source, step, agent, reason in existing:
        current = wanted.get((pk, source))
        same = current is not None and (current.step, current.agent, current.reason[:5000]) == (
            step,
            agent,
            reason,
        )
        if same and (pk, source) not in kept:
            kept.add((pk, source))
        else:
            stale.append(label_id)
            changed.setdefault(source, set()).add(pk)
    new = [
        Label(
            trajectory_id=pk,
            step_index=label.step,
            agent=label.agent[:200],
            reason=label.reason[:5000],
            source=source,
        )
        for (pk, source), label in sorted(wanted.items())
        if (pk, source) not in kept
    ]
    for row in new:
        changed.setdefault(row.source, set()).add(row.trajectory_id)
    with transaction.atomic():
        for ids in _batches(stale):
            Label.objects.filter(id__in=list(ids)).delete()
        Label.objects.bulk_create(new, batch_size=LABEL_BATCH)
    sources = [source for _, source in wanted]
    return DerivedLabelsResult(
        gold_actions=sources.count(LabelSource.GOLD_ACTIONS),
        sibling_divergence=sources.count(LabelSource.SIBLING_DIVERGENCE),
        created=len(new),
        deleted=len(stale),
        neutral_tools=tuple(sorted(neutral)),
        changed={source: sorted(pks) for source, pks in changed.items()},
    )
