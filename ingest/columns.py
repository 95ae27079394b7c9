"""The column order of the bulk writes, in one place.

Kept free of Django imports so the ingest benchmark can build its bare baseline table
from the same list the pipeline writes (bench/ingest.py).
"""

from __future__ import annotations

TRAJECTORY_COLUMNS = (
    "id",
    "project_id",
    "upload_id",
    "external_id",
    "task_id",
    "task_text",
    "environment",
    "agent_system",
    "policy_model",
    "outcome",
    "reward",
    "step_count",
    "metadata",
    "created_at",
)
STEP_COLUMNS = (
    "trajectory_id",
    "index",
    "agent",
    "role",
    "kind",
    "content",
    "tool_name",
    "tool_args",
    "tool_call_id",
    "is_error",
    "is_mutating",
    "started_at",
    "ended_at",
    "metadata",
)
LABEL_COLUMNS = ("trajectory_id", "step_index", "agent", "reason", "source", "created_at")
