from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "metrics",
    "baselines",
    "product",
    "devset",
    "tau_deviations",
    "clustering_report",
    "annotation_sheet",
    "report_tables",
    "mast_report",
]


@pytest.mark.parametrize("name", MODULES)
def test_it_keeps_the_docstring_examples_true(name):
    module = importlib.import_module(f"analysis.evaluation.{name}")
    result = doctest.testmod(module)
    assert result.failed == 0
