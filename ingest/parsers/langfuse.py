"""Langfuse traces as Langfuse gives them: one trace per trajectory.

Accepted documents:

- one trace as the public API's ``GET /api/public/traces/{id}`` returns it: ``id``,
  ``timestamp``, ``name``, ``input``, ``output``, ``sessionId``, ``userId``, ``metadata``,
  ``tags``, ``release``, ``version``, ``observations`` (full observation objects) and
  ``scores``;
- what the trace page's download button saves: ``{"trace": {...}, "observations": [...]}``
  (older Langfuse; its observations carry no input or output, so their content is absent)
  or ``{"observations": [...], "scores": [...]}`` (newer; the trace id is the
  observations' ``traceId``);
- a JSON list of traces, or ``{"data": [trace, ...], "meta": {...}}`` (the paginated list
  shape), each trace with its full observations; the list's ``meta`` (page counters) is
  not kept. Traces are read one at a time.

The trace list endpoint (``GET /api/public/traces``) gives only the ids of each trace's
observations and scores: such a trace is refused (``MSG_IDS_ONLY``), saying how to get the
observations.

Each observation becomes a span in OpenTelemetry GenAI terms (ingest.core.langfuse) and the
trace is built exactly as OTLP and OpenInference traces are (ingest.core.otlp_trace,
ingest.core.genai): tree order (``parentObservationId``, then ``startTime``) is step order;
a GENERATION's new input messages and its output are steps (its tool calls are the
assistant's tool calls); a TOOL (or RETRIEVER) is a tool call and its result; an AGENT
names the agent of everything below it; SPAN, EVENT, CHAIN and the other types are not
steps and go to ``metadata.other_spans``; ``level`` ERROR makes that step an error, with
``statusMessage``. Task text: the first user message, else the trace's ``input``. Policy
model: the first generation's ``model``. Agent system: ``faultline.agent_system`` in the
trace's metadata, else the first AGENT's name, else the trace's ``name``.

Outcome, first rule that applies:

1. ``faultline.outcome`` (success/failure) or ``faultline.reward`` (>= 1 is a success) in
   the trace's ``metadata``, as on an OTLP root span;
2. a failure when the trace has a single top-level observation (the run itself) at level
   ERROR: the run raised. An ERROR deeper down is that step's error, not the outcome;
3. a CATEGORICAL score whose value is a plain pass or fail word, or yes/no when the
   score's name asks about success (the last one decides), the rule for GenAI evaluation
   events (ingest.core.genai_events). Numeric and boolean
   scores decide nothing: their meaning depends on the score's name. Every score is kept
   in ``metadata.evaluations``;
4. otherwise unknown: Langfuse records no task outcome of its own.

The whole file is limited to ``max_document_bytes``, each trace (each field of a single
trace) to ``max_line_bytes``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import IO, Any

from ingest.core.errors import TraceParseError
from ingest.core.jsonio import MSG_EMPTY, first_byte
from ingest.core.jsonstream import iter_document
from ingest.core.langfuse import trace_spans
from ingest.core.otlp_trace import trace_record
from ingest.core.records import TrajectoryRecord
from ingest.core.validate import require_object, required_id
from ingest.parsers.base import DEFAULT_LIMITS, ParseLimits

FORMAT = "langfuse"
LABEL = "Langfuse trace export (JSON)"
EXTENSIONS = (".json",)

MSG_IDS_ONLY = (
    "This trace lists its {field} by id only, as Langfuse's trace list "
    "(GET /api/public/traces) does: the {field} themselves are missing. Download each "
    "trace from its page in Langfuse, or fetch it with GET /api/public/traces/{{id}}, "
    "which includes them."
)
MSG_NOT_A_TRACE = (
    "Expected a Langfuse trace (an object with id and observations), a list of traces, "
    "or {data: [...]}."
)
MSG_NO_TRACES = "The file holds no Langfuse trace."

_OBSERVATIONS = re.compile(rb'"observations"\s*:\s*\[')
# Keys only Langfuse writes next to ``observations``: every observation has
# ``parentObservationId`` (null at the top), every API trace an ``htmlPath``.
_MARKERS = (b'"parentObservationId"', b'"htmlPath"')


def sniff(head: bytes, filename: str) -> bool:
    """An ``observations`` list next to a key only Langfuse writes.

    Example:
        >>> sniff(b'{"id": "t1", "observations": [{"id": "o1", "parentObservationId": null}]}', "t.json")
        True
        >>> sniff(b'{"observations": [{"id": 1, "text": "saw a cat"}]}', "notes.json")
        False
    """
    start = head.lstrip()[:1]
    if start not in (b"{", b"[") or _OBSERVATIONS.search(head) is None:
        return False
    return any(marker in head for marker in _MARKERS) or (
        b'"traceId"' in head and b'"startTime"' in head
    )


def _as_trace(obj: Any, where: str) -> dict[str, Any]:
    """The three single-trace shapes as the API's: ``{trace, observations}`` merged, and
    ``{observations, scores}`` given its observations' trace id."""
    document = require_object(obj, record=where)
    if "id" not in document and isinstance(document.get("trace"), dict):
        document = {**document["trace"], **{k: v for k, v in document.items() if k != "trace"}}
    observations = document.get("observations")
    if "id" not in document and isinstance(observations, list) and observations:
        first = observations[0]
        if isinstance(first, dict) and isinstance(first.get("traceId"), str):
            document = {"id": first["traceId"], **document}
    return document


