"""The calibration page and the labelling queue say, per agent system, which scorer ranks
its steps and when its own learned scorer takes over (a user who labelled every one of a
system's 39 failed rollouts was never told its ranking stays the label-free heuristic)."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils.html import escape

from attribution.services import MIN_TRAINING_LABELS, project_attribution_refresh
from attribution.system_selectors import (
    MSG_LEARNED_NEEDS,
    MSG_LEARNED_NEXT_REFRESH,
    MSG_LEARNED_OUT_OF_REACH,
    learned_scorer_note,
    system_progress,
)
from tests.attribution.conftest import make_rollout, make_upload, with_system

pytestmark = pytest.mark.django_db

HEURISTIC = "the label-free heuristic"


def _rollouts(project, system, *, count, labelled):
    upload = make_upload(project)
    for i in range(count):
        rollout = make_rollout(
            project, upload=upload, length=5 + i % 8, bad_step=1 + i % 3, label=i < labelled
        )
        with_system(rollout, system)


def _pages(client, project, member) -> tuple[str, str]:
    client.force_login(member)
    calibration = client.get(reverse("attribution:calibration", args=[project.slug]))
    queue = client.get(reverse("attribution:labelling_queue", args=[project.slug]))
    return calibration.content.decode(), queue.content.decode()


def test_a_system_with_fewer_failed_rollouts_than_it_needs_is_told_so(client, project, member):
    _rollouts(
        project, "small crew", count=MIN_TRAINING_LABELS - 1, labelled=MIN_TRAINING_LABELS - 1
    )
    project_attribution_refresh(project_id=project.pk)
    expected = MSG_LEARNED_OUT_OF_REACH.format(
        rollouts=MIN_TRAINING_LABELS - 1, plural="s", target=MIN_TRAINING_LABELS, fallback=HEURISTIC
    )
    [row] = system_progress(project)
    assert row["ranked_by"] == HEURISTIC and row["learned_note"] == expected
    calibration, queue = _pages(client, project, member)
    assert escape(expected) in calibration and escape(expected) in queue
    assert 'id="learned-scorer-rule"' in calibration


def test_it_says_how_many_more_labels_the_learned_scorer_needs(client, project, member):
    _rollouts(project, "crew", count=50, labelled=25)
    project_attribution_refresh(project_id=project.pk)
    expected = MSG_LEARNED_NEEDS.format(
        needed=MIN_TRAINING_LABELS - 25,
        labelled=25,
        target=MIN_TRAINING_LABELS,
        fallback=HEURISTIC,
    )
    calibration, queue = _pages(client, project, member)
    assert escape(expected) in calibration and escape(expected) in queue


def test_a_label_given_since_the_refresh_counts_at_once(project):
    _rollouts(project, "crew", count=50, labelled=25)
    project_attribution_refresh(project_id=project.pk)
    make_rollout(project, label=True).delete()  # another rollout: not counted
    rollout = with_system(make_rollout(project, label=True), "crew")
    assert rollout.agent_system == "crew"
    [row] = system_progress(project)
    assert f"of its own: {MIN_TRAINING_LABELS - 26} to go (26 of" in row["learned_note"]


def test_a_system_with_its_own_learned_scorer_has_no_note(project):
    _rollouts(project, "big", count=80, labelled=80)
    _rollouts(project, "small", count=12, labelled=12)
    project_attribution_refresh(project_id=project.pk)
    rows = {row["system"]: row for row in system_progress(project)}
    assert rows["big"]["ranked_by"].startswith("its own learned scorer")
    assert rows["big"]["learned_note"] == ""
    assert rows["small"]["learned_note"].startswith(f"Steps ranked by {HEURISTIC}: a learned")


def test_enough_labels_before_the_refresh_says_the_next_refresh_trains_it():
    note = learned_scorer_note(scorer=None, system="crew", labelled=45, rollouts=60)
    assert note == MSG_LEARNED_NEXT_REFRESH.format(
        fallback=HEURISTIC, target=MIN_TRAINING_LABELS, held_out=10
    )


def _row(html: str, system: str) -> str:
    start = html.index(f'<tr data-system="{system}">')
    return html[start : html.index("</tr>", start)]


def test_a_calibrated_system_ranked_by_the_heuristic_reads_as_two_things(client, project, member):
    # "calibrated at 90%" beside "Out of reach for now: ... fewer than the 40 labelled"
    # read as a contradiction: the 40 are a learned scorer's, and calibration needs 9.
    _rollouts(project, "crew", count=20, labelled=20)
    project_attribution_refresh(project_id=project.pk)
    [row] = system_progress(project)
    assert row["calibrated"]
    note = row["learned_note"]
    assert note.startswith(f"Steps ranked by {HEURISTIC}")
    assert "Out of reach" not in note and "calibrat" not in note
    for page in _pages(client, project, member):
        cells = _row(page, "crew")
        assert "calibrated at 90%" in cells and escape(note) in cells
        assert "Out of reach" not in cells


def test_the_calibration_page_names_what_each_column_is_about(client, project, member):
    _rollouts(project, "crew", count=20, labelled=20)
    project_attribution_refresh(project_id=project.pk)
    calibration, queue = _pages(client, project, member)
    assert "<th>step ranking</th><th>confidence claims</th>" in calibration
    assert "<th>calibration, and step ranking</th>" in queue
