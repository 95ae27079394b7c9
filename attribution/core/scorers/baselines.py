"""Baseline scorers, always available and always reported beside the learned one.

- :class:`UniformScorer`: every step equally likely (the "random" baseline);
- :class:`ConstantPositionScorer`: the absolute step index most often labelled;
- :class:`PositionPriorScorer`: a histogram of labelled relative positions;
- :class:`HeuristicScorer`: error signals, no training needed.

Example:
    >>> from types import SimpleNamespace as NS
    >>> trajs = [NS(steps=[NS(content=str(i)) for i in range(4)], task_text="")] * 3
    >>> ConstantPositionScorer().fit(trajs, [1, 1, 2]).predict(trajs).tolist()
    [1, 1, 1]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from attribution.core import behaviour as behaviour_signals
from attribution.core.scorers.base import (
    MSG_NOT_FITTED,
    Steps,
    StepScorer,
    check_training_data,
    softmax,
)
from attribution.core.signals import compute_signals
from attribution.core.view import TrajectoryView
from ingest.core.vocabulary import agent_names, is_agent_action, is_routing


class UniformScorer(StepScorer):
    """1/n for every step."""

    kind: ClassVar[str] = "uniform"

    def _scores(self, view: TrajectoryView) -> NDArray[np.float64]:
        return np.ones(view.n_steps)


class ConstantPositionScorer(StepScorer):
    """Nearly all mass on the most frequently labelled absolute index (clipped to n-1).

    ``epsilon`` keeps the other steps possible so that conformal sets can grow.
    """

    kind: ClassVar[str] = "constant_position"

    def __init__(self, epsilon: float = 1e-3) -> None:
        self.epsilon = epsilon

    def fit(self, trajectories: Sequence[Any], decisive_steps: Steps) -> ConstantPositionScorer:
        _, steps = check_training_data(trajectories, decisive_steps)
        counts = Counter(steps.tolist())
        # Most frequent index; the smaller one on ties, for determinism.
        self.step_ = min(counts, key=lambda s: (-counts[s], s)) if counts else 0
        return self

    def _scores(self, view: TrajectoryView) -> NDArray[np.float64]:
        if not hasattr(self, "step_"):
            raise RuntimeError(MSG_NOT_FITTED)
        scores = np.full(view.n_steps, self.epsilon)
        scores[min(self.step_, view.n_steps - 1)] = 1.0
        return scores

    def get_params(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon}


class PositionPriorScorer(StepScorer):
    """A smoothed histogram of the labelled relative position i/(n-1).

    Example:
        >>> from types import SimpleNamespace as NS
        >>> trajs = [NS(steps=[NS(content="")] * 5, task_text="")] * 4
        >>> scorer = PositionPriorScorer(n_bins=5).fit(trajs, [0, 0, 0, 4])
        >>> int(scorer.predict(trajs[:1])[0])
        0
    """

    kind: ClassVar[str] = "position_prior"

    def __init__(self, n_bins: int = 10, smoothing: float = 1.0) -> None:
        self.n_bins = n_bins
        self.smoothing = smoothing

    def fit(self, trajectories: Sequence[Any], decisive_steps: Steps) -> PositionPriorScorer:
        views, steps = check_training_data(trajectories, decisive_steps)
        if self.n_bins < 1 or self.smoothing < 0:
            raise ValueError("n_bins must be >= 1 and smoothing >= 0.")
        counts = np.full(self.n_bins, float(self.smoothing))
        for view, step in zip(views, steps, strict=True):
            counts[self._bin(int(step), view.n_steps)] += 1.0
        self.bin_mass_ = (
            counts / counts.sum() if counts.sum() > 0 else np.full(self.n_bins, 1 / self.n_bins)
        )
        return self

    def _bin(self, step: int, n: int) -> int:
        relative = step / (n - 1) if n > 1 else 0.0
        return min(int(relative * self.n_bins), self.n_bins - 1)

    def _scores(self, view: TrajectoryView) -> NDArray[np.float64]:
        if not hasattr(self, "bin_mass_"):
            raise RuntimeError(MSG_NOT_FITTED)
        n = view.n_steps
        bins = np.array([self._bin(i, n) for i in range(n)])
        # A bin's mass is shared among the steps that fall in it in this trajectory.
        per_bin = np.bincount(bins, minlength=self.n_bins)
        return self.bin_mass_[bins] / per_bin[bins]

    def get_params(self) -> dict[str, Any]:
        return {"n_bins": self.n_bins, "smoothing": self.smoothing}


# The behaviour signals (attribution.core.behaviour) that make a step a suspect in the
# label-free ranking, each adding ``behaviour`` to its logit: those the misbehaviour
# clustering takes, less the ones this scorer reads its own way (an error drawn:
# error_next / error_self; a repeat: repeat / retry; a value nobody gave: new_numbers; a
# success claimed over an error: claim_after_error), the end of a rollout that failed
# (giving up after an error is where it stopped, a symptom: the cause is earlier), and
# the gold-action deviations (the gold-action label rule's own input: ranking by them
# would score that rule against itself).
RANKED_BEHAVIOURS = frozenset(
    {
        behaviour_signals.IGNORED_ERROR,
        behaviour_signals.UNCHECKED_APPROVAL,
        behaviour_signals.UNSUPPORTED_CLAIM,
        behaviour_signals.REPORTED_UNMADE_CHANGE,
        behaviour_signals.UNCONFIRMED_MUTATION,
        behaviour_signals.UNREAD_EDIT,
        behaviour_signals.EDITED_FAILING_TEST,
    }
)


def behaviour_suspects(view: TrajectoryView) -> NDArray[np.float64]:
    """Per step, how many of :data:`RANKED_BEHAVIOURS` it shows (no gold actions read)."""
    found = behaviour_signals.rollout_signals(view.steps, task_text=view.task_text)
    counts = np.zeros(view.n_steps)
    for position, step in enumerate(view.steps):
        signals = found.get(int(step.index))
        if signals is not None:
            counts[position] = len(signals.names & RANKED_BEHAVIOURS)
    return counts


class HeuristicScorer(StepScorer):
    """A softmax of weighted error signals; needs no labels.

    The step that *causes* an error is the one before the error message, so the error in
    the next observation weighs most; repeats, retry loops, ignored tool results, the first
    mutating action and invented numbers add suspicion, and so does each behaviour signal
    of :data:`RANKED_BEHAVIOURS` a step shows (an error carried on from, an approval that
    checked nothing, an unsupported claim, ...). An error the environment caused (a
    timeout, a service down: the signals' ``transient_error``) is no error of its call; the first
    action after it gains ``after_transient``. A decisive error is an agent's own
    step, so what is not one (the system prompt, a user turn, a tool's result; the rule of
    :func:`ingest.core.vocabulary.is_agent_action`), and an agent message with nothing in
    it, sits ``not_action`` below the least suspicious agent action of its rollout,
    whatever its own signals: an observation that
    reports an error is where the error shows, not where it was made, and a user message
    full of numbers and error words (SWE-agent's demonstration, a pasted log) is not the
    agent's doing. A rollout with no agent action keeps its signals as they are.

    Example:
        >>> from types import SimpleNamespace as NS
        >>> traj = NS(task_text="", steps=[NS(role="user", content="book a flight"),
        ...     NS(role="assistant", content="call api"), NS(role="tool", content="Error 500")])
        >>> int(HeuristicScorer().predict([traj])[0])
        1
        >>> traj = NS(task_text="", steps=[NS(role="system", content="You are an agent"),
        ...     NS(role="assistant", kind="tool_call", content="get_user(id=1)"),
        ...     NS(role="tool", kind="tool_result", content="Error: user not found")])
        >>> int(HeuristicScorer().predict([traj])[0])
        1
    """

    kind: ClassVar[str] = "heuristic"

    def __init__(
        self,
        error_next: float = 2.0,
        error_self: float = 0.5,
        repeat: float = 1.0,
        retry: float = 1.0,
        ignored_result: float = 1.0,
        first_mutating: float = 1.5,
        first_after_request: float = 1.0,
        new_numbers: float = 0.5,
        assume: float = 0.5,
        correction_next: float = 1.0,
        not_action: float = -3.0,
        check_error: float = -1.0,
        caught_change: float = 2.0,
        claim_after_error: float = 2.0,
        repeat_first: float = 1.0,
        behaviour: float = 1.0,
        after_transient: float = 1.0,
    ) -> None:
        self.error_next = error_next
        self.error_self = error_self
        self.repeat = repeat
        self.retry = retry
        self.ignored_result = ignored_result
        self.first_mutating = first_mutating
        self.first_after_request = first_after_request
        self.new_numbers = new_numbers
        self.assume = assume
        self.correction_next = correction_next
        self.not_action = not_action
        self.check_error = check_error
        self.caught_change = caught_change
        self.claim_after_error = claim_after_error
        self.repeat_first = repeat_first
        self.behaviour = behaviour
        self.after_transient = after_transient

    def fit(self, trajectories: Sequence[Any], decisive_steps: Steps) -> HeuristicScorer:
        check_training_data(trajectories, decisive_steps)
        return self

    def _scores(self, view: TrajectoryView) -> NDArray[np.float64]:
        s = compute_signals(view)
        repeats = (
            self.repeat * s.repeat_exact
            + self.retry * s.retry_count
            + self.repeat_first * s.repeat_first
        )
        logits = (
            self.error_next * s.error_next
            + self.error_self * s.error_self
            + np.where(_routing(view), 0.0, repeats)
            + self.ignored_result * s.ignored_result
            + self.first_mutating * s.first_mutating
            + self.first_after_request * s.first_after_request
            + self.new_numbers * s.new_numbers
            + self.assume * s.assume
            + self.correction_next * s.correction_next
            + self.check_error * s.check_error
            + self.caught_change * s.caught_change
            + self.claim_after_error * s.claim_after_error
        )
        if self.behaviour:
            logits = logits + self.behaviour * behaviour_suspects(view)
        # A timeout is the environment's doing: its call loses the error's weight, and
        # the first action after it, what an agent made of it, gains ``after_transient``
        # (an unseen SQL agent's give-ups after one timeout ranked the timed-out call
        # first on 10 of 10 rollouts).
        logits = logits - self.error_next * s.error_next * s.transient_error
        logits = logits + self.after_transient * s.after_transient
        others = _not_actions(view)
        if 0 < others.sum() < others.size:
            # Below every agent action, by ``not_action``: an additive push-down was
            # outweighed by a long user message's signals (new numbers, error words).
            floor = float(logits[~others].min()) + self.not_action
            logits = np.where(others, np.minimum(logits, floor), logits)
        return softmax(logits)

    def get_params(self) -> dict[str, Any]:
        return dict(vars(self))


def _routing(view: TrajectoryView) -> NDArray[np.bool_]:
    """The steps that only pass the turn (:func:`ingest.core.vocabulary.is_routing`): on
    Who&When's hand-crafted Magentic-One rollouts the repeat signals put "Next speaker
    WebSurfer" first in 40 of 58."""
    agents = agent_names(view.steps)
    return np.array([is_routing(step, agents) for step in view.steps], dtype=bool)


def _not_actions(view: TrajectoryView) -> NDArray[np.bool_]:
    """Steps where no error can be seen: not an agent's action, or an agent message with
    nothing in it. An OpenTelemetry model call that only announced the tool calls its tool
    spans ran is such a message (the call is the next step), and as the first action after
    the request it was ranked first on every rollout of a live trace."""
    return np.array(
        [not is_agent_action(step) or _empty_message(step) for step in view.steps], dtype=bool
    )


def _empty_message(step: Any) -> bool:
    return (
        not (getattr(step, "content", "") or "").strip()
        and not getattr(step, "tool_name", "")
        and getattr(step, "kind", "") != "tool_call"
    )
