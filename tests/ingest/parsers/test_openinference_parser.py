"""OpenInference span JSONL (Phoenix exports): nested and flat attributes, tool spans,
agent names, outcome from the root status, and broken trees."""

from __future__ import annotations

import json

import pytest

from ingest.core.errors import TraceParseError
from ingest.core.records import Outcome, StepKind
from ingest.core.spans import MSG_DUPLICATE_SPAN, MSG_PARENT_CYCLE
from ingest.parsers.openinference import MSG_BAD_ID, MSG_BAD_STATUS, MSG_BAD_TIME, MSG_NO_SPANS
from tests.ingest.parsers.parser_cases import FIXTURES, parse_bytes, parse_path

AGENT_TRACE = FIXTURES / "openinference_agent.jsonl"


def test_it_reads_the_fixture_as_two_trajectories_with_exact_counts():
    records = parse_path("openinference", AGENT_TRACE)
    assert [(r.external_id, len(r.steps)) for r in records] == [
        ("6f1c2b7d9a0e4f3b8c5d2e1f0a9b8c7d", 9),
        ("0a0b0c0d0e0f10111213141516171819", 3),
    ]


def test_it_maps_llm_and_tool_spans_to_steps_without_repeating_the_conversation():
    record = parse_path("openinference", AGENT_TRACE)[0]
    assert [(s.kind, s.role, s.tool_name) for s in record.steps] == [
        (StepKind.SYSTEM, "system", ""),
        (StepKind.MESSAGE, "user", ""),
        (StepKind.MESSAGE, "assistant", ""),
        (StepKind.TOOL_CALL, "assistant", "get_reservation_details"),
        (StepKind.TOOL_RESULT, "tool", "get_reservation_details"),
        (StepKind.MESSAGE, "assistant", ""),
        (StepKind.TOOL_CALL, "assistant", "cancel_reservation"),
        (StepKind.TOOL_RESULT, "tool", "cancel_reservation"),
        (StepKind.MESSAGE, "assistant", ""),
    ]
    assert record.steps[6].tool_args == {"reservation_id": "ABC123"}
    assert record.steps[6].tool_call_id == "call_2"
    assert record.steps[6].is_mutating is True
    assert record.steps[8].content == "Your reservation ABC123 has been cancelled."
    assert record.agent_system == "airline_agent"
    assert record.policy_model == "gpt-4o-2024-08-06"
    assert record.task_text == "Cancel my reservation ABC123, please."
    assert record.outcome == Outcome.UNKNOWN


def test_it_keeps_unmapped_attributes_and_other_spans_in_metadata():
    record = parse_path("openinference", AGENT_TRACE)[0]
    assert record.steps[2].metadata["attributes"]["llm.token_count.total"] == 138
    assert record.metadata["root_span"]["attributes"]["session.id"] == "sess-42"
    assert [span["span_name"] for span in record.metadata["other_spans"]] == ["RunnableSequence"]


def test_it_reads_flat_attributes_and_fails_a_trace_whose_root_errored():
    record = parse_path("openinference", AGENT_TRACE)[1]
    assert record.outcome == Outcome.FAILURE
    assert record.task_text == "Where is my order #W123?"
    assert record.steps[0].metadata["content_absent"] is True
    assert [s.is_error for s in record.steps] == [False, False, True]
    assert record.steps[1].metadata["status_message"] == "database unavailable"


def _row(span_id, parent=None, kind="LLM", **extra):
    row = {
        "name": span_id,
        "context": {"trace_id": "t", "span_id": span_id},
        "parent_id": parent,
        "span_kind": kind,
        "start_time": "2025-01-01T00:00:00+00:00",
        "end_time": "2025-01-01T00:00:01+00:00",
        "status_code": "OK",
        "attributes": {},
    }
    row.update(extra)
    return json.dumps(row).encode() + b"\n"


def test_it_reads_attributes_given_as_prefixed_columns():
    row = json.loads(_row("s1"))
    del row["attributes"]
    row["attributes.llm.output_messages"] = [{"message.role": "assistant", "message.content": "Hi"}]
    (record,) = parse_bytes("openinference", json.dumps(row).encode())
    assert record.steps[0].content == "Hi"


def test_it_rejects_duplicate_span_ids():
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("openinference", _row("a", kind="AGENT") + _row("b", "a") + _row("b", "a"))
    assert caught.value.message == MSG_DUPLICATE_SPAN.format(span_id="b", trace_id="t")
    assert (caught.value.record, caught.value.field) == ("line 3", "context.span_id")


def test_it_rejects_parent_cycles():
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("openinference", _row("a", kind="AGENT") + _row("b", "c") + _row("c", "b"))
    assert caught.value.message == MSG_PARENT_CYCLE.format(span_id="b")
    assert caught.value.record == "line 2"


def test_it_keeps_a_span_whose_parent_is_missing():
    (record,) = parse_bytes("openinference", _row("a", kind="AGENT") + _row("b", "zzz"))
    assert record.steps[0].metadata["parent_missing"] is True


@pytest.mark.parametrize(
    "extra, message, field",
    [
        ({"status_code": "MAYBE"}, MSG_BAD_STATUS, "status_code"),
        ({"start_time": "yesterday"}, MSG_BAD_TIME, "start_time"),
        ({"context": {"trace_id": "t", "span_id": ["x"]}}, MSG_BAD_ID, "context.span_id"),
    ],
)
def test_it_rejects_bad_fields_naming_them(extra, message, field):
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("openinference", _row("a", **extra))
    assert (caught.value.message, caught.value.record, caught.value.field) == (
        message,
        "line 1",
        field,
    )


def test_it_rejects_a_file_without_spans():
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("openinference", b"\n\n")
    assert caught.value.message == MSG_NO_SPANS


def test_it_does_not_repeat_a_tool_result_the_next_call_echoes_without_its_id():
    """Instrumentations often leave tool_call_id off the echoed tool message."""
    ask = {
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "Fix api/pages.py",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.tool_calls.0.tool_call.id": "t1",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "read_file",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": "{}",
    }
    report = {
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "Fix api/pages.py",
        "llm.input_messages.1.message.role": "tool",
        "llm.input_messages.1.message.content": "def fn(x):\n    return x\n",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "Done.",
    }
    tool = {"tool.name": "read_file", "output.value": "def fn(x):\n    return x\n"}
    body = (
        _row("a", kind="AGENT")
        + _row("b", parent="a", attributes=ask)
        + _row("c", parent="a", kind="TOOL", attributes=tool)
        + _row("d", parent="a", attributes=report)
    )
    (record,) = parse_bytes("openinference", body)
    assert [(s.kind, s.tool_name) for s in record.steps] == [
        (StepKind.MESSAGE, ""),
        (StepKind.MESSAGE, ""),
        (StepKind.TOOL_CALL, "read_file"),
        (StepKind.TOOL_RESULT, "read_file"),
        (StepKind.MESSAGE, ""),
    ]
