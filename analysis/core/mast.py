"""The MAST failure mode suggested for a misbehaviour (codes of analysis/data/mast.json):
the one a dominant signal implies, else the one most members' texts are closest to.

Example:
    >>> from analysis.core.behaviour import INVENTED_ARGUMENT, UNCONFIRMED_MUTATION
    >>> mast_suggestion(ClusterSummary(
    ...     signal_shares={UNCONFIRMED_MUTATION: 0.9, INVENTED_ARGUMENT: 0.6})).code
    'MAST-1'
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from analysis.core.behaviour import (
    CLAIMED_SUCCESS,
    EDITED_FAILING_TEST,
    GAVE_UP_AFTER_FAILURE,
    IGNORED_ERROR,
    INVENTED_ARGUMENT,
    MADE_UP_DATA,
    MISSED_GOLD_ACTION,
    OFF_GOLD_ARGUMENTS,
    REPEATED_ACTION,
    REPORTED_UNMADE_CHANGE,
    SKIPPED_GOLD_ACTION,
    UNCHECKED_APPROVAL,
    UNCONFIRMED_MUTATION,
    UNNEEDED_MUTATION,
    UNREAD_EDIT,
    UNSUPPORTED_CLAIM,
)
from analysis.core.cluster_summary import ClusterSummary
from analysis.core.naming import DOMINANT, PHRASES, WORD

MAST_FILE = Path(__file__).resolve().parents[1] / "data" / "mast.json"
BASIS_SIGNAL = "signal"
BASIS_WORDING = "wording"
#: A suggestion at least this many of a misbehaviour's steps point to is strong: the pages
#: call one below it weak, and only a strong one groups the overview's treemap.
STRONG_SUPPORT = 0.5
#: Least number of distinct content words a cluster's text must share with a MAST
#: definition for that mode to be suggested without a signal that implies one.
MAST_MIN_SHARED = 2
#: The MAST mode a signal implies (codes of analysis/data/mast.json).
SIGNAL_MAST = {
    UNCONFIRMED_MUTATION: "MAST-1",  # ignores a stated constraint (confirm before acting)
    UNNEEDED_MUTATION: "MAST-1",
    OFF_GOLD_ARGUMENTS: "MAST-1",
    INVENTED_ARGUMENT: "MAST-7",  # guesses missing data instead of asking
    MADE_UP_DATA: "MAST-7",
    REPEATED_ACTION: "MAST-3",
    IGNORED_ERROR: "MAST-10",
    GAVE_UP_AFTER_FAILURE: "MAST-11",
    MISSED_GOLD_ACTION: "MAST-11",
    SKIPPED_GOLD_ACTION: "MAST-1",  # does something other than what the task asks
    UNSUPPORTED_CLAIM: "MAST-12",
    CLAIMED_SUCCESS: "MAST-14",  # its own check failed, and it reports the work as passed
    REPORTED_UNMADE_CHANGE: "MAST-12",  # reports a change without having made or checked it
    UNREAD_EDIT: "MAST-12",  # changes what it never checked
    EDITED_FAILING_TEST: "MAST-1",  # bends the task's own check instead of meeting it
    UNCHECKED_APPROVAL: "MAST-12",  # a review that checked nothing
}
#: Modes that need a second agent: a misbehaviour of single-agent rollouts is never one
#: (carrying on past a tool's error there is no "ignored other agent's input").
INTER_AGENT_MODES = frozenset({"MAST-6", "MAST-9", "MAST-10"})
# Words of every step text and of every MAST definition's framing: they point to no mode.
_FRAMING = frozenset(
    {"agent", "agents", "another", "message", "messages", "tool", "tools", "user", "users"}
    | {"task", "tasks", "step", "steps", "assistant", "orchestrator", "call", "calls"}
)


def shipped_modes() -> list[dict[str, str]]:
    """MAST's 14 modes from analysis/data/mast.json ({code, group, name, definition})."""
    return list(json.loads(MAST_FILE.read_text(encoding="utf-8"))["modes"])


