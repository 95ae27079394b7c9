from __future__ import annotations

import pytest

from exports.core.chat import (
    MSG_UNANSWERED_CALL,
    RenderError,
    message_name,
    original_turn,
    render_prefix,
    turn_bounds,
)
from ingest.core.records import StepRecord
from ingest.core.vocabulary import base_agent
from tests.exports.core.factories import airline, call, result, say, user


def test_it_renders_a_tool_call_and_its_answer():
    rendered = render_prefix(airline().steps, cut=5, trained_agent="assistant")
    roles = [m["role"] for m in rendered.messages]
    assert roles == ["system", "user", "assistant", "tool", "user"]
    assert rendered.messages[2]["tool_calls"][0]["function"] == {
        "name": "get_user",
        "arguments": '{"user_id": "ana_1"}',
    }
    assert rendered.messages[3]["tool_call_id"] == rendered.messages[2]["tool_calls"][0]["id"]


def test_it_gives_prefix_assistant_turns_weight_zero():
    rendered = render_prefix(airline().steps, cut=5, trained_agent="assistant")
    assert all(m.get("weight") == 0 for m in rendered.messages if m["role"] == "assistant")


def test_it_stops_before_the_cut():
    rendered = render_prefix(airline().steps, cut=5, trained_agent="assistant")
    assert rendered.last_source_step == 4


def test_it_refuses_a_prefix_with_an_unanswered_call():
    steps = [user(0, "hi"), call(1, "f", {}, "c1"), say(2, "no result came")]
    with pytest.raises(RenderError, match=MSG_UNANSWERED_CALL):
        render_prefix(steps, cut=3, trained_agent="assistant")


def test_it_groups_the_calls_of_one_message_into_one_turn():
    steps = [
        user(0, "hi"),
        call(1, "a", {}, "c1", message=1),
        call(2, "b", {}, "c2", message=1),
        result(3, "A", "c1"),
        result(4, "B", "c2"),
    ]
    assert turn_bounds(steps, 2) == (1, 3)
    rendered = render_prefix(steps, cut=5, trained_agent="assistant")
    assert [len(m.get("tool_calls", [])) for m in rendered.messages] == [0, 2, 0, 0]


def test_it_makes_reused_call_ids_unique():
    steps = [
        user(0, "hi"),
        call(1, "a", {}, "dup"),
        result(2, "A", "dup"),
        call(3, "b", {}, "dup"),
        result(4, "B", "dup"),
    ]
    rendered = render_prefix(steps, cut=5, trained_agent="assistant")
    ids = [m["tool_calls"][0]["id"] for m in rendered.messages if m.get("tool_calls")]
    answers = [m["tool_call_id"] for m in rendered.messages if m["role"] == "tool"]
    assert len(set(ids)) == 2 and answers == ids


def test_it_makes_ids_for_calls_that_have_none():
    steps = [user(0, "hi"), call(1, "a", {}), result(2, "A", name="a")]
    rendered = render_prefix(steps, cut=3, trained_agent="assistant")
    assert rendered.messages[1]["tool_calls"][0]["id"] == "call_step_1"
    assert rendered.messages[2]["tool_call_id"] == "call_step_1"


def test_it_speaks_for_other_agents_as_named_users():
    steps = [
        user(0, "task"),
        say(1, "plan", "Orchestrator (thought)"),
        say(2, "searched", "WebSurfer"),
    ]
    rendered = render_prefix(steps, cut=3, trained_agent="Orchestrator")
    assert rendered.messages[1]["role"] == "assistant"
    assert rendered.messages[2] == {"role": "user", "content": "searched", "name": "WebSurfer"}


def test_it_opens_with_the_task_when_no_user_spoke():
    steps = [say(0, "thinking", "Planner")]
    rendered = render_prefix(steps, cut=1, trained_agent="Planner", task_text="Find X.")
    assert rendered.messages[0] == {"role": "user", "content": "Find X."}


def test_it_keeps_a_late_system_message_as_a_user_turn():
    steps = [user(0, "hi"), StepRecord(index=1, role="system", kind="system", content="note")]
    rendered = render_prefix(steps, cut=2, trained_agent="assistant")
    assert rendered.messages[1] == {"role": "user", "content": "note", "name": "system"}


def test_it_names_agents_the_way_the_format_allows():
    assert base_agent("Orchestrator (-> WebSurfer)") == "Orchestrator"
    assert message_name("Web Surfer!") == "Web_Surfer"


def test_it_returns_the_original_turn_with_its_calls():
    turn = original_turn(airline().steps, 5)
    assert turn["tool_calls"][0]["function"]["arguments"] == '{"id": "WRONG"}'
