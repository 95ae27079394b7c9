"""Conformal prediction sets of contiguous steps, with exclusive tails.

A scorer gives step i of a failed trajectory a probability p_i of being the decisive
error. B_i is the mass strictly before i and A_i the mass strictly after i. The
nonconformity score of the true step y is, per variant:

- ``two_sided``: max(B_y, A_y); the set {i : B_i <= tau and A_i <= tau} = [lo, hi];
- ``left``: A_y; only the early tail is cut, the set is [lo, n-1] (a safe rollback);
- ``right``: B_y; only the late tail is cut, the set is [0, hi].

tau is the ceil((m+1)(1-alpha))-th smallest of the m calibration scores. B only rises
and A only falls along the trajectory, so each set is one interval, possibly empty.

Worked example: p = [0.1, 0.6, 0.3] gives B = [0, 0.1, 0.7] and A = [0.9, 0.3, 0].
With tau = 0.35 step 0 is out (A = 0.9), step 1 is in (0.1, 0.3), step 2 is out
(B = 0.7): the set is [1, 1]. With tau = 0.7 the set is [1, 2].

    >>> prediction_set([0.1, 0.6, 0.3], tau=0.35)
    (1, 1)
    >>> prediction_set([0.1, 0.6, 0.3], tau=0.7)
    (1, 2)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

TWO_SIDED = "two_sided"
LEFT = "left"
RIGHT = "right"
VARIANTS = (TWO_SIDED, LEFT, RIGHT)

GROUPING_NONE = "none"
GROUPING_LENGTH = "length"
GROUPING_ENVIRONMENT = "environment"
GROUPINGS = (GROUPING_NONE, GROUPING_LENGTH, GROUPING_ENVIRONMENT)
POOLED = "all"

# Upper bounds (inclusive) of the trajectory-length buckets; the last bucket is open.
LENGTH_EDGES = (8, 16, 32, 64)

MSG_ALPHA_TOO_SMALL = (
    "alpha={alpha} is too small for {m} calibration trajectories: "
    "it must be at least 1/(m+1) = {minimum:.4f}. Label more failed rollouts or raise alpha."
)
MSG_ALPHA_RANGE = "alpha must be strictly between 0 and 1."
MSG_NO_CALIBRATION = "Calibration needs at least one labelled trajectory."
MSG_UNKNOWN_VARIANT = "Unknown variant {variant!r}; choose one of: two_sided, left, right."
MSG_UNKNOWN_GROUPING = "Unknown grouping {grouping!r}; choose one of: none, length, environment."
MSG_BAD_PROBABILITIES = "Probabilities must be finite and non-negative."
MSG_STEP_OUT_OF_RANGE = "The true step {step} is outside the trajectory's {n} steps."


class AlphaTooSmallError(ValueError):
    """alpha < 1/(m+1): no finite threshold can promise 1 - alpha coverage."""


def normalise(probabilities: ArrayLike) -> NDArray[np.float64]:
    """Probabilities summing to 1; all-zero scores become uniform.

    Example:
        >>> normalise([0, 0]).tolist(), normalise([1, 3]).tolist()
        ([0.5, 0.5], [0.25, 0.75])
    """
    p = np.asarray(probabilities, dtype=np.float64).reshape(-1)
    if p.size == 0:
        return p
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError(MSG_BAD_PROBABILITIES)
    total = p.sum()
    if total <= 0:
        return np.full(p.size, 1.0 / p.size)
    return p / total


def tails(probabilities: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(B, A): the mass strictly before and strictly after each step.

    Both are cumulative sums of non-negative numbers, so B never falls and A never rises
    along the trajectory, even in floating point.

    Example:
        >>> before, after = tails([0.25, 0.25, 0.5])
        >>> before.tolist(), after.tolist()
        ([0.0, 0.25, 0.5], [0.75, 0.5, 0.0])
    """
    p = normalise(probabilities)
    before = np.concatenate(([0.0], np.cumsum(p)[:-1])) if p.size else p
    after = np.concatenate((np.cumsum(p[::-1])[::-1][1:], [0.0])) if p.size else p
    return before, after


def _check_variant(variant: str) -> None:
    if variant not in VARIANTS:
        raise ValueError(MSG_UNKNOWN_VARIANT.format(variant=variant))


def step_scores(probabilities: ArrayLike, variant: str = TWO_SIDED) -> NDArray[np.float64]:
    """The nonconformity score every step would have if it were the true one.

    Example:
        >>> step_scores([0.1, 0.6, 0.3]).round(2).tolist()
        [0.9, 0.3, 0.7]
    """
    _check_variant(variant)
    before, after = tails(probabilities)
    if variant == LEFT:
        return after
    if variant == RIGHT:
        return before
    return np.maximum(before, after)


