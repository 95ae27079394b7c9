"""Pieces of the learned scorer's ranking variants (``LearnedScorer`` parameters).

- ``objective="pairwise"``: the decisive step should outscore every other step of its own
  rollout. Each training rollout gives one difference row per other step (decisive minus
  other), weighted 1/(n-1) so that every rollout counts once, whatever its length; a
  logistic regression without intercept on those rows (and their negations) ranks steps
  within a rollout, never across rollouts. Rows grow with the steps: linear.
- ``agent_stage=True``: two stages, the agent first, then the step within that agent's
  steps. p(step) is reweighted by the probability mass of its agent,
  p'(i) ~ p(i) * sum_{j: agent(j) = agent(i)} p(j), so a step of the likely agent gains.
- ``stacked=True``: a second stage that sees where each step's first-stage score sits in
  its rollout (gap to the rollout's best, rank, top or not, log-probability), fitted on
  out-of-fold first-stage scores so that it learns how far to trust them.

Example:
    >>> import numpy as np
    >>> agent_stage(np.array([0.4, 0.3, 0.3]), np.array([0, 1, 1])).round(3).tolist()
    [0.308, 0.346, 0.346]
    >>> rollout_relative(np.array([2.0, 0.0, 1.0]))[:, 1].tolist()
    [0.0, 1.0, 0.5]
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from attribution.core.scorers.base import softmax
from attribution.core.view import agent_base_name, scoring_view

RELATIVE_COLUMNS = ("gap_to_best", "rank", "is_top", "log_probability")


def pairwise_rows(
    x: NDArray[np.float64], lengths: NDArray[np.int64], steps: NDArray[np.int64]
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.float64]]:
    """Difference rows (decisive minus each other step), their negations, labels, weights.

    Example:
        >>> import numpy as np
        >>> rows, labels, weights = pairwise_rows(np.array([[1.0], [3.0], [0.0]]),
        ...     np.array([3]), np.array([1]))
        >>> rows.ravel().tolist(), labels.tolist(), weights.tolist()
        ([2.0, 3.0, -2.0, -3.0], [1, 1, 0, 0], [0.5, 0.5, 0.5, 0.5])
    """
    differences: list[NDArray[np.float64]] = []
    weights: list[NDArray[np.float64]] = []
    start = 0
    for n, step in zip(lengths.tolist(), steps.tolist(), strict=True):
        block = x[start : start + n]
        start += n
        if n < 2:
            continue
        others = np.delete(block, step, axis=0)
        differences.append(block[step] - others)
        weights.append(np.full(n - 1, 1.0 / (n - 1)))
    if not differences:
        width = x.shape[1]
        return np.zeros((0, width)), np.zeros(0, dtype=np.int64), np.zeros(0)
    rows = np.vstack(differences)
    weight = np.concatenate(weights)
    labels = np.concatenate((np.ones(len(rows)), np.zeros(len(rows)))).astype(np.int64)
    return np.vstack((rows, -rows)), labels, np.concatenate((weight, weight))


def agent_codes(trajectory: Any) -> NDArray[np.float64]:
    """Each step's agent as a small integer (order of first appearance), role suffixes
    merged as the responsible-agent rule merges them."""
    codes: dict[str, int] = {}
    view = scoring_view(trajectory)
    return np.array(
        [codes.setdefault(agent_base_name(s.agent), len(codes)) for s in view.steps],
        dtype=np.float64,
    )


def agent_stage(probabilities: NDArray[np.float64], codes: NDArray[Any]) -> NDArray[np.float64]:
    """p(i) times the mass of step i's agent, renormalised (the agent first, then the step)."""
    if probabilities.size == 0:
        return probabilities
    keys = codes.astype(np.int64)
    mass = np.bincount(keys, weights=probabilities)
    weighted = probabilities * mass[keys]
    total = weighted.sum()
    return weighted / total if total > 0 else probabilities


def rollout_relative(logits: NDArray[np.float64]) -> NDArray[np.float64]:
    """Per step: gap to the rollout's best logit, rank (0 best, 1 worst), is the top step,
    and its log-probability under the rollout's softmax; ties keep the earlier step first."""
    n = logits.size
    if n == 0:
        return np.zeros((0, len(RELATIVE_COLUMNS)))
    order = np.argsort(-logits, kind="stable")
    rank = np.empty(n)
    rank[order] = np.arange(n)
    return np.column_stack(
        (
            logits - logits.max(),
            rank / max(n - 1, 1),
            (rank == 0).astype(np.float64),
            np.log(softmax(logits) + 1e-12),
        )
    )
