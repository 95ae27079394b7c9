"""Per-step signals read from text alone: errors, repetition, novelty, mutation.

Shared by the heuristic scorer and the learned scorer's features. Everything here is a
pure function of one trajectory's label-free view: no state is fitted on a corpus.

Example:
    >>> error_signal("Traceback (most recent call last): ...")
    1.0
    >>> jaccard({"a", "b"}, {"b", "c"})
    0.3333333333333333
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from attribution.core.view import TrajectoryView

# Long observations (web pages) are cut: the signals live in their first few thousand
# characters and the cost of tokenising 100 kB pages adds up over a project.
MAX_CHARS = 8000

_TOKEN = re.compile(r"[a-z0-9]+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_ERROR = re.compile(
    r"traceback|exception|\berror\b|exitcode: [1-9]|\bfailed\b|\bfailure\b|not found|"
    r"\bcannot\b|\bunable\b|\binvalid\b|\bdenied\b|timed out|timeout|no code|\b404\b",
    re.IGNORECASE,
)
_ASSUME = re.compile(
    r"\bassum|hypothetic|\bexample\b|placeholder|\bmock\b|\bsimulat|\bestimat|approximate|"
    r"\blet's say\b|\bfor instance\b|\bsample data\b",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"apologi|\bmistake\b|\bincorrect\b|\bwrong\b|\bcorrection\b|\bactually\b|re-?check|"
    r"\bdiscrepanc|\bnot (?:correct|accurate)\b",
    re.IGNORECASE,
)
_CONCLUDE = re.compile(
    r"\bterminate\b|final answer|\bin conclusion\b|\bthe answer is\b|\bresult is\b",
    re.IGNORECASE,
)
_CODE = re.compile(r"```")
_URL = re.compile(r"https?://")
_MUTATING = re.compile(
    r"\b(book|cancel|update|modify|delete|remove|create|exchange|return|transfer|send|"
    r"write|submit|pay|refund|change)\w*",
    re.IGNORECASE,
)


def tokens(text: str) -> set[str]:
    """Lower-case word tokens of a text (cut at MAX_CHARS).

    Example:
        >>> sorted(tokens("Hello, World 42"))
        ['42', 'hello', 'world']
    """
    return set(_TOKEN.findall(text[:MAX_CHARS].lower()))


def numbers(text: str) -> set[str]:
    return set(_NUMBER.findall(text[:MAX_CHARS]))


def jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 0.0
    return len(a & b) / len(a | b)


def error_signal(text: str) -> float:
    return 1.0 if _ERROR.search(text[:MAX_CHARS]) else 0.0


def pattern_signal(pattern: re.Pattern[str], text: str) -> float:
    return 1.0 if pattern.search(text[:MAX_CHARS]) else 0.0


@dataclass(frozen=True)
class Signals:
    """Per-step signal arrays of one trajectory (each of length n)."""

    error_self: NDArray[np.float64]
    error_next: NDArray[np.float64]
    error_prev: NDArray[np.float64]
    repeat_max: NDArray[np.float64]
    repeat_exact: NDArray[np.float64]
    retry_count: NDArray[np.float64]
    ignored_result: NDArray[np.float64]
    first_mutating: NDArray[np.float64]
    first_after_request: NDArray[np.float64]
    new_numbers: NDArray[np.float64]
    new_number_share: NDArray[np.float64]
    assume: NDArray[np.float64]
    correction_next: NDArray[np.float64]
    correction_later: NDArray[np.float64]
    conclude: NDArray[np.float64]
    task_overlap: NDArray[np.float64]
    task_recall: NDArray[np.float64]
    is_user: NDArray[np.float64]


def _is_user(role: str, agent: str) -> bool:
    return role == "user" and agent.lower() in {"", "user", "human"}


def compute_signals(view: TrajectoryView) -> Signals:
    """All signals of one trajectory, each an array of length n.

    Example:
        >>> from types import SimpleNamespace as NS
        >>> from attribution.core.view import scoring_view
        >>> view = scoring_view(NS(task_text="", steps=[
        ...     NS(role="assistant", content="run it"), NS(role="tool", content="Error: boom")]))
        >>> compute_signals(view).error_next.tolist()
        [1.0, 0.0]
    """
    steps = view.steps
    n = len(steps)
    texts = [(s.content + " " + s.tool_name + " " + s.tool_args)[:MAX_CHARS] for s in steps]
    token_sets = [tokens(t) for t in texts]
    number_sets = [numbers(t) for t in texts]
    task_tokens = tokens(view.task_text)
    known_numbers = numbers(view.task_text)
    users = np.array([_is_user(s.role, s.agent) for s in steps], dtype=np.float64)

    error_self = np.array(
        [
            max(error_signal(t), 1.0 if s.is_error else 0.0)
            for s, t in zip(steps, texts, strict=True)
        ]
    )
    error_next = np.concatenate((error_self[1:], [0.0]))
    error_prev = np.concatenate(([0.0], error_self[:-1]))
    correction = np.array([pattern_signal(_CORRECTION, t) for t in texts])
    correction_next = np.concatenate((correction[1:], [0.0]))
    correction_later = np.zeros(n)
    for i in range(n - 2, -1, -1):
        correction_later[i] = max(correction_later[i + 1], correction[i + 1])

    repeat_max = np.zeros(n)
    repeat_exact = np.zeros(n)
    retry_count = np.zeros(n)
    new_numbers = np.zeros(n)
    new_number_share = np.zeros(n)
    seen: dict[str, int] = {}
    for i in range(n):
        key = texts[i].strip()
        if key and key in seen:
            repeat_exact[i] = 1.0
        seen.setdefault(key, i)
        for j in range(i):
            similarity = jaccard(token_sets[i], token_sets[j])
            repeat_max[i] = max(repeat_max[i], similarity)
            if similarity > 0.8 and steps[j].agent == steps[i].agent:
                retry_count[i] += 1
        fresh = number_sets[i] - known_numbers
        new_numbers[i] = np.log1p(len(fresh))
        new_number_share[i] = len(fresh) / len(number_sets[i]) if number_sets[i] else 0.0
        known_numbers = known_numbers | number_sets[i]

    ignored = np.zeros(n)
    for i in range(n - 1):
        if steps[i].kind == "tool_result" or steps[i].role == "tool":
            result_tokens = token_sets[i] - token_sets[i - 1] if i else token_sets[i]
            informative = {t for t in result_tokens if len(t) > 3}
            if informative and not (informative & token_sets[i + 1]):
                ignored[i + 1] = 1.0

    first_mutating = np.zeros(n)
    first_after_request = np.zeros(n)
    seen_request = False
    mutating_found = False
    after_done = False
    for i, step in enumerate(steps):
        if users[i]:
            seen_request = True
            continue
        if not after_done and (seen_request or i > 0):
            first_after_request[i] = 1.0
            after_done = True
        mutating = step.is_mutating
        if mutating is None:
            mutating = step.kind == "tool_call" and bool(_MUTATING.search(step.tool_name))
        if mutating and not mutating_found:
            first_mutating[i] = 1.0
            mutating_found = True

    task_overlap = np.array([len(t & task_tokens) / len(t) if t else 0.0 for t in token_sets])
    task_recall = np.array(
        [len(t & task_tokens) / len(task_tokens) if task_tokens else 0.0 for t in token_sets]
    )
    return Signals(
        error_self=error_self,
        error_next=error_next,
        error_prev=error_prev,
        repeat_max=repeat_max,
        repeat_exact=repeat_exact,
        retry_count=np.log1p(retry_count),
        ignored_result=ignored,
        first_mutating=first_mutating,
        first_after_request=first_after_request,
        new_numbers=new_numbers,
        new_number_share=new_number_share,
        assume=np.array([pattern_signal(_ASSUME, t) for t in texts]),
        correction_next=correction_next,
        correction_later=correction_later,
        conclude=np.array([pattern_signal(_CONCLUDE, t) for t in texts]),
        task_overlap=task_overlap,
        task_recall=task_recall,
        is_user=users,
    )
