"""SWE-agent ``.traj`` files: one run per file.

A file is ``{environment, trajectory: [...], history: [...], info, replay_config?}``.
``history`` is the whole conversation (``role``, ``content``, ``agent``, ``thought``,
``action``, ``tool_calls``, ``tool_call_ids``, ``message_type``); ``trajectory`` is one
entry per turn (``thought``, ``action``, ``observation``, ``response``, ``state``,
``execution_time``). Steps come from ``history`` when it is there (it has the system
prompt, the issue and every observation), else from ``trajectory``:

- system messages: ``system`` steps; user messages before the first action: ``message``
  steps (the first one that is not a demonstration, ``is_demo``, is the task text: a run
  with a demonstration shows it to the model before the issue);
- assistant messages with an ``action``: ``tool_call`` steps, content = the thought, tool
  name = the function-call name or the action's first word, arguments = the function-call
  arguments or ``{"command": action}``; without an action: ``message`` steps;
- ``tool`` messages, and user messages after an action: ``tool_result`` steps, errors
  when they start like one or their last line (above the open-file, directory and prompt
  lines SWE-agent appends) reports a failure: a .traj has no exit code.

A field of the wrong type (``content`` an object, ``tool_call_ids`` not a list of ids,
arguments that are neither JSON text nor an object, ``info.resolved`` not true/false...)
refuses the file, naming it (``history[3].tool_call_ids``).

Each ``trajectory`` entry is matched, in order, to the action step with the same action;
its ``state`` (a dict, or JSON/Python-literal text in old files), ``execution_time`` and
``response`` go to that step's metadata. When the history has no observation after a
matched action (demonstrations end on ``submit``), the entry's ``observation`` becomes the
tool result. Entries that match no action go to ``metadata.unmatched_trajectory``. The
per-turn copies of the whole conversation (``messages``, ``query`` or a list ``message``)
are not kept: they repeat ``history``.

Outcome from ``info``: ``resolved`` true/false when present (a SWE-bench evaluation);
otherwise an ``exit_status`` of plain ``submitted`` is *unknown* (a patch was submitted,
the file does not say if it fixes the issue), a status naming an early exit, an error or
an autosubmission after a limit (``exit_cost``, ``exit_context``, ``exit_error``,
``submitted (exit_cost)``, ``early_exit``...) is a failure, no status is unknown.
The file is one JSON document, refused above ``limits.max_document_bytes``.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import PurePath
from typing import IO, Any

from ingest.core.chat import closes_with_error, looks_like_error, parse_arguments
from ingest.core.errors import TraceParseError
from ingest.core.jsonio import load_document
from ingest.core.records import Outcome, StepKind, StepRecord, TrajectoryRecord
from ingest.core.validate import (
    MSG_NOT_LIST,
    MSG_NOT_STRING,
    optional_bool,
    optional_list,
    optional_object,
    optional_str,
    require_object,
    require_str,
    text_of,
)
from ingest.core.vocabulary import is_mutating_tool
from ingest.parsers.base import DEFAULT_LIMITS, ParseLimits

FORMAT = "swe_agent"
LABEL = "SWE-agent .traj"
EXTENSIONS = (".traj",)
STEPS_FIELD = "history"

MSG_NO_STEPS = "A .traj file needs a history or a trajectory list."
MSG_BAD_STATUS = "Expected exit_status as text."
MSG_BAD_CONTENT = "Expected text, a list of content parts, or null."
MSG_BAD_ARGUMENTS = "Expected the tool call's arguments as JSON text or an object."
NO_CALL: tuple[str, Any, str] = ("", None, "")  # a turn without a function call
SNAPSHOT_KEYS = ("messages", "query", "message")
FAILURE_MARKERS = ("exit_", "early_exit", "error", "autosubmi", "format", "cost", "context")
_FIRST_WORD = re.compile(r"\S+")
NOT_MODELS = {"replay", "human", "human_thought", "demonstration", "demonstrations"}
HISTORY_KEYS = {"role", "content", "agent", "thought", "action", "tool_calls", "tool_call_ids"}
OBSERVATION_TAIL = 16_384  # where the last line of an observation is looked for
# What SWE-agent appends to every observation: the open file, the directory, the prompt.
_PROMPT_LINE = re.compile(
    r"^(?:\((?:Open file|Current directory|Interactive session): .*\)|bash-\$)$"
)


def sniff(head: bytes, filename: str) -> bool:
    start = head.lstrip()[:1]
    if start != b"{":
        return False
    if filename.lower().endswith(".traj"):
        return True
    return re.search(rb'"trajectory"\s*:\s*\[', head) is not None and (
        b'"observation"' in head or b'"exit_status"' in head
    )


def _literal(value: Any) -> Any:
    """JSON or Python-literal text decoded when it parses, else kept as it is."""
    if not isinstance(value, str) or len(value) > 1_000_000:
        return value
    for decode in (json.loads, ast.literal_eval):
        try:
            return decode(value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return value


def _text(entry: dict[str, Any], key: str, where: str) -> str:
    """A message's text: a string, a list of content parts (newer files), or null."""
    value = entry.get(key)
    if value is not None and not isinstance(value, (str, list)):
        raise TraceParseError(MSG_BAD_CONTENT, record="document", field=f"{where}.{key}")
    return text_of(value)


