from __future__ import annotations

import numpy as np
import pytest

from analysis.core.lift import (
    RolloutOutcome,
    comparable,
    failure_lift,
    generalises,
    length_strata,
)


def long_rollout_project(seed: int) -> tuple[list[RolloutOutcome], set[str]]:
    """Failure grows with length; the behaviour occurs only in long rollouts, causing nothing."""
    rng = np.random.default_rng(seed)
    rollouts, shown = [], set()
    for i in range(3000):
        length = int(rng.integers(5, 60))
        failed = rng.random() < 0.1 + 0.8 * (length - 5) / 55
        rollouts.append(RolloutOutcome(f"r{i}", bool(failed), length, group="env"))
        if length >= 40 and rng.random() < 0.6:
            shown.add(f"r{i}")
    return rollouts, shown


def causal_project(seed: int) -> tuple[list[RolloutOutcome], set[str]]:
    """Failure grows with length, and the behaviour (at any length) adds 35 points to it."""
    rng = np.random.default_rng(seed)
    rollouts, shown = [], set()
    for i in range(3000):
        length = int(rng.integers(5, 60))
        behaves = rng.random() < 0.3
        failed = rng.random() < 0.1 + 0.5 * (length - 5) / 55 + (0.35 if behaves else 0.0)
        rollouts.append(RolloutOutcome(f"r{i}", bool(failed), length, group="env"))
        if behaves:
            shown.add(f"r{i}")
    return rollouts, shown


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_it_does_not_credit_a_behaviour_that_only_comes_with_length(seed):
    estimate = failure_lift(*long_rollout_project(seed))
    assert estimate.unadjusted is not None and estimate.unadjusted > 1.5
    assert estimate.adjusted is not None and 0.8 < estimate.adjusted < 1.25


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_it_keeps_the_lift_of_a_behaviour_that_causes_failure(seed):
    estimate = failure_lift(*causal_project(seed))
    assert estimate.adjusted is not None and estimate.adjusted > 1.6


def test_lengths_where_every_rollout_failed_do_not_pull_the_adjusted_lift_to_one():
    """Short rollouts succeed, long ones all fail: the long strata say nothing about the
    behaviour (the risk is 1 with or without it), so they are left out, not read as 1x."""
    rollouts = [RolloutOutcome(f"s{i}", i % 4 == 0, 5 + i % 3) for i in range(40)]
    rollouts += [RolloutOutcome(f"l{i}", True, 50 + i) for i in range(40)]
    shown = {f"l{i}" for i in range(0, 40, 2)} | {"s0", "s4", "s8", "s12", "s16", "s1"}
    estimate = failure_lift(rollouts, shown)
    assert estimate.unadjusted is not None and estimate.unadjusted > 1.5
    # The short strata alone: showing it fails 5 of 6 there, against 5 of 34 without.
    assert estimate.adjusted is not None and estimate.adjusted > 3
    only_long = failure_lift(rollouts, {f"l{i}" for i in range(0, 40, 2)})
    assert only_long.unadjusted is not None and only_long.adjusted is None


def test_it_gives_no_lift_without_successful_rollouts():
    rollouts = [RolloutOutcome(f"r{i}", True, 10 + i) for i in range(20)]
    estimate = failure_lift(rollouts, {"r1", "r2"})
    assert (estimate.unadjusted, estimate.adjusted) == (None, None)


def test_a_behaviour_in_every_failure_and_no_success_gets_a_finite_lift():
    # 6 failures all show it, 6 successes none: the ratio's denominator is zero.
    rollouts = [RolloutOutcome(f"r{i}", i < 6, 10 + i % 3) for i in range(12)]
    estimate = failure_lift(rollouts, {f"r{i}" for i in range(6)})
    assert estimate.unadjusted == 13.0  # (6.5 / 7) / (0.5 / 7), Haldane-Anscombe
    assert estimate.adjusted is not None and estimate.adjusted >= 3  # 0.5 per stratum
    # Where the plain ratio is defined it is left as it is.
    rollouts.append(RolloutOutcome("late", True, 11))
    assert failure_lift(rollouts, {f"r{i}" for i in range(6)}).unadjusted == 7.0  # (6/6) / (1/7)


def test_it_leaves_out_environments_where_every_rollout_failed():
    mixed = [RolloutOutcome(f"m{i}", i % 2 == 0, 10, group="tau") for i in range(10)]
    failed_only = [RolloutOutcome(f"w{i}", True, 10, group="who") for i in range(50)]
    assert {r.group for r in comparable(mixed + failed_only)} == {"tau"}
    with_them = failure_lift(mixed + failed_only, {"m0", "m1", "w1", "w2"})
    assert with_them == failure_lift(mixed, {"m0", "m1"})


def test_it_weights_sampled_successes():
    rollouts = [
        RolloutOutcome("f1", True, 5),
        RolloutOutcome("f2", True, 5),
        RolloutOutcome("s1", False, 5, weight=3.0),
        RolloutOutcome("s2", False, 5, weight=3.0),
    ]
    # showing it: f1 and s1 (1 of 4 weighted failed); not: f2, s2 (1 of 4).
    assert failure_lift(rollouts, {"f1", "s1"}).unadjusted == 1.0


def test_it_cuts_lengths_into_quantile_buckets_within_each_group():
    rollouts = [RolloutOutcome(f"a{n}", True, n, group="a") for n in range(10)] + [
        RolloutOutcome(f"b{n}", True, 100 + n, group="b") for n in range(10)
    ]
    strata = length_strata(rollouts, buckets=5)
    assert strata["a0"] == ("a", 0) and strata["a9"] == ("a", 4)
    assert strata["b0"] == ("b", 0)


def test_it_says_a_misbehaviour_in_three_environments_generalises():
    assert generalises(environments=3, tasks=1, project_tasks=100)


def test_it_wants_a_share_of_the_tasks_in_a_large_project():
    assert not generalises(environments=1, tasks=3, project_tasks=100)
    assert generalises(environments=1, tasks=10, project_tasks=100)


def test_it_weights_the_sampled_successes_and_drops_the_others():
    from analysis.core.lift import rollout_outcomes

    outcomes = rollout_outcomes(
        {"f": True, "s1": False, "s2": False},
        rollout_length={"f": 9, "s1": 3},
        rollout_group=None,
        sampled_success={"s1"},
        success_scale=2.0,
    )
    assert outcomes == [RolloutOutcome("f", True, 9), RolloutOutcome("s1", False, 3, weight=2.0)]


def test_it_cannot_compare_when_the_success_sample_is_unknown():
    from analysis.core.lift import rollout_outcomes

    outcomes = rollout_outcomes(
        {"f": True, "s": False},
        rollout_length=None,
        rollout_group=None,
        sampled_success=None,
        success_scale=3.0,
    )
    assert outcomes is None


def test_a_group_recurs_once_its_weights_reach_one_half():
    from analysis.core.lift import recurs_in

    assert recurs_in([("t1", 0.2), ("t1", 0.3), ("t2", 0.49), ("", 5.0)]) == {"t1"}
    assert recurs_in([("t1", 0.1)] * 5) == {"t1"}  # 0.1 * 5 in floats is just under 0.5
