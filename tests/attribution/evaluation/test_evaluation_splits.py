"""The evaluation keeps tasks on one side of every split and refits scorers per split."""

from __future__ import annotations

import numpy as np

from attribution.core.view import scoring_view
from attribution.evaluation.experiments import LabelledSet, ScorerSuite, _three_way, split_sizes
from tests.attribution.core.conftest import make_trajectory


def test_it_never_puts_a_task_in_two_parts():
    tasks = [f"task-{i // 3}" for i in range(90)]
    rng = np.random.default_rng(0)
    for _ in range(20):
        parts = _three_way(tasks, split_sizes(90, 0.4, 0.3, 19), rng)
        seen = [{tasks[i] for i in part} for part in parts]
        assert not (seen[0] & seen[1]) and not (seen[0] & seen[2]) and not (seen[1] & seen[2])
        assert sorted(i for part in parts for i in part) == list(range(90))


def test_it_fits_a_fresh_scorer_on_each_training_part():
    views = [scoring_view(make_trajectory([f"s{j}" for j in range(5)])) for _ in range(20)]
    data = LabelledSet(
        "toy", views, np.array([0] * 10 + [4] * 10), [""] * 20, [str(i) for i in range(20)]
    )
    suite = ScorerSuite(data)
    early = suite.fit_predict("constant_position", list(range(10)), [15])[0]
    late = suite.fit_predict("constant_position", list(range(10, 20)), [5])[0]
    assert int(np.argmax(early)) == 0 and int(np.argmax(late)) == 4
