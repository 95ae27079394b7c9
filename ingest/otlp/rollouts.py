"""Writing the rollouts of live traces: created on first assembly, then rebuilt in place.

A rollout keeps its id across rebuilds, so labels and outcomes attached meanwhile stay
with it; its steps are replaced, and each label follows its step to wherever the rebuild
put it (ingest.core.step_identity). An outcome or reward attached through the API
(``ingest.outcomes.ATTACHED_KEY``) stays over what the trace states, and one the trace does
not state never overwrites one stored before. Rollouts of live traces
belong to one ``Upload`` row per project ("OTLP/HTTP traces"), since every rollout belongs
to an upload; its stored counts are refreshed by the periodic sweep (``stream_upload_recount``),
not by every assembly: one counter row updated by each would serialise the workers. The
uploads page counts that row's rollouts as it shows it (``stream_upload_counts``), so
spans sent a moment ago are counted there before their trace closes.
"""

from __future__ import annotations

import hashlib
import logging
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Sum
from django.utils import timezone

from ingest.bulk import (
    allocate_trajectory_ids,
    insert_steps,
    insert_trajectories,
    step_rows,
    trajectory_metadata,
    trajectory_row,
    trajectory_texts,
)
from ingest.columns import STEP_COLUMNS
from ingest.core.otlp_trace import FORMAT as LIVE_FORMAT
from ingest.core.records import Outcome, TrajectoryRecord
from ingest.core.step_identity import StepIdentity, followed_index
from ingest.core.storable import storable_value
from ingest.models import Label, Step, Trajectory, Upload, UploadStatus
from ingest.outcomes import attached_fields

logger = logging.getLogger(__name__)

STREAM_UPLOAD_NAME = "OTLP/HTTP traces"
STREAM_UPLOAD_SHA256 = hashlib.sha256(b"faultline:otlp-stream").hexdigest()
UPDATED_FIELDS = [
    "task_id",
    "task_text",
    "environment",
    "agent_system",
    "policy_model",
    "step_count",
    "outcome",
    "reward",
    "metadata",
]


def stream_upload_id(*, project_id: int) -> int:
    """The id of the project's stream upload (created the first time): one column read,
    not a whole upload row, on every assembly that writes a new rollout."""
    found = (
        Upload.objects.filter(project_id=project_id, sha256=STREAM_UPLOAD_SHA256)
        .values_list("pk", flat=True)
        .first()
    )
    return found if found is not None else stream_upload(project_id=project_id).pk


def stream_upload(*, project_id: int) -> Upload:
    """The project's one upload row that the rollouts of live traces belong to."""
    upload, _ = Upload.objects.get_or_create(
        project_id=project_id,
        sha256=STREAM_UPLOAD_SHA256,
        defaults={
            "original_name": STREAM_UPLOAD_NAME,
            "raw_file": "",
            "size": 0,
            "status": UploadStatus.DONE,
            "detected_format": LIVE_FORMAT,
            "finished_at": timezone.now(),
        },
    )
    return upload


def _fields(record: TrajectoryRecord) -> dict[str, Any]:
    texts = trajectory_texts(record)
    del texts["external_id"]  # a live rollout's trace id never changes
    return {**texts, "step_count": len(record.steps)}


@dataclass
class RolloutsWritten:
    """What ``rollouts_write`` did: the rollout ids in the order of its records, and the
    labels of rebuilt rollouts that moved with their step or whose step is gone."""

    ids: list[int]
    labels_moved: int = 0
    # Rollout ids with a label whose step the rebuild no longer has: the label stays at
    # its index (a human's verdict is not deleted by a parser), to be checked by hand.
    labels_unplaced: list[int] = field(default_factory=list)


