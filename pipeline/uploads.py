"""Uploads as every entry point (pages, API, CLI, demo) submits them: stored by ingest,
then parsed by the pipeline's task, which queues the project's refresh when done."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import IO

from django.contrib.auth.models import AnonymousUser, User
from django.db import DatabaseError, transaction

from ingest.jobs import job_dispatch
from ingest.models import Upload, UploadStatus
from ingest.services import UploadOutcome, failed_for_good, upload_create, upload_retry
from pipeline.overview_counts import overview_counts_add_upload
from projects.models import Project

logger = logging.getLogger(__name__)

MSG_NOT_RETRYABLE = (
    "{name} failed on its content: a retry would fail the same way. "
    "Fix the file and upload it again."
)


class UploadNotRetryable(ValueError):
    """The upload failed on its content: queueing it again would fail the same way."""


def upload_retryable(upload: Upload) -> bool:
    """Whether the upload failed for a reason a retry can cure: not on what the file holds
    (a refused write, an internal error fixed by a deploy, a worker lost until the reaper
    gave up may all go through when queued again), or on what it holds but under readers
    that have changed since (ingest.core.reader_version).

    Example:
        >>> from ingest.core.reader_version import reader_version
        >>> upload_retryable(Upload(status="failed", failed_on_content=True,
        ...                         reader_version=reader_version()))
        False
        >>> upload_retryable(Upload(status="failed", failed_on_content=True,
        ...                         reader_version="an older reader"))
        True
    """
    if upload.status != UploadStatus.FAILED:
        return False
    return not failed_for_good(upload)


def upload_dispatch(upload_id: int) -> bool:
    """Send the stored upload to a worker; with the broker down it stays queued for the
    sweeper (never an error for the request). Whether it was sent."""
    from pipeline.tasks import ingest_upload

    return job_dispatch(Upload, upload_id, lambda: ingest_upload.delay(upload_id))


def upload_counted(*, upload: Upload) -> None:
    """A finished upload's rollouts into the overview's counters, so the cards hold them
    before the refresh that follows has run (which moves the same shares again). A refused
    write only leaves the cards behind until that refresh: the upload is not failed for it."""
    try:
        overview_counts_add_upload(project_id=upload.project_id, upload_id=upload.pk)
    except DatabaseError:
        logger.warning("overview counters of upload %s wait for the refresh", upload.pk)


def upload_retry_submit(*, upload: Upload) -> bool:
    """Queue a failed upload again and send it once committed; False if it had not failed,
    ``UploadNotRetryable`` if it failed on its content."""
    if upload.status == UploadStatus.FAILED and not upload_retryable(upload):
        raise UploadNotRetryable(MSG_NOT_RETRYABLE.format(name=upload.original_name))
    if not upload_retry(upload=upload):
        return False
    upload_id = upload.pk
    transaction.on_commit(lambda: upload_dispatch(upload_id))
    return True


def upload_submit(
    *,
    project: Project,
    stream: Iterable[bytes] | IO[bytes],
    original_name: str,
    user: User | AnonymousUser | None = None,
    requested_format: str = "",
    agent_system: str = "",
) -> UploadOutcome:
    """Store the file once per project and queue its ingestion on commit."""
    return upload_create(
        project=project,
        stream=stream,
        original_name=original_name,
        user=user,
        requested_format=requested_format,
        dispatch=upload_dispatch,
        agent_system=agent_system,
    )
