"""LangSmith run exports (JSON lists of runs, JSONL, the runs query page, runs with their
child runs): runs as GenAI spans, LangChain-serialised messages, agents, tool errors,
the outcome rule, broken traces and bad fields named, and one upload stored."""

from __future__ import annotations

import copy
import doctest
import importlib
import io
import json

import pytest

from ingest.core import jsonstream, validate
from ingest.core.errors import TraceParseError
from ingest.core.langsmith import MSG_BAD_TIME, MSG_NO_TRACE
from ingest.core.native_writer import write_native_jsonl
from ingest.core.records import Outcome, StepKind
from ingest.core.spans import MSG_DUPLICATE_SPAN, MSG_PARENT_CYCLE
from ingest.core.validate import MSG_BAD_ID
from ingest.parsers import HEAD_BYTES, detect_format, native
from ingest.parsers.base import ParseLimits
from ingest.parsers.langsmith import MSG_NO_RUNS, MSG_NOT_RUNS
from tests.conftest import ingest_bytes
from tests.ingest.parsers.parser_cases import FIXTURES, parse_bytes, parse_path

LANGGRAPH = FIXTURES / "langsmith" / "langgraph_supervisor.json"
WRAP_OPENAI = FIXTURES / "langsmith" / "wrap_openai_refunds.jsonl"
LANGGRAPH_TRACE = "1f0b6c2e-8d41-4a7e-9c35-5e2a7d90b001"
TASK = "Plan a weekend in Oslo: find a flight from Berlin on 14 March and tell me the weather."


def _runs() -> list[dict]:
    return json.loads(LANGGRAPH.read_text())


def _run(run_id, parent=None, run_type="chain", **fields):
    run = {
        "id": run_id,
        "trace_id": "r1",
        "parent_run_id": parent,
        "name": run_id,
        "run_type": run_type,
        "start_time": "2025-01-01T00:00:00Z",
        "end_time": "2025-01-01T00:00:09Z",
        "inputs": {},
        "outputs": None,
        "error": None,
        "extra": {"metadata": {}},
    }
    run.update(fields)
    return run


def _lc(kind, content, **kwargs):
    return {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", kind],
        "kwargs": {"content": content, **kwargs},
    }


def _parse(runs, filename="runs.json") -> list:
    return parse_bytes("langsmith", json.dumps(runs).encode(), filename=filename)


def _jsonl(runs) -> bytes:
    return b"".join(json.dumps(run).encode() + b"\n" for run in runs)


def test_it_reads_the_langgraph_fixture_step_by_step():
    (record,) = parse_path("langsmith", LANGGRAPH)
    assert record.external_id == LANGGRAPH_TRACE
    assert [(s.kind, s.role, s.agent, s.tool_name) for s in record.steps] == [
        (StepKind.SYSTEM, "system", "system", ""),
        (StepKind.MESSAGE, "user", "user", ""),
        (StepKind.MESSAGE, "assistant", "supervisor", ""),
        (StepKind.TOOL_CALL, "assistant", "supervisor", "transfer_to_flight_agent"),
        (StepKind.TOOL_RESULT, "tool", "tool", "transfer_to_flight_agent"),
        (StepKind.SYSTEM, "system", "system", ""),
        (StepKind.MESSAGE, "assistant", "flight_agent", ""),
        (StepKind.TOOL_CALL, "assistant", "flight_agent", "search_flights"),
        (StepKind.TOOL_RESULT, "tool", "tool", "search_flights"),
        (StepKind.MESSAGE, "assistant", "flight_agent", ""),
        (StepKind.TOOL_CALL, "assistant", "flight_agent", "search_flights"),
        (StepKind.TOOL_RESULT, "tool", "tool", "search_flights"),
        (StepKind.MESSAGE, "assistant", "flight_agent", ""),
        (StepKind.TOOL_CALL, "assistant", "weather_agent", "retrieve_forecast"),
        (StepKind.TOOL_RESULT, "tool", "tool", "retrieve_forecast"),
        (StepKind.SYSTEM, "system", "system", ""),
        (StepKind.MESSAGE, "user", "user", ""),
        (StepKind.MESSAGE, "assistant", "weather_agent", ""),
        (StepKind.MESSAGE, "assistant", "supervisor", ""),
    ]
    assert record.task_text == TASK
    assert (record.policy_model, record.metadata["provider"]) == ("gpt-4o", "openai")
    assert record.metadata["conversation_id"] == "thread-oslo-1"
    assert record.task_id == "0e7c55aa-93b5-4d02-8c3e-0e2d1c4b5a60"  # reference_example_id


