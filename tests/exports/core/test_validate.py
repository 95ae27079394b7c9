from __future__ import annotations

from exports.core.validate import chat_problems, leakage_problems
from tests.exports.core.factories import airline

CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


def test_it_accepts_a_valid_conversation():
    messages = [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [CALL], "weight": 0},
        {"role": "tool", "tool_call_id": "c1", "content": "{}"},
        {"role": "assistant", "content": "done"},
    ]
    assert chat_problems(messages, target_last=True) == []


def test_it_rejects_a_system_message_after_the_start():
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "system", "content": "late"},
        {"role": "assistant", "content": "ok"},
    ]
    assert chat_problems(messages, target_last=True) == [
        "messages[1]: system message after the conversation started"
    ]


def test_it_rejects_an_unanswered_call():
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "assistant", "content": "ok"},
    ]
    assert "has no tool message" in chat_problems(messages, target_last=True)[0]


def test_it_rejects_a_tool_message_for_an_unknown_call():
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "zz", "content": "x"},
        {"role": "assistant", "content": "ok"},
    ]
    assert chat_problems(messages, target_last=True) == [
        "messages[1]: tool message answers no open tool call ('zz')"
    ]


def test_it_lets_the_trained_turn_call_tools_unanswered():
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
    ]
    assert chat_problems(messages, target_last=True) == []
    assert chat_problems(messages, target_last=False) == ["end: tool call c1 has no tool message"]


def test_it_wants_the_trained_turn_last_and_weighted():
    assert "the last message must be the assistant turn being trained" in chat_problems(
        [{"role": "user", "content": "hi"}], target_last=True
    )
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "x", "weight": 0},
    ]
    assert chat_problems(messages, target_last=True) == [
        "the trained assistant turn must not have weight 0"
    ]


def test_it_rejects_arguments_that_are_not_json_text():
    bad = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [bad]},
    ]
    assert chat_problems(messages, target_last=True) == [
        "messages[1].tool_calls[0]: function.arguments must be a JSON string"
    ]


def test_it_rejects_a_reused_call_id():
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "content": "x"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
    ]
    assert chat_problems(messages, target_last=True) == [
        "messages[3].tool_calls[0]: id c1 is used twice"
    ]


def test_it_finds_text_from_the_decisive_step_in_a_prefix():
    steps = airline().steps
    prefix = [
        {"role": "user", "content": "Please cancel my trip, I am ana_1."},
        {"role": "assistant", "content": "Reservation WRONG is cancelled."},
    ]
    assert leakage_problems(prefix, steps, 5) == ["messages[1] holds the text of step 5 or later"]


def test_it_finds_a_later_call_id_in_a_prefix():
    steps = airline().steps
    prefix = [{"role": "tool", "tool_call_id": "r1-c2", "content": "x"}]
    assert leakage_problems(prefix, steps, 5) == [
        "messages[0] holds tool call r1-c2 of step 5 or later"
    ]


def test_it_allows_text_that_also_appeared_before_the_cut():
    steps = airline().steps
    prefix = [{"role": "user", "content": "Please cancel my trip, I am ana_1."}]
    assert leakage_problems(prefix, steps + [], 5) == []
