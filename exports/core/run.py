"""Stream rollouts through the builders into one JSONL file per kind.

Only one rollout is held at a time (plus whatever the caller's iterator batches), so
memory does not grow with the number of rollouts. Every line is checked against its
kind's JSON Schema (the one the export ships), the chat rules and for leakage before it is
written; a line that fails is counted as skipped with its reason instead of being written,
and the reason names what failed, so a consumer never receives a line its schema refuses.

Example:
    >>> import tempfile, pathlib
    >>> from ingest.core.records import StepRecord, TrajectoryRecord
    >>> from exports.core.inputs import CorrectedTurn, ExportRollout
    >>> record = TrajectoryRecord(external_id="r1", steps=[
    ...     StepRecord(index=0, role="user", content="Cancel my trip."),
    ...     StepRecord(index=1, role="assistant", content="Done!", agent="assistant")])
    >>> item = ExportRollout(1, record, corrections=[CorrectedTurn(step=1, content="Which trip?")])
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     result = write_exports([item], kinds=("sft", "diagnosis"), folder=pathlib.Path(folder))
    >>> result.counts, result.skipped["diagnosis"]
    ({'sft': 1, 'diagnosis': 0}, {'no label and no attribution': 1})
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from exports.core.builders import (
    Skip,
    diagnosis_example,
    preference_example,
    recovery,
    sft_example,
    start_state_examples,
)
from exports.core.filters import DIAGNOSIS, PREFERENCE, SFT, START_STATES
from exports.core.inputs import ExportRollout
from exports.core.schemas import schema_problems
from exports.core.trim import cut_observations
from exports.core.validate import chat_problems, leakage_problems
from exports.core.writer import FileDigest, JsonlWriter

SKIP_INVALID_CHAT = "the example breaks the chat format's rules"
SKIP_LEAKED = "the prefix holds text of the decisive step or later"
SKIP_SCHEMA = "the example does not match its schema: "


@dataclass
class ExportResult:
    counts: dict[str, int]
    skipped: dict[str, dict[str, int]]
    files: list[FileDigest]
    rollouts: int = 0
    corrections: dict[str, int] = field(default_factory=dict)


def example_problems(kind: str, example: dict[str, Any], item: ExportRollout) -> list[str]:
    """Chat-rule and leakage problems of one example of ``kind`` built from ``item``."""
    steps, task = item.record.steps, item.record.task_text
    if kind == SFT:
        cut = example["metadata"]["step"]
        return chat_problems(example["messages"], target_last=True) + leakage_problems(
            example["messages"][:-1], steps, cut, task_text=task
        )
    if kind == PREFERENCE:
        cut = example["metadata"]["step"]
        problems = chat_problems(example["prompt"] + example["chosen"], target_last=True)
        problems += chat_problems(example["prompt"] + example["rejected"], target_last=True)
        return problems + leakage_problems(example["prompt"], steps, cut, task_text=task)
    if kind == START_STATES:
        cut = example["metadata"]["step"]
        return chat_problems(example["messages"], target_last=False) + leakage_problems(
            example["messages"], steps, cut, task_text=task
        )
    return chat_problems(example["messages"], target_last=True)


def write_exports(
    items: Iterable[ExportRollout],
    *,
    kinds: Sequence[str],
    folder: Path,
    misbehaviours: Sequence[int] = (),
    diagnosis_window: int = 0,
    observation_chars: int = 0,
    on_rollout: Callable[[int], None] | None = None,
) -> ExportResult:
    """Write ``<kind>.jsonl`` in ``folder`` for each kind; return counts and digests."""
    folder.mkdir(parents=True, exist_ok=True)
    skipped: dict[str, Counter[str]] = {kind: Counter() for kind in kinds}
    sources: Counter[str] = Counter()
    done = 0
    with ExitStack() as stack:
        writers = {
            kind: stack.enter_context(JsonlWriter(folder / f"{kind}.jsonl")) for kind in kinds
        }

        def emit(kind: str, example: dict[str, Any] | Skip, item: ExportRollout) -> None:
            if isinstance(example, Skip):
                skipped[kind][example.reason] += 1
                return
            refused = schema_problems(kind, example)
            if refused:  # a builder's fault: named, so that it is seen and mended
                skipped[kind][SKIP_SCHEMA + refused[0]] += 1
                return
            problems = example_problems(kind, example, item)
            if problems:
                reason = (
                    SKIP_LEAKED
                    if any("step" in p and "later" in p for p in problems)
                    else SKIP_INVALID_CHAT
                )
                skipped[kind][reason] += 1
                return
            writers[kind].write(example)

        for item in items:
            if observation_chars:
                item = replace(item, record=cut_observations(item.record, observation_chars))
            if SFT in writers or PREFERENCE in writers:
                parts = recovery(item)
                if not isinstance(parts, Skip):
                    sources[parts.metadata["correction"]["source"]] += 1
                if SFT in writers:
                    emit(SFT, sft_example(item, parts), item)
                if PREFERENCE in writers:
                    emit(PREFERENCE, preference_example(item, parts), item)
            if DIAGNOSIS in writers:
                emit(DIAGNOSIS, diagnosis_example(item, window=diagnosis_window), item)
            if START_STATES in writers:
                for example in start_state_examples(item, misbehaviours):
                    emit(START_STATES, example, item)
            done += 1
            if on_rollout is not None:
                on_rollout(done)
    return ExportResult(
        counts={kind: writers[kind].lines for kind in kinds},
        skipped={kind: dict(sorted(skipped[kind].items())) for kind in kinds},
        files=[writers[kind].close() for kind in kinds],
        rollouts=done,
        corrections=dict(sorted(sources.items())),
    )
