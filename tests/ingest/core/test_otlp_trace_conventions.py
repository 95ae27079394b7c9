"""The older ways GenAI spans carry messages (span events, flattened keys), evaluation
result events, and the attributes of OpenInference-instrumented frameworks."""

from __future__ import annotations

from ingest.core.otlp_trace import assemble_trace
from ingest.core.records import Outcome, StepKind
from tests.ingest.core.otlp_builders import TRACE, json_span
from tests.ingest.core.test_otlp_trace import QUESTION, multi_agent_spans, stored


def _evaluated(label: str | None, score: float = 0.2) -> list[dict]:
    spans = multi_agent_spans()
    attributes = [
        {"key": "gen_ai.evaluation.name", "value": {"stringValue": "task_success"}},
        {"key": "gen_ai.evaluation.score.value", "value": {"doubleValue": score}},
    ]
    if label is not None:
        attributes.append({"key": "gen_ai.evaluation.score.label", "value": {"stringValue": label}})
    spans[0]["events"] = [
        {"name": "gen_ai.evaluation.result", "timeUnixNano": "1", "attributes": attributes}
    ]
    return spans


def test_it_takes_the_outcome_from_a_pass_or_fail_evaluation_event():
    assert assemble_trace(stored(_evaluated("passed")), trace_id=TRACE).outcome == Outcome.SUCCESS
    record = assemble_trace(stored(_evaluated("fail")), trace_id=TRACE)
    assert record.outcome == Outcome.FAILURE
    assert record.metadata["evaluations"][0]["name"] == "task_success"


def test_it_keeps_an_unlabelled_evaluation_score_without_deciding_the_outcome():
    record = assemble_trace(stored(_evaluated(None, score=0.9)), trace_id=TRACE)
    assert record.outcome == Outcome.UNKNOWN
    assert record.metadata["evaluations"][0]["score_value"] == 0.9


def test_it_reads_messages_from_the_older_per_message_events():
    event_span = json_span(
        2,
        parent=1,
        name="chat",
        start=1,
        end=2,
        attributes={"gen_ai.operation.name": "chat", "gen_ai.system": "anthropic"},
        events=[
            {
                "name": "gen_ai.user.message",
                "attributes": [{"key": "content", "value": {"stringValue": "hello"}}],
            },
            {
                "name": "gen_ai.choice",
                "attributes": [{"key": "content", "value": {"stringValue": "hi there"}}],
            },
        ],
    )
    record = assemble_trace(stored([json_span(1, name="run", end=9), event_span]), trace_id=TRACE)
    assert [(s.role, s.content) for s in record.steps] == [
        ("user", "hello"),
        ("assistant", "hi there"),
    ]
    assert record.metadata["provider"] == "anthropic"


def test_it_reads_the_older_prompt_and_completion_content_events():
    event_span = json_span(
        2,
        parent=1,
        name="chat",
        start=1,
        end=2,
        events=[
            {
                "name": "gen_ai.content.prompt",
                "attributes": [
                    {
                        "key": "gen_ai.prompt",
                        "value": {"stringValue": '[{"role": "user", "content": "2+2?"}]'},
                    }
                ],
            },
            {
                "name": "gen_ai.content.completion",
                "attributes": [
                    {
                        "key": "gen_ai.completion",
                        "value": {"stringValue": '[{"role": "assistant", "content": "4"}]'},
                    }
                ],
            },
        ],
    )
    record = assemble_trace(stored([json_span(1, name="run", end=9), event_span]), trace_id=TRACE)
    assert [(s.role, s.content) for s in record.steps] == [("user", "2+2?"), ("assistant", "4")]


def test_it_reads_the_older_flattened_prompt_keys():
    span = json_span(
        2,
        parent=1,
        name="chat",
        start=1,
        end=2,
        attributes={
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "q",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "a",
        },
    )
    record = assemble_trace(stored([json_span(1, name="run", end=9), span]), trace_id=TRACE)
    assert [(s.role, s.content) for s in record.steps] == [("user", "q"), ("assistant", "a")]


