"""A pool process killed with SIGKILL in the middle of a refresh, a clustering run and an
export: the message comes back, the job claims itself under a new attempt and ends done,
with one copy of everything it writes. A whole worker killed while a refresh clusters:
the next worker queues the refresh and its clustering run again as it starts. One stack
(database, Redis, worker) serves the module: project ``faults`` for the refresh and
clustering, ``exports`` (all failures, so the export takes long enough to be killed) for
the export, ``lost`` (its first refresh clusters in full) for the whole worker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.pipeline.faults_support import Stack, Worker, faultline_stack
from tests.pipeline.faults_traces import native_jsonl
from tests.pipeline.test_faults_worker_lost import wait_finished, wait_running
from tests.services import wait_for

pytestmark = pytest.mark.services

ANALYSED_ROLLOUTS, EXPORTED_ROLLOUTS = 1000, 10000


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    root = tmp_path_factory.mktemp("faults-jobs")
    analysed = native_jsonl(root / "analysed.jsonl", rollouts=ANALYSED_ROLLOUTS, steps=10)
    exported = native_jsonl(
        root / "exported.jsonl", rollouts=EXPORTED_ROLLOUTS, steps=6, tag="e", fail_every=1
    )
    with faultline_stack(root / "stack") as stack:
        for path, slug in ((analysed, "faults"), (exported, "exports")):
            done = stack.manage("ingest", str(path), "--project", slug, "--sync", "--no-refresh")
            assert done.returncode == 0, done.stdout + done.stderr
        yield stack


def _kill_and_finish(stack: Stack, table: str, pk: int) -> tuple[str, int]:
    """Each test queues its job with no worker running, then starts one: a worker already
    running could finish a short job before the poll saw it run. The worker is stopped at
    the end, so the next test's job waits for its own."""
    worker: Worker = stack.worker()
    try:
        wait_running(stack, table, pk)
        worker.kill_pool_child()
        status, attempt = wait_finished(stack, table, pk, timeout=180)
        assert status == "done", worker.output()
    finally:
        worker.stop()
    return status, attempt


def _queue_refresh(stack: Stack, slug: str) -> int:
    return stack.shell_json(
        "from projects.models import Project\n"
        "from pipeline.refresh import refresh_project_queue\n"
        "from pipeline.models import ProjectRefresh\n"
        f"project = Project.objects.get(slug={slug!r})\n"
        "assert refresh_project_queue(project_id=project.pk)\n"
        "print('JSON=%d' % ProjectRefresh.objects.filter(project=project).latest('id').pk)"
    )


def test_it_redelivers_a_refresh_whose_pool_process_was_killed(stack):
    refresh_id = _queue_refresh(stack, "faults")
    _, attempt = _kill_and_finish(stack, "pipeline_projectrefresh", refresh_id)
    assert attempt >= 2
    assert stack.one(
        "SELECT COUNT(*), COUNT(DISTINCT t.external_id) FROM ingest_trajectory t "
        "JOIN dashboard_project p ON t.project_id = p.id WHERE p.slug = 'faults'"
    ) == (ANALYSED_ROLLOUTS, ANALYSED_ROLLOUTS)


def test_it_redelivers_a_clustering_run_whose_pool_process_was_killed(stack):
    run_id = stack.shell_json(
        "from django.db import transaction\n"
        "from projects.models import Project\n"
        "from analysis.clustering import misbehaviours_refresh_request\n"
        "with transaction.atomic():\n"
        "    run = misbehaviours_refresh_request(\n"
        "        project=Project.objects.get(slug='faults'), force_full=True)\n"
        "print('JSON=%d' % run.pk)"
    )
    _, attempt = _kill_and_finish(stack, "analysis_clusteringrun", run_id)
    assert attempt >= 2
    # Every wrong step is a member of the run's misbehaviours once, not once per attempt.
    total, distinct = stack.one(
        "SELECT COUNT(*), COUNT(DISTINCT step_id) FROM analysis_wrongstepmembership "
        "WHERE run_id = ?",
        (run_id,),
    )
    assert total == distinct > 0


def test_it_redelivers_an_export_whose_pool_process_was_killed(stack):
    export_id = stack.shell_json(
        "from django.db import transaction\n"
        "from projects.models import Project\n"
        "from exports.core.filters import parse_filters\n"
        "from exports.services import export_create\n"
        "with transaction.atomic():\n"
        "    job = export_create(project=Project.objects.get(slug='exports'),\n"
        "        kinds=('diagnosis', 'start_states'), filters=parse_filters({}))\n"
        "print('JSON=%d' % job.pk)"
    )
    _, attempt = _kill_and_finish(stack, "dashboard_exportjob", export_id)
    assert attempt >= 2
    files_dir = stack.one("SELECT files_dir FROM dashboard_exportjob WHERE id = ?", (export_id,))
    folder = Path(stack.env["FAULTLINE_VAR_DIR"]) / "media" / files_dir
    rows = [
        json.loads(line)
        for line in (folder / "diagnosis.jsonl").read_text().splitlines()
        if line.strip()
    ]
    ids = [row["metadata"]["rollout_id"] for row in rows]
    assert len(ids) == len(set(ids)) == EXPORTED_ROLLOUTS
    # Only the finishing attempt's folder is left.
    assert [entry.name for entry in folder.parent.iterdir()] == [folder.name]


def test_it_requeues_a_refresh_whose_whole_worker_was_killed_in_clustering(stack, tmp_path):
    """Its main process killed too, the worker hands nothing back: the message stays
    unacknowledged in Redis for an hour, and the refresh's row is silent from the start of
    its clustering stage to its end, so the heartbeat timeout (15 minutes) must not be the
    only way back. The next worker queues the refresh and its clustering run (which has no
    task of its own) again as it starts, and both end done."""
    trace = native_jsonl(tmp_path / "lost.jsonl", rollouts=ANALYSED_ROLLOUTS, steps=10, tag="l")
    stack.shell(
        "from django.contrib.auth import get_user_model\n"
        "from projects.services import project_create\n"
        "owner = get_user_model().objects.get(username='alice')\n"
        "project_create(name='Lost', slug='lost', owner=owner)"
    )
    done = stack.manage("ingest", str(trace), "--project", "lost", "--sync", "--no-refresh")
    assert done.returncode == 0, done.stdout + done.stderr
    refresh_id = _queue_refresh(stack, "lost")
    in_clustering = (
        "SELECT r.stage, c.id, c.status FROM pipeline_projectrefresh r "
        "JOIN analysis_clusteringrun c ON c.origin = 'refresh ' || r.id WHERE r.id = ?"
    )
    first = stack.worker()
    try:
        row = wait_for(
            lambda: (row := stack.one(in_clustering, (refresh_id,)))
            and row[0] == "clustering"
            and row[2] == "running"
            and row,
            timeout=120,
            what="the refresh to cluster",
            interval=0.05,
        )
    finally:
        first.kill_group()
    run_id = row[1]

    second = stack.worker()
    try:
        refreshed = wait_finished(stack, "pipeline_projectrefresh", refresh_id, timeout=120)
        assert refreshed[0] == "done" and refreshed[1] >= 2, second.output()
        assert wait_finished(stack, "analysis_clusteringrun", run_id)[0] == "done"
        log = second.output()
        assert f"refresh {refresh_id}: its worker was lost; queued again" in log
        assert f"clustering {run_id}: its worker was lost; queued again" in log
    finally:
        second.stop()
