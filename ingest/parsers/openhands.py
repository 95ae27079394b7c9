"""OpenHands event streams: a JSON list of events, one run per file.

An event is ``{id, timestamp, source: user|agent|environment, message, action + args}``
or ``{..., observation, content, extras, cause}``; ``cause`` is the id of the action an
observation answers and ``tool_call_metadata: {function_name, tool_call_id,
model_response}`` ties both to the model's tool call.

- ``message`` actions: ``message`` steps (user or assistant); ``system``: a ``system``
  step; ``think``: a ``thought`` step; ``finish`` that names no function in
  ``tool_call_metadata.function_name``: the assistant's closing ``message`` step
  (``args.final_thought`` / ``args.thought`` / ``message``);
- any other action (run, edit, read, write, browse, run_ipython, delegate, a ``finish``
  that names its function: ``finish``, ``submit``...): a ``tool_call`` step named by
  ``tool_call_metadata.function_name`` (else the action), arguments = the ones the model
  sent, else ``args`` without ``thought``, content = the thought (a finish's closing text);
- observations: ``tool_result`` steps named after the action they answer; an error when
  the observation is ``error``, ``success`` is false or a command's exit code is not 0.

Events that are not part of the conversation (``source: environment``, the
``agent_state_changed`` and ``null`` observations, ``change_agent_state`` actions) go to
``metadata.environment_events`` in full. Every other field of an event lands in its
step's metadata. Outcome: a final agent state of ``error`` is a failure; otherwise
unknown (a ``finish`` means the agent stopped, not that the task is done). The events are
streamed one at a time.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import PurePath
from typing import IO, Any

from ingest.core.chat import parse_arguments
from ingest.core.errors import TraceParseError
from ingest.core.jsonstream import iter_document
from ingest.core.records import Outcome, StepKind, StepRecord, TrajectoryRecord
from ingest.core.validate import optional_object, require_object, text_of
from ingest.core.vocabulary import is_mutating_tool
from ingest.parsers.base import DEFAULT_LIMITS, ParseLimits

FORMAT = "openhands"
LABEL = "OpenHands event stream"
EXTENSIONS = (".json",)

MSG_NO_EVENTS = "The event list is empty."
MSG_BAD_EVENT = "An event needs an action or an observation."
MSG_BAD_TIME = "Expected an ISO 8601 timestamp."
NON_STEP_OBSERVATIONS = {"null", "agent_state_changed"}
NON_STEP_ACTIONS = {"change_agent_state"}
STEP_KEYS = {
    "action",
    "observation",
    "args",
    "content",
    "source",
    "timestamp",
    "message",
    "tool_call_metadata",
}


def sniff(head: bytes, filename: str) -> bool:
    start = head.lstrip()[:1]
    return (
        start == b"["
        and re.search(rb'"source"\s*:\s*"(user|agent|environment)"', head) is not None
        and (b'"action"' in head or b'"observation"' in head)
        and b'"timestamp"' in head
    )


def _time(value: Any, record: str) -> datetime | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise TraceParseError(MSG_BAD_TIME, record=record, field="timestamp")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise TraceParseError(MSG_BAD_TIME, record=record, field="timestamp") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _exit_code(extras: dict[str, Any]) -> Any:
    metadata = extras.get("metadata")
    if isinstance(metadata, dict) and "exit_code" in metadata:
        return metadata["exit_code"]
    return extras.get("exit_code")


class _Stream:
    def __init__(self) -> None:
        self.steps: list[StepRecord] = []
        self.environment: list[Any] = []
        self.tool_names: dict[Any, str] = {}
        self.model = ""
        self.final_state = ""


def _action_step(event: dict[str, Any], record: str, stream: _Stream) -> StepRecord:
    action = event["action"]
    args = optional_object(event, "args", record=record)
    call_meta = optional_object(event, "tool_call_metadata", record=record)
    source = event.get("source") if isinstance(event.get("source"), str) else ""
    response = call_meta.get("model_response")
    if isinstance(response, dict) and isinstance(response.get("model"), str):
        stream.model = stream.model or response["model"]
    meta = {k: v for k, v in event.items() if k not in STEP_KEYS}
    if call_meta:
        meta["tool_call_metadata"] = call_meta
    meta["action"] = action
    role = "user" if source == "user" else "assistant"
    thought = text_of(args.get("thought"))
    base: dict[str, Any] = {
        "role": role,
        "agent": source or role,
        "started_at": _time(event.get("timestamp"), record),
    }
    message = text_of(event.get("message"))
    if action in ("message", "system"):
        meta["args"] = {k: v for k, v in args.items() if k != "content"}
        kind = StepKind.SYSTEM if action == "system" else StepKind.MESSAGE
        return StepRecord(
            index=0,
            kind=kind,
            content=text_of(args.get("content")) or message,
            metadata=meta,
            **base,
        )
    if action == "think":
        meta["args"] = {k: v for k, v in args.items() if k != "thought"}
        return StepRecord(
            index=0, kind=StepKind.THOUGHT, content=thought or message, metadata=meta, **base
        )
    function_name = call_meta.get("function_name")
    name = function_name if isinstance(function_name, str) else ""
    if action == "finish":
        closing = text_of(args.get("final_thought")) or thought or message
        if not name:
            meta["args"] = args
            return StepRecord(
                index=0, kind=StepKind.MESSAGE, content=closing, metadata=meta, **base
            )
        # The model called a function to hand the work in (finish, submit): a call of it,
        # as in the formats that list every call, whose text is the closing report.
        thought = closing
    name = name or str(action)
    if isinstance(event.get("id"), int):
        stream.tool_names[event["id"]] = name
    call_id = call_meta.get("tool_call_id")
    if message:
        meta["message"] = message
    own_args = {k: v for k, v in args.items() if k != "thought"}
    sent = _sent_arguments(call_meta)
    if sent is not None:
        # What the model asked for; OpenHands' own action fields (its translated code, an
        # edit's "content", empty for a file created with file_text) stay in the metadata.
        meta["args"] = own_args
    # The action says whether it writes (edit, write: yes; read: no) where the tool's name
    # cannot (str_replace_editor both views and creates files).
    mutating = is_mutating_tool(str(action))
    return StepRecord(
        index=0,
        kind=StepKind.TOOL_CALL,
        content=thought or _model_text(call_meta),
        tool_name=name,
        tool_args=parse_arguments(sent if sent is not None else own_args),
        tool_call_id=call_id if isinstance(call_id, str) else "",
        is_mutating=mutating if mutating is not None else is_mutating_tool(name),
        metadata=meta,
        **base,
    )


def _model_message(call_meta: dict[str, Any]) -> dict[str, Any]:
    """The model's message in the response that asked for this call ({} without one)."""
    response = call_meta.get("model_response")
    choices = response.get("choices") if isinstance(response, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    return message if isinstance(message, dict) else {}


def _model_text(call_meta: dict[str, Any]) -> str:
    return text_of(_model_message(call_meta).get("content"))


def _sent_arguments(call_meta: dict[str, Any]) -> Any:
    """The arguments the model sent for this call (by its id, or the response's only call),
    as the response holds them (a JSON string or an object); None when the metadata does
    not hold them, and the action's own fields are used."""
    calls = _model_message(call_meta).get("tool_calls")
    if not isinstance(calls, list):
        return None
    calls = [call for call in calls if isinstance(call, dict)]
    wanted = call_meta.get("tool_call_id")
    matching = [call for call in calls if call.get("id") == wanted] or (
        calls if len(calls) == 1 else []
    )
    function = matching[0].get("function") if matching else None
    if not isinstance(function, dict) or function.get("arguments") in (None, ""):
        return None
    return function["arguments"]


def _observation_step(event: dict[str, Any], record: str, stream: _Stream) -> StepRecord:
    observation = event["observation"]
    extras = optional_object(event, "extras", record=record)
    call_meta = optional_object(event, "tool_call_metadata", record=record)
    exit_code = _exit_code(extras)
    failed = (
        observation == "error"
        or event.get("success") is False
        or (
            isinstance(exit_code, int)
            and not isinstance(exit_code, bool)
            and exit_code not in (0, -1)
        )
    )
    meta = {k: v for k, v in event.items() if k not in STEP_KEYS}
    meta["observation"] = observation
    if extras:
        meta["extras"] = extras
    if call_meta:
        meta["tool_call_metadata"] = call_meta
    message = text_of(event.get("message"))
    if message:
        meta["message"] = message
    call_id = call_meta.get("tool_call_id")
    cause = event.get("cause")
    return StepRecord(
        index=0,
        role="tool",
        kind=StepKind.TOOL_RESULT,
        content=text_of(event.get("content")) or message,
        agent="tool",
        tool_name=stream.tool_names.get(cause, str(observation))
        if isinstance(cause, int)
        else str(observation),
        tool_call_id=call_id if isinstance(call_id, str) else "",
        is_error=failed,
        started_at=_time(event.get("timestamp"), record),
        metadata=meta,
    )


def _add(event: dict[str, Any], record: str, stream: _Stream) -> None:
    action = event.get("action")
    observation = event.get("observation")
    if not isinstance(action, str) and not isinstance(observation, str):
        raise TraceParseError(MSG_BAD_EVENT, record=record, field="action")
    if observation == "agent_state_changed":
        state = optional_object(event, "extras", record=record).get("agent_state")
        stream.final_state = state if isinstance(state, str) else stream.final_state
    if (
        event.get("source") == "environment"
        or observation in NON_STEP_OBSERVATIONS
        or action in NON_STEP_ACTIONS
    ):
        stream.environment.append(event)
        return
    if isinstance(action, str):
        stream.steps.append(_action_step(event, record, stream))
    else:
        stream.steps.append(_observation_step(event, record, stream))


def parse(
    stream: IO[bytes], *, filename: str, limits: ParseLimits = DEFAULT_LIMITS
) -> Iterator[TrajectoryRecord]:
    events = _Stream()
    count = 0
    for _, _, item in iter_document(stream, stream_keys={""}, max_item_bytes=limits.max_line_bytes):
        record = f"item {count}"
        _add(require_object(item, record=record), record, events)
        count += 1
    if count == 0:
        raise TraceParseError(MSG_NO_EVENTS, record="document")
    steps = events.steps
    for position, step in enumerate(steps):
        step.index = position
    metadata: dict[str, Any] = {"event_count": count}
    if events.environment:
        metadata["environment_events"] = events.environment
    if events.final_state:
        metadata["final_agent_state"] = events.final_state
    yield TrajectoryRecord(
        external_id=PurePath(filename).stem,
        task_text=next((s.content for s in steps if s.role == "user" and s.content), ""),
        agent_system="OpenHands",
        policy_model=events.model,
        outcome=Outcome.FAILURE if events.final_state == "error" else Outcome.UNKNOWN,
        metadata=metadata,
        steps=steps,
        source="document",
    )
