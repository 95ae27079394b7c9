"""The four example kinds, built from one :class:`ExportRollout` at a time.

- supervised recovery (``sft``): the prefix before the corrected step, then the
  corrected assistant turn, in the OpenAI chat fine-tuning format;
- preference pairs: the same prefix as ``prompt``, the correction as ``chosen``, the
  original turn as ``rejected``;
- diagnosis: the rollout (or a window around the prediction set) with the decisive set,
  step, agent, misbehaviour and reason as the answer;
- start states: for each misbehaviour occurrence, the prefix ending just before it.

A builder returns the example as a dict, or a :class:`Skip` whose reason is counted in
the manifest. Nothing is truncated or invented: a prefix that cannot be written as
valid chat messages is skipped, never patched.

Example:
    >>> from ingest.core.records import StepRecord, TrajectoryRecord
    >>> from exports.core.inputs import CorrectedTurn, ExportRollout
    >>> record = TrajectoryRecord(external_id="r1", steps=[
    ...     StepRecord(index=0, role="user", content="Cancel my trip.", agent="user"),
    ...     StepRecord(index=1, role="assistant", content="Done!", agent="assistant")])
    >>> item = ExportRollout(rollout_id=7, record=record,
    ...     corrections=[CorrectedTurn(step=1, content="Which trip?", author="ana")])
    >>> [m["content"] for m in sft_example(item)["messages"]]
    ['Cancel my trip.', 'Which trip?']
    >>> preference_example(item)["rejected"][0]["content"]
    'Done!'
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from exports.core.chat import (
    RenderError,
    call_ids,
    corrected_turn,
    original_turn,
    render_prefix,
    turn_bounds,
)
from exports.core.inputs import CorrectedTurn, CorrectionSource, ExportRollout, Occurrence
from ingest.core.records import StepRecord, TrajectoryRecord
from ingest.core.vocabulary import acting_agent, is_agent_action

SKIP_NO_CORRECTION = "no correction"
SKIP_BAD_STEP = "the correction's step is not an agent action of the rollout"
SKIP_AFTER_LABEL = "the correction comes after the labelled decisive step"
SKIP_SIBLING_OFF_LABEL = (
    "the successful trial parts from this rollout at another turn than the labelled "
    "decisive step: its next call followed another conversation, so it corrects no "
    "labelled error"
)
SKIP_SAME_ACTION = "the correction repeats the original action"
SKIP_NO_DECISIVE = "no label and no attribution"
SKIP_LEAK = "the prefix would hold the decisive step"
SKIP_EMPTY_ORIGINAL = "the original step is empty"
SKIP_NO_ACTION = "no agent action at or before the occurrence"

DIAGNOSIS_INSTRUCTION = (
    "You diagnose failed runs of LLM agents. Read the run and answer with JSON: the "
    "decisive_set (first and last step that may hold the decisive error), the most likely "
    "step, the agent responsible, the misbehaviour and the reason."
)


@dataclass(frozen=True)
class Skip:
    reason: str


def best_correction(item: ExportRollout) -> CorrectedTurn | None:
    """A human correction (the newest one listed last) wins over a successful rollout's."""
    humans = [c for c in item.corrections if c.source == CorrectionSource.HUMAN]
    if humans:
        return humans[-1]
    return item.corrections[0] if item.corrections else None


@dataclass(frozen=True)
class Recovery:
    prefix: list[dict[str, Any]]
    chosen: dict[str, Any]
    rejected: dict[str, Any]
    metadata: dict[str, Any]


def _base_metadata(item: ExportRollout) -> dict[str, Any]:
    record = item.record
    return {
        "rollout": record.external_id,
        "rollout_id": item.rollout_id,
        "task_id": record.task_id,
        "environment": record.environment,
        "policy_model": record.policy_model,
    }


def _decisive_metadata(item: ExportRollout) -> dict[str, Any]:
    decisive = item.decisive
    source = None
    if decisive.label_step is not None:
        source = "label"
    elif decisive.rollback_step is not None:
        source = "rollback"
    return {
        "decisive_step": decisive.step,
        "decisive_step_source": source,
        "label_source": decisive.label_source or None,
        "prediction_set": None if decisive.lo is None else [decisive.lo, decisive.hi],
        "alpha": decisive.alpha,
    }


