"""Every misbehaviour's description, rebuilt from the stored membership rows.

A full run, an assignment and every curation edit end here: the wrong steps are read
back from ``WrongStepMembership`` (with the signals, argument sources and error stored
on each row, the decisive label's reason and the rollout's task text) and
``analysis.core.profiles.describe_clusters`` names them, measures their spread and their
crude and length-stratified lift, and suggests a built-in MAST mode.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import transaction

from analysis.core.cluster import NOISE
from analysis.core.profiles import MisbehaviourProfile, describe_clusters
from analysis.core.steps import Source, WrongStep
from analysis.gather import lift_samples
from analysis.models import Misbehaviour, TaxonomyCategory, WrongStepMembership
from ingest.core.records import LabelSource, Outcome
from ingest.models import Label, Trajectory
from ingest.selectors import decisive_labels
from projects.models import Project

MEMBERSHIP_FIELDS = (
    "step_id",
    "misbehaviour_id",
    "probability",
    "weight",
    "source",
    "signals",
    "arg_sources",
    "error",
    "preceded_by",
    "one_agent",
    "step__index",
    "step__agent",
    "step__role",
    "step__kind",
    "step__tool_name",
    "step__tool_args",
    "step__content",
    "step__trajectory_id",
    "step__trajectory__environment",
    "step__trajectory__task_id",
    "step__trajectory__policy_model",
    "step__trajectory__agent_system",
)


def _pairs(raw: Any) -> tuple[tuple[str, str], ...]:
    """Stored ``[[path, source], ...]`` back as the core's tuple of pairs."""
    if not isinstance(raw, list):
        return ()
    return tuple((str(p[0]), str(p[1])) for p in raw if isinstance(p, list | tuple) and len(p) == 2)


def _membership_steps(
    project: Project, task_texts: Mapping[int, str]
) -> tuple[list[WrongStep], np.ndarray, np.ndarray]:
    """The clustered steps as the core's wrong steps, their labels and probabilities;
    ``task_texts`` holds each rollout's task text by id."""
    rows = (
        WrongStepMembership.objects.filter(project=project)
        .select_related("step__trajectory")
        .only(*MEMBERSHIP_FIELDS)
        .order_by("step_id")
    )
    labels_by_rollout = decisive_labels(Label.objects.filter(trajectory__project=project))
    steps: list[WrongStep] = []
    labels: list[int] = []
    probabilities: list[float] = []
    for row in rows.iterator(chunk_size=5000):
        step, trajectory = row.step, row.step.trajectory
        label = labels_by_rollout.get(step.trajectory_id)
        reason = (
            LabelSource.diagnosis(label.source, label.reason)
            if label is not None and row.source == Source.LABEL and label.step_index == step.index
            else ""
        )
        steps.append(
            WrongStep(
                key=str(row.step_id),
                rollout=str(step.trajectory_id),
                index=step.index,
                agent=step.agent,
                role=step.role,
                kind=step.kind,
                tool_name=step.tool_name,
                tool_args=step.tool_args,
                content=step.content,
                environment=trajectory.environment,
                task=trajectory.task_id,
                policy_model=trajectory.policy_model or trajectory.agent_system,
                weight=row.weight,
                source=row.source,
                signals=tuple(str(name) for name in (row.signals or [])),
                arg_sources=_pairs(row.arg_sources),
                error=row.error,
                reason=reason,
                task_text=task_texts.get(step.trajectory_id, ""),
                preceded_by=row.preceded_by,
                one_agent=row.one_agent,
            )
        )
        labels.append(row.misbehaviour_id if row.misbehaviour_id is not None else NOISE)
        probabilities.append(row.probability)
    return steps, np.array(labels, dtype=np.int64), np.array(probabilities)


def builtin_modes() -> list[dict[str, str]]:
    """The built-in MAST categories as the core's modes ({code, name, definition})."""
    return [
        {"code": category.code, "name": category.name, "definition": category.definition}
        for category in TaxonomyCategory.objects.filter(project=None).order_by("position")
        if category.code
    ]


def _apply(
    misbehaviour: Misbehaviour, profile: MisbehaviourProfile, categories: dict[str, int]
) -> None:
    misbehaviour.is_active = misbehaviour.merged_into_id is None
    misbehaviour.name = profile.name[:300]
    misbehaviour.size = profile.size
    misbehaviour.weight = profile.weight
    misbehaviour.share = profile.share
    misbehaviour.pattern = profile.shared_pattern()[:300]
    misbehaviour.loose = profile.loose
    misbehaviour.terms = profile.terms
    misbehaviour.exemplars = [int(key) for key in profile.exemplars]
    misbehaviour.environments = profile.environments
    misbehaviour.policy_models = profile.policy_models
    misbehaviour.environment_count = len(profile.environments)
    misbehaviour.task_count = profile.tasks
    misbehaviour.model_count = len(profile.policy_models)
    misbehaviour.rollout_count = profile.rollouts
    misbehaviour.recurs = profile.recurs
    misbehaviour.generalises = profile.generalises
    misbehaviour.lift = profile.lift
    misbehaviour.lift_unadjusted = profile.lift_unadjusted
    misbehaviour.lift_adjusted = profile.lift_adjusted
    misbehaviour.lift_adjusted_rollouts = profile.lift_adjusted_rollouts
    misbehaviour.lift_gap = profile.lift_gap
    misbehaviour.signals = profile.signals
    misbehaviour.template = profile.template[:300]
    misbehaviour.suggested_category_id = categories.get(profile.suggested_category or "")
    found = misbehaviour.suggested_category_id is not None
    misbehaviour.suggestion_support = profile.suggested_support if found else None
    misbehaviour.suggestion_basis = profile.suggested_basis if found else ""


