"""Writes for exports: corrections on the rollout page, export jobs and their runs."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from dashboard.exports.core.chat import is_agent_action
from dashboard.exports.core.filters import ExportFilters, parse_filters
from dashboard.exports.core.manifest import MANIFEST_NAME, build_manifest
from dashboard.exports.core.run import write_exports
from dashboard.exports.models import Correction, CorrectionKind, ExportJob, ExportStatus
from dashboard.exports.selectors import ItemOptions, export_items, export_rollouts
from dashboard.exports.sources import ProjectSources
from dashboard.models import Project
from ingest.models import Step, Trajectory
from ingest.selectors import step_record

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)

MSG_NO_STEP = "This rollout has no step {step}."
MSG_NOT_ACTION = (
    "Corrections go on an agent's own step, not on a user turn, a tool result or the system prompt."
)
MSG_NO_CONTENT = "Write what the agent should have said."
MSG_NO_TOOL = "Name the tool the agent should have called."
MSG_BAD_ARGS = 'Tool arguments must be a JSON object, e.g. {"reservation_id": "ABC123"}.'
MSG_BAD_KIND = "A correction is a message or a tool call."
MSG_EXPORT_FAILED = "The export failed: {error}"


class CorrectionError(ValueError):
    """A correction the user must fix; the message says how."""


def _tool_args(raw: str) -> Any:
    text = (raw or "").strip() or "{}"
    try:
        value = json.loads(text)
    except ValueError:
        raise CorrectionError(MSG_BAD_ARGS) from None
    if not isinstance(value, dict):
        raise CorrectionError(MSG_BAD_ARGS)
    return value


@transaction.atomic
def correction_save(
    *,
    rollout: Trajectory,
    step_index: int,
    kind: str,
    author: User | None,
    content: str = "",
    tool_name: str = "",
    tool_args: str = "",
) -> Correction:
    """Store what the agent should have done at one step (one correction per step)."""
    step = Step.objects.filter(trajectory=rollout, index=step_index).first()
    if step is None:
        raise CorrectionError(MSG_NO_STEP.format(step=step_index))
    if not is_agent_action(step_record(step)):
        raise CorrectionError(MSG_NOT_ACTION)
    content = (content or "").strip()
    if kind == CorrectionKind.MESSAGE:
        if not content:
            raise CorrectionError(MSG_NO_CONTENT)
        tool_name, args = "", None
    elif kind == CorrectionKind.TOOL_CALL:
        tool_name = (tool_name or "").strip()
        if not tool_name:
            raise CorrectionError(MSG_NO_TOOL)
        args = _tool_args(tool_args)
    else:
        raise CorrectionError(MSG_BAD_KIND)
    correction, _ = Correction.objects.update_or_create(
        trajectory=rollout,
        step_index=step_index,
        defaults={
            "kind": kind,
            "content": content,
            "tool_name": tool_name,
            "tool_args": args,
            "author": author,
        },
    )
    return correction


def correction_delete(*, correction: Correction) -> None:
    correction.delete()


def export_folder(job: ExportJob) -> Path:
    return Path(settings.MEDIA_ROOT) / job.files_dir


def export_create(
    *,
    project: Project,
    kinds: tuple[str, ...],
    filters: ExportFilters,
    user: User | None = None,
    dispatch: bool = True,
) -> ExportJob:
    """Record an export job and queue its task once the row is committed.

    Raises :class:`FilterError` when the stored attribution cannot serve the filters.
    """
    ProjectSources(project, filters.alpha)
    with transaction.atomic():
        job = ExportJob.objects.create(
            project=project, created_by=user, kinds=list(kinds), filters=filters.to_json()
        )
        job.files_dir = f"exports/{project.pk}/{job.pk}"
        job.save(update_fields=["files_dir"])
        if dispatch:
            transaction.on_commit(lambda: export_dispatch(job_id=job.pk))
    return job


def export_dispatch(*, job_id: int) -> None:
    from dashboard.exports.tasks import run_export

    result = run_export.delay(job_id)
    ExportJob.objects.filter(pk=job_id, task_id="").update(task_id=result.id or "")


def _claim(job_id: int) -> ExportJob | None:
    """Mark the job running unless it is finished; a finished job is never redone."""
    with transaction.atomic():
        job = (
            ExportJob.objects.select_for_update()
            .select_related("project")
            .filter(pk=job_id)
            .first()
        )
        if job is None or job.status in (ExportStatus.DONE, ExportStatus.FAILED):
            return None
        job.status = ExportStatus.RUNNING
        job.started_at = timezone.now()
        job.progress_done = 0
        job.save(update_fields=["status", "started_at", "progress_done"])
    return job


def export_run(*, job_id: int, observer: Callable[[int], None] | None = None) -> ExportJob:
    """Write the job's files and manifest. Running it again after it finished does nothing;
    a run cut short (worker lost) starts over from an empty folder.

    ``observer`` is called with the number of rollouts done after each one (benchmarks).
    """
    job = _claim(job_id)
    if job is None:
        return ExportJob.objects.get(pk=job_id)
    folder = export_folder(job)
    try:
        _write(job, folder, observer)
    except Exception as exc:
        logger.exception("export %s failed", job_id)
        ExportJob.objects.filter(pk=job_id).update(
            status=ExportStatus.FAILED,
            error_message=MSG_EXPORT_FAILED.format(error=exc),
            finished_at=timezone.now(),
        )
    return ExportJob.objects.get(pk=job_id)


def _write(job: ExportJob, folder: Path, observer: Callable[[int], None] | None) -> None:
    project = job.project
    filters = parse_filters(job.filters)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    rollouts = export_rollouts(project=project, filters=filters)
    total = rollouts.count()
    ExportJob.objects.filter(pk=job.pk).update(progress_total=total)
    reader = ProjectSources(project, filters.alpha)
    alpha = reader.alpha
    created_at = timezone.now()

    def progress(done: int) -> None:
        if observer is not None:
            observer(done)
        if done % 50 == 0 or done == total:
            ExportJob.objects.filter(pk=job.pk).update(progress_done=done)

    recovery_needed = bool({"sft", "preference"} & set(job.kinds))
    items = export_items(
        project=project,
        rollouts=rollouts,
        options=ItemOptions(
            sources=reader,
            human_only=filters.human_only,
            with_corrections=recovery_needed,
            with_occurrences="start_states" in job.kinds or "diagnosis" in job.kinds,
        ),
    )
    result = write_exports(
        items,
        kinds=job.kinds,
        folder=folder,
        misbehaviours=filters.misbehaviours,
        diagnosis_window=filters.diagnosis_window,
        on_rollout=progress,
    )
    finished_at = timezone.now()
    manifest = build_manifest(
        job_id=job.pk,
        project={"id": project.pk, "slug": project.slug, "name": project.name},
        kinds=job.kinds,
        filters=filters.to_json(),
        alpha=alpha,
        provenance=reader.provenance(),
        counts=result.counts,
        skipped=result.skipped,
        files=result.files,
        rollouts=result.rollouts,
        corrections=result.corrections,
        created_at=created_at.isoformat(),
        finished_at=finished_at.isoformat(),
    )
    partial = folder / (MANIFEST_NAME + ".partial")
    partial.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    partial.replace(folder / MANIFEST_NAME)
    ExportJob.objects.filter(pk=job.pk).update(
        status=ExportStatus.DONE,
        progress_done=result.rollouts,
        progress_total=max(total, result.rollouts),
        counts=result.counts,
        manifest=manifest,
        error_message="",
        finished_at=finished_at,
    )
