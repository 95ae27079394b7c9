"""The action-level analysis of a project: every rollout with gold actions diffed against
them (attribution/core/gold_actions.py), stored per rollout and as one project summary."""

from __future__ import annotations

from collections.abc import Collection

from django.db import transaction
from django.db.models import QuerySet

from attribution.core.gold_actions import (
    ActionDiff,
    RolloutActions,
    ToolCall,
    analyse,
    diff_actions,
    gold_actions,
)
from attribution.models import ActionAnalysis, RolloutDeviation
from ingest.models import Step, Trajectory
from projects.models import Project

ACTION_BATCH = 500


def _rollout_actions(candidates: list[tuple[int, str, object]]) -> list[RolloutActions]:
    """(id, outcome, raw gold actions) rows -> each rollout's tool calls beside its gold."""
    rollouts: list[RolloutActions] = []
    for start in range(0, len(candidates), ACTION_BATCH):
        batch = candidates[start : start + ACTION_BATCH]
        calls: dict[int, list[ToolCall]] = {pk: [] for pk, _, _ in batch}
        steps = Step.objects.filter(trajectory_id__in=list(calls), kind="tool_call").values_list(
            "trajectory_id", "index", "tool_name", "tool_args", "is_mutating"
        )
        for trajectory_id, index, name, args, mutating in steps:
            calls[trajectory_id].append(ToolCall(index, name, args, mutating))
        for pk, outcome, raw_actions in batch:
            gold = gold_actions(raw_actions)
            if gold is None:
                continue
            rollouts.append(RolloutActions(pk, outcome == "success", calls[pk], gold))
    return rollouts


def _candidates(queryset: QuerySet[Trajectory]) -> list[tuple[int, str, object]]:
    return list(
        queryset.filter(metadata__info__task__actions__isnull=False)
        .exclude(outcome="unknown")
        .order_by("id")
        .values_list("id", "outcome", "metadata__info__task__actions")
    )


def _deviation_rows(diffs: dict[int, ActionDiff]) -> list[RolloutDeviation]:
    return [
        RolloutDeviation(
            trajectory_id=pk,
            mutating=diff.mutating,
            read_only=diff.read_only,
            decisive_step=diff.decisive_step,
            decisive_reason=diff.decisive_reason[:300],
            detail={"extra": diff.extra, "missing": diff.missing},
        )
        for pk, diff in diffs.items()
    ]


def project_action_analysis_refresh(*, project_id: int) -> ActionAnalysis | None:
    """Diff every rollout with gold actions against them and store the regression.

    Running it twice stores the same result: every row of the project is replaced.
    """
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return None
    rollouts = _rollout_actions(_candidates(Trajectory.objects.filter(project=project)))
    result, diffs = analyse(rollouts)
    with transaction.atomic():
        RolloutDeviation.objects.filter(trajectory__project=project).delete()
        RolloutDeviation.objects.bulk_create(_deviation_rows(diffs), batch_size=ACTION_BATCH)
        analysis, _ = ActionAnalysis.objects.update_or_create(
            project=project, defaults={"summary": result.to_dict()}
        )
    return analysis


def rollouts_action_deviations_refresh(*, project_id: int, rollout_ids: Collection[int]) -> int:
    """Diff only these rollouts against their gold actions (a rollout's diff reads nothing
    of the others) and replace their rows; the project's regression is left as the last
    full refresh fitted it. Returns how many rollouts have a deviation row now."""
    ids = sorted(rollout_ids)
    rollouts = _rollout_actions(
        _candidates(Trajectory.objects.filter(project_id=project_id, pk__in=ids))
    )
    diffs = {r.rollout_id: diff_actions(r.calls, r.gold) for r in rollouts}
    with transaction.atomic():
        for start in range(0, len(ids), ACTION_BATCH):
            RolloutDeviation.objects.filter(
                trajectory_id__in=ids[start : start + ACTION_BATCH]
            ).delete()
        RolloutDeviation.objects.bulk_create(_deviation_rows(diffs), batch_size=ACTION_BATCH)
    return len(diffs)