def rollouts_write(
    *, project_id: int, records: list[tuple[int | None, TrajectoryRecord]]
) -> RolloutsWritten:
    """Create or rebuild one rollout per (existing rollout id or None, record); return the
    rollout ids in the same order. Runs inside the caller's transaction."""
    existing = Trajectory.objects.in_bulk([pk for pk, _ in records if pk is not None])
    new_count = sum(1 for pk, _ in records if existing.get(pk) is None)
    new_ids = iter(allocate_trajectory_ids(new_count) if new_count else [])
    upload_id = stream_upload_id(project_id=project_id) if new_count else 0
    now = timezone.now()
    ids: list[int] = []
    created: list[tuple[Any, ...]] = []
    rebuilt: list[Trajectory] = []
    for pk, record in records:
        rollout = existing.get(pk) if pk is not None else None
        if rollout is None:
            rollout_id = next(new_ids)
            created.append(trajectory_row(rollout_id, project_id, upload_id, record, now))
        else:
            rollout_id = rollout.pk
            for name, value in _fields(record).items():
                setattr(rollout, name, value)
            # What the trace states, unless an evaluation attached through the API said
            # otherwise: that stays whatever spans arrive later.
            attached = attached_fields(rollout.metadata)
            if record.outcome != Outcome.UNKNOWN and "outcome" not in attached:
                rollout.outcome = record.outcome
            if record.reward is not None and "reward" not in attached:
                rollout.reward = record.reward
            rollout.metadata = storable_value({**rollout.metadata, **trajectory_metadata(record)})
            rebuilt.append(rollout)
        ids.append(rollout_id)
    # Plain rows to the driver (ingest.bulk), as an upload writes them: the ORM's
    # bulk_create was a fifth of an assembly's time.
    insert_trajectories(created)
    written = RolloutsWritten(ids=ids)
    rows = {
        rollout_id: step_rows(rollout_id, record) for rollout_id, (_, record) in zip(ids, records)
    }
    if rebuilt:
        Trajectory.objects.bulk_update(rebuilt, UPDATED_FIELDS)
        _labels_follow(rows, [rollout.pk for rollout in rebuilt], written)
        Step.objects.filter(trajectory__in=rebuilt).delete()
    insert_steps([row for steps in rows.values() for row in steps])
    return written


IDENTITY_COLUMNS = ("kind", "agent", "tool_name", "content")
_IDENTITY_AT = [STEP_COLUMNS.index(name) for name in IDENTITY_COLUMNS]


def _labels_follow(
    rows: dict[int, list[tuple[Any, ...]]], rebuilt_ids: list[int], written: RolloutsWritten
) -> None:
    """Before the rebuilt rollouts' old steps are deleted: move each label to the index its
    step has among the new step rows (and to the step's agent, when the label named the
    step's old agent). One read of the labels; old steps are read only for labelled
    rollouts, and compared as the rows that will be stored."""
    labels = list(
        Label.objects.filter(trajectory_id__in=rebuilt_ids).only(
            "pk", "trajectory_id", "step_index", "agent"
        )
    )
    if not labels:
        return
    before: dict[int, list[StepIdentity]] = defaultdict(list)
    for trajectory_id, *identity in (
        Step.objects.filter(trajectory_id__in={label.trajectory_id for label in labels})
        .order_by("trajectory_id", "index")
        .values_list("trajectory_id", *IDENTITY_COLUMNS)
    ):
        before[trajectory_id].append(StepIdentity(*identity))
    after = {
        rollout_id: [StepIdentity(*(row[at] for at in _IDENTITY_AT)) for row in rows[rollout_id]]
        for rollout_id in before
    }
    changed: list[Label] = []
    unplaced: set[int] = set()
    for label in labels:
        old, new = before[label.trajectory_id], after.get(label.trajectory_id, [])
        if old == new:
            continue
        index = followed_index(old, new, label.step_index)
        if index is None:
            unplaced.add(label.trajectory_id)
            continue
        agent = label.agent
        if label.step_index < len(old) and agent == old[label.step_index].agent:
            agent = new[index].agent
        if (index, agent) != (label.step_index, label.agent):
            label.step_index, label.agent = index, agent
            changed.append(label)
    if changed:
        Label.objects.bulk_update(changed, ["step_index", "agent"])
        written.labels_moved += len(changed)
    if unplaced:
        logger.warning("labels whose step a rebuild no longer has: rollouts %s", sorted(unplaced))
        written.labels_unplaced.extend(sorted(unplaced))


def stream_upload_counts(*, project_id: int) -> tuple[int, int]:
    """The stream upload's rollouts and steps as they are now (its stored counts follow
    them at each sweep)."""
    rollouts = Trajectory.objects.filter(
        project_id=project_id, upload__sha256=STREAM_UPLOAD_SHA256
    ).aggregate(count=Count("id"), steps=Sum("step_count"))
    return rollouts["count"], rollouts["steps"] or 0


def stream_upload_recount(*, project_id: int) -> None:
    """Set the stream upload's rollout and step counts from its rollouts."""
    count, steps = stream_upload_counts(project_id=project_id)
    Upload.objects.filter(project_id=project_id, sha256=STREAM_UPLOAD_SHA256).update(
        trajectory_count=count, step_count=steps
    )
