"""One scorer per agent system: a system's own learned scorer, else a label-free one.

A learned scorer models the decisive steps of the systems it was trained on. Measured in
``docs/attribution.md``, one trained on other agent systems ranks a new system's steps
worse than the label-free heuristic (the transfer table), and one trained on a system's
own labels together with other systems' is worse on that system than one trained on its
own alone. So a project with several agent systems gives each system that has enough
labels of its own a scorer trained on those, and scores every other system with the
label-free fallback: never with a model of somebody else's agent.

Example:
    >>> from types import SimpleNamespace as NS
    >>> from attribution.core.scorers.baselines import ConstantPositionScorer, UniformScorer
    >>> first = ConstantPositionScorer()
    >>> first.step_ = 0
    >>> scorer = PerSystemScorer({"coder": first}, UniformScorer())
    >>> steps = [NS(content="a"), NS(content="b")]
    >>> scorer.step_probabilities(NS(steps=steps, agent_system="coder")).round(3).tolist()
    [0.999, 0.001]
    >>> scorer.step_probabilities(NS(steps=steps, agent_system="other")).tolist()
    [0.5, 0.5]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from attribution.core.scorers.base import StepScorer
from attribution.core.system_calibration import system_key


class PerSystemScorer(StepScorer):
    """``scorers`` by :func:`system_key`; ``fallback`` for every other system."""

    kind: ClassVar[str] = "per_system"

    def __init__(self, scorers: Mapping[str, StepScorer], fallback: StepScorer) -> None:
        self.scorers = dict(sorted(scorers.items()))
        self.fallback = fallback

    def scorer_for(self, agent_system: str) -> StepScorer:
        return self.scorers.get(system_key(agent_system), self.fallback)

    def has_own(self, agent_system: str) -> bool:
        """Whether ``agent_system`` is scored by a scorer trained on its own labels."""
        return system_key(agent_system) in self.scorers

    def step_probabilities(self, trajectory: Any) -> NDArray[np.float64]:
        system = str(getattr(trajectory, "agent_system", "") or "")
        return self.scorer_for(system).step_probabilities(trajectory)

    def get_params(self) -> dict[str, Any]:
        return {
            "systems": {
                system: {"kind": scorer.kind, **scorer.get_params()}
                for system, scorer in self.scorers.items()
            },
            "fallback": {"kind": self.fallback.kind, **self.fallback.get_params()},
        }
