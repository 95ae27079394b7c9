"""The exports core never imports Django: proven in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

from tests.services import REPO_ROOT


def test_it_imports_the_exports_core_without_django():
    code = (
        "import importlib, pkgutil, sys\n"
        "import exports.core as package\n"
        "for info in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
        "    importlib.import_module(info.name)\n"
        "print(','.join(sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""
