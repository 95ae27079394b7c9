"""The one-way layers of DESIGN.md hold: import-linter's contracts pass, they name every
app in INSTALLED_APPS in the same order, and they do catch an upward import."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from django.conf import settings

from tests.services import REPO_ROOT

LINT_IMPORTS = str(Path(sys.executable).with_name("lint-imports"))


def _contracts() -> dict:
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]


def _run(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LINT_IMPORTS, "--no-cache"],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"},
    )


def test_it_keeps_every_import_contract():
    result = _run(REPO_ROOT)
    assert result.returncode == 0, result.stdout


def test_it_layers_every_app_in_the_order_settings_install_them():
    config = _contracts()
    layers = next(c for c in config["contracts"] if c["type"] == "layers")["layers"]
    apps = [app for app in settings.INSTALLED_APPS if (REPO_ROOT / app / "apps.py").exists()]
    assert list(reversed(layers)) == apps
    assert sorted(config["root_packages"]) == sorted(["faultline", *apps])


def _copy_apps(target: Path) -> None:
    """The apps' Python files and the contracts, to break them without touching the repo."""
    for package in _contracts()["root_packages"]:
        shutil.copytree(
            REPO_ROOT / package,
            target / package,
            ignore=shutil.ignore_patterns("__pycache__", "*.json", "*.html", "migrations"),
        )
    shutil.copy(REPO_ROOT / "pyproject.toml", target / "pyproject.toml")


def test_it_refuses_an_app_that_imports_one_above_it(tmp_path):
    _copy_apps(tmp_path)
    (tmp_path / "ingest" / "probe.py").write_text("from dashboard import views\n")
    result = _run(tmp_path)
    assert result.returncode != 0
    assert "ingest.probe -> dashboard.views" in result.stdout


def test_it_refuses_a_core_that_imports_django(tmp_path):
    _copy_apps(tmp_path)
    (tmp_path / "attribution" / "core" / "probe.py").write_text(
        "from django.conf import settings\n"
    )
    result = _run(tmp_path)
    assert result.returncode != 0
    assert "attribution.core.probe -> django" in result.stdout
