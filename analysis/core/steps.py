"""The wrong steps that get clustered, and the text each one is embedded as.

A :class:`WrongStep` is one step of a rollout chosen for clustering (a labelled decisive
step, a step of a conformal set, a step with an error signal...). Its text combines who
acted, what tool it called with which arguments, what it said, and a short window of
context: the request just before it and the observation just after it.

Example:
    >>> step = WrongStep(key="7", rollout="r1", index=3, agent="assistant", role="assistant",
    ...                  kind="tool_call", tool_name="book_reservation",
    ...                  tool_args={"user_id": "mia_li_3668"}, content="",
    ...                  before="Please book it.", after="Error: not enough seats")
    >>> step_text(step)
    'assistant/assistant tool_call book_reservation(user_id=mia_li_3668) | request: Please book it. | observation: Error: not enough seats'
    >>> content_hash("abc")[:12]
    'ba7816bf8f01'
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

#: Characters kept from each part of a step's text. Long tool outputs and pasted web
#: pages say little more after their first few hundred characters, and a fixed budget
#: keeps the embedding cost per step bounded.
CONTENT_CHARS = 600
ARGS_CHARS = 240
CONTEXT_CHARS = 200

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_SPACE = re.compile(r"\s+")


class Source:
    """Why a step is in the set of wrong steps."""

    LABEL = "label"
    CONFORMAL = "conformal"
    ERROR = "error"
    # An agent action showing a behaviour signal, in a failed rollout that has neither a
    # label nor a prediction set (its agent system makes no claim yet).
    SIGNAL = "signal"
    FAILED = "failed"  # every step of a failed rollout, when the switch is on
    SUCCESS = "success"  # steps of successful rollouts, only assigned, for the lift

    ALL = (LABEL, CONFORMAL, ERROR, SIGNAL, FAILED, SUCCESS)


@dataclass(frozen=True)
class WrongStep:
    """One step to cluster, with the facts the profiles need (environment, task, model).

    ``signals`` are behaviour signal names, ``arg_sources`` where each tool argument came
    from, ``error`` the error text the step drew, ``reason`` a decisive-step label's reason
    and ``task_text`` the rollout's task, used to mask its entities.
    """

    key: str
    rollout: str
    index: int
    agent: str = ""
    role: str = ""
    kind: str = ""
    tool_name: str = ""
    tool_args: Any = None
    content: str = ""
    before: str = ""
    after: str = ""
    environment: str = ""
    task: str = ""
    policy_model: str = ""
    failed: bool = True
    weight: float = 1.0
    source: str = Source.LABEL
    # Filled by analysis.core.behaviour.with_signals; empty for callers that do not.
    signals: tuple[str, ...] = ()
    arg_sources: tuple[tuple[str, str], ...] = ()
    error: str = ""
    reason: str = ""
    task_text: str = ""
    # What came just before the step (analysis.core.selection.preceding): "user",
    # "error", "result:<tool>", "self", "agent:<name>" or "start"; names use it to tell
    # apart misbehaviours that do the same thing in different situations.
    preceded_by: str = ""
    # Whether one agent acts in the step's rollout (ingest.core.vocabulary.has_one_agent):
    # then :func:`actor` compares it by its role, whatever name its format gave it.
    one_agent: bool = False


def actor(step: WrongStep) -> str:
    """Who acted, as steps of different rollouts are compared: the agent's name, or its
    role when it is its rollout's only agent (a chat file calls an agent ``assistant``
    that its OpenTelemetry trace calls by its name: one agent, not two).

    >>> actor(WrongStep(key="1", rollout="r", index=0, agent="concierge", role="assistant",
    ...                 one_agent=True))
    'assistant'
    >>> actor(WrongStep(key="1", rollout="r", index=0, agent="WebSurfer", role="assistant"))
    'WebSurfer'
    """
    if step.one_agent and step.role:
        return step.role
    return step.agent or step.role


def clean(text: str) -> str:
    """Text with ANSI codes removed and runs of white space collapsed.

    >>> clean("a\\x1b[31m red\\x1b[0m\\n\\n  b")
    'a red b'
    """
    return _SPACE.sub(" ", _ANSI.sub("", text or "")).strip()


WORD_REACH = 40


def truncate(text: str, limit: int) -> str:
    """The text cut to about ``limit`` characters, keeping its head and its tail.

    The end of a long message often holds its conclusion ("TERMINATE", the final
    answer), so a fifth of the budget goes to the tail. Cuts fall between words when a
    space is near, so no word fragment ("ment_id" of "payment_id") reaches the
    embedding or a misbehaviour's name.

    >>> truncate("cabin=economy, flights=HAT030 HAT223, payment_id=gift_card_8190876", 40)
    'cabin=economy, flights=HAT030 … payment_id=gift_card_8190876'
    >>> truncate("abcdefghij", 6)
    'abcd … j'
    >>> truncate("short", 10)
    'short'
    """
    if len(text) <= limit:
        return text
    tail = max(1, limit // 5)
    head = max(1, limit - tail - 1)
    # The head ends at the last space within its budget, if that keeps half of it.
    space = text.rfind(" ", head // 2, head + 1)
    start = text[:space] if space != -1 else text[:head]
    # The tail starts at a word: the space before the cut if it is near (a word of up to
    # WORD_REACH characters is kept whole), else the next one.
    cut = len(text) - tail
    space = text.rfind(" ", max(cut - WORD_REACH, space + 1 if space != -1 else head), cut)
    if space == -1:
        space = text.find(" ", cut, cut + tail // 2)
    end = text[space + 1 :] if space != -1 else text[cut:]
    return f"{start} … {end}"


def args_text(args: Any) -> str:
    """Tool arguments as ``key=value`` pairs (or the raw text when they are not an object).

    >>> args_text({"b": 2, "a": "x"})
    'a=x, b=2'
    """
    if args is None or args == "":
        return ""
    if isinstance(args, dict):
        parts = []
        for name in sorted(args):
            value = args[name]
            shown = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
            parts.append(f"{name}={shown}")
        return clean(", ".join(parts))
    if isinstance(args, str):
        return clean(args)
    return clean(json.dumps(args, sort_keys=True, default=str))


def action_text(step: WrongStep) -> str:
    """What the step did, without context: agent, kind, tool call and content."""
    parts = [f"{step.agent or step.role}/{step.role}".strip("/"), step.kind]
    if step.tool_name:
        parts.append(f"{step.tool_name}({truncate(args_text(step.tool_args), ARGS_CHARS)})")
    content = truncate(clean(step.content), CONTENT_CHARS)
    text = " ".join(part for part in parts if part)
    return f"{text} {content}".strip()


def step_text(step: WrongStep) -> str:
    """The text embedded for a step: its action plus the request before and observation after."""
    text = action_text(step)
    before = truncate(clean(step.before), CONTEXT_CHARS)
    after = truncate(clean(step.after), CONTEXT_CHARS)
    if before:
        text += f" | request: {before}"
    if after:
        text += f" | observation: {after}"
    return text


def content_hash(text: str) -> str:
    """sha256 of the text: the key of the embedding cache."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def action_pattern(step: WrongStep) -> str:
    """A short label of the kind of action, used for the dominant pattern of a cluster.

    >>> action_pattern(WrongStep(key="1", rollout="r", index=0, kind="tool_call",
    ...                          tool_name="cancel_reservation"))
    'calls cancel_reservation'
    >>> action_pattern(WrongStep(key="1", rollout="r", index=0, agent="WebSurfer",
    ...                          role="assistant", kind="message"))
    'WebSurfer message'
    """
    if step.tool_name and step.kind == "tool_result":
        return f"result of {step.tool_name}"
    if step.tool_name:
        return f"calls {step.tool_name}"
    who = step.agent or step.role or "agent"
    return f"{who} {(step.kind or 'message').replace('_', ' ')}"
