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

from collections.abc import Sequence
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


def _keys(steps: Sequence[StepIdentity], loose: bool) -> list[object]:
    return [step.loose() if loose else step for step in steps]


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
    # The whole identity first, then without the agent.
    for loose in (False, True):
        old_keys, new_keys = _keys(before, loose), _keys(after, loose)
        matcher = SequenceMatcher(None, old_keys, new_keys, autojunk=False)
        for block in matcher.get_matching_blocks():
            if block.a <= index < block.a + block.size:
                return block.b + index - block.a
        wanted = old_keys[index]
        copies = [position for position, key in enumerate(new_keys) if key == wanted]
        if copies:
            # Left out by the alignment (fewer copies than before): the copy of the same
            # rank among its equals, or the last one left.
            rank = sum(1 for key in old_keys[:index] if key == wanted)
            return copies[min(rank, len(copies) - 1)]
    return None
