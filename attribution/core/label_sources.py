"""Decisive-step labels without hand-labelling: from gold actions, and from siblings.

Two rules, each naming its source on the label it makes:

``gold_actions`` (rollouts whose task carries the expected tool calls, as tau-bench's
``info.task.actions`` does). A tau-bench reward checks the world's final state, so only a
call that changes the state can flip the outcome. The rule, in order:

1. Calls are matched to gold actions as :func:`attribution.core.gold_actions.diff_actions`
   does (same tool, same arguments, in order), with two refinements: a call whose result
   is an error changed nothing and is skipped, and argument values that are prose (five
   or more words: a summary for a human agent) are not compared, as no two wordings match.
2. The label is the first *mutating* call that no gold action matches: the first time the
   agent changed the world in a way the task did not ask for (kind ``mutating_call``).
3. Else, when a mutating gold action was never made, the label is the *missing-action
   point*: the first agent step after both (a) the call that made the gold action before
   it and (b) the step where the last of its argument values first appeared in the rollout
   (values that never appear are not waited for). That is the first moment the agent could
   have made the call and did something else (kind ``missing_action``). On tau-bench it can
   land a turn early, on the confirmation question the policy asks before acting.
4. Read-only deviations (an extra lookup, a missing one) never make a label: they leave
   the state alone, so they cannot flip the outcome. A rollout with only those, or with no
   deviation at all, gets no label.

``sibling_divergence`` (several trials of one task; the rule is in
:mod:`attribution.core.sibling_divergence`): weaker evidence, so it trains and never
calibrates by default (:func:`may_calibrate`).

Example:
    >>> from ingest.core.records import StepRecord as S, TrajectoryRecord as T
    >>> from attribution.core.gold_actions import GoldAction
    >>> rollout = T("r", steps=[S(0, "user", "message", "cancel ABC"),
    ...     S(1, "assistant", "tool_call", tool_name="cancel_reservation",
    ...       tool_args={"reservation_id": "XYZ"}), S(2, "tool", "tool_result", "done")])
    >>> label = gold_action_label(rollout, [GoldAction("cancel_reservation",
    ...     {"reservation_id": "ABC"}, True)])
    >>> (label.step, label.kind, label.source)
    (1, 'mutating_call', 'gold_actions')
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from attribution.core.gold_actions import GoldAction, canonical_arguments
from ingest.core.records import LabelRecord, LabelSource
from ingest.core.tool_results import call_results
from ingest.core.vocabulary import is_agent_action, is_mutating_tool

SOURCE_GOLD_ACTIONS = LabelSource.GOLD_ACTIONS
SOURCE_SIBLING_DIVERGENCE = LabelSource.SIBLING_DIVERGENCE
KIND_MUTATING_CALL = "mutating_call"
KIND_MISSING_ACTION = "missing_action"
KIND_DIVERGENCE = "divergence"  # made by attribution.core.sibling_divergence
# Sources whose labels calibrate unless the project says otherwise; gold-action labels
# calibrate only when the project opts in (the guarantee then refers to that rule).
CALIBRATING_SOURCES = frozenset({LabelSource.HUMAN, LabelSource.DATASET})
PROSE_MIN_WORDS = 5
_PROSE = "<prose>"

MSG_NO_DEVIATION = "No deviation from the gold actions."
MSG_READ_ONLY_ONLY = "Only read-only deviations, which leave the state alone."


@dataclass(frozen=True)
class DerivedLabel:
    """A decisive step found by a rule, with the rule's name and its reason."""

    step: int
    source: str
    kind: str
    reason: str
    agent: str = ""

    def to_label_record(self) -> LabelRecord:
        return LabelRecord(step=self.step, agent=self.agent, reason=self.reason, source=self.source)


def may_calibrate(source: str, *, gold_actions_calibrate: bool = False) -> bool:
    """Whether labels of ``source`` may calibrate (sibling divergence never does).

    Example:
        >>> may_calibrate("human"), may_calibrate("gold_actions"), may_calibrate(
        ...     "gold_actions", gold_actions_calibrate=True), may_calibrate("sibling_divergence")
        (True, False, True, False)
    """
    if source == SOURCE_GOLD_ACTIONS:
        return gold_actions_calibrate
    return source in CALIBRATING_SOURCES