def recovery(item: ExportRollout, correction: CorrectedTurn | None = None) -> Recovery | Skip:
    """The prefix, the corrected turn and the original turn shared by sft and preference."""
    correction = correction or best_correction(item)
    if correction is None:
        return Skip(SKIP_NO_CORRECTION)
    steps = item.record.steps
    if not 0 <= correction.step < len(steps) or not is_agent_action(steps[correction.step]):
        return Skip(SKIP_BAD_STEP)
    cut = turn_bounds(steps, correction.step)[0]
    label = item.decisive.label_step
    if label is not None and cut > label:
        return Skip(SKIP_AFTER_LABEL)
    if (
        label is not None
        and correction.source == CorrectionSource.SUCCESSFUL_ROLLOUT
        and 0 <= label < len(steps)
        and turn_bounds(steps, label)[0] != cut
    ):
        # Trials are matched by their tool calls only (a simulated user words each one
        # differently), so where they part before the label the successful trial's next
        # call may have followed words this rollout never had: a refund the user had
        # confirmed there became "chosen" over a harmless search, ahead of the labelled
        # unconfirmed refund, teaching the very error the label marks.
        return Skip(SKIP_SIBLING_OFF_LABEL)
    agent = acting_agent(steps[cut])
    try:
        rendered = render_prefix(
            steps, cut=cut, trained_agent=agent, task_text=item.record.task_text
        )
    except RenderError as exc:
        return Skip(str(exc))
    if rendered.last_source_step >= cut:
        return Skip(SKIP_LEAK)
    rejected = original_turn(steps, cut, taken_ids=call_ids(rendered.messages))
    if not rejected.get("tool_calls") and not (rejected.get("content") or "").strip():
        return Skip(SKIP_EMPTY_ORIGINAL)
    chosen = corrected_turn(
        correction, taken_ids=call_ids(rendered.messages) | call_ids([rejected])
    )
    if _same_action(chosen, rejected):
        return Skip(SKIP_SAME_ACTION)
    metadata = _base_metadata(item)
    metadata.update(
        {
            "agent": agent,
            "step": cut,
            **_decisive_metadata(item),
            "correction": {
                "source": correction.source,
                "author": correction.author or None,
                "source_rollout": correction.source_rollout or None,
                "id": correction.correction_id,
            },
        }
    )
    return Recovery(rendered.messages, chosen, rejected, metadata)


def _action_key(message: dict[str, Any]) -> tuple[Any, ...]:
    calls = tuple(
        (c["function"]["name"], json.dumps(json.loads(c["function"]["arguments"]), sort_keys=True))
        for c in message.get("tool_calls") or ()
    )
    return ((message.get("content") or "").strip(), calls)


def _same_action(chosen: dict[str, Any], rejected: dict[str, Any]) -> bool:
    try:
        return _action_key(chosen) == _action_key(rejected)
    except (ValueError, KeyError, TypeError):
        return False


def sft_example(item: ExportRollout, parts: Recovery | Skip | None = None) -> dict[str, Any] | Skip:
    parts = recovery(item) if parts is None else parts
    if isinstance(parts, Skip):
        return parts
    return {"messages": [*parts.prefix, parts.chosen], "metadata": parts.metadata}


def _unweighted(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in m.items() if k != "weight"} for m in messages]


def preference_example(
    item: ExportRollout, parts: Recovery | Skip | None = None
) -> dict[str, Any] | Skip:
    parts = recovery(item) if parts is None else parts
    if isinstance(parts, Skip):
        return parts
    return {
        "prompt": _unweighted(parts.prefix),
        "chosen": [parts.chosen],
        "rejected": [parts.rejected],
        "metadata": parts.metadata,
    }


def _step_json(step: StepRecord) -> dict[str, Any]:
    return {
        "index": step.index,
        "agent": step.agent,
        "role": step.role,
        "kind": step.kind,
        "content": step.content,
        "tool_name": step.tool_name or None,
        "tool_args": step.tool_args,
        "is_error": step.is_error,
    }


def transcript(record: TrajectoryRecord, steps: Sequence[StepRecord]) -> str:
    """The rollout as plain text for a diagnosis model's input."""
    lines = [f"Task: {record.task_text}"] if record.task_text else []
    for step in steps:
        who = f"{step.agent or step.role} ({step.kind})"
        body = step.content
        if step.tool_name:
            args = json.dumps(step.tool_args, ensure_ascii=False, sort_keys=True)
            body = f"{body}\n{step.tool_name}({args})" if step.kind == "tool_call" else body
        lines.append(f"[step {step.index}] {who}: {body}")
    return "\n\n".join(lines)


def _misbehaviour_near(
    occurrences: Sequence[Occurrence], step: int, lo: int | None, hi: int | None
) -> Occurrence | None:
    at_step = [o for o in occurrences if o.step == step]
    if at_step:
        return at_step[0]
    if lo is None or hi is None:
        return None
    inside = [o for o in occurrences if lo <= o.step <= hi]
    return min(inside, key=lambda o: (abs(o.step - step), o.step)) if inside else None


def _misbehaviour_json(occurrence: Occurrence | None) -> dict[str, Any] | None:
    """The misbehaviour and the step it was seen at, which need not be the record's step
    (one elsewhere in the prediction set when that step is in none)."""
    if occurrence is None:
        return None
    return {
        "id": occurrence.misbehaviour_id,
        "name": occurrence.name,
        "category": occurrence.category or None,
        "step": occurrence.step,
    }


