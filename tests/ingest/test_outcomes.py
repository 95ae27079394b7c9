"""Outcomes attached after the rollout: validated whole before anything is written, the
outcome and reward replaced, metadata merged, and whether the rollout turned failed."""

from __future__ import annotations

import re

import pytest

from ingest.models import Trajectory
from ingest.outcomes import (
    ATTACHED_KEY,
    MSG_BAD_OUTCOME,
    MSG_BAD_REWARD,
    MSG_NOTHING,
    OutcomeError,
    rollout_by_external_id,
    rollout_outcome_set,
)
from tests.conftest import ingest_bytes

pytestmark = pytest.mark.django_db

LINE = b'{"id": "r1", "outcome": "unknown", "metadata": {"run": 3}, "steps": [{"role": "user"}]}\n'


@pytest.fixture
def rollout(project):
    ingest_bytes(project, LINE, "r1.jsonl")
    return Trajectory.objects.get(external_id="r1")


def test_it_says_when_a_rollout_turned_failed(rollout):
    change = rollout_outcome_set(rollout=rollout, outcome="failure")
    assert change.turned_failed and change.outcome_changed
    again = rollout_outcome_set(rollout=rollout, outcome="failure")
    assert not again.turned_failed and not again.outcome_changed


def test_it_merges_metadata_and_replaces_the_reward(rollout):
    rollout_outcome_set(rollout=rollout, reward=0.5, metadata={"judge": "human"})
    rollout.refresh_from_db()
    assert rollout.reward == 0.5
    # What was attached is recorded, so that a rebuilt live trace keeps it.
    assert rollout.metadata == {"run": 3, "judge": "human", ATTACHED_KEY: {"reward": 0.5}}


@pytest.mark.parametrize(
    ("fields", "message", "field"),
    [
        ({"outcome": "won", "reward": 1.0}, MSG_BAD_OUTCOME, "outcome"),
        ({"outcome": "success", "reward": float("nan")}, MSG_BAD_REWARD, "reward"),
        ({}, MSG_NOTHING, None),
    ],
)
def test_it_refuses_a_bad_field_before_writing_anything(rollout, fields, message, field):
    with pytest.raises(OutcomeError, match=f"^{re.escape(message)}$") as error:
        rollout_outcome_set(rollout=rollout, **fields)
    assert error.value.field == field
    rollout.refresh_from_db()
    assert (rollout.outcome, rollout.reward) == ("unknown", None)


def test_it_finds_the_newest_copy_of_an_external_id(project, rollout):
    ingest_bytes(project, LINE.replace(b'"run": 3', b'"run": 4'), "again.jsonl")
    assert rollout_by_external_id(project=project, external_id="r1").metadata == {"run": 4}