def _parsed(args: Any) -> Any:
    if isinstance(args, str):
        try:
            return json.loads(args)
        except ValueError:
            return args
    return args


def _masked(value: Any) -> Any:
    """Arguments with prose values replaced, so that two wordings compare equal."""
    if isinstance(value, dict):
        return {k: _masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v) for v in value]
    if isinstance(value, str) and len(value.split()) >= PROSE_MIN_WORDS:
        return _PROSE
    return value


def call_key(name: str, args: Any, *, mask_prose: bool = True) -> tuple[str, str]:
    """A tool call as a comparable pair: its name and its canonical, prose-masked arguments.

    >>> call_key("transfer", {"summary": "the user wants a refund"}) == call_key(
    ...     "transfer", {"summary": "refund wanted by the user, now"})
    True
    """
    parsed = _parsed(args)
    return name, canonical_arguments(_masked(parsed) if mask_prose else parsed)


def _leaf_values(value: Any) -> list[str]:
    """The scalar argument values worth looking for in the text (no prose, no flags)."""
    if isinstance(value, dict):
        return [v for item in value.values() for v in _leaf_values(item)]
    if isinstance(value, list):
        return [v for item in value for v in _leaf_values(item)]
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = str(value)
    if len(text) < 3 or len(text.split()) >= PROSE_MIN_WORDS:
        return []
    return [text]


def _changes_state(name: str, flag: bool | None, neutral_tools: frozenset[str]) -> bool:
    if name in neutral_tools:
        return False
    return flag if flag is not None else bool(is_mutating_tool(name))


@dataclass
class GoldActionDeviations:
    """Every deviation of one rollout from its gold actions, under the label rule."""

    mutating_calls: list[int] = field(default_factory=list)
    read_only_calls: list[int] = field(default_factory=list)
    missing_mutating: list[GoldAction] = field(default_factory=list)
    missing_read_only: list[GoldAction] = field(default_factory=list)
    failed_calls: list[int] = field(default_factory=list)
    matched: dict[int, int] = field(default_factory=dict)  # gold position -> step position


def gold_action_deviations(
    trajectory: Any, gold: Sequence[GoldAction], *, neutral_tools: frozenset[str] = frozenset()
) -> GoldActionDeviations:
    """Match the rollout's effective calls to the gold actions (rule steps 1 and 4).

    Deviations with a tool in ``neutral_tools`` (see :func:`outcome_neutral_tools`) count
    as read-only.
    """
    steps = list(trajectory.steps)
    answers = call_results(steps)
    unmatched = {position: call_key(g.name, g.kwargs) for position, g in enumerate(gold)}
    result = GoldActionDeviations()
    for position, step in enumerate(steps):
        if step.kind != "tool_call":
            continue
        if position in answers and steps[answers[position]].is_error:
            result.failed_calls.append(position)
            continue
        key = call_key(step.tool_name, step.tool_args)
        match = next((g for g, k in unmatched.items() if k == key), None)
        if match is not None:
            del unmatched[match]
            result.matched[match] = position
            continue
        mutating = _changes_state(step.tool_name, step.is_mutating, neutral_tools)
        (result.mutating_calls if mutating else result.read_only_calls).append(position)
    for position in sorted(unmatched):
        action = gold[position]
        mutating = _changes_state(action.name, action.is_mutating, neutral_tools)
        (result.missing_mutating if mutating else result.missing_read_only).append(action)
    return result


