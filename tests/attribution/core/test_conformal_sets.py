"""Exact sets on hand-computed toy cases, and the edge cases of conformal calibration."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attribution.core.conformal import (
    MSG_ALPHA_TOO_SMALL,
    AlphaTooSmallError,
    Calibration,
    calibrate,
    conformal_quantile,
    length_bucket,
    nonconformity_score,
    normalise,
    prediction_set,
    step_scores,
    tails,
)


def test_it_computes_exclusive_tails():
    before, after = tails([0.1, 0.6, 0.3])
    assert before.tolist() == pytest.approx([0.0, 0.1, 0.7])
    assert after.tolist() == pytest.approx([0.9, 0.3, 0.0])


def test_it_scores_the_true_step_by_its_larger_tail():
    assert nonconformity_score([0.1, 0.6, 0.3], 1) == pytest.approx(0.3)
    assert nonconformity_score([0.1, 0.6, 0.3], 0) == pytest.approx(0.9)
    assert nonconformity_score([0.1, 0.6, 0.3], 2) == pytest.approx(0.7)


@pytest.mark.parametrize(
    ("tau", "expected"),
    [(0.29, None), (0.3, (1, 1)), (0.69, (1, 1)), (0.7, (1, 2)), (0.9, (0, 2)), (1.0, (0, 2))],
)
def test_it_makes_the_hand_computed_two_sided_sets(tau, expected):
    assert prediction_set([0.1, 0.6, 0.3], tau) == expected


def test_it_shrinks_a_set_to_one_step_when_the_mass_is_concentrated():
    # Inclusive tails could never exclude a step that holds mass; exclusive ones can.
    assert prediction_set([0.05, 0.9, 0.05], 0.05) == (1, 1)


def test_it_cuts_only_the_early_tail_in_the_left_variant():
    p = [0.1, 0.6, 0.3]
    assert step_scores(p, "left").tolist() == pytest.approx([0.9, 0.3, 0.0])
    assert prediction_set(p, 0.35, "left") == (1, 2)


def test_it_cuts_only_the_late_tail_in_the_right_variant():
    p = [0.1, 0.6, 0.3]
    assert prediction_set(p, 0.35, "right") == (0, 1)


def test_it_takes_the_ceil_m_plus_one_quantile():
    scores = [0.5, 0.1, 0.4, 0.2, 0.3]
    # m = 5, alpha = 0.2: rank ceil(6 * 0.8) = 5 -> the largest score.
    assert conformal_quantile(scores, 0.2) == 0.5
    # alpha = 0.5: rank ceil(3) = 3 -> 0.3.
    assert conformal_quantile(scores, 0.5) == 0.3


def test_it_does_not_round_an_exact_rank_up():
    # (19 + 1) * 0.95 is 19.000000000000004 in floating point: rank 19, not 20.
    scores = list(np.linspace(0.01, 0.19, 19))
    assert conformal_quantile(scores, 0.05) == pytest.approx(0.19)


def test_it_refuses_an_alpha_below_one_over_m_plus_one():
    with pytest.raises(AlphaTooSmallError) as error:
        conformal_quantile([0.1] * 9, 0.05)
    assert str(error.value) == MSG_ALPHA_TOO_SMALL.format(alpha=0.05, m=9, minimum=0.1)


def test_it_accepts_alpha_exactly_one_over_m_plus_one():
    assert conformal_quantile([0.1, 0.2, 0.3], 0.25) == 0.3


def test_it_handles_a_one_step_trajectory():
    assert nonconformity_score([1.0], 0) == 0.0
    assert prediction_set([1.0], 0.0) == (0, 0)


def test_it_turns_all_zero_scores_into_a_uniform_distribution():
    assert normalise([0.0, 0.0, 0.0, 0.0]).tolist() == [0.25] * 4
    assert prediction_set([0, 0, 0, 0], 0.5) == (1, 2)


def test_it_keeps_tied_steps_together():
    # Steps 1 and 2 tie; the set is symmetric around them.
    assert prediction_set([0.1, 0.4, 0.4, 0.1], 0.5) == (1, 2)
    assert prediction_set([0.1, 0.4, 0.4, 0.1], 0.1) is None


def test_it_returns_an_empty_set_when_no_step_qualifies():
    assert prediction_set([0.5, 0.5], 0.4) is None


def test_it_rejects_negative_or_nan_probabilities():
    with pytest.raises(ValueError):
        normalise([0.5, -0.1])
    with pytest.raises(ValueError):
        normalise([math.nan, 1.0])


def test_it_calibrates_a_pooled_tau():
    cal = calibrate([[0.1, 0.9], [0.8, 0.2], [0.5, 0.5], [0.3, 0.7]], [1, 0, 1, 1], alpha=0.2)
    # Scores: 0.1, 0.2, 0.5, 0.3; rank ceil(5 * 0.8) = 4 -> 0.5.
    assert cal.pooled_tau == 0.5
    assert cal.m == 4


def test_it_falls_back_to_the_pooled_tau_for_small_groups():
    probs = [[0.5, 0.5]] * 25 + [[0.25] * 4] * 5
    steps = [0] * 25 + [3] * 5
    groups = ["short"] * 25 + ["long"] * 5
    cal = calibrate(probs, steps, alpha=0.1, grouping="length", groups=groups, min_group_size=20)
    assert set(cal.tau_by_group) == {"short"}
    assert cal.m_by_group == {"short": 25, "long": 5}
    assert cal.tau_for("long") == cal.pooled_tau
    assert cal.source_for("long") == "all"
    assert cal.source_for("short") == "short"


def test_it_groups_by_length_bucket_by_default():
    probs = [[1.0]] * 3 + [[0.1] * 10] * 3
    cal = calibrate(probs, [0, 0, 0, 5, 5, 5], alpha=0.25, grouping="length", min_group_size=3)
    assert set(cal.tau_by_group) == {"1-8", "9-16"}


def test_it_round_trips_a_calibration_through_a_dict():
    cal = calibrate(
        [[0.2, 0.8]] * 10,
        [1] * 10,
        alpha=0.1,
        grouping="environment",
        groups=["a"] * 10,
        min_group_size=5,
    )
    assert Calibration.from_dict(cal.to_dict()) == cal


def test_it_names_length_buckets():
    assert [length_bucket(n) for n in (1, 8, 9, 16, 17, 64, 65)] == [
        "1-8",
        "1-8",
        "9-16",
        "9-16",
        "17-32",
        "33-64",
        "65+",
    ]
