"""The rival nested set family of the evaluation: contiguous, nested, and valid under
split conformal calibration like the product's tails."""

from __future__ import annotations

import numpy as np

from attribution.core.conformal import conformal_quantile, interval_from_scores
from attribution.evaluation.set_families import mode_outward_scores


def _random_probabilities(rng, n):
    return rng.dirichlet(np.full(n, 0.5))


def test_every_threshold_gives_one_interval_around_the_mode_and_they_nest():
    rng = np.random.default_rng(0)
    for _ in range(200):
        p = _random_probabilities(rng, int(rng.integers(1, 30)))
        scores = mode_outward_scores(p)
        previous = None
        for tau in np.linspace(0, 1, 21):
            inside = np.flatnonzero(scores <= tau)
            assert inside.size == inside[-1] - inside[0] + 1  # contiguous
            assert int(np.argmax(p)) in inside  # the mode scores 0: never empty
            if previous is not None:
                assert set(previous) <= set(inside)  # nested
            previous = inside


def test_it_absorbs_the_more_probable_neighbour_first():
    # From the mode (step 2) the right neighbour (0.3) beats the left (0.1); then step 1.
    scores = mode_outward_scores([0.05, 0.1, 0.5, 0.3, 0.05])
    assert np.argsort(scores, kind="stable").tolist() == [2, 3, 1, 0, 4]


def test_split_conformal_coverage_holds_over_many_random_splits():
    rng = np.random.default_rng(7)
    trajectories = []
    for _ in range(200):
        p = _random_probabilities(rng, int(rng.integers(3, 20)))
        trajectories.append((p, int(rng.choice(p.size, p=p))))  # the decisive step ~ p
    coverages = []
    for _ in range(300):
        order = rng.permutation(len(trajectories))
        calibration, test = order[:100], order[100:]
        cal_scores = [
            mode_outward_scores(trajectories[i][0])[trajectories[i][1]] for i in calibration
        ]
        tau = conformal_quantile(cal_scores, alpha=0.2)
        hits = []
        for i in test:
            p, y = trajectories[i]
            lo, hi = interval_from_scores(mode_outward_scores(p), tau)
            hits.append(lo <= y <= hi)
        coverages.append(np.mean(hits))
    # Exchangeable scores: mean coverage in [1 - alpha, 1 - alpha + 1/(m+1)], up to noise.
    assert 0.79 <= float(np.mean(coverages)) <= 0.82
