"""Behaviour signals as the misbehaviour clustering uses them: the vector a wrong step's
signals add to its embedding, the signalled actions that become wrong steps, and the
wrong steps filled with their rollout's signals.

The signals themselves (what each one means, and :func:`rollout_signals`) live in
:mod:`attribution.core.behaviour`, below both this clustering and the label-free ranking
that reads them too; their names are imported here for the clustering's users.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from analysis.core.steps import WrongStep, actor
from attribution.core.behaviour import (
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
    SIGNALS,
    SKIPPED_GOLD_ACTION,
    UNCHECKED_APPROVAL,
    UNCONFIRMED_MUTATION,
    UNNEEDED_MUTATION,
    UNREAD_EDIT,
    UNSUPPORTED_CLAIM,
    StepSignals,
    rollout_signals,
)
from attribution.core.gold_actions import GoldAction
from attribution.core.provenance import SOURCES

__all__ = [
    "CLAIMED_SUCCESS",
    "CLUSTERED_SIGNALS",
    "DREW_ERROR",
    "EDITED_FAILING_TEST",
    "GAVE_UP_AFTER_FAILURE",
    "IGNORED_ERROR",
    "INVENTED_ARGUMENT",
    "MADE_UP_DATA",
    "MISSED_GOLD_ACTION",
    "OFF_GOLD_ARGUMENTS",
    "REPEATED_ACTION",
    "REPORTED_UNMADE_CHANGE",
    "ROLE_BUCKETS",
    "SIGNALS",
    "SKIPPED_GOLD_ACTION",
    "UNCHECKED_APPROVAL",
    "UNCLUSTERED_SIGNALS",
    "UNCONFIRMED_MUTATION",
    "UNNEEDED_MUTATION",
    "UNREAD_EDIT",
    "UNSUPPORTED_CLAIM",
    "VECTOR_SIZE",
    "StepSignals",
    "rollout_signals",
    "signal_vector",
    "signalled_actions",
    "step_vector",
    "with_signals",
]

#: The signals a step is clustered by (in its vector and its embedded text).
#: ``made_up_data`` describes misbehaviours but does not cluster them: clustered too, it
#: lowered both homogeneity and F1 on the combined development set (0.57 / 0.32 to
#: 0.56 / 0.31, docs/clustering.md); the annotators filed such steps under three modes.
#: ``skipped_gold_action`` neither: clustered, it lowered the combined set's homogeneity
#: and F1 (0.57 / 0.32 to 0.53 / 0.30, bench-results/devset-clustering-v6.json).
UNCLUSTERED_SIGNALS = frozenset({MADE_UP_DATA, SKIPPED_GOLD_ACTION})
CLUSTERED_SIGNALS = tuple(name for name in SIGNALS if name not in UNCLUSTERED_SIGNALS)

#: Hashed buckets of the acting agent's name in the vector: roles differ across agent
#: systems, so they are hashed rather than listed.
ROLE_BUCKETS = 8
VECTOR_SIZE = len(CLUSTERED_SIGNALS) + len(SOURCES) + ROLE_BUCKETS


def signal_vector(names: Sequence[str] | frozenset[str], arg_sources: Sequence[tuple[str, str]] = (),
                  role: str = "") -> np.ndarray:  # fmt: skip
    """The vector a step's signals add to its text embedding for clustering.

    One 0/1 entry per signal in :data:`CLUSTERED_SIGNALS`, the share of traced arguments
    from each source in :data:`SOURCES`, and the acting agent's name hashed into
    :data:`ROLE_BUCKETS` one-hot entries.

    >>> from attribution.core.provenance import FROM_USER, INVENTED
    >>> signal_vector([REPEATED_ACTION], [("a", INVENTED), ("b", FROM_USER)], "x")[:2].tolist()
    [0.0, 1.0]
    >>> shares = signal_vector([], [("a", INVENTED), ("b", FROM_USER)])[len(CLUSTERED_SIGNALS):]
    >>> shares[:5].tolist()
    [0.5, 0.0, 0.0, 0.0, 0.5]
    """
    vector = np.zeros(VECTOR_SIZE, dtype=np.float32)
    for position, name in enumerate(CLUSTERED_SIGNALS):
        if name in names:
            vector[position] = 1.0
    if arg_sources:
        for position, source in enumerate(SOURCES):
            share = sum(1 for _, s in arg_sources if s == source) / len(arg_sources)
            vector[len(CLUSTERED_SIGNALS) + position] = share
    if role:
        bucket = zlib.crc32(role.lower().encode("utf-8")) % ROLE_BUCKETS
        vector[len(CLUSTERED_SIGNALS) + len(SOURCES) + bucket] = 1.0
    return vector


def step_vector(step: WrongStep) -> np.ndarray:
    """:func:`signal_vector` of a wrong step's stored signals."""
    return signal_vector(step.signals, step.arg_sources, actor(step))


def signalled_actions(found: Mapping[int, StepSignals]) -> list[int]:
    """The indices of the agent actions that show a clustered behaviour signal other than
    drawing an error (error steps are wrong steps of their own).

    >>> signalled_actions({1: StepSignals(1, frozenset({"drew_error"})),
    ...                    2: StepSignals(2, frozenset({"gave_up_after_failure"})),
    ...                    3: StepSignals(3, frozenset({"made_up_data"}))})
    [2]
    """
    wanted = set(CLUSTERED_SIGNALS) - {DREW_ERROR}
    return sorted(index for index, signals in found.items() if signals.names & wanted)


def with_signals(
    wrong: Sequence[WrongStep],
    steps: Sequence[Any],
    *,
    task_text: str = "",
    gold: Sequence[GoldAction] | None = None,
    reasons: Mapping[int, str] | None = None,
    found: Mapping[int, StepSignals] | None = None,
) -> list[WrongStep]:
    """The wrong steps of one rollout with their signals, error, task text and label reason.

    ``steps`` are all the rollout's steps in order; ``reasons`` maps a decisive step's
    index to its label's reason text; ``found`` is :func:`rollout_signals` of the rollout
    when the caller already has it.
    """
    if found is None:
        found = rollout_signals(steps, task_text=task_text, gold=gold)
    enriched = []
    for step in wrong:
        signals = found.get(step.index)
        enriched.append(
            replace(
                step,
                signals=tuple(sorted(signals.names)) if signals else (),
                arg_sources=signals.arg_sources if signals else (),
                error=signals.error if signals else "",
                reason=(reasons or {}).get(step.index, step.reason),
                task_text=task_text or step.task_text,
            )
        )
    return enriched
