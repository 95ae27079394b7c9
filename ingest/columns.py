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
# The fields of a StepRecord, as stored: every reader of stored steps takes its columns from
# here (ingest.selectors.step_records_by_rollout, the clustering's step reader).
STEP_RECORD_FIELDS = STEP_COLUMNS[1:]
# What readers that score or cluster steps leave out: per-step metadata is only shown.
STEP_ANALYSIS_FIELDS = tuple(f for f in STEP_RECORD_FIELDS if f != "metadata")
LABEL_COLUMNS = ("trajectory_id", "step_index", "agent", "reason", "source", "created_at")
