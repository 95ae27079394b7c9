"""The messages of GenAI spans, however the instrumentation wrote them: the current
``gen_ai.input.messages`` / ``gen_ai.output.messages`` parts, the older flattened
``gen_ai.prompt.N.*`` keys and the SDK's output records, all normalised to one shape
({"role", "content", "tool_calls"...}) for ``ingest.core.genai``.

Example:
    >>> normalise([{"role": "user", "parts": [{"type": "text", "content": "hi"}]}], "user")[0]["content"]
    'hi'
"""

from __future__ import annotations

import json
import re
from typing import Any

from ingest.core.spans import json_text
from ingest.core.validate import text_of

_PROMPT_KEY = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(.+)$")
_PROMPT_PREFIXES = ("gen_ai.prompt.", "gen_ai.completion.")
_TOOL_CALL_KEY = re.compile(r"^tool_calls\.(\d+)\.(.+)$")


def _part_text(value: Any) -> str:
    return value if isinstance(value, str) else text_of(value)


def instructions_text(value: Any) -> str:
    """``gen_ai.system_instructions``: text, or a list of ``{type: text, content}`` parts."""
    if isinstance(value, list):
        texts = [
            _part_text(part.get("content"))
            if isinstance(part, dict) and "content" in part
            else _part_text(part)
            for part in value
        ]
        return "\n".join(texts)
    return _part_text(value)


def _from_parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A GenAI ``{role, parts}`` message as OpenAI-style messages (tool responses split off)."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    responses: list[dict[str, Any]] = []
    other: list[Any] = []
    parts = message.get("parts")
    for part in parts if isinstance(parts, list) else []:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" or (kind in ("reasoning", "thinking") and "content" in part):
            texts.append(_part_text(part.get("content")))
        elif kind == "tool_call":
            calls.append(
                {
                    "id": str(part.get("id") or ""),
                    "type": "function",
                    "function": {
                        "name": str(part.get("name") or ""),
                        "arguments": part.get("arguments"),
                    },
                }
            )
        elif kind == "tool_call_response":
            result = part.get("result", part.get("response"))
            responses.append(
                {
                    "role": "tool",
                    "tool_call_id": str(part.get("id") or ""),
                    "content": _part_text(result),
                }
            )
        else:
            other.append(part)
    role = message.get("role") if isinstance(message.get("role"), str) else "assistant"
    extra = {k: v for k, v in message.items() if k not in {"role", "parts"}}
    if other:
        extra["other_parts"] = other
    converted: list[dict[str, Any]] = []
    if texts or calls or not responses:
        base: dict[str, Any] = {"role": role, "content": "\n".join(texts), **extra}
        if calls:
            base["tool_calls"] = calls
        converted.append(base)
    converted.extend(responses)
    return converted


def normalise(raw: Any, default_role: str) -> list[dict[str, Any]]:
    """Messages in any accepted shape as a list of OpenAI-style dicts (invalid items kept for errors)."""
    if isinstance(raw, dict):
        raw = [raw]
    if not isinstance(raw, list):
        return [{"role": default_role, "content": _part_text(raw)}] if raw not in (None, "") else []
    messages: list[dict[str, Any]] = []
    for item in raw:
        if isinstance(item, dict) and "parts" in item:
            messages.extend(_from_parts(item))
        elif isinstance(item, dict):
            message = dict(item)
            message.setdefault("role", default_role)
            if not isinstance(message.get("content"), (str, list, type(None))):
                message["content"] = text_of(message["content"])
            messages.append(message)
        else:
            messages.append({"role": default_role, "content": _part_text(item)})
    return messages


def is_flattened_key(key: str) -> bool:
    """Whether an attribute is one of the older numbered prompt / completion keys (the
    prefix is checked first: most keys of a span are not, and it is cheaper than the
    pattern).

    Example:
        >>> is_flattened_key("gen_ai.prompt.0.content"), is_flattened_key("gen_ai.system")
        (True, False)
    """
    return key.startswith(_PROMPT_PREFIXES) and _PROMPT_KEY.match(key) is not None


