"""The scorer interface, in the scikit-learn manner.

``fit(trajectories, decisive_steps)`` returns ``self``; ``predict_proba(trajectories)``
returns one probability array per trajectory, each summing to 1; ``predict`` the most
probable step (the first one on ties).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from attribution.core.conformal import normalise
from attribution.core.view import TrajectoryView, scoring_view

# Decisive steps as a list or a numpy array of integers.
Steps = Sequence[int] | NDArray[np.integer[Any]]

MSG_LENGTH_MISMATCH = "Got {x} trajectories but {y} decisive steps."
MSG_STEP_OUTSIDE = "Decisive step {step} is outside trajectory {position} of {n} steps."
MSG_NOT_FITTED = "This scorer is not fitted yet: call fit() first."


def softmax(logits: NDArray[np.float64]) -> NDArray[np.float64]:
    """A numerically stable softmax of one trajectory's logits.

    Example:
        >>> softmax(np.array([0.0, 0.0])).tolist()
        [0.5, 0.5]
    """
    if logits.size == 0:
        return logits
    shifted = logits - logits.max()
    weights = np.exp(shifted)
    return weights / weights.sum()


def check_training_data(
    trajectories: Sequence[Any], decisive_steps: Steps
) -> tuple[list[TrajectoryView], NDArray[np.int64]]:
    views = [scoring_view(t) for t in trajectories]
    steps = np.asarray(list(decisive_steps), dtype=np.int64)
    if len(views) != steps.size:
        raise ValueError(MSG_LENGTH_MISMATCH.format(x=len(views), y=steps.size))
    for position, (view, step) in enumerate(zip(views, steps, strict=True)):
        if not 0 <= step < view.n_steps:
            raise ValueError(MSG_STEP_OUTSIDE.format(step=step, position=position, n=view.n_steps))
    return views, steps


class StepScorer:
    """Base class: subclasses implement ``_scores(view)`` (non-negative, any scale)."""

    kind: ClassVar[str] = "base"

    def fit(self, trajectories: Sequence[Any], decisive_steps: Steps) -> StepScorer:
        check_training_data(trajectories, decisive_steps)
        self.is_fitted_ = True
        return self

    def _scores(self, view: TrajectoryView) -> NDArray[np.float64]:
        raise NotImplementedError

    def step_probabilities(self, trajectory: Any) -> NDArray[np.float64]:
        """One trajectory's probabilities (empty for a trajectory without steps)."""
        view = scoring_view(trajectory)
        if view.n_steps == 0:
            return np.zeros(0)
        return normalise(self._scores(view))

    def predict_proba(self, trajectories: Sequence[Any]) -> list[NDArray[np.float64]]:
        return [self.step_probabilities(t) for t in trajectories]

    def predict(self, trajectories: Sequence[Any]) -> NDArray[np.int64]:
        return np.array(
            [int(np.argmax(p)) for p in self.predict_proba(trajectories)], dtype=np.int64
        )

    def get_params(self) -> dict[str, Any]:
        return {}
