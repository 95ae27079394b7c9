"""OpenAI chat JSONL: one conversation per line with the outcome fields we define."""

from __future__ import annotations

import json

import pytest

from ingest.core.errors import TraceParseError
from ingest.core.jsonio import MSG_BAD_JSON
from ingest.core.records import Outcome, StepKind
from ingest.parsers import detect_format, openai_chat
from ingest.parsers.openai_chat import MSG_BAD_OUTCOME
from tests.conftest import shared_file
from tests.ingest.parsers.parser_cases import FIXTURES, parse_bytes, parse_path

AIRLINE = FIXTURES / "openai_chat_airline.jsonl"


def test_it_reads_one_trajectory_per_line_with_exact_counts():
    records = parse_path("openai_chat", AIRLINE)
    assert [(r.external_id, len(r.steps)) for r in records] == [
        ("airline-7-0", 5),
        ("airline-7-1", 2),
        ("openai_chat_airline:3", 2),
    ]


def test_it_maps_the_defined_fields():
    record = parse_path("openai_chat", AIRLINE)[0]
    assert (record.task_id, record.environment, record.agent_system, record.policy_model) == (
        "airline/7",
        "airline",
        "tool-calling agent",
        "gpt-4o",
    )
    assert (record.outcome, record.reward) == (Outcome.FAILURE, 0.0)
    assert record.metadata["tools"][0]["function"]["name"] == "cancel_reservation"
    assert [s.kind for s in record.steps] == [
        StepKind.SYSTEM,
        StepKind.MESSAGE,
        StepKind.TOOL_CALL,
        StepKind.TOOL_RESULT,
        StepKind.MESSAGE,
    ]
    assert record.steps[3].is_error is True
    assert record.task_text == "Cancel reservation ABC123."


def test_it_takes_success_and_keeps_unknown_fields_in_metadata():
    second, third = parse_path("openai_chat", AIRLINE)[1:]
    assert second.outcome == Outcome.SUCCESS
    assert second.metadata["extra"] == {"run": "nightly-12"}
    assert third.outcome == Outcome.UNKNOWN
    assert third.external_id == "openai_chat_airline:3"


def test_it_reads_the_mast_example_with_an_outcome_object():
    records = parse_path("openai_chat", shared_file("mast_taxonomy/adamast/examples/traces.jsonl"))
    assert [(r.external_id, len(r.steps), r.outcome, r.reward) for r in records] == [
        ("demo-1", 2, Outcome.FAILURE, 0.0),
        ("demo-2", 2, Outcome.SUCCESS, 1.0),
    ]
    assert records[0].task_text == "Return the final calculation"
    assert records[0].metadata == {"system": "demo-calculator"}
    # The agent system is where the writer put it, so per-system calibration sees it.
    assert {r.agent_system for r in records} == {"demo-calculator"}


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        (
            {"agent": "planner-crew", "environment": "retail", "model": "m1", "task_id": 7},
            ("7", "retail", "planner-crew", "m1"),
        ),
        # A sentence under ``system`` is a prompt, not a name; non-text values are no error.
        ({"system": "You are a helpful agent.", "model": {"name": "x"}}, ("", "", "", "")),
    ],
)
def test_fields_left_out_are_read_from_the_metadata(metadata, expected):
    line = json.dumps({"messages": [{"role": "user", "content": "hi"}], "metadata": metadata})
    record = parse_bytes("openai_chat", line.encode())[0]
    assert (record.task_id, record.environment, record.agent_system, record.policy_model) == (
        expected
    )
    assert record.metadata == metadata


def test_the_lines_own_fields_win_over_the_metadata():
    line = {"messages": [], "agent": "top", "metadata": {"agent": "inner", "system": "other"}}
    assert parse_bytes("openai_chat", json.dumps(line).encode())[0].agent_system == "top"


@pytest.mark.parametrize(
    "line", [b'{"messages": [], "outcome": "meh"}', b'{"messages": [], "outcome": 3}']
)
def test_it_rejects_an_unknown_outcome(line):
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("openai_chat", line)
    assert (caught.value.message, caught.value.record, caught.value.field) == (
        MSG_BAD_OUTCOME,
        "line 1",
        "outcome",
    )


def test_it_names_the_line_of_a_malformed_record():
    data = b'{"messages": []}\n{"messages": [\n'
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("openai_chat", data)
    assert caught.value.record == "line 2"
    assert caught.value.message.startswith(MSG_BAD_JSON.split("{")[0])


