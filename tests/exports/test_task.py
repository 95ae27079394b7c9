"""The Celery task: runs the export by id, and a second run does nothing."""

from __future__ import annotations

import pytest

from exports.core.filters import KINDS, parse_filters
from exports.services import export_create, export_folder
from exports.tasks import run_export

pytestmark = pytest.mark.django_db


def test_it_runs_an_export_by_id_and_only_once(small_project):
    job = export_create(
        project=small_project, kinds=KINDS, filters=parse_filters({}), dispatch=False
    )
    assert run_export.apply(args=[job.pk]).get() == "done"
    job.refresh_from_db()
    finished, manifest = job.finished_at, (export_folder(job) / "manifest.json").read_bytes()
    assert run_export.apply(args=[job.pk]).get() == "done"
    job.refresh_from_db()
    assert (
        job.finished_at == finished
        and job.attempt == 1
        and (export_folder(job) / "manifest.json").read_bytes() == manifest
    )


def test_it_starts_over_after_a_worker_lost_before_attempt_folders(small_project):
    # A job left running by a worker that wrote straight into the job's folder.
    job = export_create(
        project=small_project, kinds=("sft",), filters=parse_filters({}), dispatch=False
    )
    job_folder = export_folder(job)
    job_folder.mkdir(parents=True)
    (job_folder / "sft.jsonl.partial").write_text("half a line")
    job.status = "running"
    job.save()
    assert run_export.apply(args=[job.pk]).get() == "done"
    job.refresh_from_db()
    assert export_folder(job) == job_folder / "1"
    assert sorted(p.name for p in job_folder.iterdir()) == ["1"]
    assert sorted(p.name for p in (job_folder / "1").iterdir()) == [
        "manifest.json",
        "manifest.schema.json",
        "sft.jsonl",
        "sft.schema.json",
    ]


def test_the_task_has_the_name_to_register():
    assert run_export.name == "exports.tasks.run_export"
