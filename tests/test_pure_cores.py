"""The algorithm cores never import Django: proven in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.services import REPO_ROOT

CORES = ["ingest.core", "ingest.parsers", "attribution.core", "analysis.core"]


@pytest.mark.parametrize("module", CORES)
def test_it_imports_the_core_without_django(module):
    if not (REPO_ROOT / module.replace(".", "/")).exists():
        pytest.fail(f"{module} is missing")
    code = (
        "import importlib, pkgutil, sys\n"
        f"package = importlib.import_module({module!r})\n"
        "for info in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
        "    importlib.import_module(info.name)\n"
        "loaded = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
        "print(','.join(loaded))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "", f"{module} loaded {result.stdout.strip()}"
