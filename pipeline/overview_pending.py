"""The overview's counters catch up with live rollouts on the closing sweep, not per assembly.

Moving the counters after every live assembly cost about a seventh of an assembly's CPU
and serialised the ingest workers on the overview's row lock (every writer takes it). So
an assembly only notes the rollouts it wrote (``overview_shares_pending_add``, inside its
own transaction: nothing is missed if the worker dies after it), and the periodic closing
sweep moves the counters once for every rollout noted since
(``overview_counts_catch_up``). Until then a new rollout shows on the overview's cards as
newer than the counters (pipeline.overview_cards), and a rebuilt one has its old share:
the cards lag the stream by at most one sweep interval.
"""

from __future__ import annotations

from collections.abc import Collection

from django.db import transaction

from pipeline.models import OverviewPendingShare
from pipeline.overview_counts import BATCH, overview_counts_update

CATCH_UP_ROWS = 50_000


def overview_shares_pending_add(*, project_id: int, rollout_ids: Collection[int]) -> None:
    """Note rollouts whose share of the overview must move (in the caller's transaction)."""
    OverviewPendingShare.objects.bulk_create(
        [
            OverviewPendingShare(project_id=project_id, trajectory_id=rollout_id)
            for rollout_id in sorted(set(rollout_ids))
        ],
        batch_size=BATCH,
    )


def overview_counts_catch_up() -> int:
    """Move every project's counters by the shares noted since the last catch-up; return how
    many rollouts moved. The rows read are deleted by their ids in the same transaction as
    the move: a rollout noted again meanwhile keeps that newer row (its change may have
    come after the shares were read) for the next catch-up. Running it twice moves nothing
    the second time."""
    moved = 0
    projects = (
        OverviewPendingShare.objects.order_by("project_id")
        .values_list("project_id", flat=True)
        .distinct()
    )
    for project_id in list(projects):
        rows = list(
            OverviewPendingShare.objects.filter(project_id=project_id)
            .order_by("pk")
            .values_list("pk", "trajectory_id")[:CATCH_UP_ROWS]
        )
        rollout_ids = sorted({rollout_id for _, rollout_id in rows})
        with transaction.atomic():
            overview_counts_update(project_id=project_id, rollout_ids=rollout_ids)
            row_ids = [pk for pk, _ in rows]
            for start in range(0, len(row_ids), BATCH):
                OverviewPendingShare.objects.filter(pk__in=row_ids[start : start + BATCH]).delete()
        moved += len(rollout_ids)
    return moved
