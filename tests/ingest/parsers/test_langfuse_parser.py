"""Langfuse traces (the public API's GET /api/public/traces/{id}, the trace page's
download, lists of them): observations as GenAI spans, agents, errors, scores, the
outcome rule, the refused list-API shape and bad fields named."""

from __future__ import annotations

import copy
import doctest
import importlib
import io
import json

import pytest

from ingest.core import jsonstream, validate
from ingest.core.errors import TraceParseError
from ingest.core.langfuse import MSG_OTHER_TRACE
from ingest.core.native_writer import write_native_jsonl
from ingest.core.records import Outcome, StepKind
from ingest.core.spans import MSG_DUPLICATE_SPAN, MSG_PARENT_CYCLE
from ingest.core.validate import MSG_BAD_ID
from ingest.parsers import HEAD_BYTES, detect_format, native
from ingest.parsers.base import ParseLimits
from ingest.parsers.langfuse import MSG_IDS_ONLY, MSG_NO_TRACES, MSG_NOT_A_TRACE
from tests.ingest.parsers.parser_cases import FIXTURES, parse_bytes, parse_path

AGENT_TRACE = FIXTURES / "langfuse" / "agent_trace.json"
TRACE_ID = "7c3f9a2e-5b1d-4e8a-9f60-2d4c8b1a0e11"


def _fixture() -> dict:
    return json.loads(AGENT_TRACE.read_text())


def _observation(obs_id, parent=None, kind="GENERATION", **fields):
    observation = {
        "id": obs_id,
        "traceId": "t1",
        "parentObservationId": parent,
        "type": kind,
        "name": obs_id,
        "startTime": "2025-01-01T00:00:00.000Z",
        "endTime": "2025-01-01T00:00:01.000Z",
        "level": "DEFAULT",
    }
    observation.update(fields)
    return observation


def _trace(*observations, **fields):
    trace = {"id": "t1", "timestamp": "2025-01-01T00:00:00Z", "name": "agent-app"}
    trace.update(fields)
    trace["observations"] = list(observations)
    return trace


def _parse(document) -> list:
    return parse_bytes("langfuse", json.dumps(document).encode(), filename="trace.json")


def test_it_reads_the_fixture_step_by_step():
    (record,) = parse_path("langfuse", AGENT_TRACE)
    assert record.external_id == TRACE_ID
    assert [(s.kind, s.role, s.agent, s.tool_name) for s in record.steps] == [
        (StepKind.SYSTEM, "system", "system", ""),
        (StepKind.MESSAGE, "user", "user", ""),
        (StepKind.MESSAGE, "assistant", "support_agent", ""),
        (StepKind.TOOL_CALL, "assistant", "support_agent", "get_reservation_details"),
        (StepKind.TOOL_RESULT, "tool", "tool", "get_reservation_details"),
        (StepKind.MESSAGE, "assistant", "support_agent", ""),
        (StepKind.TOOL_CALL, "assistant", "support_agent", "cancel_reservation"),
        (StepKind.TOOL_RESULT, "tool", "tool", "cancel_reservation"),
        (StepKind.MESSAGE, "user", "user", ""),
        (StepKind.MESSAGE, "assistant", "refund_agent", ""),
        (StepKind.MESSAGE, "assistant", "support_agent", ""),
    ]
    assert record.task_text == "Please cancel my reservation ABC123 and refund it."
    assert record.policy_model == "gpt-4o-2024-08-06"
    assert record.agent_system == "support_agent"


def test_a_generations_tool_calls_are_run_by_the_tool_observations_that_follow():
    (record,) = parse_path("langfuse", AGENT_TRACE)
    announce, call, result = record.steps[5], record.steps[6], record.steps[7]
    assert announce.content == "The reservation is refundable; cancelling it now."
    assert [c["function"]["name"] for c in announce.metadata["tool_calls"]] == [
        "cancel_reservation"
    ]
    assert (call.tool_call_id, call.tool_args, call.is_mutating) == (
        "call_2",
        {"reservation_id": "ABC123"},
        True,
    )
    assert result.tool_call_id == "call_2"
    lookup = record.steps[4]
    assert json.loads(lookup.content)["status"] == "confirmed"
    assert lookup.is_error is False


