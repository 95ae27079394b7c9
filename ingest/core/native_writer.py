"""Records to Faultline's native JSONL, exactly as ingest.parsers.native reads it back.

Every field of the records is written, so parse -> write -> parse gives equal records.
Datetimes are ISO 8601 with their offset (naive ones are taken as UTC, as the reader
does); text is written ASCII-escaped so any string, even a lone surrogate from a JSON
escape, survives the trip.

Example:
    >>> from ingest.core.records import StepRecord, TrajectoryRecord
    >>> line = trajectory_to_native(TrajectoryRecord(external_id="r1", steps=[StepRecord(index=0, role="user")]))
    >>> line["format"], line["id"], line["steps"][0]["kind"]
    ('faultline.trajectory.v1', 'r1', 'message')
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import IO, Any

from ingest.core.records import LabelRecord, StepRecord, TrajectoryRecord

FORMAT_TAG = "faultline.trajectory.v1"


def _time(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.isoformat()


def step_to_native(step: StepRecord) -> dict[str, Any]:
    return {
        "index": step.index,
        "role": step.role,
        "kind": step.kind,
        "content": step.content,
        "agent": step.agent,
        "tool_name": step.tool_name,
        "tool_args": step.tool_args,
        "tool_call_id": step.tool_call_id,
        "is_error": step.is_error,
        "is_mutating": step.is_mutating,
        "started_at": _time(step.started_at),
        "ended_at": _time(step.ended_at),
        "metadata": step.metadata,
    }


def label_to_native(label: LabelRecord) -> dict[str, Any]:
    return {
        "step": label.step,
        "agent": label.agent,
        "reason": label.reason,
        "source": label.source,
    }


def trajectory_to_native(record: TrajectoryRecord) -> dict[str, Any]:
    """One native line as a dict (see the module docstring)."""
    return {
        "format": FORMAT_TAG,
        "id": record.external_id,
        "task_id": record.task_id,
        "task_text": record.task_text,
        "environment": record.environment,
        "agent_system": record.agent_system,
        "policy_model": record.policy_model,
        "outcome": record.outcome,
        "reward": record.reward,
        "metadata": record.metadata,
        "steps": [step_to_native(step) for step in record.steps],
        "labels": [label_to_native(label) for label in record.labels],
    }


def write_native_jsonl(records: Iterable[TrajectoryRecord], stream: IO[Any]) -> int:
    """Write one line per record to a text or binary stream; return the number written."""
    binary = not isinstance(stream, io.TextIOBase)
    count = 0
    for record in records:
        line = json.dumps(trajectory_to_native(record), ensure_ascii=True, sort_keys=False) + "\n"
        stream.write(line.encode("ascii") if binary else line)
        count += 1
    return count
