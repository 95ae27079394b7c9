"""Plain-language names for misbehaviours, and a suggested MAST failure mode for each.

A name says what the agent did wrong, from the signals most of a cluster's steps share
(:mod:`analysis.core.behaviour`), the tool they call and a key phrase: the error template
most of them drew (:mod:`analysis.core.error_templates`) or, failing that, the words
that set the cluster apart. Every part is either fixed wording, a tool or agent name, or
masked text with its placeholders dropped, so no task entity (a person, a code, a city)
can reach a name.

Example:
    >>> from analysis.core.behaviour import INVENTED_ARGUMENT, UNCONFIRMED_MUTATION
    >>> summary = ClusterSummary(
    ...     signal_shares={UNCONFIRMED_MUTATION: 0.9, INVENTED_ARGUMENT: 0.6},
    ...     tool="update_reservation_flights", tool_share=1.0,
    ...     template="Error: gift card balance is not enough", template_share=0.7)
    >>> behaviour_name(summary)
    "Calls update_reservation_flights without the user's confirmation, with an argument value nobody gave (gift card balance is not enough)"
    >>> suggest_mast(summary)
    'MAST-1'
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from analysis.core.behaviour import (
    DREW_ERROR,
    GAVE_UP_AFTER_FAILURE,
    IGNORED_ERROR,
    INVENTED_ARGUMENT,
    MISSED_GOLD_ACTION,
    OFF_GOLD_ARGUMENTS,
    REPEATED_ACTION,
    UNCONFIRMED_MUTATION,
    UNNEEDED_MUTATION,
    UNSUPPORTED_CLAIM,
)
from analysis.core.masking import strip_placeholders

MAST_FILE = Path(__file__).resolve().parents[1] / "data" / "mast.json"
#: A signal (or tool, or error template) names a cluster when at least this share of its
#: steps has it: then it describes the typical member, not a few.
DOMINANT = 0.5
NAME_CHARS = 200
PHRASE_CHARS = 80
#: Least number of distinct content words a cluster's text must share with a MAST
#: definition for that mode to be suggested without a signal that implies one.
MAST_MIN_SHARED = 2

# signal -> (lead verb phrase with {tool}, its form without a tool, the clause it adds
# as a second signal). Ordered from the most specific behaviour to the least.
PHRASES: dict[str, tuple[str, str, str]] = {
    UNCONFIRMED_MUTATION: (
        "calls {tool} without the user's confirmation",
        "changes state without the user's confirmation",
        "without the user's confirmation",
    ),
    INVENTED_ARGUMENT: (
        "calls {tool} with an argument value nobody gave",
        "uses an argument value nobody gave",
        "with an argument value nobody gave",
    ),
    IGNORED_ERROR: (
        "carries on with {tool} after an error without changing anything",
        "carries on after an error without changing anything",
        "ignoring the error before it",
    ),
    REPEATED_ACTION: (
        "repeats the same {tool} call",
        "repeats the same action",
        "repeating an earlier action",
    ),
    GAVE_UP_AFTER_FAILURE: (
        "gives up with {tool} right after a failure",
        "gives up right after a failure",
        "right after a failure",
    ),
    UNSUPPORTED_CLAIM: (
        "gives a final answer that no observation supports",
        "gives a final answer that no observation supports",
        "claiming what no observation supports",
    ),
    UNNEEDED_MUTATION: (
        "calls {tool}, which the task does not ask for",
        "makes a change the task does not ask for",
        "a change the task does not ask for",
    ),
    OFF_GOLD_ARGUMENTS: (
        "calls {tool} with arguments the task does not call for",
        "uses arguments the task does not call for",
        "with arguments the task does not call for",
    ),
    MISSED_GOLD_ACTION: (
        "stops without an action the task needs",
        "stops without an action the task needs",
        "leaving out an action the task needs",
    ),
    DREW_ERROR: ("calls {tool} and gets an error", "gets an error", "and gets an error"),
}
#: The MAST mode a signal implies (codes of analysis/data/mast.json).
SIGNAL_MAST = {
    UNCONFIRMED_MUTATION: "MAST-1",  # ignores a stated constraint (confirm before acting)
    UNNEEDED_MUTATION: "MAST-1",
    OFF_GOLD_ARGUMENTS: "MAST-1",
    INVENTED_ARGUMENT: "MAST-7",  # guesses missing data instead of asking
    REPEATED_ACTION: "MAST-3",
    IGNORED_ERROR: "MAST-10",
    GAVE_UP_AFTER_FAILURE: "MAST-11",
    MISSED_GOLD_ACTION: "MAST-11",
    UNSUPPORTED_CLAIM: "MAST-12",
}
_WORD = re.compile(r"[a-z]{3,}")
# Words of every step text and of every MAST definition's framing: they point to no mode.
_FRAMING = frozenset(
    {"agent", "agents", "another", "message", "messages", "tool", "tools", "user", "users"}
    | {"task", "tasks", "step", "steps", "assistant", "orchestrator", "call", "calls"}
)
# A parenthesis of the key phrase that held only ids or numbers: "(gift_card_<id>)".
_MASKED_ASIDE = re.compile(r"\s*\([^()]*…[^()]*\)")
_ERROR_PREFIX = re.compile(r"^\s*(error|exception)\s*:\s*", re.IGNORECASE)


@dataclass
class ClusterSummary:
    """What a name is made of: shares of the members' signals, tool and error template."""

    signal_shares: dict[str, float] = field(default_factory=dict)
    tool: str = ""
    tool_share: float = 0.0
    agent: str = ""
    agent_share: float = 0.0
    template: str = ""
    template_share: float = 0.0
    terms: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # per member, for the MAST suggestion


