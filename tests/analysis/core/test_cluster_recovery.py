from __future__ import annotations

import dataclasses
import random

import numpy as np
from sklearn.metrics import adjusted_rand_score

from analysis.core.cluster import NOISE, fit_clusters, params_for_size
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


def _blobs(centres, *, sd, per_blob, seed):
    rng = np.random.default_rng(seed)
    points = np.vstack([rng.normal(centre, sd, size=(per_blob, 2)) for centre in centres])
    truth = np.repeat(np.arange(len(centres)), per_blob)
    return points, truth


def test_three_equal_groups_stay_three_misbehaviours_under_the_size_cap():
    points, truth = _blobs([(0, 0), (30, 0), (0, 30)], sd=0.5, per_blob=60, seed=1)
    clusterer = fit_clusters(points, params_for_size(len(points)))
    assert adjusted_rand_score(truth, clusterer.labels_) > 0.95
    assert np.mean(clusterer.labels_ == NOISE) < 0.05


def test_a_blob_over_half_of_the_steps_is_always_split():
    # Four overlapping groups side by side (two thirds of the steps) and two far away:
    # uncapped, HDBSCAN calls the four one cluster of 67%.
    centres = [(0, 0), (0, 1.5), (1.5, 0), (1.5, 1.5), (30, 30), (-30, 30)]
    points, truth = _blobs(centres, sd=0.5, per_blob=60, seed=0)
    params = params_for_size(len(points))
    uncapped = fit_clusters(points, dataclasses.replace(params, max_cluster_share=0))
    sizes = np.bincount(uncapped.labels_[uncapped.labels_ != NOISE])
    assert sizes.max() > 0.5 * len(points)

    clusterer = fit_clusters(points, params)
    assert clusterer.capped_
    # The split leaves more than max_extra_noise unclustered; it is kept anyway.
    assert np.mean(clusterer.labels_ == NOISE) > np.mean(uncapped.labels_ == NOISE) + 0.25
    kept = clusterer.labels_[clusterer.labels_ != NOISE]
    assert np.bincount(kept).max() <= params.max_cluster_share * len(points)
    for far in (4, 5):  # the two far groups are still found whole, each on its own
        labels = clusterer.labels_[truth == far]
        assert len(set(labels.tolist())) == 1 and labels[0] != NOISE
