"""Other providers' chat messages in the OpenAI shape that ``ingest.core.chat`` reads.

Agents log the messages their model client speaks, and not every client speaks OpenAI's
current shape. Each message is rewritten here, one at a time and only when it is
recognised, into the shape ``chat_messages_to_steps`` turns into steps; a message that is
not recognised is passed on untouched, so a malformed one is still refused there with its
field named. What is read:

- **Anthropic Messages**: an assistant's ``tool_use`` blocks become its ``tool_calls``
  (the ``input`` object as the arguments); a user message's ``tool_result`` blocks become
  ``tool`` messages (their ``is_error`` kept), followed by the rest of that message, if
  any, as the user's own message. Its other blocks stay content, which
  ``ingest.core.validate.text_of`` reads (``thinking`` as its text).
- **Gemini**: role ``model`` is the assistant; ``parts`` are the content (``text``;
  ``functionCall`` as a tool call; ``functionResponse`` as a tool message).
- **OpenAI, older**: an assistant's ``function_call`` is its one tool call and a
  ``function`` message its result; role ``developer`` is a system message.

Each rewritten message keeps the index of the message it came from, so steps and errors
name the position in the file.

Example:
    >>> [(i, m["role"], m.get("tool_calls", [{}])[0].get("id")) for i, m in openai_shaped([
    ...     {"role": "assistant", "content": [
    ...         {"type": "text", "text": "Looking it up."},
    ...         {"type": "tool_use", "id": "t1", "name": "search", "input": {"q": "x"}}]},
    ...     {"role": "user", "content": [
    ...         {"type": "tool_result", "tool_use_id": "t1", "content": "no hits", "is_error": True},
    ...         {"type": "text", "text": "Try again."}]}], record="line 1")]
    [(0, 'assistant', 't1'), (1, 'tool', None), (1, 'user', None)]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ingest.core.errors import TraceParseError
from ingest.core.validate import text_of

MSG_CALL_NAME = "A tool call needs its tool's name as text."

_ANTHROPIC_CALL = "tool_use"
_ANTHROPIC_RESULT = "tool_result"


def _blocks(message: dict[str, Any]) -> list[Any] | None:
    content = message.get("content")
    return content if isinstance(content, list) else None


def _block_type(block: Any) -> str:
    kind = block.get("type") if isinstance(block, dict) else None
    return kind if isinstance(kind, str) else ""


def _named(call: dict[str, Any], *, record: str, field: str) -> str:
    name = call.get("name")
    if not isinstance(name, str) or not name:
        raise TraceParseError(MSG_CALL_NAME, record=record, field=field + ".name")
    return name


def _anthropic_assistant(
    message: dict[str, Any], blocks: list[Any], *, record: str, field: str
) -> dict[str, Any]:
    calls, kept = [], []
    for number, block in enumerate(blocks):
        kind = _block_type(block)
        if kind == _ANTHROPIC_CALL:
            name = _named(block, record=record, field=f"{field}.content[{number}]")
            calls.append(
                {
                    "id": block.get("id") if isinstance(block.get("id"), str) else "",
                    "type": "function",
                    "function": {"name": name, "arguments": block.get("input")},
                }
            )
        else:
            kept.append(block)
    shaped = {k: v for k, v in message.items() if k != "content"}
    shaped["content"] = kept or None
    if calls:
        shaped["tool_calls"] = list(message.get("tool_calls") or []) + calls
    return shaped


def _anthropic_results(message: dict[str, Any], blocks: list[Any]) -> list[dict[str, Any]]:
    results, rest = [], []
    for block in blocks:
        if _block_type(block) == _ANTHROPIC_RESULT:
            result: dict[str, Any] = {
                "role": "tool",
                "tool_call_id": block.get("tool_use_id")
                if isinstance(block.get("tool_use_id"), str)
                else "",
                "content": block.get("content"),
            }
            if block.get("is_error") is True:
                result["is_error"] = True
            results.append(result)
        else:
            rest.append(block)
    if rest:
        results.append({**message, "content": rest})
    return results


def _gemini(message: dict[str, Any], *, record: str, field: str) -> list[dict[str, Any]]:
    role = "assistant" if message.get("role") == "model" else message.get("role")
    texts: list[Any] = []
    calls: list[dict[str, Any]] = []
    responses: list[dict[str, Any]] = []
    for number, part in enumerate(message["parts"]):
        if not isinstance(part, dict):
            texts.append(part)
        elif isinstance(part.get("functionCall"), dict):
            call = part["functionCall"]
            name = _named(call, record=record, field=f"{field}.parts[{number}].functionCall")
            calls.append(
                {
                    "id": call.get("id") if isinstance(call.get("id"), str) else "",
                    "type": "function",
                    "function": {"name": name, "arguments": call.get("args")},
                }
            )
        elif isinstance(part.get("functionResponse"), dict):
            response = part["functionResponse"]
            responses.append(
                {
                    "role": "tool",
                    "tool_call_id": response.get("id")
                    if isinstance(response.get("id"), str)
                    else "",
                    "name": response.get("name") if isinstance(response.get("name"), str) else "",
                    "content": text_of(response.get("response")),
                }
            )
        elif isinstance(part.get("text"), str):
            texts.append({"type": "text", "text": part["text"]})
        else:
            texts.append(part)
    shaped = {k: v for k, v in message.items() if k != "parts"}
    shaped.update(role=role, content=texts or None)
    if calls:
        shaped["tool_calls"] = calls
    out = responses[:]
    if texts or calls or not responses:
        out.append(shaped)
    return out


def _legacy_function_call(message: dict[str, Any], *, record: str, field: str) -> dict[str, Any]:
    call = message["function_call"]
    name = _named(call, record=record, field=f"{field}.function_call")
    shaped = {k: v for k, v in message.items() if k != "function_call"}
    shaped["tool_calls"] = list(message.get("tool_calls") or []) + [
        {
            "id": "",
            "type": "function",
            "function": {"name": name, "arguments": call.get("arguments")},
        }
    ]
    return shaped


def shaped_message(message: Any, *, record: str, field: str) -> list[dict[str, Any]] | None:
    """One message in the OpenAI shape (several for a turn of tool results), or None when
    it is already in that shape or not recognised. A recognised tool call without a name
    is refused, naming its field in the provider's shape (``field``: the message's)."""
    if not isinstance(message, dict):
        return None
    role = message.get("role")
    if "parts" in message and "content" not in message and isinstance(message["parts"], list):
        return _gemini(message, record=record, field=field)
    blocks = _blocks(message)
    kinds = {_block_type(block) for block in blocks} if blocks is not None else set()
    if role == "assistant" and _ANTHROPIC_CALL in kinds:
        return [_anthropic_assistant(message, blocks or [], record=record, field=field)]
    if _ANTHROPIC_RESULT in kinds:
        return _anthropic_results(message, blocks or [])
    if role == "assistant" and isinstance(message.get("function_call"), dict):
        return [_legacy_function_call(message, record=record, field=field)]
    if role == "function":
        return [{**message, "role": "tool", "tool_call_id": message.get("tool_call_id", "")}]
    if role == "developer":
        return [{**message, "role": "system"}]
    return None


def openai_shaped(
    messages: list[Any], *, record: str = "", field: str = "messages"
) -> Iterator[tuple[int, Any]]:
    """(index in ``messages``, message in the OpenAI shape) for every message."""
    for position, message in enumerate(messages):
        shaped = shaped_message(message, record=record, field=f"{field}[{position}]")
        if shaped is None:
            yield position, message
        else:
            for one in shaped:
                yield position, one
