from __future__ import annotations

from collections import defaultdict

from analysis.core.cluster import NOISE
from analysis.core.identity import match_clusters
from analysis.core.pipeline import cluster_wrong_steps


def members_by_label(outcome):
    groups = defaultdict(set)
    for step, label in zip(outcome.steps, outcome.labels.tolist()):
        if label != NOISE:
            groups[label].add(step.key)
    return groups


def test_it_keeps_keys_of_matching_clusters():
    previous = {"mb-a": {"1", "2", "3", "4"}, "mb-b": {"5", "6", "7"}}
    keys = match_clusters(previous, {0: {"5", "6", "7", "8"}, 1: {"1", "2", "3"}})
    assert keys == {0: "mb-b", 1: "mb-a"}


def test_it_gives_a_new_key_when_the_overlap_is_too_small():
    previous = {"mb-a": {"1", "2", "3", "4"}}
    keys = match_clusters(previous, {0: {"4", "9", "10", "11"}})
    assert keys[0] != "mb-a" and keys[0].startswith("mb-")


def test_it_matches_one_to_one_when_a_cluster_splits():
    previous = {"mb-a": {"1", "2", "3", "4", "5", "6"}}
    keys = match_clusters(previous, {0: {"1", "2"}, 1: {"3", "4", "5", "6"}})
    assert keys[1] == "mb-a"
    assert keys[0] != "mb-a"


def test_it_keeps_identity_across_a_rerun_on_grown_data(synthetic):
    steps, _ = synthetic(per_group=30, seed=0)
    first = cluster_wrong_steps(steps, seed=0)
    first_keys = match_clusters({}, members_by_label(first))
    previous = {key: members_by_label(first)[label] for label, key in first_keys.items()}

    more, _ = synthetic(per_group=45, seed=0)  # the same 30 per group plus 15 new
    second = cluster_wrong_steps(more, seed=0)
    second_keys = match_clusters(previous, members_by_label(second))
    assert set(second_keys.values()) == set(first_keys.values())
    by_key_first = {key: previous[key] for key in first_keys.values()}
    for label, key in second_keys.items():
        assert by_key_first[key] <= members_by_label(second)[label] | by_key_first[key]
        assert len(by_key_first[key] & members_by_label(second)[label]) >= 0.9 * len(
            by_key_first[key]
        )
