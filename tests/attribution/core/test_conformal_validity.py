"""Validity on synthetic data with known probabilities, over many random splits.

When the scorer gives the true distribution and the decisive step is drawn from it, the
calibration and test scores are exchangeable, so the mean coverage must lie within
[1 - alpha, 1 - alpha + 1/(m+1)] up to sampling noise.
"""

from __future__ import annotations

import numpy as np
import pytest

from attribution.core.conformal import calibrate, group_key, prediction_set
from attribution.core.metrics import coverage, covers


def _synthetic(rng, count):
    lengths = rng.integers(1, 30, size=count)
    probs = [rng.dirichlet(np.full(n, 0.3)) for n in lengths]
    # Inverse-CDF draws of the decisive step from each trajectory's own distribution.
    steps = np.array(
        [min(int(np.searchsorted(np.cumsum(p), rng.random())), len(p) - 1) for p in probs]
    )
    return probs, steps


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [0.1, 0.2])
@pytest.mark.parametrize("variant", ["two_sided", "left"])
def test_it_keeps_mean_coverage_within_the_finite_sample_bounds(alpha, variant):
    rng = np.random.default_rng(7)
    m, n_test, repeats = 40, 100, 200
    coverages = []
    for _ in range(repeats):
        probs, steps = _synthetic(rng, m + n_test)
        cal = calibrate(probs[:m], steps[:m], alpha=alpha, variant=variant)
        sets = [prediction_set(p, cal.pooled_tau, variant) for p in probs[m:]]
        coverages.append(coverage(sets, steps[m:].tolist()))
    mean = float(np.mean(coverages))
    noise = 3 * float(np.std(coverages)) / np.sqrt(repeats)
    assert 1 - alpha - noise <= mean <= 1 - alpha + 1 / (m + 1) + noise


@pytest.mark.slow
def test_it_gives_each_length_group_its_own_coverage():
    rng = np.random.default_rng(11)
    alpha, repeats = 0.1, 120
    hits: dict[str, list[float]] = {"1-8": [], "9-16": [], "17-32": []}
    for _ in range(repeats):
        probs, steps = _synthetic(rng, 300)
        groups = [group_key("length", n_steps=len(p)) for p in probs]
        cal = calibrate(
            probs[:150],
            steps[:150],
            alpha=alpha,
            grouping="length",
            groups=groups[:150],
            min_group_size=20,
        )
        for p, y, g in zip(probs[150:], steps[150:], groups[150:], strict=True):
            hits[g].append(float(covers(prediction_set(p, cal.tau_for(g)), int(y))))
    for group, values in hits.items():
        noise = 3 * np.sqrt(alpha * (1 - alpha) / len(values)) + 0.01
        assert np.mean(values) >= 1 - alpha - noise, group
