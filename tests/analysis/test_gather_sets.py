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


def _two_failed_with_sets(project):
    """Two failed 4-step rollouts, each with the set 1-2 (probabilities 0.6 and 0.2)."""
    steps = [{"role": "assistant", "content": f"step {i}"} for i in range(4)]
    lines = [{"id": name, "outcome": "failure", "steps": steps} for name in ("a", "b")]
    body = "".join(json.dumps(line) + "\n" for line in lines).encode()
    rollouts = list(ingest_bytes(project, body, "ab.jsonl").trajectories.order_by("external_id"))
    for rollout in rollouts:
        TrajectoryAttribution.objects.create(
            trajectory=rollout,
            project=project,
            probabilities=[0.1, 0.6, 0.2, 0.1],
            lo=1,
            hi=2,
            point_step=1,
            scorer_version="test",
        )
    return rollouts


def test_a_labelled_rollout_is_judged_by_its_label_and_a_label_past_its_end_by_its_set(project):
    from ingest.core.records import LabelSource
    from ingest.models import Label

    labelled, stale = _two_failed_with_sets(project)
    Label.objects.create(trajectory=labelled, step_index=3, source=LabelSource.HUMAN)
    Label.objects.create(trajectory=stale, step_index=9, source=LabelSource.HUMAN)
    sets = decisive_sets(project)
    assert sets.labelled == {labelled.pk: [3]}
    assert sets.conformal == {stale.pk: {1: 0.6, 2: 0.2}}


def test_a_sibling_divergence_label_is_no_decisive_step_for_the_clustering(project):
    # Where a failed trial leaves a successful one trains, but is only a guess at the
    # error: the rollout is clustered by its set, as if unlabelled; a human label still wins.
    from ingest.core.records import LabelSource
    from ingest.models import Label

    guessed, both = _two_failed_with_sets(project)
    for rollout in (guessed, both):
        Label.objects.create(
            trajectory=rollout, step_index=0, source=LabelSource.SIBLING_DIVERGENCE
        )
    Label.objects.create(trajectory=both, step_index=3, source=LabelSource.HUMAN)
    sets = decisive_sets(project)
    assert sets.labelled == {both.pk: [3]}
    assert sets.conformal == {guessed.pk: {1: 0.6, 2: 0.2}}