def _refuse_ids_only(trace: dict[str, Any], record: str) -> None:
    for field in ("observations", "scores"):
        items = trace.get(field)
        if isinstance(items, list) and any(isinstance(item, str) for item in items):
            raise TraceParseError(MSG_IDS_ONLY.format(field=field), record=record, field=field)


def trajectory_from_trace(obj: Any, *, where: str) -> TrajectoryRecord:
    """One trace (any accepted shape) as a trajectory; ``where`` is its place in the file
    (``document``, ``item 3``, ``data[3]``)."""
    trace = _as_trace(obj, where)
    trace_id = required_id(trace, "id", record=where)
    record = f"trace {trace_id}" if where == "document" else f"{where}, trace {trace_id}"
    _refuse_ids_only(trace, record)
    if "observations" not in trace:
        raise TraceParseError(MSG_NOT_A_TRACE, record=record, field="observations")
    spans = trace_spans(trace, trace_id=trace_id, where=record)
    trajectory = trace_record(
        spans, trace_id=trace_id, resource={}, extra={"format": FORMAT}, id_field="id"
    )
    trajectory.agent_system = trajectory.agent_system or spans[0].name
    return trajectory


def parse(
    stream: IO[bytes], *, filename: str, limits: ParseLimits = DEFAULT_LIMITS
) -> Iterator[TrajectoryRecord]:
    first = first_byte(stream)
    if not first:
        raise TraceParseError(MSG_EMPTY, record="document")
    if first not in (b"{", b"["):
        raise TraceParseError(MSG_NOT_A_TRACE, record="document")
    listed = first == b"["
    fields: dict[str, Any] = {}
    count = 0
    for kind, key, value in iter_document(
        stream,
        stream_keys={""} if listed else {"data"},
        max_item_bytes=limits.max_line_bytes,
        max_total_bytes=limits.max_document_bytes,
    ):
        if kind == "item":
            yield trajectory_from_trace(
                value, where=f"item {count}" if listed else f"data[{count}]"
            )
            count += 1
        else:
            fields[key] = value
    if count:
        return
    # An empty list, or an object that is neither a trace nor a non-empty data list
    # ({"data": [], "meta": {...}}).
    if listed or not {"id", "trace", "observations"} & fields.keys():
        raise TraceParseError(MSG_NO_TRACES, record="document")
    yield trajectory_from_trace(fields, where="document")
