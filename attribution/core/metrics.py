"""Coverage and removal rate of prediction sets: the two numbers every change reports.

A set is an inclusive interval (lo, hi) or None when empty; an empty set never covers
and removes every step.

Example:
    >>> coverage([(1, 2), None, (0, 0)], [2, 0, 1])
    0.3333333333333333
    >>> removal_rate([(1, 2), None], [4, 2])
    0.75
"""

from __future__ import annotations

from collections.abc import Sequence

Interval = tuple[int, int] | None


def set_size(interval: Interval) -> int:
    """Number of steps in a set (0 when empty).

    Example:
        >>> set_size((3, 5)), set_size(None)
        (3, 0)
    """
    if interval is None:
        return 0
    return interval[1] - interval[0] + 1


def covers(interval: Interval, true_step: int) -> bool:
    """Whether the set holds the true step.

    Example:
        >>> covers((3, 5), 5), covers(None, 0)
        (True, False)
    """
    return interval is not None and interval[0] <= true_step <= interval[1]


def coverage(intervals: Sequence[Interval], true_steps: Sequence[int]) -> float:
    """Fraction of trajectories whose set holds the true step (nan for none)."""
    if not intervals:
        return float("nan")
    hits = sum(covers(s, y) for s, y in zip(intervals, true_steps, strict=True))
    return hits / len(intervals)


def removal_rate(intervals: Sequence[Interval], n_steps: Sequence[int]) -> float:
    """Mean of (n - |set|) / n: the share of steps an engineer need not read."""
    if not intervals:
        return float("nan")
    total = sum((n - set_size(s)) / n for s, n in zip(intervals, n_steps, strict=True))
    return total / len(intervals)


def empty_rate(intervals: Sequence[Interval]) -> float:
    """Fraction of empty sets.

    Example:
        >>> empty_rate([None, (0, 1)])
        0.5
    """
    if not intervals:
        return float("nan")
    return sum(s is None for s in intervals) / len(intervals)
