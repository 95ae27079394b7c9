from __future__ import annotations

import math

from attribution.core.metrics import coverage, covers, empty_rate, removal_rate, set_size


def test_it_counts_an_empty_set_as_a_miss():
    assert coverage([None, (0, 2)], [0, 1]) == 0.5


def test_it_counts_an_empty_set_as_full_removal():
    assert removal_rate([None, (0, 1)], [4, 4]) == (1.0 + 0.5) / 2


def test_it_measures_set_sizes_and_membership():
    assert set_size((2, 4)) == 3 and set_size(None) == 0
    assert covers((2, 4), 4) and not covers((2, 4), 5)


def test_it_reports_the_empty_rate():
    assert empty_rate([None, None, (0, 0), (1, 1)]) == 0.5


def test_it_returns_nan_for_no_sets():
    assert math.isnan(coverage([], [])) and math.isnan(removal_rate([], []))