def nonconformity_score(
    probabilities: ArrayLike, true_step: int, variant: str = TWO_SIDED
) -> float:
    """The score of the true step: max(B_y, A_y) for the two-sided variant.

    Example:
        >>> nonconformity_score([0.1, 0.6, 0.3], 2)
        0.7
    """
    scores = step_scores(probabilities, variant)
    if not 0 <= true_step < scores.size:
        raise ValueError(MSG_STEP_OUT_OF_RANGE.format(step=true_step, n=scores.size))
    return float(scores[true_step])


def conformal_quantile(scores: Sequence[float] | NDArray[np.float64], alpha: float) -> float:
    """tau: the ceil((m+1)(1-alpha))-th smallest of the m calibration scores.

    Raises :class:`AlphaTooSmallError` when alpha < 1/(m+1), where that rank exceeds m.

    Example:
        >>> conformal_quantile([0.1, 0.2, 0.3, 0.4], alpha=0.4)
        0.3
        >>> conformal_quantile([0.1], alpha=0.4)  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        AlphaTooSmallError: alpha=0.4 is too small for 1 calibration trajectories
    """
    if not 0 < alpha < 1:
        raise ValueError(MSG_ALPHA_RANGE)
    values = np.sort(np.asarray(scores, dtype=np.float64).reshape(-1))
    m = values.size
    if m == 0:
        raise ValueError(MSG_NO_CALIBRATION)
    # The small slack keeps (m+1)(1-alpha) = 19.000000000000004 from becoming rank 20.
    rank = math.ceil((m + 1) * (1 - alpha) - 1e-9)
    if rank > m:
        raise AlphaTooSmallError(MSG_ALPHA_TOO_SMALL.format(alpha=alpha, m=m, minimum=1 / (m + 1)))
    return float(values[max(rank, 1) - 1])


def prediction_set(
    probabilities: ArrayLike, tau: float, variant: str = TWO_SIDED
) -> tuple[int, int] | None:
    """The set {i : score_i <= tau} as an inclusive interval (lo, hi), or None when empty.

    Example:
        >>> prediction_set([0.5, 0.5], tau=0.4) is None
        True
    """
    return interval_from_scores(step_scores(probabilities, variant), tau)


def interval_from_scores(scores: NDArray[np.float64], tau: float) -> tuple[int, int] | None:
    """The set {i : scores_i <= tau} from precomputed :func:`step_scores`.

    Example:
        >>> interval_from_scores(np.array([0.9, 0.3, 0.7]), 0.5)
        (1, 1)
    """
    inside = np.flatnonzero(scores <= tau)
    if inside.size == 0:
        return None
    return int(inside[0]), int(inside[-1])


def mass_beyond(probabilities: ArrayLike, lo: int, hi: int, point: int) -> float | None:
    """When the most probable step ``point`` lies outside the set [lo, hi], the share of
    the probability on the set's side of it (which is why the set does not start or end
    at it); None when it is inside.

    A two-sided set holds the steps whose mass before and after both stay under tau, so a
    step holding the most probability alone can fall outside it when most of the rest
    lies on one side (19% at step 2, 81% after it).

    Example:
        >>> mass_beyond([0.3, 0.2, 0.25, 0.25], 2, 3, 0)
        0.7
        >>> mass_beyond([0.3, 0.2, 0.25, 0.25], 0, 3, 0) is None
        True
    """
    if lo <= point <= hi:
        return None
    p = normalise(probabilities)
    beyond = p[point + 1 :] if point < lo else p[:point]
    return round(float(beyond.sum()), 6)


def length_bucket(n_steps: int) -> str:
    """The length bucket of a trajectory, e.g. "1-8", "9-16", ..., "65+".

    Example:
        >>> length_bucket(5), length_bucket(33), length_bucket(130)
        ('1-8', '33-64', '65+')
    """
    low = 1
    for edge in LENGTH_EDGES:
        if n_steps <= edge:
            return f"{low}-{edge}"
        low = edge + 1
    return f"{low}+"


def length_buckets() -> tuple[str, ...]:
    """Every length bucket, shortest first.

    Example:
        >>> length_buckets()
        ('1-8', '9-16', '17-32', '33-64', '65+')
    """
    return tuple(length_bucket(edge) for edge in LENGTH_EDGES) + (
        length_bucket(LENGTH_EDGES[-1] + 1),
    )


def group_key(grouping: str, *, n_steps: int, environment: str = "") -> str:
    """The Mondrian group of a trajectory under a grouping.

    Example:
        >>> group_key("length", n_steps=10), group_key("environment", n_steps=3, environment="GAIA")
        ('9-16', 'GAIA')
    """
    if grouping == GROUPING_NONE:
        return POOLED
    if grouping == GROUPING_LENGTH:
        return length_bucket(n_steps)
    if grouping == GROUPING_ENVIRONMENT:
        return environment or "(none)"
    raise ValueError(MSG_UNKNOWN_GROUPING.format(grouping=grouping))


