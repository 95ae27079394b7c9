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
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.sparse import csr_matrix

from attribution.core.view import TrajectoryView
from ingest.core.tool_results import call_results
from ingest.core.vocabulary import (
    HAND_IN_TOOL,
    claims_success,
    hand_in_report,
    is_agent_action,
    is_user_turn,
    says_transient_error,
    step_mutates,
)

# Long observations (web pages) are cut: the signals live in their first few thousand
# characters and the cost of tokenising 100 kB pages adds up over a project. This bounds
# the regular-expression work per step too: every search below reads at most MAX_CHARS.
MAX_CHARS = 8000
# A step's repetition signals compare it with at most this many steps before it (not
# with every earlier step), so that the work per step does not grow with the length of
# the trajectory. Exact repeats (``repeat_exact``) are still remembered for ever.
REPEAT_WINDOW = 128
# Rows of the pairwise-overlap matrix computed at once (memory: BLOCK x (BLOCK + window)).
_BLOCK = 256

_TOKEN = re.compile(r"[a-z0-9]+")
# For ASCII text, the same tokens by one C-level pass: everything but [a-z0-9] becomes a
# space, then split.
_TOKEN_SEPARATORS = str.maketrans(
    {chr(c): " " for c in range(128) if not (chr(c).isdigit() or "a" <= chr(c) <= "z")}
)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# Non-ASCII characters that re.IGNORECASE matches with an ASCII letter, or whose
# lower-case form contains one: the only ones for which searching the lower-cased text
# with a case-sensitive pattern could disagree with a case-insensitive search.
_CASE_FOLDING_TRAPS = ("\u0130", "\u0131", "\u017f", "\u212a")
_META = re.compile(r"[\\\[\](){}?*+.|^$]")


class _Signal:
    """A case-insensitive alternation of phrases, searched without scanning every offset.

    Python's ``re`` tries every alternative at every offset of the text; here each
    alternative starts with a literal (its *anchor*, after an optional ``\\b``), so a match
    can only start where an anchor occurs in the lower-cased text, found with ``str.find``,
    and the case-sensitive pattern is tried only there. The answer is the same as
    ``re.compile("|".join(alternatives), re.IGNORECASE).search(text)``.

    Example:
        >>> _Signal(r"\\berror\\b", "time ?out").search("Request TIMEOUT")
        True
    """

    def __init__(self, *alternatives: str) -> None:
        source = "|".join(alternatives)
        self.pattern = re.compile(source, re.IGNORECASE)
        self._lowered = re.compile(source)
        anchors = set()
        for alternative in alternatives:
            literal = alternative.removeprefix(r"\b")
            cut = _META.search(literal)
            anchor = literal[: cut.start()] if cut else literal
            if cut and literal[cut.start()] in "?*{":
                anchor = anchor[:-1]  # the last character is optional
            if not anchor or anchor != anchor.lower():
                raise ValueError(f"{alternative!r} does not start with a lower-case literal")
            anchors.add(anchor)
        # An anchor that starts with another anchor adds nothing.
        self._anchors = tuple(
            sorted(a for a in anchors if not any(a != b and a.startswith(b) for b in anchors))
        )

    def search(self, text: str, lowered: str | None = None) -> bool:
        """Whether the pattern occurs in ``text`` (``lowered`` is ``text.lower()``)."""
        if not text.isascii() and any(trap in text for trap in _CASE_FOLDING_TRAPS):
            return self.pattern.search(text) is not None
        if lowered is None:
            lowered = text.lower()
        for anchor in self._anchors:
            at = lowered.find(anchor)
            while at != -1:
                if self._lowered.match(lowered, at):
                    return True
                at = lowered.find(anchor, at + 1)
        return False


_ERROR = _Signal(
    "traceback", "exception", r"\berror\b", "exitcode: [1-9]", r"\bfailed\b", r"\bfailure\b",
    "not found", r"\bcannot\b", r"\bunable\b", r"\binvalid\b", r"\bdenied\b", "timed out",
    "timeout", "no code", r"\b404\b",
)  # fmt: skip
_ASSUME = _Signal(
    r"\bassum", "hypothetic", r"\bexample\b", "placeholder", r"\bmock\b", r"\bsimulat",
    r"\bestimat", "approximate", r"\blet's say\b", r"\bfor instance\b", r"\bsample data\b",
)  # fmt: skip
_CORRECTION = _Signal(
    "apologi", r"\bmistake\b", r"\bincorrect\b", r"\bwrong\b", r"\bcorrection\b",
    r"\bactually\b", "re-check", "recheck", r"\bdiscrepanc", r"\bnot correct\b",
    r"\bnot accurate\b",
)  # fmt: skip
_CONCLUDE = _Signal(
    r"\bterminate\b", "final answer", r"\bin conclusion\b", r"\bthe answer is\b",
    r"\bresult is\b",
)  # fmt: skip


