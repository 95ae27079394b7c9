"""Outcomes attached after the rollout: an evaluation (success, failure, a reward, a few
facts about how it was judged) that arrives later, often from another process, for a
rollout already stored (a file's or a live OTLP trace's, by its external id).

Outcome is rollout data, so it is stored here; what a change sets off (attributing a
rollout that turned failed) is for the caller to queue: ingest chains nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from ingest.core.records import Outcome
from ingest.core.storable import storable_value
from ingest.models import Trajectory
from projects.models import Project

MSG_BAD_OUTCOME = "outcome: one of " + ", ".join(Outcome.ALL) + "."
MSG_BAD_REWARD = "reward: a finite number."
MSG_BAD_METADATA = "metadata: a JSON object of at most {limit} bytes."
MSG_NUL_METADATA = "metadata: text may not contain NUL characters or unpaired surrogates."
MSG_NOTHING = "Send at least one of outcome, reward, metadata."
METADATA_MAX_BYTES = 64 * 1024
#: The rollout metadata key that records what was attached (``{"outcome": ..., "reward":
#: ...}``): a live trace rebuilt when a later span arrives keeps these over what the trace
#: states (an evaluator's verdict attached through the API was undone by one late span).
ATTACHED_KEY = "faultline.attached"


def attached_fields(metadata: dict[str, Any] | None) -> dict[str, Any]:
    """The outcome and reward attached to a rollout, by field name (none: ``{}``).

    Example:
        >>> attached_fields({ATTACHED_KEY: {"outcome": "failure"}}), attached_fields(None)
        ({'outcome': 'failure'}, {})
    """
    found = (metadata or {}).get(ATTACHED_KEY)
    return dict(found) if isinstance(found, dict) else {}


class OutcomeError(ValueError):
    """An outcome that cannot be stored; ``field`` names the input at fault."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class OutcomeChange:
    rollout: Trajectory
    previous_outcome: str
    outcome_changed: bool

    @property
    def turned_failed(self) -> bool:
        return self.previous_outcome != Outcome.FAILURE and self.rollout.outcome == Outcome.FAILURE


def rollout_by_external_id(*, project: Project, external_id: str) -> Trajectory | None:
    """The project's rollout with this external id (the trace id of an OTLP rollout). The
    same id uploaded twice, in two files, names the newest copy."""
    return rollouts_by_external_id(project=project, external_ids=[external_id]).get(external_id)


def rollouts_by_external_id(
    *, project: Project, external_ids: Collection[str]
) -> dict[str, Trajectory]:
    """The project's rollouts with these external ids, in one query, by id (the newest
    copy of an id uploaded twice; an id of no rollout is left out)."""
    found: dict[str, Trajectory] = {}
    rows = Trajectory.objects.filter(project=project, external_id__in=set(external_ids))
    for rollout in rows.order_by("id"):
        found[rollout.external_id] = rollout  # a later copy replaces an earlier one
    return found


def _checked(outcome: str | None, reward: float | None, metadata: Any) -> None:
    if outcome is None and reward is None and metadata is None:
        raise OutcomeError(MSG_NOTHING)
    if outcome is not None and outcome not in Outcome.ALL:
        raise OutcomeError(MSG_BAD_OUTCOME, field="outcome")
    if reward is not None and (
        isinstance(reward, bool) or not isinstance(reward, int | float) or not math.isfinite(reward)
    ):
        raise OutcomeError(MSG_BAD_REWARD, field="reward")
    if metadata is not None:
        limit = METADATA_MAX_BYTES
        if not isinstance(metadata, dict) or len(json.dumps(metadata)) > limit:
            raise OutcomeError(MSG_BAD_METADATA.format(limit=limit), field="metadata")
        if storable_value(metadata) != metadata:
            # PostgreSQL's jsonb refuses it; an evaluator's note is refused, not altered.
            raise OutcomeError(MSG_NUL_METADATA, field="metadata")


def rollout_outcome_set(
    *,
    rollout: Trajectory,
    outcome: str | None = None,
    reward: float | None = None,
    metadata: dict[str, Any] | None = None,
) -> OutcomeChange:
    """Store a later evaluation: the outcome and reward replace the rollout's, metadata keys
    are merged into its metadata (a key sent again replaces the old value), and what was
    attached is recorded under ``ATTACHED_KEY`` so that a rebuilt live trace keeps it.
    Validated whole before anything is written."""
    _checked(outcome, reward, metadata)
    with transaction.atomic():
        row = Trajectory.objects.select_for_update().get(pk=rollout.pk)
        previous = row.outcome
        fields: list[str] = []
        if outcome is not None and outcome != row.outcome:
            row.outcome = outcome
            fields.append("outcome")
        if reward is not None and reward != row.reward:
            row.reward = float(reward)
            fields.append("reward")
        merged = {**(row.metadata or {}), **(metadata or {})}
        attached = {
            **attached_fields(row.metadata),
            **{k: v for k, v in (("outcome", outcome), ("reward", reward)) if v is not None},
        }
        if attached:
            merged[ATTACHED_KEY] = attached
        if merged != row.metadata:
            row.metadata = merged
            fields.append("metadata")
        if fields:
            row.save(update_fields=fields)
    return OutcomeChange(
        rollout=row, previous_outcome=previous, outcome_changed="outcome" in fields
    )
