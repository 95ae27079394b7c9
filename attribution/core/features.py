"""Per-step feature matrix of one trajectory for the learned scorer.

Every column is a function of the trajectory's label-free view only (see
:mod:`attribution.core.view`), and nothing is fitted on a corpus: words and agent names
are hashed with CRC32 (stable across processes), so the same trajectory always gets the
same features whatever else is in the data set. This is what lets the evaluation keep
train and test parts apart without any shared state.

Example:
    >>> from types import SimpleNamespace as NS
    >>> traj = NS(task_text="find x", steps=[NS(role="user", content="find x"),
    ...                                      NS(role="assistant", content="x is 4")])
    >>> step_features(traj).shape == (2, len(feature_names()))
    True
"""

from __future__ import annotations

import re
import string
import zlib
from itertools import repeat
from typing import Any

import numpy as np
from numpy.typing import NDArray

from attribution.core.signals import MAX_CHARS, compute_signals
from attribution.core.view import agent_base_name, scoring_view

FEATURE_VERSION = "f3"
AGENT_BUCKETS = 16
_NAME_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_WORD = re.compile(r"[a-z]{3,}")
# For ASCII text: everything but [a-z] becomes a space; words are the pieces of 3+ letters.
_WORD_SEPARATORS = str.maketrans({chr(c): " " for c in range(128) if not "a" <= chr(c) <= "z"})
_SHORT_WORDS = frozenset(string.ascii_lowercase) | {
    a + b for a in string.ascii_lowercase for b in string.ascii_lowercase
}

DENSE_FEATURES = (
    "rel_pos",
    "rel_pos_sq",
    "is_first",
    "is_second",
    "is_third",
    "is_last",
    "is_second_last",
    "log_index",
    "log_length",
    "role_user",
    "role_assistant",
    "role_tool",
    "role_system",
    "kind_tool_call",
    "kind_tool_result",
    "kind_thought",
    "log_chars",
    "chars_vs_mean",
    "digit_share",
    "has_code",
    "has_url",
    "has_question",
    "next_log_chars",
    "next_same_agent",
    "next_has_code",
    "error_self",
    "error_next",
    "error_prev",
    "repeat_max",
    "repeat_exact",
    "retry_count",
    "ignored_result",
    "first_mutating",
    "first_after_request",
    "new_numbers",
    "new_number_share",
    "assume",
    "correction_next",
    "correction_later",
    "conclude",
    "task_overlap",
    "task_recall",
    "is_user",
    "agent_first_turn",
    "agent_share",
    "agent_turn_rank",
    "first_non_user_agent",
    "agent_switch",
    "transient_error",
    "after_transient",
)
# Signals of the neighbours: the next observation above all, then the previous step.
LAGGED = (
    "role_user",
    "log_chars",
    "has_code",
    "error_self",
    "assume",
    "new_numbers",
    "correction_next",
    "conclude",
    "repeat_max",
    "task_overlap",
    "is_user",
    "agent_first_turn",
)


def _hash(token: str, buckets: int) -> int:
    return zlib.crc32(token.encode("utf-8")) % buckets


def agent_tokens(agent: str) -> list[str]:
    """Words of an agent's name: "WebSurfer (thought)" -> ["web", "surfer", "thought"].

    Example:
        >>> agent_tokens("Tickets_Pricing_Expert")
        ['tickets', 'pricing', 'expert']
    """
    return [part.lower() for part in _NAME_PART.findall(agent)]


def feature_names(text_buckets: int = 0) -> list[str]:
    names = list(DENSE_FEATURES)
    names += [f"next_{name}" for name in LAGGED] + [f"prev_{name}" for name in LAGGED]
    names += [f"agent_hash_{k}" for k in range(AGENT_BUCKETS)]
    names += [f"text_hash_{k}" for k in range(text_buckets)]
    return names


