"""LangSmith run exports: one trace of runs per trajectory.

Accepted files, each holding runs as the LangSmith SDK's ``Run`` (``client.list_runs``,
``client.read_run``) or the REST API gives them:

- a JSON list of runs (``[run.dict() for run in client.list_runs(...)]`` dumped);
- JSONL, one run per line;
- ``{"runs": [...], "cursors": {...}}``, the page ``POST /api/v1/runs/query`` returns (the
  cursors are not kept);
- one run as one JSON document.

A run's ``child_runs`` (``read_run(..., load_child_runs=True)``) are runs of the file too.

**Trajectory** = one trace: the runs sharing ``trace_id`` (else the trace the first id of
``dotted_order`` names, else, for a run without a parent, its own id), in order of first
appearance. Each run becomes a span (ingest.core.langsmith) and the trace is built by the
span rules (ingest.core.genai): tree order (``parent_run_id``, then ``start_time``) is
step order; an ``llm`` run's new input messages and its output are steps; a ``tool`` run
is a tool call and its result (the model call that announced it keeps the call in its
step's ``metadata.tool_calls``, so each call is one step); a ``retriever`` is a tool call
whose result is the documents; ``chain``, ``prompt``, ``parser`` and ``embedding`` runs
are not steps (``metadata.other_spans``). A run with ``error`` is an error step.

**Task text**: the root run's inputs (its first user message, else a task-like key such
as ``input`` or ``question``, else the only key, else the JSON of them); when no model
call's input holds a user message, the task is the first step, as the user's message.

**Agent**: below the root, the outermost ``chain`` run on each path that is not the
framework's plumbing (LangGraph's graph, its nodes' ``Runnable*``, ``ChannelWrite``,
``Branch``, ``__start__``, runs tagged ``langsmith:hidden``) names every step below it:
a LangGraph node (``agent``, ``tools``), a sub-agent's graph run as one node of a
supervisor (``researcher``), a ``@traceable`` function called by the root. The outermost,
not the nearest: a sub-agent's graph has nodes of its own (``agent``, ``call_model``)
that would otherwise name every sub-agent alike. A tool call is the act of the agent
whose model call announced it. Without such a chain the steps are ``assistant``,
``user``, ``tool`` as in the other formats.

**Agent system**: ``faultline.agent_system`` in the root's ``extra.metadata``, else the
root run's name when it is a chain that is not the framework's (``LangGraph``,
``AgentExecutor``, ``Runnable*``), else ``session_name`` (the project), else none.
**Policy model**: the first llm run's ``ls_model_name`` (``extra.metadata``), else its
``invocation_params`` model, else its output's ``model``; ``ls_provider`` is
``metadata.provider``. **Task id**: ``faultline.task.id`` in the root's metadata, else
its ``reference_example_id`` (the dataset example an experiment ran). **Environment**:
``faultline.environment`` there. ``thread_id`` / ``session_id`` / ``conversation_id``
in the root's metadata is ``metadata.conversation_id``.

**Outcome**, first rule that applies (ingest.core.langsmith.feedback_outcome):

1. ``faultline.outcome`` (success/failure) or ``faultline.reward`` (>= 1 is a success)
   in the root's ``extra.metadata``;
2. the root's ``feedback_stats``: a key whose name asks whether the task succeeded
   (``correctness``, ``success``, ``task_completed``, ``resolved``...) with an average on
   a 0 to 1 scale: 1 is a success, anything lower a failure (the average is the reward);
   a categorical key whose values are all one pass/fail word. The last key that decides
   wins; other keys (``helpfulness``, ``score``, ratings out of 5) decide nothing. Every
   key is kept in ``metadata.evaluations``;
3. a failure when the root run has an ``error``: the run raised. An error deeper down is
   that step's error, not the outcome: agents recover from failed tool calls;
4. otherwise unknown: a run that did not raise says nothing about the task.

**Broken traces**: a run whose parent is not in the file is kept, under the root, with
``metadata.parent_missing`` (exports filtered by run type or date cut traces); with no
root at all, the earliest such run is the root. Refused: a run without ``id`` or
``run_type``, ``inputs`` / ``outputs`` / ``extra`` / ``feedback_stats`` that are not
objects (null is no value), a run with a parent but no ``trace_id`` or ``dotted_order``,
the same run id twice in a trace, parent cycles. Errors name the run by its place and id
(``item 3, run 1b64...``, ``line 3, run ...``, ``runs[3], run ...``) and the field.

Runs are read one at a time, but a trace's runs may be anywhere in the file, so their
spans are held (spilling to disk past a bound) until the end: the file is limited to
``max_document_bytes``, each run to ``max_line_bytes``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import IO, Any

from ingest.core.errors import TraceParseError
from ingest.core.jsonio import MSG_EMPTY, first_byte, iter_lines, loads
from ingest.core.jsonstream import MSG_DOCUMENT_TOO_LARGE, iter_document
from ingest.core.langsmith import run_span, trace_trajectory
from ingest.core.records import TrajectoryRecord
from ingest.core.spill import TraceBuffer
from ingest.core.validate import optional_list
from ingest.parsers.base import DEFAULT_LIMITS, ParseLimits

FORMAT = "langsmith"
LABEL = "LangSmith run export (JSON / JSONL)"
EXTENSIONS = (".json", ".jsonl", ".ndjson")

MSG_NOT_RUNS = "Expected LangSmith runs: a list of run objects, one run per line, or {runs: [...]}."
MSG_NO_RUNS = "The file holds no LangSmith run."

_RUN_TYPE = re.compile(rb'"run_type"\s*:\s*"')
_IO_KEYS = (b'"inputs"', b'"outputs"')
_TRACE_KEYS = (b'"dotted_order"', b'"trace_id"', b'"parent_run_id"')


def sniff(head: bytes, filename: str) -> bool:
    """A ``run_type`` next to ``inputs``/``outputs`` and LangSmith's trace keys.

    Example:
        >>> sniff(b'[{"id": "r1", "trace_id": "r1", "parent_run_id": null, "run_type": "chain", '
        ...       b'"inputs": {"q": "hi"}}]', "runs.json")
        True
        >>> sniff(b'{"run_type": "nightly", "inputs": ["a.csv"]}', "job.json")
        False
    """
    if head.lstrip()[:1] not in (b"{", b"[") or _RUN_TYPE.search(head) is None:
        return False
    return any(key in head for key in _IO_KEYS) and any(key in head for key in _TRACE_KEYS)


class _Runs:
    """The spans of the runs read so far, grouped by trace."""

    def __init__(self) -> None:
        self.buffer = TraceBuffer()

    def add(self, raw: Any, where: str) -> None:
        # A run read with its children: each child is a run of the file, under it.
        pending = [(raw, where)]
        while pending:
            run, place = pending.pop()
            span = run_span(run, where=place, position=len(self.buffer))
            children = optional_list(run, "child_runs", record=span.record)
            span.extra.pop("child_runs", None)
            self.buffer.add(span)
            below = {"parent_run_id": span.span_id, "trace_id": span.trace_id}
            pending.extend(
                (_under(child, below), f"{place}.child_runs[{index}]")
                for index, child in reversed(list(enumerate(children)))
            )

    def trajectories(self) -> Iterator[TrajectoryRecord]:
        if not len(self.buffer):
            raise TraceParseError(MSG_NO_RUNS, record="document")
        for trace_id, spans in self.buffer.traces():
            yield trace_trajectory(spans, trace_id=trace_id, format_name=FORMAT)


def _under(child: Any, below: dict[str, str]) -> Any:
    """A child run with its parent's id and trace id where it leaves them out."""
    if not isinstance(child, dict):
        return child
    return {**child, **{k: v for k, v in below.items() if not child.get(k)}}


