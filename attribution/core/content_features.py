"""Features that follow content through a rollout, not only its position.

A decisive error usually brings something into the rollout that the rest then carries:
a wrong value, a wrong claim, a bad instruction to another agent. These columns say, per
step, how much of what it introduced survives to the end, whether it is where the final
answer's content first appears, whether it introduced values no earlier step supports,
and where it sits relative to the rollout's first error and its agent hand-offs. Like
:mod:`attribution.core.features`, each is a function of one label-free view; nothing is
fitted on a corpus ("distinctive" words are judged within the rollout itself).

Worked example: step 1 introduces "42", the final step repeats it, so step 1 is where
the final answer's content first enters.

    >>> from types import SimpleNamespace as NS
    >>> traj = NS(task_text="what is x", steps=[NS(role="user", content="what is x"),
    ...     NS(role="assistant", content="x is 42"), NS(role="assistant", content="answer 42")])
    >>> matrix = content_features(traj)
    >>> names = CONTENT_FEATURES
    >>> matrix[:, names.index("answer_first_entry")].tolist()
    [0.0, 1.0, 0.0]
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from numpy.typing import NDArray

from attribution.core.signals import MAX_CHARS, error_signal
from attribution.core.view import agent_base_name, scoring_view

_TOKEN = re.compile(r"[a-z0-9][a-z0-9.,_-]*[a-z0-9]|[0-9]")
_NUMBER = re.compile(r"^\d[\d.,]*$")
# Closing words of group chats ("TERMINATE") carry no claim: the answer is before them.
_TRIVIAL_END = re.compile(r"^\W*(terminate|exit|done|stop)?\W*$", re.IGNORECASE)
# A word in more than this share of a rollout's steps is its vocabulary, not content.
COMMON_SHARE = 0.5

CONTENT_FEATURES = (
    "answer_share",
    "answer_first_entry",
    "answer_most_entry",
    "novel_log",
    "novel_survive_share",
    "novel_survive_log",
    "unsupported_numbers",
    "unsupported_to_answer",
    "before_first_error",
    "after_first_error",
    "handoff_out",
    "handoff_in",
    "instructs_other",
    "novel_rank",
)


def _tokens(text: str) -> set[str]:
    return {t for t in _TOKEN.findall(text[:MAX_CHARS].lower()) if len(t) > 2 or t.isdigit()}


def _answer_position(contents: list[str]) -> int:
    """The last step that says something (not a bare "TERMINATE")."""
    for i in range(len(contents) - 1, -1, -1):
        if not _TRIVIAL_END.match(contents[i][:200]):
            return i
    return len(contents) - 1


def content_features(trajectory: Any) -> NDArray[np.float64]:
    """The (n_steps, len(CONTENT_FEATURES)) matrix of one trajectory.

    Linear in the number of steps: every word's first and last step are found in one pass.
    """
    view = scoring_view(trajectory)
    steps = view.steps
    n = len(steps)
    out = np.zeros((n, len(CONTENT_FEATURES)))
    if n == 0:
        return out
    contents = [s.content + " " + s.tool_args for s in steps]
    token_sets = [_tokens(text) for text in contents]
    task = _tokens(view.task_text)
    frequency: dict[str, int] = {}
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for i, words in enumerate(token_sets):
        for word in words:
            frequency[word] = frequency.get(word, 0) + 1
            first.setdefault(word, i)
            last[word] = i
    limit = max(2, int(COMMON_SHARE * n))
    novel = [
        {w for w in words if first[w] == i and w not in task and frequency[w] <= limit}
        for i, words in enumerate(token_sets)
    ]
    answer_at = _answer_position([s.content for s in steps])
    answer = {w for w in token_sets[answer_at] if w not in task and frequency[w] <= limit}
    entries = np.zeros(n)
    for word in answer:
        if first[word] < answer_at:
            entries[first[word]] += 1
    column = {name: k for k, name in enumerate(CONTENT_FEATURES)}
    if answer:
        out[:, column["answer_share"]] = entries / len(answer)
    entered = np.flatnonzero(entries)
    if entered.size:
        out[entered[0], column["answer_first_entry"]] = 1.0
        out[int(np.argmax(entries)), column["answer_most_entry"]] = 1.0
    survive = np.array([sum(last[w] > i for w in words) for i, words in enumerate(novel)])
    sizes = np.array([len(words) for words in novel], dtype=np.float64)
    out[:, column["novel_log"]] = np.log1p(sizes)
    out[:, column["novel_survive_share"]] = np.divide(
        survive, sizes, out=np.zeros(n), where=sizes > 0
    )
    out[:, column["novel_survive_log"]] = np.log1p(survive)
    # Values no earlier step (nor the task) holds, stated by a step that is not a tool's
    # observation or the user's: claimed, not looked up.
    for i, (step, words) in enumerate(zip(steps, novel, strict=True)):
        if step.kind == "tool_result" or step.role in ("tool", "function", "system"):
            continue
        if step.role == "user" and step.agent.lower() in ("", "user", "human"):
            continue
        values = [w for w in words if _NUMBER.match(w)]
        out[i, column["unsupported_numbers"]] = np.log1p(len(values))
        out[i, column["unsupported_to_answer"]] = float(any(w in answer for w in values))
    errors = [i for i, s in enumerate(steps) if s.is_error or error_signal(s.content)]
    if errors:
        first_error = errors[0]
        if first_error > 0:
            out[first_error - 1, column["before_first_error"]] = 1.0
        out[first_error:, column["after_first_error"]] = 1.0
    agents = [agent_base_name(s.agent) for s in steps]
    for i in range(n):
        if i + 1 < n and agents[i + 1] != agents[i]:
            out[i, column["handoff_out"]] = 1.0
        if i and agents[i] != agents[i - 1]:
            out[i, column["handoff_in"]] = 1.0
        out[i, column["instructs_other"]] = float("->" in steps[i].agent)
    order = np.argsort(-sizes, kind="stable")
    ranks = np.empty(n)
    ranks[order] = np.arange(n)
    out[:, column["novel_rank"]] = ranks / max(n - 1, 1)
    return out


# Columns whose extremes within a rollout mean something: "the first step that writes code",
# "the step that brings in the most new numbers".
RELATIVE_KEYS = (
    "has_code",
    "new_numbers",
    "log_chars",
    "digit_share",
    "has_url",
    "error_next",
    "assume",
    "unsupported_numbers",
    "novel_survive_log",
    "answer_share",
)


def relative_feature_names() -> list[str]:
    return [f"{key}_{kind}" for key in RELATIVE_KEYS for kind in ("is_max", "is_first")]


def relative_features(matrix: NDArray[np.float64], names: list[str]) -> NDArray[np.float64]:
    """Per key column: is this step the rollout's maximum, is it the first non-zero one.

    A linear score per step cannot say "the most of all steps" by itself; these columns
    can. Ties go to the earliest step; a constant column marks no step.

    Example:
        >>> m = np.array([[0.0], [2.0], [2.0]])
        >>> relative_features(m, ["has_code"])[:, :2].tolist()
        [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]]
    """
    n = matrix.shape[0]
    out = np.zeros((n, 2 * len(RELATIVE_KEYS)))
    if n == 0:
        return out
    for k, key in enumerate(RELATIVE_KEYS):
        if key not in names:
            continue
        column = matrix[:, names.index(key)]
        if column.max() <= column.min():
            continue
        out[int(np.argmax(column)), 2 * k] = 1.0
        nonzero = np.flatnonzero(column > 0)
        if nonzero.size:
            out[nonzero[0], 2 * k + 1] = 1.0
    return out
