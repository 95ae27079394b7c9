"""The phrase a cluster's label reasons share: a human's diagnosis, for its name.

A decisive-step label may carry a reason ("The Pricing_Expert provides incorrect ticket
prices"). Issue 12: a human's diagnosis is the best description of a behaviour there
is. The reasons of a cluster's labelled members are masked like every other text and
mined for a key phrase against the other clusters' reasons
(:func:`analysis.core.phrases.key_phrases`: said by a tenth of them, distinctive); the
acting agents' own names are left out (the name already says who acts), and a phrase is
kept only with ``CONTENT_WORDS`` content words: "websurfer did not" says nothing,
"provides incorrect ticket prices" does.

Example:
    >>> from analysis.core.representation import StepRepresenter
    >>> from analysis.core.steps import WrongStep
    >>> steps = [WrongStep(key=str(i), rollout=str(i), index=0, agent="Pricing_Expert",
    ...                    reason="The Pricing_Expert provides incorrect ticket prices.")
    ...          for i in range(3)]
    >>> diagnosis_phrases(steps, {0: [0, 1, 2]}, StepRepresenter().fit(steps))
    {0: 'provides incorrect ticket prices'}
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from analysis.core.phrases import key_phrases, spread_sample, words_of
from analysis.core.representation import StepRepresenter
from analysis.core.steps import WrongStep

CONTENT_WORDS = 2


def diagnosis_phrases(
    steps: Sequence[WrongStep],
    members: Mapping[int, Sequence[int]],
    representer: StepRepresenter,
    exclude: Mapping[int, Collection[str]] | None = None,
    forbidden: Mapping[int, Collection[str]] | None = None,
) -> dict[int, str]:
    """Cluster label -> the phrase its members' reasons share (clusters with one, only).

    ``members`` gives each label's positions in ``steps``; ``exclude`` and ``forbidden``
    the words its phrase must not hold (task entities, issue 12's rare task words).
    """
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    docs: dict[int, list[str]] = {}
    banned: dict[int, set[str]] = {}
    sizes: dict[int, int] = {}
    for label, positions in members.items():
        labelled = [steps[p] for p in positions if steps[p].reason]
        if len(labelled) < 2:
            continue
        docs[label] = [representer.reason_text(step) for step in spread_sample(labelled)]
        sizes[label] = len(labelled)
        agents = set().union(*(words_of(step.agent or step.role) for step in labelled))
        banned[label] = {
            *(exclude or {}).get(label, ()),
            *(forbidden or {}).get(label, ()),
            *agents,
        }
    found = key_phrases(docs, exclude=banned, class_sizes=sizes) if docs else {}
    return {
        label: phrase
        for label, phrase in found.items()
        if sum(1 for word in phrase.split() if word not in ENGLISH_STOP_WORDS) >= CONTENT_WORDS
    }
