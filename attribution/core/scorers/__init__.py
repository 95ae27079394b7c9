"""Step scorers: a trajectory in, one probability per step out (summing to 1).

Every scorer reads trajectories through :func:`attribution.core.view.scoring_view`,
so labels and metadata never reach it; the decisive steps are passed to ``fit``
separately, as ``y``.

Example:
    >>> from types import SimpleNamespace as NS
    >>> traj = NS(steps=[NS(content="a"), NS(content="b")], task_text="")
    >>> UniformScorer().fit([traj], [1]).predict_proba([traj])[0].tolist()
    [0.5, 0.5]
"""

from __future__ import annotations

from attribution.core.scorers.base import StepScorer
from attribution.core.scorers.baselines import (
    ConstantPositionScorer,
    HeuristicScorer,
    PositionPriorScorer,
    UniformScorer,
)
from attribution.core.scorers.learned import LearnedScorer
from attribution.core.scorers.serialize import dump_scorer, load_scorer, scorer_version

__all__ = [
    "ConstantPositionScorer",
    "HeuristicScorer",
    "LearnedScorer",
    "PositionPriorScorer",
    "StepScorer",
    "UniformScorer",
    "dump_scorer",
    "load_scorer",
    "scorer_version",
]
