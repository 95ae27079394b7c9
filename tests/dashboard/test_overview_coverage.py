"""The overview's coverage card: a share of a few later labels is not shown as a measurement."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from attribution.models import Calibration, CoverageCheck
from dashboard.selectors import MIN_COVERAGE_CHECKS, Coverage
from ingest.models import Label, Trajectory
from tests.attribution.conftest import make_rollout, make_upload

pytestmark = pytest.mark.django_db


def _calibrated(project) -> Calibration:
    # No held-out diagnostics: the card has only the later labels to go on.
    return Calibration.objects.create(
        project=project, scorer_version="test", alpha=0.1, pooled_tau=0.5, m=20, fingerprint="x"
    )


def _checks(project, calibration, *, covered: int, missed: int = 0) -> None:
    for i in range(covered + missed):
        rollout = make_rollout(project, label=False)
        label = Label.objects.create(trajectory=rollout, step_index=1, source="human")
        CoverageCheck.objects.create(
            label=label,
            trajectory=rollout,
            project=project,
            alpha=calibration.alpha,
            covered=i < covered,
            calibration=calibration,
        )


def _card(client, user, project) -> str:
    client.force_login(user)
    html = client.get(reverse("dashboard:project_detail", args=[project.slug])).content.decode()
    start = html.index('id="coverage-card"')
    return re.sub(r"\s+", " ", html[start : html.index("</div>\n</div>", start)])


def test_it_needs_as_many_later_labels_as_a_bucket_needs_for_its_own_tau():
    assert MIN_COVERAGE_CHECKS == 30
    assert not Coverage(promised=0.9, measured=1.0, labelled=1).is_measured
    assert not Coverage(promised=0.9, measured=0.9, labelled=29).is_measured
    assert Coverage(promised=0.9, measured=0.9, labelled=30).is_measured
    assert not Coverage(promised=0.9, measured=None, labelled=0).is_measured


def test_it_does_not_show_one_later_label_as_a_measured_coverage(client, member, project):
    _checks(project, _calibrated(project), covered=1)
    card = _card(client, member, project)
    assert "100%" not in card
    assert '— <span class="vs">/ 90%</span>' in card
    assert "1 later label checked, too few to measure coverage yet (it takes 30)" in card


def test_it_shows_the_measured_coverage_once_enough_later_labels_are_checked(
    client, member, project
):
    _checks(project, _calibrated(project), covered=27, missed=3)
    card = _card(client, member, project)
    assert '90% <span class="vs">/ 90%</span>' in card
    assert "measured / promised coverage of the prediction sets · 30 later labels checked" in card
    assert "too few" not in card


def _systems(project, sizes: dict[str, int]) -> None:
    """Labelled failed rollouts of each agent system, then a full refresh."""
    from attribution.services import project_attribution_refresh

    upload = make_upload(project)
    for system, count in sizes.items():
        for i in range(count):
            rollout = make_rollout(project, upload=upload, length=5 + i % 8, bad_step=1 + i % 3)
            Trajectory.objects.filter(pk=rollout.pk).update(agent_system=system)
    project_attribution_refresh(project_id=project.pk)


def test_the_held_out_estimate_says_whose_labels_it_is_measured_on(client, member, project):
    # "(20 in all)" read as the project's labels while the other system's were too few.
    _systems(project, {"Planner team": 20, "Solo agent": 3})
    systems = Calibration.objects.get(project=project).diagnostics["systems"]
    labels = systems["Planner team"]["labels"]
    card = _card(client, member, project)
    assert 'id="coverage-held-out"' in card
    assert "in all" not in card
    assert (
        f"(Planner team&#x27;s {labels} labels, in random halves; "
        "Solo agent has too few to measure)"
    ) in card


def test_the_held_out_estimate_of_several_systems_names_each():
    from attribution.selectors import held_out_basis

    assert held_out_basis([("a", 30), ("b", 10)], ["c", "d", "e"]) == (
        "40 labels: a's 30 and b's 10, in random halves; c, d and e have too few to measure"
    )
    assert held_out_basis([("a", 1)], []) == "a's 1 label, in random halves"
    assert held_out_basis([], ["a"]) == ""
