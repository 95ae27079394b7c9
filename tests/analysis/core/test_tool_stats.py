"""The tools table's counters: what a call is across formats, moving a rollout's share
in and out, and a failure lift that holds length fixed."""

from __future__ import annotations

import random

from analysis.core.tool_stats import (
    add_rollout,
    empty_tool_counts,
    rollout_tool_use,
    stratum_of,
    tool_rows,
)


def _row(counts, tool):
    return next(row for row in tool_rows(counts) if row["tool"] == tool)


def test_it_counts_a_call_once_whether_the_format_records_its_result_or_not():
    paired = rollout_tool_use(
        [("search", "tool_call", False, False), ("search", "tool_result", False, None)]
    )
    result_only = rollout_tool_use([("search", "tool_result", False, None)] * 2)
    call_only = rollout_tool_use([("search", "tool_call", True, None)])
    assert paired == {"search": [1, 0, 0]}
    assert result_only == {"search": [2, 0, 0]}
    assert call_only == {"search": [1, 1, 0]}  # a failed span is its call's error


def test_it_counts_errors_and_mutating_calls_per_tool_and_skips_steps_without_a_tool():
    use = rollout_tool_use(
        [
            ("book", "tool_call", False, True),
            ("book", "tool_result", True, None),
            ("book", "tool_call", False, True),
            ("book", "tool_result", False, None),
            ("", "message", True, None),
            ("get_user", "tool_call", False, False),
        ]
    )
    assert use == {"book": [2, 1, 2], "get_user": [1, 0, 0]}


def test_taking_back_every_share_leaves_the_counters_empty():
    counts = empty_tool_counts()
    shares = [
        ({"search": [2, 1, 0]}, stratum_of("shop", 4), True, False),
        ({"search": [1, 0, 0], "buy": [1, 0, 1]}, stratum_of("shop", 20), False, True),
        ({}, stratum_of("", 3), False, False),
    ]
    for tools, stratum, failed, succeeded in shares:
        add_rollout(
            counts, tools=tools, stratum=stratum, failed=failed, succeeded=succeeded, sign=1
        )
    search = _row(counts, "search")
    assert (search["calls"], search["errors"], search["rollouts"]) == (3, 1, 2)
    assert (search["failed"], search["judged"]) == (1, 2)
    assert _row(counts, "buy")["mutating"] == 1
    for tools, stratum, failed, succeeded in shares:
        add_rollout(
            counts, tools=tools, stratum=stratum, failed=failed, succeeded=succeeded, sign=-1
        )
    assert counts == empty_tool_counts()


def _project(seed: int, *, causes: bool) -> dict:
    """400 rollouts, long ones fail more; ``retry`` is called by long rollouts only, and
    when it ``causes`` failure its rollouts fail more than others of their length."""
    rng = random.Random(seed)
    counts = empty_tool_counts()
    for _ in range(400):
        length = rng.choice([5, 6, 7, 40, 45, 50])
        long = length >= 40
        calls_retry = long and rng.random() < 0.5
        risk = 0.7 if long else 0.2
        if causes and calls_retry:
            risk = 0.95
        failed = rng.random() < risk
        tools = {"search": [1, 0, 0]}
        if calls_retry:
            tools["retry"] = [1, 0, 0]
        add_rollout(
            counts,
            tools=tools,
            stratum=stratum_of("env", length),
            failed=failed,
            succeeded=not failed,
            sign=1,
        )
    return counts


def test_a_tool_that_only_comes_with_long_rollouts_has_an_adjusted_lift_near_one():
    for seed in range(5):
        retry = _row(_project(seed, causes=False), "retry")
        assert retry["lift_unadjusted"] > 1.4
        assert 0.8 < retry["lift_adjusted"] < 1.2


def test_a_tool_that_makes_rollouts_fail_keeps_a_lift_above_one_at_fixed_length():
    for seed in range(5):
        retry = _row(_project(seed, causes=True), "retry")
        assert retry["lift_adjusted"] > 1.2


def test_a_tool_every_rollout_calls_has_no_lift_and_failure_only_environments_none():
    counts = _project(0, causes=False)
    assert _row(counts, "search")["lift_unadjusted"] is None  # nothing to compare with
    failed_only = empty_tool_counts()
    for length in (3, 4, 30):
        add_rollout(
            failed_only,
            tools={"plan": [1, 0, 0]} if length > 3 else {},
            stratum=stratum_of("who-and-when", length),
            failed=True,
            succeeded=False,
            sign=1,
        )
    plan = _row(failed_only, "plan")
    assert (plan["lift_unadjusted"], plan["lift_adjusted"]) == (None, None)
    assert (plan["failed"], plan["judged"]) == (2, 2)


def test_it_lists_the_most_called_tools_first_up_to_the_cap():
    counts = empty_tool_counts()
    for number in range(5):
        add_rollout(
            counts,
            tools={f"t{number}": [number + 1, 0, 0]},
            stratum=stratum_of("", 2),
            failed=False,
            succeeded=False,
            sign=1,
        )
    assert [row["tool"] for row in tool_rows(counts, shown=3)] == ["t4", "t3", "t2"]


def test_it_marks_the_lifts_of_a_tool_few_rollouts_call():
    counts = _project(0, causes=False)
    assert not _row(counts, "retry")["few"]
    add_rollout(
        counts,
        tools={"rare": [1, 0, 0]},
        stratum=stratum_of("env", 5),
        failed=False,
        succeeded=True,
        sign=1,
    )
    rare = _row(counts, "rare")
    assert rare["few"] and rare["lift_unadjusted"] == 0.0
