"""Per agent system scorers in the refresh: a system with enough labels of its own gets a
learned scorer trained on them alone; a system with too few is ranked by the label-free
heuristic (never by a model of another system) and all its labels calibrate."""

from __future__ import annotations

import numpy as np
import pytest
from django.urls import reverse

from attribution.core.scorers import HeuristicScorer, LearnedScorer, load_scorer
from attribution.core.scorers.per_system import PerSystemScorer
from attribution.models import Calibration, TrainedScorer, TrajectoryAttribution
from attribution.recalibration import calibration_rollouts
from attribution.services import (
    MIN_TRAINING_LABELS,
    in_training_half,
    label_trains,
    project_attribution_refresh,
)
from tests.attribution.conftest import make_rollout, make_upload, with_system

pytestmark = pytest.mark.django_db

BIG = "Planner team"
SMALL = "Solo agent"


@pytest.fixture
def two_systems(project):
    """60 labelled rollouts of BIG, 12 of SMALL (under MIN_TRAINING_LABELS)."""
    upload = make_upload(project)
    big = [
        with_system(make_rollout(project, upload=upload, length=6 + i % 3, bad_step=1 + i % 3), BIG)
        for i in range(60)
    ]
    small = [
        with_system(make_rollout(project, upload=upload, length=12, bad_step=7), SMALL)
        for _ in range(12)
    ]
    return big, small


def _stored_scorer():
    row = TrainedScorer.objects.get(
        version=TrajectoryAttribution.objects.values_list("scorer_version", flat=True).first()
    )
    return row, load_scorer(bytes(row.blob))


def test_only_the_system_with_enough_labels_gets_a_learned_scorer(project, two_systems):
    big, small = two_systems
    assert len(small) < MIN_TRAINING_LABELS <= len(big)
    project_attribution_refresh(project_id=project.pk)
    row, scorer = _stored_scorer()
    assert row.kind == "per_system"
    assert isinstance(scorer, PerSystemScorer)
    assert list(scorer.scorers) == [BIG]
    assert isinstance(scorer.scorers[BIG], LearnedScorer)
    assert isinstance(scorer.fallback, HeuristicScorer)
    training = [t for t in big if in_training_half(t.task_id)]
    assert row.metrics["systems_trained"] == {BIG: len(training)}
    assert row.metrics["trained_on"] == len(training)


def test_the_small_system_is_ranked_by_the_heuristic_and_all_its_labels_calibrate(
    project, two_systems
):
    big, small = two_systems
    project_attribution_refresh(project_id=project.pk)
    heuristic = HeuristicScorer()
    for trajectory in small:
        stored = TrajectoryAttribution.objects.get(trajectory=trajectory).probabilities
        expected = heuristic.step_probabilities(_record(trajectory))
        assert np.allclose(stored, expected, atol=1e-5)
    calibration = Calibration.objects.get()
    held_out_big = sum(not in_training_half(t.task_id) for t in big)
    assert calibration.by_system["labels_by_system"] == {BIG: held_out_big, SMALL: 12}
    # The export's recalibration reads the same rollouts back.
    systems = [r.agent_system for r in calibration_rollouts(calibration)]
    assert systems.count(SMALL) == 12 and systems.count(BIG) == held_out_big


def _record(trajectory):
    from types import SimpleNamespace

    steps = list(trajectory.steps.order_by("index"))
    return SimpleNamespace(steps=steps, task_text=trajectory.task_text, agent_system=SMALL)


def test_a_label_trains_only_a_system_with_its_own_scorer():
    metrics = {"trained_on": 30, "systems_trained": {BIG: 30}}
    task = next(f"t{i}" for i in range(100) if in_training_half(f"t{i}"))
    assert label_trains(metrics, BIG, task)
    assert not label_trains(metrics, SMALL, task)
    # A scorer stored before per-system training trained on every system.
    assert label_trains({"trained_on": 30}, SMALL, task)
    assert not label_trains({"trained_on": 0}, BIG, task)


def test_the_calibration_page_says_which_scorer_ranks_each_system(
    client, project, member, two_systems
):
    project_attribution_refresh(project_id=project.pk)
    row, _ = _stored_scorer()
    client.force_login(member)
    body = client.get(reverse("attribution:calibration", args=[project.slug])).content.decode()
    count = row.metrics["systems_trained"][BIG]
    assert f"its own learned scorer ({count} labels)" in body
    assert "the label-free heuristic" in body


def test_a_project_whose_systems_all_have_too_few_labels_keeps_the_heuristic(project):
    upload = make_upload(project)
    for i in range(30):
        with_system(
            make_rollout(project, upload=upload, bad_step=1 + i % 3), BIG if i % 2 else SMALL
        )
    project_attribution_refresh(project_id=project.pk)
    row, scorer = _stored_scorer()
    assert isinstance(scorer, HeuristicScorer) and row.kind == "heuristic"


def test_a_new_systems_rollout_page_says_the_heuristic_ranked_it(
    client, project, member, two_systems
):
    newcomer = with_system(make_rollout(project, length=7, bad_step=3, label=False), "Newcomer")
    project_attribution_refresh(project_id=project.pk)
    client.force_login(member)
    response = client.get(reverse("dashboard:rollout_detail", args=[project.slug, newcomer.pk]))
    body = response.content.decode()
    assert 'id="no-claim"' in body
    assert "The ranking of <span data-ranked-by>the label-free heuristic</span>" in body