def _emptied(misbehaviour: Misbehaviour) -> None:
    """No wrong step is in it now (merged into another, or gone from the clustering): it
    keeps its name and what it described, and counts nothing. A merged one read "in 16
    rollouts, generalises" beside size 0 through the API."""
    misbehaviour.is_active = False
    misbehaviour.size, misbehaviour.weight, misbehaviour.share = 0, 0.0, 0.0
    misbehaviour.exemplars = []
    misbehaviour.rollout_count = misbehaviour.task_count = 0
    misbehaviour.environment_count = misbehaviour.model_count = 0
    misbehaviour.environments, misbehaviour.policy_models, misbehaviour.recurs = {}, {}, {}
    misbehaviour.generalises = False
    misbehaviour.lift = misbehaviour.lift_unadjusted = misbehaviour.lift_adjusted = None
    misbehaviour.lift_adjusted_rollouts, misbehaviour.lift_gap = None, ""


@dataclass(frozen=True)
class ComparedRollouts:
    """The rollouts a lift compares (those with an outcome), keyed by id as text, and the
    samples of them assigned to misbehaviours (``lift_samples``)."""

    failed: dict[str, bool]
    length: dict[str, int]
    group: dict[str, str]
    successes: Any
    failures: Any


def compared_rollouts(project: Project) -> ComparedRollouts:
    """One read of the rollouts a misbehaviour's lift compares: the refresh's and a
    detail page's explanation of a missing adjusted lift read them alike."""
    failed: dict[str, bool] = {}
    length: dict[str, int] = {}
    group: dict[str, str] = {}
    environments: dict[int, str] = {}
    rollouts = Trajectory.objects.filter(
        project=project, outcome__in=[Outcome.FAILURE, Outcome.SUCCESS]
    ).values_list("id", "outcome", "step_count", "environment")
    for pk, outcome, step_count, environment in rollouts:
        key = str(pk)
        failed[key] = outcome == Outcome.FAILURE
        length[key] = int(step_count or 0)
        group[key] = environment
        environments[pk] = environment
    successes, failures = lift_samples(
        {pk: (environments[pk], failed[str(pk)]) for pk in environments}
    )
    return ComparedRollouts(failed, length, group, successes, failures)


def misbehaviour_stats_refresh(*, project: Project) -> None:
    """Recompute every misbehaviour's name, size, share, spread, exemplars, lifts,
    signals, error template and suggested category."""
    # Every task text once: the members' own, and all of them for issue 12's name rule (a
    # word's rarity over the project's tasks). As an ``IN (subquery)`` of the members'
    # rollouts, PostgreSQL planned the first from stale statistics for three minutes.
    task_texts = dict(Trajectory.objects.filter(project=project).values_list("id", "task_text"))
    steps, labels, probabilities = _membership_steps(project, task_texts)
    compared = compared_rollouts(project)
    rollout_failed, rollout_length, rollout_group = compared.failed, compared.length, compared.group
    successes, failures = compared.successes, compared.failures
    misbehaviours = list(Misbehaviour.objects.filter(project=project))
    assigned_success = [(rollout, m.pk) for m in misbehaviours for rollout in m.success_rollouts]
    assigned_failure = [(rollout, m.pk) for m in misbehaviours for rollout in m.failure_rollouts]
    # Misbehaviours clustered before failed rollouts were assigned for the lift have none:
    # their lifts keep counting failures by wrong steps until the next clustering run.
    by_assignment = bool(assigned_failure)
    modes = builtin_modes()
    categories = dict(
        TaxonomyCategory.objects.filter(project=None).exclude(code="").values_list("code", "id")
    )
    profiles = describe_clusters(
        steps,
        labels,
        probabilities,
        assigned_success=assigned_success,
        rollout_failed=rollout_failed,
        success_scale=successes.scale,
        rollout_length=rollout_length,
        rollout_group=rollout_group,
        sampled_success=successes.keys(),
        assigned_failure=assigned_failure,
        sampled_failure=failures.keys() if by_assignment else None,
        failure_scale=failures.scale if by_assignment else 1.0,
        modes=modes or None,
        # Issue 12's name rule counts a word's rarity over all the project's task texts.
        task_texts=task_texts.values(),
    )
    with transaction.atomic():
        for misbehaviour in misbehaviours:
            profile = profiles.get(misbehaviour.pk)
            if profile is None:
                _emptied(misbehaviour)
            else:
                _apply(misbehaviour, profile, categories)
            misbehaviour.save()
