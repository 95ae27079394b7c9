"""Content features: what a step brings into the rollout, and where it sits among the rest."""

from __future__ import annotations

import copy
from types import SimpleNamespace as NS

import numpy as np
import pytest

from attribution.core.content_features import (
    CONTENT_FEATURES,
    RELATIVE_KEYS,
    content_features,
    relative_features,
)
from attribution.core.scorers.learned import LearnedScorer
from tests.attribution.core.conftest import make_trajectory
from tests.attribution.core.test_label_free_features import _records


def _column(matrix, name):
    return matrix[:, CONTENT_FEATURES.index(name)].tolist()


def test_it_finds_where_the_final_answers_content_first_enters():
    traj = make_trajectory(
        [
            "what is the price",
            "search the shop",
            "the price is 1234 dollars",
            "so 1234",
            "TERMINATE",
        ],
        task="what is the price",
    )
    matrix = content_features(traj)
    assert _column(matrix, "answer_first_entry") == [0.0, 0.0, 1.0, 0.0, 0.0]


def test_it_marks_values_stated_without_support_by_an_agent_only():
    traj = NS(
        task_text="",
        steps=[
            NS(role="tool", kind="tool_result", content="fare 310", agent="tool"),
            NS(role="assistant", content="the fare is 310, tax 45", agent="planner"),
        ],
    )
    unsupported = _column(content_features(traj), "unsupported_numbers")
    # The tool's 310 is looked up, not claimed; the assistant's 45 has no support.
    assert unsupported[0] == 0.0 and unsupported[1] == pytest.approx(np.log1p(1))


def test_it_measures_what_a_step_introduced_that_survives():
    traj = make_trajectory(["alpha beta", "gamma delta", "gamma again"])
    survive = _column(content_features(traj), "novel_survive_share")
    assert survive[1] == 0.5 and survive[0] == 0.0


def test_it_marks_the_step_before_the_first_error_and_hand_offs():
    traj = make_trajectory(
        ["plan", "run the code", "Traceback: boom", "fix"], agents=["A", "B", "B", "A (-> B)"]
    )
    matrix = content_features(traj)
    assert _column(matrix, "before_first_error") == [0.0, 1.0, 0.0, 0.0]
    assert _column(matrix, "handoff_out") == [1.0, 0.0, 1.0, 0.0]
    assert _column(matrix, "instructs_other") == [0.0, 0.0, 0.0, 1.0]


def test_it_marks_the_rollouts_maximum_and_first_non_zero_step():
    matrix = np.array([[0.0, 1.0], [3.0, 1.0], [3.0, 2.0]])
    relative = relative_features(matrix, ["has_code", "new_numbers"])
    code, numbers = RELATIVE_KEYS.index("has_code"), RELATIVE_KEYS.index("new_numbers")
    assert relative[:, 2 * code].tolist() == [0.0, 1.0, 0.0]
    assert relative[:, 2 * numbers].tolist() == [0.0, 0.0, 1.0]
    assert relative[:, 2 * numbers + 1].tolist() == [1.0, 0.0, 0.0]


def test_it_gives_an_empty_matrix_for_an_empty_rollout():
    assert content_features(NS(task_text="", steps=[])).shape == (0, len(CONTENT_FEATURES))


@pytest.mark.parametrize("subset", ["Algorithm-Generated", "Hand-Crafted"])
def test_it_computes_the_same_content_features_without_labels(subset):
    for record in _records(subset):
        stripped = copy.deepcopy(record)
        stripped.labels = []
        stripped.metadata = {}
        assert np.array_equal(content_features(record), content_features(stripped))


@pytest.mark.parametrize("objective", ["pointwise", "boosted"])
def test_it_fits_the_learned_scorer_with_content_features(objective):
    def traj(bad):
        contents = ["plan", "look up", "the value is 77" if bad else "ok", "answer 77"]
        return make_trajectory(contents)

    trajectories = [traj(True), traj(False)] * 15
    steps = [2, 1] * 15
    scorer = LearnedScorer(C=1.0, content=True, objective=objective, max_iter=50)
    scorer.fit(trajectories, steps)
    assert scorer.predict([traj(True)]).tolist() == [2]
    assert scorer.feature_version.endswith("-c1")
    assert len(scorer.feature_names_in_) == scorer.features(traj(True)).shape[1]