def step_features(trajectory: Any, *, text_buckets: int = 0) -> NDArray[np.float64]:
    """The (n_steps, n_features) matrix of one trajectory; see :func:`feature_names`."""
    view = scoring_view(trajectory)
    steps = view.steps
    n = len(steps)
    width = len(DENSE_FEATURES) + 2 * len(LAGGED) + AGENT_BUCKETS + text_buckets
    if n == 0:
        return np.zeros((0, width))
    s = compute_signals(view)
    index = np.arange(n, dtype=np.float64)
    rel = index / (n - 1) if n > 1 else np.zeros(n)
    texts = [step.content[:MAX_CHARS] for step in steps]
    chars = np.array([len(step.content) for step in steps], dtype=np.float64)
    log_chars = np.log1p(chars)
    base_names: dict[str, str] = {}
    agents = [
        base_names.get(step.agent) or base_names.setdefault(step.agent, agent_base_name(step.agent))
        for step in steps
    ]

    def role_is(*names: str) -> NDArray[np.float64]:
        return np.array([step.role in names for step in steps], dtype=np.float64)

    def kind_is(name: str) -> NDArray[np.float64]:
        return np.array([step.kind == name for step in steps], dtype=np.float64)

    def text_has(*needles: str) -> NDArray[np.float64]:
        return np.array([1.0 if any(x in t for x in needles) else 0.0 for t in texts])

    digit_share = np.array([_digit_count(t) / len(t) if t else 0.0 for t in texts])
    has_code = text_has("```")
    counts: dict[str, int] = {}
    first_turn = np.zeros(n)
    turn_rank = np.zeros(n)
    for i, agent in enumerate(agents):
        if agent not in counts:
            first_turn[i] = 1.0
        counts[agent] = counts.get(agent, 0) + 1
        turn_rank[i] = np.log1p(counts[agent] - 1)
    share = np.array([counts[a] / n for a in agents])
    first_non_user = np.zeros(n)
    for i in range(n):
        if not s.is_user[i]:
            first_non_user[i] = 1.0
            break
    switch = np.array([1.0 if i and agents[i] != agents[i - 1] else 0.0 for i in range(n)])
    next_same = np.array(
        [1.0 if i + 1 < n and agents[i + 1] == agents[i] else 0.0 for i in range(n)]
    )

    columns = [
        rel,
        rel**2,
        (index == 0).astype(float),
        (index == 1).astype(float),
        (index == 2).astype(float),
        (index == n - 1).astype(float),
        (index == n - 2).astype(float),
        np.log1p(index),
        np.full(n, np.log1p(n)),
        role_is("user"),
        role_is("assistant"),
        role_is("tool", "function"),
        role_is("system"),
        kind_is("tool_call"),
        kind_is("tool_result"),
        kind_is("thought"),
        log_chars,
        log_chars - log_chars.mean(),
        digit_share,
        has_code,
        text_has("http://", "https://"),
        text_has("?"),
        np.concatenate((log_chars[1:], [0.0])),
        next_same,
        np.concatenate((has_code[1:], [0.0])),
        s.error_self,
        s.error_next,
        s.error_prev,
        s.repeat_max,
        s.repeat_exact,
        s.retry_count,
        s.ignored_result,
        s.first_mutating,
        s.first_after_request,
        s.new_numbers,
        s.new_number_share,
        s.assume,
        s.correction_next,
        s.correction_later,
        s.conclude,
        s.task_overlap,
        s.task_recall,
        s.is_user,
        first_turn,
        share,
        turn_rank,
        first_non_user,
        switch,
        s.transient_error,
        s.after_transient,
    ]
    dense = np.column_stack(columns)
    lag_columns = [DENSE_FEATURES.index(name) for name in LAGGED]
    lagged = dense[:, lag_columns]
    following = np.vstack((lagged[1:], np.zeros((1, len(LAGGED)))))
    preceding = np.vstack((np.zeros((1, len(LAGGED))), lagged[:-1]))
    dense = np.hstack((dense, following, preceding))
    agent_block = np.zeros((n, AGENT_BUCKETS))
    agent_buckets: dict[str, list[int]] = {}
    for i, step in enumerate(steps):
        buckets = agent_buckets.get(step.agent)
        if buckets is None:
            buckets = [_hash(token, AGENT_BUCKETS) for token in agent_tokens(step.agent)]
            agent_buckets[step.agent] = buckets
        agent_block[i, buckets] = 1.0
    blocks = [dense, agent_block]
    if text_buckets:
        blocks.append(_text_block(texts, text_buckets))
    return np.hstack(blocks)


def _digit_count(text: str) -> int:
    """How many characters of ``text`` are digits (``str.isdigit``), without a Python-level
    loop over the characters of ASCII text."""
    if text.isascii():
        return sum(map(text.count, "0123456789"))
    return sum(map(str.isdigit, text))


def _text_block(texts: list[str], buckets: int) -> NDArray[np.float64]:
    """Hashed bag of lower-case words (3+ letters) per step, each row of unit length; a word
    is hashed once per trajectory."""
    block = np.zeros((len(texts), buckets))
    bucket_of: dict[str, int] = {}
    rows: list[int] = []
    columns: list[int] = []
    for i, text in enumerate(texts):
        lowered = text.lower()
        if lowered.isascii():
            words = set(lowered.translate(_WORD_SEPARATORS).split()).difference(_SHORT_WORDS)
        else:
            words = set(_WORD.findall(lowered))
        for word in words.difference(bucket_of):
            bucket_of[word] = _hash(word, buckets)
        rows.extend(repeat(i, len(words)))
        columns.extend(map(bucket_of.__getitem__, words))
    block[rows, columns] = 1.0
    norms = np.linalg.norm(block, axis=1, keepdims=True)
    return np.divide(block, norms, out=np.zeros_like(block), where=norms > 0)
