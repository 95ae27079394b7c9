"""Fast bulk writes of parsed rollouts: the heart of every upload's cost.

The ORM's bulk_create spends most of its time preparing each value of each row (and on
PostgreSQL adapting large JSON values one by one); here rows are plain tuples handed to
the driver: binary COPY on PostgreSQL (ingest.pg_copy), executemany on SQLite. Trajectory ids are allocated up
front (from the sequence on PostgreSQL; under SQLite's write lock otherwise) so steps can
reference them without a round trip per row. Values are prepared as the model fields
would prepare them (JSON as text, datetimes through the backend's adapter), so reads
through the ORM see the same values, and text holds no NUL (ingest.core.storable).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import connection
from django.utils import timezone

from ingest.columns import LABEL_COLUMNS, STEP_COLUMNS, TRAJECTORY_COLUMNS
from ingest.core.records import TrajectoryRecord
from ingest.core.storable import storable_json, storable_text
from ingest.core.token_usage import ROLLOUT_KEY, rollout_usage
from ingest.core.vocabulary import model_name
from ingest.models import Label, Step, Trajectory
from ingest.pg_copy import copy_rows


def _insert(
    table: str, columns: Sequence[str], rows: Sequence[tuple[Any, ...]], times: Sequence[int]
) -> None:
    """Insert rows into table; ``times`` are the positions of datetime values."""
    if not rows:
        return
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            copy_rows(cursor, table, columns, rows)
        return
    quoted_table = connection.ops.quote_name(table)
    quoted_columns = ", ".join(connection.ops.quote_name(c) for c in columns)
    adapt = connection.ops.adapt_datetimefield_value
    if times:
        rows = [
            tuple(adapt(value) if i in times else value for i, value in enumerate(row))
            for row in rows
        ]
    placeholders = ", ".join(["%s"] * len(columns))
    with connection.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {quoted_table} ({quoted_columns}) VALUES ({placeholders})", rows
        )


def step_rows(trajectory_id: int, record: TrajectoryRecord) -> list[tuple[Any, ...]]:
    """The record's steps as rows in ``STEP_COLUMNS`` order, for :func:`insert_steps`."""
    return [
        (
            trajectory_id,
            step.index,
            storable_text(step.agent[:200]),
            storable_text(step.role[:40]),
            step.kind,
            storable_text(step.content),
            storable_text(step.tool_name[:200]),
            None if step.tool_args is None else storable_json(step.tool_args),
            storable_text(step.tool_call_id[:200]),
            step.is_error,
            step.is_mutating,
            step.started_at,
            step.ended_at,
            storable_json(step.metadata),
        )
        for step in record.steps
    ]


def insert_steps(rows: Sequence[tuple[Any, ...]]) -> None:
    """Bulk-insert step rows made by :func:`step_rows`."""
    _insert(Step._meta.db_table, STEP_COLUMNS, rows, times=(11, 12))


def trajectory_texts(record: TrajectoryRecord) -> dict[str, str]:
    """A rollout's text columns as stored: cut to their column's length, nothing in them
    the databases refuse. The one home of that rule for new rows and rebuilt ones."""
    return {
        "external_id": storable_text(record.external_id[:255]),
        "task_id": storable_text(record.task_id[:255]),
        "task_text": storable_text(record.task_text),
        "environment": storable_text(record.environment[:100]),
        "agent_system": storable_text(record.agent_system[:100]),
        "policy_model": storable_text(model_name(record.policy_model)[:100]),
    }


def trajectory_metadata(record: TrajectoryRecord) -> dict[str, Any]:
    """A rollout's metadata as stored: the trace's, with the tokens its steps' model calls
    used (``token_usage.ROLLOUT_KEY``) when they record any, so that no page reads every
    step of a long rollout to show them."""
    usage = rollout_usage(step.metadata for step in record.steps)
    if usage is None:
        return record.metadata
    return {**record.metadata, ROLLOUT_KEY: usage.as_dict()}


def trajectory_row(
    pk: int, project_id: int, upload_id: int, record: TrajectoryRecord, now: datetime
) -> tuple[Any, ...]:
    """A new trajectory as a row in ``TRAJECTORY_COLUMNS`` order."""
    texts = trajectory_texts(record)
    return (
        pk,
        project_id,
        upload_id,
        *(texts[column] for column in TRAJECTORY_COLUMNS[3:9]),
        record.outcome,
        record.reward,
        len(record.steps),
        storable_json(trajectory_metadata(record)),
        now,
    )


def insert_trajectories(rows: Sequence[tuple[Any, ...]]) -> None:
    """Bulk-insert trajectory rows made by :func:`trajectory_row`."""
    _insert(Trajectory._meta.db_table, TRAJECTORY_COLUMNS, rows, times=(13,))


def allocate_trajectory_ids(count: int) -> list[int]:
    """Primary keys for ``count`` new trajectories, taken inside the ingest transaction."""
    table = Trajectory._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
                [table, count],
            )
            return [row[0] for row in cursor.fetchall()]
        # SQLite: the transaction holds the write lock (IMMEDIATE mode), so nobody else
        # can take these ids; sqlite_sequence keeps AUTOINCREMENT from reusing old ones.
        cursor.execute(f"SELECT COALESCE(MAX(id), 0) FROM {connection.ops.quote_name(table)}")
        top = cursor.fetchone()[0]
        cursor.execute("SELECT COALESCE(MAX(seq), 0) FROM sqlite_sequence WHERE name = %s", [table])
        top = max(top, cursor.fetchone()[0])
        return list(range(top + 1, top + 1 + count))


class RolloutWriter:
    """Collects parsed trajectories and writes them with a few bulk inserts per batch."""

    def __init__(self, *, project_id: int, upload_id: int, batch_steps: int) -> None:
        self.project_id = project_id
        self.upload_id = upload_id
        self.batch_steps = batch_steps
        self.pending: list[TrajectoryRecord] = []
        self.pending_steps = 0
        self.trajectories = 0
        self.steps = 0
        self.labels = 0

    @property
    def seen(self) -> tuple[int, int]:
        """(trajectories, steps) added so far, written or not."""
        return self.trajectories + len(self.pending), self.steps + self.pending_steps

    def add(self, record: TrajectoryRecord) -> None:
        self.pending.append(record)
        self.pending_steps += len(record.steps)
        if self.pending_steps >= self.batch_steps:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        now = timezone.now()
        ids = allocate_trajectory_ids(len(self.pending))
        trajectories, steps, labels = [], [], []
        for pk, record in zip(ids, self.pending):
            trajectories.append(trajectory_row(pk, self.project_id, self.upload_id, record, now))
            steps.extend(step_rows(pk, record))
            for label in record.labels:
                labels.append(
                    (pk, label.step, storable_text(label.agent[:200]),
                     storable_text(label.reason), label.source, now)
                )  # fmt: skip
        insert_trajectories(trajectories)
        insert_steps(steps)
        _insert(Label._meta.db_table, LABEL_COLUMNS, labels, times=(5,))
        self.trajectories += len(trajectories)
        self.steps += len(steps)
        self.labels += len(labels)
        self.pending = []
        self.pending_steps = 0
