"""Each deviation kind on a hand-made rollout, and the step it is placed on."""

from __future__ import annotations

from analysis.evaluation.tau_deviations import (
    EXTRA_MUTATING_ACTION,
    HANDOFF,
    MISSING_ACTION,
    MISSING_OUTPUT,
    NO_DEVIATION,
    WRONG_ARGUMENT,
    WRONG_TOOL,
    decisive_deviation,
)
from ingest.core.records import StepRecord

CANCEL_A = {"name": "cancel_reservation", "kwargs": {"reservation_id": "A"}}
LOOKUP_A = {"name": "get_reservation_details", "kwargs": {"reservation_id": "A"}}


def rollout(*actions: tuple[str, dict] | str) -> list[StepRecord]:
    """A user turn, then each action: a (tool, args) call with its result, or a message."""
    steps = [StepRecord(index=0, role="user", content="please sort out my trip")]
    for action in actions:
        index = len(steps)
        if isinstance(action, str):
            steps.append(StepRecord(index=index, role="assistant", content=action))
            continue
        name, args = action
        steps.append(
            StepRecord(
                index=index, role="assistant", kind="tool_call", tool_name=name, tool_args=args
            )
        )
        steps.append(StepRecord(index=index + 1, role="tool", kind="tool_result", tool_name=name))
    return steps


def test_it_calls_the_right_tool_with_other_values_a_wrong_argument():
    steps = rollout(("cancel_reservation", {"reservation_id": "B"}), "done")
    deviation = decisive_deviation(steps, [CANCEL_A])
    assert (deviation.kind, deviation.step) == (WRONG_ARGUMENT, 1)
    assert deviation.detail["arguments"] == ["reservation_id"]


def test_it_calls_a_transfer_to_a_human_a_handoff():
    steps = rollout(("transfer_to_human_agents", {"summary": "stuck"}))
    deviation = decisive_deviation(steps, [CANCEL_A])
    assert (deviation.kind, deviation.step) == (HANDOFF, 1)


def test_it_calls_another_mutating_tool_while_one_is_undone_a_wrong_tool():
    steps = rollout(("update_reservation_flights", {"reservation_id": "A"}))
    deviation = decisive_deviation(steps, [CANCEL_A])
    assert (deviation.kind, deviation.step) == (WRONG_TOOL, 1)
    assert deviation.detail["missing"] == ["cancel_reservation"]


def test_it_calls_a_change_on_top_of_the_right_ones_an_extra_mutating_action():
    steps = rollout(
        ("cancel_reservation", {"reservation_id": "A"}),
        ("book_reservation", {"flight": "X"}),
    )
    deviation = decisive_deviation(steps, [CANCEL_A])
    assert (deviation.kind, deviation.step) == (EXTRA_MUTATING_ACTION, 3)


def test_it_calls_a_repeat_of_a_done_action_an_extra_mutating_action():
    steps = rollout(
        ("cancel_reservation", {"reservation_id": "A"}),
        ("cancel_reservation", {"reservation_id": "A"}),
    )
    assert decisive_deviation(steps, [CANCEL_A]).kind == EXTRA_MUTATING_ACTION


def test_it_places_a_missing_action_after_the_last_matched_call():
    steps = rollout(
        ("get_reservation_details", {"reservation_id": "A"}),
        "This reservation cannot be cancelled.",
        "Anything else?",
    )
    deviation = decisive_deviation(steps, [LOOKUP_A, CANCEL_A])
    assert (deviation.kind, deviation.step) == (MISSING_ACTION, 3)


def test_it_places_a_missing_action_after_the_first_user_turn_when_nothing_matched():
    steps = rollout("I need your reservation id first.", "Goodbye.")
    deviation = decisive_deviation(steps, [CANCEL_A])
    assert (deviation.kind, deviation.step) == (MISSING_ACTION, 1)


def test_it_calls_an_unsaid_expected_output_a_missing_output_on_the_last_message():
    steps = rollout(("cancel_reservation", {"reservation_id": "A"}), "Cancelled.", "Bye.")
    deviation = decisive_deviation(steps, [CANCEL_A], outputs=["1,280"])
    assert (deviation.kind, deviation.step) == (MISSING_OUTPUT, 4)
    assert deviation.detail["outputs"] == ["1,280"]


def test_it_finds_an_output_said_with_other_commas():
    steps = rollout(("cancel_reservation", {"reservation_id": "A"}), "Refund: 1,280 dollars")
    assert decisive_deviation(steps, [CANCEL_A], outputs=["1280"]).kind == NO_DEVIATION
