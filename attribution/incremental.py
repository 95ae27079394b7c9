"""Attribute a few new or changed rollouts with the scorer and calibration already stored.

A full refresh (attribution.services) trains or picks the scorer, calibrates it on every
label and scores every failed rollout. Between two full refreshes the labels, and so the
scorer and tau, are the same: a new failed rollout scored by the stored scorer and
calibrated by the stored tau gets exactly what a full refresh would give it (tests in
tests/attribution/test_incremental_attribution.py), at the cost of its own steps only.

The labelling queue is not re-ranked: a rollout that already has a place keeps it, and
the new ones are ordered among themselves by the queue's rule
(attribution.core.labelling_queue) after the last ranked rollout. The rule's first
section (systems short of labels) was filled by the full refresh; a new rollout of a
system whose section was short, or of a system the full refresh never saw, needs a full
refresh, and the pipeline asks for one (pipeline.incremental).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection
from dataclasses import dataclass

from django.db import transaction

from attribution.calibration_store import attribution_row
from attribution.core.label_sources import may_calibrate
from attribution.core.labelling_queue import QueueItem
from attribution.core.scorers import StepScorer
from attribution.core.scorers.serialize import load_scorer
from attribution.core.system_calibration import SystemCalibration, system_key
from attribution.labelling_queue_store import queue_ranks
from attribution.models import Calibration, TrainedScorer, TrajectoryAttribution
from attribution.refresh_basis import AttributionBasis
from attribution.services import (
    UPDATE_FIELDS,
    _batches,
    _records,
    _slim,
    label_trains,
)
from ingest.core.records import Outcome
from ingest.models import Label, Trajectory
from ingest.selectors import decisive_labels

MSG_BASIS_GONE = "The stored {what} of the last full refresh is gone."
# A label count no system reaches: the queue rule's deficit section is already filled.
NO_DEFICIT = 10**9
# Scorers a worker keeps unpickled (by project and version: a version names its bytes).
SCORERS_KEPT = 4
_scorers: OrderedDict[tuple[int, str], StepScorer] = OrderedDict()


class BasisGone(LookupError):
    """The scorer or calibration the basis names was deleted: a full refresh is needed."""


@dataclass(frozen=True)
class IncrementalAttribution:
    attributed: int
    removed: int
    queued: int


def _scorer(scorer_row: TrainedScorer) -> StepScorer:
    key = (scorer_row.project_id, scorer_row.version)
    if key not in _scorers:
        blob = TrainedScorer.objects.values_list("blob", flat=True).get(pk=scorer_row.pk)
        _scorers[key] = load_scorer(bytes(blob))
        while len(_scorers) > SCORERS_KEPT:
            _scorers.popitem(last=False)
    _scorers.move_to_end(key)
    return _scorers[key]


def _stored(project_id: int, basis: AttributionBasis) -> tuple[TrainedScorer, Calibration | None]:
    scorer_row = (
        TrainedScorer.objects.filter(project_id=project_id, version=basis.scorer_version)
        .defer("blob")
        .first()
    )
    if scorer_row is None:
        raise BasisGone(MSG_BASIS_GONE.format(what="scorer"))
    calibration = None
    if basis.calibration_id is not None:
        # Only its key is stored on the rows: its diagnostics are not read.
        calibration = (
            Calibration.objects.filter(pk=basis.calibration_id, project_id=project_id)
            .only("id", "project_id")
            .first()
        )
        if calibration is None:
            raise BasisGone(MSG_BASIS_GONE.format(what="calibration"))
    return scorer_row, calibration


def _queue_end(project_id: int) -> int:
    """The first free place after the ranked queue (the index serves it)."""
    last = (
        TrajectoryAttribution.objects.filter(project_id=project_id, queue_rank__isnull=False)
        .order_by("-queue_rank")
        .values_list("queue_rank", flat=True)
        .first()
    )
    return 0 if last is None else last + 1


def rollouts_attribute(
    *, project_id: int, basis: AttributionBasis, rollout_ids: Collection[int]
) -> IncrementalAttribution:
    """Attribute these rollouts (those failed with steps) as the last full refresh would;
    drop the attribution of those that no longer fail. Raises :class:`BasisGone`."""
    scorer_row, calibration = _stored(project_id, basis)
    scorer = _scorer(scorer_row)
    per_system = SystemCalibration.from_dict(basis.per_system)
    ids = sorted(set(rollout_ids))
    rollouts = list(Trajectory.objects.filter(project_id=project_id, pk__in=ids).order_by("id"))
    failed = [t for t in rollouts if t.outcome == Outcome.FAILURE and t.step_count > 0]
    failed_ids = [t.pk for t in failed]
    gone = sorted(set(ids) - set(failed_ids))
    chosen = decisive_labels(Label.objects.filter(trajectory_id__in=failed_ids))
    calibrating = {
        pk
        for pk, label in chosen.items()
        if may_calibrate(label.source, gold_actions_calibrate=basis.gold_actions_calibrate)
    }
    placed = {
        pk: (rank, reason)
        for pk, rank, reason in TrajectoryAttribution.objects.filter(
            trajectory_id__in=failed_ids, queue_rank__isnull=False
        ).values_list("trajectory_id", "queue_rank", "queue_reason")
    }
    rows: list[TrajectoryAttribution] = []
    waiting: list[QueueItem] = []
    for batch in _batches(failed):
        records = _records(batch)
        for trajectory in batch:
            record = records[trajectory.pk]
            probabilities = scorer.step_probabilities(record)
            rows.append(
                attribution_row(
                    trajectory, _slim(record), probabilities, per_system, calibration, scorer_row
                )
            )
            if trajectory.pk not in calibrating and trajectory.pk not in placed:
                trains = label_trains(
                    scorer_row.metrics,
                    trajectory.agent_system,
                    trajectory.task_id or trajectory.external_id,
                )
                waiting.append(
                    QueueItem(str(trajectory.pk), trajectory.agent_system, probabilities, trains)
                )
    start = _queue_end(project_id)
    systems = {system_key(item.agent_system): NO_DEFICIT for item in waiting}
    ranks = {
        pk: (start + rank, reason)
        for pk, (rank, reason) in queue_ranks(waiting, systems, alpha=basis.alpha).items()
    }
    for row in rows:
        pk = row.trajectory_id
        # A calibrating label takes the rollout out of the queue; a place is kept as it was.
        place = None if pk in calibrating else placed.get(pk) or ranks.get(pk)
        row.queue_rank, row.queue_reason = place if place is not None else (None, "")
    with transaction.atomic():
        TrajectoryAttribution.objects.bulk_create(
            rows, update_conflicts=True, unique_fields=["trajectory"], update_fields=UPDATE_FIELDS
        )
        if gone:
            TrajectoryAttribution.objects.filter(trajectory_id__in=gone).delete()
    return IncrementalAttribution(attributed=len(rows), removed=len(gone), queued=len(ranks))
