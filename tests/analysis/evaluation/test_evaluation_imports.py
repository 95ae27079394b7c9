"""Offline evaluation sits beside the pure core and, like it, needs no Django."""

from __future__ import annotations

import subprocess
import sys

from tests.services import REPO_ROOT


def test_it_imports_the_evaluation_package_without_django():
    code = (
        "import importlib, pkgutil, sys\n"
        "package = importlib.import_module('analysis.evaluation')\n"
        "for info in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
        "    importlib.import_module(info.name)\n"
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] == 'django')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""
