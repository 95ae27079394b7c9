from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "steps",
    "selection",
    "embeddings",
    "cluster",
    "profiles",
    "distinctive_terms",
    "identity",
    "pipeline",
    "demo",
    "masking",
    "behaviour",
    "error_templates",
    "naming",
    "cluster_summary",
    "mast",
    "lift",
    "representation",
    "phrases",
    "name_collisions",
    "diagnoses",
    "tool_stats",
]


@pytest.mark.parametrize("name", MODULES)
def test_it_keeps_the_docstring_examples_true(name):
    module = importlib.import_module(f"analysis.core.{name}")
    result = doctest.testmod(module)
    assert result.failed == 0
