"""The clustering reads the attribution app's stored prediction sets."""

from __future__ import annotations

import json

import pytest

from analysis.gather import decisive_sets
from attribution.models import TrajectoryAttribution
from tests.conftest import ingest_bytes

pytestmark = pytest.mark.django_db


def test_it_weights_the_steps_of_a_stored_prediction_set(project):
    steps = [{"role": "assistant", "content": f"step {i}"} for i in range(4)]
    line = {"id": "r", "outcome": "failure", "steps": steps}
    rollout = ingest_bytes(
        project, (json.dumps(line) + "\n").encode(), "r.jsonl"
    ).trajectories.get()
    TrajectoryAttribution.objects.create(
        trajectory=rollout,
        project=project,
        probabilities=[0.1, 0.6, 0.2, 0.1],
        lo=1,
        hi=2,
        point_step=1,
        scorer_version="test",
    )
    sets = decisive_sets(project)
    assert sets.conformal == {rollout.pk: {1: 0.6, 2: 0.2}}
    assert sets.labelled == {}
