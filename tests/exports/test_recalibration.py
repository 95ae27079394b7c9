"""An export at another alpha follows the pages' per-system rule: tau per agent system,
and no set or rollback point for a system with too few calibrating labels at that alpha."""

from __future__ import annotations

import pytest

from attribution.models import TrajectoryAttribution
from attribution.services import project_attribution_refresh
from exports.sources import MSG_ALPHA_TOO_SMALL, MSG_NO_CLAIM_NOTE, ProjectSources, SourceError
from ingest.models import Label, Trajectory
from tests.attribution.conftest import make_rollout, make_upload

pytestmark = pytest.mark.django_db

TEAM = "Planner team"
SOLO = "Solo agent"


def _rollouts(project, upload, system, count, *, label, length=6, bad_step=1):
    made = [
        make_rollout(project, upload=upload, length=length, bad_step=bad_step, label=label)
        for _ in range(count)
    ]
    Trajectory.objects.filter(pk__in=[t.pk for t in made]).update(agent_system=system)
    return [t.pk for t in made]


@pytest.fixture
def team_and_solo(project):
    """20 labelled TEAM rollouts and 6 SOLO ones, of which ``labelled`` carry a label."""

    def build(solo_labelled: int) -> tuple[list[int], list[int]]:
        upload = make_upload(project)
        team = _rollouts(project, upload, TEAM, 20, label=True)
        solo = _rollouts(project, upload, SOLO, solo_labelled, label=True, length=14, bad_step=9)
        solo += _rollouts(
            project, upload, SOLO, 6 - solo_labelled, label=False, length=14, bad_step=9
        )
        project_attribution_refresh(project_id=project.pk)
        return team, solo

    return build


def test_it_gives_no_set_to_a_system_without_labels(project, team_and_solo):
    team, solo = team_and_solo(0)
    decisive = ProjectSources(project, 0.2).attributions(team + solo)
    assert all(decisive[pk].lo is not None for pk in team)
    for pk in solo:
        assert (decisive[pk].lo, decisive[pk].hi, decisive[pk].rollback_step) == (None, None, None)
        assert decisive[pk].alpha is None and decisive[pk].point_step is not None


def test_it_calibrates_each_system_on_its_own_labels(project, team_and_solo):
    team, solo = team_and_solo(0)
    sources = ProjectSources(project, 0.2)
    assert sources.recalibrated is not None
    assert sources.recalibrated.labels_by_system == {TEAM: 20}
    assert set(sources.recalibrated.by_system) == {TEAM}


def test_it_claims_at_a_looser_alpha_when_the_system_has_enough_labels_for_it(
    project, team_and_solo
):
    team, solo = team_and_solo(5)  # 5 labels: too few at 0.1 (9), enough at 0.2 (4)
    stored = TrajectoryAttribution.objects.filter(trajectory_id__in=solo)
    assert not any(row.claim for row in stored)
    decisive = ProjectSources(project, 0.2).attributions(solo)
    assert all(
        d.lo is not None and d.rollback_step == d.lo and d.alpha == 0.2 for d in decisive.values()
    )


def test_it_refuses_a_set_at_a_stricter_alpha_the_system_cannot_serve(project, team_and_solo):
    team, solo = team_and_solo(6)
    sources = ProjectSources(project, 0.05)  # 19 labels needed: TEAM has 20, SOLO 6
    decisive = sources.attributions(team + solo)
    assert all(decisive[pk].lo is not None for pk in team)
    assert all(decisive[pk].lo is None and decisive[pk].rollback_step is None for pk in solo)


def test_the_manifest_says_which_systems_make_no_claim(project, team_and_solo):
    team, solo = team_and_solo(0)
    sources = ProjectSources(project, 0.2)
    sources.attributions(team + solo)
    calibration = sources.provenance()["calibration"]
    assert calibration["recalibrated_at_alpha"] == 0.2 and calibration["per_system"]
    assert calibration["systems"][SOLO] == {
        "calibrating_labels": 0,
        "labels_needed": 4,
        "calibration": "none",
        "lender": "",
        "rollouts": 6,
        "rollouts_without_claim": 6,
    }
    assert calibration["systems"][TEAM]["calibration"] == "own"
    assert calibration["systems"][TEAM]["rollouts_without_claim"] == 0
    assert calibration["no_claim_note"] == MSG_NO_CLAIM_NOTE.format(alpha=0.2, needed=4)


def test_it_borrows_only_as_the_stored_calibration_did(project, team_and_solo):
    project.calibration_borrow = {SOLO: TEAM}
    project.save(update_fields=["calibration_borrow"])
    team, solo = team_and_solo(0)
    sources = ProjectSources(project, 0.2)
    decisive = sources.attributions(solo)
    # A claim (at the asked alpha), though the lender's tau may leave the set empty here.
    assert all(d.alpha == 0.2 for d in decisive.values())
    assert sources.provenance()["calibration"]["systems"][SOLO]["lender"] == TEAM


def test_sibling_divergence_labels_never_calibrate_the_export(project, team_and_solo):
    team, solo = team_and_solo(0)
    for pk in solo:
        Label.objects.create(
            trajectory_id=pk, step_index=9, agent="Planner", source="sibling_divergence"
        )
    sources = ProjectSources(project, 0.2)
    assert sources.recalibrated is not None
    assert SOLO not in sources.recalibrated.labels_by_system


def test_it_refuses_an_alpha_no_system_can_serve(project, team_and_solo):
    team_and_solo(0)
    with pytest.raises(SourceError) as error:
        ProjectSources(project, 0.04)  # 20 labels: at least 1/21 = 0.048
    assert str(error.value) == MSG_ALPHA_TOO_SMALL.format(alpha=0.04, m=20, least=1 / 21)
