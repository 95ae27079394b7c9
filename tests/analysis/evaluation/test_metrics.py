"""The partition scores on toy partitions whose right answers are worked out by hand."""

from __future__ import annotations

import pytest

from analysis.evaluation.metrics import (
    ari,
    best_match_f1,
    cluster_count,
    homogeneity,
    macro_best_match_f1,
    nmi,
    score_partition,
    top_share,
    unclustered_share,
)

TRUTH = ["a", "a", "a", "b", "b", "c"]


def test_it_scores_a_perfect_partition_one_everywhere():
    found = [7, 7, 7, 3, 3, 9]
    assert (homogeneity(TRUTH, found), nmi(TRUTH, found), ari(TRUTH, found)) == (1.0, 1.0, 1.0)
    assert macro_best_match_f1(TRUTH, found) == 1.0


def test_it_counts_unclustered_steps_as_one_group_for_homogeneity():
    # The noise group holds only "a": homogeneity is perfect although nothing of "a"
    # was found as a misbehaviour.
    assert homogeneity(["a", "a", "b", "b"], [-1, -1, 0, 0]) == 1.0


def test_it_never_matches_a_category_to_the_unclustered_group():
    assert best_match_f1(["a", "a", "b", "b"], [-1, -1, 0, 0]) == {"a": 0.0, "b": 1.0}


def test_it_scores_everything_unclustered_as_nothing_found():
    found = [-1] * len(TRUTH)
    assert homogeneity(TRUTH, found) == 0.0
    assert macro_best_match_f1(TRUTH, found) == 0.0
    assert unclustered_share(found) == 1.0
    assert top_share(found) == 0.0


def test_it_gives_one_blob_no_homogeneity_and_partial_f1():
    found = [0] * len(TRUTH)
    assert homogeneity(TRUTH, found) == 0.0
    # a: 2*3/(3+6) = 0.6667, b: 2*2/(2+6) = 0.5, c: 2*1/(1+6) = 0.2857
    assert best_match_f1(TRUTH, found) == {"a": 0.6667, "b": 0.5, "c": 0.2857}
    assert macro_best_match_f1(TRUTH, found) == pytest.approx((0.6667 + 0.5 + 0.2857) / 3, 1e-3)


def test_it_picks_the_best_cluster_per_category():
    # a is split 2/1 over clusters 0 and 1; cluster 1 also holds both b.
    found = [0, 0, 1, 1, 1, -1]
    assert best_match_f1(TRUTH, found) == {"a": 0.8, "b": 0.8, "c": 0.0}


def test_it_rewards_splitting_with_homogeneity_but_not_with_f1():
    singletons = list(range(len(TRUTH)))
    assert homogeneity(TRUTH, singletons) == 1.0
    # a: 2*1/(3+1) = 0.5, b: 2*1/(2+1) = 0.6667, c: 1.0
    assert macro_best_match_f1(TRUTH, singletons) == 0.7222


def test_it_gives_the_share_of_the_largest_clusters():
    found = [0, 0, 0, 1, 1, 2, -1, -1]
    assert top_share(found, 1) == 0.375
    assert top_share(found, 8) == 0.75
    assert cluster_count(found) == 3


def test_it_refuses_partitions_of_different_lengths():
    with pytest.raises(ValueError):
        homogeneity(["a", "b"], [0])


def test_it_reports_every_headline_figure():
    assert set(score_partition(TRUTH, [0, 0, 0, 1, 1, 2])) == {
        "homogeneity",
        "macro_best_match_f1",
        "nmi",
        "ari",
        "unclustered_share",
        "top8_share",
        "clusters",
    }
