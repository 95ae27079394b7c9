"""A rollout's outcome set after it was stored (the API's feedback route, the rollout
page's form): stored by ingest, and a change queues the project's refresh once it commits,
so a rollout turning failed is attributed and its wrong steps clustered, and one turning
successful leaves them. One home for that rule, whichever door the outcome came in by.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from ingest.models import Trajectory
from ingest.outcomes import OutcomeChange, rollout_outcome_set
from pipeline.refresh import refresh_project_queue


def rollout_outcome_change(
    *,
    rollout: Trajectory,
    outcome: str | None = None,
    reward: float | None = None,
    metadata: dict[str, Any] | None = None,
) -> OutcomeChange:
    """Store the outcome (ingest.outcomes validates it whole: ``OutcomeError`` names the
    field) and, when it changed, queue the refresh of that rollout after the commit."""
    change = rollout_outcome_set(rollout=rollout, outcome=outcome, reward=reward, metadata=metadata)
    if change.outcome_changed:
        project_id, rollout_id = change.rollout.project_id, change.rollout.pk
        transaction.on_commit(
            lambda: refresh_project_queue(project_id=project_id, rollout_ids=[rollout_id])
        )
    return change
