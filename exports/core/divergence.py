"""Corrections taken from a successful rollout of the same task.

Two rollouts of one task share a prefix when they made the same tool calls (same tool,
same arguments) in the same order; the words of the conversation are not compared,
because a simulated user (tau-bench's) words every trial differently. The divergence
point is the failed rollout's first tool call that differs from the successful one's
call at the same position; the successful rollout's assistant turn holding that call
is the correction. When one rollout simply stops calling tools there is no divergent
action to learn from, and no correction.

Example:
    >>> from ingest.core.records import StepRecord, TrajectoryRecord
    >>> def call(i, name, args): return StepRecord(index=i, role="assistant",
    ...     kind="tool_call", agent="assistant", tool_name=name, tool_args=args)
    >>> failed = TrajectoryRecord(external_id="f", steps=[call(0, "get_user", {"id": 1}),
    ...     call(1, "cancel", {"res": "A"})])
    >>> won = TrajectoryRecord(external_id="s", steps=[call(0, "get_user", {"id": 1}),
    ...     call(1, "cancel", {"res": "B"})])
    >>> fix = divergence_correction(failed, [won])
    >>> (fix.step, fix.tool_calls[0].arguments, fix.source_rollout)
    (1, {'res': 'B'}, 's')
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from exports.core.chat import turn_bounds
from exports.core.inputs import CorrectedTurn, CorrectionSource, ToolCall
from ingest.core.records import StepKind, StepRecord, TrajectoryRecord


def _key(step: StepRecord) -> tuple[str, str]:
    return step.tool_name, json.dumps(step.tool_args, sort_keys=True, default=str)


def _calls(record: TrajectoryRecord) -> list[int]:
    return [position for position, s in enumerate(record.steps) if s.kind == StepKind.TOOL_CALL]


def shared_calls(failed: TrajectoryRecord, success: TrajectoryRecord) -> int:
    """How many tool calls the two rollouts share from the start."""
    failed_calls, success_calls = _calls(failed), _calls(success)
    shared = 0
    for f, s in zip(failed_calls, success_calls):
        if _key(failed.steps[f]) != _key(success.steps[s]):
            break
        shared += 1
    return shared


def divergence_correction(
    failed: TrajectoryRecord, successes: Sequence[TrajectoryRecord]
) -> CorrectedTurn | None:
    """The successful rollout's action where the failed one left their shared prefix.

    Among several successful rollouts the one sharing the longest prefix wins (the first
    by external id on ties), so the result does not depend on their order.
    """
    failed_calls = _calls(failed)
    best: tuple[int, TrajectoryRecord] | None = None
    for success in sorted(successes, key=lambda r: r.external_id):
        if success.task_id != failed.task_id:
            continue
        shared = shared_calls(failed, success)
        success_calls = _calls(success)
        if shared >= len(failed_calls) or shared >= len(success_calls):
            continue
        if best is None or shared > best[0]:
            best = (shared, success)
    if best is None:
        return None
    shared, success = best
    position = _calls(success)[shared]
    first, stop = turn_bounds(success.steps, position)
    turn = success.steps[first:stop]
    return CorrectedTurn(
        step=failed.steps[failed_calls[shared]].index,
        content=turn[0].content or None,
        tool_calls=tuple(ToolCall(s.tool_name, s.tool_args, s.tool_call_id) for s in turn),
        source=CorrectionSource.SUCCESSFUL_ROLLOUT,
        source_rollout=success.external_id,
    )