def _one_per_line(stream: IO[bytes], limits: ParseLimits) -> bool:
    """Whether the file is JSONL: its first line is a whole JSON object, and not the
    ``{runs: [...]}`` page. The stream is left where it was."""
    start = stream.tell()
    line = stream.readline(limits.max_line_bytes + 1)
    stream.seek(start)
    try:
        first = loads(line, record="line 1")
    except TraceParseError:
        return False
    return isinstance(first, dict) and "runs" not in first


def _read_lines(stream: IO[bytes], runs: _Runs, limits: ParseLimits) -> None:
    total = 0
    for number, line in iter_lines(stream, max_line_bytes=limits.max_line_bytes):
        total += len(line)
        if total > limits.max_document_bytes:
            raise TraceParseError(
                MSG_DOCUMENT_TOO_LARGE.format(limit=limits.max_document_bytes),
                record=f"line {number}",
            )
        record = f"line {number}"
        runs.add(loads(line, record=record), record)


def _read_document(stream: IO[bytes], runs: _Runs, limits: ParseLimits, listed: bool) -> None:
    fields: dict[str, Any] = {}
    count = 0
    for kind, key, value in iter_document(
        stream,
        stream_keys={""} if listed else {"runs"},
        max_item_bytes=limits.max_line_bytes,
        max_total_bytes=limits.max_document_bytes,
    ):
        if kind == "item":
            runs.add(value, f"item {count}" if listed else f"runs[{count}]")
            count += 1
        else:
            fields[key] = value
    if not listed and not count and "id" in fields:
        runs.add(fields, "document")


def parse(
    stream: IO[bytes], *, filename: str, limits: ParseLimits = DEFAULT_LIMITS
) -> Iterator[TrajectoryRecord]:
    first = first_byte(stream)
    if not first:
        raise TraceParseError(MSG_EMPTY, record="document")
    if first not in (b"{", b"["):
        raise TraceParseError(MSG_NOT_RUNS, record="document")
    runs = _Runs()
    try:
        if first == b"{" and _one_per_line(stream, limits):
            _read_lines(stream, runs, limits)
        else:
            _read_document(stream, runs, limits, listed=first == b"[")
        yield from runs.trajectories()
    finally:
        runs.buffer.close()
