"""What Faultline stores for each failed trajectory: probabilities, set, point, rollback.

Example:
    >>> from types import SimpleNamespace as NS
    >>> from attribution.core.conformal import Calibration
    >>> traj = NS(task_text="", environment="", steps=[NS(agent="Planner", content="a"),
    ...     NS(agent="WebSurfer", content="b"), NS(agent="WebSurfer", content="c")])
    >>> cal = Calibration(alpha=0.1, variant="two_sided", grouping="none", pooled_tau=0.7, m=30)
    >>> result = attribute(traj, [0.2, 0.5, 0.3], cal)
    >>> (result.lo, result.hi, result.point_step, result.agent, result.rollback_step)
    (1, 2, 1, 'WebSurfer', 1)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from attribution.core.conformal import Calibration, group_key, normalise, prediction_set
from attribution.core.view import agent_base_name, scoring_view


@dataclass(frozen=True)
class Attribution:
    """The attribution of one failed trajectory.

    ``lo``/``hi`` are None when the set is empty (no step is plausible at this level);
    the rollback step is then None too, and the point estimate still names a step.
    """

    probabilities: list[float]
    lo: int | None
    hi: int | None
    point_step: int
    agent: str
    rollback_step: int | None
    alpha: float
    group: str
    calibration_group: str
    tau: float

    @property
    def is_empty(self) -> bool:
        return self.lo is None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def point_estimate(probabilities: ArrayLike) -> int:
    """The most probable step; the earliest one on ties.

    Example:
        >>> point_estimate([0.3, 0.4, 0.4])
        1
    """
    p = normalise(probabilities)
    return int(np.argmax(p)) if p.size else 0


def responsible_agent(agents: Sequence[str], probabilities: ArrayLike) -> str:
    """The agent holding the most probability mass (role suffixes merged).

    Ties go to the agent that spoke first.

    Example:
        >>> responsible_agent(["A", "B (thought)", "B (-> A)"], [0.4, 0.3, 0.3])
        'B'
    """
    p = normalise(probabilities)
    mass: dict[str, float] = {}
    for agent, weight in zip(agents, p, strict=True):
        name = agent_base_name(agent)
        mass[name] = mass.get(name, 0.0) + float(weight)
    if not mass:
        return ""
    best = max(mass.values())
    return next(name for name, value in mass.items() if value >= best - 1e-12)


def attribute(trajectory: Any, probabilities: ArrayLike, calibration: Calibration) -> Attribution:
    """Apply a calibration to one trajectory's step probabilities."""
    view = scoring_view(trajectory)
    p = normalise(probabilities)
    group = group_key(calibration.grouping, n_steps=view.n_steps, environment=view.environment)
    tau = calibration.tau_for(group)
    interval = prediction_set(p, tau, calibration.variant) if p.size else None
    lo, hi = interval if interval is not None else (None, None)
    return Attribution(
        probabilities=[float(x) for x in p],
        lo=lo,
        hi=hi,
        point_step=point_estimate(p),
        agent=responsible_agent([s.agent for s in view.steps], p),
        rollback_step=lo,
        alpha=calibration.alpha,
        group=group,
        calibration_group=calibration.source_for(group),
        tau=tau,
    )