def test_an_error_level_observation_is_an_error_of_its_step_only():
    (record,) = parse_path("langfuse", AGENT_TRACE)
    call, result = record.steps[6], record.steps[7]
    assert result.is_error is True
    assert call.metadata["status"] == "error"
    assert call.metadata["status_message"].startswith("PaymentGatewayTimeout")
    assert [s.is_error for s in record.steps].count(True) == 1
    # The run itself (the one top-level AGENT) did not fail, and no score says pass/fail.
    assert record.outcome == Outcome.UNKNOWN


def test_nested_agents_name_the_steps_below_them():
    (record,) = parse_path("langfuse", AGENT_TRACE)
    refund = [s for s in record.steps if s.agent == "refund_agent"]
    assert [s.content for s in refund] == ["Refund queued as R-77."]
    assert refund[0].metadata["attributes"]["gen_ai.request.model"] == "gpt-4o-mini"


def test_it_keeps_what_is_not_a_step_in_metadata():
    (record,) = parse_path("langfuse", AGENT_TRACE)
    assert [span["span_name"] for span in record.metadata["other_spans"]] == [
        "support_agent",
        "plan",
        "refund_agent",
        "cache_miss",
    ]
    event = record.metadata["other_spans"][-1]
    assert (event["span"]["type"], event["span"]["level"]) == ("EVENT", "WARNING")
    assert record.metadata["other_spans"][1]["attributes"]["output.value"] == {"steps": 2}
    first_answer = record.steps[2]
    assert first_answer.metadata["span"]["usageDetails"] == {
        "input": 120,
        "output": 18,
        "total": 138,
    }
    root = record.metadata["root_span"]
    assert root["span_id"] == f"trace:{TRACE_ID}"
    assert root["span"]["userId"] == "user-9"
    assert root["span"]["tags"] == ["airline", "prod"]
    assert record.metadata["conversation_id"] == "session-42"
    assert record.metadata["format"] == "langfuse"


def test_numeric_and_boolean_scores_are_kept_but_decide_nothing():
    (record,) = parse_path("langfuse", AGENT_TRACE)
    assert record.metadata["evaluations"] == [
        {
            "span_id": f"trace:{TRACE_ID}",
            "name": "helpfulness",
            "score_value": 0.8,
            "explanation": "clear answer",
        },
        {"span_id": "obs-gen-4", "name": "hallucination", "score_value": 0.0},
    ]
    assert record.outcome == Outcome.UNKNOWN


@pytest.mark.parametrize(
    "labels, outcome",
    [(["pass"], Outcome.SUCCESS), (["pass", "Fail"], Outcome.FAILURE), (["great"], "unknown")],
)
def test_the_latest_categorical_pass_or_fail_score_decides(labels, outcome):
    scores = [
        {
            "name": "verdict",
            "dataType": "CATEGORICAL",
            "stringValue": label,
            "timestamp": f"2025-01-01T00:0{minute}:00Z",
        }
        for minute, label in enumerate(labels)
    ]
    (record,) = _parse(_trace(_observation("g1", output="done"), scores=list(reversed(scores))))
    assert record.outcome == outcome


def test_a_run_whose_only_top_level_observation_errored_failed():
    trace = _trace(
        _observation("run", kind="AGENT", level="ERROR", statusMessage="ValueError: no seats"),
        _observation("g1", parent="run", output="Looking for seats."),
    )
    (record,) = _parse(trace)
    assert record.outcome == Outcome.FAILURE
    assert record.metadata["root_span"]["status_message"] == "ValueError: no seats"


def test_an_error_among_several_top_level_observations_is_not_the_outcome():
    trace = _trace(
        _observation("g1", level="ERROR", statusMessage="rate limited", output=None),
        _observation("g2", startTime="2025-01-01T00:00:02Z", output="Done."),
    )
    (record,) = _parse(trace)
    assert record.outcome == Outcome.UNKNOWN
    assert [s.is_error for s in record.steps] == [True, False]


