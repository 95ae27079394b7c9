from __future__ import annotations

import pytest

from exports.core.chat import (
    MSG_UNANSWERED_CALL,
    RenderError,
    message_name,
    original_turn,
    prompt_owners,
    render_prefix,
    turn_bounds,
)
from ingest.core.records import StepRecord
from ingest.core.vocabulary import base_agent
from tests.exports.core.factories import (
    EXECUTOR_PROMPT,
    PROMPTS,
    airline,
    call,
    multi_agent,
    result,
    say,
    user,
)


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


def _contents(rendered) -> list[str]:
    return [m["content"] or "" for m in rendered.messages]


@pytest.mark.parametrize(("cut", "agent"), [(2, "planner"), (7, "executor"), (10, "verifier")])
def test_it_opens_with_the_trained_agents_own_system_prompt(cut, agent):
    rendered = render_prefix(multi_agent().steps, cut=cut, trained_agent=agent)
    assert rendered.messages[0] == {"role": "system", "content": PROMPTS[agent]}
    assert [m["role"] for m in rendered.messages].count("system") == 1


@pytest.mark.parametrize(("cut", "agent"), [(2, "planner"), (7, "executor"), (10, "verifier")])
def test_it_never_shows_another_agents_system_prompt(cut, agent):
    rendered = render_prefix(multi_agent().steps, cut=cut, trained_agent=agent)
    others = {prompt for name, prompt in PROMPTS.items() if name != agent}
    assert not any(prompt in text for text in _contents(rendered) for prompt in others)


def test_it_writes_the_executors_prefix_from_its_point_of_view():
    rendered = render_prefix(multi_agent().steps, cut=7, trained_agent="executor")
    assert rendered.messages == [
        {"role": "system", "content": EXECUTOR_PROMPT},
        {"role": "user", "content": "Book the cheapest flight from SFO to JFK on May 3."},
        {
            "role": "user",
            "content": "1. Search flights SFO-JFK on May 3. 2. Book the cheapest.",
            "name": "planner",
        },
        {"role": "user", "content": "Carry out the plan: search, then book the cheapest flight."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {
                        "name": "search_flights",
                        "arguments": '{"from": "SFO", "to": "JFK"}',
                    },
                }
            ],
            "weight": 0,
        },
        {"role": "tool", "tool_call_id": "c1", "content": multi_agent().steps[6].content},
    ]
    assert rendered.sources == [[3], [1], [2], [4], [5], [6]]


def test_it_shows_other_agents_tool_calls_as_context_it_did_not_write():
    rendered = render_prefix(multi_agent().steps, cut=10, trained_agent="verifier")
    assert "assistant" not in {m["role"] for m in rendered.messages}
    assert "tool" not in {m["role"] for m in rendered.messages}
    assert {"role": "user", "content": 'book_flight({"flight": "UA2"})', "name": "executor"} in (
        rendered.messages
    )
    assert rendered.messages[-1] == {
        "role": "user",
        "content": '{"booked": "UA2"}',
        "name": "book_flight",
    }


def test_a_system_prompt_belongs_to_the_agent_it_names():
    steps = multi_agent().steps
    steps[0] = StepRecord(
        index=0, role="system", kind="system", content="Verify.", agent="verifier"
    )
    owners = prompt_owners(steps, cut=10, trained_agent="verifier")
    assert owners == {9: "verifier", 3: "executor", 0: "verifier"}
    rendered = render_prefix(steps, cut=2, trained_agent="planner")
    assert [m["role"] for m in rendered.messages] == ["user"]


def test_a_single_agent_rollout_renders_as_before():
    rendered = render_prefix(airline().steps, cut=5, trained_agent="assistant")
    assert rendered.messages == [
        {"role": "system", "content": "You are an airline agent."},
        {"role": "user", "content": "Please cancel my trip, I am ana_1."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "r1-c1",
                    "type": "function",
                    "function": {"name": "get_user", "arguments": '{"user_id": "ana_1"}'},
                }
            ],
            "weight": 0,
        },
        {"role": "tool", "tool_call_id": "r1-c1", "content": '{"reservations": ["GOOD", "WRONG"]}'},
        {"role": "user", "content": "Yes, go ahead."},
    ]
