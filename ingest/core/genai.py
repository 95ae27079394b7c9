"""OpenTelemetry GenAI spans (one trace) to a trajectory; shared by otlp_json and otel_sdk_spans.

Span roles, by ``gen_ai.operation.name`` (or, when absent, by the attributes present):

- model call (chat, generate_content, text_completion, call_llm, or any span carrying
  message attributes): its *new* input messages become steps (system, user, and tool
  results not already produced by a tool span), then its output becomes one assistant step.
  Input messages repeat the conversation so far on every call, so a message already seen
  (same role and text, or the same tool-call id) is not repeated, as many times as it
  was seen: a user who says "Yes." twice said it twice;
- tool execution (execute_tool, or a span with ``gen_ai.tool.name``): a ``tool_call`` step
  (name, arguments, call id) and a ``tool_result`` step (result, error). The call is the
  act of the agent whose model call announced it, when that call names an agent: a
  crew's tool spans often hang under the crew's span, not under the member that asked;
- everything else (invoke_agent, create_agent, framework spans): not a step; the root's
  attributes go to trajectory metadata, the others to ``metadata.other_spans``.

When the trace has tool spans, the tool calls an assistant output announces are kept in
that step's ``metadata.tool_calls`` instead of becoming steps of their own, so each call
appears once (the tool span carries its result and timing). A tool span without a call id
runs the first announced call of its tool, and takes that id, so the result the next model
call repeats in its input is not a second step. Without tool spans they become
``tool_call`` steps.

Messages are read from ``gen_ai.system_instructions``, ``gen_ai.input.messages`` and
``gen_ai.output.messages`` (parts: text, tool_call, tool_call_response with ``result`` or
``response``; reasoning parts become thought text), from the older flattened
``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` keys, and from the SDK exporters'
``gen_ai.output`` (+ ``gen_ai.output.type``). Any value may be JSON text or structured.

Outcome: the root span's status ERROR (or an ``error.type`` on it) is a failure. OK and
UNSET say nothing about the task (instrumentations set OK on any call that did not raise),
so the outcome is unknown, unless the root carries ``faultline.outcome``
(success/failure) or ``faultline.reward`` (a number; >= 1 is a success).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ingest.core.chat import chat_messages_to_steps, looks_like_error, parse_arguments
from ingest.core.chat_dialects import openai_shaped
from ingest.core.genai_events import declared_outcome, error_text
from ingest.core.genai_messages import (
    fingerprint,
    flattened,
    instructions_text,
    is_flattened_key,
    normalise,
    sdk_output,
    tool_call_name,
)
from ingest.core.records import Outcome, StepKind, StepRecord, TrajectoryRecord
from ingest.core.spans import STATUS_ERROR, STATUS_OK, Span, json_text, tree_order
from ingest.core.validate import text_of
from ingest.core.vocabulary import is_mutating_tool

LLM_OPERATIONS = {"chat", "generate_content", "text_completion", "call_llm", "completion"}
TOOL_OPERATIONS = {"execute_tool"}
AGENT_OPERATIONS = {"invoke_agent", "create_agent"}
MESSAGE_KEYS = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.output",
)
CONSUMED_LLM_KEYS = {*MESSAGE_KEYS, "gen_ai.output.type"}
CONSUMED_TOOL_KEYS = {
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.args",
    "gen_ai.tool.call.result",
    "gen_ai.output",
    "gen_ai.output.type",
}


def _operation(span: Span) -> str:
    operation = span.attributes.get("gen_ai.operation.name")
    return operation if isinstance(operation, str) else ""


def _is_llm(span: Span) -> bool:
    operation = _operation(span)
    if operation in LLM_OPERATIONS:
        return True
    if operation:
        return False
    return any(key in span.attributes for key in MESSAGE_KEYS) or any(
        is_flattened_key(key) for key in span.attributes
    )


def _is_tool(span: Span) -> bool:
    operation = _operation(span)
    return operation in TOOL_OPERATIONS or (not operation and "gen_ai.tool.name" in span.attributes)


class _Conversation:
    """What has been turned into steps so far, to skip repeated input messages."""

    def __init__(self, has_tool_spans: bool) -> None:
        self.has_tool_spans = has_tool_spans
        # How many times each message (by fingerprint) is already a step: a conversation
        # may say the same thing twice ("Yes, go ahead." to each of three questions), and
        # each model call's input repeats all of them.
        self.seen: Counter[tuple[str, ...]] = Counter()
        self.steps: list[StepRecord] = []
        # Calls a model announced that no tool span has run yet, as (tool name, call id,
        # the announcing model call's agent): a tool span without an id (OpenInference's
        # TOOL spans often have none) is the first of them with its name, so the result
        # the next model call repeats in its input (by that id) is known as seen and not
        # turned into a second step.
        self.announced: list[tuple[str, str, str]] = []
        # The tool of each call id stored so far: a result whose call an earlier span
        # answered (its input repeats that turn) takes its name from there.
        self.called: dict[str, str] = {}

    def add(self, step: StepRecord) -> None:
        if step.kind == StepKind.TOOL_CALL and step.tool_call_id:
            self.called[step.tool_call_id] = step.tool_name
        elif step.kind == StepKind.TOOL_RESULT and not step.tool_name and step.tool_call_id:
            step.tool_name = self.called.get(step.tool_call_id, "")
        self.steps.append(step)

    def announce(self, calls: list[Any], agent: str) -> None:
        for call in calls:
            name = tool_call_name(call)
            if name and call.get("id"):
                self.announced.append((name, str(call["id"]), agent))

    def executed(self, name: str, call_id: str) -> tuple[str, str]:
        """The call id a tool span ran under (its own, else the announced one; "" if none)
        and the agent whose model call announced it ("" if none did)."""
        for position, (announced_name, announced_id, agent) in enumerate(self.announced):
            if (call_id and announced_id == call_id) or (not call_id and announced_name == name):
                del self.announced[position]
                return announced_id, agent
        return call_id, ""


def _span_meta(span: Span, consumed: set[str]) -> dict[str, Any]:
    meta: dict[str, Any] = {"span_id": span.span_id, "span_name": span.name}
    if span.parent_id:
        meta["parent_span_id"] = span.parent_id
    if span.parent_missing:
        meta["parent_missing"] = True
    meta["status"] = span.status
    if span.status_message:
        meta["status_message"] = span.status_message
    attributes = {
        k: v for k, v in span.attributes.items() if k not in consumed and not is_flattened_key(k)
    }
    if attributes:
        meta["attributes"] = attributes
    if span.extra:
        meta["span"] = span.extra
    return meta


def _llm_steps(span: Span, agent: str, conversation: _Conversation) -> None:
    attributes = span.attributes
    record = span.record
    inputs: list[dict[str, Any]] = []
    if "gen_ai.system_instructions" in attributes:
        system = json_text(
            attributes["gen_ai.system_instructions"],
            record=record,
            field="gen_ai.system_instructions",
        )
        inputs.append({"role": "system", "content": instructions_text(system)})
    if "gen_ai.input.messages" in attributes:
        decoded = json_text(
            attributes["gen_ai.input.messages"], record=record, field="gen_ai.input.messages"
        )
        inputs.extend(normalise(decoded, "user"))
    inputs.extend(flattened(attributes, "prompt"))
    if "gen_ai.output.messages" in attributes:
        decoded = json_text(
            attributes["gen_ai.output.messages"], record=record, field="gen_ai.output.messages"
        )
        outputs = normalise(decoded, "assistant")
    else:
        outputs = flattened(attributes, "completion") or sdk_output(attributes, record)
    # A provider's own shape (Anthropic's tool_use and tool_result blocks...) as OpenAI's
    # first: a turn is then known again by its call ids whichever shape each span wrote it
    # in, and the calls a tool span will report are taken out below, not stored twice.
    inputs = [m for _, m in openai_shaped(inputs, record=record, field="gen_ai.input.messages")]
    outputs = [m for _, m in openai_shaped(outputs, record=record, field="gen_ai.output.messages")]
    fresh = []
    occurrences: Counter[tuple[str, ...]] = Counter()
    for message in inputs:
        key = fingerprint(message)
        occurrences[key] += 1
        if occurrences[key] > conversation.seen[key]:
            conversation.seen[key] += 1
            fresh.append(message)
    for step in chat_messages_to_steps(fresh, record=record, field="gen_ai.input.messages"):
        step.metadata.update({"span_id": span.span_id, "from": "input"})
        step.started_at = span.started_at
        conversation.add(step)
    content_absent = not inputs and not outputs
    for message in outputs:
        conversation.seen[fingerprint(message)] += 1
    planned: list[Any] = []
    if conversation.has_tool_spans:
        for message in outputs:
            if message.get("tool_calls"):
                planned.extend(message.pop("tool_calls"))
        conversation.announce(planned, agent)
    output_steps = chat_messages_to_steps(
        [
            m
            for m in outputs
            if m.get("role") == "assistant" and (m.get("content") or m.get("tool_calls"))
        ]
        + [m for m in outputs if m.get("role") != "assistant"],
        record=record,
        field="gen_ai.output.messages",
        agent=agent,
    )
    if not output_steps:
        output_steps = [
            StepRecord(index=0, role="assistant", kind=StepKind.MESSAGE, agent=agent or "assistant")
        ]
    meta = _span_meta(span, CONSUMED_LLM_KEYS)
    if planned:
        meta["tool_calls"] = planned
    if content_absent:
        meta["content_absent"] = True
    output_steps[0].metadata.update(meta)
    for step in output_steps:
        step.started_at, step.ended_at = span.started_at, span.ended_at
        step.is_error = step.is_error or span.status == STATUS_ERROR
        conversation.add(step)


def _tool_steps(span: Span, agent: str, conversation: _Conversation) -> None:
    attributes = span.attributes
    name = attributes.get("gen_ai.tool.name")
    if not isinstance(name, str) or not name:
        name = span.name.removeprefix("execute_tool").strip()
    call_id = attributes.get("gen_ai.tool.call.id")
    call_id, announcer = conversation.executed(name, str(call_id) if call_id is not None else "")
    raw_args = attributes.get("gen_ai.tool.call.arguments", attributes.get("gen_ai.tool.args"))
    raw_result = attributes.get("gen_ai.tool.call.result", attributes.get("gen_ai.output"))
    result = (
        raw_result
        if isinstance(raw_result, str)
        else ("" if raw_result is None else text_of(raw_result))
    )
    failed = span.status == STATUS_ERROR or "error.type" in attributes
    if failed and not result.strip():
        # A call that raised records no output: what went wrong is the result the agent
        # saw, and what the error signals and templates read.
        result = error_text(attributes, span.status_message, span.extra)
    meta = _span_meta(span, CONSUMED_TOOL_KEYS)
    if raw_args is None and raw_result is None:
        meta["content_absent"] = True
    conversation.seen[("tool", call_id) if call_id else ("tool-name", name)] += 1
    # The next model call's input repeats the result; an instrumentation that leaves the
    # call id off that message (many do) is known by the result's text instead.
    conversation.seen[fingerprint({"role": "tool", "content": result})] += 1
    conversation.add(
        StepRecord(
            index=0,
            role="assistant",
            kind=StepKind.TOOL_CALL,
            agent=announcer or agent or "assistant",
            tool_name=name,
            tool_args=parse_arguments(raw_args),
            tool_call_id=call_id,
            is_mutating=is_mutating_tool(name),
            started_at=span.started_at,
            ended_at=span.ended_at,
            metadata=meta,
        )
    )
    conversation.add(
        StepRecord(
            index=0,
            role="tool",
            kind=StepKind.TOOL_RESULT,
            content=result,
            agent="tool",
            tool_name=name,
            tool_call_id=call_id,
            is_error=failed or looks_like_error(result),
            started_at=span.started_at,
            ended_at=span.ended_at,
            metadata={"span_id": span.span_id, "from": "result"},
        )
    )


def _generic_step(span: Span, agent: str) -> StepRecord:
    """A span of a trace without any GenAI span: kept as a step so the trace is not empty."""
    return StepRecord(
        index=0,
        role="system",
        kind=StepKind.SYSTEM,
        content=span.name,
        agent=agent or "system",
        is_error=span.status == STATUS_ERROR,
        started_at=span.started_at,
        ended_at=span.ended_at,
        metadata=_span_meta(span, set()) | {"generic_span": True},
    )


def _agent_names(ordered: list[Span]) -> dict[str, str]:
    """The nearest enclosing agent name of every span (itself included)."""
    names: dict[str, str] = {}
    root_id = ordered[0].span_id if ordered else ""
    for span in ordered:
        own = span.attributes.get("gen_ai.agent.name") or span.attributes.get("agent.name")
        # A span whose parent is missing hangs under the root, so it takes the root's agent.
        inherited = names.get(root_id if span.parent_missing else span.parent_id, "")
        names[span.span_id] = own if isinstance(own, str) and own else inherited
    return names


def _outcome(root: Span) -> tuple[str, float | None]:
    declared = declared_outcome(root.attributes)
    if declared is not None:
        return declared
    if root.status == STATUS_ERROR or "error.type" in root.attributes:
        return Outcome.FAILURE, None
    return Outcome.UNKNOWN, None


def genai_trajectory(
    spans: list[Span], *, trace_id: str, id_field: str, extra: dict[str, Any] | None = None
) -> TrajectoryRecord:
    """Build one trajectory from the spans of one trace (see the module docstring)."""
    ordered = tree_order(spans, id_field=id_field)
    root = ordered[0]
    agents = _agent_names(ordered)
    conversation = _Conversation(has_tool_spans=any(_is_tool(span) for span in ordered))
    other_spans: list[dict[str, Any]] = []
    model = ""
    for span in ordered:
        agent = agents.get(span.span_id, "")
        if _is_tool(span):
            _tool_steps(span, agent, conversation)
        elif _is_llm(span):
            model = model or str(
                span.attributes.get("gen_ai.request.model")
                or span.attributes.get("gen_ai.response.model")
                or ""
            )
            _llm_steps(span, agent, conversation)
        elif span is not root:
            other_spans.append(
                _span_meta(span, set()) | {"start_ns": span.start_ns, "end_ns": span.end_ns}
            )
    steps = conversation.steps
    if not steps:
        steps = [_generic_step(span, agents.get(span.span_id, "")) for span in ordered]
        other_spans = []
    for position, step in enumerate(steps):
        step.index = position
    outcome, reward = _outcome(root)
    metadata: dict[str, Any] = dict(extra or {})
    metadata["root_span"] = _span_meta(root, set()) | {
        "start_ns": root.start_ns,
        "end_ns": root.end_ns,
    }
    metadata["span_count"] = len(ordered)
    if other_spans:
        metadata["other_spans"] = other_spans
    if any(step.metadata.get("content_absent") for step in steps):
        metadata["content_absent"] = True
    task_text = next((step.content for step in steps if step.role == "user" and step.content), "")
    agent_system = agents.get(root.span_id) or next((name for name in agents.values() if name), "")
    return TrajectoryRecord(
        external_id=trace_id,
        task_text=task_text,
        agent_system=agent_system,
        policy_model=model or str(root.attributes.get("gen_ai.request.model") or ""),
        outcome=outcome,
        reward=reward,
        metadata=metadata,
        steps=steps,
    )


__all__ = ["STATUS_OK", "genai_trajectory"]
