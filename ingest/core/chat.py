"""OpenAI chat messages to steps, shared by every format built on them.

An assistant message with N tool calls becomes N ``tool_call`` steps (the first also
carries the message text); a ``tool`` message becomes a ``tool_result`` step; other
messages become ``message`` steps (``system`` ones of kind ``system``).

Example:
    >>> steps = chat_messages_to_steps(
    ...     [{"role": "user", "content": "hi"},
    ...      {"role": "assistant", "content": None,
    ...       "tool_calls": [{"id": "c1", "type": "function",
    ...                       "function": {"name": "get_user", "arguments": "{\\"id\\": 1}"}}]},
    ...      {"role": "tool", "tool_call_id": "c1", "name": "get_user", "content": "{}"}],
    ...     record="line 1")
    >>> [(s.kind, s.tool_name, s.tool_args) for s in steps]
    [('message', '', None), ('tool_call', 'get_user', {'id': 1}), ('tool_result', 'get_user', None)]
"""

from __future__ import annotations

import json
import re
from typing import Any

from ingest.core.chat_dialects import openai_shaped
from ingest.core.errors import TraceParseError
from ingest.core.records import StepKind, StepRecord
from ingest.core.validate import optional_list, optional_str, require_object, require_str, text_of
from ingest.core.vocabulary import is_mutating_tool

MSG_BAD_CONTENT = "Expected text, a list of content parts, or null."
ERROR_MARKERS = ("error", "exception", "traceback", "failed", "not found", "invalid")


def parse_arguments(raw: Any) -> Any:
    """Tool arguments as JSON: a JSON string is decoded, anything else kept as it is."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def looks_like_error(text: str) -> bool:
    head = text[:300].lower()
    return head.startswith(ERROR_MARKERS) or head.startswith(('{"error', "{'error"))


# A command's output closes on the line that says how it went: pytest's summary, pip's
# or a shell's "ERROR: ...", the exception a traceback ends on. Only that last line is
# read, and only from its first character: a file listing, a test run that passed, or
# code being viewed (numbered, indented, or a diff) that merely mentions an error does
# not close on one.
_CLOSING_MARKER = re.compile(
    "^(?:" + "|".join(re.escape(marker) for marker in ERROR_MARKERS) + r")\b", re.IGNORECASE
)
_TEST_SUMMARY = re.compile(r"^=*\s*\d+ \w+.*\bin \d+(?:\.\d+)?s\b")
_COUNTS_FAILURES = re.compile(r"\b\d+ (?:failed|errors?)\b")
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception)(?::|$)")
CLOSING_LINE_CHARS = 300


def closes_with_error(text: str) -> bool:
    """Whether a tool's output ends by reporting a failure, for the readers whose format
    has no exit code: its last non-blank line is a test summary counting failures or
    errors, starts like an error (the markers :func:`looks_like_error` reads at the head),
    or names the exception a traceback ends on.

    Example:
        >>> closes_with_error("collected 14 items\\n== 1 failed, 13 passed in 0.87s ==\\n")
        True
        >>> closes_with_error("Collecting x\\nERROR: No matching distribution found for x")
        True
        >>> closes_with_error("== 14 passed in 0.91s =="), closes_with_error("12:    raise KeyError")
        (False, False)
    """
    body = text.rstrip()
    last = body[body.rfind("\n") + 1 :][:CLOSING_LINE_CHARS]
    if _TEST_SUMMARY.match(last):
        return _COUNTS_FAILURES.search(last) is not None
    return bool(_CLOSING_MARKER.match(last) or _EXCEPTION_LINE.match(last))


def chat_messages_to_steps(
    messages: list[Any], *, record: str, field: str = "messages", agent: str = ""
) -> list[StepRecord]:
    steps: list[StepRecord] = []
    call_names: dict[str, str] = {}
    for position, raw in openai_shaped(messages, record=record, field=field):
        where = f"{field}[{position}]"
        prefix = where + "."
        message = require_object(raw, record=record, field=where)
        role = require_str(message, "role", record=record, prefix=prefix)
        content_raw = message.get("content")
        if content_raw is not None and not isinstance(content_raw, (str, list)):
            raise TraceParseError(MSG_BAD_CONTENT, record=record, field=prefix + "content")
        content = text_of(content_raw)
        speaker = (
            optional_str(message, "name", record=record, prefix=prefix) if role != "tool" else ""
        )
        extra = {
            k: v
            for k, v in message.items()
            if k not in {"role", "content", "tool_calls", "tool_call_id", "name", "is_error"}
        }
        base_meta: dict[str, Any] = {"message_index": position}
        if extra:
            base_meta["extra"] = extra
        tool_calls = optional_list(message, "tool_calls", record=record, prefix=prefix)
        if role == "assistant" and tool_calls:
            for call_position, raw_call in enumerate(tool_calls):
                call_where = f"{prefix}tool_calls[{call_position}]"
                call = require_object(raw_call, record=record, field=call_where)
                function = require_object(
                    call.get("function"), record=record, field=call_where + ".function"
                )
                name = require_str(
                    function, "name", record=record, prefix=call_where + ".function."
                )
                call_id = optional_str(call, "id", record=record, prefix=call_where + ".")
                call_names[call_id] = name
                meta = dict(base_meta, tool_call_position=call_position)
                if call.get("type") not in (None, "function"):
                    meta["tool_call_type"] = call.get("type")
                steps.append(
                    StepRecord(
                        index=len(steps),
                        role=role,
                        kind=StepKind.TOOL_CALL,
                        content=content if call_position == 0 else "",
                        agent=speaker or agent or role,
                        tool_name=name,
                        tool_args=parse_arguments(function.get("arguments")),
                        tool_call_id=call_id,
                        is_mutating=is_mutating_tool(name),
                        metadata=meta,
                    )
                )
            continue
        if role == "tool":
            call_id = optional_str(message, "tool_call_id", record=record, prefix=prefix)
            name = optional_str(message, "name", record=record, prefix=prefix) or call_names.get(
                call_id, ""
            )
            steps.append(
                StepRecord(
                    index=len(steps),
                    role=role,
                    kind=StepKind.TOOL_RESULT,
                    content=content,
                    agent="tool",
                    tool_name=name,
                    tool_call_id=call_id,
                    is_error=message.get("is_error") is True or looks_like_error(content),
                    metadata=base_meta,
                )
            )
            continue
        steps.append(
            StepRecord(
                index=len(steps),
                role=role,
                kind=StepKind.SYSTEM if role == "system" else StepKind.MESSAGE,
                content=content,
                agent=speaker or agent or role,
                metadata=base_meta,
            )
        )
    return steps
