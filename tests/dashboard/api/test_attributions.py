"""A failed rollout's attribution (set, rollback point, probabilities) and the project's
calibration, as the refresh stored them."""

from __future__ import annotations

import math

import pytest

from attribution.core.system_calibration import min_labels_for
from attribution.labels import human_label_add
from attribution.models import Calibration, CoverageCheck, TrajectoryAttribution
from dashboard.api.attributions import MSG_NO_ATTRIBUTION
from ingest.models import Label, Trajectory
from pipeline.refresh import refresh_project_run
from tests.dashboard.api.conftest import auth

pytestmark = pytest.mark.django_db
URL = "/api/v1/projects/acme"


def test_it_shows_a_failed_rollouts_attribution(client, api_project, token):
    refresh_project_run(api_project.pk)
    row = TrajectoryAttribution.objects.get(trajectory__external_id="f3")
    body = client.get(f"{URL}/rollouts/f3/attribution", **auth(token)).json()
    # Stored rounded to six places.
    assert len(body["probabilities"]) == 7 and math.isclose(
        sum(body["probabilities"]), 1.0, abs_tol=1e-4
    )
    assert (body["point_step"], body["rollback_step"], body["lo"]) == (
        row.point_step,
        row.rollback_step,
        row.lo,
    )
    assert body["calibrated"] is False and body["sentence"].startswith("Not calibrated yet")


def test_it_answers_404_for_a_rollout_without_attribution(client, api_project, token):
    response = client.get(f"{URL}/rollouts/s1/attribution", **auth(token))
    assert response.status_code == 404 and response.json() == {"error": MSG_NO_ATTRIBUTION}


def test_it_says_when_the_project_is_not_calibrated(client, api_project, token):
    body = client.get(f"{URL}/calibration", **auth(token)).json()
    assert body["calibrated"] is False and body["pooled_tau"] is None
    assert body["alpha"] == api_project.miscoverage and body["failed"] == 4


def test_an_uncalibrated_project_lists_each_system_and_the_labels_it_needs(
    client, api_project, token
):
    Label.objects.filter(trajectory__project=api_project).delete()  # no label at all
    refresh_project_run(api_project.pk)
    body = client.get(f"{URL}/calibration", **auth(token)).json()
    assert body["calibrated"] is False
    [system] = body["systems"]
    assert (system["calibration"], system["labels"], system["pooled_tau"]) == ("none", 0, None)
    assert system["labels_needed"] == min_labels_for(api_project.miscoverage)


def test_the_labelling_queue_lists_the_rollouts_to_label_and_each_systems_progress(
    client, api_project, token
):
    Label.objects.filter(trajectory__project=api_project).delete()
    refresh_project_run(api_project.pk)
    body = client.get(f"{URL}/labelling-queue?limit=2", **auth(token)).json()
    queued = TrajectoryAttribution.objects.filter(project=api_project, queue_rank__isnull=False)
    assert body["queued"] == queued.count() == 4 and len(body["entries"]) == 2
    first = queued.order_by("queue_rank").select_related("trajectory").first()
    assert body["entries"][0]["rank"] == 1
    assert body["entries"][0]["rollout"] == first.trajectory.external_id
    assert body["entries"][0]["page_url"].endswith(f"/rollouts/{first.trajectory.pk}/")
    [progress] = body["progress"]
    assert progress["needed"] == min_labels_for(api_project.miscoverage)
    assert progress["calibrated"] is False and body["rule"].startswith("Agent systems short")
    # Four failed rollouts and nine labels needed: labelling all of them brings no claim.
    assert progress["short_by"] == progress["needed"] - 4
    assert body["entries"][0]["reason"].startswith("its system has fewer failed rollouts")
    refused = client.get(f"{URL}/labelling-queue?limit=0", **auth(token))
    assert refused.status_code == 400 and refused.json()["field"] == "limit"


def test_it_shows_the_current_calibration(client, api_project, token):
    # Every failed rollout labelled, and a promise (50%) that few labels can keep.
    api_project.miscoverage = 0.5
    api_project.save(update_fields=["miscoverage"])
    for rollout in Trajectory.objects.filter(project=api_project, outcome="failure"):
        if not rollout.labels.exists():
            human_label_add(trajectory=rollout, step_index=1, reason="api test")
    refresh_project_run(api_project.pk)
    calibration = Calibration.objects.get(project=api_project)
    body = client.get(f"{URL}/calibration", **auth(token)).json()
    assert body["calibrated"] is True and body["id"] == calibration.pk
    assert (body["m"], body["alpha"], body["attributed"]) == (calibration.m, 0.5, 4)
    # The thresholds the rollouts' sets use come per agent system.
    [system] = body["systems"]
    stored = calibration.by_system["by_system"][system["system"]]
    assert system["calibration"] == "own" and system["borrows_from"] == ""
    assert (system["labels"], system["labels_needed"]) == (calibration.m, 0)
    assert system["pooled_tau"] == pytest.approx(stored["pooled_tau"])
    assert system["m_by_group"] == stored["m_by_group"]


def test_a_system_without_enough_labels_shows_no_thresholds_and_what_it_needs(
    client, api_project, token
):
    api_project.miscoverage = 0.5
    api_project.save(update_fields=["miscoverage"])
    failed = list(Trajectory.objects.filter(project=api_project, outcome="failure"))
    for rollout in failed:
        if not rollout.labels.exists():
            human_label_add(trajectory=rollout, step_index=1, reason="api test")
    # One more system whose only rollout has no label.
    extra = Trajectory.objects.filter(pk=failed[0].pk).first()
    extra.labels.all().delete()
    Trajectory.objects.filter(pk=extra.pk).update(agent_system="Solo agent")
    refresh_project_run(api_project.pk)
    body = client.get(f"{URL}/calibration", **auth(token)).json()
    rows = {row["system"]: row for row in body["systems"]}
    solo = rows["Solo agent"]
    assert (solo["calibration"], solo["labels"], solo["pooled_tau"]) == ("none", 0, None)
    assert solo["labels_needed"] == 1 and solo["tau_by_group"] == {}


def test_it_reports_the_coverage_monitor_per_agent_system(client, api_project, token):
    api_project.miscoverage = 0.5
    api_project.save(update_fields=["miscoverage"])
    for rollout in Trajectory.objects.filter(project=api_project, outcome="failure"):
        if not rollout.labels.exists():
            human_label_add(trajectory=rollout, step_index=1, reason="api test")
    refresh_project_run(api_project.pk)
    calibration = Calibration.objects.get(project=api_project)
    rollout = Trajectory.objects.filter(project=api_project, outcome="failure").first()
    Trajectory.objects.filter(pk=rollout.pk).update(agent_system="Solo agent")
    CoverageCheck.objects.create(
        label=rollout.labels.first(),
        trajectory=rollout,
        project=api_project,
        alpha=0.5,
        covered=True,
        calibration=calibration,
    )
    monitor = client.get(f"{URL}/calibration", **auth(token)).json()["monitor"]
    assert monitor["checked"] == 1
    assert [(row["system"], row["checked"], row["covered"]) for row in monitor["by_system"]] == [
        ("Solo agent", 1, 1)
    ]
