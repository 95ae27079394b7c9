from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import attribution.core

MODULES = sorted(
    info.name for info in pkgutil.walk_packages(attribution.core.__path__, "attribution.core.")
)


@pytest.mark.parametrize("name", ["attribution.core", *MODULES])
def test_it_keeps_the_docstring_examples_true(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0