def test_it_reads_spans_of_an_openinference_instrumented_framework():
    spans = [
        json_span(
            1,
            name="Agent",
            end=9,
            attributes={"openinference.span.kind": "AGENT", "input.value": QUESTION},
        ),
        json_span(
            2,
            parent=1,
            name="ChatCompletion",
            start=1,
            end=2,
            attributes={
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o-mini",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c1",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "search_flights",
            },
        ),
        json_span(
            3,
            parent=1,
            name="search_flights",
            start=3,
            end=4,
            attributes={
                "openinference.span.kind": "TOOL",
                "tool.name": "search_flights",
                "tool.parameters": '{"to": "OSL"}',
                "output.value": "SK1",
            },
        ),
    ]
    record = assemble_trace(stored(spans), trace_id=TRACE)
    assert [(s.kind, s.agent, s.tool_name) for s in record.steps] == [
        (StepKind.MESSAGE, "Agent", ""),
        (StepKind.TOOL_CALL, "Agent", "search_flights"),
        (StepKind.TOOL_RESULT, "tool", "search_flights"),
    ]
    assert record.task_text == QUESTION and record.policy_model == "gpt-4o-mini"
    assert record.steps[1].tool_args == {"to": "OSL"}


def test_a_tool_span_without_an_id_takes_the_call_id_its_model_call_announced():
    # OpenInference TOOL spans often carry no call id; the next model call repeats the
    # result in its input under the announced id, which must not become a second result.
    def llm(n: int, start: int, **messages: str) -> dict:
        return json_span(
            n, parent=1, name="ChatCompletion", start=start, end=start + 1,
            attributes={"openinference.span.kind": "LLM", **messages},
        )  # fmt: skip

    call = "llm.output_messages.0.message.tool_calls.0.tool_call"
    spans = [
        json_span(1, name="Agent", end=9, attributes={"openinference.span.kind": "AGENT"}),
        llm(2, 1, **{"llm.input_messages.0.message.role": "user",
                     "llm.input_messages.0.message.content": QUESTION,
                     f"{call}.id": "c1", f"{call}.function.name": "search_flights"}),
        json_span(3, parent=1, name="search_flights", start=3, end=4,
                  attributes={"openinference.span.kind": "TOOL", "tool.name": "search_flights",
                              "output.value": "SK1"}),
        llm(4, 5, **{"llm.input_messages.0.message.role": "user",
                     "llm.input_messages.0.message.content": QUESTION,
                     "llm.input_messages.1.message.role": "tool",
                     "llm.input_messages.1.message.tool_call_id": "c1",
                     "llm.input_messages.1.message.content": "SK1",
                     "llm.output_messages.0.message.role": "assistant",
                     "llm.output_messages.0.message.content": "Take SK1."}),
    ]  # fmt: skip
    record = assemble_trace(stored(spans), trace_id=TRACE)
    assert [(s.kind, s.tool_name, s.tool_call_id) for s in record.steps] == [
        (StepKind.MESSAGE, "", ""),
        (StepKind.MESSAGE, "", ""),
        (StepKind.TOOL_CALL, "search_flights", "c1"),
        (StepKind.TOOL_RESULT, "search_flights", "c1"),
        (StepKind.MESSAGE, "", ""),
    ]
    assert record.steps[-1].content == "Take SK1."