def test_faultline_keys_in_the_trace_metadata_declare_the_outcome_and_task():
    metadata = {"faultline.outcome": "success", "faultline.task.id": "airline/7"}
    (record,) = _parse(_trace(_observation("g1", output="done"), metadata=metadata))
    assert (record.outcome, record.task_id) == (Outcome.SUCCESS, "airline/7")


def test_string_input_and_output_are_a_user_prompt_and_an_answer():
    (record,) = _parse(_trace(_observation("g1", input="What is 2+2?", output="4")))
    assert [(s.role, s.content) for s in record.steps] == [
        ("user", "What is 2+2?"),
        ("assistant", "4"),
    ]
    assert record.task_text == "What is 2+2?"


def test_message_shapes_of_the_integrations_are_read():
    first = _observation(
        "g1",
        input={
            "messages": [{"role": "user", "content": "Find flights to Oslo"}],
            "tools": [{"type": "function", "function": {"name": "search_flights"}}],
        },
        output={
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "name": "search_flights", "args": {"to": "OSL"}}],
        },
    )
    second = _observation(
        "g2",
        startTime="2025-01-01T00:00:02Z",
        input=[[{"role": "user", "content": "Find flights to Oslo"}]],
        output={
            "role": "assistant",
            "content": "",
            "additional_kwargs": {
                "tool_calls": [
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "book", "arguments": "{}"},
                    }
                ]
            },
        },
    )
    third = _observation("g3", startTime="2025-01-01T00:00:03Z", output={"answer": 42})
    (record,) = _parse(_trace(first, second, third))
    assert [(s.kind, s.tool_name, s.tool_args) for s in record.steps] == [
        (StepKind.MESSAGE, "", None),
        (StepKind.TOOL_CALL, "search_flights", {"to": "OSL"}),
        (StepKind.TOOL_CALL, "book", {}),
        (StepKind.MESSAGE, "", None),
    ]
    assert record.steps[1].metadata["attributes"]["input"]["tools"][0]["type"] == "function"
    assert json.loads(record.steps[3].content) == {"answer": 42}


def test_content_the_download_left_out_is_marked_absent():
    (record,) = _parse(_trace(_observation("g1")))
    assert record.steps[0].metadata["content_absent"] is True
    assert record.metadata["content_absent"] is True


def test_a_list_of_traces_and_the_data_shape_give_the_same_trajectories():
    second = _fixture()
    second["id"] = "t2"
    for observation in second["observations"]:
        observation["traceId"] = "t2"
    traces = [_fixture(), second]
    listed = _parse(traces)
    paged = _parse({"data": traces, "meta": {"page": 1, "limit": 50, "totalItems": 2}})
    assert [r.external_id for r in listed] == [TRACE_ID, "t2"]
    assert listed == paged
    assert listed[0] == parse_path("langfuse", AGENT_TRACE)[0]


def test_it_reads_both_shapes_of_the_trace_pages_download():
    fixture = _fixture()
    observations = fixture.pop("observations")
    scores = fixture.pop("scores")
    older = {"trace": {**fixture, "scores": scores}, "observations": observations}
    newer = {"observations": observations, "scores": scores}
    (from_api,) = parse_path("langfuse", AGENT_TRACE)
    (from_older,) = _parse(older)
    (from_newer,) = _parse(newer)
    assert from_older == from_api
    assert from_newer.external_id == TRACE_ID
    assert [s.kind for s in from_newer.steps] == [s.kind for s in from_api.steps]


def test_the_older_downloads_metadata_given_as_json_text_is_decoded():
    (record,) = _parse(
        _trace(_observation("g1", output="ok", metadata='{"ls_provider": "openai"}'))
    )
    assert record.steps[0].metadata["span"]["metadata"] == {"ls_provider": "openai"}


