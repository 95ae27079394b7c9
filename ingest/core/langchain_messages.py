"""LangChain's serialised messages, and the messages of LangSmith's llm runs and Langfuse's
generations, in the OpenAI shape that ingest.core.chat reads (ingest.core.langsmith and
ingest.core.langfuse: both record what LangChain's callbacks hand them).

LangChain writes a message in several shapes: ``{"lc": 1, "type": "constructor", "id":
[..., "AIMessage"], "kwargs": {...}}``, ``{"type": "ai", ...}`` (or with its fields under
``data``) and ``["user", "text"]`` pairs; an llm run's inputs hold them as a batch of one
(``[[...]]``) or as a plain list, and its outputs as ``generations`` (an ``LLMResult``),
OpenAI ``choices``, an Anthropic message or a bare message.
"""

from __future__ import annotations

from typing import Any

from ingest.core.validate import text_of

_MESSAGE_KEYS = {"role", "content", "tool_calls"}


def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and bool(_MESSAGE_KEYS & value.keys())


def _tool_call(call: Any) -> Any:
    """LangChain's ``{id, name, args}`` as OpenAI's call; anything else as it is (the chat
    rules refuse what is not a call, naming it)."""
    if isinstance(call, dict) and "function" not in call and "name" in call:
        return {
            "id": call.get("id") or "",
            "type": "function",
            "function": {
                "name": call["name"],
                "arguments": call.get("args", call.get("arguments")),
            },
        }
    return call


def _message(item: Any, default_role: str) -> dict[str, Any]:
    if isinstance(item, str):
        return {"role": default_role, "content": item}
    if not _is_message(item):
        return {"role": default_role, "content": text_of(item)}
    message = dict(item)
    message.setdefault("role", default_role)
    if not isinstance(message.get("content"), (str, list, type(None))):
        message["content"] = text_of(message["content"])
    calls = message.get("tool_calls")
    kwargs = message.get("additional_kwargs")
    if calls is None and isinstance(kwargs, dict) and isinstance(kwargs.get("tool_calls"), list):
        calls = kwargs["tool_calls"]
        rest = {k: v for k, v in kwargs.items() if k != "tool_calls"}
        if rest:
            message["additional_kwargs"] = rest
        else:
            del message["additional_kwargs"]
    if isinstance(calls, list):
        message["tool_calls"] = [_tool_call(call) for call in calls]
    return message


def chat_messages(
    value: Any, *, field: str, default_role: str
) -> tuple[list[dict[str, Any]], str, dict[str, Any]]:
    """A generation's ``input`` or ``output`` as OpenAI-style messages, the field they were
    read from, and the input object's other keys (tool definitions...).

    Example:
        >>> chat_messages({"messages": [{"role": "user", "content": "hi"}], "tools": []},
        ...               field="input", default_role="user")
        ([{'role': 'user', 'content': 'hi'}], 'input.messages', {'tools': []})
        >>> chat_messages("Paris.", field="output", default_role="assistant")[0]
        [{'role': 'assistant', 'content': 'Paris.'}]
    """
    rest: dict[str, Any] = {}
    if (
        isinstance(value, dict)
        and not _is_message(value)
        and isinstance(value.get("messages"), list)
    ):
        rest = {k: v for k, v in value.items() if k != "messages"}
        value, field = value["messages"], f"{field}.messages"
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], list):
        value, field = value[0], f"{field}[0]"
    if value is None or value == "":
        return [], field, rest
    items = value if isinstance(value, list) else [value]
    return [_message(item, default_role) for item in items], field, rest


# LangChain's message classes (the last item of a serialised message's ``id``) and
# ``type`` values, by the OpenAI role they are.
_CLASS_ROLES = {
    "HumanMessage": "user",
    "HumanMessageChunk": "user",
    "AIMessage": "assistant",
    "AIMessageChunk": "assistant",
    "SystemMessage": "system",
    "SystemMessageChunk": "system",
    "ToolMessage": "tool",
    "ToolMessageChunk": "tool",
    "FunctionMessage": "function",
    "FunctionMessageChunk": "function",
    "ChatMessage": "",
    "ChatMessageChunk": "",
}
_TYPE_ROLES = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
    "function": "function",
    "chat": "",
    **_CLASS_ROLES,
}
_PAIR_ROLES = {
    "human": "user",
    "user": "user",
    "ai": "assistant",
    "assistant": "assistant",
    "system": "system",
}
_MESSAGE_FIELDS = ("name", "tool_call_id", "additional_kwargs", "response_metadata")


