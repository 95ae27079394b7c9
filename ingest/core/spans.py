"""Span trees shared by the span-based formats (OTLP/JSON, SDK span lists, OpenInference).

A trajectory is one trace. Its spans are put in *tree order*: a depth-first walk from the
root, each span's children visited by start time (ties keep file order). That order is
the order of the steps.

Broken trees are handled this way:
- two spans with the same id in one trace: refused (``MSG_DUPLICATE_SPAN``);
- a span whose parent is not in the file: kept, hung under the trace's root span (the
  earliest span without a parent) and flagged ``parent_missing`` in its step metadata.
  Real exports do this: batches split traces, and both the OTLP specification's own
  example and any-agent's Google ADK trace have such spans. With no root at all, those
  spans are the roots;
- spans that cannot be reached from any root (a parent cycle, including a span that is its
  own parent): refused (``MSG_PARENT_CYCLE``).

Example:
    >>> a = Span(trace_id="t", span_id="a", parent_id="", name="agent", start_ns=1)
    >>> b = Span(trace_id="t", span_id="b", parent_id="a", name="llm", start_ns=3)
    >>> c = Span(trace_id="t", span_id="c", parent_id="a", name="tool", start_ns=2)
    >>> [span.span_id for span in tree_order([a, b, c], id_field="spanId")]
    ['a', 'c', 'b']
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from ingest.core.errors import TraceParseError
from ingest.core.jsonio import loads

MSG_DUPLICATE_SPAN = "Span id {span_id} appears more than once in trace {trace_id}."
MSG_PARENT_CYCLE = "Span {span_id} is part of a parent cycle: it never reaches a root span."
MSG_BAD_TIME = "Expected a timestamp in nanoseconds since the epoch."

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

STATUS_OK = "ok"
STATUS_ERROR = "error"
STATUS_UNSET = "unset"


@dataclass
class Span:
    """A span reduced to what the step builders need; the rest stays in ``extra``."""

    trace_id: str
    span_id: str
    parent_id: str
    name: str
    start_ns: int | None = None
    end_ns: int | None = None
    status: str = STATUS_UNSET
    status_message: str = ""
    attributes: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    record: str = ""
    position: int = 0
    parent_missing: bool = False
    depth: int = 0

    @property
    def started_at(self) -> datetime | None:
        return ns_to_datetime(self.start_ns)

    @property
    def ended_at(self) -> datetime | None:
        return ns_to_datetime(self.end_ns)


def ns_to_datetime(value: int | None) -> datetime | None:
    """Nanoseconds since the epoch as an aware UTC datetime (microsecond precision)."""
    if value is None:
        return None
    try:
        return EPOCH + timedelta(microseconds=value // 1000)
    except OverflowError:
        return None


def parse_ns(value: Any, *, record: str, field: str) -> int | None:
    """A nanosecond timestamp given as an integer or a decimal string (OTLP uses strings)."""
    if value is None or value == "" or value == 0 or value == "0":
        return None
    if isinstance(value, bool):
        raise TraceParseError(MSG_BAD_TIME, record=record, field=field)
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and math.isfinite(value):
        number = int(value)
    elif isinstance(value, str) and value.strip().isdigit() and len(value) < 30:
        number = int(value.strip())
    else:
        raise TraceParseError(MSG_BAD_TIME, record=record, field=field)
    if number < 0:
        raise TraceParseError(MSG_BAD_TIME, record=record, field=field)
    return number


def datetime_to_ns(value: datetime | None) -> int | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    delta = value - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


def json_text(value: Any, *, record: str, field: str) -> Any:
    """An attribute that holds JSON as text (messages, arguments): decoded when it parses.

    Text that is not JSON is returned unchanged: arguments and outputs are often plain text.
    """
    if not isinstance(value, str):
        return value
    stripped = value.strip()
    if not stripped or stripped[0] not in "[{":
        return value
    try:
        return loads(stripped, record=record)
    except TraceParseError as exc:
        if "nested too deeply" in exc.message:
            raise TraceParseError(exc.message, record=record, field=field) from None
        return value


def _sort_key(span: Span) -> tuple[int, int]:
    return (span.start_ns if span.start_ns is not None else 2**63, span.position)


def tree_order(spans: list[Span], *, id_field: str) -> list[Span]:
    """The spans of one trace in tree order, with ``depth`` and ``parent_missing`` set."""
    by_id: dict[str, Span] = {}
    for span in spans:
        if span.span_id in by_id:
            raise TraceParseError(
                MSG_DUPLICATE_SPAN.format(span_id=span.span_id, trace_id=span.trace_id),
                record=span.record,
                field=id_field,
            )
        by_id[span.span_id] = span
    children: dict[str, list[Span]] = {}
    roots: list[Span] = []
    orphans: list[Span] = []
    for span in spans:
        if not span.parent_id:
            roots.append(span)
        elif span.parent_id not in by_id:
            span.parent_missing = True
            orphans.append(span)
        else:
            children.setdefault(span.parent_id, []).append(span)
    roots.sort(key=_sort_key)
    if roots:
        children.setdefault(roots[0].span_id, []).extend(orphans)
    else:
        roots = sorted(orphans, key=_sort_key)
    ordered: list[Span] = []
    stack: list[tuple[Span, int]] = [(root, 0) for root in reversed(roots)]
    while stack:
        span, depth = stack.pop()
        span.depth = depth
        ordered.append(span)
        kids = sorted(children.get(span.span_id, []), key=_sort_key)
        stack.extend((kid, depth + 1) for kid in reversed(kids))
    if len(ordered) < len(spans):
        seen = {id(span) for span in ordered}
        stray = next(span for span in spans if id(span) not in seen)
        raise TraceParseError(
            MSG_PARENT_CYCLE.format(span_id=stray.span_id), record=stray.record, field=id_field
        )
    return ordered


def group_by_trace(spans: list[Span]) -> dict[str, list[Span]]:
    """Spans grouped by trace id, traces in order of first appearance."""
    traces: dict[str, list[Span]] = {}
    for span in spans:
        traces.setdefault(span.trace_id, []).append(span)
    return traces


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
