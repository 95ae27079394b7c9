"""Tokens a rollout's model calls used, read from where each reader keeps them.

The readers keep a step's usage as its trace wrote it; this is the one place that knows
those shapes, so that pages and the API can show the tokens of a step and of a rollout
whatever the trace format:

- OpenTelemetry GenAI spans (``otlp_json``, ``otel_sdk_spans``, live OTLP): the span's
  attributes ``gen_ai.usage.input_tokens`` / ``output_tokens`` (older conventions:
  ``prompt_tokens`` / ``completion_tokens``);
- OpenInference: attributes ``llm.token_count.prompt`` / ``llm.token_count.completion``;
- Langfuse: the observation's ``usageDetails`` (or older ``usage``) ``input`` / ``output``;
- LangSmith: the run's ``prompt_tokens`` / ``completion_tokens`` or ``usage_metadata``;
- OpenHands: ``tool_call_metadata.model_response.usage``, which every step of one model
  response repeats (a call and its result): the response id counts it once per rollout.

Example:
    >>> step_usage({"attributes": {"gen_ai.usage.input_tokens": 269,
    ...                            "gen_ai.usage.output_tokens": 16}})
    TokenUsage(input=269, output=16, calls=1)
    >>> step_usage({"attributes": {"gen_ai.operation.name": "chat"}}) is None
    True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: Where a rollout's total is kept in its metadata, computed when it is stored.
ROLLOUT_KEY = "faultline.token_usage"

# (input key, output key) pairs of flat attribute maps, the current convention first.
_ATTRIBUTE_PAIRS = (
    ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"),
    ("gen_ai.usage.prompt_tokens", "gen_ai.usage.completion_tokens"),
    ("llm.token_count.prompt", "llm.token_count.completion"),
)
# (object key, input key, output key) inside a span's own fields.
_NESTED = (
    ("usageDetails", "input", "output"),
    ("usage", "input", "output"),
    ("usage_metadata", "input_tokens", "output_tokens"),
    ("usage", "prompt_tokens", "completion_tokens"),
)


@dataclass(frozen=True)
class TokenUsage:
    input: int
    output: int
    calls: int = 1

    def as_dict(self) -> dict[str, int]:
        return {"input": self.input, "output": self.output, "calls": self.calls}


def _count(value: Any) -> int | None:
    """A token count: a non-negative whole number (OTLP/JSON writes integers as text)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, float) and value >= 0 and value.is_integer():
        return int(value)
    return None


def _pair(source: Any, input_key: str, output_key: str) -> TokenUsage | None:
    if not isinstance(source, Mapping):
        return None
    tokens_in, tokens_out = _count(source.get(input_key)), _count(source.get(output_key))
    if tokens_in is None and tokens_out is None:
        return None
    return TokenUsage(tokens_in or 0, tokens_out or 0)


def _keyed_usage(metadata: Mapping[str, Any]) -> tuple[str, TokenUsage] | None:
    """The usage and a key naming the model response it belongs to ("" for one step's)."""
    attributes = metadata.get("attributes")
    for input_key, output_key in _ATTRIBUTE_PAIRS:
        found = _pair(attributes, input_key, output_key)
        if found:
            return "", found
    span = metadata.get("span")
    if isinstance(span, Mapping):
        found = _pair(span, "prompt_tokens", "completion_tokens")
        if found:
            return "", found
        for key, input_key, output_key in _NESTED:
            found = _pair(span.get(key), input_key, output_key)
            if found:
                return "", found
    call = metadata.get("tool_call_metadata")
    response = call.get("model_response") if isinstance(call, Mapping) else None
    if isinstance(response, Mapping):
        found = _pair(response.get("usage"), "prompt_tokens", "completion_tokens")
        if found:
            return str(response.get("id") or ""), found
    return None


def step_usage(metadata: Any) -> TokenUsage | None:
    """The tokens of the model call a step records, None when it records none."""
    if not isinstance(metadata, Mapping):
        return None
    keyed = _keyed_usage(metadata)
    return keyed[1] if keyed else None


def rollout_usage(step_metadata: Iterable[Any]) -> TokenUsage | None:
    """The tokens of every model call of a rollout's steps, a response that several steps
    repeat counted once; None when no step records any.

    Example:
        >>> response = {"tool_call_metadata": {"model_response": {"id": "r1",
        ...     "usage": {"prompt_tokens": 3486, "completion_tokens": 1135}}}}
        >>> rollout_usage([response, response, {"attributes": {"llm.token_count.prompt": 10}}])
        TokenUsage(input=3496, output=1135, calls=2)
    """
    seen: set[str] = set()
    tokens_in = tokens_out = calls = 0
    for metadata in step_metadata:
        if not isinstance(metadata, Mapping):
            continue
        keyed = _keyed_usage(metadata)
        if keyed is None:
            continue
        key, usage = keyed
        if key:
            if key in seen:
                continue
            seen.add(key)
        tokens_in, tokens_out, calls = tokens_in + usage.input, tokens_out + usage.output, calls + 1
    return TokenUsage(tokens_in, tokens_out, calls) if calls else None


def stored_rollout_usage(metadata: Any) -> TokenUsage | None:
    """The total kept in a stored rollout's metadata (``ROLLOUT_KEY``), if any."""
    found = metadata.get(ROLLOUT_KEY) if isinstance(metadata, Mapping) else None
    if not isinstance(found, Mapping):
        return None
    counts = [_count(found.get(key)) for key in ("input", "output", "calls")]
    if any(count is None for count in counts):
        return None
    return TokenUsage(*(int(count) for count in counts if count is not None))
