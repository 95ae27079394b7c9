"""Langfuse observations and scores as spans in OpenTelemetry GenAI terms.

The Langfuse parser (ingest.parsers.langfuse) turns each observation of a trace into a
:class:`~ingest.core.spans.Span` carrying the attributes ingest.core.genai reads, so a
Langfuse trace becomes steps through the same code as OTLP and OpenInference traces:

- GENERATION is a model call (``chat``): ``input`` and ``output`` become
  ``gen_ai.input.messages`` / ``gen_ai.output.messages``, ``model`` the requested model.
  Messages may be a list of ``{role, content, tool_calls?}``, one message, plain text (a
  prompt, an answer: the default role is user for the input, assistant for the output),
  ``{"messages": [...], "tools": [...]}`` (Langfuse's OpenAI integration when tools are
  given; the other keys stay in the ``input`` attribute) or a one-item list of such a
  list (LangChain's batch of one). Tool calls follow OpenAI
  (``{id, type, function: {name, arguments}}``); LangChain's ``{id, name, args}`` and its
  ``additional_kwargs.tool_calls`` are read too. Any other value is a message whose text
  is its JSON.
- TOOL is a tool call and its result (``name``, ``input`` the arguments, ``output`` the
  result); RETRIEVER is read as a tool named after the observation, as OpenInference's
  RETRIEVER spans are.
- AGENT names (``name``) the agent of everything below it.
- SPAN, EVENT, CHAIN, EMBEDDING, EVALUATOR, GUARDRAIL and any other type are not steps;
  their ``input``/``output`` stay in the attributes ``input.value`` / ``output.value``.
- ``level`` ERROR is an error status, with ``statusMessage`` as its message; the level
  itself and every other field (usage, cost, metadata, prompt...) stay in the span's
  ``extra``.

The trace itself is the root span (:func:`trace_spans`), id ``trace:<trace id>``, so that
every observation without ``parentObservationId`` hangs under it: its ``input`` is the
task text when no user message gives one, ``sessionId`` the conversation id, and
``faultline.*`` keys of its ``metadata`` (``faultline.outcome``, ``faultline.reward``,
``faultline.task.id``...) are read as on an OTLP root span. Its status is an error when
the trace has a single top-level observation (the run itself, as Langfuse's ``@observe``
and OpenTelemetry-based SDKs record it) and that observation is at level ERROR: the run
raised. An ERROR deeper down is an error of that step only: agents recover from failed
tool calls. Scores become evaluation events (:func:`score_event`) on the observation they
score, else on the trace.

Example:
    >>> span = observation_span({"id": "o1", "type": "TOOL", "name": "search",
    ...     "input": {"q": "x"}, "output": "3 hits", "level": "ERROR",
    ...     "statusMessage": "timeout"}, trace_id="t1", root_id="trace:t1",
    ...     where="trace t1", index=0)
    >>> span.attributes["gen_ai.tool.name"], span.status, span.status_message
    ('search', 'error', 'timeout')
    >>> span.parent_id, span.record
    ('trace:t1', 'trace t1, observation o1')
"""

from __future__ import annotations

from typing import Any

from ingest.core.chat import chat_messages_to_steps
from ingest.core.errors import TraceParseError
from ingest.core.genai_events import EVALUATION_EVENT
from ingest.core.langchain_messages import chat_messages
from ingest.core.spans import STATUS_ERROR, STATUS_UNSET, Span, datetime_to_ns, json_text
from ingest.core.validate import (
    optional_choice,
    optional_list,
    optional_number,
    optional_str,
    optional_time,
    require_list,
    require_object,
    require_str,
    required_id,
    text_of,
)

MSG_OTHER_TRACE = "The observation belongs to trace {other}, not to trace {trace_id}."

LEVELS = ("DEBUG", "DEFAULT", "WARNING", "ERROR")
_OPERATIONS = {
    "GENERATION": "chat",
    "TOOL": "execute_tool",
    "RETRIEVER": "execute_tool",
    "AGENT": "invoke_agent",
}
_CONSUMED = {
    "id",
    "traceId",
    "parentObservationId",
    "name",
    "startTime",
    "endTime",
    "statusMessage",
    "input",
    "output",
}
ROOT_PREFIX = "trace:"
_TRACE_CONSUMED = {"id", "observations", "scores", "sessionId"}


