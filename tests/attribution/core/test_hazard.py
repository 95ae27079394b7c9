"""The learned scorer's first-event objective (``objective="hazard"``): the decisive step is
the first of the steps that look wrong, and each rollout gets one distribution."""

from __future__ import annotations

import numpy as np
import pytest

from attribution.core.scorers import LearnedScorer
from attribution.core.scorers.hazard import first_event_log_mass, survival_rows


def _repeated_mistakes(count: int, seed: int):
    """Rollouts whose decisive step is the first of three that look alike ("bad" = 1);
    a second column is noise. Nothing but the order tells the first from its repeats."""
    rng = np.random.default_rng(seed)
    matrices, steps, repeats = [], [], []
    for _ in range(count):
        n = int(rng.integers(6, 11))
        first = int(rng.integers(0, n - 2))
        later = rng.choice(np.arange(first + 1, n), size=2, replace=False)
        bad = np.zeros(n)
        bad[[first, *later]] = 1.0
        matrices.append(np.column_stack((bad, rng.normal(size=n))))
        steps.append(first)
        repeats.append(later)
    return matrices, steps, repeats


def test_it_puts_the_mass_on_the_first_of_several_bad_looking_steps():
    matrices, steps = _repeated_mistakes(60, seed=1)[:2]
    held_out, truth, repeats = _repeated_mistakes(30, seed=2)
    hazard = LearnedScorer(objective="hazard", C=1.0).fit_matrices(matrices, steps)
    pointwise = LearnedScorer(objective="pointwise", C=1.0).fit_matrices(matrices, steps)
    on_first = {}
    for name, model in (("hazard", hazard), ("pointwise", pointwise)):
        probabilities = [model.proba_from_matrix(x) for x in held_out]
        on_first[name] = np.mean([p[y] for p, y in zip(probabilities, truth, strict=True)])
        if name == "hazard":
            assert [int(np.argmax(p)) for p in probabilities] == truth
            assert all(
                p[y] > p[later].sum()
                for p, y, later in zip(probabilities, truth, repeats, strict=True)
            )
    # The pointwise model cannot tell the first from its repeats: it splits the mass.
    assert on_first["pointwise"] < 0.5 < 0.9 < on_first["hazard"]


def test_it_gives_one_distribution_per_rollout():
    matrices, steps = _repeated_mistakes(40, seed=3)[:2]
    model = LearnedScorer(objective="hazard").fit_matrices(matrices, steps)
    for x in _repeated_mistakes(20, seed=4)[0] + [np.zeros((1, 2))]:
        probabilities = model.proba_from_matrix(x)
        assert probabilities.shape == (x.shape[0],) and np.all(probabilities >= 0)
        assert probabilities.sum() == pytest.approx(1.0)


def test_it_learns_only_from_the_steps_up_to_the_labelled_one():
    # Rollouts of 3, 4 and 2 steps labelled 1, 0 and 1: rows 0-1, 3 and 7-8.
    rows = survival_rows(np.array([3, 4, 2]), np.array([1, 0, 1]))
    assert rows.tolist() == [0, 1, 3, 7, 8]


def test_it_survives_extreme_hazards():
    log_mass = first_event_log_mass(np.array([-800.0, 800.0, 800.0]))
    assert np.all(np.isfinite(log_mass))
    assert int(np.argmax(log_mass)) == 1
