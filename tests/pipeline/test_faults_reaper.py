"""The reaper: a whole worker killed mid-ingest leaves its message unacknowledged in Redis
(it comes back only after the visibility timeout, an hour), and its heartbeat is reaped
only after 15 minutes, so the pipeline queues it again as soon as it sees the worker's
processes gone: the sweep at its next run, a worker as it starts; and a job that keeps
stalling is failed with the reason after FAULTLINE_JOB_MAX_REAPS, shown on the uploads
page with a Retry button that queues it again."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from tests.pipeline.faults_support import Stack, faultline_stack
from tests.pipeline.faults_traces import native_jsonl
from tests.pipeline.test_faults_worker_lost import (
    one_copy,
    submit,
    wait_finished,
    wait_running,
)

ROLLOUTS, STEPS = 5000, 20
STATUS = """
import json
from dashboard.serializers import upload_json
from ingest.models import Upload
print("JSON=" + json.dumps(upload_json(Upload.objects.select_related("project").get(pk={pk}))))
"""


def _status(stack: Stack, upload_id: int) -> dict:
    """The upload as its status API and the uploads page show it."""
    return stack.shell_json(STATUS.format(pk=upload_id))


@pytest.mark.services
def test_it_requeues_an_ingest_whose_whole_worker_was_killed(tmp_path):
    """Twice in one run (each stack and ingest costs seconds): killed under the first
    worker, the sweep queues it again; killed under the second, the third queues it again
    as it starts. Both with the default 15-minute heartbeat timeout, which a job whose
    worker is alive keeps however silent it is. It ends done once."""
    trace = native_jsonl(tmp_path / "big.jsonl", rollouts=ROLLOUTS, steps=STEPS)
    with faultline_stack(tmp_path / "stack") as stack:
        upload_id = submit(stack, trace)  # before the worker: see test_faults_worker_lost
        first = stack.worker(name="first")
        wait_running(stack, "ingest_upload", upload_id)
        first.kill_group()
        assert _status(stack, upload_id)["status"] == "running"

        report = stack.sweep()
        assert report["lost"]["upload"] == report["requeued"]["upload"] == 1
        row = "SELECT status, reaped, dispatched_at IS NOT NULL FROM ingest_upload WHERE id = ?"
        assert stack.one(row, (upload_id,)) == ("queued", 1, True)  # sent again at once
        # Not the frozen progress of the lost run.
        assert _status(stack, upload_id)["progress"]["percent"] == 0

        second = stack.worker(name="second")
        wait_running(stack, "ingest_upload", upload_id, attempt=2)
        # Killed as soon as it runs: a sweep in between (seconds of its own) let the
        # second worker finish the ingest first on a quiet machine.
        second.kill_group()
        third = stack.worker(name="third")
        wait_running(stack, "ingest_upload", upload_id, attempt=3)
        assert stack.sweep()["requeued"]["upload"] == 0  # its worker is alive
        status, attempt = wait_finished(stack, "ingest_upload", upload_id, timeout=60)
        assert (status, attempt) == ("done", 3), third.output()
        assert f"upload {upload_id}: its worker was lost; queued again" in third.output()
        assert stack.one("SELECT reaped FROM ingest_upload WHERE id = ?", (upload_id,)) == 2
        assert one_copy(stack, upload_id) == (ROLLOUTS, ROLLOUTS, ROLLOUTS * STEPS)


def _stall(upload, *, now):
    """As a worker that claimed the upload and then went silent."""
    from ingest.jobs import job_claim
    from ingest.models import Upload

    job_claim(Upload, upload.pk)
    Upload.objects.filter(pk=upload.pk).update(heartbeat_at=now - timedelta(hours=1))


@pytest.fixture
def stalled_for_good(project, settings, tmp_path):
    """An upload that stalled once more than FAULTLINE_JOB_MAX_REAPS allows, swept."""
    from ingest.models import Upload
    from ingest.services import upload_create
    from pipeline.jobs import jobs_sweep

    settings.FAULTLINE_JOB_MAX_REAPS = 2
    # force_login's bare request has no address, which django-axes cannot store on
    # PostgreSQL; the lockout is not what these tests are about.
    settings.AXES_ENABLED = False
    # Long enough that the sweep does not send the reaped upload to a broker: this test
    # is about the reaper's bound, the sweeper's sending has tests with a real one.
    settings.FAULTLINE_JOB_SWEEP_GRACE_S = 24 * 3600
    path = native_jsonl(tmp_path / "stalls.jsonl", rollouts=2, steps=4)
    with path.open("rb") as stream:
        upload = upload_create(project=project, stream=stream, original_name=path.name).upload
    now = timezone.now()
    reports = []
    for _ in range(settings.FAULTLINE_JOB_MAX_REAPS + 1):
        _stall(upload, now=now)
        reports.append(jobs_sweep(now=now))
    return Upload.objects.get(pk=upload.pk), reports


@pytest.mark.django_db
def test_it_fails_a_job_that_stalls_more_often_than_the_bound(stalled_for_good, settings):
    from ingest.jobs import MSG_STALLED

    upload, reports = stalled_for_good
    assert [r.requeued["upload"] for r in reports] == [1, 1, 0]
    assert reports[-1].failed["upload"] == 1
    assert upload.status == "failed"
    timeout = settings.FAULTLINE_JOB_HEARTBEAT_TIMEOUT_S
    assert upload.error_message == MSG_STALLED.format(minutes=timeout / 60, times=3)


@pytest.mark.django_db
def test_it_shows_the_stalled_reason_and_a_retry_button(stalled_for_good, client, owner):
    upload, _ = stalled_for_good
    client.force_login(owner)
    page = client.get(reverse("dashboard:uploads", args=[upload.project.slug])).content.decode()
    assert upload.error_message.split("(")[0] in page
    retry = reverse("dashboard:upload_retry", args=[upload.project.slug, upload.pk])
    assert f'action="{retry}"' in page


@pytest.mark.django_db
def test_it_queues_a_stalled_upload_again_on_retry(stalled_for_good, client, owner):
    from ingest.models import Upload

    upload, _ = stalled_for_good
    client.force_login(owner)
    response = client.post(reverse("dashboard:upload_retry", args=[upload.project.slug, upload.pk]))
    assert response.status_code == 302
    again = Upload.objects.get(pk=upload.pk)
    assert (again.status, again.reaped, again.error_message) == ("queued", 0, "")
