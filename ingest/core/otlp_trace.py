"""One OTLP trace, as far as it has arrived, to one rollout record.

Shared by the ``otlp_json`` file parser and the OTLP/HTTP receiver, which stores every
span it accepts (:func:`span_to_json`) and rebuilds the trace's rollout from all of them
whenever more arrive (:func:`assemble_trace`). Spans come in any order, over many
requests, and exporters retry: the same span id twice is one span (the copy that has
ended wins, else the later one).

Spans of an OpenInference-instrumented framework (``openinference.span.kind``, no
``gen_ai.operation.name``) are first renamed to the GenAI conventions
(ingest.core.openinference), as the OpenInference file parser does; the root's
``input.value`` is then the task text when no user message gives one.

On top of the steps (ingest.core.genai) a trace gives its rollout:

- ``task_id`` from ``faultline.task.id`` and ``environment`` from
  ``faultline.environment``, on the root span or else the resource;
- the outcome: ``faultline.outcome`` / ``faultline.reward`` on the root span, else on the
  resource, else the root's error status, else a pass/fail ``gen_ai.evaluation.result``
  (ingest.core.genai_events); every evaluation goes to ``metadata.evaluations``;
- ``metadata.provider`` from ``gen_ai.provider.name`` (or the older ``gen_ai.system``),
  ``metadata.conversation_id`` from ``gen_ai.conversation.id``;
- ``agent_system`` from ``faultline.agent_system`` (root span, else resource), else the
  agent the root span names, else ``service.name``.

A trace is *closed* (:func:`trace_is_closed`) when its root span has ended and nothing has
arrived for ``quiet_seconds``, or, root or not, after ``abandon_seconds`` of quiet: an
agent that crashed never ends its root.

Example:
    >>> root = Span(trace_id="t1", span_id="a", parent_id="", name="run", start_ns=1,
    ...             end_ns=9, attributes={"faultline.task.id": "task-7"})
    >>> chat = Span(trace_id="t1", span_id="b", parent_id="a", name="chat", start_ns=2,
    ...             attributes={"gen_ai.operation.name": "chat",
    ...                         "gen_ai.input.messages": '[{"role": "user", "content": "hi"}]'})
    >>> stored = [span_to_json(chat, {}), span_to_json(root, {}), span_to_json(chat, {})]
    >>> record = assemble_trace(stored, trace_id="t1")
    >>> record.task_id, [step.role for step in record.steps]
    ('task-7', ['user', 'assistant'])
"""

from __future__ import annotations

from typing import Any

from ingest.core.genai import genai_trajectory
from ingest.core.genai_events import (
    declared_outcome,
    evaluation_outcome,
    evaluations_of,
    messages_from_events,
    span_events,
)
from ingest.core.openinference import SPAN_KIND_ATTRIBUTE, to_genai
from ingest.core.records import Outcome, TrajectoryRecord
from ingest.core.spans import Span

FORMAT = "otlp"
TASK_ATTRIBUTE = "faultline.task.id"
ENVIRONMENT_ATTRIBUTE = "faultline.environment"
# Which agent system a rollout belongs to, when the root agent's name is not it (one
# system, several entry agents): calibration and the labelling queue go per system.
AGENT_SYSTEM_ATTRIBUTE = "faultline.agent_system"
PROVIDER_KEYS = ("gen_ai.provider.name", "gen_ai.system")
CONVERSATION_KEY = "gen_ai.conversation.id"


def span_to_json(span: Span, resource: dict[str, Any]) -> dict[str, Any]:
    """A decoded span and its resource as one JSON-ready dict (what the receiver stores)."""
    return {
        "trace_id": span.trace_id,
        "span_id": span.span_id,
        "parent_id": span.parent_id,
        "name": span.name,
        "start_ns": span.start_ns,
        "end_ns": span.end_ns,
        "status": span.status,
        "status_message": span.status_message,
        "attributes": span.attributes,
        "extra": span.extra,
        "resource": resource,
    }


def span_from_json(data: dict[str, Any], *, position: int) -> tuple[Span, dict[str, Any]]:
    """The inverse of :func:`span_to_json`; ``position`` is the arrival order."""
    span = Span(
        trace_id=str(data["trace_id"]),
        span_id=str(data["span_id"]),
        parent_id=str(data.get("parent_id") or ""),
        name=str(data.get("name") or ""),
        start_ns=data.get("start_ns"),
        end_ns=data.get("end_ns"),
        status=str(data.get("status") or "unset"),
        status_message=str(data.get("status_message") or ""),
        attributes=dict(data.get("attributes") or {}),
        extra=dict(data.get("extra") or {}),
        record=f"span {data['span_id']}",
        position=position,
    )
    return span, dict(data.get("resource") or {})


def collapse_duplicates(
    spans: list[tuple[Span, dict[str, Any]]],
) -> list[tuple[Span, dict[str, Any]]]:
    """One copy per span id, in order of first arrival: an ended copy beats an open one,
    otherwise the later copy wins (an exporter's retry carries the same span)."""
    chosen: dict[str, tuple[Span, dict[str, Any]]] = {}
    for span, resource in spans:
        previous = chosen.get(span.span_id)
        if previous is None:
            chosen[span.span_id] = (span, resource)
        elif span.end_ns is not None or previous[0].end_ns is None:
            span.position = previous[0].position
            chosen[span.span_id] = (span, resource)
    return sorted(chosen.values(), key=lambda pair: pair[0].position)


