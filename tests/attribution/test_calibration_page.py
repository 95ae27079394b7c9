"""The calibration page: access, the uncalibrated state, figures and the coverage warning."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from attribution.models import Calibration, CoverageCheck
from attribution.selectors import MSG_COVERAGE_LOW, coverage_monitor, project_coverage
from attribution.services import project_attribution_refresh
from ingest.models import Label, Trajectory
from tests.attribution.conftest import make_rollout, make_upload

pytestmark = pytest.mark.django_db


def _url(project):
    return reverse("attribution:calibration", kwargs={"slug": project.slug})


def test_it_hides_the_page_from_a_non_member(client, project, outsider):
    client.force_login(outsider)
    assert client.get(_url(project)).status_code == 404


def test_it_sends_an_anonymous_user_to_log_in(client, project):
    assert client.get(_url(project)).status_code == 302


def test_it_says_when_nothing_is_calibrated(client, project, viewer):
    make_rollout(project, label=False)
    project_attribution_refresh(project_id=project.pk)
    client.force_login(viewer)
    response = client.get(_url(project))
    assert response.status_code == 200
    assert 'id="not-calibrated"' in response.content.decode()


def test_it_shows_coverage_against_alpha_set_sizes_and_groups(client, project, member):
    upload = make_upload(project)
    for i in range(20):
        make_rollout(project, upload=upload, length=5 + i % 8, bad_step=1 + i % 3)
    project_attribution_refresh(project_id=project.pk)
    client.force_login(member)
    response = client.get(_url(project))
    body = response.content.decode()
    assert response.status_code == 200
    for figure_id in ("coverage-alpha", "set-sizes", "coverage-groups"):
        assert f'data-figure-id="{figure_id}"' in body
        assert f'<script id="{figure_id}" type="application/json">' in body
    figure = response.context["figures"][0]["figure"]
    assert json.loads(json.dumps(figure))["data"][0]["name"] == "promised 1 - alpha"


def _checks(project, covered, missed, alpha=0.1, system=""):
    calibration = Calibration.objects.first()
    for i in range(covered + missed):
        rollout = make_rollout(project, label=False)
        if system:
            Trajectory.objects.filter(pk=rollout.pk).update(agent_system=system)
        label = Label.objects.create(trajectory=rollout, step_index=1, source="human")
        CoverageCheck.objects.create(
            label=label,
            trajectory=rollout,
            project=project,
            alpha=alpha,
            covered=i < covered,
            calibration=calibration,
        )


def test_it_warns_when_measured_coverage_is_below_the_promise_beyond_noise(client, project, member):
    _checks(project, covered=12, missed=8)
    monitor = coverage_monitor(project)
    assert monitor["measured"] == 0.6 and monitor["p_value"] < 0.05
    assert monitor["warning"] == MSG_COVERAGE_LOW.format(
        system="(unknown system)",
        measured=0.6,
        checked=20,
        promised=0.9,
        p_value=monitor["p_value"],
    )


def test_it_measures_coverage_per_agent_system(project):
    _checks(project, covered=20, missed=0, system="Planner team")
    _checks(project, covered=12, missed=8, system="Solo agent")
    monitor = coverage_monitor(project)
    rows = {row["system"]: row for row in monitor["by_system"]}
    assert (rows["Planner team"]["checked"], rows["Planner team"]["covered"]) == (20, 20)
    assert (rows["Solo agent"]["checked"], rows["Solo agent"]["measured"]) == (20, 0.6)
    assert not rows["Planner team"]["warns"] and rows["Solo agent"]["warns"]


def test_it_names_only_the_system_below_its_promise(project):
    # Pooled, 32 of 40 (0.8) would be improbable at 0.9 too; per system only Solo is.
    _checks(project, covered=20, missed=0, system="Planner team")
    _checks(project, covered=12, missed=8, system="Solo agent")
    warning = coverage_monitor(project)["warning"]
    assert warning.startswith("Solo agent: measured coverage 60% on 20 labels")
    assert "Planner team" not in warning


def test_it_does_not_let_a_good_system_hide_a_bad_one(project):
    # 90 of 100 covered pooled looks right at 0.9; the small system alone is far below.
    _checks(project, covered=88, missed=2, system="Planner team")
    _checks(project, covered=2, missed=8, system="Solo agent")
    monitor = coverage_monitor(project)
    assert monitor["p_value"] > 0.05  # pooled: within noise
    assert monitor["warning"].startswith("Solo agent:")


def test_it_does_not_warn_within_binomial_noise(project):
    _checks(project, covered=17, missed=3)
    monitor = coverage_monitor(project)
    assert monitor["warning"] == "" and monitor["p_value"] > 0.05


def test_it_shows_the_warning_on_the_page(client, project, member):
    upload = make_upload(project)
    for i in range(12):
        make_rollout(project, upload=upload, bad_step=1 + i % 3)
    project_attribution_refresh(project_id=project.pk)
    _checks(project, covered=2, missed=8)
    client.force_login(member)
    body = client.get(_url(project)).content.decode()
    assert 'id="coverage-warning"' in body
    assert "Coverage of sets shown before a human label, per agent system" in body
    assert 'data-monitor-system="(unknown system)"' in body
    assert project_coverage(project)["measured"] == 0.2


def test_the_overview_shows_the_held_out_estimate_before_any_later_label(client, project, member):
    upload = make_upload(project)
    for i in range(20):
        make_rollout(project, upload=upload, length=5 + i % 8, bad_step=1 + i % 3)
    project_attribution_refresh(project_id=project.pk)
    calibration = Calibration.objects.get(project=project)
    [system] = calibration.diagnostics["systems"].values()
    [row] = [r for r in system["curve"] if r["alpha"] == calibration.alpha]
    coverage = project_coverage(project)
    assert coverage["measured"] is None
    assert (coverage["held_out"], coverage["held_out_labels"]) == (
        row["coverage"],
        system["labels"],
    )
    client.force_login(member)
    body = client.get(reverse("dashboard:project_detail", args=[project.slug])).content.decode()
    assert 'id="coverage-held-out"' in body
    assert f"{round(100 * row['coverage'])}% <span" in body


def _two_systems(project, per_system=20):
    upload = make_upload(project)
    for system, offset in (("Planner team", 0), ("Solo agent", 1)):
        for i in range(per_system):
            rollout = make_rollout(
                project, upload=upload, length=5 + i % 8, bad_step=offset + i % 3
            )
            Trajectory.objects.filter(pk=rollout.pk).update(agent_system=system)
    project_attribution_refresh(project_id=project.pk)
    return Calibration.objects.get(project=project)


def test_thresholds_and_held_out_curves_are_per_agent_system(client, project, member):
    calibration = _two_systems(project)
    client.force_login(member)
    response = client.get(_url(project))
    body = response.content.decode()
    own = calibration.by_system["by_system"]
    groups = response.context["groups"]
    # Every row is one system's bucket with the tau that system's rollouts of that length get.
    assert {g["system"] for g in groups} == set(own) == {"Planner team", "Solo agent"}
    for g in groups:
        system = own[g["system"]]
        assert g["m"] == system["m_by_group"][g["group"]]
        assert g["tau"] == system["tau_by_group"].get(g["group"], system["pooled_tau"])
    assert [c["system"] for c in response.context["curves"]] == ["Planner team", "Solo agent"]
    assert 'data-curve-system="Solo agent"' in body and 'data-group-system="Planner team"' in body
    alpha_figure = response.context["figures"][0]["figure"]
    assert [trace["name"] for trace in alpha_figure["data"]] == [
        "promised 1 - alpha",
        "Planner team (held out)",
        "Solo agent (held out)",
    ]
    [groups_figure] = [
        f["figure"] for f in response.context["figures"] if f["id"] == "coverage-groups"
    ]
    assert {trace["name"] for trace in groups_figure["data"]} == {"Planner team", "Solo agent"}
    # The pooled tau of every label is named for what it is: a borrowing option only.
    assert "used only by a system set to borrow" in body


def test_the_overview_weighs_each_systems_own_held_out_coverage(project):
    calibration = _two_systems(project)
    systems = calibration.diagnostics["systems"]
    rows = {
        name: next(r for r in data["curve"] if r["alpha"] == calibration.alpha)
        for name, data in systems.items()
    }
    labels = {name: data["labels"] for name, data in systems.items()}
    expected = sum(rows[n]["coverage"] * labels[n] for n in rows) / sum(labels.values())
    coverage = project_coverage(project)
    assert coverage["held_out"] == pytest.approx(expected, abs=1e-6)
    assert coverage["held_out_labels"] == sum(labels.values())


def test_a_miscoverage_off_the_curves_grid_is_measured_too(client, project, member):
    # The held-out curves had a fixed grid (0.05, 0.1, 0.2, ...): a project set to 0.25
    # read "too few to measure" for systems with plenty of labels, and "—" on the overview.
    project.miscoverage = 0.25
    project.save(update_fields=["miscoverage"])
    calibration = _two_systems(project)
    assert calibration.alpha == 0.25
    client.force_login(member)
    response = client.get(_url(project))
    rows = response.context["systems"]
    assert {r["system"] for r in rows} == {"Planner team", "Solo agent"}
    for row in rows:
        assert row["coverage"] is not None and row["removal"] is not None, row
    assert "too few to measure" not in response.content.decode()
    assert project_coverage(project)["held_out"] is not None
