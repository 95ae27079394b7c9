"""What an export reads about one failed rollout, as plain dataclasses.

The Django side fills these from the database; the builders only see them, so every
format is testable without a database.

Example:
    >>> from ingest.core.records import StepRecord, TrajectoryRecord
    >>> record = TrajectoryRecord(external_id="t1", steps=[StepRecord(index=0, role="user")])
    >>> item = ExportRollout(rollout_id=1, record=record)
    >>> item.decisive.label_step is None
    True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ingest.core.records import TrajectoryRecord


class CorrectionSource:
    HUMAN = "human"
    SUCCESSFUL_ROLLOUT = "successful_rollout"

    ALL = (HUMAN, SUCCESSFUL_ROLLOUT)


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a corrected assistant turn; ``arguments`` is a JSON value."""

    name: str
    arguments: Any = None
    id: str = ""


@dataclass(frozen=True)
class CorrectedTurn:
    """What the agent should have done at ``step`` of the failed rollout.

    ``source_rollout`` names the successful rollout it was taken from, if any.
    """

    step: int
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    source: str = CorrectionSource.HUMAN
    author: str = ""
    source_rollout: str = ""
    correction_id: int | None = None


@dataclass(frozen=True)
class Decisive:
    """Where the rollout went wrong: a label, an attribution, or both (or neither).

    ``lo``/``hi`` is the conformal prediction set at ``alpha``; ``rollback_step`` its
    left end. ``label_*`` come from the newest label (a human one wins over the dataset's).
    """

    label_step: int | None = None
    label_agent: str = ""
    label_reason: str = ""
    label_source: str = ""
    lo: int | None = None
    hi: int | None = None
    point_step: int | None = None
    rollback_step: int | None = None
    alpha: float | None = None

    @property
    def step(self) -> int | None:
        """The decisive step: the labelled one when a label exists, else the rollback point."""
        return self.label_step if self.label_step is not None else self.rollback_step

    @property
    def has_attribution(self) -> bool:
        return self.point_step is not None


@dataclass(frozen=True)
class Occurrence:
    """One step of the rollout that belongs to a misbehaviour cluster."""

    step: int
    misbehaviour_id: int
    name: str
    category: str = ""
    description: str = ""


@dataclass
class ExportRollout:
    """One failed rollout with everything the four builders need."""

    rollout_id: int
    record: TrajectoryRecord
    decisive: Decisive = field(default_factory=Decisive)
    occurrences: list[Occurrence] = field(default_factory=list)
    corrections: list[CorrectedTurn] = field(default_factory=list)
