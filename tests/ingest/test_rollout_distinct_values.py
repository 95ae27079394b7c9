"""Distinct values of a rollout column by skip scan: the same answer as DISTINCT."""

from __future__ import annotations

import json

import pytest

from ingest.selectors import rollout_distinct_values
from tests.conftest import ingest_bytes

pytestmark = pytest.mark.django_db

ROLLOUTS = [
    ("a", "failure", "airline", "m1", "planner"),
    ("b", "success", "airline", "m2", "solo"),
    ("c", "failure", "retail", "m1", ""),
    ("d", "failure", "", "m3", "planner"),
    ("e", "success", "Zoo", "m1", "critic"),
]


@pytest.fixture
def rollouts(project):
    lines = [
        json.dumps(
            {
                "id": external_id,
                "outcome": outcome,
                "environment": environment,
                "policy_model": model,
                "agent_system": system,
                "steps": [{"role": "user", "content": "x"}],
            }
        )
        for external_id, outcome, environment, model, system in ROLLOUTS
    ]
    ingest_bytes(project, ("\n".join(lines) + "\n").encode(), "five.jsonl")
    return project


def _distinct(project, column, **filters):
    rows = project.trajectories.filter(**filters).order_by().values_list(column, flat=True)
    return sorted(set(rows))


@pytest.mark.parametrize("column", ["environment", "policy_model", "agent_system"])
def test_it_finds_every_distinct_value_as_distinct_does(rollouts, column):
    assert rollout_distinct_values(project=rollouts, column=column) == _distinct(rollouts, column)


def test_it_keeps_to_one_outcome_when_asked(rollouts):
    found = rollout_distinct_values(project=rollouts, column="agent_system", outcome="failure")
    assert found == ["", "planner"] == _distinct(rollouts, "agent_system", outcome="failure")


def test_it_finds_nothing_in_an_empty_project(project):
    assert rollout_distinct_values(project=project, column="environment") == []


def test_it_refuses_a_column_it_does_not_list(project):
    with pytest.raises(ValueError, match="not a column with distinct values"):
        rollout_distinct_values(project=project, column="task_text")
