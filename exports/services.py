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
from django.db.models import F
from django.utils import timezone

from analysis.selectors import misbehaviours_now
from exports.core.filters import ExportFilters, parse_filters
from exports.core.manifest import MANIFEST_NAME, build_manifest
from exports.core.run import write_exports
from exports.core.schemas import write_schemas
from exports.models import Correction, CorrectionKind, ExportJob, ExportStatus
from exports.selectors import ItemOptions, export_items, export_rollouts
from exports.sources import ProjectSources, misbehaviours_check
from ingest.core.vocabulary import is_agent_action
from ingest.jobs import job_dispatch, job_update
from ingest.models import Step, Trajectory
from ingest.selectors import step_record
from projects.models import Project

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
FINISHED = (ExportStatus.DONE, ExportStatus.FAILED)


class CorrectionError(ValueError):
    """A correction the user must fix; the message says how."""


class _Superseded(Exception):
    """A newer attempt claimed the job: this run stops and leaves the job to that one."""


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
    """Where a job's files are; for a finished job, the folder of the attempt that finished."""
    return Path(settings.MEDIA_ROOT) / job.files_dir


def _job_dir(job: ExportJob) -> str:
    """The job's folder relative to MEDIA_ROOT; it holds one folder per attempt."""
    return f"exports/{job.project_id}/{job.pk}"


def _attempt_dir(job: ExportJob) -> str:
    return f"{_job_dir(job)}/{job.attempt}"


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
    misbehaviours_check(project, filters.misbehaviours)
    with transaction.atomic():
        job = ExportJob.objects.create(
            project=project, created_by=user, kinds=list(kinds), filters=filters.to_json()
        )
        job.files_dir = _job_dir(job)
        job.save(update_fields=["files_dir"])
        if dispatch:
            transaction.on_commit(lambda: export_dispatch(job_id=job.pk))
    return job


def export_dispatch(*, job_id: int) -> bool:
    """Send the job to a worker; with the broker down it stays queued for the sweeper."""
    from exports.tasks import run_export

    return job_dispatch(ExportJob, job_id, lambda: run_export.delay(job_id))


def export_retry(*, job: ExportJob) -> bool:
    """Queue a failed export again and send it once committed; False if it had not failed."""
    retried = ExportJob.objects.filter(pk=job.pk, status=ExportStatus.FAILED).update(
        status=ExportStatus.QUEUED, error_message="", reaped=0, dispatched_at=None, progress_done=0
    )
    if retried:
        job_id = job.pk
        transaction.on_commit(lambda: export_dispatch(job_id=job_id))
    return bool(retried)


def _claim(job_id: int) -> ExportJob | None:
    """Mark the job running with a new attempt number unless it is finished.

    One conditional UPDATE both checks and claims, so two workers claiming at once get
    different numbers on SQLite too (where select_for_update does nothing). A finished job
    is never redone; a running one is taken over, since its worker may be lost.
    """
    with transaction.atomic():
        claimed = (
            ExportJob.objects.filter(pk=job_id)
            .exclude(status__in=FINISHED)
            .update(
                status=ExportStatus.RUNNING,
                attempt=F("attempt") + 1,
                started_at=timezone.now(),
                heartbeat_at=timezone.now(),
                progress_done=0,
            )
        )
        if not claimed:
            return None
        return ExportJob.objects.select_related("project").get(pk=job_id)


def _update_attempt(job: ExportJob, **fields: Any) -> bool:
    """Update the job only if ``job``'s attempt is still the latest; say whether it was."""
    return job_update(job, **fields)


def _remove_other_attempts(job: ExportJob) -> None:
    """Delete what earlier attempts (or a run from before attempts) left in the job's folder.

    Called once ``job``'s attempt is recorded as done: no newer attempt can exist then, and
    an older run still writing finds itself superseded and cleans up after itself.
    """
    keep = str(job.attempt)
    for entry in (Path(settings.MEDIA_ROOT) / _job_dir(job)).iterdir():
        if entry.name == keep:
            continue
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def export_run(*, job_id: int, observer: Callable[[int], None] | None = None) -> ExportJob:
    """Write the job's files and manifest. Running it again after it finished does nothing;
    a run cut short (worker lost) starts over in a new attempt folder.

    Two runs of one job at once (a redelivered task beside the first) write in different
    folders, and only the latest attempt may change the job; an earlier one that notices it
    was superseded deletes its folder and returns.

    ``observer`` is called with the number of rollouts done after each one (benchmarks).
    """
    job = _claim(job_id)
    if job is None:
        return ExportJob.objects.get(pk=job_id)
    folder = Path(settings.MEDIA_ROOT) / _attempt_dir(job)
    try:
        _write(job, folder, observer)
    except _Superseded:
        logger.info("export %s attempt %s was superseded", job_id, job.attempt)
        shutil.rmtree(folder, ignore_errors=True)
    except Exception as exc:
        failed = _update_attempt(
            job,
            status=ExportStatus.FAILED,
            error_message=MSG_EXPORT_FAILED.format(error=exc),
            finished_at=timezone.now(),
        )
        if failed:
            logger.exception("export %s failed", job_id)
        else:
            # Likely caused by the newer attempt deleting this folder; not the job's failure.
            logger.info("export %s attempt %s failed once superseded", job_id, job.attempt)
            shutil.rmtree(folder, ignore_errors=True)
    else:
        _remove_other_attempts(job)
    return ExportJob.objects.get(pk=job_id)


def _write(job: ExportJob, folder: Path, observer: Callable[[int], None] | None) -> None:
    project = job.project
    filters = parse_filters(job.filters)
    if folder.exists():
        # Attempt numbers are never reused, so only a reset database leaves this behind.
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    rollouts = export_rollouts(project=project, filters=filters)
    total = rollouts.count()
    if not _update_attempt(job, progress_total=total):
        raise _Superseded
    reader = ProjectSources(project, filters.alpha)
    alpha = reader.alpha
    created_at = timezone.now()

    def progress(done: int) -> None:
        if observer is not None:
            observer(done)
        if (done % 50 == 0 or done == total) and not _update_attempt(job, progress_done=done):
            raise _Superseded

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
        misbehaviours=misbehaviours_now(project, filters.misbehaviours),
        diagnosis_window=filters.diagnosis_window,
        observation_chars=filters.observation_chars,
        on_rollout=progress,
    )
    schemas = write_schemas(job.kinds, folder)
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
        schemas=schemas,
        corrections=result.corrections,
        created_at=created_at.isoformat(),
        finished_at=finished_at.isoformat(),
    )
    partial = folder / (MANIFEST_NAME + ".partial")
    partial.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    partial.replace(folder / MANIFEST_NAME)
    done = _update_attempt(
        job,
        status=ExportStatus.DONE,
        files_dir=_attempt_dir(job),
        progress_done=result.rollouts,
        progress_total=max(total, result.rollouts),
        counts=result.counts,
        manifest=manifest,
        error_message="",
        finished_at=finished_at,
    )
    if not done:
        raise _Superseded
