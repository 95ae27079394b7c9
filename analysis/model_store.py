"""Where a full clustering run's fitted pipeline is kept: a pickle per run under the
var directory, read back to assign new wrong steps between re-clusterings."""

from __future__ import annotations

import pickle
from pathlib import Path

from django.conf import settings

from analysis.core.pipeline import FittedPipeline
from analysis.models import ClusteringRun


def model_dir() -> Path:
    return Path(settings.VAR_DIR) / "analysis"


def store_model(run: ClusteringRun, model: FittedPipeline) -> None:
    directory = model_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"project-{run.project_id}-run-{run.pk}.pkl"
    with path.open("wb") as stream:
        pickle.dump(model, stream, protocol=pickle.HIGHEST_PROTOCOL)
    run.model_file = path.name
    for old in directory.glob(f"project-{run.project_id}-run-*.pkl"):
        if old.name != path.name:
            old.unlink(missing_ok=True)


def load_model(run: ClusteringRun | None) -> FittedPipeline | None:
    if run is None or not run.model_file:
        return None
    path = model_dir() / run.model_file
    if not path.exists():
        return None
    # Only files this service wrote under VAR_DIR are ever unpickled.
    with path.open("rb") as stream:
        return pickle.load(stream)  # noqa: S301
