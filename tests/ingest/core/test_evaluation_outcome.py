"""An evaluation's label sets a rollout's outcome only when it means pass or fail: a plain
pass/fail word, or a yes/no answer to an evaluation that asks about success."""

from __future__ import annotations

import pytest

from ingest.core.genai_events import evaluation_outcome
from ingest.core.records import Outcome


@pytest.mark.parametrize(
    ("name", "label", "outcome"),
    [
        ("verdict", "PASS", Outcome.SUCCESS),
        ("hallucination", "fail", Outcome.FAILURE),
        ("task_success", "yes", Outcome.SUCCESS),
        ("resolved", "false", Outcome.FAILURE),
        ("goal completed", "No", Outcome.FAILURE),
        # A yes/no answer to another question is no outcome.
        ("hallucination", "yes", Outcome.UNKNOWN),
        ("toxicity", "true", Outcome.UNKNOWN),
        ("uses_tools", "no", Outcome.UNKNOWN),
        ("", "yes", Outcome.UNKNOWN),
        ("quality", "good", Outcome.UNKNOWN),
    ],
)
def test_a_label_decides_only_when_it_means_pass_or_fail(name, label, outcome):
    assert evaluation_outcome([{"name": name, "score_label": label}]) == outcome


def test_the_latest_deciding_evaluation_wins():
    evaluations = [
        {"name": "verdict", "score_label": "fail"},
        {"name": "task_success", "score_label": "yes"},
        {"name": "toxicity", "score_label": "no"},
    ]
    assert evaluation_outcome(evaluations) == Outcome.SUCCESS