def test_anthropic_tool_use_in_a_model_calls_output_is_one_call_beside_its_tool_span():
    # An instrumentation that writes Anthropic's blocks as the output messages: the call
    # the tool span reports is the same call, stored once (ingest.core.chat_dialects).
    import json

    output = [{"role": "assistant", "content": [
        {"type": "text", "text": "Searching."},
        {"type": "tool_use", "id": "toolu_1", "name": "search_flights", "input": {"to": "OSL"}},
    ]}]  # fmt: skip
    spans = [
        json_span(1, name="invoke_agent", end=9,
                  attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Agent"}),
        json_span(2, parent=1, name="chat", start=1, end=2,
                  attributes={"gen_ai.operation.name": "chat",
                              "gen_ai.input.messages": json.dumps([{"role": "user", "content": QUESTION}]),
                              "gen_ai.output.messages": json.dumps(output)}),
        json_span(3, parent=1, name="execute_tool search_flights", start=3, end=4,
                  attributes={"gen_ai.operation.name": "execute_tool",
                              "gen_ai.tool.name": "search_flights", "gen_ai.tool.call.id": "toolu_1",
                              "gen_ai.tool.call.arguments": json.dumps({"to": "OSL"}),
                              "gen_ai.tool.call.result": "SK1"}),
    ]  # fmt: skip
    record = assemble_trace(stored(spans), trace_id=TRACE)
    calls = [s for s in record.steps if s.kind == StepKind.TOOL_CALL]
    assert [(s.tool_name, s.tool_call_id) for s in calls] == [("search_flights", "toolu_1")]
    assert [s.kind for s in record.steps].count(StepKind.TOOL_RESULT) == 1
    assert any(s.content == "Searching." for s in record.steps)


def test_flattened_prompt_content_holding_anthropic_blocks_as_json_text_is_read():
    # Instrumentations of Anthropic's client write a non-text content as JSON text in the
    # numbered prompt keys; its tool_use and tool_result blocks are a call and a result.
    import json

    use = [{"type": "tool_use", "id": "t1", "name": "refund", "input": {"amount": 999}}]
    result = [{"type": "tool_result", "tool_use_id": "t1", "content": "over the total",
               "is_error": True}]  # fmt: skip
    chat = json_span(
        2, parent=1, name="anthropic.chat", start=1, end=2,
        attributes={"gen_ai.system": "anthropic",
                    "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": QUESTION,
                    "gen_ai.prompt.1.role": "assistant", "gen_ai.prompt.1.content": json.dumps(use),
                    "gen_ai.prompt.2.role": "user", "gen_ai.prompt.2.content": json.dumps(result),
                    "gen_ai.completion.0.role": "assistant",
                    "gen_ai.completion.0.content": "Refunded."},
    )  # fmt: skip
    record = assemble_trace(stored([json_span(1, name="run", end=9), chat]), trace_id=TRACE)
    assert [(s.kind, s.tool_name, s.is_error) for s in record.steps] == [
        (StepKind.MESSAGE, "", False),
        (StepKind.TOOL_CALL, "refund", False),
        (StepKind.TOOL_RESULT, "refund", True),
        (StepKind.MESSAGE, "", False),
    ]
    assert record.steps[1].tool_args == {"amount": 999}


def test_a_turn_repeated_in_the_next_calls_prompt_as_anthropic_blocks_is_not_stored_twice():
    # The first call answers with a tool call (numbered completion keys); the second call's
    # prompt repeats that turn and its result as Anthropic blocks in JSON text.
    import json

    use = [{"type": "tool_use", "id": "t1", "name": "refund", "input": {"amount": 5}}]
    result = [{"type": "tool_result", "tool_use_id": "t1", "content": "done"}]
    first = json_span(
        2, parent=1, name="anthropic.chat", start=1, end=2,
        attributes={"gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": QUESTION,
                    "gen_ai.completion.0.role": "assistant",
                    "gen_ai.completion.0.tool_calls.0.id": "t1",
                    "gen_ai.completion.0.tool_calls.0.name": "refund",
                    "gen_ai.completion.0.tool_calls.0.arguments": '{"amount": 5}'},
    )  # fmt: skip
    second = json_span(
        3, parent=1, name="anthropic.chat", start=3, end=4,
        attributes={"gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": QUESTION,
                    "gen_ai.prompt.1.role": "assistant", "gen_ai.prompt.1.content": json.dumps(use),
                    "gen_ai.prompt.2.role": "user", "gen_ai.prompt.2.content": json.dumps(result),
                    "gen_ai.completion.0.role": "assistant",
                    "gen_ai.completion.0.content": "Refunded."},
    )  # fmt: skip
    spans = [json_span(1, name="run", end=9), first, second]
    record = assemble_trace(stored(spans), trace_id=TRACE)
    assert [(s.kind, s.tool_name) for s in record.steps] == [
        (StepKind.MESSAGE, ""),
        (StepKind.TOOL_CALL, "refund"),
        (StepKind.TOOL_RESULT, "refund"),
        (StepKind.MESSAGE, ""),
    ]


def test_a_user_who_says_the_same_thing_twice_said_it_twice():
    # Every model call's input repeats the conversation; a confirmation given to each of
    # two questions is two turns, not one (a trial lost its user's second "Yes").
    import json

    def message(role, text):
        return {"role": role, "parts": [{"type": "text", "content": text}]}

    history = [message("user", "Book the 9:00 flight.")]
    spans = [json_span(1, name="run", end=99)]
    replies = ["Shall I book it for $120?", "And the hotel for $90?", "Done: both booked."]
    for turn, reply in enumerate(replies):
        spans.append(
            json_span(
                2 + turn, parent=1, name="chat", start=10 * turn, end=10 * turn + 5,
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.input.messages": json.dumps(history),
                    "gen_ai.output.messages": json.dumps([message("assistant", reply)]),
                },
            )
        )  # fmt: skip
        history = [*history, message("assistant", reply), message("user", "Yes, go ahead.")]
    record = assemble_trace(stored(spans), trace_id=TRACE)
    assert [(s.role, s.content) for s in record.steps] == [
        ("user", "Book the 9:00 flight."),
        ("assistant", "Shall I book it for $120?"),
        ("user", "Yes, go ahead."),
        ("assistant", "And the hotel for $90?"),
        ("user", "Yes, go ahead."),
        ("assistant", "Done: both booked."),
    ]
