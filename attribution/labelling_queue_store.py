"""The labelling queue, ordered at refresh time and stored on the attribution rows.

A request never orders the queue: the order needs every unlabelled rollout's step
probabilities, which the refresh has at hand while it scores them. The rule is
``attribution.core.labelling_queue.labelling_queue`` (its docstring says why).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from attribution.core.labelling_queue import QueueItem, labelling_queue


def queue_ranks(
    items: Sequence[QueueItem], labels_by_system: Mapping[str, int], *, alpha: float
) -> dict[int, tuple[int, str]]:
    """trajectory id (``rollout_id`` as text) -> (0-based place in the queue, reason)."""
    entries = labelling_queue(items, labels_by_system, alpha=alpha)
    return {int(entry.rollout_id): (rank, entry.reason) for rank, entry in enumerate(entries)}