def tokens(text: str) -> set[str]:
    """Lower-case word tokens of a text (cut at MAX_CHARS).

    Example:
        >>> sorted(tokens("Hello, World 42"))
        ['42', 'hello', 'world']
    """
    return set(_TOKEN.findall(text[:MAX_CHARS].lower()))


def _lowered_tokens(lowered: str) -> set[str]:
    """``set(_TOKEN.findall(lowered))``, faster for ASCII text."""
    if lowered.isascii():
        return set(lowered.translate(_TOKEN_SEPARATORS).split())
    return set(_TOKEN.findall(lowered))


def numbers(text: str) -> set[str]:
    return set(_NUMBER.findall(text[:MAX_CHARS]))


def jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 0.0
    return len(a & b) / len(a | b)


def error_signal(text: str) -> float:
    return 1.0 if _ERROR.search(text[:MAX_CHARS]) else 0.0


def pattern_signal(pattern: _Signal, text: str) -> float:
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
    # Tool-calling rollouts (all zero without tool calls; the heuristic reads these, the
    # learned scorer's features do not):
    # a check (a read-only call, or a call made before with the same arguments) that drew
    # an error after a state change since its tool's previous call: the error shows there,
    # the change is suspect.
    check_error: NDArray[np.float64]
    caught_change: NDArray[np.float64]
    # A closing report (a hand-in call, or the last message) that claims success while
    # the latest check before it failed.
    claim_after_error: NDArray[np.float64]
    # The first time a call is made again unchanged (nothing changed the state between):
    # where a loop starts, not each turn of it.
    repeat_first: NDArray[np.float64]
    # An agent action answered by an error the environment caused (a timeout, a service
    # down: :func:`transient_errors`), and the first agent action after each such error.
    transient_error: NDArray[np.float64]
    after_transient: NDArray[np.float64]