# The same conversations saved as one JSON document: a list of them, or one object over
# several lines (json.dump(..., indent=2)), as scripts commonly write them.
CONVERSATION = {
    "id": "c-1",
    "messages": [
        {"role": "user", "content": "Book a table for two"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "t1",
                    "type": "function",
                    "function": {"name": "book", "arguments": '{"people": 2}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "Error: no table"},
        {"role": "assistant", "content": "Booked!"},
    ],
    "success": False,
}


def _document(value, indent=2) -> bytes:
    return json.dumps(value, indent=indent).encode()


@pytest.mark.parametrize("indent", [None, 2])
def test_it_reads_a_json_list_of_conversations(indent):
    second = {"messages": [{"role": "user", "content": "hi"}], "reward": 1}
    data = _document([CONVERSATION, second], indent)
    assert detect_format(data, "chats.json") == "openai_chat"
    records = parse_bytes("openai_chat", data, "chats.json")
    assert [(r.external_id, len(r.steps), r.outcome) for r in records] == [
        ("c-1", 4, Outcome.FAILURE),
        ("chats:1", 1, Outcome.SUCCESS),
    ]
    assert [s.kind for s in records[0].steps][1:3] == [StepKind.TOOL_CALL, StepKind.TOOL_RESULT]


@pytest.mark.parametrize("before", [b"", b"\n\n"])
def test_it_reads_one_conversation_spread_over_lines(before):
    data = before + _document({k: v for k, v in CONVERSATION.items() if k != "id"})
    assert detect_format(data, "one.json") == "openai_chat"
    [record] = parse_bytes("openai_chat", data, "one.json")
    assert (record.external_id, len(record.steps), record.outcome) == ("one", 4, Outcome.FAILURE)
    assert record.task_text == "Book a table for two"


def test_it_names_the_item_or_the_document_of_a_bad_field():
    bad = {**CONVERSATION, "success": "maybe"}
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("openai_chat", _document([CONVERSATION, bad]), "chats.json")
    assert (caught.value.record, caught.value.field) == ("item 1", "success")
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("openai_chat", _document(bad), "one.json")
    assert (caught.value.record, caught.value.field) == ("document", "success")


def test_an_empty_list_is_refused():
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("openai_chat", b"[]", "chats.json")
    assert caught.value.record == "document"


@pytest.mark.parametrize(
    "data",
    [
        # Messages deeper in the record (an inspect_ai sample, a wrapper) are not ours.
        b'[{"sample": {"messages": [{"role": "user", "content": "x"}]}}]',
        b'{"metadata": {"a": 1}, "history": [{"role": "user", "content": "x"}]}',
        b'{\n  "messages": "not a list"\n}',
    ],
)
def test_documents_without_leading_messages_are_not_taken(data):
    assert not openai_chat.sniff(data, "x.json")


def test_line_numbers_count_leading_blank_lines():
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("openai_chat", b'\n\n{"messages": [], "outcome": "meh"}\n')
    assert caught.value.record == "line 3"


def test_one_conversation_saved_as_its_bare_list_of_messages_is_one_rollout():
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Cancel ABC123."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "cancel_reservation", "arguments": "{\"id\": \"ABC123\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Error: not found"},
    ]  # fmt: skip
    data = json.dumps(messages, indent=2).encode()
    assert detect_format(data, "chat.json") == "openai_chat"
    (record,) = parse_bytes("openai_chat", data, "chat.json")
    assert (record.external_id, len(record.steps), record.outcome) == (
        "chat",
        4,
        Outcome.UNKNOWN,
    )
    assert record.task_text == "Cancel ABC123." and record.steps[3].is_error
    # A bad message is named in the one conversation the file is.
    messages[1] = {"role": "user", "content": 5}
    with pytest.raises(TraceParseError) as raised:
        parse_bytes("openai_chat", json.dumps(messages).encode(), "chat.json")
    assert (raised.value.record, raised.value.field) == ("document", "messages[1].content")


def _gemini_request(**fields):
    line = {
        "id": "g1",
        "outcome": "failure",
        "systemInstruction": {"parts": [{"text": "You are a travel concierge."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "A hotel in Vienna from 4 April."}]},
            {"role": "model", "parts": [{"functionCall": {"name": "search_hotels",
                                                          "args": {"city": "Vienna"}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "search_hotels",
                                                             "response": {"hotels": []}}}]},
        ],
        **fields,
    }  # fmt: skip
    return (json.dumps(line) + "\n").encode()


def test_it_reads_a_line_in_geminis_own_request_shape():
    body = _gemini_request()
    assert detect_format(body, "runs.jsonl") == "openai_chat"
    (record,) = parse_bytes("openai_chat", body)
    assert [(s.role, s.kind, s.tool_name) for s in record.steps] == [
        ("system", StepKind.SYSTEM, ""),
        ("user", StepKind.MESSAGE, ""),
        ("assistant", StepKind.TOOL_CALL, "search_hotels"),
        ("tool", StepKind.TOOL_RESULT, "search_hotels"),
    ]
    assert record.steps[0].content == "You are a travel concierge."
    assert "extra" not in record.metadata  # nothing of the request left unread


def test_a_bad_gemini_request_names_its_own_fields():
    with pytest.raises(TraceParseError) as bad_system:
        parse_bytes("openai_chat", _gemini_request(systemInstruction=7))
    assert bad_system.value.field == "systemInstruction"
    with pytest.raises(TraceParseError) as bad_part:
        unnamed = {"role": "model", "parts": [{"functionCall": {"args": {}}}]}
        parse_bytes("openai_chat", _gemini_request(contents=[unnamed]))
    assert (bad_part.value.field or "").startswith("contents[0]")