def diagnosis_example(item: ExportRollout, *, window: int = 0) -> dict[str, Any] | Skip:
    """The rollout (whole, or ``window`` steps either side of the set) and its diagnosis."""
    decisive, record = item.decisive, item.record
    steps = record.steps
    if decisive.label_step is not None:
        step, source = decisive.label_step, "label"
    elif decisive.point_step is not None:
        step, source = decisive.point_step, "attribution"
    else:
        return Skip(SKIP_NO_DECISIVE)
    if not 0 <= step < len(steps):
        return Skip(SKIP_BAD_STEP)
    # The agent of the step the record names (the rollout's agent of most probability can
    # be another one: a trial's record paired a writer's call with "researcher").
    agent = (decisive.label_agent if source == "label" else "") or steps[step].agent
    first, last = (decisive.lo, decisive.hi) if decisive.lo is not None else (step, step)
    assert first is not None and last is not None
    start, stop = 0, len(steps)
    if window > 0:
        start = max(0, min(first, step) - window)
        stop = min(len(steps), max(last, step) + window + 1)
    shown = steps[start:stop]
    output = {
        "decisive_set": None if decisive.lo is None else {"lo": decisive.lo, "hi": decisive.hi},
        "step": step,
        "agent": agent,
        "misbehaviour": _misbehaviour_json(
            _misbehaviour_near(item.occurrences, step, decisive.lo, decisive.hi)
        ),
        "reason": decisive.label_reason if source == "label" else "",
        "source": source,
    }
    metadata = _base_metadata(item)
    metadata.update(_decisive_metadata(item))
    return {
        "input": {
            "task": record.task_text,
            "environment": record.environment,
            "window": {"start": start, "stop": stop, "total_steps": len(steps)},
            "steps": [_step_json(s) for s in shown],
        },
        "output": output,
        "messages": [
            {"role": "system", "content": DIAGNOSIS_INSTRUCTION},
            {"role": "user", "content": transcript(record, shown)},
            {
                "role": "assistant",
                "content": json.dumps(output, ensure_ascii=False, sort_keys=True),
            },
        ],
        "metadata": metadata,
    }


def success_check(record: TrajectoryRecord) -> dict[str, Any] | None:
    """How the task's success is judged, when the source says so.

    >>> success_check(TrajectoryRecord(external_id="x", metadata={"ground_truth": "42"}))
    {'kind': 'expected_answer', 'answer': '42'}
    """
    metadata = record.metadata or {}
    info = metadata.get("info")
    task = info.get("task") if isinstance(info, dict) else None
    if isinstance(task, dict) and "actions" in task:
        return {
            "kind": "tau_bench_actions",
            "actions": task.get("actions") or [],
            "outputs": task.get("outputs") or [],
        }
    answer = metadata.get("ground_truth")
    if answer not in (None, ""):
        return {"kind": "expected_answer", "answer": str(answer)}
    return None


def _action_at_or_before(steps: Sequence[StepRecord], position: int) -> int | None:
    # A misbehaviour seen on a tool result or a user turn was caused by the agent's last
    # action before it: the start state ends before that action.
    for candidate in range(position, -1, -1):
        if is_agent_action(steps[candidate]):
            return candidate
    return None


def start_state_examples(
    item: ExportRollout, misbehaviours: Sequence[int] = ()
) -> Iterator[dict[str, Any] | Skip]:
    """A start state where each chosen misbehaviour (all when none chosen) first shows.

    Only the first occurrence of a misbehaviour in a rollout gives a start state: after
    it the rollout is already off track, and every later prefix would repeat the same
    context (with the wide prediction sets of a young project, nearly every step of a
    failed rollout is a "wrong step", which would make one start state per step).
    """
    wanted = set(misbehaviours)
    steps = item.record.steps
    seen: set[int] = set()
    check = success_check(item.record)
    for occurrence in sorted(item.occurrences, key=lambda o: (o.step, o.misbehaviour_id)):
        if wanted and occurrence.misbehaviour_id not in wanted:
            continue
        if occurrence.misbehaviour_id in seen:
            continue
        if not 0 <= occurrence.step < len(steps):
            yield Skip(SKIP_BAD_STEP)
            continue
        action = _action_at_or_before(steps, occurrence.step)
        if action is None:
            yield Skip(SKIP_NO_ACTION)
            continue
        seen.add(occurrence.misbehaviour_id)
        cut = turn_bounds(steps, action)[0]
        agent = acting_agent(steps[cut])
        try:
            rendered = render_prefix(
                steps, cut=cut, trained_agent=agent, task_text=item.record.task_text
            )
        except RenderError as exc:
            yield Skip(str(exc))
            continue
        if rendered.last_source_step >= cut:
            yield Skip(SKIP_LEAK)
            continue
        metadata = _base_metadata(item)
        metadata.update({"agent": agent, "step": cut, **_decisive_metadata(item)})
        yield {
            "messages": rendered.messages,
            "avoid": {
                "misbehaviour": {
                    "id": occurrence.misbehaviour_id,
                    "name": occurrence.name,
                    "category": occurrence.category or None,
                    "description": occurrence.description or None,
                },
                "step": occurrence.step,
                "action": original_turn(steps, cut, taken_ids=call_ids(rendered.messages)),
            },
            "success_check": check,
            "metadata": metadata,
        }