@pytest.mark.parametrize(
    "document, record, field",
    [
        (
            {"data": [{"id": "t1", "observations": ["o1", "o2"], "scores": [], "htmlPath": "/x"}]},
            "data[0], trace t1",
            "observations",
        ),
        ([{"id": "t1", "observations": [], "scores": ["s1"]}], "item 0, trace t1", "scores"),
    ],
)
def test_the_list_apis_id_only_traces_are_refused_saying_how_to_get_them(document, record, field):
    with pytest.raises(TraceParseError) as caught:
        _parse(document)
    assert (caught.value.message, caught.value.record, caught.value.field) == (
        MSG_IDS_ONLY.format(field=field),
        record,
        field,
    )
    assert "GET /api/public/traces/{id}" in caught.value.message


def _bad_observation(**fields):
    return _trace(_observation("g1", output="ok"), _observation("o2", parent="g1", **fields))


@pytest.mark.parametrize(
    "document, message, record, field",
    [
        (
            {"id": "t1", "observations": {"id": "o1"}},
            validate.MSG_NOT_LIST,
            "trace t1",
            "observations",
        ),
        ({"id": "t1"}, MSG_NOT_A_TRACE, "trace t1", "observations"),
        ({"id": "", "observations": []}, MSG_BAD_ID, "document", "id"),
        ({"id": 7, "observations": []}, validate.MSG_NOT_STRING, "document", "id"),
        (_trace(timestamp="yesterday"), validate.MSG_NOT_TIME, "trace t1", "timestamp"),
        (_trace(5), validate.MSG_NOT_OBJECT, "trace t1, observations[0]", ""),
        (_trace({"type": "SPAN"}), validate.MSG_REQUIRED, "trace t1, observations[0]", "id"),
        (
            _bad_observation(startTime="noon"),
            validate.MSG_NOT_TIME,
            "trace t1, observation o2",
            "startTime",
        ),
        (
            _bad_observation(endTime=5),
            validate.MSG_NOT_STRING,
            "trace t1, observation o2",
            "endTime",
        ),
        (
            _bad_observation(level="FATAL"),
            validate.MSG_BAD_CHOICE.format(choices="DEBUG, DEFAULT, WARNING, ERROR"),
            "trace t1, observation o2",
            "level",
        ),
        (_bad_observation(type=3), validate.MSG_NOT_STRING, "trace t1, observation o2", "type"),
        (
            _bad_observation(parentObservationId=["g1"]),
            validate.MSG_NOT_STRING,
            "trace t1, observation o2",
            "parentObservationId",
        ),
        (
            _bad_observation(traceId="t9"),
            MSG_OTHER_TRACE.format(other="t9", trace_id="t1"),
            "trace t1, observation o2",
            "traceId",
        ),
        (
            _bad_observation(output={"role": "assistant", "tool_calls": [{"id": "c1"}]}),
            validate.MSG_NOT_OBJECT,
            "trace t1, observation o2",
            "output[0].tool_calls[0].function",
        ),
        (
            _bad_observation(input={"messages": [{"role": 3, "content": "hi"}]}),
            validate.MSG_NOT_STRING,
            "trace t1, observation o2",
            "input.messages[0].role",
        ),
        (
            _trace(_observation("g1"), scores=[{"value": 1}]),
            validate.MSG_REQUIRED,
            "trace t1, scores[0]",
            "name",
        ),
        (
            _trace(_observation("g1"), scores=[{"name": "s", "value": "high"}]),
            validate.MSG_NOT_NUMBER,
            "trace t1, scores[0]",
            "value",
        ),
        (
            [_trace(_observation("g1")), _trace(_observation("g1", startTime=1))],
            validate.MSG_NOT_STRING,
            "item 1, trace t1, observation g1",
            "startTime",
        ),
    ],
)
def test_it_rejects_bad_fields_naming_the_record_and_field(document, message, record, field):
    with pytest.raises(TraceParseError) as caught:
        _parse(document)
    assert (caught.value.message, caught.value.record, caught.value.field) == (
        message,
        record,
        field,
    )
    assert str(caught.value.with_file("trace.json")).startswith(f"trace.json, {record}")


