"""Which failed uploads a retry can help: not those that failed on the file's content.
Each failure is made the way ingest makes it, and the stored upload is asked."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from ingest.jobs import MSG_STALLED, job_reap
from ingest.models import Upload
from ingest.services import MSG_INTERNAL
from pipeline.uploads import upload_retryable
from tests.conftest import ingest_bytes

pytestmark = pytest.mark.django_db

GOOD = json.dumps({"id": "r1", "outcome": "failure", "steps": [{"role": "user", "content": "hi"}]})


@pytest.mark.parametrize(
    ("data", "name", "fmt", "message"),
    [
        (b'{"id": "r1", "steps": "nope"}\n', "runs.jsonl", "", "runs.jsonl, line 1, field steps"),
        (b"not a trace at all", "notes.txt", "", "notes.txt: Unknown trace format"),
        (b"[]", "empty.json", "tau_bench", "holds no trajectories"),
    ],
)
def test_it_does_not_retry_a_failure_of_the_files_content(project, data, name, fmt, message):
    upload = ingest_bytes(project, data, name, requested_format=fmt)
    assert upload.status == "failed" and message in upload.error_message
    assert not upload_retryable(upload)


def test_it_retries_an_internal_error(project, monkeypatch):
    import ingest.services

    def broken(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(ingest.services, "_parse_into", broken)
    upload = ingest_bytes(project, GOOD.encode() + b"\n", "runs.jsonl")
    assert upload.error_message == MSG_INTERNAL.format(name="runs.jsonl", kind="MemoryError")
    assert upload_retryable(upload)


def test_it_retries_a_job_the_reaper_gave_up(project):
    upload = ingest_bytes(project, GOOD.encode() + b"\n", "runs.jsonl")
    Upload.objects.filter(pk=upload.pk).update(status="running", reaped=3)
    upload.refresh_from_db()
    assert not job_reap(upload, max_reaps=3, timeout=timedelta(minutes=5))
    upload.refresh_from_db()
    assert upload.error_message == MSG_STALLED.format(minutes=5, times=4)
    assert upload_retryable(upload)


def test_it_retries_only_a_failed_upload(project):
    upload = ingest_bytes(project, GOOD.encode() + b"\n", "runs.jsonl")
    assert upload.status == "done" and not upload_retryable(upload)


def test_a_retry_clears_the_content_mark(project):
    from ingest.services import upload_retry

    upload = ingest_bytes(project, b'{"id": "r1", "steps": "nope"}\n', "runs.jsonl")
    Upload.objects.filter(pk=upload.pk).update(failed_on_content=False)  # as a refused write
    upload.refresh_from_db()
    assert upload_retry(upload=upload)
    upload.refresh_from_db()
    assert upload.status == "queued" and not upload.failed_on_content


def test_a_content_failure_under_readers_since_changed_is_retried_and_read_again(project):
    # A file no reader knew: its failure stands while the readers are the same...
    data = GOOD.replace('"steps"', '"turns"').encode() + b"\n"
    upload = ingest_bytes(project, data, "runs.jsonl")
    assert upload.status == "failed" and upload.failed_on_content
    assert len(upload.reader_version) == 16 and not upload_retryable(upload)
    assert ingest_bytes(project, data, "runs.jsonl").finished_at == upload.finished_at
    # ...and after a release whose readers differ, the same file sent again is read again.
    Upload.objects.filter(pk=upload.pk).update(reader_version="0123456789abcdef")
    assert upload_retryable(Upload.objects.get(pk=upload.pk))
    again = ingest_bytes(project, data, "runs.jsonl")
    assert again.pk == upload.pk and again.finished_at > upload.finished_at
    assert again.status == "failed" and again.reader_version == upload.reader_version
    assert Upload.objects.filter(project=project).count() == 1
