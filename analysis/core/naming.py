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
    "Calls update_reservation_flights without the user's confirmation, with a value nobody provided (gift card balance is not enough)"
    >>> suggest_mast(summary)
    'MAST-1'
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
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
from analysis.core.phrases import is_clean, scrub, words_of

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
# as a second signal). Ordered from the most specific behaviour to the least. The
# wording avoids words a task text may hold ("ask", "book"): issue 12's name rule is
# literal, so even fixed wording must not repeat a rare word of a member's task.
PHRASES: dict[str, tuple[str, str, str]] = {
    UNCONFIRMED_MUTATION: (
        "calls {tool} without the user's confirmation",
        "changes state without the user's confirmation",
        "without the user's confirmation",
    ),
    INVENTED_ARGUMENT: (
        "calls {tool} with a value nobody provided",
        "uses a value nobody provided",
        "with a value nobody provided",
    ),
    IGNORED_ERROR: (
        "carries on with {tool} after an error without changing anything",
        "carries on after an error without changing anything",
        "after an error, changing nothing",
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
        "calls {tool}, a change the task never called for",
        "makes a change the task never called for",
        "a change the task never called for",
    ),
    OFF_GOLD_ARGUMENTS: (
        "calls {tool} with arguments other than the task's",
        "uses arguments other than the task's",
        "with arguments other than the task's",
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
# Agent names that say nothing about the agent: "The assistant" stands for them.
GENERIC_AGENTS = frozenset({"assistant", "agent", "ai", "model", "bot", ""})
_ERROR_PREFIX = re.compile(r"^\s*(error|exception)\s*:\s*", re.IGNORECASE)


@dataclass
class ClusterSummary:
    """What a name is made of: shares of the members' signals, tool, agent, step kind and
    error template, the masked key phrase, and the words the name must not contain."""

    signal_shares: dict[str, float] = field(default_factory=dict)
    tool: str = ""
    tool_share: float = 0.0
    agent: str = ""
    agent_share: float = 0.0
    template: str = ""
    template_share: float = 0.0
    terms: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # per member, for the MAST suggestion
    kind: str = ""
    kind_share: float = 0.0
    phrase: str = ""  # the masked key phrase (analysis.core.phrases.key_phrases)
    # The key phrase of the members' label reasons (a human's diagnosis), if shared.
    diagnosis: str = ""
    # The agents' shared last name part ("Expert" of "Verification_Expert") and its share.
    agent_family: str = ""
    agent_family_share: float = 0.0
    forbidden: frozenset[str] = frozenset()  # rare words of the members' task texts


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
    kinds: Sequence[str] = (),
    phrase: str = "",
    forbidden: Collection[str] = (),
    diagnosis: str = "",
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
    kind, kind_share = _dominant(kinds)
    family, family_share = _dominant([agent_family(agent) for agent in agents])
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
        kind=kind,
        kind_share=kind_share,
        phrase=phrase,
        diagnosis=diagnosis,
        agent_family=family,
        agent_family_share=family_share,
        forbidden=frozenset(word.lower() for word in forbidden),
    )


_LAST_PART = re.compile(r"(?:^|_|(?<=[a-z])(?=[A-Z]))([A-Za-z]+)$")


def agent_family(agent: str) -> str:
    """The last part of an agent's name, which says what kind of agent it is.

    >>> agent_family("Verification_Expert"), agent_family("WebSurfer"), agent_family("x (thought)")
    ('Expert', 'WebSurfer', '')
    """
    match = _LAST_PART.search(agent.strip())
    return match.group(1) if match and " " not in agent.strip() else ""


def _enough_words(phrase: str) -> bool:
    return len(_WORD.findall(phrase.lower())) >= 2


def template_phrase(template: str, forbidden: Collection[str] = ()) -> str:
    """An error template as a name may show it: no placeholders, no "Error:", no
    forbidden word; "" when fewer than two words are left.

    >>> template_phrase("Error: flight <id> not available on <date>")
    'flight … not available on …'
    """
    phrase = _MASKED_ASIDE.sub("", strip_placeholders(_ERROR_PREFIX.sub("", template)))
    phrase = scrub(phrase, forbidden)[:PHRASE_CHARS].rstrip()
    return phrase if _enough_words(phrase) else ""


def key_phrase(summary: ClusterSummary) -> str:
    """The dominant error template without placeholders or "Error:", else the masked key
    phrase; the words the name must avoid are cut out ("…"), and a phrase left with
    fewer than two words is dropped.

    >>> key_phrase(ClusterSummary(template="Error: flight <id> not available on <date>",
    ...                           template_share=0.8))
    'flight … not available on …'
    >>> key_phrase(ClusterSummary(phrase="provide your reservation id"))
    '“provide your reservation id”'
    """
    if summary.template and summary.template_share >= DOMINANT:
        phrase = template_phrase(summary.template, summary.forbidden)
        if phrase:
            return phrase
    phrase = scrub(summary.phrase, summary.forbidden)[:PHRASE_CHARS].rstrip()
    return f"“{phrase}”" if _enough_words(phrase) else ""


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def _actor(summary: ClusterSummary) -> tuple[str, str]:
    """Who acts, as a name's subject, and the kind the agent's name itself says.

    Who&When names a thought or an instruction in the agent: "Orchestrator (thought)",
    "Orchestrator (-> WebSurfer)". An agent named with a rare word of a member's task
    ("Paintball_Expert") is called "An agent" instead.
    """
    if summary.agent_share < DOMINANT or not summary.agent:
        family = summary.agent_family if summary.agent_family_share >= DOMINANT else ""
        if family and family.lower() not in GENERIC_AGENTS | summary.forbidden:
            article = "An" if family[:1].lower() in "aeiou" else "A"
            return f"{article} {family.lower()}", ""
        return "An agent", ""
    agent, _, aside = summary.agent.partition(" (")
    aside = aside.rstrip(")").strip()
    if agent.lower() in GENERIC_AGENTS:
        return "The assistant", aside
    if words_of(agent) & summary.forbidden:
        return "An agent", aside
    return agent, aside


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
    if not is_clean(lead, summary.forbidden):
        lead = without_tool if is_clean(without_tool, summary.forbidden) else ""
    if not lead:
        return ""
    actor, _ = _actor(summary)
    name = _capitalised(lead) if actor in ("An agent", "The assistant") else f"{actor} {lead}"
    phrase = key_phrase(summary)
    if phrase:
        name += f" ({phrase})"
    return name[:NAME_CHARS]


def structural_name(summary: ClusterSummary) -> str:
    """A sentence from who acts, how (step kind, tool) and the key phrase, for a cluster
    no signal dominates.

    >>> structural_name(ClusterSummary(agent="Orchestrator (thought)", agent_share=0.9,
    ...     kind="message", kind_share=1.0, phrase="we still need the list"))
    'Orchestrator plans “we still need the list”'
    >>> structural_name(ClusterSummary(kind="tool_call", kind_share=1.0, tool="search",
    ...     tool_share=0.8))
    'Calls search'
    """
    actor, aside = _actor(summary)
    kind = summary.kind if summary.kind_share >= DOMINANT else ""
    tool = summary.tool if summary.tool_share >= DOMINANT else ""
    if kind == "tool_call" or (tool and kind != "tool_result"):
        verb = f"calls {tool}" if tool else "calls tools"
    elif kind == "tool_result":
        verb = f"reads the result of {tool}" if tool else "reads a tool result"
    elif kind == "thought" or aside == "thought":
        verb = "plans"
    elif aside.startswith("->"):
        target = aside[2:].strip()
        clean_target = target and not words_of(target) & summary.forbidden
        verb = f"instructs {target}" if clean_target else "instructs another agent"
    elif kind == "system":
        verb = "sets up the conversation"
    else:
        verb = "says"
    # The name rule is literal: even "assistant", "message" or a tool's name must give
    # way when it is a rare word of a member's task text.
    forbidden = summary.forbidden
    subjects = [actor, "An agent", "The agent", "It"]
    actor = next(subject for subject in subjects if is_clean(subject, forbidden) or subject == "It")
    generic = actor in ("An agent", "The assistant", "The agent", "It")
    alternatives = {"says": ["says", "writes"], "plans": ["plans", "thinks ahead"]}
    verbs = alternatives.get(verb, [verb, "calls a tool" if verb.startswith("calls") else "acts"])
    verb = next((v for v in verbs if is_clean(v, forbidden)), verbs[-1])
    subject = "" if generic and verb.startswith("calls") else f"{actor} "
    phrase = key_phrase(summary)
    name = _capitalised(f"{subject}{verb}")
    if phrase:
        name += (
            f" {phrase}" if verb in ("says", "plans", "writes", "thinks ahead") else f" ({phrase})"
        )
    elif verb in ("says", "writes"):
        ending = next(
            (e for e in ("writes a message", "replies", "writes") if is_clean(e, forbidden)),
            "writes",
        )
        name = _capitalised(f"{subject}{ending}")
    elif verb in ("plans", "thinks ahead"):
        name += " the next step"
    return name[:NAME_CHARS]


def name_cluster(summary: ClusterSummary) -> str:
    """A plain-language name: led by the dominant signals when there are any, else by
    who acts and how; with the key phrase, then the phrase the members' label reasons
    share (a human's diagnosis); never a word the summary forbids.

    >>> name_cluster(ClusterSummary(agent="WebSurfer", agent_share=1.0, kind="message",
    ...     kind_share=1.0, diagnosis="clicks an irrelevant link"))
    'WebSurfer writes a message (diagnosed as “clicks an irrelevant link”)'
    """
    name = behaviour_name(summary) or structural_name(summary)
    diagnosis = scrub(summary.diagnosis, summary.forbidden)[:PHRASE_CHARS].rstrip()
    aside = f" (diagnosed as “{diagnosis}”)"
    if _enough_words(diagnosis) and is_clean(aside, summary.forbidden):
        name = name[: NAME_CHARS - len(aside)] + aside
    return name


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