def _stems(text: str) -> Counter[str]:
    """Counts of crude stems (first five letters) of the content words of a text."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return Counter(
        word[:5]
        for word in WORD.findall(text.lower())
        if word not in ENGLISH_STOP_WORDS and word not in _FRAMING
    )


def closest_mode(text: str, modes: Sequence[Mapping[str, str]]) -> str | None:
    """The mode whose name and definition are closest to a text (TF-IDF cosine on stems)."""
    mode_stems = [set(_stems(f"{mode['name']} {mode.get('definition', '')}")) for mode in modes]
    used_by = Counter(stem for stems in mode_stems for stem in stems)
    idf = {stem: math.log(1 + len(modes) / count) for stem, count in used_by.items()}
    wanted = _stems(text)
    best: tuple[float, str] | None = None
    for mode, stems in zip(modes, mode_stems):
        shared = stems & set(wanted)
        if len(shared) < MAST_MIN_SHARED:
            continue
        norm = math.sqrt(sum(idf[stem] ** 2 for stem in stems)) or 1.0
        score = sum(wanted[stem] * idf[stem] ** 2 for stem in shared) / norm
        if best is None or score > best[0]:
            best = (score, mode["code"])
    return best[1] if best else None


@dataclass(frozen=True)
class MastSuggestion:
    """A suggested mode, with how many members point to it and through what."""

    code: str
    support: float  # share of the members whose signal or wording points to the mode
    basis: str  # BASIS_SIGNAL or BASIS_WORDING


def mast_suggestion(
    summary: ClusterSummary,
    modes: Sequence[Mapping[str, str]] | None = None,
) -> MastSuggestion | None:
    """The MAST mode a cluster most likely belongs to, or None when nothing points to one.

    A dominant signal that implies a mode decides (the most specific signal first).
    Otherwise each member's text (its masked label reason, else its step text) votes for
    the mode whose name and definition are closest to it by TF-IDF cosine over word
    stems (idf across the modes, so words every definition uses weigh nothing, divided
    by the definition's norm, so a long definition does not win by length; a vote needs
    ``MAST_MIN_SHARED`` shared stems), and the mode with the most votes is suggested,
    with the share of members it has (its support). Every misbehaviour gets one (issue 12
    asks for a suggestion for each) and the pages show the support so the user can weigh
    it: a rule that waited for half the members suggested a mode for 1 of 8 Who&When
    clusters, never the annotated one (``python -m analysis.evaluation.mast_report``
    measures both, and a floor at chance). Pooling every member's words into one text
    instead lets the words all diagnoses share ("incorrect", "result") pick the mode.

    >>> mast_suggestion(ClusterSummary(texts=["the agent did not verify the result it reported"]))
    MastSuggestion(code='MAST-12', support=1.0, basis='wording')

    Most members from rollouts of one agent: no mode of :data:`INTER_AGENT_MODES`, the
    next dominant signal decides.

    >>> from analysis.core.behaviour import IGNORED_ERROR, REPEATED_ACTION
    >>> shares = {IGNORED_ERROR: 1.0, REPEATED_ACTION: 1.0}
    >>> mast_suggestion(ClusterSummary(signal_shares=shares)).code
    'MAST-10'
    >>> mast_suggestion(ClusterSummary(signal_shares=shares, one_agent_share=1.0)).code
    'MAST-3'
    """
    alone = summary.one_agent_share > 0.5
    for name in PHRASES:
        share = summary.signal_shares.get(name, 0.0)
        code = SIGNAL_MAST.get(name)
        if share >= DOMINANT and code and not (alone and code in INTER_AGENT_MODES):
            return MastSuggestion(code, round(share, 4), BASIS_SIGNAL)
    modes = list(modes) if modes is not None else shipped_modes()
    if alone:
        modes = [mode for mode in modes if mode["code"] not in INTER_AGENT_MODES]
    texts = [text for text in summary.texts if text]
    if not modes or not texts:
        return None
    votes = Counter(closest_mode(text, modes) for text in texts)
    votes.pop(None, None)
    if not votes:
        return None
    code, count = min(votes.items(), key=lambda item: (-item[1], str(item[0])))
    return MastSuggestion(str(code), round(count / len(summary.texts), 4), BASIS_WORDING)