def _dominant(values: Sequence[str]) -> tuple[str, float]:
    counts = Counter(value for value in values if value)
    if not counts or not values:
        return "", 0.0
    value, count = min(counts.items(), key=lambda item: (-item[1], item[0]))
    return value, count / len(values)


def summarise(
    *,
    signals: Sequence[Sequence[str]],
    tools: Sequence[str],
    agents: Sequence[str],
    templates: Sequence[str],
    terms: Sequence[str] = (),
    texts: Sequence[str] = (),
) -> ClusterSummary:
    """The summary of one cluster from its members' signals, tools, agents and templates.

    >>> summarise(signals=[["a"], ["a", "b"]], tools=["t", "t"], agents=["x", "y"],
    ...           templates=["", "E"]).signal_shares
    {'a': 1.0, 'b': 0.5}
    """
    counts: Counter[str] = Counter(name for names in signals for name in set(names))
    size = max(len(signals), 1)
    tool, tool_share = _dominant(tools)
    agent, agent_share = _dominant(agents)
    template, template_share = _dominant(templates)
    return ClusterSummary(
        signal_shares={name: count / size for name, count in sorted(counts.items())},
        tool=tool,
        tool_share=tool_share,
        agent=agent,
        agent_share=agent_share,
        template=template,
        template_share=template_share,
        terms=list(terms),
        texts=list(texts),
    )


def key_phrase(summary: ClusterSummary) -> str:
    """The dominant error template without placeholders or "Error:", else the top terms.

    >>> key_phrase(ClusterSummary(template="Error: flight <id> not available on <date>",
    ...                           template_share=0.8))
    'flight … not available on …'
    """
    if summary.template and summary.template_share >= DOMINANT:
        phrase = _MASKED_ASIDE.sub("", strip_placeholders(_ERROR_PREFIX.sub("", summary.template)))
        if phrase.strip("… "):
            return phrase[:PHRASE_CHARS].rstrip()
    return ", ".join(summary.terms[:3])


def behaviour_name(summary: ClusterSummary) -> str:
    """The name of a cluster whose steps share a signal; "" when none dominates."""
    dominant = [name for name in PHRASES if summary.signal_shares.get(name, 0.0) >= DOMINANT]
    if len(dominant) > 1 and DREW_ERROR in dominant:
        dominant.remove(DREW_ERROR)  # the key phrase already says which error
    if not dominant:
        return ""
    tool = summary.tool if summary.tool_share >= DOMINANT else ""
    with_tool, without_tool, _ = PHRASES[dominant[0]]
    lead = with_tool.format(tool=tool) if tool and "{tool}" in with_tool else without_tool
    if len(dominant) > 1:
        lead += ", " + PHRASES[dominant[1]][2]
    agent = summary.agent if summary.agent_share >= DOMINANT else ""
    if agent and agent.lower() not in ("assistant", "agent", ""):
        name = f"{agent} {lead}"
    else:
        name = lead[:1].upper() + lead[1:]
    phrase = key_phrase(summary)
    if phrase:
        name += f" ({phrase})"
    return name[:NAME_CHARS]


def shipped_modes() -> list[dict[str, str]]:
    """MAST's 14 modes from analysis/data/mast.json ({code, group, name, definition})."""
    return list(json.loads(MAST_FILE.read_text(encoding="utf-8"))["modes"])


def _stems(text: str) -> Counter[str]:
    """Counts of crude stems (first five letters) of the content words of a text."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return Counter(
        word[:5]
        for word in _WORD.findall(text.lower())
        if word not in ENGLISH_STOP_WORDS and word not in _FRAMING
    )


def _closest_mode(text: str, modes: Sequence[Mapping[str, str]]) -> str | None:
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


def suggest_mast(
    summary: ClusterSummary, modes: Sequence[Mapping[str, str]] | None = None
) -> str | None:
    """The MAST code a cluster most likely belongs to, or None when nothing points to one.

    A dominant signal that implies a mode decides (the most specific signal first).
    Otherwise each member's text (its masked label reason, else its step text) votes for
    the mode whose name and definition are closest to it by TF-IDF cosine over word
    stems (idf across the modes, so words every definition uses weigh nothing, divided
    by the definition's norm, so a long definition does not win by length; a vote needs
    ``MAST_MIN_SHARED`` shared stems), and a mode is suggested when it has the votes of
    at least ``DOMINANT`` of the members. Pooling every member's words into one text
    instead lets the words all diagnoses share ("incorrect", "result") pick the mode.

    >>> suggest_mast(ClusterSummary(texts=["the agent did not verify the result it reported"]))
    'MAST-12'
    """
    for name in PHRASES:
        if summary.signal_shares.get(name, 0.0) >= DOMINANT and name in SIGNAL_MAST:
            return SIGNAL_MAST[name]
    modes = list(modes) if modes is not None else shipped_modes()
    texts = [text for text in summary.texts if text]
    if not modes or not texts:
        return None
    votes = Counter(_closest_mode(text, modes) for text in texts)
    votes.pop(None, None)
    if not votes:
        return None
    code, count = min(votes.items(), key=lambda item: (-item[1], str(item[0])))
    return code if count >= DOMINANT * len(texts) else None
