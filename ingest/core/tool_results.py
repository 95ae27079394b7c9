"""Which tool result answers which tool call: the one pairing rule of the step readers
that ask whether a call failed (sibling divergence, the attribution heuristic's checks).

A result carrying a call id answers the earliest call of that id not answered yet (an agent
may reuse an id: a search's id later named an update, and the search read the update's
error); a result without one, or with an id no waiting call has, answers the earliest call
still waiting. A call no result answers has none.

Example:
    >>> from types import SimpleNamespace as S
    >>> steps = [S(kind="tool_call", tool_call_id="a"), S(kind="tool_result", tool_call_id="a"),
    ...          S(kind="tool_call", tool_call_id="a"), S(kind="tool_call", tool_call_id=""),
    ...          S(kind="tool_result", tool_call_id=""), S(kind="tool_result", tool_call_id="a")]
    >>> call_results(steps)
    {0: 1, 2: 5, 3: 4}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def call_results(steps: Sequence[Any]) -> dict[int, int]:
    """For each tool call's position, the position of the result that answers it."""
    answered: dict[int, int] = {}
    waiting: list[int] = []  # unanswered calls, in order
    for position, step in enumerate(steps):
        if step.kind == "tool_call":
            waiting.append(position)
        elif step.kind == "tool_result" and waiting:
            call_id = getattr(step, "tool_call_id", "") or ""
            same = [c for c in waiting if call_id and steps[c].tool_call_id == call_id]
            call = same[0] if same else waiting[0]
            waiting.remove(call)
            answered[call] = position
    return answered
