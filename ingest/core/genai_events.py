"""What GenAI spans say through span *events*, and the outcome a trace declares.

Messages. Before the ``gen_ai.input.messages`` / ``gen_ai.output.messages`` attributes,
instrumentations recorded messages as span events; they are still common:

- ``gen_ai.content.prompt`` (attribute ``gen_ai.prompt``, JSON text of messages) and
  ``gen_ai.content.completion`` (``gen_ai.completion``);
- one event per message: ``gen_ai.system.message``, ``gen_ai.user.message``,
  ``gen_ai.assistant.message``, ``gen_ai.tool.message`` (``content``, ``id`` = the tool
  call id, ``tool_calls``) and ``gen_ai.choice`` (``message`` or ``content``,
  ``finish_reason``, ``tool_calls``) for the output;
- ``gen_ai.client.inference.operation.details``, which carries the current attributes.

:func:`messages_from_events` turns them into the current attributes, which the step
builder (ingest.core.genai) reads; attributes already on the span win.

Outcome. ``faultline.outcome`` (success/failure) and ``faultline.reward`` (a number;
>= 1 is a success) declare it (:func:`declared_outcome`). A ``gen_ai.evaluation.result``
event (``gen_ai.evaluation.name``, ``.score.value``, ``.score.label``, ``.explanation``)
is kept as an evaluation; its label decides the outcome only when it is a plain pass or
fail word (:func:`evaluation_outcome`): scores have no common scale, so a number alone
decides nothing. A yes/no (true/false) label answers whatever its evaluation asks, so it
decides only when the evaluation's name asks about success ("task_success", "resolved"):
"hallucination: yes" is no success.

Example:
    >>> event = {"name": "gen_ai.user.message", "attributes": {"content": "hi"}}
    >>> messages_from_events({}, [event])
    {'gen_ai.input.messages': [{'role': 'user', 'content': 'hi'}]}
"""

from __future__ import annotations

import re
from typing import Any

from ingest.core.otlp_wire import attributes_dict
from ingest.core.records import Outcome
from ingest.core.spans import json_text

OUTCOME_ATTRIBUTE = "faultline.outcome"
REWARD_ATTRIBUTE = "faultline.reward"
EVALUATION_EVENT = "gen_ai.evaluation.result"
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
CURRENT_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions")
_ROLE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
PASS_WORDS = {"pass", "passed", "success", "succeeded", "correct", "resolved"}
FAIL_WORDS = {"fail", "failed", "failure", "incorrect", "error", "unresolved"}
ANSWER_WORDS = {"yes": True, "true": True, "no": False, "false": False}
# Evaluation names that ask "did it succeed?", the only question a yes/no label answers
# with the rollout's outcome.
_SUCCESS_QUESTION = re.compile(r"succe|pass|correct|resolv|solv|complet|accomplish|achiev", re.I)


def _event_attributes(event: dict[str, Any]) -> dict[str, Any]:
    """Event attributes as a dict: OTLP ``[{key, value}]`` pairs or an SDK's flat dict."""
    raw = event.get("attributes")
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, list):
        return attributes_dict(raw, record=str(event.get("name", "event")), field="attributes")
    return {}


def span_events(extra: dict[str, Any]) -> list[dict[str, Any]]:
    """The span's events with decoded attributes: ``[{name, attributes, ...}]``."""
    raw = extra.get("events")
    events = []
    for event in raw if isinstance(raw, list) else []:
        if isinstance(event, dict):
            events.append({**event, "attributes": _event_attributes(event)})
    return events


def error_text(span_attributes: dict[str, Any], status_message: str, extra: dict[str, Any]) -> str:
    """What a failed span says went wrong, for a tool result that recorded no output: its
    status description, else its ``exception`` event (type: message), else ``error.type``.

    >>> error_text({}, "", {"events": [{"name": "exception", "attributes": {
    ...     "exception.type": "ValueError", "exception.message": "no seats"}}]})
    'ValueError: no seats'
    >>> error_text({"error.type": "timeout"}, "", {})
    'timeout'
    """
    if status_message:
        return status_message
    for event in span_events(extra):
        if event.get("name") == "exception":
            attributes = event["attributes"]
            kind = str(attributes.get("exception.type") or "")
            message = str(attributes.get("exception.message") or "")
            text = f"{kind}: {message}" if kind and message else kind or message
            if text:
                return text
    return str(span_attributes.get("error.type") or "")


