"""Corrections taken from a successful rollout of the same task (the rule itself lives in
attribution.core.sibling_divergence, shared with the sibling-divergence labels).

Two rollouts of one task share a prefix when they made the same tool calls (same tool,
same arguments) in the same order; the words of the conversation are not compared,
because a simulated user (tau-bench's) words every trial differently. The divergence
point is the failed rollout's first tool call that differs from the successful one's
call at the same position; the successful rollout's assistant turn holding that call
is the correction. When one rollout simply stops calling tools there is no divergent
action to learn from, and no correction; nor when the two share no call and the successful
one's first call came after a different number of user turns: it then answered another
point of the conversation (see the rule). Nor when a call of the correction failed in the
successful rollout, or copies a value the failed rollout had not seen by the divergence.

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

from collections.abc import Sequence

from attribution.core.provenance import unsupported_arguments
from attribution.core.sibling_divergence import shared_tool_calls, sibling_divergence
from exports.core.chat import turn_bounds
from exports.core.inputs import CorrectedTurn, CorrectionSource, ToolCall
from ingest.core.records import StepKind, TrajectoryRecord
from ingest.core.tool_results import call_results


def shared_calls(failed: TrajectoryRecord, success: TrajectoryRecord) -> int:
    """How many tool calls the two rollouts share from the start (every argument compared)."""
    return shared_tool_calls(failed, success, mask_prose=False)


def divergence_correction(
    failed: TrajectoryRecord, successes: Sequence[TrajectoryRecord]
) -> CorrectedTurn | None:
    """The successful rollout's action where the failed one left their shared prefix.

    Among several successful rollouts the one sharing the longest prefix wins (the first
    by external id on ties), so the result does not depend on their order. The rule has
    one home, :func:`attribution.core.sibling_divergence.sibling_divergence`: here every
    argument is compared (a correction repeats the sibling's exact call) and the sibling
    must make a call at the divergence.
    """
    divergence = sibling_divergence(
        failed, successes, min_shared_calls=0, need_sibling_action=True, mask_prose=False
    )
    if divergence is None or divergence.sibling_step is None:
        return None
    success = next(s for s in successes if s.external_id == divergence.sibling_id)
    first, stop = turn_bounds(success.steps, divergence.sibling_step)
    turn = success.steps[first:stop]
    if not _repeatable(failed, divergence.failed_step, success, range(first, stop)):
        return None
    return CorrectedTurn(
        step=failed.steps[divergence.failed_step].index,
        content=turn[0].content or None,
        tool_calls=tuple(
            ToolCall(s.tool_name, s.tool_args, s.tool_call_id)
            for s in turn
            if s.kind == StepKind.TOOL_CALL
        ),
        source=CorrectionSource.SUCCESSFUL_ROLLOUT,
        source_rollout=success.external_id,
    )


def _repeatable(
    failed: TrajectoryRecord, step: int, success: TrajectoryRecord, turn: range
) -> bool:
    """Whether the sibling's turn is a correction the failed rollout could have made at
    ``step``: none of its calls drew an error in the sibling (a trial's "chosen" was code
    that raised a NameError there, its "rejected" the failed run's working code), and every
    value its calls copy is in what the failed rollout had seen by then (a URL the
    sibling's search found and the failed one's did not is a value the model would learn
    to make up)."""
    answers = call_results(success.steps)
    for position in turn:
        call = success.steps[position]
        if call.kind != "tool_call":
            continue
        result = answers.get(position)
        if result is not None and success.steps[result].is_error:
            return False
        if unsupported_arguments(failed.steps, step, call, task_text=failed.task_text):
            return False
    return True
