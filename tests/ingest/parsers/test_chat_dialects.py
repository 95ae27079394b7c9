"""Anthropic, Gemini and older OpenAI messages read as tool calls and results, not as
text (ingest.core.chat_dialects), through the OpenAI chat parser that a user would use."""

from __future__ import annotations

import json

import pytest

from ingest.core.errors import TraceParseError
from ingest.core.records import StepKind
from tests.ingest.parsers.parser_cases import parse_bytes


def _steps(messages: list[dict]) -> list:
    line = json.dumps({"id": "r1", "messages": messages, "outcome": "failure"})
    return parse_bytes("openai_chat", line.encode())[0].steps


def _shape(steps) -> list[tuple]:
    return [(s.kind, s.agent, s.tool_name, s.is_error) for s in steps]


ANTHROPIC = [
    {"role": "user", "content": "Refund order 1234."},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "I should look the order up first."},
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_order", "input": {"id": 1234}},
            {"type": "tool_use", "id": "toolu_2", "name": "refund", "input": {"id": 1234}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "shipped"},
            {
                "type": "tool_result",
                "tool_use_id": "toolu_2",
                "content": [{"type": "text", "text": "refund window closed"}],
                "is_error": True,
            },
            {"type": "text", "text": "Why did that fail?"},
        ],
    },
]


def test_it_reads_anthropic_tool_use_and_tool_result_blocks():
    steps = _steps(ANTHROPIC)
    assert _shape(steps) == [
        (StepKind.MESSAGE, "user", "", False),
        (StepKind.TOOL_CALL, "assistant", "get_order", False),
        (StepKind.TOOL_CALL, "assistant", "refund", False),
        (StepKind.TOOL_RESULT, "tool", "get_order", False),
        # The block's own flag says it failed, whatever its words say.
        (StepKind.TOOL_RESULT, "tool", "refund", True),
        (StepKind.MESSAGE, "user", "", False),
    ]
    assert steps[1].tool_args == {"id": 1234}
    assert steps[1].content == "I should look the order up first.\nLet me check."
    assert steps[4].content == "refund window closed"
    assert steps[5].content == "Why did that fail?"
    # Steps point at the message of the file they came from.
    assert [s.metadata["message_index"] for s in steps] == [0, 1, 1, 2, 2, 2]


def test_it_reads_gemini_parts():
    steps = _steps(
        [
            {"role": "user", "parts": [{"text": "Weather in Oslo?"}]},
            {
                "role": "model",
                "parts": [{"functionCall": {"name": "weather", "args": {"city": "Oslo"}}}],
            },
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "weather", "response": {"t": -3}}}],
            },
            {"role": "model", "parts": [{"text": "It is -3 degrees."}]},
        ]
    )
    assert _shape(steps) == [
        (StepKind.MESSAGE, "user", "", False),
        (StepKind.TOOL_CALL, "assistant", "weather", False),
        (StepKind.TOOL_RESULT, "tool", "weather", False),
        (StepKind.MESSAGE, "assistant", "", False),
    ]
    assert steps[1].tool_args == {"city": "Oslo"} and json.loads(steps[2].content) == {"t": -3}


def test_it_reads_older_openai_function_calls_and_the_developer_role():
    steps = _steps(
        [
            {"role": "developer", "content": "Be brief."},
            {"role": "assistant", "content": None,
             "function_call": {"name": "lookup", "arguments": "{\"q\": \"x\"}"}},
            {"role": "function", "name": "lookup", "content": "Error: no such key"},
        ]
    )  # fmt: skip
    assert _shape(steps) == [
        (StepKind.SYSTEM, "system", "", False),
        (StepKind.TOOL_CALL, "assistant", "lookup", False),
        (StepKind.TOOL_RESULT, "tool", "lookup", True),
    ]
    assert steps[1].tool_args == {"q": "x"}


def test_pictures_are_not_stored_as_their_bytes():
    picture = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 5000}}
    steps = _steps([{"role": "user", "content": [{"type": "text", "text": "See:"}, picture]}])
    assert steps[0].content == "See:\n[image]"


@pytest.mark.parametrize(
    ("message", "field"),
    [
        (
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "input": {}}]},
            "messages[1].content[0].name",
        ),
        (
            {"role": "model", "parts": [{"functionCall": {"args": {}}}]},
            "messages[1].parts[0].functionCall.name",
        ),
        ({"role": "assistant", "function_call": {"name": 3}}, "messages[1].function_call.name"),
    ],
)
def test_a_call_without_a_name_is_refused_naming_the_field_as_the_file_has_it(message, field):
    with pytest.raises(TraceParseError) as raised:
        _steps([{"role": "user", "content": "hi"}, message])
    assert raised.value.field == field and raised.value.record == "line 1"


def test_openai_messages_are_read_as_before():
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": "hello", "name": "helper"},
    ]
    assert _shape(_steps(messages)) == [
        (StepKind.MESSAGE, "user", "", False),
        (StepKind.MESSAGE, "helper", "", False),
    ]


def test_an_anthropic_request_s_system_prompt_is_the_first_step():
    line = {
        "model": "claude-sonnet",
        "system": [{"type": "text", "text": "You are a refund agent."}],
        "messages": ANTHROPIC,
    }
    record = parse_bytes("openai_chat", json.dumps(line).encode())[0]
    assert (record.steps[0].kind, record.steps[0].content) == (
        StepKind.SYSTEM,
        "You are a refund agent.",
    )
    assert [s.index for s in record.steps] == list(range(7))
    assert record.policy_model == "claude-sonnet" and "extra" not in record.metadata
    # The file's messages keep their own positions in errors and metadata.
    assert record.steps[1].metadata["message_index"] == 0
    bad = {"system": {"text": "x"}, "messages": []}
    with pytest.raises(TraceParseError) as raised:
        parse_bytes("openai_chat", json.dumps(bad).encode())
    assert raised.value.field == "system"


def test_anthropic_requests_saved_as_one_json_list_are_detected():
    from ingest.parsers import detect_format

    request = {
        "model": "claude-sonnet",
        "system": [{"type": "text", "text": 'You are "careful".'}],
        "messages": ANTHROPIC,
    }
    document = json.dumps([request, request], indent=2).encode()
    assert detect_format(document, "requests.json") == "openai_chat"
    records = parse_bytes("openai_chat", document, "requests.json")
    assert [len(r.steps) for r in records] == [7, 7]
