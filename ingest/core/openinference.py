"""OpenInference span attributes renamed to the OpenTelemetry GenAI conventions.

Shared by the OpenInference span-JSONL parser and the OTLP receiver (an
OpenInference-instrumented framework exports the same attributes over OTLP), so that both
are then built into steps by ingest.core.genai.

- LLM spans: ``llm.input_messages.N.message.*`` and ``llm.output_messages.N.message.*``
  (``role``, ``content`` or ``contents.M.message_content.text``, ``name``,
  ``tool_call_id``, ``tool_calls.M.tool_call.{id, function.name, function.arguments}``)
  become ``gen_ai.input.messages`` / ``gen_ai.output.messages``; ``llm.model_name`` the
  requested model;
- TOOL spans: ``tool.name``, ``tool.parameters`` (or ``input.value``), ``output.value``,
  ``tool_call.id``; RETRIEVER spans are read as tools named after the span;
- AGENT spans: ``agent.name`` (else the span name) names the agent of everything below.

Example:
    >>> to_genai("TOOL", "search", {"tool.parameters": "{}", "output.value": "3 hits"})
    {'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'search', 'gen_ai.tool.call.arguments': '{}', 'gen_ai.tool.call.result': '3 hits'}
"""

from __future__ import annotations

import re
from typing import Any

SPAN_KIND_ATTRIBUTE = "openinference.span.kind"
_MESSAGE = re.compile(r"^llm\.(input|output)_messages\.(\d+)\.message\.(.+)$")
_CALL = re.compile(r"^tool_calls\.(\d+)\.tool_call\.(.+)$")
_CONTENT = re.compile(r"^contents\.(\d+)\.message_content\.(.+)$")
_OPERATIONS = {
    "LLM": "chat",
    "TOOL": "execute_tool",
    "RETRIEVER": "execute_tool",
    "AGENT": "invoke_agent",
}


def _messages(attributes: dict[str, Any], direction: str) -> tuple[list[dict[str, Any]], set[str]]:
    numbered: dict[int, dict[str, Any]] = {}
    consumed: set[str] = set()
    for key, value in attributes.items():
        match = _MESSAGE.match(key)
        if not match or match.group(1) != direction:
            continue
        consumed.add(key)
        message = numbered.setdefault(int(match.group(2)), {"_calls": {}, "_contents": {}})
        rest = match.group(3)
        call = _CALL.match(rest)
        content = _CONTENT.match(rest)
        if call:
            message["_calls"].setdefault(int(call.group(1)), {})[call.group(2)] = value
        elif content:
            message["_contents"].setdefault(int(content.group(1)), {})[content.group(2)] = value
        else:
            message[rest] = value
    messages = []
    for _, message in sorted(numbered.items()):
        calls = message.pop("_calls")
        contents = message.pop("_contents")
        if "content" not in message and contents:
            texts = [
                part.get("text")
                for _, part in sorted(contents.items())
                if isinstance(part.get("text"), str)
            ]
            message["content"] = "\n".join(texts)
            others = [
                part
                for _, part in sorted(contents.items())
                if not isinstance(part.get("text"), str)
            ]
            if others:
                message["other_contents"] = others
        message.setdefault("role", "user" if direction == "input" else "assistant")
        if calls:
            message["tool_calls"] = [
                {
                    "id": str(call.get("id") or ""),
                    "type": "function",
                    "function": {
                        "name": str(call.get("function.name") or ""),
                        "arguments": call.get("function.arguments"),
                    },
                }
                for _, call in sorted(calls.items())
            ]
        messages.append(message)
    return messages, consumed


def to_genai(kind: str, name: str, attributes: dict[str, Any]) -> dict[str, Any]:
    """OpenInference attributes renamed to the GenAI conventions (the rest kept as they are)."""
    kind = kind.upper()
    translated = dict(attributes)
    translated["gen_ai.operation.name"] = _OPERATIONS.get(kind, kind.lower() or "span")
    if kind == "LLM":
        inputs, used_in = _messages(attributes, "input")
        outputs, used_out = _messages(attributes, "output")
        for key in used_in | used_out:
            translated.pop(key, None)
        if inputs:
            translated["gen_ai.input.messages"] = inputs
        if outputs:
            translated["gen_ai.output.messages"] = outputs
        elif "output.value" in attributes:
            translated["gen_ai.output.messages"] = [
                {"role": "assistant", "content": attributes["output.value"]}
            ]
            translated.pop("output.value")
        if "llm.model_name" in attributes:
            translated["gen_ai.request.model"] = translated.pop("llm.model_name")
    elif kind in ("TOOL", "RETRIEVER"):
        translated["gen_ai.tool.name"] = translated.pop("tool.name", None) or name
        if "tool.parameters" in attributes:
            translated["gen_ai.tool.call.arguments"] = translated.pop("tool.parameters")
        elif "input.value" in attributes:
            translated["gen_ai.tool.call.arguments"] = translated.pop("input.value")
        if "output.value" in attributes:
            translated["gen_ai.tool.call.result"] = translated.pop("output.value")
        call_id = translated.pop("tool_call.id", None) or translated.pop(
            "message.tool_call_id", None
        )
        if call_id is not None:
            translated["gen_ai.tool.call.id"] = call_id
    elif kind == "AGENT":
        translated["gen_ai.agent.name"] = translated.pop("agent.name", None) or name
    if "agent.name" in translated and kind != "AGENT":
        translated["gen_ai.agent.name"] = translated.pop("agent.name")
    return translated
