"""OpenAI chat JSONL: one conversation per line, ``{messages, tools?}`` plus outcome fields.

A line is one trajectory. The same conversations as one JSON document are read too, since
that is how many scripts save them: a JSON list of them (``item N`` in errors, default
id ``<file stem>:<index>``), one conversation object spread over several lines
(``document``), or one conversation as its bare list of messages (``document``, id the
file stem; its outcome unknown until set). Its ``messages`` (roles system, user, assistant, tool; assistant
``tool_calls`` with ``function.arguments`` as JSON text) become steps as in
ingest.core.chat. Optional fields, all ours to define:

=================  ===========================================================
``id``             the trajectory id (also ``trace_id`` or ``conversation_id``);
                   default ``<file stem>:<line number>``
``task_id``        the task, to group rollouts of one task
``task``           the task text (also ``task_text``); default: the first user message
``environment``    the environment or benchmark
``agent``          the agent system (also ``agent_system``)
``model``          the policy model (also ``policy_model``)
``reward``         a number; >= 1 is a success, lower a failure
``success``        true / false
``outcome``        ``"success"``, ``"failure"`` or ``"unknown"``, or an object
                   ``{status, score}`` (status as before, score as ``reward``)
``tools``          the tool definitions offered; kept in ``metadata.tools``
``metadata``       an object, kept as the trajectory's metadata
``system``         the system prompt, as Anthropic's requests carry it beside the
                   messages (text or text blocks): the first step, a ``system`` one
=================  ===========================================================

A line in Gemini's own request shape is read too: ``contents`` (messages of ``role`` and
``parts``) in place of ``messages``, and ``systemInstruction`` (or
``system_instruction``: text, or ``{parts: [{text}]}``) as the system prompt.

Where a line leaves ``task_id``, ``environment``, the agent system or the model out, the
same names inside ``metadata`` stand in (many loggers put them there), and so does
``metadata.system`` for the agent system when it is one word of a name
(``"demo-calculator"``; a sentence there is more likely a system prompt). A non-text
value there is left in the metadata, not an error: the metadata is the writer's own.

Outcome, first rule that applies: ``outcome`` (string, or its ``status``), then
``success``, then ``reward`` (or ``outcome.score``), else unknown. Any other field of the
line is kept in ``metadata.extra``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import PurePath
from typing import IO, Any

from ingest.core.chat import chat_messages_to_steps
from ingest.core.errors import TraceParseError
from ingest.core.jsonio import (
    MSG_EMPTY,
    first_byte,
    iter_array_items,
    iter_lines,
    load_document,
    loads,
)
from ingest.core.records import Outcome, StepKind, StepRecord, TrajectoryRecord
from ingest.core.validate import (
    optional_bool,
    optional_list,
    optional_number,
    optional_object,
    optional_str,
    require_list,
    require_object,
    text_of,
)
from ingest.parsers.base import DEFAULT_LIMITS, ParseLimits

FORMAT = "openai_chat"
LABEL = "Chat JSONL (OpenAI, Anthropic or Gemini messages)"
EXTENSIONS = (".jsonl", ".ndjson", ".json")
STEPS_FIELD = "messages"

MSG_BAD_OUTCOME = "Expected success, failure or unknown, or an object {status, score}."
MSG_BAD_ID = "Expected a string or an integer."
MSG_BAD_SYSTEM = "Expected the system prompt as text or a list of text blocks."
ID_KEYS = ("id", "trace_id", "conversation_id")
MAPPED_KEYS = {
    *ID_KEYS,
    "messages",
    "tools",
    "task_id",
    "task",
    "task_text",
    "environment",
    "agent",
    "agent_system",
    "model",
    "policy_model",
    "reward",
    "success",
    "outcome",
    "metadata",
    "system",
    "contents",
    "systemInstruction",
    "system_instruction",
}
# Gemini's request shape: its messages and its system prompt.
GEMINI_MESSAGES = "contents"
GEMINI_SYSTEM = ("systemInstruction", "system_instruction")


# A field before ``messages``: a plain scalar, or a list of flat objects (Anthropic's
# ``system`` as text blocks).
_FIELD = rb'"[^"]*"\s*:\s*(?:"(?:[^"\\]|\\.)*"|[-\w.]+|\[\s*(?:\{[^{}\[\]]*\}\s*,?\s*)*\])\s*,\s*'
_MESSAGES = re.compile(rb"^[\[\s]*\{\s*(?:" + _FIELD + rb')*"messages"\s*:\s*\[\s*\{')
# One conversation saved as its bare list of messages: the first object has a chat role.
_ROLES = rb"(?:system|developer|user|assistant|tool|function|model)"
_BARE = re.compile(rb"^\[\s*\{\s*(?:" + _FIELD + rb')*"role"\s*:\s*"' + _ROLES + rb'"')


def sniff(head: bytes, filename: str) -> bool:
    start = head.lstrip()
    first = start.split(b"\n", 1)[0]
    if first.startswith(b"{") and re.search(rb'"messages"\s*:\s*\[', first):
        return b'"role"' in first or _no_messages(first)
    if first.startswith(b"{") and re.search(rb'"contents"\s*:\s*\[\s*\{', first):
        return b'"parts"' in first and b'"role"' in first
    # A JSON document (a list of conversations, or one spread over lines): its first
    # object opens with ``messages`` (after only plain scalar fields) holding objects with
    # a role, so a format whose records merely contain messages deeper down is not taken.
    if _MESSAGES.match(start) is not None and b'"role"' in start:
        return True
    # Or one conversation as a bare list of messages (``json.dump(messages, f)``).
    return _BARE.match(start) is not None


def _no_messages(line: bytes) -> bool:
    """Whether a JSONL line is a conversation with an empty ``messages`` list: no role to
    recognise it by, but taken as ours (asked last of the formats) so that reading it names
    the line and the empty field instead of calling the file of no known format.

    Example:
        >>> _no_messages(b'{"id": "x", "reward": 0.0, "messages": []}')
        True
        >>> _no_messages(b'{"log": {"messages": []}}')
        False
    """
    try:
        obj = json.loads(line)
    except ValueError:
        return False
    return isinstance(obj, dict) and obj.get("messages") == []


def _text_id(obj: dict[str, Any], key: str, record: str) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise TraceParseError(MSG_BAD_ID, record=record, field=key)
    return str(value)


def _first(obj: dict[str, Any], keys: tuple[str, ...], record: str) -> str:
    for key in keys:
        value = optional_str(obj, key, record=record)
        if value:
            return value
    return ""


_NAME_WORD = re.compile(r"^\w[\w.:/@+-]{0,63}$")


def _from_metadata(metadata: dict[str, Any], keys: tuple[str, ...]) -> str:
    """The first of these metadata fields that holds text (``system`` only as a name)."""
    for key in keys:
        value = metadata.get(key)
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            continue
        text = str(value).strip()
        if text and (key != "system" or _NAME_WORD.match(text)):
            return text
    return ""


def _outcome(obj: dict[str, Any], record: str) -> tuple[str, float | None]:
    raw = obj.get("outcome")
    status = ""
    reward = optional_number(obj, "reward", record=record)
    if isinstance(raw, dict):
        status = optional_str(raw, "status", record=record, prefix="outcome.")
        score = optional_number(raw, "score", record=record, prefix="outcome.")
        reward = reward if reward is not None else score
    elif raw is not None:
        if not isinstance(raw, str):
            raise TraceParseError(MSG_BAD_OUTCOME, record=record, field="outcome")
        status = raw
    if status and status not in Outcome.ALL:
        raise TraceParseError(MSG_BAD_OUTCOME, record=record, field="outcome")
    if status:
        return status, reward
    success = optional_bool(obj, "success", record=record)
    if success is not None:
        return (Outcome.SUCCESS if success else Outcome.FAILURE), reward
    if reward is not None:
        return (Outcome.SUCCESS if reward >= 1.0 else Outcome.FAILURE), reward
    return Outcome.UNKNOWN, None


def conversation_from_object(obj: Any, *, record: str, default_id: str) -> TrajectoryRecord:
    obj = require_object(obj, record=record)
    field = GEMINI_MESSAGES if "messages" not in obj and GEMINI_MESSAGES in obj else "messages"
    messages = require_list(obj, field, record=record)
    steps = chat_messages_to_steps(messages, record=record, field=field)
    system_field = next((key for key in ("system", *GEMINI_SYSTEM) if key in obj), "system")
    system = obj.get(system_field)
    if isinstance(system, dict) and system_field in GEMINI_SYSTEM:
        system = system.get("parts")
    if system is not None:
        if not isinstance(system, (str, list)):
            raise TraceParseError(MSG_BAD_SYSTEM, record=record, field=system_field)
        prompt = StepRecord(
            index=0, role="system", kind=StepKind.SYSTEM, content=text_of(system), agent="system"
        )
        steps = [prompt, *steps]
        for index, step in enumerate(steps):
            step.index = index
    outcome, reward = _outcome(obj, record)
    metadata = dict(optional_object(obj, "metadata", record=record))
    tools = optional_list(obj, "tools", record=record)
    if tools:
        metadata["tools"] = tools
    extra = {k: v for k, v in obj.items() if k not in MAPPED_KEYS}
    if extra:
        metadata["extra"] = extra
    external_id = next(
        (_text_id(obj, key, record) for key in ID_KEYS if obj.get(key) is not None), ""
    )
    task_text = _first(obj, ("task", "task_text"), record) or next(
        (step.content for step in steps if step.role == "user" and step.content), ""
    )
    return TrajectoryRecord(
        external_id=external_id or default_id,
        task_id=_text_id(obj, "task_id", record) or _from_metadata(metadata, ("task_id",)),
        task_text=task_text,
        environment=optional_str(obj, "environment", record=record)
        or _from_metadata(metadata, ("environment", "env")),
        agent_system=_first(obj, ("agent", "agent_system"), record)
        or _from_metadata(metadata, ("agent_system", "agent", "system")),
        policy_model=_first(obj, ("model", "policy_model"), record)
        or _from_metadata(metadata, ("policy_model", "model")),
        outcome=outcome,
        reward=reward,
        metadata=metadata,
        steps=steps,
        source=record,
    )


def _lines(
    stream: IO[bytes], *, stem: str, first: bytes, start: int, limits: ParseLimits
) -> Iterator[tuple[str, Any, str]]:
    """(record, object, default id) of each JSONL line; a first line that is not a whole
    object but opens one is the start of one conversation over several lines."""
    for position, (number, line) in enumerate(
        iter_lines(stream, max_line_bytes=limits.max_line_bytes)
    ):
        record = f"line {number}"
        try:
            conversation = loads(line, record=record)
        except TraceParseError:
            if position or first != b"{":
                raise
            stream.seek(start)
            document = load_document(stream, record="document", max_bytes=limits.max_document_bytes)
            yield "document", document, stem
            return
        yield record, conversation, f"{stem}:{number}"


def _is_message(item: Any) -> bool:
    return isinstance(item, dict) and "role" in item and "messages" not in item


def _items(stream: IO[bytes], *, stem: str) -> Iterator[tuple[str, Any, str]]:
    """(record, object, default id) of each conversation of a JSON list; a list whose
    first item is a message, not a conversation, is one conversation (the file's)."""
    items = iter_array_items(stream)
    first = next(items, None)
    if first is None:
        return
    if _is_message(first[1]):
        messages = [first[1], *(item for _, item in items)]
        yield "document", {"messages": messages}, stem
        return
    for index, item in (first, *items):
        yield f"item {index}", item, f"{stem}:{index}"


def parse(
    stream: IO[bytes], *, filename: str, limits: ParseLimits = DEFAULT_LIMITS
) -> Iterator[TrajectoryRecord]:
    stem = PurePath(filename).stem
    start = stream.tell()
    first = first_byte(stream)
    stream.seek(start)  # JSONL line numbers count the blank lines before the first
    items = (
        _items(stream, stem=stem)
        if first == b"["
        else _lines(stream, stem=stem, first=first, start=start, limits=limits)
    )
    count = 0
    for record, conversation, default_id in items:
        yield conversation_from_object(conversation, record=record, default_id=default_id)
        count += 1
    if count == 0:
        raise TraceParseError(MSG_EMPTY, record="document")
