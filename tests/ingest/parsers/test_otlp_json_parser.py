"""OTLP/JSON with GenAI attributes: the specification's example, messages in parts, the older
flattened keys, typed values, and broken trees."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from ingest.core.errors import TraceParseError
from ingest.core.records import Outcome, StepKind
from ingest.core.spans import MSG_DUPLICATE_SPAN, MSG_PARENT_CYCLE
from ingest.parsers.otlp_json import MSG_BAD_STATUS, MSG_BAD_VALUE, MSG_NO_SPANS
from tests.conftest import shared_file
from tests.ingest.parsers.parser_cases import parse_bytes, parse_path

TRACE = "5b8efff798038103d269b633813fc60c"


def test_it_reads_the_specification_example_as_one_trajectory_of_one_step():
    (record,) = parse_path("otlp_json", shared_file("otlp_json/examples/trace.json"))
    assert record.external_id == TRACE
    assert len(record.steps) == 1
    step = record.steps[0]
    # Its parent is not in the file: kept as the root, flagged, and a plain span step.
    assert step.metadata["parent_missing"] is True
    assert step.metadata["generic_span"] is True
    assert step.content == "I'm a server span"
    assert step.metadata["attributes"] == {"my.span.attr": "some value"}
    assert step.metadata["span"]["kind"] == 2
    assert step.metadata["span"]["scope"]["attributes"] == {
        "my.scope.attribute": "some scope attribute"
    }
    assert step.started_at == datetime(2018, 12, 13, 14, 51, 0, tzinfo=UTC)
    assert record.agent_system == "my.service"
    assert record.metadata["resource"] == {"service.name": "my.service"}


def _value(value):
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_value(v) for v in value]}}
    if isinstance(value, dict):
        return {
            "kvlistValue": {"values": [{"key": k, "value": _value(v)} for k, v in value.items()]}
        }
    return {"stringValue": value}


def _span(span_id, parent="", start=1, attributes=None, status=None, trace="aa" * 16):
    span = {
        "traceId": trace.upper(),
        "spanId": span_id,
        "parentSpanId": parent,
        "name": span_id,
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + start * 1_000_000),
        "endTimeUnixNano": str(1_700_000_000_000_000_000 + start * 1_000_000 + 500_000),
        "attributes": [{"key": k, "value": _value(v)} for k, v in (attributes or {}).items()],
    }
    if status is not None:
        span["status"] = status
    return span


def _export(*spans):
    return json.dumps(
        {
            "resourceSpans": [
                {
                    "resource": {"attributes": []},
                    "scopeSpans": [{"scope": {"name": "t"}, "spans": list(spans)}],
                }
            ]
        }
    ).encode()


AGENT = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "booking_agent"}
CHAT_1 = {
    "gen_ai.operation.name": "chat",
    "gen_ai.request.model": "gpt-4o",
    "gen_ai.system_instructions": json.dumps([{"type": "text", "content": "Be helpful."}]),
    "gen_ai.input.messages": json.dumps(
        [{"role": "user", "parts": [{"type": "text", "content": "Book SEA"}]}]
    ),
    "gen_ai.output.messages": json.dumps(
        [
            {
                "role": "assistant",
                "parts": [
                    {
                        "type": "tool_call",
                        "id": "call_1",
                        "name": "book_flight",
                        "arguments": {"to": "SEA"},
                    }
                ],
                "finish_reason": "tool_call",
            }
        ]
    ),
}
TOOL = {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": "book_flight",
    "gen_ai.tool.call.id": "call_1",
    "gen_ai.tool.call.arguments": '{"to": "SEA"}',
    "gen_ai.tool.call.result": '{"booked": true}',
}
CHAT_2 = {
    "gen_ai.operation.name": "chat",
    "gen_ai.input.messages": [
        {"role": "user", "parts": [{"type": "text", "content": "Book SEA"}]},
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "id": "call_1",
                    "name": "book_flight",
                    "arguments": {"to": "SEA"},
                }
            ],
        },
        {
            "role": "tool",
            "parts": [
                {"type": "tool_call_response", "id": "call_1", "response": '{"booked": true}'}
            ],
        },
    ],
    "gen_ai.output.messages": [
        {"role": "assistant", "parts": [{"type": "text", "content": "Booked."}]}
    ],
}


def test_it_orders_spans_by_tree_then_start_time_and_splits_tool_spans():
    data = _export(
        _span("0000000000000004", "0000000000000001", 4, CHAT_2),
        _span("0000000000000003", "0000000000000001", 3, TOOL),
        _span("0000000000000001", "", 1, AGENT),
        _span("0000000000000002", "0000000000000001", 2, CHAT_1),
    )
    (record,) = parse_bytes("otlp_json", data)
    assert [(s.kind, s.role, s.tool_name, s.content) for s in record.steps] == [
        (StepKind.SYSTEM, "system", "", "Be helpful."),
        (StepKind.MESSAGE, "user", "", "Book SEA"),
        (StepKind.MESSAGE, "assistant", "", ""),
        (StepKind.TOOL_CALL, "assistant", "book_flight", ""),
        (StepKind.TOOL_RESULT, "tool", "book_flight", '{"booked": true}'),
        (StepKind.MESSAGE, "assistant", "", "Booked."),
    ]
    assert record.steps[3].tool_args == {"to": "SEA"}
    assert record.steps[3].is_mutating is True
    assert record.steps[3].agent == "booking_agent"
    assert record.agent_system == "booking_agent"
    assert record.policy_model == "gpt-4o"
    assert record.task_text == "Book SEA"
    assert record.external_id == "aa" * 16


def test_it_makes_tool_call_steps_from_output_parts_when_there_are_no_tool_spans():
    (record,) = parse_bytes("otlp_json", _export(_span("01", "", 1, CHAT_1)))
    kinds = [s.kind for s in record.steps]
    assert kinds == [StepKind.SYSTEM, StepKind.MESSAGE, StepKind.TOOL_CALL]
    assert record.steps[2].tool_call_id == "call_1"


def test_it_reads_tool_call_responses_with_result_or_response():
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": [
            {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": "a", "result": "ok-a"}],
            },
            {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": "b", "response": "ok-b"}],
            },
        ],
    }
    (record,) = parse_bytes("otlp_json", _export(_span("01", "", 1, attributes)))
    results = [(s.tool_call_id, s.content) for s in record.steps if s.kind == StepKind.TOOL_RESULT]
    assert results == [("a", "ok-a"), ("b", "ok-b")]


def test_it_reads_the_older_flattened_prompt_and_completion_keys():
    attributes = {
        "gen_ai.prompt.0.role": "system",
        "gen_ai.prompt.0.content": "Be brief.",
        "gen_ai.prompt.1.role": "user",
        "gen_ai.prompt.1.content": "Weather in Paris?",
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.tool_calls.0.id": "c9",
        "gen_ai.completion.0.tool_calls.0.name": "get_weather",
        "gen_ai.completion.0.tool_calls.0.arguments": '{"city": "Paris"}',
        "gen_ai.request.model": "gpt-3.5-turbo",
    }
    (record,) = parse_bytes("otlp_json", _export(_span("01", "", 1, attributes)))
    assert [(s.kind, s.content, s.tool_name) for s in record.steps] == [
        (StepKind.SYSTEM, "Be brief.", ""),
        (StepKind.MESSAGE, "Weather in Paris?", ""),
        (StepKind.TOOL_CALL, "", "get_weather"),
    ]
    assert record.steps[2].tool_args == {"city": "Paris"}


def test_it_imports_spans_without_content_and_says_so():
    (record,) = parse_bytes(
        "otlp_json", _export(_span("01", "", 1, {"gen_ai.operation.name": "chat"}))
    )
    assert len(record.steps) == 1
    assert record.steps[0].metadata["content_absent"] is True
    assert record.metadata["content_absent"] is True


def test_it_decodes_every_typed_value_into_metadata():
    attributes = {
        "gen_ai.operation.name": "chat",
        "n": 3,
        "x": 0.5,
        "ok": True,
        "tags": ["a", "b"],
        "kv": {"k": [1, {"z": False}]},
    }
    (record,) = parse_bytes("otlp_json", _export(_span("01", "", 1, attributes)))
    meta = record.steps[0].metadata["attributes"]
    assert (meta["n"], meta["x"], meta["ok"], meta["tags"], meta["kv"]) == (
        3,
        0.5,
        True,
        ["a", "b"],
        {"k": [1, {"z": False}]},
    )


@pytest.mark.parametrize(
    "status, outcome",
    [
        ({"code": 2, "message": "boom"}, Outcome.FAILURE),
        ({"code": "STATUS_CODE_ERROR"}, Outcome.FAILURE),
        ({"code": 1}, Outcome.UNKNOWN),
        (None, Outcome.UNKNOWN),
    ],
)
def test_it_derives_the_outcome_from_the_root_span_status(status, outcome):
    (record,) = parse_bytes(
        "otlp_json", _export(_span("01", "", 1, AGENT, status=status), _span("02", "01", 2, CHAT_1))
    )
    assert record.outcome == outcome


def test_it_takes_an_explicit_outcome_attribute_on_the_root():
    root = dict(AGENT, **{"faultline.reward": 1.0})
    (record,) = parse_bytes(
        "otlp_json", _export(_span("01", "", 1, root), _span("02", "01", 2, CHAT_1))
    )
    assert (record.outcome, record.reward) == (Outcome.SUCCESS, 1.0)


def test_it_marks_a_failed_tool_span_as_an_error_step():
    tool = dict(TOOL, **{"error.type": "TimeoutError"})
    (record,) = parse_bytes(
        "otlp_json",
        _export(_span("01", "", 1, AGENT), _span("02", "01", 2, tool, status={"code": 2})),
    )
    assert [s.is_error for s in record.steps] == [False, True]


@pytest.mark.parametrize(
    ("status", "events", "attributes", "text"),
    [
        ({"code": 2, "message": "refund service timed out"}, [], {}, "refund service timed out"),
        (
            {"code": 2},
            [
                {
                    "name": "exception",
                    "timeUnixNano": "1",
                    "attributes": [
                        {"key": "exception.type", "value": {"stringValue": "KeyError"}},
                        {"key": "exception.message", "value": {"stringValue": "'seat'"}},
                    ],
                }
            ],
            {},
            "KeyError: 'seat'",
        ),
        ({}, [], {"error.type": "TimeoutError"}, "TimeoutError"),
    ],
)
def test_a_failed_tool_span_without_output_says_what_went_wrong(status, events, attributes, text):
    # A call that raised records no result: its error is what the agent saw.
    tool = {k: v for k, v in TOOL.items() if k != "gen_ai.tool.call.result"} | attributes
    span = _span("02", "01", 2, tool, status=status or None)
    span["events"] = events
    (record,) = parse_bytes("otlp_json", _export(_span("01", "", 1, AGENT), span))
    result = record.steps[1]
    assert (result.kind, result.is_error, result.content) == (StepKind.TOOL_RESULT, True, text)


def test_a_failed_tool_span_keeps_the_output_it_recorded():
    span = _span("02", "01", 2, TOOL, status={"code": 2, "message": "late"})
    (record,) = parse_bytes("otlp_json", _export(_span("01", "", 1, AGENT), span))
    assert record.steps[1].content == '{"booked": true}'


def test_it_makes_one_trajectory_per_trace_id_across_lines():
    line_1 = _export(_span("01", "", 1, AGENT, trace="11" * 16))
    line_2 = _export(
        _span("02", "", 1, CHAT_1, trace="22" * 16), _span("03", "01", 2, TOOL, trace="11" * 16)
    )
    records = parse_bytes("otlp_json", line_1 + b"\n" + line_2 + b"\n", filename="export.jsonl")
    assert [(r.external_id, len(r.steps)) for r in records] == [("11" * 16, 2), ("22" * 16, 3)]


def test_it_rejects_duplicate_span_ids_naming_the_span():
    with pytest.raises(TraceParseError) as caught:
        parse_bytes(
            "otlp_json",
            _export(_span("01", "", 1, AGENT), _span("02", "01", 2), _span("02", "01", 3)),
        )
    assert caught.value.message == MSG_DUPLICATE_SPAN.format(span_id="02", trace_id="aa" * 16)
    assert caught.value.record == "resourceSpans[0].scopeSpans[0].spans[2]"
    assert caught.value.field == "spanId"


def test_it_rejects_parent_cycles():
    with pytest.raises(TraceParseError) as caught:
        parse_bytes(
            "otlp_json",
            _export(_span("01", "", 1, AGENT), _span("02", "03", 2), _span("03", "02", 3)),
        )
    assert caught.value.message == MSG_PARENT_CYCLE.format(span_id="02")


def test_it_rejects_a_bad_attribute_value_naming_the_key():
    span = _span("01", "", 1)
    span["attributes"] = [{"key": "weird", "value": {"mysteryValue": 1}}]
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("otlp_json", _export(span))
    assert (caught.value.message, caught.value.field) == (MSG_BAD_VALUE, "attributes.weird")


def test_it_rejects_an_unknown_status_code():
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("otlp_json", _export(_span("01", "", 1, status={"code": 7})))
    assert (caught.value.message, caught.value.field) == (MSG_BAD_STATUS, "status.code")


def test_it_rejects_an_export_without_spans():
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("otlp_json", b'{"resourceSpans": []}')
    assert caught.value.message == MSG_NO_SPANS


def test_it_keeps_schema_urls_and_other_export_fields():
    export = json.loads(_export(_span("01", "", 1, AGENT)))
    export["resourceSpans"][0]["schemaUrl"] = "https://opentelemetry.io/schemas/1.26.0"
    export["resourceSpans"][0]["scopeSpans"][0]["schemaUrl"] = "https://example.com/scope"
    export["note"] = "exported by hand"
    (record,) = parse_bytes("otlp_json", json.dumps(export).encode())
    root = record.metadata["root_span"]["span"]
    assert root["resource_block"] == {"schemaUrl": "https://opentelemetry.io/schemas/1.26.0"}
    assert root["scope"]["scopeSpans.schemaUrl"] == "https://example.com/scope"
    assert record.metadata["document"] == {"note": "exported by hand"}
