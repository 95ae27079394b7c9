"""The one step vocabulary: every app that asks "is this an agent action" gets one answer."""

from __future__ import annotations

import pytest

from ingest.core.records import StepRecord
from ingest.core.vocabulary import acting_agent, is_agent_action, is_mutating_tool, is_user_turn

GROUP_CHAT_EXPERT = StepRecord(index=4, role="user", agent="Verification_Expert", content="ok")
USER_TURN = StepRecord(index=1, role="user", agent="", content="book me a flight")
HUMAN_TURN = StepRecord(index=1, role="human", agent="human", content="hi")
SYSTEM = StepRecord(index=0, role="system", kind="system", content="Be kind.")
TOOL_RESULT = StepRecord(index=3, role="tool", kind="tool_result", content="{}")
CALL = StepRecord(index=2, role="assistant", kind="tool_call", tool_name="book_reservation")


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        (GROUP_CHAT_EXPERT, True),
        (USER_TURN, False),
        (HUMAN_TURN, False),
        (SYSTEM, False),
        (TOOL_RESULT, False),
        (CALL, True),
    ],
)
def test_it_tells_agent_actions_from_other_turns(step, expected):
    assert is_agent_action(step) is expected


def test_it_counts_a_group_chat_expert_speaking_as_user_as_no_user_turn():
    assert not is_user_turn(GROUP_CHAT_EXPERT)
    assert is_user_turn(USER_TURN) and is_user_turn(HUMAN_TURN)


def test_it_names_the_acting_agent_without_its_role_suffix():
    step = StepRecord(index=0, role="assistant", agent="Orchestrator (-> WebSurfer)")
    assert acting_agent(step) == "Orchestrator"
    assert acting_agent(CALL) == "assistant"


def test_it_tells_mutating_tools_by_their_verb():
    assert is_mutating_tool("cancelOrder") is True
    assert is_mutating_tool("search_flights") is False
    assert is_mutating_tool("frobnicate") is None


def test_every_app_asks_the_same_rule():
    from analysis.core import selection
    from attribution.core import signals
    from exports.core import builders

    assert selection.is_agent_action is is_agent_action
    assert builders.is_agent_action is is_agent_action
    assert signals.is_user_turn is is_user_turn
