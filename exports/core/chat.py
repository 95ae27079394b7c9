"""Rollout steps to OpenAI chat messages, as trainers read them.

A prefix is written from the point of view of the agent being trained (the one acting at
the cut): only what that agent wrote is ``assistant``. Its tool calls are assistant
messages with ``tool_calls`` and each result a ``tool`` message with the call's id; users
speak as ``user``; other agents are context it did not write, so their messages and
their tool calls are ``user`` messages with their ``name`` (a call written as
``tool(arguments)``), and their tool results ``user`` messages named after the tool.
Prefix assistant messages get ``weight: 0`` so only the target turn is learned.

System prompts: in a multi-agent rollout each agent's model call has its own, and only
the trained agent's instructions are its ``system`` message (see :func:`prompt_owners`);
another agent's system prompt is never shown, since the trained agent never saw it.

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
from ingest.core.vocabulary import USER_ROLES, acting_agent, base_agent, is_agent_action

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

    The tool calls of one assistant message share ``metadata["message_index"]``. A span
    format (OpenTelemetry, Langfuse, OpenInference) writes a model call's words as a
    message step that announces its calls (``metadata["tool_calls"]``) and each call as a
    step of its own: the words and the calls right after them that they announce are one
    turn (a correction at the call replaces the reasoning that led to it too). Any other
    step is a turn by itself.
    """
    step = steps[position]
    if step.kind != StepKind.TOOL_CALL:
        return position, _announced_end(steps, position)
    opener = position
    while opener > 0 and steps[opener - 1].kind == StepKind.TOOL_CALL:
        opener -= 1
    if opener > 0 and _announced(steps[opener - 1], step):
        return opener - 1, _announced_end(steps, opener - 1)
    group = step.metadata.get("message_index") if step.metadata else None
    if group is None:
        return position, position + 1
    first, stop = position, position + 1
    while first > 0 and _same_turn(steps[first - 1], group):
        first -= 1
    while stop < len(steps) and _same_turn(steps[stop], group):
        stop += 1
    return first, stop


def _announced_end(steps: Sequence[StepRecord], message: int) -> int:
    """The end of the calls right after ``steps[message]`` that it announced."""
    stop = message + 1
    while stop < len(steps) and _announced(steps[message], steps[stop]):
        stop += 1
    return stop


def _announced(message: StepRecord, call: StepRecord) -> bool:
    """Whether ``call`` is a tool call the agent message ``message`` announced."""
    if message.kind != StepKind.MESSAGE or call.kind != StepKind.TOOL_CALL:
        return False
    planned = (message.metadata or {}).get("tool_calls") or ()
    if not call.tool_call_id or not isinstance(planned, list):
        return False
    ids = {c.get("id") for c in planned if isinstance(c, dict)}
    return call.tool_call_id in ids and acting_agent(message) == acting_agent(call)


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


def prompt_owners(steps: Sequence[StepRecord], *, cut: int, trained_agent: str) -> dict[int, str]:
    """The agent each system prompt before ``cut`` instructs, by step position.

    A system step that names an agent acting in the rollout belongs to it; any other
    belongs to the agent whose action comes next (the model call it was sent with: an
    OpenTelemetry trace records each call's system prompt just before the call's output).
    The cut is the trained agent's action, so the last prompts before it are its own.

    >>> from ingest.core.records import StepRecord as S
    >>> steps = [S(0, "system", "system", "Plan it."), S(1, "user", content="Fly me."),
    ...          S(2, "assistant", content="1. search", agent="planner"),
    ...          S(3, "system", "system", "Run the plan."),
    ...          S(4, "assistant", content="searching", agent="executor")]
    >>> prompt_owners(steps, cut=4, trained_agent="executor")
    {3: 'executor', 0: 'planner'}
    """
    actors = {acting_agent(step) for step in steps if is_agent_action(step)}
    owners: dict[int, str] = {}
    next_actor = trained_agent
    for position in range(min(cut, len(steps)) - 1, -1, -1):
        step = steps[position]
        if is_agent_action(step):
            next_actor = acting_agent(step)
        elif step.kind == StepKind.SYSTEM:
            named = base_agent(step.agent)
            owners[position] = named if named in actors else next_actor
        # Other steps (user turns, tool results) sit between a prompt and its call.
    return owners


