"""Labels without hand-labelling: the gold-action rule.

The rollouts are hand-made in tau-bench's shape (system prompt, user turns, assistant tool
calls, tool results), as the tau-bench parser turns them into steps.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attribution.core.gold_actions import GoldAction, gold_actions
from attribution.core.label_sources import (
    KIND_MISSING_ACTION,
    KIND_MUTATING_CALL,
    MSG_NO_DEVIATION,
    MSG_READ_ONLY_ONLY,
    SOURCE_GOLD_ACTIONS,
    SOURCE_SIBLING_DIVERGENCE,
    gold_action_label,
    may_calibrate,
    no_label_reason,
    outcome_neutral_tools,
)
from ingest.core.records import StepRecord, TrajectoryRecord

TAU_AIRLINE = Path("../shared/data/tau_bench/historical_trajectories/gpt-4o-airline.json")
GOLD = [
    GoldAction("get_reservation_details", {"reservation_id": "ABC123"}, False),
    GoldAction("cancel_reservation", {"reservation_id": "ABC123"}, True),
]


def _rollout(*turns, task="airline/1", name="r"):
    """Steps from ("user", text), ("assistant", text), ("call", tool, args, result)."""
    steps = [StepRecord(index=0, role="system", kind="system", content="# Airline policy")]
    for turn in turns:
        if turn[0] == "call":
            _, tool, args, result = turn
            call_id = f"call-{len(steps)}"
            steps.append(
                StepRecord(
                    index=len(steps), role="assistant", kind="tool_call", agent="assistant",
                    tool_name=tool, tool_args=args, tool_call_id=call_id,
                )
            )  # fmt: skip
            steps.append(
                StepRecord(
                    index=len(steps), role="tool", kind="tool_result", agent="tool",
                    tool_name=tool, content=result, tool_call_id=call_id,
                    is_error=result.startswith("Error"),
                )
            )  # fmt: skip
        else:
            role, text = turn
            steps.append(StepRecord(index=len(steps), role=role, content=text, agent=role))
    return TrajectoryRecord(external_id=name, task_id=task, steps=steps)


LOOKUP = ("call", "get_reservation_details", {"reservation_id": "ABC123"}, '{"status": "ok"}')
ASK = ("user", "Please cancel my reservation ABC123.")
CONFIRM = ("assistant", "Shall I cancel ABC123? Please confirm.")
YES = ("user", "Yes.")


def test_it_labels_the_first_mutating_call_no_gold_action_has():
    rollout = _rollout(
        ASK, LOOKUP, CONFIRM, YES, ("call", "cancel_reservation", {"reservation_id": "XYZ9"}, "ok")
    )
    label = gold_action_label(rollout, GOLD)
    assert (label.step, label.kind, label.source) == (6, KIND_MUTATING_CALL, SOURCE_GOLD_ACTIONS)
    assert label.reason == "cancel_reservation called with arguments that no gold action has"
    assert label.to_label_record().source == "gold_actions"


def test_it_gives_no_label_for_a_read_only_deviation():
    rollout = _rollout(
        ASK,
        LOOKUP,
        ("call", "get_user_details", {"user_id": "mia_1"}, "{}"),
        CONFIRM,
        YES,
        ("call", "cancel_reservation", {"reservation_id": "ABC123"}, "ok"),
    )
    assert gold_action_label(rollout, GOLD) is None
    assert no_label_reason(rollout, GOLD) == MSG_READ_ONLY_ONLY


def test_it_gives_no_label_without_a_deviation():
    rollout = _rollout(
        ASK,
        LOOKUP,
        CONFIRM,
        YES,
        ("call", "cancel_reservation", {"reservation_id": "ABC123"}, "ok"),
    )
    assert gold_action_label(rollout, GOLD) is None
    assert no_label_reason(rollout, GOLD) == MSG_NO_DEVIATION


def test_it_skips_a_mutating_call_whose_result_is_an_error():
    rollout = _rollout(
        ASK,
        LOOKUP,
        ("call", "cancel_reservation", {"reservation_id": "ABC123", "x": 1}, "Error: bad x"),
        ("call", "cancel_reservation", {"reservation_id": "ABC123"}, "ok"),
    )
    assert gold_action_label(rollout, GOLD) is None


def test_it_does_not_compare_prose_arguments():
    gold = [
        GoldAction("transfer_to_human_agents", {"summary": "The user wants a refund now"}, True)
    ]
    rollout = _rollout(
        ("call", "transfer_to_human_agents", {"summary": "User asks to get a refund today"}, "ok")
    )
    assert gold_action_label(rollout, gold) is None


def test_it_labels_the_first_point_where_a_missing_mutating_action_was_possible():
    rollout = _rollout(
        ("user", "Hi, I need help with a booking."),
        ("assistant", "Sure, what is the reservation number?"),
        ASK,
        LOOKUP,
        ("assistant", "I am sorry, this reservation cannot be cancelled."),
        ("user", "OK, bye."),
    )
    label = gold_action_label(rollout, GOLD)
    # The lookup (step 4) made the gold action before the cancel and the reservation id was
    # known from step 3; step 6 is the agent's next turn, where it refused instead.
    assert (label.step, label.kind) == (6, KIND_MISSING_ACTION)
    assert (
        label.reason == "could have called cancel_reservation as the gold actions do, and did not"
    )


def test_it_waits_for_the_missing_actions_values_to_appear():
    gold = [GoldAction("cancel_reservation", {"reservation_id": "ABC123"}, True)]
    rollout = _rollout(
        ("user", "Hi, I need to cancel."),
        ("assistant", "Which reservation?"),
        ("user", "It is ABC123."),
        ("assistant", "I cannot do that."),
    )
    assert gold_action_label(rollout, gold).step == 4


def test_it_treats_deviations_that_successes_make_too_as_neutral():
    transfer = ("call", "transfer_to_human_agents", {"summary": "x"}, "Transfer successful")
    cancel = ("call", "cancel_reservation", {"reservation_id": "XYZ9"}, "ok")
    rollouts = [(_rollout(ASK, transfer), [], True)] * 10
    rollouts += [(_rollout(ASK, cancel), [], False)] * 5 + [(_rollout(ASK, transfer), [], False)]
    neutral = outcome_neutral_tools(rollouts)
    assert neutral == {"transfer_to_human_agents"}
    assert gold_action_label(_rollout(ASK, transfer), [], neutral_tools=neutral) is None
    assert gold_action_label(_rollout(ASK, cancel), [], neutral_tools=neutral).step == 2


def test_it_judges_no_tool_neutral_with_few_successes():
    transfer = ("call", "transfer_to_human_agents", {"summary": "x"}, "ok")
    rollouts = [(_rollout(ASK, transfer), [], True)] * 3 + [(_rollout(ASK), [], False)]
    assert outcome_neutral_tools(rollouts) == frozenset()


def test_it_keeps_sibling_labels_out_of_calibration():
    assert not may_calibrate(SOURCE_SIBLING_DIVERGENCE)
    assert not may_calibrate(SOURCE_GOLD_ACTIONS)
    assert may_calibrate(SOURCE_GOLD_ACTIONS, gold_actions_calibrate=True)
    assert may_calibrate("human") and may_calibrate("dataset")


def test_it_labels_most_airline_failures_and_few_held_out_successes():
    from ingest.parsers import tau_bench

    if not TAU_AIRLINE.exists():
        pytest.skip("tau-bench data not present")
    with TAU_AIRLINE.open("rb") as stream:
        records = list(tau_bench.parse(stream, filename=TAU_AIRLINE.name))
    items = [
        (r, gold_actions(r.metadata["info"]["task"]["actions"]) or [], r.outcome == "success")
        for r in records
    ]
    tasks = sorted({r.task_id for r in records})
    rng = np.random.default_rng(0)
    flagged_successes, labelled_failures = [], []
    for _ in range(5):
        # Neutral tools from half of the tasks, labels judged on the other half.
        half = set(rng.permutation(tasks)[: len(tasks) // 2].tolist())
        neutral = outcome_neutral_tools([item for item in items if item[0].task_id in half])
        for rollout, gold, succeeded in items:
            if rollout.task_id in half:
                continue
            labelled = gold_action_label(rollout, gold, neutral_tools=neutral) is not None
            (flagged_successes if succeeded else labelled_failures).append(labelled)
    assert np.mean(flagged_successes) < 0.1
    assert np.mean(labelled_failures) > 0.8
