"""Which step of a rebuilt rollout is the one a label pointed at.

A live rollout is rebuilt from its stored spans whenever late spans arrive, and again when
a newer parser re-reads them (``manage.py otlp_reassemble``). Its steps may then move: a
late span that started earlier puts steps in front, and a parser fix may drop a duplicate
step or give a tool call another agent. A label names a step by its index, so without this
it would silently point at whatever step took that index.

A step is known by what it says and does: its kind, tool and content, and its agent when
that did not change. The two step lists are aligned (difflib's longest matching blocks),
so steps put in front or dropped shift the rest and repeated identical steps keep their
order; a step the alignment leaves out (a duplicate dropped) goes to the nearest copy of
itself that is left.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher


@dataclass(frozen=True)
class StepIdentity:
    kind: str
    agent: str
    tool_name: str
    content: str

    def loose(self) -> tuple[str, str, str]:
        """The identity without the agent, which a parser fix may have changed."""
        return (self.kind, self.tool_name, self.content)


def _strict(step: StepIdentity) -> object:
    return step


def _loose(step: StepIdentity) -> object:
    return step.loose()


# Tried in order: the whole identity first, then without the agent.
KEYS: tuple[Callable[[StepIdentity], object], ...] = (_strict, _loose)


def _occurrence(keys: Sequence[object], index: int) -> int:
    """How many steps before ``index`` have the same key as the step at ``index``."""
    return sum(1 for key in keys[:index] if key == keys[index])


def _positions(keys: Sequence[object]) -> dict[object, list[int]]:
    where: dict[object, list[int]] = defaultdict(list)
    for position, key in enumerate(keys):
        where[key].append(position)
    return where


def followed_index(
    before: Sequence[StepIdentity], after: Sequence[StepIdentity], index: int
) -> int | None:
    """The index in ``after`` of the step at ``index`` in ``before``; None when it is gone.

    >>> a = StepIdentity("message", "user", "", "Book a room.")
    >>> b = StepIdentity("message", "bot", "", "Which city?")
    >>> c = StepIdentity("tool_call", "bot", "find", "{}")
    >>> followed_index([a, b], [c, a, b], 1)
    2
    >>> followed_index([a, b, b], [b, a, b, b], 2)
    3
    >>> followed_index([a, b, b, c], [a, b, c], 2)
    1
    >>> followed_index([a, b], [a], 1) is None
    True
    """
    if not 0 <= index < len(before):
        return None
    for key_of in KEYS:
        old_keys = [key_of(step) for step in before]
        new_keys = [key_of(step) for step in after]
        matcher = SequenceMatcher(None, old_keys, new_keys, autojunk=False)
        for block in matcher.get_matching_blocks():
            if block.a <= index < block.a + block.size:
                return block.b + index - block.a
        candidates = _positions(new_keys).get(old_keys[index], [])
        if candidates:
            rank = _occurrence(old_keys, index)
            return candidates[min(rank, len(candidates) - 1)]
    return None
