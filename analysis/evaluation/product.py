"""The product's clustering, called the way the Django side calls it.

``analysis.gather`` gives every wrong step the behaviour signals of its whole rollout
(``analysis.core.behaviour.with_signals`` on all the rollout's steps, its task text, its
gold actions when it has them, and the decisive label's reason), and
``analysis.clustering._recluster`` runs ``cluster_wrong_steps(gathered.wrong,
backend=settings.FAULTLINE_EMBEDDINGS, cache=..., seed=0, ...)`` with the default
parameters. :func:`rollout_signals_steps` does the first part on parsed rollouts and
:func:`product_labels` the second; this is the one place the evaluation calls the core
pipeline. ``behaviour=False`` is the previous pipeline (raw step text), kept as a
baseline.

The label reason is what the Who&When categories were read from, so a figure with the
reasons in the text is optimistic there: :func:`without_reasons` gives the honest input.

Example:
    >>> from analysis.core.steps import WrongStep
    >>> steps = [WrongStep(key=f"{t}{i}", rollout=f"r{g}{i}", index=0, kind="tool_call",
    ...                    tool_name=t, content=f"{w} {w} {i % 3}", reason="it was wrong")
    ...          for g, (t, w) in enumerate([("book", "seat"), ("cancel", "refund"),
    ...                                      ("search", "query")])
    ...          for i in range(12)]
    >>> labels = product_labels(without_reasons(steps), backend="tfidf", seed=0)
    >>> [len(set(labels[g * 12:(g + 1) * 12])) for g in range(3)], len(set(labels))
    ([1, 1, 1], 3)
    >>> {step.reason for step in without_reasons(steps)}
    {''}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from analysis.core.behaviour import with_signals
from analysis.core.embeddings import MemoryCache
from analysis.core.pipeline import cluster_wrong_steps
from analysis.core.steps import WrongStep
from attribution.core.gold_actions import gold_actions
from ingest.core.records import TrajectoryRecord


def _gold(record: TrajectoryRecord) -> Any:
    info = record.metadata.get("info")
    task = info.get("task") if isinstance(info, dict) else None
    raw = task.get("actions") if isinstance(task, dict) else None
    return gold_actions(raw)


def rollout_signals_steps(
    steps: Sequence[WrongStep],
    records: Mapping[str, TrajectoryRecord],
    *,
    with_reasons: bool = True,
) -> list[WrongStep]:
    """The steps with the signals of their whole rollout (``records`` by ``step.rollout``),
    its task text and gold actions, and, ``with_reasons``, the decisive label's reason,
    as ``analysis.gather`` fills them. Order kept."""
    by_rollout: dict[str, list[int]] = {}
    for position, step in enumerate(steps):
        by_rollout.setdefault(step.rollout, []).append(position)
    enriched: list[WrongStep | None] = [None] * len(steps)
    for rollout, positions in by_rollout.items():
        record = records[rollout]
        reasons = {label.step: label.reason for label in record.labels if label.reason}
        done = with_signals(
            [steps[position] for position in positions],
            record.steps,
            task_text=record.task_text,
            gold=_gold(record),
            reasons=reasons if with_reasons else None,
        )
        for position, step in zip(positions, done):
            enriched[position] = step
    return [step for step in enriched if step is not None]


def without_reasons(steps: Sequence[WrongStep]) -> list[WrongStep]:
    """The steps with no label reason: the input a reason-blind product sees."""
    return [replace(step, reason="") if step.reason else step for step in steps]


def product_labels(
    steps: Sequence[WrongStep],
    *,
    backend: str,
    seed: int = 0,
    behaviour: bool = True,
    **options: Any,
) -> list[int]:
    """One label per step, in the order given (-1: unclustered). ``options`` go to
    ``cluster_wrong_steps`` (the variants of the report)."""
    outcome = cluster_wrong_steps(
        steps,
        backend=backend,
        cache=MemoryCache(),
        seed=seed,
        with_metrics=False,
        behaviour=behaviour,
        **options,
    )
    by_key = {step.key: int(label) for step, label in zip(outcome.steps, outcome.labels)}
    return [by_key[step.key] for step in steps]
