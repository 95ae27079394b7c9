"""A trace's stored spans, in any order and with duplicates, to one rollout record."""

from __future__ import annotations

import json
import random

from ingest.core.otlp_receive import CONTENT_JSON, decode_request
from ingest.core.otlp_stored import incoming_spans_read
from ingest.core.otlp_trace import (
    assemble_trace,
    collapse_duplicates,
    rebuild_wait,
    root_has_ended,
    span_from_json,
    span_to_json,
    trace_is_closed,
)
from ingest.core.records import Outcome, StepKind
from tests.ingest.core.otlp_builders import TRACE, json_body, json_span

QUESTION = "Find the cheapest flight to Oslo and book it."


def _messages(role: str, *parts: dict) -> str:
    return json.dumps([{"role": role, "parts": list(parts)}])


def multi_agent_spans() -> list[dict]:
    """An orchestrator hands over to a researcher (one tool call) and then a writer."""
    return [
        json_span(
            1,
            name="invoke_workflow trip",
            end=100,
            attributes={
                "gen_ai.operation.name": "invoke_workflow",
                "gen_ai.agent.name": "orchestrator",
                "gen_ai.conversation.id": "conv-9",
            },
        ),
        json_span(
            2,
            parent=1,
            name="invoke_agent researcher",
            start=1,
            end=50,
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "researcher"},
        ),
        json_span(
            3,
            parent=2,
            name="chat gpt-4o",
            start=2,
            end=10,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.system_instructions": json.dumps(
                    [{"type": "text", "content": "You plan trips."}]
                ),
                "gen_ai.input.messages": _messages("user", {"type": "text", "content": QUESTION}),
                "gen_ai.output.messages": _messages(
                    "assistant",
                    {
                        "type": "tool_call",
                        "id": "call_1",
                        "name": "search_flights",
                        "arguments": {"to": "OSL"},
                    },
                ),
            },
        ),
        json_span(
            4,
            parent=2,
            name="execute_tool search_flights",
            start=11,
            end=20,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "search_flights",
                "gen_ai.tool.call.id": "call_1",
                "gen_ai.tool.call.arguments": '{"to": "OSL"}',
                "gen_ai.tool.call.result": '[{"flight": "SK1", "price": 90}]',
            },
        ),
        json_span(
            5,
            parent=1,
            name="invoke_agent writer",
            start=51,
            end=99,
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "writer"},
        ),
        json_span(
            6,
            parent=5,
            name="chat gpt-4o",
            start=52,
            end=60,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.output.messages": _messages(
                    "assistant", {"type": "text", "content": "Booked SK1."}
                ),
            },
        ),
        json_span(
            7,
            parent=5,
            name="execute_tool book",
            start=61,
            end=70,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "book_flight",
                "gen_ai.tool.call.id": "call_2",
                "error.type": "PaymentDeclined",
            },
            status={"code": 2, "message": "card declined"},
        ),
    ]


def stored(spans: list[dict], resource: dict | None = None) -> list[dict]:
    decoded = decode_request(json_body(spans, resource), CONTENT_JSON)
    return [span_to_json(span, res) for span, res in incoming_spans_read(decoded.spans)]


def _shape(record) -> list[tuple]:
    return [
        (s.kind, s.agent, s.role, s.tool_name, s.content, s.tool_call_id, s.is_error)
        for s in record.steps
    ]


def test_it_builds_the_steps_of_a_multi_agent_trace_in_tree_order():
    record = assemble_trace(stored(multi_agent_spans()), trace_id=TRACE)
    assert [(s.kind, s.agent, s.tool_name) for s in record.steps] == [
        (StepKind.SYSTEM, "system", ""),
        (StepKind.MESSAGE, "user", ""),
        (StepKind.MESSAGE, "researcher", ""),
        (StepKind.TOOL_CALL, "researcher", "search_flights"),
        (StepKind.TOOL_RESULT, "tool", "search_flights"),
        (StepKind.MESSAGE, "writer", ""),
        (StepKind.TOOL_CALL, "writer", "book_flight"),
        (StepKind.TOOL_RESULT, "tool", "book_flight"),
    ]
    assert [s.index for s in record.steps] == list(range(8))
    assert record.steps[0].content == "You plan trips." and record.task_text == QUESTION
    assert record.steps[2].metadata["tool_calls"][0]["id"] == "call_1"
    assert record.steps[3].tool_args == {"to": "OSL"} and record.steps[3].tool_call_id == "call_1"
    assert "SK1" in record.steps[4].content
    assert record.steps[7].is_error and not record.steps[4].is_error


