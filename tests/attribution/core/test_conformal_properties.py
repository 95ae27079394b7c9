"""Property tests: sets are contiguous, and the true step is in the set iff its score <= tau."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from attribution.core.conformal import VARIANTS, nonconformity_score, prediction_set, step_scores
from attribution.core.metrics import covers

weights = st.lists(
    st.one_of(st.just(0.0), st.floats(min_value=0.0, max_value=1.0, allow_nan=False)),
    min_size=1,
    max_size=40,
)
taus = st.one_of(
    st.just(0.0), st.just(0.5), st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
)


@settings(max_examples=300, deadline=None)
@given(weights, taus, st.sampled_from(VARIANTS))
def test_it_always_makes_one_contiguous_interval(p, tau, variant):
    interval = prediction_set(p, tau, variant)
    inside = np.flatnonzero(step_scores(p, variant) <= tau)
    if interval is None:
        assert inside.size == 0
    else:
        lo, hi = interval
        assert inside.tolist() == list(range(lo, hi + 1))


@settings(max_examples=300, deadline=None)
@given(weights, taus, st.sampled_from(VARIANTS), st.data())
def test_it_covers_the_true_step_iff_its_score_is_at_most_tau(p, tau, variant, data):
    y = data.draw(st.integers(min_value=0, max_value=len(p) - 1))
    covered = covers(prediction_set(p, tau, variant), y)
    assert covered == (nonconformity_score(p, y, variant) <= tau)


@settings(max_examples=200, deadline=None)
@given(weights, st.floats(min_value=0.0, max_value=1.0), st.floats(min_value=0.0, max_value=1.0))
def test_it_only_grows_the_set_as_tau_grows(p, tau_a, tau_b):
    small, large = sorted((tau_a, tau_b))
    inner = prediction_set(p, small)
    outer = prediction_set(p, large)
    if inner is not None:
        assert outer is not None and outer[0] <= inner[0] and inner[1] <= outer[1]
