"""Aligning two rollouts of one task."""

from __future__ import annotations

import doctest

from dashboard import compare
from dashboard.compare import AlignStep, align


def _call(index: int, name: str, **args: object) -> AlignStep:
    return AlignStep(index, "assistant", "tool_call", "", name, args)


def _say(index: int, role: str, text: str) -> AlignStep:
    return AlignStep(index, role, "message", text, "", None)


def test_its_examples_hold():
    assert doctest.testmod(compare).failed == 0


def test_it_reports_identical_rollouts_as_such():
    steps = [_say(0, "user", "hi"), _call(1, "get", id=1)]
    alignment = align(steps, list(steps))
    assert alignment.first_difference is None and alignment.first_action_difference is None
    assert [row.status for row in alignment.rows] == ["same", "same"]


def test_it_shows_steps_only_one_side_has():
    left = [_say(0, "user", "hi"), _call(1, "get", id=1), _call(2, "book", id=1)]
    right = [
        _say(0, "user", "hi"),
        _call(1, "get", id=1),
        _call(2, "search"),
        _call(3, "book", id=1),
    ]
    alignment = align(left, right)
    assert [row.status for row in alignment.rows] == ["same", "same", "only_right", "same"]
    assert alignment.first_action_difference == (None, 2)
    assert alignment.first_action_row == 2


def test_it_ignores_whitespace_in_messages():
    alignment = align([_say(0, "user", "hello  there\n")], [_say(0, "user", "hello there")])
    assert alignment.first_difference is None
