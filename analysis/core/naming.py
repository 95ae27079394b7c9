"""Plain-language names for misbehaviours.

A name says what the agent did wrong, from the signals most of a cluster's steps share
(:mod:`analysis.core.behaviour`), the tool they call and a key phrase: the error template
most of them drew (:mod:`analysis.core.error_templates`) or, failing that, the words
that set the cluster apart. Every part is either fixed wording, a tool or agent name, or
masked text with its placeholders dropped, so no task entity (a person, a code, a city)
can reach a name. What a name is made of is a :class:`~analysis.core.cluster_summary.ClusterSummary`;
the MAST mode suggested beside it is :mod:`analysis.core.mast`'s.

Example:
    >>> from analysis.core.behaviour import INVENTED_ARGUMENT, UNCONFIRMED_MUTATION
    >>> summary = ClusterSummary(
    ...     signal_shares={UNCONFIRMED_MUTATION: 0.9, INVENTED_ARGUMENT: 0.6},
    ...     tool="update_reservation_flights", tool_share=1.0,
    ...     template="Error: gift card balance is not enough", template_share=0.7)
    >>> behaviour_name(summary)
    "Calls update_reservation_flights without the user's confirmation, with a value nobody provided (gift card balance is not enough)"
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import replace

from analysis.core.behaviour import (
    CLAIMED_SUCCESS,
    DREW_ERROR,
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
from analysis.core.masking import strip_placeholders
from analysis.core.phrases import is_clean, scrub, words_of

#: A signal (or tool, or error template) names a cluster when at least this share of its
#: steps has it: then it describes the typical member, not a few.
DOMINANT = 0.5
NAME_CHARS = 200
PHRASE_CHARS = 80

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
    MADE_UP_DATA: (
        "calls {tool} on made-up stand-in values",
        "works on made-up stand-in values",
        "on made-up stand-in values",
    ),
    CLAIMED_SUCCESS: (
        "reports success right after {tool} failed",
        "reports success right after a failure",
        "reporting success right after a failure",
    ),
    REPORTED_UNMADE_CHANGE: (
        "reports a change no call made",
        "reports a change no call made",
        "reporting a change no call made",
    ),
    UNREAD_EDIT: (
        "changes a file with {tool} without reading it first",
        "changes a file without reading it first",
        "changing a file it had not read",
    ),
    EDITED_FAILING_TEST: (
        "changes a test with {tool} after the tests failed",
        "changes a test after the tests failed",
        "changing a test after it failed",
    ),
    UNCHECKED_APPROVAL: (
        "approves another agent's work without checking it",
        "approves another agent's work without checking it",
        "approving unchecked work",
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
        "calls {tool}, leaving out an action the task needs",
        "leaves out an action the task needs",
        "leaving out an action the task needs",
    ),
    SKIPPED_GOLD_ACTION: (
        "calls {tool} where the task needs another action",
        "does something else where the task needs an action",
        "where the task needs another action",
    ),
    DREW_ERROR: ("calls {tool} and gets an error", "gets an error", "and gets an error"),
}


# What a lead wording already says, so no second clause repeats it: "reports success right
# after a failure" needs no ", after an error, changing nothing".
IMPLIED: dict[str, frozenset[str]] = {
    CLAIMED_SUCCESS: frozenset(
        {IGNORED_ERROR, GAVE_UP_AFTER_FAILURE, DREW_ERROR, REPORTED_UNMADE_CHANGE}
    ),
    GAVE_UP_AFTER_FAILURE: frozenset({IGNORED_ERROR, DREW_ERROR}),
}


def describe_signal(name: str) -> str:
    """A behaviour signal as a page says it of one step.

    >>> describe_signal("unconfirmed_mutation")
    "changes state without the user's confirmation"
    >>> describe_signal("some_new_signal")
    'some new signal'
    """
    wordings = PHRASES.get(name)
    return wordings[1] if wordings else name.replace("_", " ")


def describe_signals(names: Collection[str]) -> list[str]:
    """Several signals of one step in words, most specific first, as names order them.

    >>> describe_signals(["drew_error", "invented_argument"])
    ['uses a value nobody provided', 'gets an error']
    """
    order = {name: position for position, name in enumerate(PHRASES)}
    unknown = len(order)  # a signal without a wording goes last
    return [
        describe_signal(name) for name in sorted(names, key=lambda n: (order.get(n, unknown), n))
    ]


# Second wordings of each signal, in other words: the name rule forbids any word that is
# rare across the project's task texts but in a member's, and that can be a plain word of
# the first wording ("other" in 14 of the demo's 384 tasks took "with arguments other than
# the task's" out of an airline misbehaviour's name, leaving "Calls book_reservation").
# Each is tried in turn, the first wording first.
ALTERNATIVE_PHRASES: dict[str, tuple[tuple[str, str, str], ...]] = {
    UNCONFIRMED_MUTATION: (
        (
            "calls {tool} before the user agreed",
            "changes state before the user agreed",
            "before the user agreed",
        ),
    ),
    INVENTED_ARGUMENT: (
        ("calls {tool} with an invented value", "uses an invented value", "with an invented value"),
    ),
    MADE_UP_DATA: (
        ("calls {tool} on placeholder data", "works on placeholder data", "on placeholder data"),
    ),
    CLAIMED_SUCCESS: (
        (
            "says {tool} worked when it had just failed",
            "says it worked when it had just failed",
            "saying it worked when it had just failed",
        ),
    ),
    REPORTED_UNMADE_CHANGE: (
        (
            "says it did what no call did",
            "says it did what no call did",
            "saying it did what no call did",
        ),
    ),
    UNREAD_EDIT: (
        (
            "overwrites a file with {tool} unseen",
            "overwrites a file unseen",
            "overwriting a file unseen",
        ),
    ),
    EDITED_FAILING_TEST: (
        (
            "edits a failing test with {tool}",
            "edits a failing test",
            "editing a failing test",
        ),
    ),
    UNCHECKED_APPROVAL: (
        (
            "signs off on work it never checked",
            "signs off on work it never checked",
            "signing off unchecked",
        ),
    ),
    IGNORED_ERROR: (
        (
            "retries {tool} unchanged after a failure",
            "retries unchanged after a failure",
            "retrying unchanged after a failure",
        ),
    ),
    REPEATED_ACTION: (
        (
            "calls {tool} again with the same input",
            "does the same thing again",
            "doing the same thing again",
        ),
    ),
    GAVE_UP_AFTER_FAILURE: (
        (
            "stops at {tool} as soon as something fails",
            "stops as soon as something fails",
            "stopping as soon as something fails",
        ),
    ),
    UNSUPPORTED_CLAIM: (
        (
            "claims a result nothing in the trace shows",
            "claims a result nothing in the trace shows",
            "claiming a result nothing shows",
        ),
    ),
    UNNEEDED_MUTATION: (
        (
            "calls {tool}, an unrequested change",
            "makes an unrequested change",
            "an unrequested change",
        ),
    ),
    OFF_GOLD_ARGUMENTS: (
        (
            "calls {tool} with arguments unlike the expected ones",
            "uses arguments unlike the expected ones",
            "with arguments unlike the expected ones",
        ),
    ),
    MISSED_GOLD_ACTION: (
        (
            "calls {tool}, skipping a required action",
            "skips a required action",
            "skipping a required action",
        ),
    ),
    SKIPPED_GOLD_ACTION: (
        (
            "calls {tool} in place of a required action",
            "acts in place of a required action",
            "in place of a required action",
        ),
    ),
    DREW_ERROR: (("calls {tool} and fails", "fails", "and fails"),),
}


def signal_wordings(signal: str) -> list[tuple[str, str, str]]:
    """Every wording of a signal, the preferred first: (lead with {tool}, lead without a
    tool, clause after another signal).

    >>> [clause for _, _, clause in signal_wordings(OFF_GOLD_ARGUMENTS)]
    ["with arguments other than the task's", 'with arguments unlike the expected ones']
    """
    return [PHRASES[signal], *ALTERNATIVE_PHRASES.get(signal, ())]


def _first_clean(options: list[str], forbidden: Collection[str]) -> str:
    return next((option for option in options if is_clean(option, forbidden)), "")


#: A word, as names and the MAST suggestion count them.
WORD = re.compile(r"[a-z]{3,}")
# A parenthesis of the key phrase that held only ids or numbers: "(gift_card_<id>)".
_MASKED_ASIDE = re.compile(r"\s*\([^()]*…[^()]*\)")
# Agent names that say nothing about the agent: "The assistant" stands for them.
GENERIC_AGENTS = frozenset({"assistant", "agent", "ai", "model", "bot", ""})
_ERROR_PREFIX = re.compile(r"^\s*(error|exception)\s*:\s*", re.IGNORECASE)


def _enough_words(phrase: str) -> bool:
    return len(WORD.findall(phrase.lower())) >= 2


def template_phrase(template: str, forbidden: Collection[str] = ()) -> str:
    """An error template as a name may show it: no placeholders, no "Error:", no
    forbidden word; "" when fewer than two words are left.

    >>> template_phrase("Error: flight <id> not available on <date>")
    'flight … not available on …'
    """
    phrase = _MASKED_ASIDE.sub("", strip_placeholders(_ERROR_PREFIX.sub("", template)))
    phrase = clip(scrub(phrase, forbidden))
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
    return _key_phrase_of(summary)[0]


def _key_phrase_of(summary: ClusterSummary) -> tuple[str, bool]:
    """:func:`key_phrase` and whether it is the dominant error template."""
    if summary.template and summary.template_share >= DOMINANT:
        phrase = template_phrase(summary.template, summary.forbidden)
        if phrase:
            return phrase, True
    phrase = clip(scrub(summary.phrase, summary.forbidden))
    return (f"“{phrase}”" if _enough_words(phrase) else ""), False


#: Below DOMINANT a key phrase is what some members say, and the name says so: "often"
#: down to this share, "sometimes" below it.
OFTEN = 0.25
_HEDGES = {"often": ("often", "frequently"), "sometimes": ("sometimes", "at times")}


def phrase_hedge(summary: ClusterSummary) -> str:
    """ "" when the name's key phrase is what most members say (or is the dominant error
    template), else "often" or "sometimes" (or a synonym the name rule allows): a phrase
    a tenth of the members say must not read as what they all do.

    >>> phrase_hedge(ClusterSummary(phrase="showing the page", phrase_share=0.12))
    'sometimes'
    >>> phrase_hedge(ClusterSummary(phrase="showing the page", phrase_share=0.3))
    'often'
    >>> phrase_hedge(ClusterSummary(phrase="showing the page", phrase_share=0.6))
    ''
    """
    phrase, from_template = _key_phrase_of(summary)
    if not phrase or from_template or summary.phrase_share >= DOMINANT:
        return ""
    kind = "often" if summary.phrase_share >= OFTEN else "sometimes"
    return next((word for word in _HEDGES[kind] if is_clean(word, summary.forbidden)), "")


def clip(text: str, limit: int = PHRASE_CHARS) -> str:
    """``text`` within ``limit`` characters, cut after a whole word with "…" when longer:
    a name read "… at least one citation per numeric clai)".

    >>> clip("at least one citation per numeric claim", 30)
    'at least one citation per …'
    >>> clip("short enough", 30)
    'short enough'
    """
    text = text.strip()
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    cut = head.rsplit(" ", 1)[0] if " " in head else head
    return cut.rstrip(" ,;:-") + " …"


def _phrase_aside(phrase: str, hedge: str) -> str:
    return f" ({hedge} {phrase})" if hedge else f" ({phrase})"


_IDENTIFIER = re.compile(r"\S*(?:[_\d]|[a-z][A-Z])")


def _capitalised(text: str) -> str:
    """The name with its first letter in capitals, unless its first word is an
    identifier (an agent called ``sql_runner`` or ``webSurfer`` keeps its spelling).

    >>> _capitalised("planner gives up"), _capitalised("sql_runner repeats a call")
    ('Planner gives up', 'sql_runner repeats a call')
    """
    if _IDENTIFIER.match(text):
        return text
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


def dominant_signals(summary: ClusterSummary) -> list[str]:
    """The signals a behaviour name is made of, the one it leads with first: those most
    members share, most specific first ("gets an error" only when nothing else is).

    >>> dominant_signals(ClusterSummary(signal_shares={DREW_ERROR: 1.0, INVENTED_ARGUMENT: 0.6}))
    ['invented_argument']
    """
    dominant = [name for name in PHRASES if summary.signal_shares.get(name, 0.0) >= DOMINANT]
    if len(dominant) > 1 and DREW_ERROR in dominant:
        dominant.remove(DREW_ERROR)  # the key phrase already says which error
    return dominant


def shared_traits(summary: ClusterSummary) -> list[str]:
    """What most members have in common beyond their wording: a behaviour signal, the
    acting agent, the tool, the error drawn, the key phrase, a shared label reason.

    >>> shared_traits(ClusterSummary(agent="WebSurfer", agent_share=0.9, phrase_share=0.1))
    ['agent']
    >>> shared_traits(ClusterSummary(agent_family="Expert", agent_family_share=1.0,
    ...     phrase="let's execute", phrase_share=0.15))
    []
    """
    traits = {
        "signal": bool(dominant_signals(summary)),
        "agent": bool(summary.agent) and summary.agent_share >= DOMINANT,
        "tool": bool(summary.tool) and summary.tool_share >= DOMINANT,
        "error": bool(summary.template) and summary.template_share >= DOMINANT,
        "phrase": bool(summary.phrase) and summary.phrase_share >= DOMINANT,
        "diagnosis": bool(summary.diagnosis),
    }
    return [trait for trait, shared in traits.items() if shared]


def is_loose(summary: ClusterSummary) -> bool:
    """Whether the members share nothing but the closeness of their texts: a page then
    says so beside the name. 34 messages by 31 experts, 5 of them saying "let's execute",
    were named "An expert sometimes says “let's execute”" and read as a behaviour."""
    return not shared_traits(summary)


def behaviour_name(summary: ClusterSummary) -> str:
    """The name of a cluster whose steps share a signal; "" when none dominates."""
    dominant = dominant_signals(summary)
    if not dominant:
        return ""
    tool = summary.tool if summary.tool_share >= DOMINANT else ""
    wordings = signal_wordings(dominant[0])
    # With the tool in any wording before a wording without it; the first clean one leads.
    leads = [lead.format(tool=tool) for lead, _, _ in wordings if tool and "{tool}" in lead]
    lead = _first_clean(leads + [without for _, without, _ in wordings], summary.forbidden)
    if not lead:
        return ""
    second = [name for name in dominant[1:] if name not in IMPLIED.get(dominant[0], ())]
    if second:
        clauses = [clause for _, _, clause in signal_wordings(second[0])]
        clause = _first_clean(clauses, summary.forbidden)
        lead += f", {clause}" if clause else ""
    actor, _ = _actor(summary)
    name = _capitalised(lead if actor in ("An agent", "The assistant") else f"{actor} {lead}")
    phrase = key_phrase(summary)
    if phrase:
        name += _phrase_aside(phrase, phrase_hedge(summary))
    return name[:NAME_CHARS]


def after_wordings(value: str) -> list[str]:
    """Wordings of a ``preceded_by`` value (``WrongStep.preceded_by``), the preferred first.

    >>> after_wordings("result:search")[0]
    'right after a search result'
    """
    if value == "user":
        return [
            "right after the user's message",
            "right after a message from the user",
            "right after the user",
        ]
    if value == "error":
        return ["right after an error", "right after a failure"]
    if value == "start":
        return ["as the first step", "at the start"]
    if value == "self":
        return ["right after its own step", "straight after itself"]
    if value == "result":
        return ["right after a tool result", "right after a result"]
    kind, _, name = value.partition(":")
    if kind == "result" and name:
        return [f"right after a {name} result", "right after a tool result"]
    if kind == "agent" and name:
        # "Orchestrator (-> WebSurfer)" is the Orchestrator speaking.
        return [f"right after {name.partition(' (')[0]}", "right after another agent"]
    return []


def _tool_pair(summary: ClusterSummary) -> str:
    """ "a or b" when no tool has half the members but the two most used together do
    (and neither name is a forbidden word), else "".

    >>> _tool_pair(ClusterSummary(tool="get_user", tool_share=0.49, second_tool="cancel",
    ...     second_tool_share=0.22))
    'get_user or cancel'
    """
    if not summary.tool or not summary.second_tool:
        return ""
    if summary.tool_share + summary.second_tool_share < DOMINANT:
        return ""
    pair = f"{summary.tool} or {summary.second_tool}"
    return pair if is_clean(pair, summary.forbidden) else ""


def _spread_calls(summary: ClusterSummary) -> str:
    """Calls spread over tools that no one or two dominate: the most used one still says
    where to look ("calls tools" alone said nothing).

    >>> _spread_calls(ClusterSummary(tool="get_user", tool_share=0.2))
    'calls various tools, most often get_user'
    """
    if summary.tool and is_clean(summary.tool, summary.forbidden):
        return f"calls various tools, most often {summary.tool}"
    return "calls tools"


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
    pair = _tool_pair(summary) if not tool else ""
    if kind == "tool_call" or (tool and kind != "tool_result"):
        verb = f"calls {tool}" if tool else f"calls {pair}" if pair else _spread_calls(summary)
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
    hedge = phrase_hedge(summary) if phrase else ""
    name = _capitalised(f"{subject}{verb}")
    if phrase and verb in ("says", "plans", "writes", "thinks ahead"):
        name = _capitalised(f"{subject}{hedge} {verb}" if hedge else f"{subject}{verb}")
        name += f" {phrase}"
    elif phrase:
        name += _phrase_aside(phrase, hedge)
    elif verb in ("says", "writes"):
        ending = next(
            (e for e in ("writes a message", "replies", "writes") if is_clean(e, forbidden)),
            "writes",
        )
        name = _capitalised(f"{subject}{ending}")
    elif verb in ("plans", "thinks ahead"):
        name += " the next step"
    if not phrase and not tool and verb in ("says", "writes", "plans", "thinks ahead"):
        # A message with nothing but who wrote it: say at least when the agent writes.
        name += situation(summary)
    return name[:NAME_CHARS]


def situation(summary: ClusterSummary) -> str:
    """ " right after …" when most members came right after the same thing (the user's
    message, an error, a named tool's result, another agent), else "": a message named
    by its writer alone then still says when the agent writes.

    >>> situation(ClusterSummary(preceded_by="user", preceded_share=0.6))
    " right after the user's message"
    >>> situation(ClusterSummary(preceded_by="user", preceded_share=0.4))
    ''
    """
    if summary.preceded_share < DOMINANT:
        return ""
    before = summary.preceded_by
    kind, _, name = before.partition(":")
    if kind == "agent" and name.partition(" (")[0] == summary.agent.partition(" (")[0]:
        before = "self"  # "Orchestrator (thought)" before "Orchestrator": its own step
    clean = (w for w in after_wordings(before) if is_clean(w, summary.forbidden))
    wording = next(clean, "")
    return f" {wording}" if wording else ""


def name_cluster(summary: ClusterSummary) -> str:
    """A plain-language name: led by the dominant signals when there are any, else by
    who acts and how; with the key phrase, then the phrase the members' label reasons
    share (a human's diagnosis); never a word the summary forbids.

    >>> name_cluster(ClusterSummary(agent="WebSurfer", agent_share=1.0, kind="message",
    ...     kind_share=1.0, diagnosis="clicks an irrelevant link"))
    'WebSurfer writes a message (diagnosed as “clicks an irrelevant link”)'
    """
    name = behaviour_name(summary) or structural_name(summary)
    diagnosis = clip(scrub(summary.diagnosis, summary.forbidden))
    aside = f" (diagnosed as “{diagnosis}”)"
    if not _enough_words(diagnosis) or not is_clean(aside, summary.forbidden):
        return name
    # The key phrase is mined from the label reasons too: one the diagnosis holds is the
    # diagnosis, not what the agent said ("Verification_Expert says “search results”
    # (diagnosed as “search results”)"), so the name is made without it.
    phrase_words = set(WORD.findall(summary.phrase.lower()))
    if phrase_words and phrase_words <= set(WORD.findall(diagnosis.lower())):
        bare = replace(summary, phrase="")
        name = behaviour_name(bare) or structural_name(bare)
    return name[: NAME_CHARS - len(aside)] + aside