def _listed(entry: dict[str, Any], key: str, where: str) -> list[Any]:
    """A list field, or its JSON/Python-literal text as old files may hold it; [] if absent."""
    value = entry.get(key)
    if value is None:
        return []
    listed = _literal(value)
    if not isinstance(listed, list):
        raise TraceParseError(MSG_NOT_LIST, record="document", field=f"{where}.{key}")
    return listed


def _call_ids(entry: dict[str, Any], where: str) -> list[str]:
    ids = _listed(entry, "tool_call_ids", where)
    for position, call_id in enumerate(ids):
        if not isinstance(call_id, str):
            field = f"{where}.tool_call_ids[{position}]"
            raise TraceParseError(MSG_NOT_STRING, record="document", field=field)
    return ids


def _call(entry: dict[str, Any], where: str) -> tuple[str, Any, str]:
    """The first function call of a history message (name, arguments, id); every call is
    checked. SWE-agent sends one call per turn."""
    found: list[tuple[str, Any, str]] = []
    for position, raw in enumerate(_listed(entry, "tool_calls", where)):
        call_where = f"{where}.tool_calls[{position}]"
        call = require_object(raw, record="document", field=call_where)
        function = require_object(
            call.get("function"), record="document", field=call_where + ".function"
        )
        prefix = call_where + ".function."
        name = optional_str(function, "name", record="document", prefix=prefix)
        arguments = function.get("arguments")
        if arguments is not None and not isinstance(arguments, (str, dict)):
            raise TraceParseError(MSG_BAD_ARGUMENTS, record="document", field=prefix + "arguments")
        call_id = optional_str(call, "id", record="document", prefix=call_where + ".")
        found.append((name, parse_arguments(arguments), call_id))
    return found[0] if found else NO_CALL


def _action_step(
    action: str, thought: str, call: tuple[str, Any, str], agent: str, meta: dict[str, Any]
) -> StepRecord:
    name, args, call_id = call
    if not name:
        match = _FIRST_WORD.search(action)
        name = match.group(0) if match else ""
    return StepRecord(
        index=0,
        role="assistant",
        kind=StepKind.TOOL_CALL,
        content=thought,
        agent=agent or "assistant",
        tool_name=name,
        tool_args=args if args is not None else {"command": action},
        tool_call_id=call_id,
        is_mutating=is_mutating_tool(name),
        metadata=dict(meta, action=action),
    )


def _result_step(
    content: str, call_id: str, meta: dict[str, Any], steps: list[StepRecord]
) -> StepRecord:
    """The observation answering a call: named after the call with its id (the latest
    such, looked for backwards), else after the call right before it (the page says
    "result of <tool>" and pairs them)."""
    by_id = (
        next(
            (
                s.tool_name
                for s in reversed(steps)
                if s.kind == StepKind.TOOL_CALL and s.tool_call_id == call_id
            ),
            "",
        )
        if call_id
        else ""
    )
    before = steps[-1].tool_name if steps and steps[-1].kind == StepKind.TOOL_CALL else ""
    return StepRecord(
        index=0,
        role="tool",
        kind=StepKind.TOOL_RESULT,
        content=content,
        agent="tool",
        tool_name=by_id or before,
        tool_call_id=call_id,
        is_error=_reports_error(content),
        metadata=meta,
    )


