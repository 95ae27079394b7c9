"""Helpers for the pure attribution core tests: tiny trajectories, no database."""

from __future__ import annotations

from ingest.core.records import LabelRecord, StepRecord, TrajectoryRecord


def make_trajectory(
    contents: list[str], *, agents: list[str] | None = None, task: str = ""
) -> TrajectoryRecord:
    agents = agents or ["assistant"] * len(contents)
    steps = [
        StepRecord(index=i, role="assistant", content=text, agent=agent)
        for i, (text, agent) in enumerate(zip(contents, agents, strict=True))
    ]
    return TrajectoryRecord(
        external_id="t", task_text=task, steps=steps, labels=[LabelRecord(step=0)]
    )
