"""Writes of the dashboard app: projects and their members, the action-level analysis."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction
from django.utils.text import slugify

from attribution.core.gold_actions import (
    RolloutActions,
    ToolCall,
    analyse,
    gold_actions,
)
from dashboard.models import (
    ActionAnalysis,
    Membership,
    Project,
    ProjectOverview,
    Role,
    RolloutDeviation,
)

MSG_BAD_NAME = "Give the project a name with at least one letter or digit."


class ProjectError(ValueError):
    pass


def _free_slug(base: str) -> str:
    slug = base[:90] or "project"
    candidate, number = slug, 2
    while Project.objects.filter(slug=candidate).exists():
        candidate = f"{slug}-{number}"
        number += 1
    return candidate


@transaction.atomic
def project_create(*, name: str, owner: User, slug: str = "", description: str = "") -> Project:
    """Create a project with the given user as its owner."""
    name = name.strip()
    base = slugify(slug or name)
    if not name or not base:
        raise ProjectError(MSG_BAD_NAME)
    project = Project.objects.create(
        name=name[:200], slug=_free_slug(base), description=description.strip()
    )
    Membership.objects.create(project=project, user=owner, role=Role.OWNER)
    return project


def project_member_set(*, project: Project, user: User, role: str) -> Membership:
    membership, _ = Membership.objects.update_or_create(
        project=project, user=user, defaults={"role": role}
    )
    return membership


ACTION_BATCH = 500


def project_action_analysis_refresh(*, project_id: int) -> ActionAnalysis | None:
    """Diff every rollout with gold actions against them and store the regression.

    Running it twice stores the same result: every row of the project is replaced.
    """
    from ingest.models import Step, Trajectory

    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return None
    candidates = (
        Trajectory.objects.filter(project=project, metadata__info__task__actions__isnull=False)
        .exclude(outcome="unknown")
        .order_by("id")
        .values_list("id", "outcome", "metadata__info__task__actions")
    )
    rollouts: list[RolloutActions] = []
    ids = list(candidates)
    for start in range(0, len(ids), ACTION_BATCH):
        batch = ids[start : start + ACTION_BATCH]
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
    result, diffs = analyse(rollouts)
    with transaction.atomic():
        RolloutDeviation.objects.filter(trajectory__project=project).delete()
        RolloutDeviation.objects.bulk_create(
            [
                RolloutDeviation(
                    trajectory_id=pk,
                    mutating=diff.mutating,
                    read_only=diff.read_only,
                    decisive_step=diff.decisive_step,
                    decisive_reason=diff.decisive_reason[:300],
                    detail={"extra": diff.extra, "missing": diff.missing},
                )
                for pk, diff in diffs.items()
            ],
            batch_size=ACTION_BATCH,
        )
        analysis, _ = ActionAnalysis.objects.update_or_create(
            project=project, defaults={"summary": result.to_dict()}
        )
    return analysis


def project_overview_refresh(*, project_id: int) -> ProjectOverview | None:
    """Aggregate the project for its overview page and store the result (idempotent)."""
    from dashboard.selectors import overview_aggregates

    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return None
    overview, _ = ProjectOverview.objects.update_or_create(
        project=project, defaults={"data": overview_aggregates(project=project)}
    )
    return overview
