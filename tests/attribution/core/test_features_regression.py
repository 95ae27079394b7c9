"""The fast feature code gives the same features as the slow reference it replaced.

The ``_reference_*`` functions below are a direct transcription of ``compute_signals`` and
``step_features`` as they were before they were made linear (commit f3c1796), with one
deliberate change that the fast code makes too: a step's repetition signals
(``repeat_max``, ``retry_count``) compare it with at most the ``REPEAT_WINDOW`` steps
before it, not with every earlier step, so that the work per step does not grow with the
trajectory's length. On the real samples (at most 130 steps) the window changes nothing
but the last step's comparison with the first of the two longest Who&When rollouts.
Everything else, including regular expressions run over the first ``MAX_CHARS``
characters with ``re.IGNORECASE``, is the old code line for line.
"""

from __future__ import annotations

import re
import zlib
from itertools import islice
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from attribution.core.features import (
    AGENT_BUCKETS,
    DENSE_FEATURES,
    LAGGED,
    agent_tokens,
    step_features,
)
from attribution.core.signals import (
    MAX_CHARS,
    REPEAT_WINDOW,
    Signals,
    _tool_signals,
    compute_signals,
    transient_errors,
)
from attribution.core.view import TrajectoryView, agent_base_name, scoring_view
from ingest.parsers import get_parser
from tests.conftest import TAU_AIRLINE, WHO_AND_WHEN

WHO_AND_WHEN_FILES = (
    "Algorithm-Generated/1.json",
    "Algorithm-Generated/12.json",
    "Algorithm-Generated/94.json",
    "Hand-Crafted/8.json",
    "Hand-Crafted/11.json",
    "Hand-Crafted/24.json",
    "Hand-Crafted/46.json",
    "Hand-Crafted/56.json",
)

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
_MUTATING = re.compile(
    r"\b(book|cancel|update|modify|delete|remove|create|exchange|return|transfer|send|"
    r"write|submit|pay|refund|change)\w*",
    re.IGNORECASE,
)
_CODE = re.compile(r"```")
_URL = re.compile(r"https?://")
_QUESTION = re.compile(r"\?")


def _reference_tokens(text: str) -> set[str]:
    return set(_TOKEN.findall(text[:MAX_CHARS].lower()))


def _reference_numbers(text: str) -> set[str]:
    return set(_NUMBER.findall(text[:MAX_CHARS]))


def _reference_jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 0.0
    return len(a & b) / len(a | b)


def _reference_pattern_signal(pattern: re.Pattern[str], text: str) -> float:
    return 1.0 if pattern.search(text[:MAX_CHARS]) else 0.0


def _reference_is_user(role: str, agent: str) -> bool:
    return role == "user" and agent.lower() in {"", "user", "human"}


def _reference_compute_signals(view: TrajectoryView) -> Signals:
    """The old ``compute_signals``, with the repetition loop bounded by REPEAT_WINDOW."""
    steps = view.steps
    n = len(steps)
    texts = [(s.content + " " + s.tool_name + " " + s.tool_args)[:MAX_CHARS] for s in steps]
    token_sets = [_reference_tokens(t) for t in texts]
    number_sets = [_reference_numbers(t) for t in texts]
    task_tokens = _reference_tokens(view.task_text)
    known_numbers = _reference_numbers(view.task_text)
    users = np.array([_reference_is_user(s.role, s.agent) for s in steps], dtype=np.float64)
    error_self = np.array(
        [
            max(_reference_pattern_signal(_ERROR, t), 1.0 if s.is_error else 0.0)
            for s, t in zip(steps, texts, strict=True)
        ]
    )
    error_next = np.concatenate((error_self[1:], [0.0]))
    error_prev = np.concatenate(([0.0], error_self[:-1]))
    correction = np.array([_reference_pattern_signal(_CORRECTION, t) for t in texts])
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
        for j in range(max(0, i - REPEAT_WINDOW), i):
            similarity = _reference_jaccard(token_sets[i], token_sets[j])
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
        assume=np.array([_reference_pattern_signal(_ASSUME, t) for t in texts]),
        correction_next=correction_next,
        correction_later=correction_later,
        conclude=np.array([_reference_pattern_signal(_CONCLUDE, t) for t in texts]),
        task_overlap=task_overlap,
        task_recall=task_recall,
        is_user=users,
        # Newer than this reference, and tested on their own (test_scorers.py).
        **_tool_signals(view, error_self),
        **transient_errors(view, error_self),
    )


def _reference_hash(token: str, buckets: int) -> int:
    return zlib.crc32(token.encode("utf-8")) % buckets


