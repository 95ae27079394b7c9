"""A refresh redelivered after its worker was lost takes over the clustering run its lost
attempt had started, instead of leaving that run "running" (which held back every request
for the project's misbehaviours until the reaper, 15 minutes later)."""

from __future__ import annotations

import json

import pytest

from analysis.clustering import misbehaviours_refresh_request, project_misbehaviours_refresh
from analysis.models import ClusteringRun, RunStatus
from ingest.jobs import job_claim
from pipeline.models import ProjectRefresh, RefreshStatus
from pipeline.refresh import refresh_project_run
from tests.conftest import TAU_AIRLINE, ingest_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def lost_attempt(project):
    """A project whose refresh and clustering run were claimed by an attempt that died."""
    if not TAU_AIRLINE.exists():
        pytest.skip("tau-bench sample data not available")
    records = json.loads(TAU_AIRLINE.read_text())[:40]
    upload = ingest_bytes(project, json.dumps(records).encode(), TAU_AIRLINE.name)
    assert upload.status == "done", upload.error_message
    refresh = ProjectRefresh.objects.create(project=project)
    assert job_claim(ProjectRefresh, refresh.pk) is not None
    run = ClusteringRun.objects.create(project=project, origin=refresh.job_name)
    assert job_claim(ClusteringRun, run.pk, stage="reducing") is not None
    return refresh, run


def test_it_finishes_the_clustering_run_a_lost_refresh_attempt_left_running(project, lost_attempt):
    refresh, run = lost_attempt
    finished = refresh_project_run(project.pk)
    assert (finished.pk, finished.status, finished.attempt) == (refresh.pk, RefreshStatus.DONE, 2)
    run.refresh_from_db()
    assert (run.status, run.attempt) == (RunStatus.DONE, 2)
    assert list(ClusteringRun.objects.filter(project=project)) == [run]
    # Nothing holds back the user's next request any more.
    assert misbehaviours_refresh_request(project=project).pk != run.pk


def test_it_starts_a_new_run_when_the_refresh_s_earlier_run_had_finished(project, lost_attempt):
    refresh, run = lost_attempt
    refresh_project_run(project.pk)
    run.refresh_from_db()
    finished_at = run.finished_at
    project_misbehaviours_refresh(project_id=project.pk, origin=refresh.job_name)
    run.refresh_from_db()
    assert (run.attempt, run.finished_at) == (2, finished_at)
    runs = list(ClusteringRun.objects.filter(project=project).order_by("pk"))
    assert len(runs) == 2 and [r.status for r in runs] == [RunStatus.DONE, RunStatus.DONE]
    assert runs[1].origin == refresh.job_name