def _generation(obs: dict[str, Any], record: str, attributes: dict[str, Any]) -> None:
    for key, role, attribute in (
        ("input", "user", "gen_ai.input.messages"),
        ("output", "assistant", "gen_ai.output.messages"),
    ):
        messages, field, rest = chat_messages(obs.get(key), field=key, default_role=role)
        # The step builder reads these messages with the chat rules; reading them here
        # first names a bad one by the Langfuse field it came from.
        chat_messages_to_steps(messages, record=record, field=field)
        if messages:
            attributes[attribute] = messages
        if rest:
            attributes[key] = rest
    model = optional_str(obs, "model", record=record)
    if model:
        attributes["gen_ai.request.model"] = model


def observation_span(raw: Any, *, trace_id: str, root_id: str, where: str, index: int) -> Span:
    """One observation of trace ``trace_id`` as a span; a top-level one hangs under the
    trace's own span ``root_id``. ``where`` names the trace in errors."""
    obs = require_object(raw, record=f"{where}, observations[{index}]")
    obs_id = required_id(obs, "id", record=f"{where}, observations[{index}]")
    record = f"{where}, observation {obs_id}"
    other = optional_str(obs, "traceId", record=record)
    if other and other != trace_id:
        raise TraceParseError(
            MSG_OTHER_TRACE.format(other=other, trace_id=trace_id), record=record, field="traceId"
        )
    kind = optional_str(obs, "type", record=record).upper()
    name = optional_str(obs, "name", record=record)
    level = optional_choice(obs, "level", LEVELS, record=record, default="DEFAULT")
    attributes: dict[str, Any] = {"gen_ai.operation.name": _OPERATIONS.get(kind, kind.lower())}
    if kind == "GENERATION":
        _generation(obs, record, attributes)
    elif kind in ("TOOL", "RETRIEVER"):
        attributes["gen_ai.tool.name"] = name
        if obs.get("input") is not None:
            attributes["gen_ai.tool.call.arguments"] = obs["input"]
        if obs.get("output") is not None:
            attributes["gen_ai.tool.call.result"] = obs["output"]
    else:
        if kind == "AGENT" and name:
            attributes["gen_ai.agent.name"] = name
        for key in ("input", "output"):
            if obs.get(key) is not None:
                attributes[f"{key}.value"] = obs[key]
    consumed = (_CONSUMED | {"model"}) if kind == "GENERATION" else _CONSUMED
    extra = {k: v for k, v in obs.items() if k not in consumed and v is not None}
    if isinstance(extra.get("metadata"), str):
        # Langfuse's older trace download writes metadata as JSON text.
        extra["metadata"] = json_text(extra["metadata"], record=record, field="metadata")
    start = optional_time(obs, "startTime", record=record)
    end = optional_time(obs, "endTime", record=record)
    optional_time(obs, "completionStartTime", record=record)
    return Span(
        trace_id=trace_id,
        span_id=obs_id,
        parent_id=optional_str(obs, "parentObservationId", record=record) or root_id,
        name=name,
        start_ns=datetime_to_ns(start),
        end_ns=datetime_to_ns(end),
        status=STATUS_ERROR if level == "ERROR" else STATUS_UNSET,
        status_message=optional_str(obs, "statusMessage", record=record),
        attributes=attributes,
        extra=extra,
        record=record,
        position=index + 1,
    )


