"""In-memory records that every parser yields and every consumer reads.

A parser turns one source file into an iterator of :class:`TrajectoryRecord`
objects, each holding its :class:`StepRecord` list (0-based, contiguous) and
any :class:`LabelRecord` found in the source (e.g. Who&When's mistake_step).

Example:
    >>> step = StepRecord(index=0, role="user", kind=StepKind.MESSAGE, content="hi")
    >>> traj = TrajectoryRecord(external_id="t1", steps=[step])
    >>> traj.outcome
    'unknown'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


class StepKind:
    MESSAGE = "message"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    THOUGHT = "thought"
    SYSTEM = "system"

    ALL = (MESSAGE, TOOL_CALL, TOOL_RESULT, THOUGHT, SYSTEM)


class Outcome:
    SUCCESS = "success"
    FAILURE = "failure"
    UNKNOWN = "unknown"

    ALL = (SUCCESS, FAILURE, UNKNOWN)


class LabelSource:
    DATASET = "dataset"
    HUMAN = "human"
    # Labels that a rule derived from the rollouts themselves (attribution.core.label_sources):
    # the first deviation from the task's gold actions that flips the outcome, and where a
    # failed trial leaves a successful one of the same task.
    GOLD_ACTIONS = "gold_actions"
    SIBLING_DIVERGENCE = "sibling_divergence"
    DERIVED = (GOLD_ACTIONS, SIBLING_DIVERGENCE)

    ALL = (DATASET, HUMAN, GOLD_ACTIONS, SIBLING_DIVERGENCE)
    # Which label a rollout is judged by when it has several: the highest rank wins, and
    # the newest among equals. A human's verdict overrides what a data set shipped, and
    # both override what a rule derived (gold actions are the stronger rule).
    PRECEDENCE = {HUMAN: 4, DATASET: 3, GOLD_ACTIONS: 2, SIBLING_DIVERGENCE: 1}

    @classmethod
    def diagnosis(cls, source: str, reason: str) -> str:
        """A label's reason as someone's diagnosis of the step, or "" when a rule derived the
        label: its reason is the rule's template (which gold action, which sibling), not a
        description of the behaviour, so it never names a misbehaviour.

        >>> LabelSource.diagnosis("human", "booked without asking")
        'booked without asking'
        >>> LabelSource.diagnosis("gold_actions", "expected cancel_reservation called with ...")
        ''
        """
        return "" if source in cls.DERIVED else reason

    @classmethod
    def prefers(cls, candidate: str, current: str) -> bool:
        """Whether a newer label from ``candidate`` replaces one from ``current``.

        >>> LabelSource.prefers("dataset", "human"), LabelSource.prefers("human", "dataset")
        (False, True)
        >>> LabelSource.prefers("human", "human")
        True
        >>> LabelSource.prefers("gold_actions", "dataset"), LabelSource.prefers(
        ...     "gold_actions", "sibling_divergence")
        (False, True)
        """
        return cls.PRECEDENCE.get(candidate, 0) >= cls.PRECEDENCE.get(current, 0)


@dataclass
class StepRecord:
    """One step of a rollout: a message, a tool call, a tool result or a thought."""

    index: int
    role: str = ""
    kind: str = StepKind.MESSAGE
    content: str = ""
    agent: str = ""
    tool_name: str = ""
    tool_args: Any = None
    tool_call_id: str = ""
    is_error: bool = False
    is_mutating: bool | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class LabelRecord:
    """The decisive error step of a failed rollout, as a dataset or a human says."""

    step: int
    agent: str = ""
    reason: str = ""
    source: str = LabelSource.DATASET


@dataclass
class TrajectoryRecord:
    """One rollout: the task, who ran it, how it ended and its steps."""

    external_id: str
    task_id: str = ""
    task_text: str = ""
    environment: str = ""
    agent_system: str = ""
    policy_model: str = ""
    outcome: str = Outcome.UNKNOWN
    reward: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    steps: list[StepRecord] = field(default_factory=list)
    labels: list[LabelRecord] = field(default_factory=list)
    # Where in its file the parser read it ("line 2", "item 0"), for an error about the
    # record as a whole; "" names it by its id.
    source: str = field(default="", compare=False)
