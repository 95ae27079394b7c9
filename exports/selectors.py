"""Reads for exports: which rollouts an export covers, and each one as core inputs.

Rollouts are read in keyset-paginated batches (``id > last``), so memory stays flat
however many rollouts a project holds. Attribution and misbehaviour data come through
:mod:`exports.sources`, which reads the attribution and analysis apps.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import Any

from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from analysis.selectors import misbehaviours_now
from exports import sources
from exports.core.divergence import divergence_correction
from exports.core.filters import ExportFilters
from exports.core.inputs import CorrectedTurn, Decisive, ExportRollout, ToolCall
from exports.models import Correction, CorrectionKind, ExportJob
from exports.sources import ProjectSources
from ingest.core.records import LabelSource, Outcome, StepKind, TrajectoryRecord
from ingest.models import Label, Trajectory
from ingest.selectors import decisive_labels, step_records_by_rollout, trajectory_record
from projects.models import Project

BATCH = 200


def _day_start(day: Any) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min), timezone.get_current_timezone())


def export_rollouts(*, project: Project, filters: ExportFilters) -> QuerySet[Trajectory]:
    """The failed rollouts of the project that the filters select, by id."""
    rollouts = Trajectory.objects.filter(project=project, outcome=Outcome.FAILURE)
    if filters.environment:
        rollouts = rollouts.filter(environment=filters.environment)
    if filters.policy_model:
        rollouts = rollouts.filter(policy_model=filters.policy_model)
    if filters.date_from:
        rollouts = rollouts.filter(created_at__gte=_day_start(filters.date_from))
    if filters.date_to:
        # The range is inclusive of the whole last day.
        rollouts = rollouts.filter(created_at__lt=_day_start(filters.date_to + timedelta(days=1)))
    if filters.human_only:
        rollouts = rollouts.filter(
            Exists(Label.objects.filter(trajectory=OuterRef("pk"), source=LabelSource.HUMAN))
        )
    if filters.misbehaviours:
        wanted = misbehaviours_now(project, filters.misbehaviours)  # merges followed
        rollouts = sources.with_misbehaviours(rollouts, wanted)
    return rollouts.order_by("id")


def _labels(ids: list[int], human_only: bool) -> dict[int, Label]:
    """The label each rollout is judged by: the newest human one, else the newest."""
    labels = Label.objects.filter(trajectory_id__in=ids)
    if human_only:
        labels = labels.filter(source=LabelSource.HUMAN)
    return decisive_labels(labels)


def correction_turn(correction: Correction) -> CorrectedTurn:
    calls: tuple[ToolCall, ...] = ()
    if correction.kind == CorrectionKind.TOOL_CALL:
        calls = (ToolCall(correction.tool_name, correction.tool_args),)
    return CorrectedTurn(
        step=correction.step_index,
        content=correction.content or None,
        tool_calls=calls,
        source=correction.source,
        author=correction.author.get_username() if correction.author else "",
        correction_id=correction.pk,
    )


def _human_corrections(ids: list[int]) -> dict[int, list[CorrectedTurn]]:
    found: dict[int, list[CorrectedTurn]] = {}
    rows = Correction.objects.filter(trajectory_id__in=ids).select_related("author")
    for correction in rows.order_by("updated_at", "id"):
        found.setdefault(correction.trajectory_id, []).append(correction_turn(correction))
    return found


def _successes(project: Project, task_ids: set[str]) -> dict[str, list[TrajectoryRecord]]:
    """Successful rollouts of these tasks, with their tool calls, results and user turns
    only (all divergence needs: which calls they made, which of them failed, and after
    how many user turns)."""
    task_ids.discard("")
    if not task_ids:
        return {}
    rows = list(
        Trajectory.objects.filter(project=project, outcome=Outcome.SUCCESS, task_id__in=task_ids)
        .only("id", "external_id", "task_id", "outcome")
        .order_by("id")
    )
    steps = step_records_by_rollout(
        [r.pk for r in rows], kinds=(StepKind.TOOL_CALL, StepKind.TOOL_RESULT), roles=("user",)
    )
    found: dict[str, list[TrajectoryRecord]] = {}
    for row in rows:
        record = TrajectoryRecord(
            external_id=row.external_id,
            task_id=row.task_id,
            outcome=row.outcome,
            steps=steps[row.pk],
        )
        found.setdefault(row.task_id, []).append(record)
    return found


@dataclass(frozen=True)
class ItemOptions:
    sources: ProjectSources | None = None
    human_only: bool = False
    with_corrections: bool = True
    with_occurrences: bool = True


def export_items(
    *, project: Project, rollouts: QuerySet[Trajectory], options: ItemOptions
) -> Iterator[ExportRollout]:
    """Each selected rollout with its steps, decisive info, occurrences and corrections."""
    last_id = 0
    while True:
        rows = list(rollouts.filter(id__gt=last_id).order_by("id")[:BATCH])
        if not rows:
            return
        last_id = rows[-1].pk
        ids = [row.pk for row in rows]
        steps = step_records_by_rollout(ids)
        labels = _labels(ids, options.human_only)
        reader = options.sources
        attributions = reader.attributions(ids) if reader else {}
        occurrences = reader.occurrences(ids) if reader and options.with_occurrences else {}
        humans = _human_corrections(ids) if options.with_corrections else {}
        successes = (
            _successes(project, {row.task_id for row in rows}) if options.with_corrections else {}
        )
        for row in rows:
            record = trajectory_record(row, steps.pop(row.pk))
            label = labels.get(row.pk)
            attribution = attributions.get(row.pk, Decisive())
            decisive = Decisive(
                label_step=label.step_index if label else None,
                label_agent=label.agent if label else "",
                label_reason=label.reason if label else "",
                label_source=label.source if label else "",
                lo=attribution.lo,
                hi=attribution.hi,
                point_step=attribution.point_step,
                rollback_step=attribution.rollback_step,
                alpha=attribution.alpha,
            )
            corrections = list(humans.get(row.pk, []))
            if options.with_corrections:
                machine = divergence_correction(record, successes.get(row.task_id, []))
                if machine is not None:
                    corrections.insert(0, machine)
            yield ExportRollout(
                rollout_id=row.pk,
                record=record,
                decisive=decisive,
                occurrences=occurrences.get(row.pk, []),
                corrections=corrections,
            )


def export_jobs(*, project: Project) -> QuerySet[ExportJob]:
    return ExportJob.objects.filter(project=project).select_related("created_by")


def export_job(*, project: Project, pk: int) -> ExportJob | None:
    return ExportJob.objects.filter(project=project, pk=pk).select_related("project").first()


def rollout_corrections(*, rollout: Trajectory) -> list[Correction]:
    return list(Correction.objects.filter(trajectory=rollout).select_related("author"))


def correction_context(*, rollout: Trajectory, default_step: int | None = None) -> dict[str, Any]:
    """What templates/exports/_correction_form.html needs besides project, rollout and membership.

    ``default_step`` is the step the form proposes (the labelled step, else the rollback
    point); without it the newest label's step is used.
    """
    if default_step is None:
        label = _labels([rollout.pk], human_only=False).get(rollout.pk)
        default_step = label.step_index if label else None
    from_success = None
    if rollout.outcome == Outcome.FAILURE and rollout.task_id:
        steps = step_records_by_rollout([rollout.pk])[rollout.pk]
        record = trajectory_record(rollout, steps)
        from_success = divergence_correction(
            record, _successes(rollout.project, {rollout.task_id}).get(rollout.task_id, [])
        )
    return {
        "corrections": rollout_corrections(rollout=rollout),
        "correction_step": default_step,
        "correction_from_success": from_success,
    }
