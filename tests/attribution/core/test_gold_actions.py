"""Action-level analysis: the diff against gold actions and the regression, pure Python."""

from __future__ import annotations

import doctest
import subprocess
import sys

import numpy as np

from attribution.core import gold_actions
from attribution.core.gold_actions import (
    GoldAction,
    RolloutActions,
    ToolCall,
    analyse,
    diff_actions,
)
from tests.conftest import REPO_ROOT, TAU_AIRLINE


def test_its_examples_hold():
    assert doctest.testmod(gold_actions).failed == 0


def test_it_imports_no_django():
    code = "import sys, attribution.core.gold_actions; print(any(m.startswith('django') for m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


def test_it_matches_calls_regardless_of_key_order_and_integral_floats():
    gold = [GoldAction("book", {"a": 1, "b": [2.0]}, True)]
    diff = diff_actions([ToolCall(4, "book", {"b": [2], "a": 1.0}, True)], gold)
    assert (diff.mutating, diff.read_only, diff.decisive_step) == (0, 0, None)


def test_it_counts_missing_and_extra_actions_by_kind():
    gold = [GoldAction("get_user", {"id": 1}, False), GoldAction("cancel", {"id": 9}, True)]
    calls = [ToolCall(2, "get_user", {"id": 1}, False), ToolCall(3, "search", {}, False)]
    diff = diff_actions(calls, gold)
    assert (diff.mutating, diff.read_only) == (1, 1)
    assert diff.decisive_step is None
    assert diff.decisive_reason == "never called cancel as the gold actions do"


def test_it_marks_the_first_wrong_mutating_call_as_decisive():
    gold = [GoldAction("update", {"id": 1}, True)]
    calls = [ToolCall(5, "update", {"id": 2}, True), ToolCall(8, "cancel", {"id": 1}, True)]
    diff = diff_actions(calls, gold)
    assert diff.decisive_step == 5
    assert "arguments that no gold action has" in diff.decisive_reason


def test_it_needs_both_outcomes_for_the_regression():
    rollouts = [RolloutActions(i, True, [], []) for i in range(20)]
    result, diffs = analyse(rollouts)
    assert result.odds == [] and "at least" in result.message
    assert len(diffs) == 20


def test_it_finds_mutating_deviations_costlier_on_synthetic_data():
    rng = np.random.default_rng(0)
    rollouts = []
    for i in range(300):
        mutating, reads = int(rng.integers(0, 4)), int(rng.integers(0, 6))
        chance = 1 / (1 + np.exp(-(1.5 - 1.8 * mutating - 0.05 * reads)))
        gold = [GoldAction("book", {"n": k}, True) for k in range(mutating)]
        calls = [ToolCall(k, "get", {"n": k}, False) for k in range(reads)]
        rollouts.append(RolloutActions(i, bool(rng.random() < chance), calls, gold))
    result, _ = analyse(rollouts)
    mutating, read_only = result.odds
    assert mutating.odds_ratio < 0.35 and mutating.high < 1.0
    assert read_only.odds_ratio > 0.75
    assert mutating.low <= mutating.odds_ratio <= mutating.high


def test_it_reproduces_the_tau_bench_finding_on_real_rollouts():
    from pathlib import Path

    import pytest

    from ingest.parsers import tau_bench

    if not Path(TAU_AIRLINE).exists():
        pytest.skip("tau-bench data not present")
    with open(TAU_AIRLINE, "rb") as stream:
        records = list(tau_bench.parse(stream, filename=TAU_AIRLINE.name))
    rollouts = [
        RolloutActions(
            n,
            r.outcome == "success",
            [
                ToolCall(s.index, s.tool_name, s.tool_args, s.is_mutating)
                for s in r.steps
                if s.kind == "tool_call"
            ],
            gold_actions.gold_actions(r.metadata["info"]["task"]["actions"]) or [],
        )
        for n, r in enumerate(records)
    ]
    result, _ = analyse(rollouts)
    mutating, read_only = result.odds
    assert result.with_gold == 200 and result.successes == 84
    # Each extra mutating deviation cuts the odds far more than a read-only one.
    assert mutating.odds_ratio < 0.4 < read_only.odds_ratio
