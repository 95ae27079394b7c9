"""A rollout's outcome set after it was stored (the API's feedback route, the rollout
page's form): stored by ingest, and a change queues the project's refresh once it commits,
so a rollout turning failed is attributed and its wrong steps clustered, and one turning
successful leaves them. One home for that rule, whichever door the outcome came in by.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from ingest.models import Trajectory
from ingest.outcomes import (
    OutcomeChange,
    OutcomeError,
    rollout_outcome_set,
    rollouts_by_external_id,
)
from pipeline.refresh import refresh_project_queue
from projects.models import Project


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


MSG_NO_SUCH_ROLLOUT = "no rollout with the id {id!r} in this project"
MSG_SAME_ROLLOUT_TWICE = "the rollout {id!r} is named twice (items {first} and {again})"


@dataclass(frozen=True)
class OutcomeItem:
    """One rollout's later evaluation, by the rollout's external id."""

    external_id: str
    outcome: str | None = None
    reward: float | None = None
    metadata: dict[str, Any] | None = None


class OutcomeItemError(OutcomeError):
    """An item of a list of outcomes that cannot be stored: ``position`` is its index."""

    def __init__(self, message: str, *, position: int, field: str | None = None) -> None:
        super().__init__(message, field=field)
        self.position = position


def rollouts_outcome_change(
    *, project: Project, items: Sequence[OutcomeItem]
) -> list[OutcomeChange]:
    """Store the outcomes of many rollouts at once, all or none (an exporter's batch, a
    grader's verdicts on a run of files that carry none, as OpenHands event streams): an
    unknown id, an id named twice or a bad value raises :class:`OutcomeItemError` naming the
    item, and nothing is stored. The rollouts whose outcome changed are refreshed by one
    queued refresh once it commits."""
    first_at: dict[str, int] = {}
    for position, item in enumerate(items):
        if item.external_id in first_at:
            raise OutcomeItemError(
                MSG_SAME_ROLLOUT_TWICE.format(
                    id=item.external_id, first=first_at[item.external_id], again=position
                ),
                position=position,
                field="id",
            )
        first_at[item.external_id] = position
    rollouts = rollouts_by_external_id(project=project, external_ids=list(first_at))
    changes: list[OutcomeChange] = []
    with transaction.atomic():
        for position, item in enumerate(items):
            rollout = rollouts.get(item.external_id)
            if rollout is None:
                raise OutcomeItemError(
                    MSG_NO_SUCH_ROLLOUT.format(id=item.external_id), position=position, field="id"
                )
            try:
                changes.append(
                    rollout_outcome_set(
                        rollout=rollout,
                        outcome=item.outcome,
                        reward=item.reward,
                        metadata=item.metadata,
                    )
                )
            except OutcomeError as exc:
                raise OutcomeItemError(str(exc), position=position, field=exc.field) from None
        changed = [change.rollout.pk for change in changes if change.outcome_changed]
        if changed:
            project_id = project.pk
            transaction.on_commit(
                lambda: refresh_project_queue(project_id=project_id, rollout_ids=changed)
            )
    return changes
