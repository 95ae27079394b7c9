"""The offline evaluation package keeps its docstring examples true (moved from core)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import attribution.evaluation

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(attribution.evaluation.__path__, "attribution.evaluation.")
)


@pytest.mark.parametrize("name", ["attribution.evaluation", *MODULES])
def test_it_keeps_the_docstring_examples_true(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0
