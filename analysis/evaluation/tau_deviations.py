"""The decisive deviation of a failed tau-bench rollout from its gold actions, by kind.

The diff itself is ``attribution.core.gold_actions.diff_actions`` (the product's own
rule: calls matched to gold actions by name and arguments, in order; the decisive
deviation is the first mutating call that no gold action matches). This module only
names the *kind* of that deviation and picks the step it sits on, by these rules, in
order:

1. ``wrong_argument``: the decisive call uses a tool that a still-unmatched gold action
   also uses (the right kind of change, with values the task did not ask for).
2. ``handoff``: the decisive call hands the conversation to a human (a tool whose name
   starts with ``transfer``, ``escalate`` or ``handoff``) where no gold action does.
3. ``wrong_tool``: the decisive call is another mutating tool while a mutating gold
   action is left undone (a different change from the one asked for).
4. ``extra_mutating_action``: the decisive call changes the world and every mutating
   gold action was done as asked (a change on top of the right ones, or a repeat).
5. ``missing_action``: no unmatched mutating call, but a mutating gold action was never
   called. The step is the first agent action after the last call that matched a gold
   action (after the first user turn when none did): where the agent went another way.
6. ``missing_output``: every mutating gold action was done and nothing extra changed,
   but an expected output (``info.task.outputs``) never appears in the agent's messages
   (tau-bench's own check: lower case, commas removed). The step is the agent's last
   message.
7. ``no_deviation``: none of the above (kept so nothing is silently dropped).

Example:
    >>> from ingest.core.records import StepRecord
    >>> steps = [StepRecord(0, role="user", content="cancel it"),
    ...          StepRecord(1, role="assistant", kind="tool_call",
    ...                     tool_name="cancel_reservation", tool_args={"id": "B"})]
    >>> deviation = decisive_deviation(steps, [{"name": "cancel_reservation",
    ...                                         "kwargs": {"id": "A"}}])
    >>> deviation.kind, deviation.step, deviation.detail["arguments"]
    ('wrong_argument', 1, ['id'])
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from attribution.core.gold_actions import ToolCall, diff_actions, gold_actions
from ingest.core.vocabulary import is_agent_action

WRONG_ARGUMENT = "wrong_argument"
HANDOFF = "handoff"
WRONG_TOOL = "wrong_tool"
EXTRA_MUTATING_ACTION = "extra_mutating_action"
MISSING_ACTION = "missing_action"
MISSING_OUTPUT = "missing_output"
NO_DEVIATION = "no_deviation"
KINDS = (
    WRONG_ARGUMENT,
    HANDOFF,
    WRONG_TOOL,
    EXTRA_MUTATING_ACTION,
    MISSING_ACTION,
    MISSING_OUTPUT,
    NO_DEVIATION,
)
HANDOFF_PREFIXES = ("transfer", "escalate", "handoff", "hand_off")


@dataclass(frozen=True)
class Deviation:
    """The kind of a rollout's decisive deviation and the step index it is placed on."""

    kind: str
    step: int | None
    reason: str
    detail: dict[str, Any] = field(default_factory=dict)


def _value(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def differing_arguments(args: Any, gold_kwargs: Sequence[Any]) -> list[str]:
    """Argument names whose values differ from the closest gold call of the same tool.

    The closest gold call is the one sharing the most equal argument values.

    >>> differing_arguments({"a": 1, "b": 2}, [{"a": 1, "b": 3}, {"a": 9, "b": 9}])
    ['b']
    """
    given = args if isinstance(args, dict) else {}
    best: list[str] | None = None
    for kwargs in gold_kwargs:
        wanted = kwargs if isinstance(kwargs, dict) else {}
        names = sorted(set(given) | set(wanted))
        differing = [n for n in names if _value(given.get(n)) != _value(wanted.get(n))]
        if best is None or len(differing) < len(best):
            best = differing
    return best or []


def _normalised(text: str) -> str:
    return text.lower().replace(",", "")


def missing_outputs(steps: Sequence[Any], outputs: Sequence[Any]) -> list[str]:
    """Expected outputs that no agent message contains (tau-bench's check).

    >>> from ingest.core.records import StepRecord
    >>> missing_outputs([StepRecord(0, role="assistant", content="It costs 1,280 dollars")],
    ...                 ["1280", "327"])
    ['327']
    """
    said = [_normalised(s.content or "") for s in steps if is_agent_action(s)]
    return [str(o) for o in outputs if not any(_normalised(str(o)) in text for text in said)]


def _first_agent_action_after(steps: Sequence[Any], index: int) -> int | None:
    for step in steps:
        if step.index > index and is_agent_action(step):
            return int(step.index)
    return None


def decisive_deviation(
    steps: Sequence[Any], raw_gold: Any, outputs: Sequence[Any] = ()
) -> Deviation:
    """Classify a failed rollout's decisive deviation (rules in the module docstring)."""
    gold = gold_actions(raw_gold) or []
    calls = [
        ToolCall(int(s.index), s.tool_name, s.tool_args, s.is_mutating)
        for s in steps
        if s.kind == "tool_call" and s.tool_name
    ]
    diff = diff_actions(calls, gold)
    by_index = {int(s.index): s for s in steps}
    missing_mutating = [m["tool"] for m in diff.missing if m["mutating"]]
    if diff.decisive_step is not None:
        call = by_index[diff.decisive_step]
        detail: dict[str, Any] = {"tool": call.tool_name, "missing": missing_mutating}
        if any(m["tool"] == call.tool_name for m in diff.missing):
            detail["arguments"] = differing_arguments(
                call.tool_args, [g.kwargs for g in gold if g.name == call.tool_name]
            )
            kind = WRONG_ARGUMENT
        elif call.tool_name.lower().startswith(HANDOFF_PREFIXES):
            kind = HANDOFF
        elif missing_mutating:
            kind = WRONG_TOOL
        else:
            kind = EXTRA_MUTATING_ACTION
        return Deviation(kind, diff.decisive_step, diff.decisive_reason, detail)
    if missing_mutating:
        extra_steps = {item["step"] for item in diff.extra}
        matched = [c.step_index for c in calls if c.step_index not in extra_steps]
        first_user = next((int(s.index) for s in steps if s.role in ("user", "human")), -1)
        after = max(matched) if matched else first_user
        return Deviation(
            MISSING_ACTION,
            _first_agent_action_after(steps, after),
            diff.decisive_reason,
            {"missing": missing_mutating},
        )
    unsaid = missing_outputs(steps, outputs)
    last_agent = max((int(s.index) for s in steps if is_agent_action(s)), default=None)
    if unsaid:
        return Deviation(
            MISSING_OUTPUT,
            last_agent,
            "never told the user the expected output",
            {"outputs": unsaid},
        )
    return Deviation(NO_DEVIATION, last_agent, "no deviation from the gold actions found", {})
