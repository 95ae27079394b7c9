from __future__ import annotations

import pickle

import numpy as np

from analysis.core.cluster import NOISE
from analysis.core.embeddings import MemoryCache
from analysis.core.pipeline import assign_wrong_steps, cluster_wrong_steps, should_recluster
from analysis.core.steps import WrongStep


def test_it_assigns_new_steps_to_the_existing_misbehaviours(synthetic):
    steps, truth = synthetic(per_group=40, seed=0)
    fitted = cluster_wrong_steps(steps[:], seed=0)
    label_of_group = {}
    for s, label in zip(fitted.steps, fitted.labels.tolist()):
        if label != NOISE:
            label_of_group.setdefault(truth[s.key], label)
    new_steps, new_truth = synthetic(per_group=10, seed=99)
    new_steps = [WrongStep(**{**vars(s), "key": "new-" + s.key}) for s in new_steps]
    model = pickle.loads(pickle.dumps(fitted.model))  # as stored between runs
    labels, strengths, coords = assign_wrong_steps(model, new_steps)
    right = sum(
        1
        for s, label in zip(new_steps, labels.tolist())
        if label == label_of_group[new_truth[s.key[4:]]]
    )
    assert right >= 0.9 * len(new_steps)
    assert coords.shape == (len(new_steps), 2)
    assert ((strengths >= 0) & (strengths <= 1)).all()


def test_it_assigns_a_thousand_steps_in_one_call(synthetic):
    # Its speed is measured by bench/clustering.py (docs/clustering.md), not timed here.
    steps, _ = synthetic(per_group=50, seed=0)
    fitted = cluster_wrong_steps(steps, seed=0, with_metrics=False)
    new_steps, _ = synthetic(per_group=250, seed=5)
    labels, strengths, coords = assign_wrong_steps(fitted.model, new_steps)
    assert len(labels) == len(strengths) == len(coords) == 1000
    assert np.mean(labels != NOISE) > 0.9


def test_it_reuses_cached_embeddings_on_assignment(synthetic):
    steps, _ = synthetic(per_group=20, seed=0)
    cache = MemoryCache()
    fitted = cluster_wrong_steps(steps, seed=0, cache=cache)
    misses = cache.misses
    assign_wrong_steps(fitted.model, steps[:10], cache=cache)
    assert cache.misses == misses


def test_it_reclusters_only_when_the_data_grew_enough():
    assert should_recluster(clustered_at_last_run=0, current=5)
    assert not should_recluster(clustered_at_last_run=100, current=120)
    assert should_recluster(clustered_at_last_run=100, current=125)


def test_a_cluster_expected_to_hold_no_decisive_error_is_no_misbehaviour(synthetic):
    # Each member weighs its chance of being its rollout's decisive error: one group of
    # unlikely candidates (together a tenth of one step) is noise, in the run and for
    # new steps assigned later, while the groups of labelled steps stay misbehaviours.
    steps, truth = synthetic(per_group=40, seed=0)
    faint_group = truth[steps[0].key]
    steps = [
        WrongStep(**{**vars(s), "weight": 0.1 / 40}) if truth[s.key] == faint_group else s
        for s in steps
    ]
    fitted = cluster_wrong_steps(steps, seed=0)
    by_group: dict[str, set[int]] = {}
    for step, label in zip(fitted.steps, fitted.labels.tolist()):
        by_group.setdefault(truth[step.key], set()).add(label)
    assert by_group[faint_group] == {NOISE}
    others = [labels - {NOISE} for group, labels in by_group.items() if group != faint_group]
    assert all(others) and len(fitted.profiles) == len(others)
    assert all(profile.weight >= 1.0 for profile in fitted.profiles.values())
    faint = [s for s in steps if truth[s.key] == faint_group][:5]
    labels, _, _ = assign_wrong_steps(pickle.loads(pickle.dumps(fitted.model)), faint)
    assert labels.tolist() == [NOISE] * 5
