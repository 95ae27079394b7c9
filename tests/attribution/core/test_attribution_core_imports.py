"""Importing attribution.core (every module) in a fresh interpreter loads no Django."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_it_imports_every_core_module_without_django():
    code = (
        "import importlib, pkgutil, sys\n"
        "import attribution.core as core\n"
        "for info in pkgutil.walk_packages(core.__path__, 'attribution.core.'):\n"
        "    importlib.import_module(info.name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'django'))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