def test_a_tool_call_is_the_act_of_the_agent_whose_model_call_announced_it():
    """A crew's tool spans hang under the crew's span; the member's model call asked."""
    spans = multi_agent_spans()
    crew = [s for s in spans if s["spanId"] not in {spans[1]["spanId"], spans[4]["spanId"]}]
    for span in crew:
        attributes = {a["key"]: a for a in span["attributes"]}
        if span["name"].startswith("chat"):
            name = "researcher" if "gen_ai.input.messages" in attributes else "writer"
            span["attributes"].append({"key": "gen_ai.agent.name", "value": {"stringValue": name}})
        if span.get("parentSpanId"):
            span["parentSpanId"] = spans[0]["spanId"]
    record = assemble_trace(stored(crew), trace_id=TRACE)
    assert [(s.kind, s.agent, s.tool_name) for s in record.steps if s.kind != StepKind.SYSTEM] == [
        (StepKind.MESSAGE, "user", ""),
        (StepKind.MESSAGE, "researcher", ""),
        (StepKind.TOOL_CALL, "researcher", "search_flights"),
        (StepKind.TOOL_RESULT, "tool", "search_flights"),
        (StepKind.MESSAGE, "writer", ""),
        # Announced by no model call: the agent of the span it hangs under.
        (StepKind.TOOL_CALL, "orchestrator", "book_flight"),
        (StepKind.TOOL_RESULT, "tool", "book_flight"),
    ]


def test_it_reads_provider_conversation_and_agent_system():
    record = assemble_trace(stored(multi_agent_spans()), trace_id=TRACE)
    assert record.metadata["provider"] == "openai"
    assert record.metadata["conversation_id"] == "conv-9"
    assert record.agent_system == "orchestrator" and record.policy_model == "gpt-4o"
    assert record.metadata["format"] == "otlp" and record.external_id == TRACE


def test_it_gives_the_same_rollout_for_any_arrival_order_and_duplicates():
    spans = stored(multi_agent_spans())
    expected = _shape(assemble_trace(spans, trace_id=TRACE))
    rng = random.Random(7)
    for _ in range(5):
        shuffled = spans + rng.sample(spans, 3)
        rng.shuffle(shuffled)
        assert _shape(assemble_trace(shuffled, trace_id=TRACE)) == expected


def test_it_keeps_the_ended_copy_of_a_span_sent_twice():
    open_copy = json_span(1, name="root")
    ended_copy = json_span(1, name="root", end=5)
    pairs = [span_from_json(d, position=i) for i, d in enumerate(stored([ended_copy, open_copy]))]
    ((span, _),) = collapse_duplicates(pairs)
    assert span.end_ns is not None


def test_it_hangs_spans_that_arrive_before_their_parent_under_the_root():
    spans = multi_agent_spans()
    without_researcher = [s for s in spans if s["spanId"] != spans[1]["spanId"]]
    record = assemble_trace(stored(without_researcher), trace_id=TRACE)
    assert [s.tool_name for s in record.steps if s.kind == StepKind.TOOL_CALL] == [
        "search_flights",
        "book_flight",
    ]
    assert record.steps[2].metadata["parent_missing"] is True


def test_it_does_not_make_steps_of_workflow_and_create_agent_spans():
    spans = [
        json_span(
            1,
            name="invoke_workflow w",
            end=9,
            attributes={"gen_ai.operation.name": "invoke_workflow"},
        ),
        json_span(
            2,
            parent=1,
            name="create_agent a",
            start=1,
            end=2,
            attributes={"gen_ai.operation.name": "create_agent"},
        ),
        json_span(
            3,
            parent=1,
            name="chat",
            start=3,
            end=4,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.output.messages": _messages(
                    "assistant", {"type": "text", "content": "done"}
                ),
            },
        ),
    ]
    record = assemble_trace(stored(spans), trace_id=TRACE)
    assert [s.content for s in record.steps] == ["done"]
    assert [o["span_name"] for o in record.metadata["other_spans"]] == ["create_agent a"]


