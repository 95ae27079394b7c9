"""Fixtures of the analysis tests: a project with real failed rollouts ingested."""

from __future__ import annotations

import glob
import json
from functools import cache

import pytest

from tests.conftest import WHO_AND_WHEN, ingest_bytes, ingest_file, shared_file

TAU_ROLLOUTS = 100  # of 200: enough failures with error signals, half the ingest time
WHO_AND_WHEN_RUNS = 30


@pytest.fixture(autouse=True)
def _analysis_var_dir(settings, tmp_path):
    # Fitted models are pickled under VAR_DIR/analysis: keep each test's apart.
    settings.VAR_DIR = tmp_path


@cache
def _tau_sample() -> bytes:
    path = shared_file("tau_bench/historical_trajectories/gpt-4o-airline.json")
    rollouts = json.loads(path.read_bytes())[:TAU_ROLLOUTS]
    return json.dumps(rollouts).encode("utf-8")


@pytest.fixture
def demo_project(project):
    """Real rollouts, ingested for real: tau-bench airline and Who&When runs."""
    # The name keeps tau-bench's <model>-<environment> pattern, which names the environment.
    ingest_bytes(project, _tau_sample(), "gpt-4o-airline.json")
    paths = sorted(glob.glob(str(WHO_AND_WHEN / "Algorithm-Generated" / "*.json")))
    for path in paths[:WHO_AND_WHEN_RUNS]:
        ingest_file(project, shared_file(path))
    return project
