"""any-agent's SDK span lists: exact counts on the seven recorded runs, and broken trees."""

from __future__ import annotations

import json

import pytest

from ingest.core.errors import TraceParseError
from ingest.core.records import Outcome, StepKind
from ingest.core.spans import MSG_DUPLICATE_SPAN, MSG_PARENT_CYCLE
from tests.conftest import shared_file
from tests.ingest.parsers.parser_cases import parse_bytes, parse_path

ASSETS = "otel_genai_any_agent/tests/assets"
# file -> steps (each file is one trace, so one trajectory)
EXPECTED_STEPS = {
    "AGNO_trace.json": 9,
    "GOOGLE_trace.json": 11,
    "LANGCHAIN_trace.json": 10,
    "LLAMA_INDEX_trace.json": 13,
    "OPENAI_trace.json": 9,
    "SMOLAGENTS_trace.json": 11,
    "TINYAGENT_trace.json": 12,
}


@pytest.mark.parametrize("name", sorted(EXPECTED_STEPS))
def test_it_reads_every_recorded_run_with_exact_counts(name):
    records = parse_path("otel_sdk_spans", shared_file(f"{ASSETS}/{name}"))
    assert len(records) == 1
    assert len(records[0].steps) == EXPECTED_STEPS[name]
    assert [step.index for step in records[0].steps] == list(range(EXPECTED_STEPS[name]))


def test_it_maps_the_openai_agents_run_step_by_step():
    (record,) = parse_path("otel_sdk_spans", shared_file(f"{ASSETS}/OPENAI_trace.json"))
    assert [(s.kind, s.role, s.tool_name) for s in record.steps] == [
        (StepKind.SYSTEM, "system", ""),
        (StepKind.MESSAGE, "user", ""),
        (StepKind.MESSAGE, "assistant", ""),
        (StepKind.TOOL_CALL, "assistant", "get_current_time"),
        (StepKind.TOOL_RESULT, "tool", "get_current_time"),
        (StepKind.MESSAGE, "assistant", ""),
        (StepKind.TOOL_CALL, "assistant", "write_file"),
        (StepKind.TOOL_RESULT, "tool", "write_file"),
        (StepKind.MESSAGE, "assistant", ""),
    ]
    assert record.steps[3].tool_args == {"timezone": "America/New_York"}
    assert record.steps[2].metadata["tool_calls"][0]["function"]["name"] == "get_current_time"
    assert record.agent_system == "any_agent"
    assert record.policy_model == "mistral/mistral-small-latest"
    assert record.task_text.startswith("Find what year it is")
    assert record.outcome == Outcome.UNKNOWN
    assert record.metadata["document"]["final_output"]["steps"][0]["number"] == 1


def test_it_hangs_spans_with_a_missing_parent_under_the_root():
    (record,) = parse_path("otel_sdk_spans", shared_file(f"{ASSETS}/GOOGLE_trace.json"))
    tool_call = next(s for s in record.steps if s.kind == StepKind.TOOL_CALL)
    assert tool_call.metadata["parent_missing"] is True
    assert tool_call.agent == "any_agent"
    starts = [s.started_at for s in record.steps]
    assert starts == sorted(starts)


def test_it_keeps_token_usage_in_step_metadata():
    (record,) = parse_path("otel_sdk_spans", shared_file(f"{ASSETS}/AGNO_trace.json"))
    assistant = record.steps[2]
    assert assistant.metadata["attributes"]["gen_ai.usage.input_tokens"] > 0


def _span(span_id, parent_id, op="call_llm", status="ok"):
    return {
        "name": f"{op} x",
        "context": {"trace_id": 7, "span_id": span_id},
        "parent": {"span_id": parent_id},
        "start_time": 1_700_000_000_000_000_000 + span_id,
        "end_time": 1_700_000_000_000_000_000 + span_id + 1,
        "status": {"status_code": status},
        "attributes": {"gen_ai.operation.name": op, "gen_ai.output": "hi"},
    }


def _doc(*spans):
    return json.dumps({"spans": list(spans)}).encode()


def test_it_rejects_duplicate_span_ids():
    with pytest.raises(TraceParseError) as caught:
        parse_bytes(
            "otel_sdk_spans", _doc(_span(1, None, "invoke_agent"), _span(2, 1), _span(2, 1))
        )
    assert caught.value.message == MSG_DUPLICATE_SPAN.format(span_id="2", trace_id=f"{7:032x}")
    assert (caught.value.record, caught.value.field) == ("spans[2]", "context.span_id")


def test_it_rejects_a_parent_cycle():
    with pytest.raises(TraceParseError) as caught:
        parse_bytes(
            "otel_sdk_spans", _doc(_span(1, None, "invoke_agent"), _span(2, 3), _span(3, 2))
        )
    assert caught.value.message == MSG_PARENT_CYCLE.format(span_id="2")
    assert (caught.value.record, caught.value.field) == ("spans[1]", "context.span_id")


def test_it_rejects_a_span_that_is_its_own_parent():
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("otel_sdk_spans", _doc(_span(1, None, "invoke_agent"), _span(2, 2)))
    assert caught.value.message == MSG_PARENT_CYCLE.format(span_id="2")


def test_it_imports_a_span_whose_parent_is_missing_and_flags_it():
    (record,) = parse_bytes("otel_sdk_spans", _doc(_span(1, None, "invoke_agent"), _span(2, 99)))
    assert record.steps[0].metadata["parent_missing"] is True


def test_it_marks_a_run_whose_root_failed_as_a_failure():
    (record,) = parse_bytes(
        "otel_sdk_spans", _doc(_span(1, None, "invoke_agent", "error"), _span(2, 1))
    )
    assert record.outcome == Outcome.FAILURE


def test_an_integer_trace_id_is_the_hex_id_otel_backends_show():
    (record,) = parse_path("otel_sdk_spans", shared_file(f"{ASSETS}/SMOLAGENTS_trace.json"))
    assert record.external_id == f"{193014249579837554382251753808266698816:032x}"
    assert len(record.external_id) == 32


def test_hex_text_ids_lose_the_0x_prefix():
    spans = [_span(1, None, "invoke_agent"), _span(2, 1)]
    for span in spans:
        span["context"] = {
            "trace_id": "0x5B8AA5A2D2C872E8321CF37308D69DF2",
            "span_id": f"0x{span['context']['span_id']:x}",
        }
        if span["parent"]["span_id"] is not None:
            span["parent"]["span_id"] = f"0x{span['parent']['span_id']:x}"
    (record,) = parse_bytes("otel_sdk_spans", _doc(*spans))
    assert record.external_id == "5b8aa5a2d2c872e8321cf37308d69df2"
    assert len(record.steps) >= 1


@pytest.mark.parametrize("field", ["trace_id", "span_id"])
def test_it_refuses_an_id_that_is_neither_an_integer_nor_hex(field):
    # A corrupt trace id split its span off as a rollout named "nothex", the real trace
    # one step short: the file is refused naming the span and the field instead.
    spans = [_span(1, None, "invoke_agent"), _span(2, 1), _span(3, 1)]
    spans[2]["context"][field] = "nothex"
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("otel_sdk_spans", _doc(*spans))
    assert (caught.value.record, caught.value.field) == ("spans[2]", f"context.{field}")
