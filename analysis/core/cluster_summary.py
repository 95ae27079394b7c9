"""What a misbehaviour's name is made of: the shares of its members' signals, the tool,
agent, step kind and error template most of them have, its key phrases and the words the
name must not contain (:mod:`analysis.core.naming` turns it into a name,
:mod:`analysis.core.mast` into a suggested MAST mode).

Example:
    >>> summary = summarise(signals=[["a"], ["a", "b"]], tools=["t", "t"],
    ...                     agents=["Verification_Expert", "Coding_Expert"], templates=["", "E"])
    >>> summary.tool, summary.tool_share, summary.agent_family, summary.agent_family_share
    ('t', 1.0, 'Expert', 1.0)
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field


@dataclass
class ClusterSummary:
    """What a name is made of: shares of the members' signals, tool, agent, step kind and
    error template, the masked key phrase, and the words the name must not contain."""

    signal_shares: dict[str, float] = field(default_factory=dict)
    tool: str = ""
    tool_share: float = 0.0
    # The runner-up tool and its share, when no tool has half the members alone.
    second_tool: str = ""
    second_tool_share: float = 0.0
    agent: str = ""
    agent_share: float = 0.0
    template: str = ""
    template_share: float = 0.0
    terms: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # per member, for the MAST suggestion
    kind: str = ""
    kind_share: float = 0.0
    phrase: str = ""  # the masked key phrase (analysis.core.phrases.key_phrases)
    # The share of the members that say the key phrase (1.0 when it was not counted).
    phrase_share: float = 1.0
    # The key phrase of the members' label reasons (a human's diagnosis), if shared.
    diagnosis: str = ""
    # The agents' shared last name part ("Expert" of "Verification_Expert") and its share.
    agent_family: str = ""
    agent_family_share: float = 0.0
    forbidden: frozenset[str] = frozenset()  # rare words of the members' task texts
    # What came just before most members (``WrongStep.preceded_by``) and its share.
    preceded_by: str = ""
    preceded_share: float = 0.0
    # The share of the members from rollouts in which one agent acts (WrongStep.one_agent).
    one_agent_share: float = 0.0


def _ranked(values: Sequence[str]) -> list[tuple[str, float]]:
    """The non-empty values, most common first (ties by value), with their share of all
    the values, empty ones included."""
    counts = Counter(value for value in values if value)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [(value, count / len(values)) for value, count in ranked]


def _dominant(values: Sequence[str]) -> tuple[str, float]:
    return (_ranked(values) or [("", 0.0)])[0]


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
    phrase_share: float = 1.0,
    forbidden: Collection[str] = (),
    diagnosis: str = "",
    preceded: Sequence[str] = (),
    one_agent: Sequence[bool] = (),
) -> ClusterSummary:
    """The summary of one cluster from its members' signals, tools, agents and templates.

    >>> summarise(signals=[["a"], ["a", "b"]], tools=["t", "t"], agents=["x", "y"],
    ...           templates=["", "E"]).signal_shares
    {'a': 1.0, 'b': 0.5}
    """
    counts: Counter[str] = Counter(name for names in signals for name in set(names))
    size = max(len(signals), 1)
    (tool, tool_share), (second, second_share) = (_ranked(tools) + [("", 0.0)] * 2)[:2]
    agent, agent_share = _dominant(agents)
    template, template_share = _dominant(templates)
    kind, kind_share = _dominant(kinds)
    family, family_share = _dominant([agent_family(agent) for agent in agents])
    before, before_share = _dominant(preceded)
    return ClusterSummary(
        one_agent_share=sum(one_agent) / len(one_agent) if one_agent else 0.0,
        preceded_by=before,
        preceded_share=before_share,
        signal_shares={name: count / size for name, count in sorted(counts.items())},
        tool=tool,
        tool_share=tool_share,
        second_tool=second,
        second_tool_share=second_share,
        agent=agent,
        agent_share=agent_share,
        template=template,
        template_share=template_share,
        terms=list(terms),
        texts=list(texts),
        kind=kind,
        kind_share=kind_share,
        phrase=phrase,
        phrase_share=phrase_share,
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