def _repetition(
    token_sets: list[set[str]], agents: list[str], window: int = REPEAT_WINDOW
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per step, the largest Jaccard similarity with one of the ``window`` steps before it,
    and how many of those by the same agent are near-copies (similarity above 0.8).

    The overlaps come from a sparse product of the step-by-token incidence matrix with
    itself, a block of rows at a time against the window before the block, so the work per
    step is bounded by the window, not by the trajectory's length.

    Example:
        >>> best, retries = _repetition([{"a", "b"}, {"a", "b"}, {"c"}], ["x", "x", "x"])
        >>> best.tolist(), retries.tolist()
        ([0.0, 1.0, 0.0], [0.0, 1.0, 0.0])
    """
    n = len(token_sets)
    best = np.zeros(n)
    retries = np.zeros(n)
    vocabulary: dict[str, int] = {}
    columns: list[int] = []
    offsets = [0]
    for token_set in token_sets:
        for token in token_set.difference(vocabulary):
            vocabulary[token] = len(vocabulary)
        columns.extend(map(vocabulary.__getitem__, token_set))
        offsets.append(len(columns))
    if n < 2 or not vocabulary:
        return best, retries
    incidence = csr_matrix(
        (np.ones(len(columns)), np.array(columns), np.array(offsets)),
        shape=(n, len(vocabulary)),
    )
    sizes = np.diff(np.array(offsets)).astype(np.float64)
    agent_ids: dict[str, int] = {}
    agent_of = np.array([agent_ids.setdefault(agent, len(agent_ids)) for agent in agents])
    for start in range(0, n, _BLOCK):
        stop = min(start + _BLOCK, n)
        first = max(0, start - window)
        rows = incidence if stop - start == n else incidence[start:stop]
        window_rows = incidence if stop - first == n else incidence[first:stop]
        overlap = (rows @ window_rows.T).toarray()
        union = sizes[start:stop, None] + sizes[None, first:stop] - overlap
        similarity = np.divide(overlap, union, out=np.zeros_like(overlap), where=union > 0)
        gap = np.arange(start, stop)[:, None] - np.arange(first, stop)[None, :]
        similarity[(gap <= 0) | (gap > window)] = 0.0
        best[start:stop] = similarity.max(axis=1)
        same_agent = agent_of[start:stop, None] == agent_of[None, first:stop]
        retries[start:stop] = np.count_nonzero((similarity > 0.8) & same_agent, axis=1)
    return best, retries


def compute_signals(view: TrajectoryView) -> Signals:
    """All signals of one trajectory, each an array of length n.

    Linear in the number of steps: each step's text is read once (at most MAX_CHARS of
    it) and compared with at most REPEAT_WINDOW steps before it; running sets and counters
    carry what the earlier steps said.

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
    lowered = [t.lower() for t in texts]
    token_sets = [_lowered_tokens(t) for t in lowered]
    number_sets = [set(_NUMBER.findall(t)) for t in texts]
    task_tokens = tokens(view.task_text)
    known_numbers = numbers(view.task_text)
    users = np.array([is_user_turn(s) for s in steps], dtype=np.float64)

    error_self = np.array(
        [
            1.0 if s.is_error or _ERROR.search(t, low) else 0.0
            for s, t, low in zip(steps, texts, lowered, strict=True)
        ]
    )
    error_next = np.concatenate((error_self[1:], [0.0]))
    error_prev = np.concatenate(([0.0], error_self[:-1]))

    def flags(signal: _Signal) -> NDArray[np.float64]:
        return np.array(
            [1.0 if signal.search(t, low) else 0.0 for t, low in zip(texts, lowered, strict=True)]
        )

    correction = flags(_CORRECTION)
    correction_next = np.concatenate((correction[1:], [0.0]))
    # correction_later[i] = 1 when any step after i is a correction: a running maximum
    # from the end.
    correction_later = np.zeros(n)
    if n > 1:
        correction_later[:-1] = np.maximum.accumulate(correction[:0:-1])[::-1]

    repeat_max, retry_count = _repetition(token_sets, [s.agent for s in steps])
    repeat_exact = np.zeros(n)
    new_numbers = np.zeros(n)
    new_number_share = np.zeros(n)
    seen: set[str] = set()
    known_numbers = set(known_numbers)
    for i in range(n):
        key = texts[i].strip()
        if key and key in seen:
            repeat_exact[i] = 1.0
        seen.add(key)
        fresh = number_sets[i] - known_numbers
        new_numbers[i] = np.log1p(len(fresh))
        new_number_share[i] = len(fresh) / len(number_sets[i]) if number_sets[i] else 0.0
        known_numbers |= fresh

    ignored = np.zeros(n)
    for i in range(n - 1):
        if steps[i].kind == "tool_result" or steps[i].role == "tool":
            result_tokens = token_sets[i] - token_sets[i - 1] if i else token_sets[i]
            informative = {t for t in result_tokens if len(t) > 3}
            if informative and informative.isdisjoint(token_sets[i + 1]):
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
        if mutating_found:
            continue
        if step.is_mutating or (step.kind == "tool_call" and step_mutates(step)):
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
        assume=flags(_ASSUME),
        correction_next=correction_next,
        correction_later=correction_later,
        conclude=flags(_CONCLUDE),
        task_overlap=task_overlap,
        task_recall=task_recall,
        is_user=users,
        **_tool_signals(view, error_self),
        **transient_errors(view, error_self),
    )


def transient_errors(
    view: TrajectoryView, errors: NDArray[np.float64]
) -> dict[str, NDArray[np.float64]]:
    """``transient_error``: the agent actions answered by an error the environment caused;
    ``after_transient``: the first agent action after each such error. A timeout or an
    overloaded service is not the calling agent's mistake; what an agent does next (carries
    on without the result, gives up, tries again) is where the rollout's course is decided.
    ``errors`` marks the steps that report an error (``error_self``: the flag or the
    words), and :func:`ingest.core.vocabulary.says_transient_error` reads the cause in a
    tool's result.

    Example:
        >>> from types import SimpleNamespace as NS
        >>> from attribution.core.view import scoring_view
        >>> view = scoring_view(NS(task_text="", steps=[
        ...     NS(role="assistant", kind="tool_call", tool_name="q", tool_args="{}",
        ...        content=""),
        ...     NS(role="tool", kind="tool_result", content="Error: request timed out"),
        ...     NS(role="assistant", content="I could not finish.")]))
        >>> found = transient_errors(view, np.array([0.0, 1.0, 0.0]))
        >>> found["transient_error"].tolist(), found["after_transient"].tolist()
        ([1.0, 0.0, 0.0], [0.0, 0.0, 1.0])
    """
    n = view.n_steps
    caused, answered = np.zeros(n), np.zeros(n)
    steps = view.steps
    for position in range(n - 1):
        result = steps[position + 1]
        if not (
            errors[position + 1]
            and result.kind == "tool_result"
            and is_agent_action(steps[position])
            and says_transient_error(result.content)
        ):
            continue
        caused[position] = 1.0
        after = next(
            (later for later in range(position + 2, n) if is_agent_action(steps[later])), None
        )
        if after is not None:
            answered[after] = 1.0
    return {"transient_error": caused, "after_transient": answered}