def root_has_ended(spans: list[Span]) -> bool:
    """Whether a span without a parent (the trace's root) has an end time."""
    return any(not span.parent_id and span.end_ns is not None for span in spans)


def trace_is_closed(
    *, root_ended: bool, quiet_seconds: float, close_after: float, abandon_after: float
) -> bool:
    """The closing rule: root ended and quiet long enough, or quiet far too long.

    >>> trace_is_closed(root_ended=True, quiet_seconds=31, close_after=30, abandon_after=3600)
    True
    >>> trace_is_closed(root_ended=False, quiet_seconds=31, close_after=30, abandon_after=3600)
    False
    """
    return (root_ended and quiet_seconds >= close_after) or quiet_seconds >= abandon_after


def rebuild_wait(
    *,
    built_from_spans: int,
    seconds_since_built: float | None,
    seconds_per_span: float,
    free_below_spans: int,
) -> float:
    """Seconds until a live trace's rollout may be rebuilt again (0: now).

    A rollout is rebuilt from all of its trace's spans, so rebuilding a long trace on every
    request that brings it a few more spans costs the square of its length. A trace built
    from ``free_below_spans`` spans or more is rebuilt at most once per
    ``built_from_spans * seconds_per_span`` seconds instead: each rebuild is paid for by
    the time waited, so a trace's rebuilds take a bounded share of a core however long
    it grows, and it is never further behind than that wait.

    >>> rebuild_wait(built_from_spans=1000, seconds_since_built=0.5,
    ...              seconds_per_span=0.002, free_below_spans=200)
    1.5
    >>> rebuild_wait(built_from_spans=50, seconds_since_built=0.0,
    ...              seconds_per_span=0.002, free_below_spans=200)
    0.0
    """
    if seconds_since_built is None or built_from_spans < free_below_spans:
        return 0.0
    return max(0.0, built_from_spans * seconds_per_span - seconds_since_built)


def _first_attribute(spans: list[Span], keys: tuple[str, ...]) -> str:
    for span in spans:
        for key in keys:
            value = span.attributes.get(key)
            if isinstance(value, (str, int)) and not isinstance(value, bool) and value != "":
                return str(value)
    return ""


def trace_record(
    spans: list[Span],
    *,
    trace_id: str,
    resource: dict[str, Any],
    extra: dict[str, Any],
    id_field: str = "spanId",
) -> TrajectoryRecord:
    """The rollout of one trace's spans (each span id once), as the module docstring says."""
    evaluations: list[dict[str, Any]] = []
    for span in spans:
        kind = span.attributes.get(SPAN_KIND_ATTRIBUTE)
        if isinstance(kind, str) and "gen_ai.operation.name" not in span.attributes:
            span.attributes = to_genai(kind, span.name, span.attributes)
        events = span_events(span.extra)
        if events:
            span.attributes.update(messages_from_events(span.attributes, events))
            evaluations.extend(evaluations_of(events, span_id=span.span_id))
    record = genai_trajectory(
        spans, trace_id=trace_id, id_field=id_field, extra=extra | {"resource": resource}
    )
    root_id = record.metadata["root_span"]["span_id"]
    root = next(span for span in spans if span.span_id == root_id)
    ordered = sorted(spans, key=lambda span: (span.span_id != root_id, span.position))

    def stated(attribute: str) -> str:
        return _first_attribute([root], (attribute,)) or str(resource.get(attribute) or "")

    record.task_id, record.environment = stated(TASK_ATTRIBUTE), stated(ENVIRONMENT_ATTRIBUTE)
    record.agent_system = stated(AGENT_SYSTEM_ATTRIBUTE) or record.agent_system
    resource_outcome = declared_outcome(resource)
    if declared_outcome(root.attributes) is None and resource_outcome is not None:
        record.outcome, record.reward = resource_outcome
    elif record.outcome == Outcome.UNKNOWN:
        record.outcome = evaluation_outcome(evaluations)
    if evaluations:
        record.metadata["evaluations"] = evaluations
    provider = _first_attribute(ordered, PROVIDER_KEYS)
    if provider:
        record.metadata["provider"] = provider
    conversation = _first_attribute(ordered, (CONVERSATION_KEY,))
    if conversation:
        record.metadata["conversation_id"] = conversation
    if not record.task_text and isinstance(root.attributes.get("input.value"), str):
        record.task_text = root.attributes["input.value"]
    if not record.agent_system and isinstance(resource.get("service.name"), str):
        record.agent_system = resource["service.name"]
    return record


def assemble_spans(
    received: list[tuple[Span, dict[str, Any]]], *, trace_id: str
) -> TrajectoryRecord:
    """The rollout of a trace from its received spans and their resources (in arrival
    order, duplicates allowed).

    The trace's resource is the root span's (else the first span's); a span whose resource
    differs keeps its own in ``metadata.span.resource``, as the file parser does.
    """
    pairs = collapse_duplicates(received)
    spans = [span for span, _ in pairs]
    resource = next((res for span, res in pairs if not span.parent_id), pairs[0][1])
    for span, own in pairs:
        if own != resource:
            span.extra["resource"] = own
    return trace_record(spans, trace_id=trace_id, resource=resource, extra={"format": FORMAT})


def assemble_trace(stored: list[dict[str, Any]], *, trace_id: str) -> TrajectoryRecord:
    """The rollout of a trace from spans stored as :func:`span_to_json` wrote them."""
    received = [span_from_json(data, position=position) for position, data in enumerate(stored)]
    return assemble_spans(received, trace_id=trace_id)
