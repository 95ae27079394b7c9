"""Per-agent-system calibration: coverage per system, and no claim without enough labels.

The synthetic project holds two agent systems whose scores differ: for "sharp" the scorer's
probabilities are the true distribution of the decisive step; for "noisy" the decisive step
is drawn half the time uniformly, so its nonconformity scores run higher. One pooled tau
under-covers "noisy"; a tau per system covers each.
"""

from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np
import pytest

from attribution.core.conformal import POOLED, AlphaTooSmallError, conformal_quantile
from attribution.core.metrics import covers
from attribution.core.system_calibration import (
    MSG_BORROW_SELF,
    MSG_NO_CLAIM,
    SOURCE_BORROWED,
    SOURCE_NONE,
    SOURCE_OWN,
    SystemCalibration,
    attribute_per_system,
    calibrate_per_system,
    labels_needed,
    min_labels_for,
)

SYSTEMS = ("sharp", "noisy")


def _rollouts(rng, system, count):
    """(probabilities, decisive steps) of ``count`` synthetic rollouts of one system."""
    lengths = rng.integers(2, 30, size=count)
    probs = [rng.dirichlet(np.full(n, 0.3)) for n in lengths]
    steps = []
    for p in probs:
        truth = p if system == "sharp" or rng.random() < 0.5 else np.full(p.size, 1 / p.size)
        steps.append(min(int(np.searchsorted(np.cumsum(truth), rng.random())), p.size - 1))
    return probs, steps


def _rollout(system, n):
    return NS(agent_system=system, steps=[NS(content=str(i), agent="agent") for i in range(n)])


def _covered(attribution, step):
    return attribution.lo is not None and covers((attribution.lo, attribution.hi), step)


def _coverage_per_system(rng, alpha, m, n_test, *, pooled_too=True):
    """Test coverage per system in one split: with a tau per system, and (``pooled_too``)
    with one pooled tau."""
    cal_p, cal_y, cal_s, tests = [], [], [], []
    for system in SYSTEMS:
        probs, steps = _rollouts(rng, system, m + n_test)
        cal_p += probs[:m]
        cal_y += steps[:m]
        cal_s += [system] * m
        tests.append((system, probs[m:], steps[m:]))
    per_system = calibrate_per_system(cal_p, cal_y, cal_s, alpha=alpha, grouping="none")
    # Everything under one key is what a calibration that ignores the systems does.
    pooled = calibrate_per_system(cal_p, cal_y, ["one"] * len(cal_s), alpha=alpha, grouping="none")
    result = {}
    for system, probs, steps in tests:
        own = [attribute_per_system(_rollout(system, p.size), p, per_system) for p in probs]
        result[system] = np.mean([_covered(a, y) for a, y in zip(own, steps, strict=True)])
        if pooled_too:
            shared = [attribute_per_system(_rollout("one", p.size), p, pooled) for p in probs]
            result[f"{system}-pooled"] = np.mean(
                [_covered(a, y) for a, y in zip(shared, steps, strict=True)]
            )
    return result


def test_it_needs_the_rank_within_the_labels():
    for alpha in (0.05, 0.1, 0.2, 0.3):
        m = min_labels_for(alpha)
        conformal_quantile(np.zeros(m), alpha)
        with pytest.raises(AlphaTooSmallError):
            conformal_quantile(np.zeros(m - 1), alpha)


def test_it_counts_the_labels_still_needed():
    assert labels_needed(0, 0.1) == 9
    assert labels_needed(9, 0.1) == 0
    assert labels_needed(20, 0.1, min_labels=40) == 20


def test_it_covers_each_system_with_its_own_tau():
    rng = np.random.default_rng(3)
    splits = [_coverage_per_system(rng, 0.1, 200, 200) for _ in range(10)]
    for system in SYSTEMS:
        assert np.mean([s[system] for s in splits]) >= 0.9 - 0.015
    # The pooled tau is too small for the noisy system: why calibration is per system.
    assert np.mean([s["noisy-pooled"] for s in splits]) < 0.88


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [0.1, 0.2])
def test_it_keeps_each_systems_mean_coverage_within_the_finite_sample_bounds(alpha):
    rng = np.random.default_rng(17)
    m, repeats = 40, 300
    splits = [_coverage_per_system(rng, alpha, m, 60, pooled_too=False) for _ in range(repeats)]
    for system in SYSTEMS:
        values = np.array([s[system] for s in splits])
        noise = 3 * values.std() / np.sqrt(repeats)
        assert 1 - alpha - noise <= values.mean() <= 1 - alpha + 1 / (m + 1) + noise