@dataclass(frozen=True)
class Calibration:
    """tau per group, with the pooled tau for groups that had too few labels."""

    alpha: float
    variant: str
    grouping: str
    pooled_tau: float
    m: int
    tau_by_group: dict[str, float] = field(default_factory=dict)
    m_by_group: dict[str, int] = field(default_factory=dict)
    min_group_size: int = 0

    def tau_for(self, group: str) -> float:
        return self.tau_by_group.get(group, self.pooled_tau)

    def source_for(self, group: str) -> str:
        """The group whose tau applies: the group itself or the pooled fallback."""
        return group if group in self.tau_by_group else POOLED

    def to_dict(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "variant": self.variant,
            "grouping": self.grouping,
            "pooled_tau": self.pooled_tau,
            "m": self.m,
            "tau_by_group": dict(self.tau_by_group),
            "m_by_group": dict(self.m_by_group),
            "min_group_size": self.min_group_size,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Calibration:
        return cls(
            alpha=float(data["alpha"]),
            variant=str(data["variant"]),
            grouping=str(data["grouping"]),
            pooled_tau=float(data["pooled_tau"]),
            m=int(data["m"]),
            tau_by_group={str(k): float(v) for k, v in data.get("tau_by_group", {}).items()},
            m_by_group={str(k): int(v) for k, v in data.get("m_by_group", {}).items()},
            min_group_size=int(data.get("min_group_size", 0)),
        )


def calibrate(
    probabilities: Sequence[ArrayLike],
    true_steps: Sequence[int],
    *,
    alpha: float,
    variant: str = TWO_SIDED,
    grouping: str = GROUPING_NONE,
    groups: Sequence[str] | None = None,
    min_group_size: int = 30,
) -> Calibration:
    """Calibrate tau on labelled trajectories, per group when a grouping is given.

    A group gets its own tau only when it has at least ``min_group_size`` trajectories
    and enough of them for alpha (m_g >= 1/alpha - 1); otherwise it uses the pooled tau.

    Example:
        >>> cal = calibrate([[0.1, 0.9], [0.8, 0.2], [0.5, 0.5], [0.3, 0.7]],
        ...                 [1, 0, 1, 1], alpha=0.2)
        >>> cal.pooled_tau, cal.m
        (0.5, 4)
    """
    _check_variant(variant)
    scores = np.array(
        [nonconformity_score(p, y, variant) for p, y in zip(probabilities, true_steps, strict=True)]
    )
    if grouping != GROUPING_NONE and groups is None:
        groups = [
            group_key(grouping, n_steps=len(np.asarray(p).reshape(-1))) for p in probabilities
        ]
    return calibrate_scores(
        scores,
        alpha=alpha,
        variant=variant,
        grouping=grouping,
        groups=groups,
        min_group_size=min_group_size,
    )


def calibrate_scores(
    scores: Sequence[float] | NDArray[np.float64],
    *,
    alpha: float,
    variant: str = TWO_SIDED,
    grouping: str = GROUPING_NONE,
    groups: Sequence[str] | None = None,
    min_group_size: int = 30,
) -> Calibration:
    """:func:`calibrate` from the true steps' nonconformity scores already computed.

    Example:
        >>> calibrate_scores([0.1, 0.2, 0.3, 0.4], alpha=0.4).pooled_tau
        0.3
    """
    _check_variant(variant)
    if grouping not in GROUPINGS:
        raise ValueError(MSG_UNKNOWN_GROUPING.format(grouping=grouping))
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    pooled_tau = conformal_quantile(scores, alpha)
    tau_by_group: dict[str, float] = {}
    m_by_group: dict[str, int] = {}
    if grouping != GROUPING_NONE:
        if groups is None:
            raise ValueError("A grouping needs the group of every calibration trajectory.")
        labels = np.asarray(list(groups), dtype=object)
        for group in sorted(set(labels.tolist())):
            member_scores = scores[labels == group]
            m_by_group[group] = int(member_scores.size)
            if member_scores.size >= max(min_group_size, 1) and alpha >= 1 / (
                member_scores.size + 1
            ):
                tau_by_group[group] = conformal_quantile(member_scores, alpha)
    return Calibration(
        alpha=alpha,
        variant=variant,
        grouping=grouping,
        pooled_tau=pooled_tau,
        m=int(scores.size),
        tau_by_group=tau_by_group,
        m_by_group=m_by_group,
        min_group_size=min_group_size,
    )
