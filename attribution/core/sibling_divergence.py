"""Where a failed rollout leaves a successful trial of the same task: a weak label source.

The rule: the failed rollout's first tool call that differs (tool or arguments, see
:func:`attribution.core.label_sources.call_key`) from a successful trial's call at the
same position, when the two share at least ``min_shared_calls`` calls from the start. A
trial where a call both made alike failed in one of them only is no sibling: from there
the two answer different states. The
words of the conversation are not compared: a simulated user words every trial
differently. A trial that shares no call says nothing about where the failed one went
wrong, so labels need one shared call by default. It is weaker evidence than gold actions
(a harmless reordering of lookups is a divergence too): its labels train and never
calibrate by default (:func:`attribution.core.label_sources.may_calibrate`).

The repair-dataset corrections use the same rule with ``min_shared_calls=0,
need_sibling_action=True, mask_prose=False`` (``exports/core/divergence.py``).

Example:
    >>> from ingest.core.records import StepRecord as S, TrajectoryRecord as T
    >>> def call(i, args):
    ...     return S(i, "assistant", "tool_call", tool_name="cancel", tool_args=args)
    >>> failed = T("f", task_id="1", steps=[call(0, {"id": 1}), call(1, {"id": 2})])
    >>> won = T("s", task_id="1", steps=[call(0, {"id": 1}), call(1, {"id": 3})])
    >>> sibling_divergence_label(failed, [won]).step
    1
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from attribution.core.label_sources import (
    KIND_DIVERGENCE,
    SOURCE_SIBLING_DIVERGENCE,
    DerivedLabel,
    call_key,
)
from ingest.core.tool_results import call_results
from ingest.core.vocabulary import (
    acting_agent,
    has_one_agent,
    is_agent_action,
    is_user_turn,
    step_mutates,
)


@dataclass(frozen=True)
class SiblingDivergence:
    """Where a failed rollout leaves a successful trial of the same task."""

    failed_step: int
    sibling_step: int | None
    shared_calls: int
    sibling_id: str


def tool_call_positions(trajectory: Any) -> list[int]:
    """Positions of the rollout's tool calls, in order."""
    return [i for i, step in enumerate(trajectory.steps) if step.kind == "tool_call"]


def call_failures(trajectory: Any) -> list[bool]:
    """Per tool call (in order), whether the result that answers it
    (:func:`ingest.core.tool_results.call_results`) was an error."""
    steps = trajectory.steps
    results = call_results(steps)
    return [
        position in results and bool(steps[results[position]].is_error)
        for position in tool_call_positions(trajectory)
    ]


def _shared_prefix(
    failed: Any, success: Any, *, mask_prose: bool, failed_outcomes: list[bool] | None = None
) -> tuple[int, bool]:
    """(tool calls the two share from the start, whether the prefix ends at a call both
    made alike that failed in one rollout only); ``failed_outcomes``: the failed rollout's
    :func:`call_failures`, when the caller compares it with several trials.

    Prose arguments (``mask_prose``) are compared only where the two calls' outcomes
    differ: a query or a command worded differently that failed in one trial only is the
    agents parting, not the environments (a SQL agent's broken query, retried unchanged,
    against its sibling's working one: masked, the two were "alike" and the rule stopped
    there with no label).
    """
    shared = 0
    if failed_outcomes is None:
        failed_outcomes = call_failures(failed)
    outcomes = zip(failed_outcomes, call_failures(success), strict=False)
    positions = zip(tool_call_positions(failed), tool_call_positions(success), strict=False)
    for (f, s), (f_failed, s_failed) in zip(positions, outcomes, strict=False):
        left, right = failed.steps[f], success.steps[s]
        left_key = call_key(left.tool_name, left.tool_args, mask_prose=mask_prose)
        if left_key != call_key(right.tool_name, right.tool_args, mask_prose=mask_prose):
            return shared, False
        if f_failed != s_failed:
            worded_alike = not mask_prose or call_key(
                left.tool_name, left.tool_args, mask_prose=False
            ) == call_key(right.tool_name, right.tool_args, mask_prose=False)
            return shared, worded_alike
        shared += 1
    return shared, False


def shared_tool_calls(failed: Any, success: Any, *, mask_prose: bool = True) -> int:
    """How many tool calls (same tool, same arguments, same outcome: an error or not) two
    rollouts share from the start.

    With ``mask_prose`` (the default) prose arguments are not compared, as for gold actions.
    """
    return _shared_prefix(failed, success, mask_prose=mask_prose)[0]


