"""What a full attribution refresh used, kept so that later rollouts are attributed alike.

The full refresh (attribution.services) trains or picks the scorer and calibrates it on
every label; an incremental refresh (attribution.incremental) reloads that scorer and
calibration and applies them to the new rollouts only. The pipeline stores this basis on
its refresh row and compares it with the project's state to decide when a new full
refresh is due.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from attribution.core.system_calibration import SystemCalibration, labels_needed, system_key


@dataclass(frozen=True)
class AttributionBasis:
    """The scorer and calibration a full refresh stored, and what it counted."""

    scorer_version: str
    calibration_id: int | None
    per_system: dict[str, Any]
    alpha: float
    gold_actions_calibrate: bool
    calibration_borrow: dict[str, Any]
    failed: int
    labelled: int
    calibrating: int
    # Agent systems of the failed rollouts, and those whose labelling-queue deficit was
    # larger than their unlabelled rollouts (the queue's first section was short).
    systems: list[str] = field(default_factory=list)
    short_systems: list[str] = field(default_factory=list)
    # Labelled failed rollouts per agent system: a system that reaches MIN_TRAINING_LABELS
    # gets a scorer of its own at the next full refresh. Empty in bases stored before.
    labelled_by_system: dict[str, int] = field(default_factory=dict)
    # attribution.services.SCORING_RULES when it was made ("" in bases stored before).
    scoring_rules: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AttributionBasis:
        return cls(**{name: data[name] for name in cls.__dataclass_fields__ if name in data})


def basis_made(
    *,
    project: Any,
    scorer_row: Any,
    calibration: Any,
    per_system: SystemCalibration,
    alpha: float,
    failed: Sequence[Any],
    labelled: Sequence[Any],
    calibrating: set[int],
    scoring_rules: str = "",
) -> AttributionBasis:
    """The basis of a full refresh that attributed ``failed`` (the project's rows), of
    which ``labelled`` had a decisive label."""
    unlabelled = Counter(system_key(t.agent_system) for t in failed if t.pk not in calibrating)
    short = sorted(
        system
        for system in unlabelled
        if unlabelled[system]
        < labels_needed(per_system.labels_by_system.get(system, 0), alpha, per_system.min_labels)
    )
    return AttributionBasis(
        scorer_version=scorer_row.version,
        calibration_id=calibration.pk if calibration is not None else None,
        per_system=per_system.to_dict(),
        alpha=alpha,
        gold_actions_calibrate=bool(project.gold_actions_calibrate),
        calibration_borrow=dict(project.calibration_borrow or {}),
        failed=len(failed),
        labelled=len(labelled),
        calibrating=len(calibrating),
        systems=sorted({system_key(t.agent_system) for t in failed}),
        short_systems=short,
        scoring_rules=scoring_rules,
        labelled_by_system=dict(
            sorted(Counter(system_key(t.agent_system) for t in labelled).items())
        ),
    )