def _tool_signals(view: TrajectoryView, error_self: NDArray[np.float64]) -> dict[str, Any]:
    """The tool-calling signals of :class:`Signals` (see there), in one pass.

    Example:
        >>> from types import SimpleNamespace as NS
        >>> from attribution.core.view import scoring_view
        >>> def call(tool, args, i): return NS(role="assistant", kind="tool_call",
        ...     tool_name=tool, tool_args=args, tool_call_id=i, content="")
        >>> def out(text, i): return NS(role="tool", kind="tool_result", content=text,
        ...     tool_call_id=i)
        >>> view = scoring_view(NS(task_text="", steps=[
        ...     call("run_tests", "{}", "a"), out("2 passed", "a"),
        ...     call("edit_file", '{"path": "x.py"}', "b"), out("edited", "b"),
        ...     call("run_tests", "{}", "c"), out("1 failed, 1 passed", "c"),
        ...     call("submit", '{"summary": "Fixed; all tests pass."}', "d")]))
        >>> s = _tool_signals(view, compute_signals(view).error_self)
        >>> s["caught_change"].tolist()[2], s["check_error"].tolist()[4]
        (1.0, 1.0)
        >>> s["claim_after_error"].tolist()[6], s["repeat_first"].tolist()[4]
        (1.0, 0.0)
    """
    steps = view.steps
    n = len(steps)
    check_error, caught = np.zeros(n), np.zeros(n)
    claim, repeat_first = np.zeros(n), np.zeros(n)
    results = call_results(steps)
    last_call_of: dict[str, int] = {}  # tool -> position of its latest call
    seen_keys: set[tuple[str, str]] = set()
    repeated: set[tuple[str, str]] = set()
    last_change = -1  # the latest call known to change the state (an edit, a create)
    last_may_change = -1  # the latest call that may have (an unknown tool too)
    latest_check_failed = False
    for i, step in enumerate(steps):
        if step.kind != "tool_call" or not step.tool_name:
            closing = is_agent_action(step) and i == n - 1
            if closing and latest_check_failed and claims_success(step.content):
                claim[i] = 1.0
            continue
        failed = i in results and bool(error_self[results[i]])
        key = (step.tool_name, step.tool_args)
        mutates = step_mutates(step)
        rerun = key in seen_keys
        if HAND_IN_TOOL.search(step.tool_name):
            # The report is what the call hands in and what it said in the same turn.
            before = steps[i - 1] if i else None
            spoke = before is not None and before.kind == "message" and is_agent_action(before)
            said = before.content if before is not None and spoke else ""
            if latest_check_failed and claims_success(f"{said} {hand_in_report(step)}"):
                claim[i] = 1.0
        elif mutates is False or rerun:
            # The change a failing check caught is a call known to change state: a shell's
            # `git log` before the first test run is none, and that run shows the bug the
            # task is about.
            since = last_call_of.get(step.tool_name, -1)
            if failed and last_change > since:
                check_error[i] = 1.0
                caught[last_change] = 1.0
            if rerun and last_may_change <= since and key not in repeated:
                repeat_first[i] = 1.0
                repeated.add(key)
            latest_check_failed = failed
        elif not failed:
            last_may_change = i
            if mutates:
                last_change = i
            repeated.clear()
        last_call_of[step.tool_name] = i
        seen_keys.add(key)
    return {
        "check_error": check_error,
        "caught_change": caught,
        "claim_after_error": claim,
        "repeat_first": repeat_first,
    }