def _reference_step_features(trajectory: Any, *, text_buckets: int = 0) -> np.ndarray:
    """The old ``step_features`` (on top of :func:`_reference_compute_signals`)."""
    view = scoring_view(trajectory)
    steps = view.steps
    n = len(steps)
    width = len(DENSE_FEATURES) + 2 * len(LAGGED) + AGENT_BUCKETS + text_buckets
    if n == 0:
        return np.zeros((0, width))
    s = _reference_compute_signals(view)
    index = np.arange(n, dtype=np.float64)
    rel = index / (n - 1) if n > 1 else np.zeros(n)
    texts = [step.content[:MAX_CHARS] for step in steps]
    chars = np.array([len(step.content) for step in steps], dtype=np.float64)
    log_chars = np.log1p(chars)
    agents = [agent_base_name(step.agent) for step in steps]

    def role_is(*names: str) -> np.ndarray:
        return np.array([step.role in names for step in steps], dtype=np.float64)

    def kind_is(name: str) -> np.ndarray:
        return np.array([step.kind == name for step in steps], dtype=np.float64)

    def text_flag(pattern: re.Pattern[str]) -> np.ndarray:
        return np.array([1.0 if pattern.search(t) else 0.0 for t in texts])

    digit_share = np.array([sum(c.isdigit() for c in t) / len(t) if t else 0.0 for t in texts])
    has_code = text_flag(_CODE)
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
        text_flag(_URL),
        text_flag(_QUESTION),
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
        # Newer than this reference, tested on their own (test_scorers.py).
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
    for i, step in enumerate(steps):
        for token in agent_tokens(step.agent):
            agent_block[i, _reference_hash(token, AGENT_BUCKETS)] = 1.0
    blocks = [dense, agent_block]
    if text_buckets:
        text_block = np.zeros((n, text_buckets))
        for i, text in enumerate(texts):
            for token in set(re.findall(r"[a-z]{3,}", text.lower())):
                text_block[i, _reference_hash(token, text_buckets)] = 1.0
        norms = np.linalg.norm(text_block, axis=1, keepdims=True)
        blocks.append(np.divide(text_block, norms, out=np.zeros_like(text_block), where=norms > 0))
    return np.hstack(blocks)


def _real_trajectories() -> list[Any]:
    if not WHO_AND_WHEN.exists() or not TAU_AIRLINE.exists():
        pytest.skip("shared data not present")
    records = []
    parser = get_parser("who_and_when")
    for name in WHO_AND_WHEN_FILES:
        with (WHO_AND_WHEN / name).open("rb") as stream:
            records.extend(parser.parse(stream, filename=name))
    with TAU_AIRLINE.open("rb") as stream:
        records.extend(islice(get_parser("tau_bench").parse(stream, filename=TAU_AIRLINE.name), 20))
    return records


def _step(content: str, **fields: Any) -> SimpleNamespace:
    defaults = {"role": "assistant", "agent": "assistant", "kind": "message", "tool_name": ""}
    return SimpleNamespace(content=content, **{**defaults, **fields})


def _awkward_trajectory() -> SimpleNamespace:
    """Repeats further apart than the window, upper case and Unicode case folding, long
    texts with the signal after MAX_CHARS, digits outside ASCII, tool calls."""
    filler = "lorem ipsum " * 900
    steps = [_step("Book the flight to PARIS please", role="user", agent="user")]
    for i in range(2 * REPEAT_WINDOW + 40):
        steps.append(_step(f"checking availability {i % 7} of route {i % 3}", agent=f"A{i % 2}"))
    steps += [
        _step("An ERROR occurred: Timed Out"),
        _step("ſimulated data, let's ſay"),  # long s: IGNORECASE matches 's'
        _step("The \u212aelvin mistake, İ Actually RE-CHECK"),
        _step(filler + " traceback"),
        _step("Traceback " + filler),
        _step("prices ٣٤٥ and ²³ and 12.50 or 1,000 https://x.io ```code``` why?"),
        _step("", kind="tool_call", tool_name="cancel_reservation", tool_args='{"id": 7}'),
        _step("result: not found", role="tool", kind="tool_result"),
        _step("FINAL ANSWER: the answer is 42. TERMINATE"),
    ]
    return SimpleNamespace(task_text="Book the flight to Paris for 2 people", steps=steps)


@pytest.mark.parametrize("text_buckets", [0, 64])
def test_it_gives_the_reference_features_on_real_rollouts(text_buckets):
    for record in _real_trajectories():
        expected = _reference_step_features(record, text_buckets=text_buckets)
        actual = step_features(record, text_buckets=text_buckets)
        assert actual.shape == expected.shape
        assert np.allclose(actual, expected, rtol=1e-12, atol=1e-12)


def test_it_gives_the_reference_signals_on_real_rollouts():
    for record in _real_trajectories():
        view = scoring_view(record)
        expected = _reference_compute_signals(view)
        actual = compute_signals(view)
        for name in Signals.__dataclass_fields__:
            assert np.allclose(getattr(actual, name), getattr(expected, name)), name


def test_it_gives_the_reference_features_on_awkward_text():
    record = _awkward_trajectory()
    expected = _reference_step_features(record, text_buckets=64)
    assert np.allclose(step_features(record, text_buckets=64), expected, rtol=1e-12, atol=1e-12)


def test_it_compares_a_step_with_the_window_before_it_only():
    repeated = "search flights from boston to denver on friday"
    steps = [_step(repeated)] + [_step(f"unrelated {i} words") for i in range(REPEAT_WINDOW)]
    steps.append(_step(repeated))
    signals = compute_signals(scoring_view(SimpleNamespace(task_text="", steps=steps)))
    assert signals.repeat_max[-1] < 0.5
    assert signals.repeat_exact[-1] == 1.0  # exact repeats are remembered for ever


def test_it_gives_empty_signals_for_an_empty_trajectory():
    view = scoring_view(SimpleNamespace(task_text="x", steps=[]))
    assert compute_signals(view).repeat_max.shape == (0,)