def test_the_tool_calls_keep_the_ids_the_model_announced():
    (record,) = parse_path("langsmith", LANGGRAPH)
    calls = [
        (s.tool_name, s.tool_call_id, s.tool_args) for s in record.steps if s.kind == "tool_call"
    ]
    assert calls[:3] == [
        ("transfer_to_flight_agent", "call_h1", {}),
        (
            "search_flights",
            "call_f1",
            {"origin": "BER", "destination": "OSL", "date": "2025-03-14"},
        ),
        (
            "search_flights",
            "call_f2",
            {"origin": "BER", "destination": "OSL", "date": "2025-03-14"},
        ),
    ]
    announcer = record.steps[6]
    assert [call["id"] for call in announcer.metadata["tool_calls"]] == ["call_f1"]


def test_a_failed_tool_run_is_an_error_of_its_step_only():
    (record,) = parse_path("langsmith", LANGGRAPH)
    failed = record.steps[8]
    assert failed.is_error and failed.tool_call_id == "call_f1"
    assert failed.content.startswith("ConnectionError('flight API timed out')")
    assert [s.index for s in record.steps if s.is_error] == [8]
    assert record.outcome == Outcome.SUCCESS  # the agent retried; the feedback says correct


def test_repeated_input_messages_become_steps_once():
    (record,) = parse_path("langsmith", LANGGRAPH)
    assert [s.content for s in record.steps if s.role == "user"] == [
        TASK,
        "Forecast:\nOslo, 14 March: 2°C, light snow.\nOslo, 15 March: 4°C, cloudy.",
    ]
    assert record.steps[-1].content.startswith("Book DY1107 (08:40, 89 EUR)")


def test_a_retrievers_documents_are_its_result():
    (record,) = parse_path("langsmith", LANGGRAPH)
    assert record.steps[14].content == (
        "Oslo, 14 March: 2°C, light snow.\n"
        'metadata: {"day": "2025-03-14", "source": "met.no"}\n\n'
        "Oslo, 15 March: 4°C, cloudy.\n"
        'metadata: {"day": "2025-03-15", "source": "met.no"}'
    )
    assert record.steps[13].tool_args == {"query": "Oslo weather 14-15 March"}


def test_plain_chains_are_not_steps_but_are_kept():
    (record,) = parse_path("langsmith", LANGGRAPH)
    others = record.metadata["other_spans"]
    assert {span["span_name"] for span in others} == {
        "supervisor",
        "flight_agent",
        "agent",
        "RunnableSequence",
        "tools",
        "weather_agent",
        "ChannelWrite<supervisor,messages>",
    }
    assert record.metadata["span_count"] == 22
    assert record.metadata["root_span"]["span_name"] == "LangGraph"
    llm_step = record.steps[2]
    assert llm_step.metadata["span"]["extra"]["metadata"]["langgraph_node"] == "supervisor"
    assert llm_step.metadata["span"]["prompt_tokens"] == 120
    assert "new_token" not in json.dumps(llm_step.metadata)


