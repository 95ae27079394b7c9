"""Who&When JSON: one failed multi-agent run per file, with its labelled mistake.

Both subsets are read. Algorithm-Generated (CaptainAgent/AG2) names the speaker in
``name`` and keeps ``role`` as the chat role; Hand-Crafted (Magentic-One) puts the
agent's name in ``role``. The first has ``is_correct``, the second ``is_corrected``.
Every record is a failure. ``mistake_step`` is a 0-based index into ``history``, as our
steps are, so it becomes a dataset label unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePath
from typing import IO, Any

from ingest.core.errors import TraceParseError
from ingest.core.jsonio import load_document
from ingest.core.records import (
    LabelRecord,
    LabelSource,
    Outcome,
    StepKind,
    StepRecord,
    TrajectoryRecord,
)
from ingest.core.validate import optional_str, require_list, require_object, require_str
from ingest.parsers.base import DEFAULT_LIMITS, ParseLimits

FORMAT = "who_and_when"
LABEL = "Who&When JSON"
EXTENSIONS = (".json",)
STEPS_FIELD = "history"

CHAT_ROLES = {"user", "assistant", "system", "tool", "function"}
# Top-level keys that we map to fields; everything else goes to metadata.
MAPPED_KEYS = {
    "history",
    "question",
    "question_ID",
    "mistake_step",
    "mistake_agent",
    "mistake_reason",
}

MSG_BAD_STEP = "mistake_step must be a step index (a whole number as text)."
MSG_STEP_OUT_OF_RANGE = "mistake_step {step} is outside the history's {count} messages."


def sniff(head: bytes, filename: str) -> bool:
    # Keys come in any order and a long history pushes the label keys past the head,
    # so a history of role/content messages at the top of an object is the signature.
    start = head.lstrip()[:1]
    if start != b"{" or not re.search(rb'"history"\s*:\s*\[', head):
        return False
    return (b'"mistake_step"' in head or b'"question_ID"' in head) or (
        b'"role"' in head and b'"content"' in head and b'"traj"' not in head
    )


def _subset(obj: dict[str, Any]) -> str:
    if "is_corrected" in obj:
        return "Hand-Crafted"
    if "is_correct" in obj:
        return "Algorithm-Generated"
    return ""


def _step(raw: Any, index: int, hand_crafted: bool) -> StepRecord:
    record = "document"
    prefix = f"history[{index}]."
    obj = require_object(raw, record=record, field=f"history[{index}]")
    content = optional_str(obj, "content", record=record, prefix=prefix)
    role = require_str(obj, "role", record=record, prefix=prefix)
    name = optional_str(obj, "name", record=record, prefix=prefix)
    if name:
        agent = name
    elif role.lower() not in CHAT_ROLES:
        agent = role  # Hand-Crafted: the agent's name sits in role
    else:
        agent = role
    chat_role = role if role.lower() in CHAT_ROLES else "assistant"
    if role == "human":
        chat_role, agent = "user", "human"
    extra = {k: v for k, v in obj.items() if k not in {"content", "role", "name"}}
    metadata: dict[str, Any] = {"source_role": role}
    if extra:
        metadata["extra"] = extra
    return StepRecord(
        index=index,
        role=chat_role,
        kind=StepKind.MESSAGE,
        content=content,
        agent=agent,
        is_error=False,
        metadata=metadata,
    )


def parse(
    stream: IO[bytes], *, filename: str, limits: ParseLimits = DEFAULT_LIMITS
) -> Iterator[TrajectoryRecord]:
    record = "document"
    obj = require_object(
        load_document(stream, record=record, max_bytes=limits.max_document_bytes), record=record
    )
    history = require_list(obj, "history", record=record)
    subset = _subset(obj)
    steps = [_step(raw, i, subset == "Hand-Crafted") for i, raw in enumerate(history)]
    labels: list[LabelRecord] = []
    raw_step = obj.get("mistake_step")
    if raw_step is not None and raw_step != "":
        text = str(raw_step).strip()
        if isinstance(raw_step, bool) or not text.isdigit():
            raise TraceParseError(MSG_BAD_STEP, record=record, field="mistake_step")
        step = int(text)
        if step >= len(steps):
            raise TraceParseError(
                MSG_STEP_OUT_OF_RANGE.format(step=step, count=len(steps)),
                record=record,
                field="mistake_step",
            )
        labels.append(
            LabelRecord(
                step=step,
                agent=optional_str(obj, "mistake_agent", record=record),
                reason=optional_str(obj, "mistake_reason", record=record),
                source=LabelSource.DATASET,
            )
        )
    question_id = optional_str(obj, "question_ID", record=record)
    stem = PurePath(filename).stem
    metadata = {k: v for k, v in obj.items() if k not in MAPPED_KEYS}
    metadata["subset"] = subset
    yield TrajectoryRecord(
        external_id=stem if not subset or stem.startswith(subset) else f"{subset}-{stem}",
        task_id=question_id,
        task_text=optional_str(obj, "question", record=record),
        environment="GAIA" if "level" in obj else "AssistantBench",
        agent_system="Magentic-One"
        if subset == "Hand-Crafted"
        else ("CaptainAgent" if subset else ""),
        policy_model="",
        outcome=Outcome.FAILURE,
        reward=0.0,
        metadata=metadata,
        steps=steps,
        labels=labels,
        source=record,
    )
