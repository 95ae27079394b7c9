"""One label-precedence rule for every app: a human label beats a data set's, the newest
among equals wins, and a label past the end of its rollout never counts."""

from __future__ import annotations

import pytest

from ingest.models import Label
from ingest.selectors import decisive_labels
from tests.attribution.conftest import make_rollout

pytestmark = pytest.mark.django_db


def _label(rollout, step: int, source: str) -> Label:
    return Label.objects.create(trajectory=rollout, step_index=step, source=source)


def test_it_prefers_a_human_label_to_a_newer_dataset_one(project):
    rollout = make_rollout(project, label=False)
    human = _label(rollout, 1, "human")
    _label(rollout, 3, "dataset")
    assert decisive_labels(Label.objects.all())[rollout.pk].pk == human.pk


def test_it_takes_the_newest_label_among_equals(project):
    rollout = make_rollout(project, label=False)
    _label(rollout, 1, "human")
    newest = _label(rollout, 4, "human")
    assert decisive_labels(Label.objects.all())[rollout.pk].pk == newest.pk


def test_it_skips_a_label_past_the_end_of_its_rollout(project):
    rollout = make_rollout(project, length=6, label=False)
    dataset = _label(rollout, 2, "dataset")
    _label(rollout, 6, "human")
    assert decisive_labels(Label.objects.all())[rollout.pk].pk == dataset.pk


def test_it_leaves_out_a_rollout_whose_only_label_is_out_of_range(project):
    rollout = make_rollout(project, length=3, label=False)
    _label(rollout, 9, "dataset")
    assert decisive_labels(Label.objects.all()) == {}


def test_the_attribution_and_the_clustering_judge_by_the_same_label(project):
    from analysis.gather import decisive_sets
    from attribution.services import _decisive_labels

    rollout = make_rollout(project, length=6, label=False)
    _label(rollout, 2, "human")
    _label(rollout, 4, "dataset")
    _label(rollout, 7, "human")  # out of range: ignored by both
    assert _decisive_labels(project) == {rollout.pk: 2}
    assert decisive_sets(project).labelled == {rollout.pk: [2]}