def missing_action_point(
    trajectory: Any, gold: Sequence[GoldAction], missing: GoldAction, matched: dict[int, int]
) -> int | None:
    """The first agent step at which ``missing`` could have been made (rule step 3)."""
    steps = list(trajectory.steps)
    agent_steps = [i for i, s in enumerate(steps) if is_agent_action(s)]
    if not agent_steps:
        return None
    at = next(i for i, g in enumerate(gold) if g is missing)
    ready = max((step for g, step in matched.items() if g < at), default=-1)
    texts = [
        (s.content or "") + " " + json.dumps(s.tool_args, default=str)
        if s.tool_args is not None
        else s.content or ""
        for s in steps
    ]
    for value in _leaf_values(_parsed(missing.kwargs)):
        first = next((i for i, text in enumerate(texts) if value in text), None)
        if first is not None:
            ready = max(ready, first)
    return next((i for i in agent_steps if i > ready), agent_steps[-1])


def gold_action_label(
    trajectory: Any, gold: Sequence[GoldAction], *, neutral_tools: frozenset[str] = frozenset()
) -> DerivedLabel | None:
    """The decisive step of a failed rollout by the gold-action rule, or None.

    ``trajectory`` has ``steps`` with ``kind``, ``role``, ``agent``, ``content``,
    ``tool_name``, ``tool_args``, ``tool_call_id``, ``is_error`` and ``is_mutating``
    (an ``ingest.core.records.TrajectoryRecord`` does).
    """
    steps = list(trajectory.steps)
    deviations = gold_action_deviations(trajectory, gold, neutral_tools=neutral_tools)
    if deviations.mutating_calls:
        position = deviations.mutating_calls[0]
        call = steps[position]
        asked = {g.name for g in gold}
        reason = (
            f"{call.tool_name} called with arguments that no gold action has"
            if call.tool_name in asked
            else f"{call.tool_name} called, which no gold action asks for"
        )
        return DerivedLabel(position, SOURCE_GOLD_ACTIONS, KIND_MUTATING_CALL, reason, call.agent)
    if deviations.missing_mutating:
        missing = deviations.missing_mutating[0]
        point = missing_action_point(trajectory, gold, missing, deviations.matched)
        if point is None:
            return None
        return DerivedLabel(
            point,
            SOURCE_GOLD_ACTIONS,
            KIND_MISSING_ACTION,
            f"could have called {missing.name} as the gold actions do, and did not",
            steps[point].agent,
        )
    return None


def no_label_reason(
    trajectory: Any, gold: Sequence[GoldAction], *, neutral_tools: frozenset[str] = frozenset()
) -> str:
    """Why :func:`gold_action_label` gives no label ("" when it gives one)."""
    deviations = gold_action_deviations(trajectory, gold, neutral_tools=neutral_tools)
    if deviations.mutating_calls or deviations.missing_mutating:
        return ""
    if deviations.read_only_calls or deviations.missing_read_only:
        return MSG_READ_ONLY_ONLY
    return MSG_NO_DEVIATION


def outcome_neutral_tools(
    rollouts: Sequence[tuple[Any, Sequence[GoldAction], bool]], *, min_successes: int = 10
) -> frozenset[str]:
    """Mutating tools whose deviations are at least as common in successful rollouts.

    ``rollouts`` holds (rollout, gold actions, succeeded). A tool that successful rollouts
    deviate with as often as failed ones (tau-bench's hand-off to a human agent, which
    changes no record) cannot be what flipped an outcome. With fewer than
    ``min_successes`` successful rollouts no tool is judged neutral.

    Example:
        >>> outcome_neutral_tools([], min_successes=1)
        frozenset()
    """
    counts: dict[bool, dict[str, int]] = {True: {}, False: {}}
    totals = {True: 0, False: 0}
    for trajectory, gold, succeeded in rollouts:
        totals[succeeded] += 1
        deviations = gold_action_deviations(trajectory, gold)
        steps = trajectory.steps
        tools = {steps[i].tool_name for i in deviations.mutating_calls}
        tools |= {g.name for g in deviations.missing_mutating}
        for tool in tools:
            counts[succeeded][tool] = counts[succeeded].get(tool, 0) + 1
    if totals[True] < max(min_successes, 1) or totals[False] == 0:
        return frozenset()
    return frozenset(
        tool
        for tool, hits in counts[True].items()
        if hits / totals[True] >= counts[False].get(tool, 0) / totals[False]
    )
