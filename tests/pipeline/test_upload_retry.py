"""Which failed uploads a retry can help: not those that failed on the file's content."""

from __future__ import annotations

import pytest

from ingest.jobs import MSG_STALLED
from ingest.models import Upload
from ingest.services import MSG_DATABASE_REFUSED, MSG_INTERNAL
from pipeline.uploads import upload_retryable

pytestmark = pytest.mark.django_db


def _failed(message: str, status: str = "failed") -> Upload:
    return Upload(status=status, original_name="runs.jsonl", error_message=message)


@pytest.mark.parametrize(
    "message",
    [
        MSG_DATABASE_REFUSED.format(name="runs.jsonl", error="database or disk is full"),
        MSG_INTERNAL.format(name="runs.jsonl", kind="MemoryError"),
        MSG_STALLED.format(minutes=5, times=3),
    ],
)
def test_it_retries_a_failure_that_was_not_the_files_fault(message):
    assert upload_retryable(_failed(message))


@pytest.mark.parametrize(
    "message",
    [
        "runs.jsonl, line 1, field steps: Expected a list.",
        "runs.jsonl: Unknown format; choose one of: native, who_and_when.",
        "The file holds no trajectories.",
        "",
    ],
)
def test_it_does_not_retry_a_failure_of_the_files_content(message):
    assert not upload_retryable(_failed(message))


def test_it_retries_only_a_failed_upload():
    message = MSG_STALLED.format(minutes=5, times=3)
    assert not upload_retryable(_failed(message, status="done"))