def _langchain_fields(item: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(role, fields) of a LangChain message in one of its serialised shapes, else None."""
    ident = item.get("id")
    if item.get("lc") == 1 and item.get("type") == "constructor" and isinstance(ident, list):
        kind = ident[-1] if ident else None
        kwargs = item.get("kwargs")
        if isinstance(kind, str) and kind in _CLASS_ROLES and isinstance(kwargs, dict):
            return _CLASS_ROLES[kind], kwargs
        return None
    kind = item.get("type")
    if "role" in item or not isinstance(kind, str) or kind not in _TYPE_ROLES:
        return None
    data = item.get("data")
    fields = data if isinstance(data, dict) and "content" not in item else item
    return _TYPE_ROLES[kind], fields


def plain_message(item: Any) -> Any:
    """A LangChain message as a ``{role, content, ...}`` message; anything else as it is."""
    if isinstance(item, list) and _is_pair(item):
        return {"role": _PAIR_ROLES[item[0]], "content": item[1]}
    if not isinstance(item, dict):
        return item
    found = _langchain_fields(item)
    if found is None:
        return item
    role, fields = found
    role = role or (fields.get("role") if isinstance(fields.get("role"), str) else "") or "user"
    content = fields.get("content")
    message: dict[str, Any] = {"role": role, "content": content}
    for key in _MESSAGE_FIELDS:
        if fields.get(key) not in (None, "", {}):
            message[key] = fields[key]
    calls = fields.get("tool_calls")
    if isinstance(calls, list) and calls:
        message["tool_calls"] = calls
        if isinstance(content, list):
            # Anthropic's AIMessage has its calls twice: as tool_use blocks and tool_calls.
            message["content"] = [
                part
                for part in content
                if not (isinstance(part, dict) and part.get("type") == "tool_use")
            ]
    if role == "tool" and fields.get("status") == "error":
        message["is_error"] = True
    return message


def messages_of(value: Any, *, field: str, default_role: str) -> tuple[list[dict[str, Any]], str]:
    """Messages in any shape LangSmith records them as OpenAI-style messages, and the field
    they were read from.

    Example:
        >>> messages_of([[{"lc": 1, "type": "constructor",
        ...     "id": ["langchain", "schema", "messages", "AIMessage"],
        ...     "kwargs": {"content": "", "tool_calls": [
        ...         {"name": "search", "args": {"q": "Oslo"}, "id": "call_1"}]}}]],
        ...     field="inputs.messages", default_role="user")
        ([{'role': 'assistant', 'content': '', 'tool_calls': [{'id': 'call_1', 'type': 'function', 'function': {'name': 'search', 'arguments': {'q': 'Oslo'}}}]}], 'inputs.messages[0]')
    """
    batches = isinstance(value, list) and all(isinstance(item, list) for item in value)
    if value and batches and not all(_is_pair(item) for item in value):
        # LangChain's batch of message lists (one list per prompt; one run each).
        value, field = [m for batch in value for m in batch], f"{field}[0]"
    if isinstance(value, list):
        value = [plain_message(item) for item in value]
    else:
        value = plain_message(value)
    messages, field, _ = chat_messages(value, field=field, default_role=default_role)
    return messages, field


def _is_pair(item: list[Any]) -> bool:
    """``["user", "text"]``: a message as LangChain accepts it, a (role, content) pair."""
    return (
        len(item) == 2
        and isinstance(item[0], str)
        and item[0] in _PAIR_ROLES
        and isinstance(item[1], str)
    )


def llm_inputs(inputs: dict[str, Any]) -> tuple[list[dict[str, Any]], str, dict[str, Any]]:
    """An llm run's input messages, their field, and the inputs' other keys."""
    key = next((k for k in ("messages", "prompts", "prompt") if k in inputs), "input")
    rest = {k: v for k, v in inputs.items() if k not in (key, "system")}
    messages, field = messages_of(inputs.get(key), field=f"inputs.{key}", default_role="user")
    system = inputs.get("system")
    if system not in (None, "", []):
        messages = [{"role": "system", "content": text_of(system)}, *messages]
    return messages, field, rest


def _generation_message(generation: Any) -> Any:
    if isinstance(generation, dict) and "message" in generation:
        return generation["message"]
    if isinstance(generation, dict) and isinstance(generation.get("text"), str):
        return {"role": "assistant", "content": generation["text"]}
    return generation


def _choice_message(choice: Any) -> Any:
    """An OpenAI choice's message, with its ``finish_reason`` (and ``logprobs``) kept."""
    if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
        rest = {k: v for k, v in choice.items() if k not in ("message", "index") and v}
        return {**choice["message"], **rest}
    return _generation_message(choice)


def llm_outputs(outputs: dict[str, Any]) -> tuple[list[dict[str, Any]], str, dict[str, Any]]:
    """An llm run's output messages, their field, and the outputs' other keys."""
    if "role" in outputs and "content" in outputs:
        messages, field = messages_of(outputs, field="outputs", default_role="assistant")
        return messages, field, {}
    value: Any = None
    key = next(
        (k for k in ("generations", "choices", "message", "messages", "output") if k in outputs),
        "",
    )
    if key == "generations":
        generations = outputs[key]
        if isinstance(generations, list) and generations and isinstance(generations[0], list):
            generations = [item for batch in generations for item in batch]
        if isinstance(generations, list):
            value = [_generation_message(item) for item in generations]
    elif key == "choices" and isinstance(outputs[key], list):
        value = [_choice_message(choice) for choice in outputs[key]]
    elif key:
        value = outputs[key]
    rest = {k: v for k, v in outputs.items() if k != key}
    if not key:
        return [], "outputs", rest
    messages, field = messages_of(value, field=f"outputs.{key}", default_role="assistant")
    return messages, field, rest
