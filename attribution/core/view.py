"""The label-free view of a trajectory that every scorer reads.

Scorers never see a trajectory's labels nor its metadata (Who&When keeps
``ground_truth``, ``is_correct`` and ``mistake_type`` there): they read this view, built
from an explicit list of allowed attributes, so a label cannot leak into a feature by
accident.

Example:
    >>> from types import SimpleNamespace as NS
    >>> raw = NS(steps=[NS(index=0, role="user", content="hi")], task_text="say hi",
    ...          environment="", agent_system="", labels=["secret"], metadata={"x": 1})
    >>> view = scoring_view(raw)
    >>> view.steps[0].content, hasattr(view, "labels")
    ('hi', False)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ingest.core.vocabulary import base_agent


@dataclass(frozen=True)
class StepView:
    index: int
    role: str
    kind: str
    agent: str
    content: str
    tool_name: str
    tool_args: str
    is_error: bool
    is_mutating: bool | None
    tool_call_id: str = ""


@dataclass(frozen=True)
class TrajectoryView:
    steps: tuple[StepView, ...]
    task_text: str
    environment: str
    agent_system: str

    @property
    def n_steps(self) -> int:
        return len(self.steps)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def scoring_view(trajectory: Any) -> TrajectoryView:
    """Copy only what a scorer may read: steps, task text, environment, agent system."""
    if isinstance(trajectory, TrajectoryView):
        return trajectory
    steps = tuple(
        StepView(
            index=position,
            role=str(getattr(step, "role", "") or ""),
            kind=str(getattr(step, "kind", "") or "message"),
            agent=str(getattr(step, "agent", "") or ""),
            content=_text(getattr(step, "content", "")),
            tool_name=str(getattr(step, "tool_name", "") or ""),
            tool_args=_text(getattr(step, "tool_args", None)),
            is_error=bool(getattr(step, "is_error", False)),
            is_mutating=getattr(step, "is_mutating", None),
            tool_call_id=str(getattr(step, "tool_call_id", "") or ""),
        )
        for position, step in enumerate(getattr(trajectory, "steps", []) or [])
    )
    return TrajectoryView(
        steps=steps,
        task_text=_text(getattr(trajectory, "task_text", "")),
        environment=str(getattr(trajectory, "environment", "") or ""),
        agent_system=str(getattr(trajectory, "agent_system", "") or ""),
    )


def agent_base_name(name: str) -> str:
    """An agent's name without a role suffix such as "(thought)" or "(-> WebSurfer)": the
    rule of :func:`ingest.core.vocabulary.base_agent`, under the name the scorers use.

    Example:
        >>> agent_base_name("Orchestrator (-> WebSurfer)")
        'Orchestrator'
    """
    return base_agent(name)
