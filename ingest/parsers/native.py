"""Faultline's native JSONL: one trajectory per line, fields named as in the records.

The format is documented in docs/trace-format.md with its JSON Schema in
docs/trace-format.schema.json. A line looks like::

    {"format": "faultline.trajectory.v1", "id": "run-1", "outcome": "failure",
     "steps": [{"role": "user", "content": "Book a flight"},
               {"role": "assistant", "kind": "tool_call", "tool_name": "search",
                "tool_args": {"to": "SEA"}}]}
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

from ingest.core.errors import TraceParseError
from ingest.core.jsonio import iter_lines, loads
from ingest.core.records import (
    LabelRecord,
    LabelSource,
    Outcome,
    StepKind,
    StepRecord,
    TrajectoryRecord,
)
from ingest.core.validate import (
    optional_bool,
    optional_choice,
    optional_list,
    optional_number,
    optional_object,
    optional_str,
    optional_time,
    require_list,
    require_object,
    require_str,
)
from ingest.parsers.base import DEFAULT_LIMITS, ParseLimits
from ingest.parsers.record_keys import first_record_keys

FORMAT = "native"
LABEL = "Faultline native JSONL"
EXTENSIONS = (".jsonl", ".ndjson")
FORMAT_TAG = "faultline.trajectory.v1"
STEPS_FIELD = "steps"

MSG_BAD_INDEX = (
    "Step index {found} does not match its position {expected}; steps are 0-based and contiguous."
)
MSG_LABEL_OUT_OF_RANGE = "Label step {step} is outside the trajectory's {count} steps."
MSG_BAD_FORMAT_TAG = "Expected format '{tag}'."
MSG_NOT_LINES = (
    "The file holds Faultline native records in one JSON document; the native format is "
    "JSON Lines: one rollout object per line (see docs/trace-format.md)."
)

# A trajectory's keys (docs/trace-format.md). ``steps`` is the one every record has; the
# others, but the generic ``metadata``, tell a native record from another format's object.
TRAJECTORY_KEYS = frozenset(
    {
        "format", "id", "task_id", "task_text", "environment", "agent_system",
        "policy_model", "outcome", "reward", "metadata", "steps", "labels",
    }
)  # fmt: skip
_TELLING_KEYS = TRAJECTORY_KEYS - {"steps", "metadata"}


def sniff(head: bytes, filename: str) -> bool:
    first = head.lstrip().split(b"\n", 1)[0]
    if not first.startswith(b"{"):
        return False
    if FORMAT_TAG.encode() in first[:4096]:
        return True
    try:
        obj = json.loads(first)
    except ValueError:
        return b'"steps"' in first and b'"id"' in first
    return isinstance(obj, dict) and isinstance(obj.get("steps"), list) and "id" in obj


def _native_keys(keys: frozenset[str]) -> bool:
    """``steps`` beside a telling key or only native keys; or, ``steps`` missing, nothing
    but native keys with two telling ones (``{"id": ..., "outcome": ...}``)."""
    if "steps" in keys:
        return bool(keys & _TELLING_KEYS) or keys <= TRAJECTORY_KEYS
    return keys <= TRAJECTORY_KEYS and len(keys & _TELLING_KEYS) >= 2


def sniff_keys(head: bytes, filename: str) -> bool:
    """Whether the first line is a native record by its keys alone, whatever their values.

    ``sniff`` also wants the values right (``steps`` a list), so a record with a bad field
    matched no format and was refused as unknown; detection asks this last, once every
    format's own sniffer said no, so that the record's validation names the bad field.

    Example:
        >>> sniff_keys(b'{"id": "x", "steps": "nope"}', "runs.jsonl")
        True
        >>> sniff_keys(b'{"id": "x", "messages": []}', "chat.jsonl")
        False
    """
    first = head.lstrip().split(b"\n", 1)[0]
    return first.startswith(b"{") and _native_keys(first_record_keys(first))


def sniff_document(head: bytes, filename: str) -> bool:
    """Whether the file is native records in one JSON document (a list of them, or one
    object over several lines) instead of one per line.

    Example:
        >>> sniff_document(b'[{"id": "x", "steps": []}]', "runs.json")
        True
    """
    return _native_keys(first_record_keys(head))


def _step(raw: Any, position: int, record: str) -> StepRecord:
    prefix = f"steps[{position}]."
    obj = require_object(raw, record=record, field=f"steps[{position}]")
    index = obj.get("index")
    if index is not None and index != position:
        raise TraceParseError(
            MSG_BAD_INDEX.format(found=index, expected=position),
            record=record,
            field=prefix + "index",
        )
    started = optional_time(obj, "started_at", record=record, prefix=prefix)
    ended = optional_time(obj, "ended_at", record=record, prefix=prefix)
    return StepRecord(
        index=position,
        role=require_str(obj, "role", record=record, prefix=prefix),
        kind=optional_choice(
            obj, "kind", StepKind.ALL, record=record, prefix=prefix, default=StepKind.MESSAGE
        ),
        content=optional_str(obj, "content", record=record, prefix=prefix),
        agent=optional_str(obj, "agent", record=record, prefix=prefix),
        tool_name=optional_str(obj, "tool_name", record=record, prefix=prefix),
        tool_args=obj.get("tool_args"),
        tool_call_id=optional_str(obj, "tool_call_id", record=record, prefix=prefix),
        is_error=bool(optional_bool(obj, "is_error", record=record, prefix=prefix)),
        is_mutating=optional_bool(obj, "is_mutating", record=record, prefix=prefix),
        started_at=started,
        ended_at=ended,
        metadata=optional_object(obj, "metadata", record=record, prefix=prefix),
    )


def _label(raw: Any, position: int, step_count: int, record: str) -> LabelRecord:
    prefix = f"labels[{position}]."
    obj = require_object(raw, record=record, field=f"labels[{position}]")
    step = obj.get("step")
    if isinstance(step, bool) or not isinstance(step, int):
        raise TraceParseError(
            "Expected an integer step index.", record=record, field=prefix + "step"
        )
    if not 0 <= step < step_count:
        raise TraceParseError(
            MSG_LABEL_OUT_OF_RANGE.format(step=step, count=step_count),
            record=record,
            field=prefix + "step",
        )
    return LabelRecord(
        step=step,
        agent=optional_str(obj, "agent", record=record, prefix=prefix),
        reason=optional_str(obj, "reason", record=record, prefix=prefix),
        source=optional_choice(
            obj,
            "source",
            LabelSource.ALL,
            record=record,
            prefix=prefix,
            default=LabelSource.DATASET,
        ),
    )


def trajectory_from_object(obj: Any, *, record: str) -> TrajectoryRecord:
    """Validate one decoded native line and build its record."""
    obj = require_object(obj, record=record)
    tag = obj.get("format")
    if tag is not None and tag != FORMAT_TAG:
        raise TraceParseError(
            MSG_BAD_FORMAT_TAG.format(tag=FORMAT_TAG), record=record, field="format"
        )
    steps = [
        _step(raw, i, record) for i, raw in enumerate(require_list(obj, "steps", record=record))
    ]
    labels = [
        _label(raw, i, len(steps), record)
        for i, raw in enumerate(optional_list(obj, "labels", record=record))
    ]
    return TrajectoryRecord(
        external_id=require_str(obj, "id", record=record),
        task_id=optional_str(obj, "task_id", record=record),
        task_text=optional_str(obj, "task_text", record=record),
        environment=optional_str(obj, "environment", record=record),
        agent_system=optional_str(obj, "agent_system", record=record),
        policy_model=optional_str(obj, "policy_model", record=record),
        outcome=optional_choice(
            obj, "outcome", Outcome.ALL, record=record, default=Outcome.UNKNOWN
        ),
        reward=optional_number(obj, "reward", record=record),
        metadata=optional_object(obj, "metadata", record=record),
        steps=steps,
        labels=labels,
        source=record,
    )


def parse(
    stream: IO[bytes], *, filename: str, limits: ParseLimits = DEFAULT_LIMITS
) -> Iterator[TrajectoryRecord]:
    for number, line in iter_lines(stream, max_line_bytes=limits.max_line_bytes):
        record = f"line {number}"
        yield trajectory_from_object(loads(line, record=record), record=record)
