"""Align two rollouts of the same task step by step, to see where they diverge.

Pure Python (difflib), no Django. Steps are compared by a signature: a tool call by its
name and arguments, any other step by its role and whitespace-normalised text. Two
numbers matter to the reader: the first step where the rollouts differ at all, and the
first tool call where they differ (agents word their messages differently on every trial,
so the action divergence is usually the telling one).

Example:
    >>> a = [AlignStep(0, "user", "message", "hi", "", None),
    ...      AlignStep(1, "assistant", "tool_call", "", "get", {"id": 1}),
    ...      AlignStep(2, "assistant", "tool_call", "", "book", {"id": 1})]
    >>> b = [AlignStep(0, "user", "message", "hi", "", None),
    ...      AlignStep(1, "assistant", "tool_call", "", "get", {"id": 1}),
    ...      AlignStep(2, "assistant", "tool_call", "", "book", {"id": 2})]
    >>> alignment = align(a, b)
    >>> alignment.first_difference, alignment.first_action_difference
    (2, (2, 2))
    >>> [row.status for row in alignment.rows]
    ['same', 'same', 'changed']
    >>> where(alignment, alignment.first_action_row, names=("A", "B"), step_counts=(3, 3))
    'step 2'
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class AlignStep:
    index: int
    role: str
    kind: str
    content: str
    tool_name: str
    tool_args: Any
    # The agent that took the step in a multi-agent rollout ("" when the format names
    # none): the page names it, as the rollout page does, rather than its chat role.
    agent: str = ""

    @property
    def who(self) -> str:
        """Who took the step, as the rollout page names it: its agent, else its role.

        >>> AlignStep(1, "assistant", "message", "", "", None, agent="planner").who
        'planner'
        """
        return self.agent or self.role

    @property
    def signature(self) -> str:
        if self.kind == "tool_call":
            args = json.dumps(self.tool_args, sort_keys=True, default=str)
            return f"call:{self.tool_name}:{args}"
        return f"{self.role}:{self.kind}:{' '.join(self.content.split())}"


@dataclass
class AlignedRow:
    status: str  # "same", "changed", "only_left", "only_right"
    left: AlignStep | None
    right: AlignStep | None


@dataclass
class Alignment:
    rows: list[AlignedRow] = field(default_factory=list)
    # Index (in the left rollout) of the first step that differs; None when identical.
    first_difference: int | None = None
    # (left index, right index) of the first tool call that differs, if any.
    first_action_difference: tuple[int | None, int | None] | None = None
    # Positions in ``rows`` of those two, for anchors on the page.
    first_difference_row: int | None = None
    first_action_row: int | None = None


def align(left: Sequence[AlignStep], right: Sequence[AlignStep]) -> Alignment:
    """Rows of matched, changed and one-sided steps, in order."""
    matcher = difflib.SequenceMatcher(
        a=[s.signature for s in left], b=[s.signature for s in right], autojunk=False
    )
    alignment = Alignment()
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2)):
                alignment.rows.append(AlignedRow("same", left[i], right[j]))
            continue
        pairs = max(i2 - i1, j2 - j1)
        for k in range(pairs):
            lhs = left[i1 + k] if i1 + k < i2 else None
            rhs = right[j1 + k] if j1 + k < j2 else None
            status = "changed" if lhs and rhs else ("only_left" if lhs else "only_right")
            alignment.rows.append(AlignedRow(status, lhs, rhs))
    for position, row in enumerate(alignment.rows):
        if row.status == "same":
            continue
        if alignment.first_difference is None:
            alignment.first_difference = (row.left or row.right).index  # type: ignore[union-attr]
            alignment.first_difference_row = position
        is_action = any(s is not None and s.kind == "tool_call" for s in (row.left, row.right))
        if is_action and alignment.first_action_difference is None:
            alignment.first_action_row = position
            alignment.first_action_difference = (
                row.left.index if row.left else None,
                row.right.index if row.right else None,
            )
    return alignment


def where(
    alignment: Alignment, position: int, *, names: tuple[str, str], step_counts: tuple[int, int]
) -> str:
    """Where the row at ``position`` stands in each rollout, in words (plain text: the
    names are the rollouts' own ids, for the template to escape).

    A step only one rollout has is either past the other's last step ("B stops after
    step 1") or one the other skipped ("B has no matching step"); ``step_counts`` tells a
    rollout that ends from one whose later steps were not aligned.

    Example:
        >>> hi = AlignStep(0, "user", "message", "hi", "", None)
        >>> def call(index, name):
        ...     return AlignStep(index, "assistant", "tool_call", "", name, {})
        >>> ended = align([hi, call(1, "get"), call(2, "book")], [hi, call(1, "get")])
        >>> where(ended, 2, names=("A", "B"), step_counts=(3, 2))
        'step 2 of A (B stops after step 1)'
        >>> skipped = align([hi, call(1, "book")], [hi, call(1, "get"), call(2, "book")])
        >>> where(skipped, 1, names=("A", "B"), step_counts=(2, 3))
        'step 1 of B (A has no matching step)'
        >>> shifted = align(
        ...     [hi, call(1, "get"), call(2, "book")],
        ...     [hi, call(1, "ask"), call(2, "get"), call(3, "cancel")],
        ... )
        >>> where(shifted, 3, names=("A", "B"), step_counts=(3, 4))
        'step 2 of A and step 3 of B'
    """
    row = alignment.rows[position]
    if row.left is not None and row.right is not None:
        if row.left.index == row.right.index:
            return f"step {row.left.index}"
        return f"step {row.left.index} of {names[0]} and step {row.right.index} of {names[1]}"
    has, lacks = (0, 1) if row.left is not None else (1, 0)
    present = row.left if row.left is not None else row.right
    assert present is not None  # a row holds a step of at least one side
    step = f"step {present.index} of {names[has]}"

    def other_side(r: AlignedRow) -> AlignStep | None:
        return r.right if lacks else r.left

    later = any(other_side(r) is not None for r in alignment.rows[position + 1 :])
    earlier = [s.index for r in alignment.rows[:position] if (s := other_side(r)) is not None]
    # Without a later step it may still have steps past the comparison's cut.
    if not later and len(earlier) >= step_counts[lacks]:
        if not earlier:
            return f"{step} ({names[lacks]} has no steps)"
        return f"{step} ({names[lacks]} stops after step {earlier[-1]})"
    return f"{step} ({names[lacks]} has no matching step)"
