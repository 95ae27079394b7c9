from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

MODULES = [
    "analysis.core",
    "analysis.core.steps",
    "analysis.core.selection",
    "analysis.core.embeddings",
    "analysis.core.cluster",
    "analysis.core.profiles",
    "analysis.core.identity",
    "analysis.core.pipeline",
    "analysis.core.demo",
    "analysis.core.masking",
    "analysis.core.provenance",
    "analysis.core.behaviour",
    "analysis.core.error_templates",
    "analysis.core.naming",
    "analysis.core.lift",
    "analysis.core.representation",
]


def test_it_imports_the_core_without_django():
    code = (
        "import sys\n"
        + "".join(f"import {name}\n" for name in MODULES)
        + "import analysis.core.pipeline as p\n"
        + "from analysis.core.steps import WrongStep\n"
        + "s = [WrongStep(key=str(i), rollout='r', index=i, content=f'word{i % 3} x') for i in range(30)]\n"
        + "p.cluster_wrong_steps(s)\n"
        + "print(sorted(m for m in sys.modules if m == 'django' or m.startswith('django.')))\n"
    )
    here = Path(__file__).resolve().parent
    env = dict(os.environ, PYTHONPATH=str(here.parents[2]))
    env.pop("DJANGO_SETTINGS_MODULE", None)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert result.stdout.strip() == "[]"