def _reports_error(observation: str) -> bool:
    """Whether an observation reports a failure, as the readers without an exit code tell
    it: it starts like an error, or its last line (above the open-file, directory and
    prompt lines SWE-agent appends) says the command failed."""
    if looks_like_error(observation):
        return True
    lines = observation[-OBSERVATION_TAIL:].rstrip().splitlines()
    while lines and (not lines[-1].strip() or _PROMPT_LINE.match(lines[-1].strip())):
        lines.pop()
    return bool(lines) and closes_with_error(lines[-1])


def _turn_meta(entry: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for key, value in entry.items():
        if key in ("action", "observation", "thought"):
            continue
        if key in SNAPSHOT_KEYS and not isinstance(value, str):
            meta[f"{key}_omitted"] = True
            continue
        meta[key] = _literal(value) if key == "state" else value
    return meta


def _is_demo(step: StepRecord) -> bool:
    """Whether a history message is the demonstration shown before the task (``is_demo``)."""
    flag = (step.metadata.get("extra") or {}).get("is_demo")
    return flag is True or (isinstance(flag, str) and flag.strip().lower() == "true")


def _history_steps(
    history: list[Any], turns: list[dict[str, Any]]
) -> tuple[list[StepRecord], list[Any]]:
    steps: list[StepRecord] = []
    skipped: list[dict[str, Any]] = []
    turn_index = 0
    acted = False
    pending_turn: dict[str, Any] | None = None
    for position, raw in enumerate(history):
        where = f"history[{position}]"
        entry = require_object(raw, record="document", field=where)
        prefix = where + "."
        role = require_str(entry, "role", record="document", prefix=prefix)
        content = _text(entry, "content", where)
        thought = _text(entry, "thought", where)
        agent = optional_str(entry, "agent", record="document", prefix=prefix)
        action = optional_str(entry, "action", record="document", prefix=prefix)
        call = _call(entry, where)
        call_ids = _call_ids(entry, where)
        meta: dict[str, Any] = {"history_index": position}
        extra = {k: v for k, v in entry.items() if k not in HISTORY_KEYS}
        if extra:
            meta["extra"] = extra
        is_observation = role == "tool" or (role == "user" and acted)
        if pending_turn is not None and not is_observation:
            steps.append(
                _result_step(
                    text_of(pending_turn.get("observation")), "", {"from": "trajectory"}, steps
                )
            )
        if not is_observation and pending_turn is not None:
            pending_turn = None
        if role == "assistant" and action.strip():
            acted = True
            if isinstance(entry.get("tool_calls"), str):
                meta["tool_calls_text"] = entry["tool_calls"]
            step = _action_step(action, thought or content, call, agent, meta)
            if content and content != step.content:
                step.metadata["message"] = content
            pending_turn = None
            match = _find_turn(turns, turn_index, action)
            if match is not None:
                skipped.extend(turns[turn_index:match])
                step.metadata["turn"] = _turn_meta(turns[match])
                pending_turn = turns[match] if turns[match].get("observation") else None
                turn_index = match + 1
            steps.append(step)
        elif is_observation:
            steps.append(_result_step(content, call_ids[0] if call_ids else "", meta, steps))
            pending_turn = None
        else:
            kind = StepKind.SYSTEM if role == "system" else StepKind.MESSAGE
            speaker = agent if role == "assistant" and agent else role
            steps.append(
                StepRecord(
                    index=0, role=role, kind=kind, content=content, agent=speaker, metadata=meta
                )
            )
    if pending_turn is not None:
        steps.append(
            _result_step(
                text_of(pending_turn.get("observation")), "", {"from": "trajectory"}, steps
            )
        )
    # Turns after the last action of the history (the final submit, often) are steps too,
    # acts of the agent that acted last (they carry no agent of their own).
    actor = next((s.agent for s in reversed(steps) if s.kind == StepKind.TOOL_CALL), "")
    steps.extend(_trajectory_steps(turns[turn_index:], actor))
    return steps, [_turn_meta(turn) | {"action": turn.get("action")} for turn in skipped]


def _turn(raw: Any, position: int) -> dict[str, Any]:
    """A ``trajectory`` entry, its texts checked (the rest is kept as it is)."""
    where = f"trajectory[{position}]"
    entry = require_object(raw, record="document", field=where)
    optional_str(entry, "action", record="document", prefix=where + ".")
    for key in ("thought", "observation"):
        _text(entry, key, where)
    return entry


def _find_turn(turns: list[dict[str, Any]], start: int, action: str) -> int | None:
    for position in range(start, len(turns)):
        if str(turns[position].get("action", "")).strip() == action.strip():
            return position
    return None


def _trajectory_steps(turns: list[dict[str, Any]], agent: str = "") -> list[StepRecord]:
    steps: list[StepRecord] = []
    for turn in turns:
        action = str(turn.get("action") or "")
        steps.append(
            _action_step(
                action, text_of(turn.get("thought")), NO_CALL, agent, {"turn": _turn_meta(turn)}
            )
        )
        steps.append(
            _result_step(text_of(turn.get("observation")), "", {"from": "trajectory"}, steps)
        )
    return steps


def _outcome(info: dict[str, Any]) -> str:
    resolved = optional_bool(info, "resolved", record="document", prefix="info.")
    if resolved is not None:
        return Outcome.SUCCESS if resolved else Outcome.FAILURE
    status = optional_str(info, "exit_status", record="document", prefix="info.").strip().lower()
    if not status or status == "submitted":
        return Outcome.UNKNOWN
    if any(marker in status for marker in FAILURE_MARKERS):
        return Outcome.FAILURE
    return Outcome.UNKNOWN


def _model(obj: dict[str, Any], filename: str) -> str:
    replay = _literal(obj.get("replay_config"))
    if isinstance(replay, dict):
        model = (
            replay.get("agent", {}).get("model") if isinstance(replay.get("agent"), dict) else None
        )
        if isinstance(model, dict) and isinstance(model.get("name"), str):
            return model["name"]
    # Run folders are named <model>__<dataset>__<config>...; demonstrations use replay/human.
    run = PurePath(filename).parent.name
    prefix = run.split("__", 1)[0] if "__" in run else ""
    return "" if prefix in NOT_MODELS else prefix


def parse(
    stream: IO[bytes], *, filename: str, limits: ParseLimits = DEFAULT_LIMITS
) -> Iterator[TrajectoryRecord]:
    record = "document"
    obj = require_object(
        load_document(stream, record=record, max_bytes=limits.max_document_bytes), record=record
    )
    history = optional_list(obj, "history", record=record)
    turns = [_turn(raw, i) for i, raw in enumerate(optional_list(obj, "trajectory", record=record))]
    if not history and not turns:
        raise TraceParseError(MSG_NO_STEPS, record=record, field="history")
    info = optional_object(obj, "info", record=record)
    if history:
        steps, unmatched = _history_steps(history, turns)
    else:
        steps, unmatched = _trajectory_steps(turns), []
    for position, step in enumerate(steps):
        step.index = position
    metadata = {k: v for k, v in obj.items() if k not in {"history", "trajectory", "environment"}}
    if unmatched:
        metadata["unmatched_trajectory"] = unmatched
    path = PurePath(filename)
    run = path.parent.name
    return_id = f"{run}/{path.stem}" if run else path.stem
    yield TrajectoryRecord(
        external_id=return_id,
        task_id=path.stem,
        task_text=next(
            (
                s.content
                for s in steps
                if s.role == "user" and s.kind == StepKind.MESSAGE and not _is_demo(s)
            ),
            "",
        ),
        environment=optional_str(obj, "environment", record=record),
        agent_system="SWE-agent",
        policy_model=_model(obj, filename),
        outcome=_outcome(info),
        reward=None,
        metadata=metadata,
        steps=steps,
        source=record,
    )
