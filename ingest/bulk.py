"""Fast bulk writes of steps, the bulk of every upload.

The ORM's bulk_create spends most of its time preparing each value of each row; for
steps we build plain tuples once and hand them to the driver: COPY on PostgreSQL,
executemany on SQLite. Values are prepared exactly as the model fields would prepare
them (JSON as text, datetimes through the backend's adapter), so reads through the ORM
see the same values.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import connection

from ingest.core.records import StepRecord
from ingest.models import Step

STEP_COLUMNS = (
    "trajectory_id", "index", "agent", "role", "kind", "content", "tool_name", "tool_args",
    "tool_call_id", "is_error", "is_mutating", "started_at", "ended_at", "metadata",
)


def _json(value: Any) -> str:
    return json.dumps(value)


def step_row(trajectory_id: int, step: StepRecord) -> tuple[Any, ...]:
    return (
        trajectory_id,
        step.index,
        step.agent[:200],
        step.role[:40],
        step.kind,
        step.content,
        step.tool_name[:200],
        None if step.tool_args is None else _json(step.tool_args),
        step.tool_call_id[:200],
        step.is_error,
        step.is_mutating,
        step.started_at,
        step.ended_at,
        _json(step.metadata),
    )


def _adapt_time(value: datetime | None) -> Any:
    return connection.ops.adapt_datetimefield_value(value)


def steps_insert(rows: Sequence[tuple[Any, ...]]) -> None:
    """Insert prepared step rows in the current transaction."""
    if not rows:
        return
    table = connection.ops.quote_name(Step._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(c) for c in STEP_COLUMNS)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            raw = cursor.cursor  # the psycopg cursor under Django's wrapper
            with raw.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        return
    adapted = [row[:11] + (_adapt_time(row[11]), _adapt_time(row[12])) + row[13:] for row in rows]
    placeholders = ", ".join(["%s"] * len(STEP_COLUMNS))
    with connection.cursor() as cursor:
        cursor.executemany(f"INSERT INTO {table} ({columns}) VALUES ({placeholders})", adapted)
