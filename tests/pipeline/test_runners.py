"""pipeline.runners and the requeue of jobs whose worker was lost (pipeline.jobs), with real
processes standing in for workers: a job whose recorded processes are gone is queued again
at the next sweep, its page saying so; one whose process lives is left alone however long
its stage is silent. The whole path with real Celery workers killed is in
test_faults_reaper.py and test_faults_worker_lost_jobs.py."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from pipeline.runners import (
    Runner,
    process_start,
    runner_gone,
    runner_of_this_process,
    runner_save,
    this_place,
)


@pytest.fixture
def worker_process() -> Iterator[subprocess.Popen[bytes]]:
    """A real process in the place of a worker running a task."""
    process = subprocess.Popen(["sleep", "120"])
    yield process
    _kill(process)


def _runner(process: subprocess.Popen[bytes]) -> Runner:
    start = process_start(process.pid) or ""
    return Runner(this_place(), process.pid, start, process.pid, start)


def _kill(process: subprocess.Popen[bytes]) -> None:
    process.kill()
    process.wait()


def test_it_tells_a_live_worker_from_a_killed_one(worker_process):
    runner = _runner(worker_process)
    assert not runner_gone(runner)
    _kill(worker_process)
    assert runner_gone(runner)


def test_it_leaves_a_killed_pool_process_to_its_living_main_process(worker_process):
    """Celery's main process hands the message back itself (task_reject_on_worker_lost)."""
    pool = _runner(worker_process)
    main = runner_of_this_process()
    _kill(worker_process)
    assert not runner_gone(Runner(pool.place, pool.pid, pool.start, main.pid, main.start))


def test_it_takes_a_number_a_later_process_was_given_for_gone():
    me = runner_of_this_process()
    assert runner_gone(Runner(me.place, me.pid, "1", me.pid, "1"))


def test_it_cannot_tell_of_a_process_on_another_machine(worker_process):
    runner = _runner(worker_process)
    _kill(worker_process)
    assert not runner_gone(runner, place="another-host||pid:[4026531836]")


@pytest.fixture
def refresh_in_clustering(project):
    """A refresh its worker runs in the clustering stage, silent on its row for ten
    minutes as that stage is, and the clustering run it started (which has no task)."""
    from analysis.models import ClusteringRun
    from pipeline.models import ProjectRefresh

    now = timezone.now()
    refresh = ProjectRefresh.objects.create(
        project=project,
        status="running",
        stage="clustering",
        task_id="task-refresh",
        attempt=1,
        started_at=now - timedelta(minutes=11),
        heartbeat_at=now - timedelta(minutes=10),
    )
    ClusteringRun.objects.create(
        project=project,
        origin=refresh.job_name,
        status="running",
        stage="embedding",
        progress=0.4,
        attempt=1,
        started_at=now - timedelta(minutes=10),
        heartbeat_at=now,
    )
    return refresh


@pytest.mark.django_db
def test_it_leaves_a_job_whose_worker_is_alive_however_silent(
    refresh_in_clustering, worker_process
):
    from pipeline.jobs import jobs_sweep
    from pipeline.models import ProjectRefresh

    runner_save("task-refresh", _runner(worker_process))
    report = jobs_sweep()
    assert report.requeued == {"upload": 0, "refresh": 0, "clustering": 0, "export": 0}
    assert ProjectRefresh.objects.get().status == "running"


@pytest.mark.django_db
def test_it_requeues_a_refresh_and_its_clustering_run_when_their_worker_is_gone(
    refresh_in_clustering, worker_process, unreachable_broker
):
    from analysis.models import ClusteringRun
    from pipeline.jobs import STAGE_WORKER_LOST, jobs_sweep
    from pipeline.models import ProjectRefresh

    runner_save("task-refresh", _runner(worker_process))
    _kill(worker_process)
    report = jobs_sweep()
    assert report.lost == {"upload": 0, "refresh": 1, "clustering": 1, "export": 0}
    refresh, run = ProjectRefresh.objects.get(), ClusteringRun.objects.get()
    assert (refresh.status, refresh.stage, refresh.reaped) == ("queued", STAGE_WORKER_LOST, 1)
    assert (run.status, run.stage, run.progress) == ("queued", STAGE_WORKER_LOST, 0.0)


@pytest.mark.django_db
def test_the_overview_says_the_analysis_lost_its_worker(
    refresh_in_clustering, worker_process, unreachable_broker, client, owner, settings, tmp_path
):
    from pipeline.jobs import STAGE_WORKER_LOST, jobs_sweep
    from tests.conftest import ingest_file
    from tests.pipeline.faults_traces import native_jsonl

    # Rollouts to show: the overview of an empty project says how to upload instead.
    ingest_file(
        refresh_in_clustering.project, native_jsonl(tmp_path / "a.jsonl", rollouts=2, steps=4)
    )
    runner_save("task-refresh", _runner(worker_process))
    _kill(worker_process)
    jobs_sweep()
    # force_login's bare request has no address, which django-axes cannot store on
    # PostgreSQL; the lockout is not what this test is about.
    settings.AXES_ENABLED = False
    client.force_login(owner)
    slug = refresh_in_clustering.project.slug
    page = client.get(reverse("dashboard:project_detail", args=[slug])).content.decode()
    assert f"Analysis queued ({STAGE_WORKER_LOST})" in page
    assert "Analysis running (clustering)" not in page


@pytest.fixture
def running_upload(project, tmp_path):
    """An upload a worker runs at 23%, its progress in the cache."""
    from ingest.jobs import job_claim
    from ingest.models import Upload
    from ingest.progress import progress_publish
    from ingest.services import upload_create
    from tests.pipeline.faults_traces import native_jsonl

    path = native_jsonl(tmp_path / "lost.jsonl", rollouts=2, steps=4)
    with path.open("rb") as stream:
        upload = upload_create(project=project, stream=stream, original_name=path.name).upload
    job_claim(Upload, upload.pk)
    Upload.objects.filter(pk=upload.pk).update(task_id="task-upload")
    progress_publish(upload_id=upload.pk, done=23, total=100)
    return upload


@pytest.mark.django_db
def test_it_requeues_an_upload_without_the_lost_run_s_progress(
    running_upload, worker_process, unreachable_broker
):
    from dashboard.serializers import upload_json
    from ingest.models import Upload
    from pipeline.jobs import jobs_lost_requeue

    runner_save("task-upload", _runner(worker_process))
    running = Upload.objects.select_related("project").get(pk=running_upload.pk)
    assert (upload_json(running)["status"], upload_json(running)["progress"]["percent"]) == (
        "running",
        23,
    )
    _kill(worker_process)
    assert jobs_lost_requeue().lost["upload"] == 1
    shown = upload_json(Upload.objects.select_related("project").get(pk=running_upload.pk))
    assert (shown["status"], shown["progress"]["percent"]) == ("queued", 0)


@pytest.mark.django_db
def test_it_fails_a_job_whose_worker_is_lost_more_often_than_the_bound(
    running_upload, worker_process, unreachable_broker, settings
):
    from ingest.models import Upload
    from pipeline.jobs import MSG_WORKER_LOST, jobs_lost_requeue

    settings.FAULTLINE_JOB_MAX_REAPS = 0
    runner_save("task-upload", _runner(worker_process))
    _kill(worker_process)
    assert jobs_lost_requeue().failed["upload"] == 1
    upload = Upload.objects.get(pk=running_upload.pk)
    assert (upload.status, upload.error_message) == ("failed", MSG_WORKER_LOST.format(times=1))
