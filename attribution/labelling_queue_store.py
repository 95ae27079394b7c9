"""The labelling queue, ordered at refresh time and stored on the attribution rows.

A request never orders the queue: the order needs every unlabelled rollout's step
probabilities, which the refresh has at hand while it scores them. The rule is
``attribution.core.labelling_queue.labelling_queue`` (its docstring says why).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.db.models import F

from attribution.core.labelling_queue import (
    REASON_DEFICIT,
    REASON_SHORT,
    QueueItem,
    labelling_queue,
)
from attribution.models import TrajectoryAttribution

# Queue reasons whose label calibrates its system (the others train the scorer or refine
# a calibration that already claims).
FILLS_DEFICIT = (REASON_DEFICIT, REASON_SHORT)


def queue_ranks(
    items: Sequence[QueueItem], labels_by_system: Mapping[str, int], *, alpha: float
) -> dict[int, tuple[int, str]]:
    """trajectory id (``rollout_id`` as text) -> (0-based place in the queue, reason)."""
    entries = labelling_queue(items, labels_by_system, alpha=alpha)
    return {int(entry.rollout_id): (rank, entry.reason) for rank, entry in enumerate(entries)}


def take_labelled_out(trajectory_id: int) -> None:
    """A queued rollout that just got its first human label leaves the queue at once, and
    when it was queued to fill its agent system's deficit (``deficit`` or ``short``: such
    a label calibrates), every rollout of that system needs one label fewer.

    The next refresh recomputes both by the queue rule; until it runs (seconds, or minutes
    behind a long refresh) the queue page, the rollout pages and the API would otherwise
    still list the labelled rollout and ask for the label already given."""
    row = (
        TrajectoryAttribution.objects.filter(trajectory_id=trajectory_id, queue_rank__isnull=False)
        .select_related("trajectory")
        .first()
    )
    if row is None:
        return
    if row.queue_reason in FILLS_DEFICIT:
        TrajectoryAttribution.objects.filter(
            project_id=row.project_id,
            trajectory__agent_system=row.trajectory.agent_system,
            labels_needed__gt=0,
        ).update(labels_needed=F("labels_needed") - 1)
    TrajectoryAttribution.objects.filter(pk=row.pk).update(queue_rank=None, queue_reason="")
