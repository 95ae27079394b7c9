"""Writing the rollouts of live traces: created on first assembly, then rebuilt in place.

A rollout keeps its id across rebuilds, so labels and outcomes attached meanwhile stay
with it; its steps are replaced. An outcome the trace does not state (unknown) never
overwrites one stored before (attached later through the API). Rollouts of live traces
belong to one ``Upload`` row per project ("OTLP/HTTP traces"), since every rollout belongs
to an upload; its counts are refreshed by the periodic sweep (``stream_upload_recount``),
not by every assembly: one counter row updated by each would serialise the workers.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.db.models import Count, Sum
from django.utils import timezone

from ingest.bulk import insert_steps, step_rows
from ingest.core.records import Outcome, TrajectoryRecord
from ingest.models import Step, Trajectory, Upload, UploadStatus

STREAM_UPLOAD_NAME = "OTLP/HTTP traces"
STREAM_UPLOAD_SHA256 = hashlib.sha256(b"faultline:otlp-stream").hexdigest()
STREAM_FORMAT = "otlp"
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
            "detected_format": STREAM_FORMAT,
            "finished_at": timezone.now(),
        },
    )
    return upload


def _fields(record: TrajectoryRecord) -> dict[str, Any]:
    return {
        "task_id": record.task_id[:255],
        "task_text": record.task_text,
        "environment": record.environment[:100],
        "agent_system": record.agent_system[:100],
        "policy_model": record.policy_model[:100],
        "step_count": len(record.steps),
    }


def rollouts_write(
    *, project_id: int, records: list[tuple[int | None, TrajectoryRecord]]
) -> list[int]:
    """Create or rebuild one rollout per (existing rollout id or None, record); return the
    rollout ids in the same order. Runs inside the caller's transaction."""
    existing = Trajectory.objects.in_bulk([pk for pk, _ in records if pk is not None])
    rollouts: list[Trajectory] = []
    created: list[Trajectory] = []
    rebuilt: list[Trajectory] = []
    upload: Upload | None = None
    for pk, record in records:
        rollout = existing.get(pk) if pk is not None else None
        if rollout is None:
            upload = upload or stream_upload(project_id=project_id)
            rollout = Trajectory(
                project_id=project_id,
                upload=upload,
                external_id=record.external_id[:255],
                outcome=record.outcome,
                reward=record.reward,
                metadata=record.metadata,
                **_fields(record),
            )
            created.append(rollout)
        else:
            for name, value in _fields(record).items():
                setattr(rollout, name, value)
            if record.outcome != Outcome.UNKNOWN:
                rollout.outcome, rollout.reward = record.outcome, record.reward
            rollout.metadata = {**rollout.metadata, **record.metadata}
            rebuilt.append(rollout)
        rollouts.append(rollout)
    Trajectory.objects.bulk_create(created)  # sets the ids (RETURNING, SQLite and PostgreSQL)
    if rebuilt:
        Trajectory.objects.bulk_update(rebuilt, UPDATED_FIELDS)
        Step.objects.filter(trajectory__in=rebuilt).delete()
    insert_steps(
        [
            row
            for rollout, (_, record) in zip(rollouts, records)
            for row in step_rows(rollout.pk, record)
        ]
    )
    return [rollout.pk for rollout in rollouts]


def stream_upload_recount(*, project_id: int) -> None:
    """Set the stream upload's rollout and step counts from its rollouts."""
    rollouts = Trajectory.objects.filter(
        project_id=project_id, upload__sha256=STREAM_UPLOAD_SHA256
    ).aggregate(count=Count("id"), steps=Sum("step_count"))
    Upload.objects.filter(project_id=project_id, sha256=STREAM_UPLOAD_SHA256).update(
        trajectory_count=rollouts["count"], step_count=rollouts["steps"] or 0
    )