def _message_of(role: str, attributes: dict[str, Any]) -> dict[str, Any]:
    if isinstance(attributes.get("message"), dict):
        message = dict(attributes["message"])
        message.setdefault("role", role)
        return message
    message = {"role": attributes.get("role") or role, "content": attributes.get("content", "")}
    if attributes.get("id") and message["role"] == "tool":
        message["tool_call_id"] = str(attributes["id"])
    calls = json_text(attributes.get("tool_calls"), record="event", field="tool_calls")
    if isinstance(calls, list) and calls:
        message["tool_calls"] = calls
    return message


def messages_from_events(
    attributes: dict[str, Any], events: list[dict[str, Any]]
) -> dict[str, Any]:
    """The message attributes a span's events carry, for keys the span does not have."""
    found: dict[str, Any] = {}
    inputs: list[Any] = []
    outputs: list[Any] = []
    for event in events:
        name, event_attributes = event.get("name"), event.get("attributes") or {}
        if name == DETAILS_EVENT:
            found.update({k: event_attributes[k] for k in CURRENT_KEYS if k in event_attributes})
        elif name == "gen_ai.content.prompt" and "gen_ai.prompt" in event_attributes:
            found["gen_ai.input.messages"] = event_attributes["gen_ai.prompt"]
        elif name == "gen_ai.content.completion" and "gen_ai.completion" in event_attributes:
            found["gen_ai.output.messages"] = event_attributes["gen_ai.completion"]
        elif name in _ROLE_EVENTS:
            inputs.append(_message_of(_ROLE_EVENTS[name], event_attributes))
        elif name == "gen_ai.choice":
            outputs.append(_message_of("assistant", event_attributes))
    if inputs:
        found.setdefault("gen_ai.input.messages", inputs)
    if outputs:
        found.setdefault("gen_ai.output.messages", outputs)
    return {k: v for k, v in found.items() if k not in attributes}


def evaluations_of(events: list[dict[str, Any]], *, span_id: str) -> list[dict[str, Any]]:
    """The ``gen_ai.evaluation.result`` events of one span, as plain dicts."""
    evaluations = []
    for event in events:
        if event.get("name") != EVALUATION_EVENT:
            continue
        attributes = event.get("attributes") or {}
        evaluation: dict[str, Any] = {"span_id": span_id}
        for key in ("name", "score.value", "score.label", "explanation"):
            if f"gen_ai.evaluation.{key}" in attributes:
                evaluation[key.replace(".", "_")] = attributes[f"gen_ai.evaluation.{key}"]
        evaluations.append(evaluation)
    return evaluations


def evaluation_outcome(evaluations: list[dict[str, Any]]) -> str:
    """Success or failure when the last evaluation with a pass/fail label says so.

    >>> evaluation_outcome([{"score_label": "Fail"}])
    'failure'
    >>> evaluation_outcome([{"name": "task_completed", "score_label": "no"}])
    'failure'
    >>> evaluation_outcome([{"name": "hallucination", "score_label": "yes"}])
    'unknown'
    """
    for evaluation in reversed(evaluations):
        label = str(evaluation.get("score_label", "")).strip().lower()
        if label in PASS_WORDS:
            return Outcome.SUCCESS
        if label in FAIL_WORDS:
            return Outcome.FAILURE
        if label in ANSWER_WORDS and _SUCCESS_QUESTION.search(str(evaluation.get("name", ""))):
            return Outcome.SUCCESS if ANSWER_WORDS[label] else Outcome.FAILURE
    return Outcome.UNKNOWN


def declared_outcome(attributes: dict[str, Any]) -> tuple[str, float | None] | None:
    """The outcome that ``faultline.outcome`` / ``faultline.reward`` declare, if any.

    >>> declared_outcome({"faultline.reward": 0.5})
    ('failure', 0.5)
    """
    declared = attributes.get(OUTCOME_ATTRIBUTE)
    reward = attributes.get(REWARD_ATTRIBUTE)
    if isinstance(reward, bool) or not isinstance(reward, (int, float)) or reward != reward:
        reward = None
    if declared in (Outcome.SUCCESS, Outcome.FAILURE):
        return str(declared), None if reward is None else float(reward)
    if reward is not None:
        return (Outcome.SUCCESS if reward >= 1.0 else Outcome.FAILURE), float(reward)
    return None
