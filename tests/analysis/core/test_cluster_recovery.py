from __future__ import annotations

import random

import numpy as np
from sklearn.metrics import adjusted_rand_score

from analysis.core.cluster import NOISE, params_for_size
from analysis.core.pipeline import cluster_wrong_steps


def test_it_recovers_known_groups(synthetic):
    steps, truth = synthetic(per_group=40)
    outcome = cluster_wrong_steps(steps, seed=0)
    true_groups = [truth[step.key] for step in outcome.steps]
    assert adjusted_rand_score(true_groups, outcome.labels.tolist()) >= 0.9
    assert len(outcome.profiles) == 4
    assert float(np.mean(outcome.labels == NOISE)) < 0.1


def test_it_gives_the_same_clusters_for_the_same_data_and_seed_in_any_order(synthetic):
    steps, _ = synthetic(per_group=30)
    shuffled = list(steps)
    random.Random(7).shuffle(shuffled)
    first = cluster_wrong_steps(steps, seed=3)
    second = cluster_wrong_steps(shuffled, seed=3)
    assert [s.key for s in first.steps] == [s.key for s in second.steps]
    assert first.labels.tolist() == second.labels.tolist()
    assert first.probabilities.tolist() == second.probabilities.tolist()
    assert [p.name for p in first.profiles.values()] == [p.name for p in second.profiles.values()]


def test_it_scales_parameters_with_data_size():
    small, large = params_for_size(200), params_for_size(100_000)
    assert small.min_cluster_size == 5
    assert large.min_cluster_size == 150
    assert small.min_samples <= small.min_cluster_size


def test_it_calls_everything_unclustered_when_there_are_too_few_steps(synthetic):
    steps, _ = synthetic(per_group=1)
    outcome = cluster_wrong_steps(steps[:3])
    assert outcome.labels.tolist() == [NOISE] * 3
    assert outcome.profiles == {}


def test_it_handles_no_steps_at_all():
    outcome = cluster_wrong_steps([])
    assert outcome.profiles == {}
    assert outcome.metrics["steps"] == 0
