"""The airline gold-label set and the transfer experiment of the offline evaluation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attribution.core.view import scoring_view
from attribution.evaluation.airline import AIRLINE_FILE, AIRLINE_NAME, load_airline_gold
from attribution.evaluation.discussion import transfer_section
from attribution.evaluation.experiments import LabelledSet
from attribution.evaluation.transfer import (
    OTHER_SETS,
    evaluate_transfer,
    shipped_scorer_verdict,
)
from tests.attribution.core.conftest import make_trajectory

SHARED = Path("../shared/data")


def _toy(name, bad_step, count=30):
    views = [
        scoring_view(
            make_trajectory(
                [f"{name} step {j}" + (" Error" if j == bad_step + 1 else "") for j in range(6)]
            )
        )
        for _ in range(count)
    ]
    steps = np.full(count, bad_step)
    return LabelledSet(name, views, steps, [""] * count, [f"{name}-{i}" for i in range(count)])


def test_it_labels_airline_failures_by_the_gold_action_rule():
    if not (SHARED / AIRLINE_FILE).exists():
        pytest.skip("tau-bench data not present")
    data = load_airline_gold(SHARED)
    assert data.name == AIRLINE_NAME
    assert 100 <= len(data.views) <= 116  # only failures, only those the rule labels
    assert all(0 <= y < v.n_steps for y, v in zip(data.steps, data.views, strict=True))
    # Four trials per task: the grouped splits have something to keep together.
    assert len(set(data.tasks)) < len(data.views)


def test_it_compares_the_shipped_scorer_with_the_heuristic_on_every_pair():
    sets = [_toy("a", 1), _toy("b", 3)]
    transfer = evaluate_transfer(sets, n_splits=5)
    assert [(r["source"], r["target"]) for r in transfer["rows"]] == [("a", "b"), ("b", "a")]
    for row in transfer["rows"]:
        assert set(row) == {"source", "target", "learned", "heuristic"}
        assert row["learned"]["coverage"]["n"] == 5
    verdict = shipped_scorer_verdict(transfer)
    assert verdict["pairs"] == 2
    table = transfer_section(transfer)
    assert sum(line.startswith("| a | b |") for line in table) == 1


def test_with_three_sets_each_target_is_also_scored_by_a_scorer_of_all_the_others(monkeypatch):
    from attribution.core.scorers.learned import LearnedScorer

    trained_on: list[list[int]] = []
    fit = LearnedScorer.fit

    def recording_fit(self, trajectories, decisive_steps):
        trained_on.append(sorted(set(np.asarray(decisive_steps).tolist())))
        return fit(self, trajectories, decisive_steps)

    monkeypatch.setattr(LearnedScorer, "fit", recording_fit)
    sets = [_toy("a", 1, count=20), _toy("b", 3, count=30), _toy("c", 2, count=40)]
    transfer = evaluate_transfer(sets, n_splits=3)
    others = [r for r in transfer["rows"] if r["source"] == OTHER_SETS]
    assert [r["target"] for r in others] == ["a", "b", "c"]
    # The last three fits are the "all other sets" ones: b and c, a and c, a and b.
    assert trained_on[-3:] == [[2, 3], [1, 2], [1, 3]]
    assert all(r["learned"]["coverage"]["n"] == 3 for r in others)
    verdict = shipped_scorer_verdict(transfer)
    assert (verdict["pairs"], verdict["others"]) == (6, 3)
    assert sum(line.startswith(f"| {OTHER_SETS} | c |") for line in transfer_section(transfer)) == 1


def test_it_makes_no_claim_for_a_system_whose_labels_are_left_out():
    from attribution.evaluation.discussion import per_system_section
    from attribution.evaluation.per_system import evaluate_per_system

    result = evaluate_per_system([_toy("a", 1), _toy("b", 3)], n_splits=3)
    kinds = {(r["system"], r["calibration"]) for r in result["rows"]}
    assert kinds == {
        (system, kind)
        for system in "ab"
        for kind in ("own_scorer", "per_system", "pooled", "pooled_without_own")
    }
    assert all(c["claim_rate"] == 0.0 for c in result["claims_without_own_labels"])
    section = per_system_section(result)
    assert "claimed coverage for it in 0 of 4" in section[-3]
    assert section[-1].startswith("Removal with each system's own scorer against one scorer")