def _opening_prompts(
    steps: Sequence[StepRecord], cut: int, trained_agent: str, owners: dict[int, str]
) -> list[int]:
    """The trained agent's first system prompts, when other agents acted before them.

    In the trained agent's own model call its system prompt came first, whatever other
    agents said earlier in the rollout, so it opens the chat. With no other agent acting
    before it (every single-agent rollout) nothing moves.
    """
    others_acted = False
    for position in range(min(cut, len(steps))):
        step = steps[position]
        if is_agent_action(step):
            if acting_agent(step) == trained_agent:
                return []
            others_acted = True
        elif owners.get(position) == trained_agent and step.content:
            if not others_acted:
                return []
            opening = [position]
            for later in range(position + 1, min(cut, len(steps))):
                if steps[later].kind != StepKind.SYSTEM:
                    break
                if owners.get(later) == trained_agent and steps[later].content:
                    opening.append(later)
            return opening
    return []


def _call_text(group: Sequence[StepRecord]) -> str:
    """Another agent's tool calls as text: what it said, then ``tool(arguments)`` each."""
    calls = [
        f"{s.tool_name}({arguments_json(s.tool_args)})"
        for s in group
        if s.kind == StepKind.TOOL_CALL
    ]
    return "\n".join(([group[0].content] if group[0].content else []) + calls)


def render_prefix(
    steps: Sequence[StepRecord], *, cut: int, trained_agent: str, task_text: str = ""
) -> Rendered:
    """The steps strictly before ``cut`` as chat messages; raises :class:`RenderError`.

    Written from ``trained_agent``'s point of view (see the module docstring): other
    agents' system prompts are left out, and its own first one opens the chat. When the
    prefix holds no user message, the task text opens it as one (marked with source -1),
    so the trainee always sees what it was asked.
    """
    out = Rendered()
    pending: list[tuple[str, str]] = []  # (id in the log, id written) of unanswered calls
    names: dict[str, str] = {}
    taken: set[str] = set()
    owners = prompt_owners(steps, cut=cut, trained_agent=trained_agent)
    opening = _opening_prompts(steps, cut, trained_agent, owners)
    for position in opening:
        _append_plain(out, steps[position], role="system")
    left_out = set(opening) | {p for p, owner in owners.items() if owner != trained_agent}
    position = 0
    while position < cut:
        step = steps[position]
        if position in left_out:
            position += 1
            continue
        first, stop = turn_bounds(steps, position)
        stop = min(stop, cut)
        group = list(steps[first:stop])
        calls = [s for s in group if s.kind == StepKind.TOOL_CALL]
        if calls:
            if pending:
                raise RenderError(MSG_UNANSWERED_CALL)
            if acting_agent(step) != trained_agent:
                # Not the trainee's call: context, and its results answer no call of ours.
                context: dict[str, Any] = {"role": "user", "content": _call_text(group)}
                if message_name(step.agent):
                    context["name"] = message_name(step.agent)
                out.messages.append(context)
                out.sources.append([s.index for s in group])
                position = stop
                continue
            written = [(call_id(s), _unique_id(s, taken)) for s in calls]
            message: dict[str, Any] = {
                "role": "assistant",
                "content": group[0].content or None,
                "tool_calls": [_tool_call(s, new) for s, (_, new) in zip(calls, written)],
                "weight": 0,
            }
            pending = written
            names.update({new: s.tool_name for s, (_, new) in zip(calls, written)})
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
    first, stop = turn_bounds(steps, cut)
    group = steps[first:stop]
    calls = [s for s in group if s.kind == StepKind.TOOL_CALL]
    if calls:
        return {
            "role": "assistant",
            "content": group[0].content or None,
            "tool_calls": [_tool_call(s, _unique_id(s, taken)) for s in calls],
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
