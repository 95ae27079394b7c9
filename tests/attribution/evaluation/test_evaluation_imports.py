"""The offline evaluation lives beside the core: pure like it, and never imported by it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]


def _loaded_after_importing(package: str, prefix: str) -> str:
    code = (
        "import importlib, pkgutil, sys\n"
        f"package = importlib.import_module({package!r})\n"
        "for info in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
        "    importlib.import_module(info.name)\n"
        f"print(sorted(m for m in sys.modules if m == {prefix!r} or m.startswith({prefix!r} + '.')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    return result.stdout.strip()


def test_it_imports_every_evaluation_module_without_django():
    assert _loaded_after_importing("attribution.evaluation", "django") == "[]"


def test_it_is_not_imported_by_the_runtime_core():
    assert _loaded_after_importing("attribution.core", "attribution.evaluation") == "[]"
