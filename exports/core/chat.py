"""Rollout steps to OpenAI chat messages, as trainers read them.

The agent being trained (the one acting at the cut) speaks as ``assistant``; users and
other agents speak as ``user`` (other agents with their ``name``); tool calls are
assistant messages with ``tool_calls`` and each result a ``tool`` message with the call's
id. Prefix assistant messages get ``weight: 0`` so only the target turn is learned.

Example:
    >>> from ingest.core.records import StepRecord
    >>> steps = [StepRecord(index=0, role="system", kind="system", content="Be kind."),
    ...          StepRecord(index=1, role="user", content="hi", agent="user"),
    ...          StepRecord(index=2, role="assistant", content="hello", agent="assistant")]
    >>> [m["role"] for m in render_prefix(steps, cut=2, trained_agent="assistant").messages]
    ['system', 'user']
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from exports.core.inputs import CorrectedTurn
from ingest.core.records import StepKind, StepRecord
from ingest.core.vocabulary import USER_ROLES, acting_agent, base_agent

MSG_UNANSWERED_CALL = "the prefix has a tool call with no tool result before the next message"
MSG_EMPTY_PREFIX = "the prefix is empty"
MSG_NOT_AN_ACTION = "the step is not an agent action"

_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]+")


class RenderError(ValueError):
    """A prefix that cannot be written as valid chat messages; the reason is the message."""


def message_name(agent: str) -> str:
    """A ``name`` field the chat format accepts (letters, digits, _ and -; 64 at most).

    >>> message_name("Web Surfer (thought)")
    'Web_Surfer'
    """
    return _NAME_CHARS.sub("_", base_agent(agent)).strip("_")[:64]


def turn_bounds(steps: Sequence[StepRecord], position: int) -> tuple[int, int]:
    """[first, stop) of the assistant turn holding ``steps[position]``.

    The tool calls of one assistant message share ``metadata["message_index"]``; any
    other step is a turn by itself.
    """
    step = steps[position]
    if step.kind != StepKind.TOOL_CALL:
        return position, position + 1
    group = step.metadata.get("message_index") if step.metadata else None
    if group is None:
        return position, position + 1
    first, stop = position, position + 1
    while first > 0 and _same_turn(steps[first - 1], group):
        first -= 1
    while stop < len(steps) and _same_turn(steps[stop], group):
        stop += 1
    return first, stop


def _same_turn(step: StepRecord, group: Any) -> bool:
    return step.kind == StepKind.TOOL_CALL and (step.metadata or {}).get("message_index") == group


def arguments_json(arguments: Any) -> str:
    """Tool arguments as the JSON string the chat format wants."""
    if isinstance(arguments, str):
        try:
            json.loads(arguments)
        except ValueError:
            return json.dumps(arguments, ensure_ascii=False)
        return arguments
    return json.dumps({} if arguments is None else arguments, ensure_ascii=False, sort_keys=True)


def call_id(step: StepRecord) -> str:
    # Some formats carry no call ids; the step index makes a stable, unique one.
    return step.tool_call_id or f"call_step_{step.index}"


def _unique_id(step: StepRecord, taken: set[str]) -> str:
    # Some logs reuse a call id within one rollout; the chat format needs them unique.
    new_id = call_id(step)
    if new_id in taken:
        new_id = f"{new_id}_step_{step.index}"
    taken.add(new_id)
    return new_id


def _tool_call(step: StepRecord, new_id: str) -> dict[str, Any]:
    return {
        "id": new_id,
        "type": "function",
        "function": {"name": step.tool_name, "arguments": arguments_json(step.tool_args)},
    }


@dataclass
class Rendered:
    """Chat messages and, for each, the indices of the steps it came from."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    sources: list[list[int]] = field(default_factory=list)

    @property
    def last_source_step(self) -> int:
        return max((i for group in self.sources for i in group), default=-1)