def score_event(raw: Any, *, where: str, index: int) -> tuple[str, Any, dict[str, Any]]:
    """A score as a ``gen_ai.evaluation.result`` event: (the observation it scores or "",
    its time for ordering, the event). Only a CATEGORICAL score's ``stringValue`` is a
    label, the one thing the shared rule reads as pass or fail (ingest.core.genai_events);
    a number, or a boolean's True/False, answers whatever the score's name asks.

    Example:
        >>> score_event({"name": "verdict", "dataType": "CATEGORICAL", "stringValue": "pass",
        ...              "comment": "ok"}, where="trace t1", index=0)[2]["attributes"]
        {'gen_ai.evaluation.name': 'verdict', 'gen_ai.evaluation.score.label': 'pass', 'gen_ai.evaluation.explanation': 'ok'}
    """
    record = f"{where}, scores[{index}]"
    score = require_object(raw, record=record)
    attributes: dict[str, Any] = {
        "gen_ai.evaluation.name": require_str(score, "name", record=record)
    }
    value = optional_number(score, "value", record=record)
    if value is not None:
        attributes["gen_ai.evaluation.score.value"] = value
    label = optional_str(score, "stringValue", record=record)
    if label and optional_str(score, "dataType", record=record).upper() == "CATEGORICAL":
        attributes["gen_ai.evaluation.score.label"] = label
    comment = optional_str(score, "comment", record=record)
    if comment:
        attributes["gen_ai.evaluation.explanation"] = comment
    observation = optional_str(score, "observationId", record=record)
    when = optional_time(score, "timestamp", record=record)
    return observation, when, {"name": EVALUATION_EVENT, "attributes": attributes, "score": score}


def _input_text(value: Any) -> str:
    """A trace's input as text: its first user message when it reads as chat messages,
    else the text (or JSON) of the whole."""
    messages, _, _ = chat_messages(value, field="input", default_role="user")
    first_user = next(
        (m.get("content") for m in messages if m.get("role") == "user" and m.get("content")), None
    )
    return text_of(first_user if first_user is not None else value)


def trace_spans(trace: dict[str, Any], *, trace_id: str, where: str) -> list[Span]:
    """The trace's own span first, then one span per observation, each score an event of
    the span it scores (by time, so the latest is the last).

    Example:
        >>> spans = trace_spans({"id": "t1", "input": "Book a flight", "observations": [
        ...     {"id": "o1", "type": "AGENT", "name": "planner", "level": "ERROR",
        ...      "statusMessage": "ValueError: no seats"}]}, trace_id="t1", where="trace t1")
        >>> [(s.span_id, s.parent_id, s.status) for s in spans]
        [('trace:t1', '', 'error'), ('o1', 'trace:t1', 'error')]
        >>> spans[0].attributes["input.value"], spans[0].status_message
        ('Book a flight', 'ValueError: no seats')
    """
    root_id = ROOT_PREFIX + trace_id
    observations = [
        observation_span(raw, trace_id=trace_id, root_id=root_id, where=where, index=index)
        for index, raw in enumerate(require_list(trace, "observations", record=where))
    ]
    attributes: dict[str, Any] = {}
    if trace.get("input") not in (None, ""):
        attributes["input.value"] = _input_text(trace["input"])
    session = optional_str(trace, "sessionId", record=where)
    if session:
        attributes["gen_ai.conversation.id"] = session
    metadata = json_text(trace.get("metadata"), record=where, field="metadata")
    if isinstance(metadata, dict):
        attributes.update({k: v for k, v in metadata.items() if k.startswith("faultline.")})
    top = [span for span in observations if span.parent_id == root_id]
    failed = len(top) == 1 and top[0].status == STATUS_ERROR
    root = Span(
        trace_id=trace_id,
        span_id=root_id,
        parent_id="",
        name=optional_str(trace, "name", record=where),
        start_ns=datetime_to_ns(optional_time(trace, "timestamp", record=where)),
        status=STATUS_ERROR if failed else STATUS_UNSET,
        status_message=top[0].status_message if failed else "",
        attributes=attributes,
        # A text input is kept whole in input.value; a structured one is kept as it is too.
        extra={
            k: v
            for k, v in trace.items()
            if k not in _TRACE_CONSUMED
            and v is not None
            and not (k == "input" and isinstance(v, str))
        },
        record=where,
        position=0,
    )
    spans = [root, *observations]
    by_id = {span.span_id: span for span in observations}
    scored = [
        score_event(raw, where=where, index=index)
        for index, raw in enumerate(optional_list(trace, "scores", record=where))
    ]
    # Scores without a time keep their file order, before the timed ones.
    scored.sort(key=lambda item: (item[1] is not None, item[1].timestamp() if item[1] else 0.0))
    for observation, _, event in scored:
        target = by_id.get(observation, root)
        target.extra.setdefault("events", []).append(event)
    return spans
