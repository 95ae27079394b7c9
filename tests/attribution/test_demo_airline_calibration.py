"""The demo's airline rollouts: calibrated sets backed by their own gold-action labels,
with no hand label, beside a system that has no label and so makes no claim."""

from __future__ import annotations

import json

import pytest

from attribution.models import Calibration, TrajectoryAttribution
from ingest.core.records import LabelSource
from ingest.models import Label, Trajectory
from pipeline.refresh import refresh_project_run
from tests.conftest import TAU_AIRLINE, ingest_bytes, ingest_file, shared_file

pytestmark = pytest.mark.django_db

AIRLINE_SYSTEM = "tau-bench tool-calling agent"


def _native_rollouts(n: int) -> bytes:
    """Failed rollouts of another agent system, without any label."""
    lines = []
    for i in range(n):
        steps = [{"role": "user", "content": "Plan a trip"}] + [
            {"role": "assistant", "content": f"step {j}", "agent": "planner"} for j in range(5)
        ]
        lines.append(
            json.dumps(
                {
                    "id": f"other-{i}",
                    "agent_system": "other system",
                    "outcome": "failure",
                    "steps": steps,
                }
            )
        )
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture
def demo_like(project):
    shared_file(str(TAU_AIRLINE.relative_to(TAU_AIRLINE.parents[2])))
    project.gold_actions_calibrate = True
    project.save(update_fields=["gold_actions_calibrate"])
    ingest_file(project, TAU_AIRLINE)
    ingest_bytes(project, _native_rollouts(4), "other.jsonl")
    refresh_project_run(project.pk)
    return project


def test_it_calibrates_the_airline_rollouts_on_their_own_gold_action_labels(demo_like):
    assert not Label.objects.filter(source=LabelSource.HUMAN).exists()
    assert Label.objects.filter(source=LabelSource.GOLD_ACTIONS).count() >= 20
    airline = TrajectoryAttribution.objects.filter(trajectory__agent_system=AIRLINE_SYSTEM)
    assert airline.exists()
    assert all(row.claim for row in airline)
    assert {row.calibration_system for row in airline} == {AIRLINE_SYSTEM}
    assert {row.calibration_source for row in airline} == {"own"}
    assert Calibration.objects.get().label_sources == [LabelSource.GOLD_ACTIONS]


def test_it_makes_no_claim_for_the_system_without_labels(demo_like):
    other = TrajectoryAttribution.objects.filter(trajectory__agent_system="other system")
    assert other.count() == 4
    assert not any(row.claim for row in other)
    assert all(row.lo is None and row.rollback_step is None and row.tau is None for row in other)
    assert {row.labels_needed for row in other} == {9}


def test_it_does_not_calibrate_on_gold_action_labels_without_the_opt_in(project):
    shared_file(str(TAU_AIRLINE.relative_to(TAU_AIRLINE.parents[2])))
    ingest_file(project, TAU_AIRLINE)
    refresh_project_run(project.pk)
    assert Label.objects.filter(source=LabelSource.GOLD_ACTIONS).exists()
    assert not Calibration.objects.exists()
    rows = TrajectoryAttribution.objects.filter(project=project)
    assert rows.count() == Trajectory.objects.filter(project=project, outcome="failure").count()
    assert not any(row.claim for row in rows)


def test_the_airline_rollout_page_says_its_set_rests_on_gold_action_labels(
    client, demo_like, member
):
    from django.urls import reverse
    from django.utils.html import escape

    from attribution.system_selectors import MSG_GOLD_RULE

    row = TrajectoryAttribution.objects.filter(
        trajectory__agent_system=AIRLINE_SYSTEM, lo__isnull=False
    ).first()
    client.force_login(member)
    body = client.get(
        reverse("dashboard:rollout_detail", args=[demo_like.slug, row.trajectory_id])
    ).content.decode()
    assert "With 90% confidence the decisive step is in" in body
    assert escape(MSG_GOLD_RULE) in body