def test_it_reads_task_and_environment_from_the_resource():
    record = assemble_trace(
        stored(multi_agent_spans(), {"faultline.task.id": "t-3", "faultline.environment": "air"}),
        trace_id=TRACE,
    )
    assert (record.task_id, record.environment) == ("t-3", "air")


def test_it_takes_the_agent_system_the_trace_states_over_its_root_agent_and_service():
    named = assemble_trace(stored(multi_agent_spans(), {"service.name": "shop"}), trace_id=TRACE)
    assert named.agent_system not in ("", "shop")  # the root agent's name, as before
    stated = assemble_trace(
        stored(multi_agent_spans(), {"service.name": "shop", "faultline.agent_system": "crew"}),
        trace_id=TRACE,
    )
    assert stated.agent_system == "crew"
    spans = multi_agent_spans()
    spans[0]["attributes"].append(
        {"key": "faultline.agent_system", "value": {"stringValue": "crew-v2"}}
    )
    on_root = assemble_trace(stored(spans, {"faultline.agent_system": "crew"}), trace_id=TRACE)
    assert on_root.agent_system == "crew-v2"


def test_it_prefers_the_root_span_over_the_resource_for_task_and_outcome():
    spans = multi_agent_spans()
    spans[0]["attributes"] += [
        {"key": "faultline.task.id", "value": {"stringValue": "root-task"}},
        {"key": "faultline.outcome", "value": {"stringValue": "success"}},
    ]
    resource = {"faultline.task.id": "resource-task", "faultline.outcome": "failure"}
    record = assemble_trace(stored(spans, resource), trace_id=TRACE)
    assert (record.task_id, record.outcome) == ("root-task", Outcome.SUCCESS)


def test_it_takes_the_outcome_and_reward_from_the_resource():
    record = assemble_trace(stored(multi_agent_spans(), {"faultline.reward": 0.0}), trace_id=TRACE)
    assert (record.outcome, record.reward) == (Outcome.FAILURE, 0.0)


def test_it_fails_the_rollout_when_the_root_span_has_an_error_status():
    spans = multi_agent_spans()
    spans[0]["status"] = {"code": 2}
    assert assemble_trace(stored(spans), trace_id=TRACE).outcome == Outcome.FAILURE


def test_it_knows_when_the_root_has_ended():
    ended = [span_from_json(d, position=0)[0] for d in stored([json_span(1, end=5)])]
    running = [
        span_from_json(d, position=0)[0]
        for d in stored([json_span(1), json_span(2, parent=1, end=3)])
    ]
    assert root_has_ended(ended) and not root_has_ended(running)


def test_it_closes_a_trace_only_when_the_root_ended_and_it_is_quiet():
    rule = {"close_after": 30, "abandon_after": 3600}
    assert not trace_is_closed(root_ended=True, quiet_seconds=29.9, **rule)
    assert trace_is_closed(root_ended=True, quiet_seconds=30, **rule)
    assert not trace_is_closed(root_ended=False, quiet_seconds=3599, **rule)
    assert trace_is_closed(root_ended=False, quiet_seconds=3600, **rule)


def test_it_round_trips_a_span_through_its_stored_json():
    (data,) = stored([json_span(1, name="root", end=5, attributes={"k": 1.5})])
    span, resource = span_from_json(json.loads(json.dumps(data)), position=3)
    assert span_to_json(span, resource) == data and span.position == 3


def test_it_lets_a_long_trace_wait_in_proportion_to_its_length():
    rule = {"seconds_per_span": 0.002, "free_below_spans": 200}
    assert rebuild_wait(built_from_spans=5000, seconds_since_built=4.0, **rule) == 6.0
    assert rebuild_wait(built_from_spans=5000, seconds_since_built=11.0, **rule) == 0.0
    assert rebuild_wait(built_from_spans=199, seconds_since_built=0.0, **rule) == 0.0
    assert rebuild_wait(built_from_spans=5000, seconds_since_built=None, **rule) == 0.0