def test_the_outermost_chain_below_the_root_names_the_agent():
    runs = [
        _run("root", name="main"),
        _run("graph", "root", name="LangGraph"),
        _run("node", "graph", name="researcher"),
        _run("inner", "node", name="agent"),
        _run("seq", "inner", name="RunnableSequence"),
        _run("llm", "seq", run_type="llm", outputs={"output": "found it"}),
        _run("hidden", "root", name="route", tags=["langsmith:hidden"]),
        _run("llm2", "hidden", run_type="llm", outputs={"output": "routed"}),
    ]
    (record,) = _parse(runs)
    assert [(s.agent, s.content) for s in record.steps[-2:]] == [
        ("researcher", "found it"),
        ("assistant", "routed"),
    ]


def test_it_reads_the_wrap_openai_fixture_as_jsonl():
    refunds, raised = parse_path("langsmith", WRAP_OPENAI)
    assert [(s.kind, s.role, s.tool_name, s.tool_call_id) for s in refunds.steps] == [
        (StepKind.SYSTEM, "system", "", ""),
        (StepKind.MESSAGE, "user", "", ""),
        (StepKind.MESSAGE, "assistant", "", ""),
        (StepKind.TOOL_CALL, "assistant", "get_order", "call_o1"),
        (StepKind.TOOL_RESULT, "tool", "get_order", "call_o1"),
        (StepKind.MESSAGE, "assistant", "", ""),
        (StepKind.TOOL_CALL, "assistant", "refund_order", "call_o2"),
        (StepKind.TOOL_RESULT, "tool", "refund_order", "call_o2"),
        (StepKind.MESSAGE, "assistant", "", ""),
    ]
    assert refunds.steps[5].content == "The order was delivered; refunding it now."
    assert refunds.steps[8].metadata["extra"]["finish_reason"] == "stop"
    assert refunds.steps[2].metadata["attributes"]["input"]["model"] == "gpt-4o-mini"
    assert (refunds.task_text, refunds.agent_system, refunds.policy_model) == (
        "Order A-1042 arrived broken, please refund it.",
        "refund_agent",
        "gpt-4o-mini",
    )
    assert (refunds.task_id, refunds.environment) == ("refund-broken-order", "acme-staging")
    assert (refunds.outcome, refunds.reward) == (Outcome.FAILURE, 0.0)  # correctness 0
    assert raised.outcome == Outcome.FAILURE and raised.reward is None  # the root raised
    assert [(s.role, s.kind, s.is_error) for s in raised.steps] == [
        ("user", StepKind.MESSAGE, False),
        ("assistant", StepKind.TOOL_CALL, False),
        ("tool", StepKind.TOOL_RESULT, True),
    ]
    assert raised.steps[0].content == "Refund order B-7 please."
    assert raised.steps[2].content == "KeyError: 'B-7'"


def test_every_file_shape_gives_the_same_trajectories():
    runs = _runs()
    expected = _parse(runs)
    by_id = {run["id"]: dict(run, child_runs=[]) for run in runs}
    for run in runs:
        if run["parent_run_id"]:
            by_id[run["parent_run_id"]]["child_runs"].append(by_id[run["id"]])
    nested = by_id[LANGGRAPH_TRACE]
    for child in nested["child_runs"]:
        del child["parent_run_id"], child["trace_id"]  # read_run leaves them to the nesting
    shapes = {
        "jsonl": _jsonl(runs),
        "page": json.dumps({"runs": runs, "cursors": {"next": None}}).encode(),
        "pretty page": json.dumps({"runs": runs, "cursors": {}}, indent=2).encode(),
        "child runs": json.dumps([nested]).encode(),
        "one run with children": json.dumps(nested, indent=2).encode(),
    }
    for shape, data in shapes.items():
        records = parse_bytes("langsmith", data, filename="runs.json")
        assert [r.steps for r in records] == [r.steps for r in expected], shape
        assert [r.outcome for r in records] == [Outcome.SUCCESS], shape


