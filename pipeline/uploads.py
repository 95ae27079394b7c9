"""Uploads as every entry point (pages, API, CLI, demo) submits them: stored by ingest,
then parsed by the pipeline's task, which queues the project's refresh when done."""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO

from django.contrib.auth.models import AnonymousUser, User

from ingest.models import Upload
from ingest.services import UploadOutcome, upload_create
from projects.models import Project


def upload_dispatch(upload_id: int) -> None:
    """Send the stored upload to a worker and remember the task id."""
    from pipeline.tasks import ingest_upload

    result = ingest_upload.delay(upload_id)
    Upload.objects.filter(pk=upload_id, task_id="").update(task_id=result.id or "")


def upload_submit(
    *,
    project: Project,
    stream: Iterable[bytes] | IO[bytes],
    original_name: str,
    user: User | AnonymousUser | None = None,
    requested_format: str = "",
) -> UploadOutcome:
    """Store the file once per project and queue its ingestion on commit."""
    return upload_create(
        project=project,
        stream=stream,
        original_name=original_name,
        user=user,
        requested_format=requested_format,
        dispatch=upload_dispatch,
    )