def test_it_makes_no_claim_for_a_system_without_labels():
    cal = calibrate_per_system([[0.2, 0.8]] * 20, [1] * 20, ["sharp"] * 20, alpha=0.1)
    result = attribute_per_system(_rollout("unseen", 3), [0.2, 0.5, 0.3], cal)
    assert not result.claim
    assert (result.lo, result.hi, result.rollback_step, result.tau) == (None, None, None, None)
    assert result.calibration_source == SOURCE_NONE
    assert result.ranking == [1, 2, 0] and result.point_step == 1
    assert result.labels == 0 and result.labels_needed == 9
    assert result.message() == MSG_NO_CLAIM.format(system="unseen", labels=0, needed=9, level=0.9)


def test_it_makes_no_claim_for_a_system_with_too_few_labels():
    cal = calibrate_per_system(
        [[0.2, 0.8]] * 25, [1] * 25, ["sharp"] * 20 + ["rare"] * 5, alpha=0.1
    )
    result = attribute_per_system(_rollout("rare", 2), [0.2, 0.8], cal)
    assert not result.claim and result.labels == 5 and result.labels_needed == 4
    assert cal.deficits() == {"rare": 4, "sharp": 0}


def test_it_borrows_only_when_asked_and_says_so():
    probs, steps = [[0.2, 0.8]] * 20, [1] * 20
    asked = calibrate_per_system(
        probs, steps, ["sharp"] * 20, alpha=0.1, borrow={"unseen": "sharp"}
    )
    result = attribute_per_system(_rollout("unseen", 2), [0.2, 0.8], asked)
    assert result.claim and result.borrowed
    assert (result.calibration_source, result.calibration_system) == (SOURCE_BORROWED, "sharp")
    assert result.labels_needed == 9  # borrowing does not pretend the system has labels
    pooled = calibrate_per_system(probs, steps, ["sharp"] * 20, alpha=0.1, borrow={"x": POOLED})
    assert attribute_per_system(_rollout("x", 2), [0.2, 0.8], pooled).calibration_system == POOLED


def test_it_prefers_the_systems_own_calibration_to_a_borrowed_one():
    cal = calibrate_per_system(
        [[0.2, 0.8]] * 20, [1] * 20, ["a"] * 10 + ["b"] * 10, alpha=0.1, borrow={"b": "a"}
    )
    result = attribute_per_system(_rollout("b", 2), [0.2, 0.8], cal)
    assert result.calibration_source == SOURCE_OWN and result.calibration_system == "b"


def test_it_refuses_to_borrow_from_itself():
    with pytest.raises(ValueError, match="cannot borrow") as error:
        calibrate_per_system([[0.5, 0.5]] * 9, [0] * 9, ["a"] * 9, alpha=0.1, borrow={"a": "a"})
    assert str(error.value) == MSG_BORROW_SELF.format(system="a")


def test_it_calibrates_length_buckets_within_a_system():
    probs = [[0.1] * 10] * 30 + [[0.5, 0.5]] * 30
    cal = calibrate_per_system(
        probs, [0] * 60, ["a"] * 60, alpha=0.1, grouping="length", min_group_size=30
    )
    assert set(cal.by_system["a"].tau_by_group) == {"1-8", "9-16"}
    assert cal.decision("a", n_steps=10).calibration_group == "9-16"
    assert cal.decision("a", n_steps=40).calibration_group == "all"


def test_it_round_trips_through_a_dict():
    cal = calibrate_per_system(
        [[0.2, 0.8]] * 20, [1] * 20, ["a"] * 20, alpha=0.1, borrow={"b": POOLED}
    )
    assert SystemCalibration.from_dict(cal.to_dict()) == cal