@pytest.mark.parametrize(
    "inputs, outputs, expected",
    [
        (  # LangChain's chat model run: a batch of one, serialised messages
            {"messages": [[_lc("SystemMessage", "Be brief."), _lc("HumanMessage", "Hi")]]},
            {"generations": [[{"text": "Hello", "message": _lc("AIMessage", "Hello")}]]},
            [("system", "Be brief."), ("user", "Hi"), ("assistant", "Hello")],
        ),
        (  # message.dict() and messages_to_dict shapes
            {
                "messages": [
                    {"type": "human", "content": "Hi"},
                    {"type": "ai", "data": {"content": "Yo"}},
                ]
            },
            {"generations": [{"text": "Bye", "message": {"type": "ai", "content": "Bye"}}]},
            [("user", "Hi"), ("assistant", "Yo"), ("assistant", "Bye")],
        ),
        (  # (role, text) pairs
            {"messages": [["system", "Be brief."], ["human", "Hi"]]},
            {"output": "Hello"},
            [("system", "Be brief."), ("user", "Hi"), ("assistant", "Hello")],
        ),
        (  # a completion model
            {"prompts": ["Q: 2+2?"]},
            {"generations": [[{"text": "4", "type": "Generation"}]]},
            [("user", "Q: 2+2?"), ("assistant", "4")],
        ),
        (  # wrap_anthropic: the system prompt beside the messages, a Message as output
            {"system": "Be brief.", "messages": [{"role": "user", "content": "Hi"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Hello"}], "model": "c"},
            [("system", "Be brief."), ("user", "Hi"), ("assistant", "Hello")],
        ),
    ],
    ids=["lc", "dicts", "pairs", "completion", "anthropic"],
)
def test_it_reads_the_message_shapes_langsmith_records(inputs, outputs, expected):
    (record,) = _parse([_run("r1", run_type="llm", inputs=inputs, outputs=outputs)])
    assert [(s.role, s.content) for s in record.steps] == expected


def test_langchain_tool_calls_and_tool_messages_are_read():
    call = {"name": "search", "args": {"q": "Oslo"}, "id": "call_1", "type": "tool_call"}
    blocks = [
        {"type": "text", "text": "Searching."},
        {"type": "tool_use", "id": "call_1", "name": "search", "input": {"q": "Oslo"}},
    ]
    runs = [
        _run(
            "r1",
            run_type="llm",
            outputs={"generations": [[{"message": _lc("AIMessage", blocks, tool_calls=[call])}]]},
        ),
        _run(
            "r2",
            run_type="llm",
            inputs={
                "messages": [
                    [
                        _lc("ToolMessage", "no hits", tool_call_id="call_1", status="error"),
                        _lc("HumanMessage", "Try Bergen."),
                    ]
                ]
            },
            outputs={"output": "Bergen it is."},
        ),
    ]
    (record,) = _parse(runs)
    assert [(s.kind, s.content, s.tool_call_id, s.is_error) for s in record.steps] == [
        (StepKind.TOOL_CALL, "Searching.", "call_1", False),
        (StepKind.TOOL_RESULT, "no hits", "call_1", True),
        (StepKind.MESSAGE, "Try Bergen.", "", False),
        (StepKind.MESSAGE, "Bergen it is.", "", False),
    ]
    assert record.steps[0].tool_args == {"q": "Oslo"}


def test_a_tool_message_with_error_status_makes_the_tool_step_an_error():
    message = _lc("ToolMessage", "Error: bad date", tool_call_id="c9", name="book", status="error")
    runs = [_run("r1"), _run("r2", "r1", run_type="tool", name="book", outputs={"output": message})]
    (record,) = _parse(runs)
    assert [(s.kind, s.tool_call_id, s.is_error) for s in record.steps] == [
        (StepKind.TOOL_CALL, "c9", False),
        (StepKind.TOOL_RESULT, "c9", True),
    ]


def _feedback(**stats):
    return {key: {"n": 1, **stat} for key, stat in stats.items()}


@pytest.mark.parametrize(
    "root, outcome, reward",
    [
        ({"feedback_stats": _feedback(correctness={"avg": 1.0})}, Outcome.SUCCESS, 1.0),
        ({"feedback_stats": _feedback(correctness={"avg": 0.5})}, Outcome.FAILURE, 0.5),
        ({"feedback_stats": _feedback(task_success={"avg": 0})}, Outcome.FAILURE, 0.0),
        ({"feedback_stats": _feedback(helpfulness={"avg": 0.0})}, Outcome.UNKNOWN, None),
        ({"feedback_stats": _feedback(score={"avg": 1.0})}, Outcome.UNKNOWN, None),
        ({"feedback_stats": _feedback(correctness={"avg": 4.0})}, Outcome.UNKNOWN, None),
        (
            {"feedback_stats": _feedback(verdict={"avg": None, "values": {"pass": 2}})},
            Outcome.SUCCESS,
            None,
        ),
        (
            {"feedback_stats": _feedback(verdict={"avg": None, "values": {"pass": 1, "fail": 1}})},
            Outcome.UNKNOWN,
            None,
        ),
        (
            {"feedback_stats": _feedback(correctness={"avg": 0.0}, success={"avg": 1.0})},
            Outcome.SUCCESS,
            1.0,
        ),
        (
            {
                "extra": {"metadata": {"faultline.outcome": "success"}},
                "feedback_stats": _feedback(correctness={"avg": 0.0}),
            },
            Outcome.SUCCESS,
            None,
        ),
        (
            {"error": "ValueError: x", "feedback_stats": _feedback(correctness={"avg": 1.0})},
            Outcome.SUCCESS,
            1.0,
        ),
        ({"error": "ValueError: x"}, Outcome.FAILURE, None),
        ({"extra": {"metadata": {"faultline.reward": 0.25}}}, Outcome.FAILURE, 0.25),
        ({}, Outcome.UNKNOWN, None),
    ],
)
def test_the_outcome_rule(root, outcome, reward):
    runs = [
        _run("r1", inputs={"question": "q"}, **root),
        _run("r2", "r1", run_type="llm", outputs={"output": "a"}),
    ]
    (record,) = _parse(runs)
    assert (record.outcome, record.reward) == (outcome, reward)


def test_an_error_below_the_root_is_not_the_outcome():
    runs = [_run("r1"), _run("r2", "r1", run_type="tool", error="TimeoutError")]
    (record,) = _parse(runs)
    assert record.outcome == Outcome.UNKNOWN
    assert record.steps[-1].is_error and record.steps[-1].content == "TimeoutError"


def test_every_feedback_key_is_kept_as_an_evaluation():
    (record,) = parse_path("langsmith", LANGGRAPH)
    assert [(e["name"], e["score_value"], e["n"]) for e in record.metadata["evaluations"]] == [
        ("correctness", 1.0, 1),
        ("helpfulness", 0.5, 2),
    ]


@pytest.mark.parametrize(
    "root, agent_system",
    [
        (
            {"name": "LangGraph", "extra": {"metadata": {"faultline.agent_system": "trips"}}},
            "trips",
        ),
        ({"name": "support_bot"}, "support_bot"),
        ({"name": "LangGraph", "session_name": "trips-prod"}, "trips-prod"),
        ({"name": "RunnableSequence"}, ""),
    ],
)
def test_the_agent_system_rule(root, agent_system):
    (record,) = _parse(
        [_run("r1", **root), _run("r2", "r1", run_type="llm", outputs={"output": "a"})]
    )
    assert record.agent_system == agent_system


def test_runs_of_several_traces_are_several_trajectories_in_order_of_appearance():
    runs = [
        _run("a1", trace_id="ta", inputs={"input": "first"}),
        _run("b1", trace_id="tb", inputs={"input": "second"}),
        _run("a2", "a1", trace_id="ta", run_type="llm", outputs={"output": "x"}),
    ]
    records = _parse(runs)
    assert [(r.external_id, r.task_text, len(r.steps)) for r in records] == [
        ("ta", "first", 2),
        ("tb", "second", 2),
    ]


def test_the_trace_comes_from_dotted_order_else_a_root_is_its_own_trace():
    root = _run("r0", trace_id=None)
    child = _run(
        "c1",
        "r0",
        trace_id=None,
        dotted_order="20250101T000000000000Z" + "a" * 36 + ".20250101T000001000000Zc1",
        run_type="llm",
        outputs={"output": "x"},
    )
    records = _parse([root, child])
    assert [r.external_id for r in records] == ["r0", "a" * 36]


def test_it_keeps_a_run_whose_parent_is_missing():
    (record,) = _parse([_run("r1"), _run("r2", "gone", run_type="llm", outputs={"output": "hi"})])
    assert record.steps[-1].metadata["parent_missing"] is True


def test_runs_without_any_root_are_read_from_the_earliest():
    runs = [
        _run(
            "llm2",
            "p",
            run_type="llm",
            outputs={"output": "second"},
            start_time="2025-01-01T00:00:05Z",
        ),
        _run(
            "llm1",
            "p",
            run_type="llm",
            outputs={"output": "first"},
            start_time="2025-01-01T00:00:01Z",
        ),
    ]
    (record,) = _parse(runs)
    assert [s.content for s in record.steps] == ["first", "second"]


def test_an_unknown_run_type_is_kept_as_a_run_that_is_no_step():
    (record,) = _parse(
        [
            _run("r1"),
            _run("r2", "r1", run_type="judge"),
            _run("r3", "r1", run_type="llm", outputs={"output": "x"}),
        ]
    )
    assert [s.content for s in record.steps] == ["x"]
    assert (
        record.metadata["other_spans"][0]["attributes"]["gen_ai.operation.name"]
        == "langsmith.judge"
    )


def test_epoch_milliseconds_are_read_as_times():
    run = _run("r1", run_type="llm", outputs={"output": "x"}, start_time=1735689600000)
    (record,) = _parse([run])
    assert record.steps[0].started_at.isoformat() == "2025-01-01T00:00:00+00:00"


def _bad(**fields):
    return [_run("r1"), _run("r2", "r1", **fields)]


@pytest.mark.parametrize(
    "runs, message, record, field",
    [
        ([5], validate.MSG_NOT_OBJECT, "item 0", ""),
        ([{"run_type": "chain"}], validate.MSG_REQUIRED, "item 0", "id"),
        ([_run("")], MSG_BAD_ID, "item 0", "id"),
        ([_run(7)], validate.MSG_NOT_STRING, "item 0", "id"),
        (_bad(run_type=None), validate.MSG_REQUIRED, "item 1, run r2", "run_type"),
        (_bad(run_type=""), validate.MSG_REQUIRED, "item 1, run r2", "run_type"),
        (_bad(inputs="hi"), validate.MSG_NOT_OBJECT, "item 1, run r2", "inputs"),
        (_bad(outputs=["hi"]), validate.MSG_NOT_OBJECT, "item 1, run r2", "outputs"),
        (_bad(extra=[]), validate.MSG_NOT_OBJECT, "item 1, run r2", "extra"),
        (
            _bad(extra={"metadata": "x"}),
            validate.MSG_NOT_OBJECT,
            "item 1, run r2",
            "extra.metadata",
        ),
        (_bad(error=5), validate.MSG_NOT_STRING, "item 1, run r2", "error"),
        (_bad(name=["x"]), validate.MSG_NOT_STRING, "item 1, run r2", "name"),
        (_bad(parent_run_id=["r1"]), validate.MSG_NOT_STRING, "item 1, run r2", "parent_run_id"),
        (_bad(start_time="noon"), MSG_BAD_TIME, "item 1, run r2", "start_time"),
        (_bad(end_time=True), MSG_BAD_TIME, "item 1, run r2", "end_time"),
        (_bad(trace_id=None, dotted_order=None), MSG_NO_TRACE, "item 1, run r2", "trace_id"),
        (_bad(feedback_stats="good"), validate.MSG_NOT_OBJECT, "item 1, run r2", "feedback_stats"),
        (
            _bad(feedback_stats={"correctness": {"avg": "high"}}),
            validate.MSG_NOT_NUMBER,
            "item 1, run r2",
            "feedback_stats.correctness.avg",
        ),
        (
            _bad(run_type="llm", inputs={"messages": [{"role": 3, "content": "hi"}]}),
            validate.MSG_NOT_STRING,
            "item 1, run r2",
            "inputs.messages[0].role",
        ),
        (
            _bad(
                run_type="llm",
                outputs={
                    "generations": [[{"message": _lc("AIMessage", "", tool_calls=[{"args": {}}])}]]
                },
            ),
            validate.MSG_NOT_OBJECT,
            "item 1, run r2",
            "outputs.generations[0].tool_calls[0].function",
        ),
        (_bad(child_runs={"id": "c"}), validate.MSG_NOT_LIST, "item 1, run r2", "child_runs"),
        (
            _bad(child_runs=[_run("c1", run_type=None)]),
            validate.MSG_REQUIRED,
            "item 1.child_runs[0], run c1",
            "run_type",
        ),
    ],
)
def test_it_rejects_bad_fields_naming_the_run_and_field(runs, message, record, field):
    with pytest.raises(TraceParseError) as caught:
        _parse(runs)
    assert (caught.value.message, caught.value.record, caught.value.field) == (
        message,
        record,
        field,
    )
    assert str(caught.value.with_file("runs.json")).startswith(f"runs.json, {record}")


@pytest.mark.parametrize(
    "data, record",
    [
        (_jsonl(_bad(inputs="hi")), "line 2, run r2"),
        (json.dumps({"runs": _bad(inputs="hi")}).encode(), "runs[1], run r2"),
        (json.dumps(_run("r1", inputs="hi"), indent=2).encode(), "document, run r1"),
    ],
    ids=["jsonl", "page", "one run"],
)
def test_errors_name_the_run_in_every_shape(data, record):
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("langsmith", data, filename="runs.json")
    assert (caught.value.record, caught.value.field) == (record, "inputs")


def test_it_rejects_the_same_run_twice_in_a_trace():
    with pytest.raises(TraceParseError) as caught:
        _parse([_run("r1"), _run("r2", "r1"), _run("r2", "r1")])
    assert caught.value.message == MSG_DUPLICATE_SPAN.format(span_id="r2", trace_id="r1")
    assert (caught.value.record, caught.value.field) == ("item 2, run r2", "id")


def test_it_rejects_parent_cycles():
    with pytest.raises(TraceParseError) as caught:
        _parse([_run("a", "b"), _run("b", "a")])
    assert caught.value.message == MSG_PARENT_CYCLE.format(span_id="a")
    assert caught.value.record == "item 0, run a"


@pytest.mark.parametrize(
    "content, message",
    [
        (b"[]", MSG_NO_RUNS),
        (b'{"runs": [], "cursors": {"next": null}}', MSG_NO_RUNS),
        (b'"runs"', MSG_NOT_RUNS),
        (b"   ", "The file is empty."),
        (b'{"id": "r1", "run_type": "chain"\n', jsonstream.MSG_BAD_JSON.split("{")[0]),
    ],
)
def test_it_rejects_a_file_without_runs(content, message):
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("langsmith", content, filename="runs.json")
    assert caught.value.message.startswith(message)


@pytest.mark.parametrize("as_lines", [False, True], ids=["list", "jsonl"])
def test_a_run_larger_than_the_record_limit_is_refused(as_lines):
    limits = ParseLimits(max_line_bytes=100_000)
    runs = [_run("r1"), _run("r2", "r1", inputs={"input": "x" * 300_000})]
    data = _jsonl(runs) if as_lines else json.dumps(runs).encode()
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("langsmith", data, limits=limits)
    assert caught.value.record == ("line 2" if as_lines else "item 1")
    assert "larger than the limit of 100000 bytes" in caught.value.message


@pytest.mark.parametrize("as_lines", [False, True], ids=["list", "jsonl"])
def test_a_file_larger_than_the_document_limit_is_refused(as_lines):
    limits = ParseLimits(max_document_bytes=3000)
    runs = [_run(f"r{n}", inputs={"input": "x" * 500}) for n in range(10)]
    data = _jsonl(runs) if as_lines else json.dumps(runs).encode()
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("langsmith", data, limits=limits)
    assert caught.value.message == jsonstream.MSG_DOCUMENT_TOO_LARGE.format(limit=3000)


def _detect(data: bytes, name: str = "runs.json") -> str:
    return detect_format(data[:HEAD_BYTES], name)


def test_it_detects_every_shape_langsmith_gives():
    runs = _runs()
    shapes = [
        json.dumps(runs, indent=2).encode(),
        json.dumps(runs).encode(),
        _jsonl(runs),
        json.dumps({"runs": runs, "cursors": {}}, indent=2).encode(),
        json.dumps(runs[0], indent=2).encode(),
        _jsonl([_run("r1", trace_id=None, dotted_order="20250101T000000000000Zr1")]),
    ]
    assert [_detect(shape) for shape in shapes] == ["langsmith"] * len(shapes)


@pytest.mark.parametrize(
    "data",
    [
        b'{"run_type": "nightly", "inputs": ["a.csv"], "outputs": []}',
        b'[{"id": 1, "trace_id": "t", "inputs": {}, "outputs": {}}]',
    ],
)
def test_a_file_with_some_of_the_keys_but_not_langsmiths_is_not_taken(data):
    with pytest.raises(TraceParseError):
        _detect(data)


def test_an_llm_runs_messages_do_not_make_it_openai_chat():
    run = _run("r1", run_type="llm", inputs={"messages": [{"role": "user", "content": "hi"}]})
    line = json.dumps({"messages": run["inputs"]["messages"], **run}).encode() + b"\n"
    assert _detect(line, "runs.jsonl") == "langsmith"


def test_it_round_trips_through_native_jsonl():
    records = parse_path("langsmith", LANGGRAPH) + parse_path("langsmith", WRAP_OPENAI)
    buffer = io.BytesIO()
    write_native_jsonl(records, buffer)
    buffer.seek(0)
    assert list(native.parse(buffer, filename="export.jsonl")) == records


def test_parsing_does_not_change_the_runs():
    runs = _runs()
    before = copy.deepcopy(runs)
    _parse(runs)
    assert runs == before


@pytest.mark.parametrize("name", ["ingest.core.langsmith", "ingest.parsers.langsmith"])
def test_the_docstring_examples_run(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0
    assert result.failed == 0


@pytest.mark.django_db
def test_an_uploaded_export_is_stored_step_by_step(project):
    from ingest.models import Trajectory

    upload = ingest_bytes(project, LANGGRAPH.read_bytes(), "langgraph_supervisor.json")
    assert (upload.status, upload.detected_format, upload.trajectory_count) == (
        "done",
        "langsmith",
        1,
    )
    rollout = Trajectory.objects.get(project=project, external_id=LANGGRAPH_TRACE)
    assert (rollout.outcome, rollout.reward, rollout.agent_system) == (Outcome.SUCCESS, 1.0, "")
    assert rollout.task_text == TASK
    steps = list(rollout.steps.order_by("index"))
    assert rollout.step_count == len(steps) == 19
    assert [(s.kind, s.agent, s.tool_name, s.is_error) for s in steps[6:9]] == [
        (StepKind.MESSAGE, "flight_agent", "", False),
        (StepKind.TOOL_CALL, "flight_agent", "search_flights", False),
        (StepKind.TOOL_RESULT, "tool", "search_flights", True),
    ]
    assert steps[7].tool_args == {"origin": "BER", "destination": "OSL", "date": "2025-03-14"}
    assert steps[-1].content.startswith("Book DY1107")
