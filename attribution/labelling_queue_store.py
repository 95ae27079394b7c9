"""The labelling queue, ordered at refresh time and stored on the attribution rows.

A request never orders the queue: the order needs every unlabelled rollout's step
probabilities, which the refresh has at hand while it scores them. The rule is
``attribution.core.labelling_queue.labelling_queue`` (its docstring says why).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from attribution.core.labelling_queue import QueueItem, labelling_queue
from attribution.models import TrajectoryAttribution

QUEUE_BATCH = 500


def queue_store(
    *,
    project_id: int,
    items: Sequence[QueueItem],
    labels_by_system: Mapping[str, int],
    alpha: float,
) -> int:
    """Store the queue rank of each unlabelled failed rollout (``rollout_id`` is the
    trajectory id as text); every other row of the project leaves the queue. Returns
    the queue's length."""
    entries = labelling_queue(items, labels_by_system, alpha=alpha)
    ranks = {int(entry.rollout_id): (rank, entry.reason) for rank, entry in enumerate(entries)}
    rows = list(
        TrajectoryAttribution.objects.filter(project_id=project_id).only("id", "trajectory_id")
    )
    changed = []
    for row in rows:
        rank, reason = ranks.get(row.trajectory_id, (None, ""))
        row.queue_rank, row.queue_reason = rank, reason
        changed.append(row)
    TrajectoryAttribution.objects.bulk_update(
        changed, ["queue_rank", "queue_reason"], batch_size=QUEUE_BATCH
    )
    return len(entries)