def test_it_rejects_duplicate_observation_ids():
    with pytest.raises(TraceParseError) as caught:
        _parse(
            _trace(_observation("a", kind="AGENT"), _observation("b", "a"), _observation("b", "a"))
        )
    assert caught.value.message == MSG_DUPLICATE_SPAN.format(span_id="b", trace_id="t1")
    assert (caught.value.record, caught.value.field) == ("trace t1, observation b", "id")


def test_it_rejects_parent_cycles():
    with pytest.raises(TraceParseError) as caught:
        _parse(_trace(_observation("a", "b"), _observation("b", "a")))
    assert caught.value.message == MSG_PARENT_CYCLE.format(span_id="a")
    assert caught.value.record == "trace t1, observation a"


def test_it_keeps_an_observation_whose_parent_is_missing():
    (record,) = _parse(_trace(_observation("g1", "gone", output="hi")))
    assert record.steps[0].metadata["parent_missing"] is True


@pytest.mark.parametrize(
    "content, message",
    [
        (b"[]", MSG_NO_TRACES),
        (b'{"data": [], "meta": {"page": 1}}', MSG_NO_TRACES),
        (b'"a trace"', MSG_NOT_A_TRACE),
        (b"   ", "The file is empty."),
    ],
)
def test_it_rejects_a_file_without_traces(content, message):
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("langfuse", content, filename="trace.json")
    assert caught.value.message == message


def test_a_trace_of_a_list_larger_than_the_record_limit_is_refused():
    limits = ParseLimits(max_line_bytes=100_000)
    small, big = _trace(_observation("g1")), _trace(_observation("g1", output="x" * 300_000))
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("langfuse", json.dumps([small, big]).encode(), limits=limits)
    assert caught.value.message == jsonstream.MSG_RECORD_TOO_LARGE.format(limit=100_000)
    assert caught.value.record == "item 1"


def test_a_file_larger_than_the_document_limit_is_refused():
    limits = ParseLimits(max_document_bytes=3000)
    traces = [_trace(_observation("g1", output="x" * 500)) for _ in range(10)]
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("langfuse", json.dumps(traces).encode(), limits=limits)
    assert caught.value.message == jsonstream.MSG_DOCUMENT_TOO_LARGE.format(limit=3000)


def _detect(document) -> str:
    return detect_format(json.dumps(document, indent=2).encode()[:HEAD_BYTES], "trace.json")


def test_it_detects_every_shape_langfuse_gives():
    fixture = _fixture()
    observations = fixture.pop("observations")
    shapes = [
        _fixture(),
        [_fixture()],
        {"data": [_fixture()], "meta": {}},
        {"trace": fixture, "observations": observations},
        {"observations": observations, "scores": []},
        {"data": [{**fixture, "observations": ["obs-agent"], "scores": []}], "meta": {}},
    ]
    assert [_detect(shape) for shape in shapes] == ["langfuse"] * len(shapes)
    one_line = json.dumps(_fixture()).encode()
    assert detect_format(one_line, "trace.json") == "langfuse"


def test_a_document_with_observations_but_no_langfuse_keys_is_not_taken():
    with pytest.raises(TraceParseError):
        detect_format(b'{"observations": [{"id": 1, "text": "saw a cat"}]}', "notes.json")


def test_it_round_trips_through_native_jsonl():
    records = parse_path("langfuse", AGENT_TRACE)
    buffer = io.BytesIO()
    write_native_jsonl(records, buffer)
    buffer.seek(0)
    assert list(native.parse(buffer, filename="export.jsonl")) == records


def test_parsing_does_not_change_the_document():
    document = _fixture()
    before = copy.deepcopy(document)
    trace = importlib.import_module("ingest.parsers.langfuse").trajectory_from_trace
    trace(document, where="document")
    assert document == before


@pytest.mark.parametrize("name", ["ingest.core.langfuse", "ingest.parsers.langfuse"])
def test_the_docstring_examples_run(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0
    assert result.failed == 0
