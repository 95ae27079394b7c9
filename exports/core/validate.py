"""Checks every exported line passes: the chat format's rules and no leakage.

Chat rules: roles are system/user/assistant/tool; system messages only open the
conversation; every tool call is answered by a ``tool`` message with its id before the
next message (the final target turn of a training example is exempt: it is what the
model learns to emit); call ids are unique; arguments are JSON strings.

Example:
    >>> chat_problems([{"role": "user", "content": "hi"},
    ...                {"role": "assistant", "content": None,
    ...                 "tool_calls": [{"id": "c1", "type": "function",
    ...                                 "function": {"name": "f", "arguments": "{}"}}]},
    ...                {"role": "user", "content": "and?"}], target_last=False)
    ['messages[2]: tool call c1 of the previous assistant message has no tool message']
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ingest.core.records import StepRecord

ROLES = ("system", "user", "assistant", "tool")
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def chat_problems(messages: Any, *, target_last: bool) -> list[str]:
    """Every broken chat rule in ``messages``; empty when they are valid.

    ``target_last``: the last message is the assistant turn being trained.
    """
    if not isinstance(messages, list) or not messages:
        return ["messages: expected a non-empty list"]
    problems: list[str] = []
    pending: list[str] = []
    seen_ids: set[str] = set()
    started = False
    for position, message in enumerate(messages):
        where = f"messages[{position}]"
        if not isinstance(message, dict):
            problems.append(f"{where}: expected an object")
            continue
        role = message.get("role")
        if role not in ROLES:
            problems.append(f"{where}: unknown role {role!r}")
            continue
        name = message.get("name")
        if name is not None and (not isinstance(name, str) or not _NAME.match(name)):
            problems.append(f"{where}: name must be 1-64 letters, digits, _ or -")
        if role == "tool":
            call = message.get("tool_call_id")
            if call in pending:
                pending.remove(call)
            else:
                problems.append(f"{where}: tool message answers no open tool call ({call!r})")
            if not isinstance(message.get("content"), str):
                problems.append(f"{where}: tool content must be text")
            continue
        for open_call in pending:
            problems.append(
                f"{where}: tool call {open_call} of the previous assistant message has no tool message"
            )
        pending = []
        if role == "system":
            if started:
                problems.append(f"{where}: system message after the conversation started")
            if not _text(message.get("content")):
                problems.append(f"{where}: system content must be non-empty text")
            continue
        started = True
        if role == "user":
            if not isinstance(message.get("content"), str):
                problems.append(f"{where}: user content must be text")
            continue
        pending = _assistant_problems(message, where, seen_ids, problems)
    if target_last:
        last = messages[-1]
        if not isinstance(last, dict) or last.get("role") != "assistant":
            problems.append("the last message must be the assistant turn being trained")
        elif last.get("weight", 1) != 1:
            problems.append("the trained assistant turn must not have weight 0")
        if not any(isinstance(m, dict) and m.get("role") == "user" for m in messages[:-1]):
            problems.append("no user message before the trained assistant turn")
    else:
        for open_call in pending:
            problems.append(f"end: tool call {open_call} has no tool message")
    return problems


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _assistant_problems(
    message: dict[str, Any], where: str, seen_ids: set[str], problems: list[str]
) -> list[str]:
    content = message.get("content")
    calls = message.get("tool_calls")
    if content is not None and not isinstance(content, str):
        problems.append(f"{where}: assistant content must be text or null")
    if "weight" in message and message["weight"] not in (0, 1):
        problems.append(f"{where}: weight must be 0 or 1")
    if not calls:
        if calls is not None:
            problems.append(f"{where}: tool_calls must not be empty when present")
        if not _text(content):
            problems.append(f"{where}: assistant message has neither text nor tool calls")
        return []
    if not isinstance(calls, list):
        problems.append(f"{where}: tool_calls must be a list")
        return []
    opened: list[str] = []
    for position, call in enumerate(calls):
        at = f"{where}.tool_calls[{position}]"
        if not isinstance(call, dict):
            problems.append(f"{at}: expected an object")
            continue
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            problems.append(f"{at}: id must be non-empty text")
            continue
        if call_id in seen_ids:
            problems.append(f"{at}: id {call_id} is used twice")
        seen_ids.add(call_id)
        if call.get("type") != "function":
            problems.append(f"{at}: type must be 'function'")
        function = call.get("function")
        if not isinstance(function, dict) or not _text(function.get("name")):
            problems.append(f"{at}: function.name must be non-empty text")
        elif not _is_json_text(function.get("arguments")):
            problems.append(f"{at}: function.arguments must be a JSON string")
        opened.append(call_id)
    return opened


def _is_json_text(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        json.loads(value)
    except ValueError:
        return False
    return True


def leakage_problems(
    prefix: Sequence[dict[str, Any]], steps: Sequence[StepRecord], cut: int, *, task_text: str = ""
) -> list[str]:
    """What in ``prefix`` comes from step ``cut`` or later; empty when nothing does.

    Works from the exported messages and the stored steps alone, not from how the
    prefix was built: a text or call id that first appears at or after ``cut`` must not
    be in the prefix.

    Example:
        >>> from ingest.core.records import StepRecord
        >>> steps = [StepRecord(index=0, role="user", content="book it"),
        ...          StepRecord(index=1, role="assistant", content="booked the wrong one")]
        >>> leakage_problems([{"role": "user", "content": "book it"}], steps, 1)
        []
        >>> leakage_problems([{"role": "assistant", "content": "booked the wrong one"}], steps, 1)
        ['messages[0] holds the text of step 1 or later']
    """
    earlier_texts = {s.content.strip() for s in steps[:cut]} | {task_text.strip()}
    later_texts = {s.content.strip() for s in steps[cut:] if s.content.strip()} - earlier_texts
    earlier_ids = {s.tool_call_id for s in steps[:cut] if s.tool_call_id}
    later_ids = {s.tool_call_id for s in steps[cut:] if s.tool_call_id} - earlier_ids
    later_ids |= {f"call_step_{s.index}" for s in steps[cut:]}
    problems: list[str] = []
    for position, message in enumerate(prefix):
        content = message.get("content")
        if isinstance(content, str) and content.strip() in later_texts:
            problems.append(f"messages[{position}] holds the text of step {cut} or later")
        ids = {c.get("id") for c in message.get("tool_calls") or () if isinstance(c, dict)}
        ids.add(message.get("tool_call_id"))
        leaked = sorted(i for i in ids if i in later_ids)
        if leaked:
            problems.append(
                f"messages[{position}] holds tool call {leaked[0]} of step {cut} or later"
            )
    return problems
