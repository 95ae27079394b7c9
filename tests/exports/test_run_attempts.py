"""Runs of one export job that overlap (a redelivered task beside the first) or fail.

Overlap is made without threads or sleeps: run A's observer, called after each rollout A
writes, starts run B while A's files are still open.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from exports.core.filters import KINDS, parse_filters
from exports.core.manifest import archive_names
from exports.core.schemas import schema_names
from exports.core.writer import file_sha256
from exports.models import ExportJob
from exports.services import (
    MSG_EXPORT_FAILED,
    export_create,
    export_folder,
    export_run,
)

pytestmark = pytest.mark.django_db
SFT_FILES = ["manifest.json", "manifest.schema.json", "sft.jsonl", "sft.schema.json"]

JOB_FIELDS = (
    "status",
    "attempt",
    "files_dir",
    "counts",
    "manifest",
    "progress_done",
    "progress_total",
    "error_message",
    "finished_at",
)


class WorkerLost(BaseException):
    """Stands for a worker killed mid-run: nothing in the run gets to handle it."""


def _new_job(project, kinds: tuple[str, ...] = KINDS) -> ExportJob:
    return export_create(project=project, kinds=kinds, filters=parse_filters({}), dispatch=False)


def _job_folder(job: ExportJob) -> Path:
    return Path(settings.MEDIA_ROOT) / "exports" / str(job.project_id) / str(job.pk)


def _row(job_id: int) -> dict[str, Any]:
    job = ExportJob.objects.get(pk=job_id)
    return {name: getattr(job, name) for name in JOB_FIELDS}


def _names(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


def test_it_keeps_the_newer_run_when_two_runs_of_a_job_overlap(small_project):
    job = _new_job(small_project)
    seen: dict[str, Any] = {}

    def run_b_while_a_writes(done: int) -> None:
        if seen:
            return
        seen["a_files"] = _names(_job_folder(job) / "1")
        seen["b_returned"] = export_run(job_id=job.pk)
        seen["row_after_b"] = _row(job.pk)

    a_returned = export_run(job_id=job.pk, observer=run_b_while_a_writes)

    # B really ran while A had its files open.
    assert seen["a_files"] == sorted(f"{kind}.jsonl.partial" for kind in KINDS)
    after_b = seen["row_after_b"]
    assert after_b["status"] == "done" and after_b["attempt"] == 2
    assert after_b["files_dir"] == f"exports/{small_project.pk}/{job.pk}/2"
    # A changed nothing once B had claimed the job: not status, counts, files_dir, progress.
    assert _row(job.pk) == after_b
    assert a_returned.attempt == 2 and seen["b_returned"].attempt == 2
    assert _names(_job_folder(job)) == ["2"]

    job.refresh_from_db()
    folder = export_folder(job)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest == job.manifest
    assert _names(folder) == sorted(archive_names(manifest))
    assert [entry["name"] for entry in manifest["schemas"]] == schema_names(KINDS)
    assert [entry["name"] for entry in manifest["files"]] == [f"{kind}.jsonl" for kind in KINDS]
    for entry in manifest["files"]:
        path = folder / entry["name"]
        assert file_sha256(path) == entry["sha256"]
        assert len(path.read_bytes().splitlines()) == entry["lines"]
    assert manifest["counts"] == job.counts and sum(job.counts.values()) > 0


def test_a_failure_in_a_superseded_run_leaves_the_finished_job_alone(small_project):
    job = _new_job(small_project, ("sft",))
    seen: dict[str, Any] = {}

    def run_b_then_fail(done: int) -> None:
        export_run(job_id=job.pk)
        seen["row_after_b"] = _row(job.pk)
        raise OSError("disk full")

    export_run(job_id=job.pk, observer=run_b_then_fail)

    assert seen["row_after_b"]["status"] == "done"
    assert _row(job.pk) == seen["row_after_b"]
    assert _names(_job_folder(job)) == ["2"]


def test_a_failure_in_a_superseded_run_does_not_fail_the_running_job(small_project):
    job = _new_job(small_project, ("sft",))

    def lose_worker(done: int) -> None:
        raise WorkerLost

    def run_b_until_its_worker_is_lost_then_fail(done: int) -> None:
        with pytest.raises(WorkerLost):
            export_run(job_id=job.pk, observer=lose_worker)
        raise OSError("disk full")

    export_run(job_id=job.pk, observer=run_b_until_its_worker_is_lost_then_fail)

    job.refresh_from_db()
    assert (job.status, job.attempt, job.error_message) == ("running", 2, "")
    assert _names(_job_folder(job)) == ["2"]  # A removed its own folder, not B's

    # The lost run is redelivered and starts over; both earlier folders go.
    job = export_run(job_id=job.pk)
    assert (job.status, job.attempt) == ("done", 3)
    assert _names(_job_folder(job)) == ["3"]
    assert _names(export_folder(job)) == sorted(archive_names(job.manifest)) == SFT_FILES


def test_a_failure_in_the_latest_run_fails_the_job_for_good(small_project):
    job = _new_job(small_project, ("sft",))

    def fail(done: int) -> None:
        raise OSError("disk full")

    job = export_run(job_id=job.pk, observer=fail)
    assert job.status == "failed" and job.attempt == 1
    assert job.error_message == MSG_EXPORT_FAILED.format(error="disk full")

    job = export_run(job_id=job.pk)
    assert job.status == "failed" and job.attempt == 1


def test_a_run_cut_short_in_its_attempt_folder_starts_over_in_a_new_one(small_project):
    job = _new_job(small_project, ("sft",))
    lost = _job_folder(job) / "1"
    lost.mkdir(parents=True)
    (lost / "sft.jsonl.partial").write_text("half a line")
    ExportJob.objects.filter(pk=job.pk).update(status="running", attempt=1)

    job = export_run(job_id=job.pk)

    assert (job.status, job.attempt) == ("done", 2)
    assert job.files_dir == f"exports/{small_project.pk}/{job.pk}/2"
    assert _names(_job_folder(job)) == ["2"]
    assert _names(export_folder(job)) == sorted(archive_names(job.manifest)) == SFT_FILES


def test_each_claim_takes_the_next_attempt_number(small_project):
    job = _new_job(small_project, ("sft",))
    assert job.attempt == 0
    attempts: list[int] = []

    def note_attempt(done: int) -> None:
        if not attempts:
            attempts.append(ExportJob.objects.get(pk=job.pk).attempt)

    job = export_run(job_id=job.pk, observer=note_attempt)
    assert attempts == [1] and job.attempt == 1