def render_prefix(
    steps: Sequence[StepRecord], *, cut: int, trained_agent: str, task_text: str = ""
) -> Rendered:
    """The steps strictly before ``cut`` as chat messages; raises :class:`RenderError`.

    When the prefix holds no user message, the task text opens it as one (marked with
    source -1), so the trainee always sees what it was asked.
    """
    out = Rendered()
    pending: list[tuple[str, str]] = []  # (id in the log, id written) of unanswered calls
    names: dict[str, str] = {}
    taken: set[str] = set()
    position = 0
    while position < cut:
        step = steps[position]
        if step.kind == StepKind.TOOL_CALL:
            first, stop = turn_bounds(steps, position)
            stop = min(stop, cut)
            if pending:
                raise RenderError(MSG_UNANSWERED_CALL)
            group = list(steps[first:stop])
            written = [(call_id(s), _unique_id(s, taken)) for s in group]
            message: dict[str, Any] = {
                "role": "assistant",
                "content": group[0].content or None,
                "tool_calls": [_tool_call(s, new) for s, (_, new) in zip(group, written)],
                "weight": 0,
            }
            if acting_agent(step) != trained_agent and message_name(step.agent):
                message["name"] = message_name(step.agent)
            pending = written
            names.update({new: s.tool_name for s, (_, new) in zip(group, written)})
            out.messages.append(message)
            out.sources.append([s.index for s in group])
            position = stop
            continue
        if step.kind == StepKind.TOOL_RESULT:
            answered = _answered_call(step, pending, names)
            if answered is not None:
                pending.remove(answered)
                out.messages.append(
                    {"role": "tool", "tool_call_id": answered[1], "content": step.content}
                )
                out.sources.append([step.index])
            elif pending:
                raise RenderError(MSG_UNANSWERED_CALL)
            else:
                # A result no call in the prefix asked for: the environment spoke, as a user.
                _append_plain(out, step, role="user", name=message_name(step.tool_name) or "tool")
            position += 1
            continue
        if pending:
            raise RenderError(MSG_UNANSWERED_CALL)
        if not step.content:
            position += 1
            continue
        if step.kind == StepKind.SYSTEM and all(m["role"] == "system" for m in out.messages):
            _append_plain(out, step, role="system")
        elif step.kind == StepKind.SYSTEM:
            _append_plain(out, step, role="user", name="system")
        elif (step.role or "").lower() in USER_ROLES:
            _append_plain(out, step, role="user")
        elif acting_agent(step) == trained_agent:
            _append_plain(out, step, role="assistant")
            out.messages[-1]["weight"] = 0
        else:
            _append_plain(out, step, role="user", name=message_name(step.agent))
        position += 1
    if pending:
        raise RenderError(MSG_UNANSWERED_CALL)
    if task_text and not any(m["role"] == "user" for m in out.messages):
        at = sum(1 for m in out.messages if m["role"] == "system" and "name" not in m)
        out.messages.insert(at, {"role": "user", "content": task_text})
        out.sources.insert(at, [-1])
    if not out.messages:
        raise RenderError(MSG_EMPTY_PREFIX)
    return out


def _append_plain(out: Rendered, step: StepRecord, *, role: str, name: str = "") -> None:
    message: dict[str, Any] = {"role": role, "content": step.content}
    if name:
        message["name"] = name
    out.messages.append(message)
    out.sources.append([step.index])


def _answered_call(
    step: StepRecord, pending: list[tuple[str, str]], names: dict[str, str]
) -> tuple[str, str] | None:
    if not pending:
        return None
    if step.tool_call_id:
        return next((pair for pair in pending if pair[0] == step.tool_call_id), None)
    # No id on the result: it answers the oldest open call to the same tool, else the oldest.
    for pair in pending:
        if names.get(pair[1]) == step.tool_name:
            return pair
    return pending[0]


def original_turn(
    steps: Sequence[StepRecord], cut: int, *, taken_ids: set[str] | None = None
) -> dict[str, Any]:
    """The assistant turn the rollout actually took at ``cut`` (the rejected answer)."""
    step = steps[cut]
    taken = set() if taken_ids is None else taken_ids
    if step.kind == StepKind.TOOL_CALL:
        first, stop = turn_bounds(steps, cut)
        group = steps[first:stop]
        return {
            "role": "assistant",
            "content": group[0].content or None,
            "tool_calls": [_tool_call(s, _unique_id(s, taken)) for s in group],
        }
    return {"role": "assistant", "content": step.content}


def corrected_turn(correction: CorrectedTurn, *, taken_ids: set[str]) -> dict[str, Any]:
    """The correction as an assistant message; call ids are made unique in the example."""
    message: dict[str, Any] = {"role": "assistant", "content": correction.content or None}
    if correction.tool_calls:
        calls = []
        for position, call in enumerate(correction.tool_calls):
            new_id = call.id or f"call_fix_{correction.step}_{position}"
            while new_id in taken_ids:
                new_id += "_fix"
            taken_ids.add(new_id)
            calls.append(
                {
                    "id": new_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": arguments_json(call.arguments)},
                }
            )
        message["tool_calls"] = calls
    elif message["content"] is None:
        message["content"] = ""
    return message


def call_ids(messages: Sequence[dict[str, Any]]) -> set[str]:
    return {
        call["id"]
        for message in messages
        for call in message.get("tool_calls") or ()
        if isinstance(call, dict) and "id" in call
    }
