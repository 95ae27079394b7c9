"""Per agent system calibration in the refresh: two systems whose rollouts score
differently; the labelled one is calibrated on its own labels, the unlabelled one makes
no claim (and its page says how many labels it needs) unless the project lets it borrow."""

from __future__ import annotations

import pytest
from django.urls import reverse

from attribution.core.metrics import covers
from attribution.models import Calibration, TrajectoryAttribution
from attribution.selectors import attribution_panel
from attribution.services import project_attribution_refresh
from attribution.system_selectors import MSG_BORROWED
from tests.attribution.conftest import make_rollout, make_upload, with_system

pytestmark = pytest.mark.django_db

TEAM = "Planner team"
SOLO = "Solo agent"


@pytest.fixture
def two_systems(project):
    """20 labelled rollouts of TEAM (the error shows right after the decisive step), and 5
    unlabelled rollouts of SOLO whose error shows late in longer rollouts."""
    upload = make_upload(project)
    team = [
        with_system(
            make_rollout(project, upload=upload, length=6 + i % 3, bad_step=1 + i % 3), TEAM
        )
        for i in range(20)
    ]
    solo = [
        with_system(make_rollout(project, upload=upload, length=14, bad_step=9, label=False), SOLO)
        for _ in range(5)
    ]
    return team, solo


def test_it_calibrates_the_labelled_system_on_its_own_labels(project, two_systems):
    team, _ = two_systems
    project_attribution_refresh(project_id=project.pk)
    rows = TrajectoryAttribution.objects.filter(trajectory__in=team)
    assert all(row.claim and row.calibration_source == "own" for row in rows)
    assert {row.calibration_system for row in rows} == {TEAM}
    labels = {t.pk: t.labels.get().step_index for t in team}
    covered = sum(covers(row.interval, labels[row.trajectory_id]) for row in rows)
    assert covered >= 0.9 * len(team) - 1  # in-sample: the labels made the threshold
    calibration = Calibration.objects.get()
    assert calibration.by_system["labels_by_system"] == {TEAM: 20}


def test_it_makes_no_claim_for_the_system_without_labels(project, two_systems):
    _, solo = two_systems
    project_attribution_refresh(project_id=project.pk)
    rows = TrajectoryAttribution.objects.filter(trajectory__in=solo)
    assert rows.count() == 5
    for row in rows:
        assert not row.claim and row.calibration_id is None
        assert (row.lo, row.hi, row.rollback_step, row.tau) == (None, None, None, None)
        assert row.calibration_source == "none" and row.labels_needed == 9


def test_its_page_says_how_many_labels_the_system_needs(client, project, member, two_systems):
    _, solo = two_systems
    project_attribution_refresh(project_id=project.pk)
    client.force_login(member)
    response = client.get(reverse("dashboard:rollout_detail", args=[project.slug, solo[0].pk]))
    body = response.content.decode()
    assert "No confidence claim: agent system Solo agent needs 9 more labelled failed" in body
    assert 'id="no-claim"' in body
    assert reverse("attribution:labelling_queue", kwargs={"slug": project.slug}) in body
    assert "With 90% confidence" not in body


def test_it_borrows_only_when_the_project_opts_in(project, two_systems):
    _, solo = two_systems
    project.calibration_borrow = {SOLO: TEAM}
    project.save(update_fields=["calibration_borrow"])
    project_attribution_refresh(project_id=project.pk)
    rows = TrajectoryAttribution.objects.filter(trajectory__in=solo)
    assert all(row.claim and row.calibration_source == "borrowed" for row in rows)
    assert {row.calibration_system for row in rows} == {TEAM}
    panel = attribution_panel(solo[0])
    assert MSG_BORROWED.format(lender=TEAM, system=SOLO) in panel["claim_notes"]


def test_the_calibration_page_shows_each_system(client, project, member, two_systems):
    project_attribution_refresh(project_id=project.pk)
    client.force_login(member)
    response = client.get(reverse("attribution:calibration", kwargs={"slug": project.slug}))
    body = response.content.decode()
    assert response.status_code == 200
    assert 'id="system-calibration"' in body and f'data-system="{TEAM}"' in body
    row = response.context["systems"][0]
    assert row["system"] == TEAM and row["labels"] == 20 and row["calibrated"]
    assert row["coverage"] is not None and row["removal"] is not None
    progress = {p["system"]: p for p in response.context["progress"]}
    assert progress[SOLO]["needed"] == 9 and progress[SOLO]["claims"] == 0
    assert progress[TEAM]["calibrated"]


def test_a_borrowing_chosen_for_a_system_with_its_own_labels_is_said_to_wait(
    client, project, owner, two_systems
):
    # Saving it said "settings saved" and showed the choice as if in use; the system kept
    # its own calibration, and nothing said why.
    project_attribution_refresh(project_id=project.pk)
    client.force_login(owner)
    url = reverse("attribution:calibration_settings", kwargs={"slug": project.slug})
    response = client.post(url, {f"borrow:{TEAM}": SOLO}, follow=True)
    html = response.content.decode()
    assert f"Borrowing is not used now by {TEAM}: each has enough labels of its own" in html
    assert "the borrowing waits until it has too few" in html
    project_attribution_refresh(project_id=project.pk)
    team_rows = TrajectoryAttribution.objects.filter(trajectory__agent_system=TEAM)
    assert team_rows and all(row.calibration_source == "own" for row in team_rows)
    # A borrowing for the system without labels is used, and no note is added for it.
    response = client.post(url, {f"borrow:{SOLO}": TEAM}, follow=True)
    assert "Borrowing is not used now" not in response.content.decode()


def test_a_set_leaving_out_the_most_probable_step_says_why(client, project, member, two_systems):
    # A trial's page said "in steps 4-24", "most probable step 2" and "restart from the
    # state before step 4" side by side, without a word on how all three hold.
    team, _ = two_systems
    project_attribution_refresh(project_id=project.pk)
    row = TrajectoryAttribution.objects.get(trajectory=team[0])
    n = len(row.probabilities)
    row.probabilities = [0.3] + [0.7 / (n - 1)] * (n - 1)
    row.lo, row.hi, row.point_step = 2, n - 1, 0
    row.save()
    notes = attribution_panel(team[0])["claim_notes"]
    assert "The most probable single step, step 0 (30%), lies before the set: 70%" in notes[-1]
    client.force_login(member)
    response = client.get(reverse("dashboard:rollout_detail", args=[project.slug, team[0].pk]))
    assert "lies before the set" in response.content.decode()
    # A set that holds it says nothing of the kind.
    row.lo = 0
    row.save()
    assert not any(
        "most probable single step" in n for n in attribution_panel(team[0])["claim_notes"]
    )