def sibling_divergence(
    failed: Any,
    successes: Sequence[Any],
    *,
    min_shared_calls: int = 1,
    need_sibling_action: bool = False,
    mask_prose: bool = True,
) -> SiblingDivergence | None:
    """The successful trial sharing the longest call prefix, and where the failed one left it.

    Only trials of the same ``task_id`` count. The failed rollout must make a call at the
    divergence (one that simply stops calling tools diverges at no action); with
    ``need_sibling_action`` the sibling must too (a correction needs the sibling's call).
    Ties go to the first sibling by ``external_id``, so the order of ``successes`` does not
    matter. With ``min_shared_calls=0``, a sibling that shares no call must make its first
    call after as many user turns as the failed one: nothing else says the two were at the
    same point of the conversation (an export's correction answered "here is the
    reservation id" with "I can look it up from your user id", the sibling's reply to an
    earlier turn).
    """
    failed_calls = tool_call_positions(failed)
    failed_outcomes = call_failures(failed)
    best: tuple[int, Any] | None = None
    for success in sorted(successes, key=lambda r: r.external_id):
        if success.task_id != failed.task_id:
            continue
        shared, parted = _shared_prefix(
            failed, success, mask_prose=mask_prose, failed_outcomes=failed_outcomes
        )
        # The same call failed in one trial only: the environments parted, not the agents,
        # and what either did next answers a different state (a trial's label and its
        # export's "correction" went to a writer two steps after the researcher carried on
        # past a failed fetch its successful sibling never had).
        if parted or shared < min_shared_calls or shared >= len(failed_calls):
            continue
        success_calls = tool_call_positions(success)
        if need_sibling_action and shared >= len(success_calls):
            continue
        if (
            shared == 0
            and success_calls
            and (_user_turns(failed, failed_calls[0]) != _user_turns(success, success_calls[0]))
        ):
            continue
        if best is None or shared > best[0]:
            best = (shared, success)
    if best is None:
        return None
    shared, success = best
    success_calls = tool_call_positions(success)
    failed_step = failed_calls[shared]
    sibling_step = success_calls[shared] if shared < len(success_calls) else None
    if sibling_step is not None:
        after = failed_calls[shared - 1] + 1 if shared else 0
        moved = _same_agent_step(failed, after, failed_step, success, sibling_step)
        if moved is None:
            return None
        failed_step = moved
    return SiblingDivergence(
        failed_step=failed_step,
        sibling_step=sibling_step,
        shared_calls=shared,
        sibling_id=success.external_id,
    )


def _same_agent_step(
    failed: Any, start: int, call: int, success: Any, sibling_position: int
) -> int | None:
    """Where the failed rollout left its sibling, given the sibling's next call: the failed
    rollout's next call when the same agent makes both; else that agent's first action
    after the shared calls, where it did something else (None when it never acts before
    ``call``: the work went to another agent, and no step of this one stands for the
    sibling's call). In a crew the failed rollout's next call can be another agent's,
    downstream of the miss: an analyst that reported a figure after a traceback where its
    successful sibling fixed the code left it at that report, not at the writer's
    ``save_report`` steps later. Two rollouts of one agent each are of the same agent,
    whatever each format called it (``assistant`` in a chat file, its name in a trace)."""
    steps = failed.steps
    if has_one_agent(steps) and has_one_agent(success.steps):
        return call
    agent = acting_agent(success.steps[sibling_position])
    if acting_agent(steps[call]) == agent:
        return call
    for position in range(start, call):
        step = steps[position]
        if is_agent_action(step) and acting_agent(step) == agent:
            return position
    return None


def _user_turns(trajectory: Any, stop: int) -> int:
    """User turns before position ``stop``."""
    return sum(is_user_turn(step) for step in trajectory.steps[:stop])


def label_divergence(
    failed: Any, successes: Sequence[Any], *, min_shared_calls: int = 1
) -> SiblingDivergence | None:
    """The divergence a label is put on: none where the failed rollout leaves its sibling
    with a call known only to read. A lookup made in another order or with another
    argument (a file opened at another line) changes nothing the outcome depends on: on
    tau-bench airline such labels matched the gold-action label in 1 of 21 rollouts, those
    at other calls in 14 of 18 (bench numbers in docs/attribution.md)."""
    divergence = sibling_divergence(failed, successes, min_shared_calls=min_shared_calls)
    if divergence is None:
        return None
    read_only = step_mutates(failed.steps[divergence.failed_step]) is False
    return None if read_only else divergence


def sibling_divergence_label(
    failed: Any, successes: Sequence[Any], *, min_shared_calls: int = 1
) -> DerivedLabel | None:
    """The sibling-divergence label of a failed rollout, or None."""
    divergence = label_divergence(failed, successes, min_shared_calls=min_shared_calls)
    if divergence is None:
        return None
    step = failed.steps[divergence.failed_step]
    return DerivedLabel(
        divergence.failed_step,
        SOURCE_SIBLING_DIVERGENCE,
        KIND_DIVERGENCE,
        divergence_reason(divergence),
        step.agent,
    )


def divergence_reason(divergence: SiblingDivergence) -> str:
    """The label's reason: which trial it left, and after how many shared calls.

    Example:
        >>> divergence_reason(SiblingDivergence(4, 4, 1, "t-2"))
        'left successful trial t-2 after 1 shared tool call'
    """
    calls = "call" if divergence.shared_calls == 1 else "calls"
    return (
        f"left successful trial {divergence.sibling_id} after {divergence.shared_calls} "
        f"shared tool {calls}"
    )
