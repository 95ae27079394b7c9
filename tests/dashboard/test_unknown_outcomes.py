"""Rollouts without an outcome (a SWE-agent trajectory, a live trace that never said): a
failure rate counts only the rollouts whose outcome is known, and a writer sets an outcome
on the rollout page, which queues the refresh that attributes a rollout turning failed."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from dashboard.charts import failure_heatmap, failure_rate_over_uploads
from ingest.models import Trajectory
from pipeline.models import OverviewContribution, ProjectOverview, ProjectRefresh
from pipeline.overview_counts import overview_counts_rebuild, overview_counts_update
from tests.conftest import ingest_bytes

pytestmark = pytest.mark.django_db


def _rollouts(*outcomes: str, environment: str = "shop") -> bytes:
    steps = [
        {"role": "user", "content": "Buy a red mug"},
        {"role": "assistant", "content": "Bought it."},
    ]
    lines = [
        {"id": f"{environment}-{n}", "outcome": outcome, "environment": environment, "steps": steps}
        for n, outcome in enumerate(outcomes)
    ]
    return "\n".join(json.dumps(line) for line in lines).encode()


def test_a_failure_rate_counts_only_the_rollouts_with_an_outcome(client, member, project):
    ingest_bytes(project, _rollouts("failure", "success", "unknown", "unknown"), "mixed.jsonl")
    overview_counts_rebuild(project_id=project.pk)
    client.force_login(member)
    response = client.get(reverse("dashboard:project_detail", args=[project.slug]))
    html = response.content.decode()
    # 1 failed of the 2 judged, not 1 of 4.
    assert response.context["judged"] == 2 and response.context["unjudged"] == 2
    assert '<div class="value" id="failure-rate">50%</div>' in html
    assert "2 without an outcome" in html
    data = ProjectOverview.objects.get(project=project).data
    assert data["failures"] == [
        {"environment": "shop", "policy_model": "(none)", "total": 4, "failed": 1, "succeeded": 1}
    ]
    assert [(r["total"], r["failed"], r["succeeded"]) for r in data["uploads"]] == [(4, 1, 1)]


def test_a_project_with_no_outcome_shows_no_rate(client, member, project):
    ingest_bytes(project, _rollouts("unknown", "unknown"), "swe.jsonl")
    overview_counts_rebuild(project_id=project.pk)
    client.force_login(member)
    html = client.get(reverse("dashboard:project_detail", args=[project.slug])).content.decode()
    assert '<div class="value" id="failure-rate">—</div>' in html


def test_charts_leave_out_what_has_no_outcome():
    rows = [
        {"environment": "a", "policy_model": "m", "total": 4, "failed": 1, "succeeded": 1},
        {"environment": "b", "policy_model": "m", "total": 3, "failed": 0, "succeeded": 0},
    ]
    heatmap = failure_heatmap(rows)
    trace = heatmap.figure["data"][0]
    assert trace["z"] == [[50.0], [None]]
    assert trace["text"][1] == ["3<br>no outcome"]
    assert heatmap.rows[0][-2:] == [2, "50.0%"] and heatmap.rows[1][-2:] == [3, "—"]
    uploads = [{"id": n, "original_name": f"f{n}", **row} for n, row in enumerate(rows)]
    chart = failure_rate_over_uploads(uploads)
    assert chart.figure["data"][0]["y"] == [50.0]
    assert chart.figure["data"][0]["x"] == ["#0"]
    assert "has no point" in chart.note
    # Rows stored before successes were counted read every rollout as judged.
    old = [{"environment": "a", "policy_model": "m", "total": 4, "failed": 1}]
    assert failure_heatmap(old).figure["data"][0]["z"] == [[25.0]]


def test_counters_of_the_old_shape_are_rebuilt_not_moved(project):
    ingest_bytes(project, _rollouts("failure", "unknown"), "a.jsonl")
    overview = overview_counts_rebuild(project_id=project.pk)
    data = overview.data
    # What a counter written before this change held: pairs and no version.
    data["counts"].pop("version")
    data["counts"]["failures"] = {key: pair[:2] for key, pair in data["counts"]["failures"].items()}
    ProjectOverview.objects.filter(pk=overview.pk).update(data=data)
    ids = list(Trajectory.objects.filter(project=project).values_list("pk", flat=True))
    updated = overview_counts_update(project_id=project.pk, rollout_ids=ids)
    assert updated.data["failures"][0]["succeeded"] == 0
    assert list(updated.data["counts"]["failures"].values()) == [[2, 1, 0]]
    assert OverviewContribution.objects.filter(project=project).count() == 2


def _rollout(project):
    ingest_bytes(project, _rollouts("unknown"), "one.jsonl")
    return Trajectory.objects.get(project=project)


def test_a_writer_sets_the_outcome_and_the_refresh_is_queued(
    client, member, project, django_capture_on_commit_callbacks
):
    rollout = _rollout(project)
    client.force_login(member)
    page = client.get(reverse("dashboard:rollout_detail", args=[project.slug, rollout.pk]))
    assert 'id="outcome-form"' in page.content.decode()
    url = reverse("dashboard:rollout_outcome", args=[project.slug, rollout.pk])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"outcome": "failure"}, follow=True)
    rollout.refresh_from_db()
    assert rollout.outcome == "failure"
    assert "Outcome set to failure" in response.content.decode()
    assert ProjectRefresh.objects.get(project=project).rollout_ids == [rollout.pk]
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        again = client.post(url, {"outcome": "failure"}, follow=True)
    assert "nothing changed" in again.content.decode() and callbacks == []


def test_a_bad_outcome_is_refused_and_changes_nothing(client, member, project):
    rollout = _rollout(project)
    client.force_login(member)
    url = reverse("dashboard:rollout_outcome", args=[project.slug, rollout.pk])
    response = client.post(url, {"outcome": "maybe"}, follow=True)
    assert "The outcome was not set: outcome: one of success, failure, unknown." in (
        response.content.decode()
    )
    rollout.refresh_from_db()
    assert rollout.outcome == "unknown" and not ProjectRefresh.objects.exists()


def test_a_viewer_can_not_set_an_outcome(client, viewer, outsider, project):
    rollout = _rollout(project)
    url = reverse("dashboard:rollout_outcome", args=[project.slug, rollout.pk])
    client.force_login(viewer)
    page = client.get(reverse("dashboard:rollout_detail", args=[project.slug, rollout.pk]))
    assert 'id="outcome-form"' not in page.content.decode()
    assert client.post(url, {"outcome": "failure"}).status_code == 403
    client.force_login(outsider)
    assert client.post(url, {"outcome": "failure"}).status_code == 404
    rollout.refresh_from_db()
    assert rollout.outcome == "unknown"
