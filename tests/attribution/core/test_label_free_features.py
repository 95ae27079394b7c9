"""A trajectory's features are identical with its labels and label-ish metadata removed."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from attribution.core.features import step_features
from attribution.core.scorers import HeuristicScorer
from attribution.core.view import scoring_view
from ingest.core.records import LabelRecord
from ingest.parsers import get_parser
from tests.conftest import WHO_AND_WHEN

LABEL_KEYS = (
    "ground_truth",
    "is_correct",
    "is_corrected",
    "mistake_type",
    "mistake_step",
    "mistake_agent",
)


def _records(subset: str, count: int = 6):
    folder = WHO_AND_WHEN / subset
    if not folder.exists():
        pytest.skip(f"shared data not present: {folder}")
    parser = get_parser("who_and_when")
    paths = sorted(folder.glob("*.json"))[:count]
    return [next(parser.parse(path.open("rb"), filename=str(path))) for path in paths]


@pytest.mark.parametrize("subset", ["Algorithm-Generated", "Hand-Crafted"])
@pytest.mark.parametrize("text_buckets", [0, 64])
def test_it_computes_the_same_features_without_labels(subset, text_buckets):
    for record in _records(subset):
        assert record.labels and any(key in record.metadata for key in LABEL_KEYS)
        stripped = copy.deepcopy(record)
        stripped.labels = []
        stripped.metadata = {k: v for k, v in stripped.metadata.items() if k not in LABEL_KEYS}
        tampered = copy.deepcopy(record)
        tampered.labels = [LabelRecord(step=0, agent="someone else", reason="x")]
        tampered.metadata["ground_truth"] = "a different answer"
        reference = step_features(record, text_buckets=text_buckets)
        assert np.array_equal(reference, step_features(stripped, text_buckets=text_buckets))
        assert np.array_equal(reference, step_features(tampered, text_buckets=text_buckets))


def test_it_keeps_labels_and_metadata_out_of_the_scoring_view():
    record = _records("Hand-Crafted", 1)[0]
    view = scoring_view(record)
    assert not hasattr(view, "labels") and not hasattr(view, "metadata")
    assert record.metadata.get("ground_truth", "") not in {
        view.task_text,
        view.environment,
        view.agent_system,
    }


def test_it_gives_the_heuristic_the_same_scores_without_labels():
    record = _records("Algorithm-Generated", 1)[0]
    stripped = copy.deepcopy(record)
    stripped.labels, stripped.metadata = [], {}
    assert np.array_equal(
        HeuristicScorer().step_probabilities(record), HeuristicScorer().step_probabilities(stripped)
    )