def flattened(attributes: dict[str, Any], which: str) -> list[dict[str, Any]]:
    """Older ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` keys as messages."""
    numbered: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        match = _PROMPT_KEY.match(key) if key.startswith(_PROMPT_PREFIXES) else None
        if not match or match.group(1) != which:
            continue
        message = numbered.setdefault(int(match.group(2)), {})
        rest = match.group(3)
        call = _TOOL_CALL_KEY.match(rest)
        if call:
            calls = message.setdefault("_calls", {})
            calls.setdefault(int(call.group(1)), {})[call.group(2)] = value
        else:
            message[rest] = value
    messages = []
    for _, message in sorted(numbered.items()):
        calls = message.pop("_calls", {})
        message.setdefault("role", "user" if which == "prompt" else "assistant")
        if calls:
            message["tool_calls"] = [
                {
                    "id": str(call.get("id") or ""),
                    "type": "function",
                    "function": {
                        "name": str(call.get("name") or ""),
                        "arguments": call.get("arguments"),
                    },
                }
                for _, call in sorted(calls.items())
            ]
        content = message.get("content")
        if isinstance(content, str):
            message["content"] = content_blocks(content)
        messages.append(message)
    return messages


def content_blocks(text: str) -> str | list[Any]:
    """A content attribute that holds a list of typed blocks written as JSON text (as
    instrumentations of Anthropic's client write a message whose content is not plain
    text), decoded so that its tool_use and tool_result blocks are read; any other text as
    it is.

    Example:
        >>> content_blocks('[{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]')
        [{'type': 'tool_result', 'tool_use_id': 't1', 'content': 'ok'}]
        >>> content_blocks('[1, 2] is a list'), content_blocks('[{"a": 1}]')
        ('[1, 2] is a list', '[{"a": 1}]')
    """
    if not text.startswith("[{"):
        return text
    try:
        decoded = json.loads(text)
    except ValueError:
        return text
    if (
        isinstance(decoded, list)
        and decoded
        and all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in decoded)
    ):
        return decoded
    return text


def sdk_output(attributes: dict[str, Any], record: str) -> list[dict[str, Any]]:
    """any-agent's ``gen_ai.output``: a list of ``{tool.name, tool.args}`` or the answer."""
    raw = attributes.get("gen_ai.output")
    if raw is None:
        return []
    decoded = json_text(raw, record=record, field="gen_ai.output")
    if (
        isinstance(decoded, list)
        and decoded
        and all(isinstance(item, dict) and "tool.name" in item for item in decoded)
    ):
        calls = [
            {
                "id": str(item.get("tool.call.id") or ""),
                "type": "function",
                "function": {
                    "name": str(item.get("tool.name")),
                    "arguments": item.get("tool.args"),
                },
            }
            for item in decoded
        ]
        return [{"role": "assistant", "content": "", "tool_calls": calls}]
    return [{"role": "assistant", "content": raw if isinstance(raw, str) else text_of(raw)}]


def tool_call_name(call: Any) -> str:
    """The function name of a chat tool call (``{"function": {"name": ...}}``); "" when
    the call has none. Lenient: it reads stored metadata as well as parsed messages.

    Example:
        >>> tool_call_name({"id": "c1", "function": {"name": "search"}}), tool_call_name(7)
        ('search', '')
    """
    function = call.get("function") if isinstance(call, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    return name if isinstance(name, str) else ""


def _call_key(call: Any) -> str:
    if not isinstance(call, dict):
        return str(call)
    return str(call.get("id") or tool_call_name(call) or "")


def fingerprint(message: dict[str, Any]) -> tuple[str, ...]:
    role = str(message.get("role"))
    if role == "tool" and message.get("tool_call_id"):
        return ("tool", str(message["tool_call_id"]))
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        return ("calls", *[_call_key(call) for call in calls])
    return (role, text_of(message.get("content")).strip())
