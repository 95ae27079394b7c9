"""The learned scorer's ranking, two-stage, structure and stacked variants (not the default,
but measured in the model-selection table): each gives one distribution per rollout,
learns the plain error pattern, and trains deterministically."""

from __future__ import annotations

import numpy as np
import pytest

from attribution.core.scorers import LearnedScorer, dump_scorer
from attribution.core.scorers.ranking import agent_stage, pairwise_rows, rollout_relative
from attribution.core.structure_features import STRUCTURE_FEATURES, structure_features
from tests.attribution.core.conftest import make_trajectory

VARIANTS = [
    {"objective": "pairwise"},
    {"objective": "hazard"},
    {"objective": "hazard", "stacked": True},
    {"agent_stage": True},
    {"structure": True},
    {"stacked": True},
    {"objective": "pairwise", "agent_stage": True, "stacked": True, "structure": True},
]


def _training_set(count: int = 40, seed: int = 3):
    rng = np.random.default_rng(seed)
    trajectories, steps = [], []
    for _ in range(count):
        n = int(rng.integers(3, 9))
        bad = int(rng.integers(0, n - 1))
        contents = [f"step {i} working on it" for i in range(n)]
        contents[bad + 1] = "Traceback: KeyError in parse"
        agents = ["Planner" if i % 2 else "Coder" for i in range(n)]
        trajectories.append(make_trajectory(contents, agents=agents, task="parse the file"))
        steps.append(bad)
    return trajectories, steps


@pytest.mark.parametrize("params", VARIANTS)
def test_it_gives_one_distribution_per_rollout(params):
    trajectories, steps = _training_set()
    scorer = LearnedScorer(**params).fit(trajectories, steps)
    for trajectory, probs in zip(trajectories, scorer.predict_proba(trajectories), strict=True):
        assert probs.shape == (len(trajectory.steps),)
        assert probs.sum() == pytest.approx(1.0) and np.all(probs >= 0)


@pytest.mark.parametrize(
    "params", [{"objective": "pairwise"}, {"objective": "hazard"}, {"stacked": True}]
)
def test_it_learns_that_the_step_before_an_error_is_decisive(params):
    trajectories, steps = _training_set()
    scorer = LearnedScorer(C=1.0, **params).fit(trajectories, steps)
    held_out, truth = _training_set(20, seed=99)
    assert np.mean(scorer.predict(held_out) == np.array(truth)) > 0.8


@pytest.mark.parametrize("params", VARIANTS)
def test_it_trains_deterministically(params):
    trajectories, steps = _training_set()
    first = LearnedScorer(random_state=5, **params).fit(trajectories, steps)
    second = LearnedScorer(random_state=5, **params).fit(trajectories, steps)
    assert dump_scorer(first) == dump_scorer(second)


def test_it_gives_each_rollout_one_vote_in_the_pairwise_rows():
    x = np.arange(10, dtype=np.float64).reshape(-1, 1)  # a 2-step and an 8-step rollout
    rows, labels, weights = pairwise_rows(x, np.array([2, 8]), np.array([0, 3]))
    assert rows.shape == (2 * (1 + 7), 1) and labels.sum() == 8
    assert weights[:1].sum() == pytest.approx(1.0) and weights[1:8].sum() == pytest.approx(1.0)


def test_it_moves_mass_toward_the_likelier_agent():
    probabilities = np.array([0.35, 0.25, 0.2, 0.2])
    staged = agent_stage(probabilities, np.array([0, 1, 1, 1]))
    assert staged.sum() == pytest.approx(1.0)
    assert staged[0] < probabilities[0] and int(np.argmax(staged)) == 1


def test_it_ranks_within_the_rollout_only():
    relative = rollout_relative(np.array([5.0, 7.0, 5.0]))
    assert relative[:, 0].tolist() == [-2.0, 0.0, -2.0]
    assert relative[:, 2].tolist() == [0.0, 1.0, 0.0]
    # A shift of every logit changes nothing: only the rollout's own order counts.
    assert np.allclose(rollout_relative(np.array([15.0, 17.0, 15.0])), relative)


def test_it_marks_the_first_step_of_the_agent_that_answers():
    trajectory = make_trajectory(
        ["plan it", "Traceback: KeyError", "the answer is 42", "TERMINATE"],
        agents=["Planner", "Coder", "Writer", "Writer"],
    )
    matrix = structure_features(trajectory)
    column = STRUCTURE_FEATURES.index("answer_agent_first")
    assert matrix[:, column].tolist() == [0.0, 0.0, 1.0, 0.0]
    assert matrix[:, STRUCTURE_FEATURES.index("to_first_error")].tolist() == [
        -0.25,
        0.0,
        0.25,
        0.5,
    ]


def test_it_says_when_a_rollout_has_no_error():
    matrix = structure_features(make_trajectory(["a", "b", "c"]))
    assert matrix[:, STRUCTURE_FEATURES.index("no_error")].tolist() == [1.0, 1.0, 1.0]
