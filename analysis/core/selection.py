"""Which steps of a rollout are "wrong steps", and their context window.

A failed rollout contributes its decisive steps (a labelled step with weight 1, or, when
it has no label, the agent actions of its conformal set weighted by their probability)
and the agent actions that drew an error (a tool call whose result is an error). A
failed rollout with neither a label nor a set (its agent system has too few labels for
a claim, or attribution has not run yet) contributes, besides its error steps, the agent
actions that show a behaviour signal: without them a project nobody has labelled had
only its error calls to cluster (15 failed rollouts of a live trip planner gave 6 wrong
steps and no misbehaviour, its made-up prices and give-ups unseen). A set
stands in for a missing label: where the label says which step was decisive, the set's
other steps are, by that label, not the error (on the demo project the sets of labelled
rollouts had made nine in ten wrong steps ordinary page reads and replies). A set spans
contiguous steps, so it also holds the system prompt, user turns and tool results; those
are not the agent's behaviour and are left out (on the demo project the airline system
prompt was otherwise 13% of all wrong steps). With ``all_failed_steps`` every agent
action of a failed rollout counts. Steps of successful rollouts are never wrong
steps; :func:`comparison_steps` picks their agent actions so the failure-rate lift of a
misbehaviour can be measured by assigning them.

Steps are read by attribute (``index``, ``agent``, ``role``, ``kind``, ``content``,
``tool_name``, ``tool_args``, ``tool_call_id``, ``is_error``), so ingest's
``StepRecord`` and the Django ``Step`` model both work.

Example:
    >>> from ingest.core.records import StepRecord
    >>> steps = [StepRecord(index=0, role="user", content="book a flight"),
    ...          StepRecord(index=1, role="assistant", kind="tool_call",
    ...                     tool_name="book_reservation", tool_call_id="c1"),
    ...          StepRecord(index=2, role="tool", kind="tool_result", tool_call_id="c1",
    ...                     content="Error: not enough seats", is_error=True)]
    >>> rollout = RolloutFacts(key="r1", failed=True)
    >>> [(s.index, s.source, s.before, s.after) for s in wrong_steps(rollout, steps)]
    [(1, 'error', 'book a flight', 'Error: not enough seats')]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from analysis.core.steps import Source, WrongStep
from ingest.core.vocabulary import USER_ROLES, has_one_agent, is_agent_action, is_user_turn


@dataclass(frozen=True)
class RolloutFacts:
    key: str
    failed: bool
    environment: str = ""
    task: str = ""
    policy_model: str = ""


def _key(rollout: RolloutFacts, step: Any) -> str:
    return f"{rollout.key}#{step.index}"


def _context(steps: Sequence[Any], position: int) -> tuple[str, str]:
    step = steps[position]
    before = ""
    for earlier in reversed(steps[:position]):
        if earlier.kind == "system":
            continue
        if earlier.kind == "tool_result" and step.kind != "tool_call":
            before = earlier.content or ""
            break
        if (earlier.role or "").lower() in USER_ROLES or (earlier.agent or "") != (
            step.agent or ""
        ):
            before = earlier.content or ""
            break
    after = steps[position + 1].content or "" if position + 1 < len(steps) else ""
    if step.kind == "tool_call" and step.tool_call_id:
        for later in steps[position + 1 :]:
            if later.kind == "tool_result" and later.tool_call_id == step.tool_call_id:
                after = later.content or ""
                break
    return before, after


def preceding(steps: Sequence[Any], position: int) -> str:
    """What came just before the step at ``position`` (system prompts skipped): the
    user's turn, an error, a tool's result, the same agent's own step, another agent's.

    >>> from ingest.core.records import StepRecord
    >>> steps = [StepRecord(index=0, role="user", content="hi"),
    ...          StepRecord(index=1, role="assistant", kind="tool_call", tool_name="get_user"),
    ...          StepRecord(index=2, role="tool", kind="tool_result", tool_name="get_user"),
    ...          StepRecord(index=3, role="assistant", content="One moment."),
    ...          StepRecord(index=4, role="assistant", kind="tool_call", tool_name="get_order")]
    >>> [preceding(steps, position) for position in (0, 1, 3, 4)]
    ['start', 'user', 'result:get_user', 'self']
    """
    step = steps[position]
    for earlier in reversed(steps[:position]):
        if earlier.kind == "system" or (earlier.role or "").lower() == "system":
            continue
        if earlier.is_error:
            return "error"
        if earlier.kind == "tool_result":
            return f"result:{earlier.tool_name}" if earlier.tool_name else "result"
        if is_user_turn(earlier):
            return "user"
        agent = earlier.agent or earlier.role or ""
        return "self" if agent == (step.agent or step.role or "") else f"agent:{agent}"
    return "start"


def _error_actions(steps: Sequence[Any]) -> list[int]:
    """Positions of the agent actions that drew an error signal."""
    found: list[int] = []
    for position, step in enumerate(steps):
        if not step.is_error:
            continue
        if step.kind != "tool_result":
            found.append(position)
            continue
        for earlier in range(position - 1, -1, -1):
            candidate = steps[earlier]
            same_call = step.tool_call_id and candidate.tool_call_id == step.tool_call_id
            if candidate.kind == "tool_call" and (same_call or not step.tool_call_id):
                found.append(earlier)
                break
    return found


def make_wrong_step(
    rollout: RolloutFacts,
    steps: Sequence[Any],
    position: int,
    *,
    source: str,
    weight: float = 1.0,
    key: Callable[[RolloutFacts, Any], str] = _key,
    one_agent: bool | None = None,
) -> WrongStep:
    """The wrong step at ``position``; ``one_agent`` (computed when None) says whether one
    agent acts in the rollout (:func:`ingest.core.vocabulary.has_one_agent`)."""
    step = steps[position]
    before, after = _context(steps, position)
    return WrongStep(
        key=key(rollout, step),
        rollout=rollout.key,
        index=int(step.index),
        agent=step.agent or "",
        role=step.role or "",
        kind=step.kind or "",
        tool_name=step.tool_name or "",
        tool_args=step.tool_args,
        content=step.content or "",
        before=before,
        after=after,
        environment=rollout.environment,
        task=rollout.task,
        policy_model=rollout.policy_model,
        failed=rollout.failed,
        weight=float(weight),
        source=source,
        preceded_by=preceding(steps, position),
        one_agent=has_one_agent(steps) if one_agent is None else one_agent,
    )


def _actions(
    scores: Mapping[int, float], steps: Sequence[Any], position_of: Mapping[int, int]
) -> dict[int, float]:
    """The agent actions among ``scores`` (by step index), by position, scores floored at 0."""
    return {
        position_of[index]: max(float(score), 0.0)
        for index, score in sorted(scores.items())
        if index in position_of and is_agent_action(steps[position_of[index]])
    }


def _share_one_error(
    chosen: dict[int, tuple[str, float]], candidates: Mapping[int, float], source: str
) -> None:
    """At most one candidate is the decisive error: together they weigh one rollout's worth
    (a loop of twenty repeats is not twenty), split by their scores."""
    total = sum(candidates.values())
    for position, score in candidates.items():
        weight = score / total if total > 0 else 1.0 / len(candidates)
        chosen[position] = (source, weight)


def wrong_steps(
    rollout: RolloutFacts,
    steps: Sequence[Any],
    *,
    labelled: Sequence[int] = (),
    conformal: Mapping[int, float] | None = None,
    signalled: Mapping[int, float] | None = None,
    all_failed_steps: bool = False,
    key: Callable[[RolloutFacts, Any], str] = _key,
) -> list[WrongStep]:
    """The wrong steps of one rollout (none for a rollout that did not fail).

    ``labelled`` are decisive step indices (weight 1); ``conformal`` maps the indices of
    the conformal set to their probability, used only when no label falls in the
    rollout; ``signalled`` maps the indices of agent actions with a behaviour signal to
    the scorer's probability of each (1.0 each without a scorer). At most one step of a
    rollout is its decisive error, so without a label the candidates share one weight,
    their probabilities made to add up to one.

    Without a set the candidates are the signalled actions. A set says where the error
    is, not what it was: its candidates are the signalled actions it holds and its most
    probable agent action (the scorer's pick). Every action of a set is not a wrong step:
    a set made from few labels can hold nearly the whole rollout, and its plain reads
    and plans would then be clustered as misbehaviours. A step chosen for several
    reasons keeps the strongest: label, then conformal set, then error, then signal.
    """
    if not rollout.failed:
        return []
    position_of = {int(step.index): position for position, step in enumerate(steps)}
    chosen: dict[int, tuple[str, float]] = {}
    if all_failed_steps:
        for position, step in enumerate(steps):
            if is_agent_action(step):
                chosen[position] = (Source.FAILED, 1.0)
    labelled = [index for index in labelled if index in position_of]
    if not labelled and not conformal and signalled:
        _share_one_error(chosen, _actions(signalled, steps, position_of), Source.SIGNAL)
    for position in _error_actions(steps):
        chosen[position] = (Source.ERROR, 1.0)
    if not labelled and conformal:
        in_set = _actions(conformal, steps, position_of)
        in_set = {at: p for at, p in in_set.items() if p > 0}
        picked = {at: p for at, p in in_set.items() if steps[at].index in (signalled or {})}
        if in_set:
            top = min(in_set, key=lambda at: (-in_set[at], at))
            picked[top] = in_set[top]
        _share_one_error(chosen, picked, Source.CONFORMAL)
    for index in labelled:
        # A label on a user turn, the system prompt or a tool's result says where the
        # rollout went wrong, not what an agent did: no misbehaviour is made of it (a
        # customer's message labelled from the keyboard joined a group chat's cluster).
        if is_agent_action(steps[position_of[index]]):
            chosen[position_of[index]] = (Source.LABEL, 1.0)
    one_agent = has_one_agent(steps) if chosen else False
    return [
        make_wrong_step(
            rollout, steps, position, source=source, weight=weight, key=key, one_agent=one_agent
        )
        for position, (source, weight) in sorted(chosen.items())
    ]


def comparison_steps(
    rollout: RolloutFacts,
    steps: Sequence[Any],
    *,
    key: Callable[[RolloutFacts, Any], str] = _key,
) -> list[WrongStep]:
    """The agent actions of a rollout, to be assigned (not clustered) for the lift."""
    one_agent = has_one_agent(steps)
    return [
        make_wrong_step(
            rollout, steps, position, source=Source.SUCCESS, key=key, one_agent=one_agent
        )
        for position, step in enumerate(steps)
        if is_agent_action(step)
    ]
