"""Calibration per agent system, and no claim for a system without enough labels.

A project can hold rollouts of several agent systems (a tau-bench tool caller beside a
Magentic-One team). A tau calibrated on one system's labels promises nothing about the
other's rollouts: their nonconformity scores are not exchangeable. So tau is calibrated
per agent system (and within a system per length bucket, as :func:`calibrate` does), and
a rollout whose system has too few labels gets no prediction set at all: only the
scorer's ranking of its steps and the number of labels its system still needs.

The rule for "too few": m calibration labels can promise 1 - alpha only when the conformal
rank ceil((m+1)(1-alpha)) is at most m, i.e. m >= :func:`min_labels_for` (9 at alpha 0.1,
4 at 0.2, 19 at 0.05). A project may ask for more (``min_labels``), never for fewer.

Borrowing is an explicit opt-in per system (``borrow={"new system": "other system"}`` or
``POOLED`` for all labels together): the rollout then gets a set, reported as borrowed
with the system whose labels made it. The guarantee then holds only as far as the two
systems' scores are exchangeable, which nothing here checks; that is why it is opt-in and
always reported. A system's own calibration wins over a borrowed one once it has enough
labels.

Worked example: system "a" has 10 labels, "b" has 3; at alpha 0.1 "a" is calibrated,
"b" needs 6 more and makes no claim.

    >>> probs = [[0.1, 0.8, 0.1]] * 13
    >>> cal = calibrate_per_system(probs, [1] * 13, ["a"] * 10 + ["b"] * 3, alpha=0.1)
    >>> cal.decision("a", n_steps=3).source, cal.decision("b", n_steps=3).source
    ('own', 'none')
    >>> cal.decision("b", n_steps=3).labels_needed
    6
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from attribution.core.attribute import point_estimate, responsible_agent
from attribution.core.conformal import (
    GROUPING_LENGTH,
    GROUPING_NONE,
    POOLED,
    TWO_SIDED,
    Calibration,
    calibrate_scores,
    group_key,
    nonconformity_score,
    normalise,
    prediction_set,
)
from attribution.core.view import scoring_view

SOURCE_OWN = "own"
SOURCE_BORROWED = "borrowed"
SOURCE_NONE = "none"
UNKNOWN_SYSTEM = "(unknown system)"
# Within a system, groups follow calibrate()'s grouping; environment grouping is not
# offered here because the caller can fold the environment into the system key.
SYSTEM_GROUPINGS = (GROUPING_NONE, GROUPING_LENGTH)

MSG_UNKNOWN_SYSTEM_GROUPING = "Within a system the grouping must be 'none' or 'length'."
MSG_BORROW_SELF = "System {system!r} cannot borrow its own calibration."
MSG_NO_CLAIM = (
    "No confidence claim for {system}: it has {labels} labelled rollouts and needs "
    "{needed} more for {level:.0%} confidence."
)


def system_key(agent_system: str) -> str:
    """The calibration key of an agent system; a blank one is its own "unknown" system.

    Example:
        >>> system_key(""), system_key("tau-bench agent")
        ('(unknown system)', 'tau-bench agent')
    """
    return agent_system.strip() or UNKNOWN_SYSTEM


def min_labels_for(alpha: float) -> int:
    """The fewest labels m with ceil((m+1)(1-alpha)) <= m: below it, no finite tau.

    Example:
        >>> min_labels_for(0.1), min_labels_for(0.2), min_labels_for(0.05)
        (9, 4, 19)
    """
    if not 0 < alpha < 1:
        raise ValueError("alpha must be strictly between 0 and 1.")
    m = 1
    # The same slack as conformal_quantile, so the two rules never disagree.
    while math.ceil((m + 1) * (1 - alpha) - 1e-9) > m:
        m += 1
    return m


def labels_needed(labels: int, alpha: float, min_labels: int = 0) -> int:
    """How many more labels a system needs before it may claim 1 - alpha.

    Example:
        >>> labels_needed(3, 0.1), labels_needed(12, 0.1), labels_needed(12, 0.1, 40)
        (6, 0, 28)
    """
    return max(0, max(min_labels_for(alpha), min_labels) - labels)


@dataclass(frozen=True)
class CalibrationDecision:
    """Which tau (if any) applies to one rollout, and why."""

    system: str
    group: str
    tau: float | None
    source: str
    source_system: str
    calibration_group: str
    labels: int
    labels_needed: int
    alpha: float

    @property
    def claim(self) -> bool:
        return self.tau is not None


@dataclass(frozen=True)
class SystemCalibration:
    """tau per agent system (each a :class:`Calibration`), plus the opt-in borrowing."""

    alpha: float
    variant: str
    grouping: str
    by_system: dict[str, Calibration]
    labels_by_system: dict[str, int]
    pooled: Calibration | None = None
    borrow: dict[str, str] = field(default_factory=dict)
    min_labels: int = 0

    def decision(self, system: str, *, n_steps: int, environment: str = "") -> CalibrationDecision:
        """The tau for a rollout of ``system`` with ``n_steps`` steps (None: no claim)."""
        key = system_key(system)
        group = group_key(self.grouping, n_steps=n_steps, environment=environment)
        labels = self.labels_by_system.get(key, 0)
        needed = labels_needed(labels, self.alpha, self.min_labels)
        chosen, source, source_system = None, SOURCE_NONE, ""
        if key in self.by_system:
            chosen, source, source_system = self.by_system[key], SOURCE_OWN, key
        elif key in self.borrow:
            lender = self.borrow[key]
            candidate = self.pooled if lender == POOLED else self.by_system.get(lender)
            if candidate is not None:
                chosen, source, source_system = candidate, SOURCE_BORROWED, lender
        if chosen is None:
            return CalibrationDecision(
                key, group, None, SOURCE_NONE, "", "", labels, needed, self.alpha
            )
        return CalibrationDecision(
            system=key,
            group=group,
            tau=chosen.tau_for(group),
            source=source,
            source_system=source_system,
            calibration_group=chosen.source_for(group),
            labels=labels,
            labels_needed=needed,
            alpha=self.alpha,
        )

    def deficits(self) -> dict[str, int]:
        """Labels still needed per system that has any label (0 when calibrated)."""
        return {
            system: labels_needed(m, self.alpha, self.min_labels)
            for system, m in sorted(self.labels_by_system.items())
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "variant": self.variant,
            "grouping": self.grouping,
            "by_system": {k: v.to_dict() for k, v in self.by_system.items()},
            "labels_by_system": dict(self.labels_by_system),
            "pooled": self.pooled.to_dict() if self.pooled is not None else None,
            "borrow": dict(self.borrow),
            "min_labels": self.min_labels,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SystemCalibration:
        pooled = data.get("pooled")
        return cls(
            alpha=float(data["alpha"]),
            variant=str(data["variant"]),
            grouping=str(data["grouping"]),
            by_system={str(k): Calibration.from_dict(v) for k, v in data["by_system"].items()},
            labels_by_system={str(k): int(v) for k, v in data["labels_by_system"].items()},
            pooled=Calibration.from_dict(pooled) if pooled else None,
            borrow={str(k): str(v) for k, v in data.get("borrow", {}).items()},
            min_labels=int(data.get("min_labels", 0)),
        )


def calibrate_per_system(
    probabilities: Sequence[ArrayLike],
    true_steps: Sequence[int],
    systems: Sequence[str],
    *,
    alpha: float,
    variant: str = TWO_SIDED,
    grouping: str = GROUPING_LENGTH,
    min_group_size: int = 30,
    min_labels: int = 0,
    borrow: Mapping[str, str] | None = None,
) -> SystemCalibration:
    """One calibration per agent system that has enough labels for alpha.

    Within a system, length buckets with ``min_group_size`` labels get their own tau and
    the others the system's pooled tau (never another system's). The all-systems
    calibration is kept only for systems that opted in with ``borrow[system] = POOLED``.
    """
    if grouping not in SYSTEM_GROUPINGS:
        raise ValueError(MSG_UNKNOWN_SYSTEM_GROUPING)
    borrow = dict(borrow or {})
    for system, lender in borrow.items():
        if system_key(system) == system_key(lender):
            raise ValueError(MSG_BORROW_SELF.format(system=system))
    keys = [system_key(s) for s in systems]
    scores = np.array(
        [nonconformity_score(p, y, variant) for p, y in zip(probabilities, true_steps, strict=True)]
    )
    lengths = [np.asarray(p).reshape(-1).size for p in probabilities]
    if len(keys) != scores.size:
        raise ValueError("Every calibration rollout needs its agent system.")
    counts = {k: keys.count(k) for k in sorted(set(keys))}
    threshold = max(min_labels_for(alpha), min_labels)
    by_system: dict[str, Calibration] = {}
    for system, m in counts.items():
        if m < threshold:
            continue
        members = [i for i, k in enumerate(keys) if k == system]
        by_system[system] = calibrate_scores(
            scores[members],
            alpha=alpha,
            variant=variant,
            grouping=grouping,
            groups=[group_key(grouping, n_steps=lengths[i]) for i in members],
            min_group_size=min_group_size,
        )
    pooled = None
    if POOLED in borrow.values() and scores.size >= threshold:
        pooled = calibrate_scores(
            scores,
            alpha=alpha,
            variant=variant,
            grouping=grouping,
            groups=[group_key(grouping, n_steps=n) for n in lengths],
            min_group_size=min_group_size,
        )
    return SystemCalibration(
        alpha=alpha,
        variant=variant,
        grouping=grouping,
        by_system=by_system,
        labels_by_system=counts,
        pooled=pooled,
        borrow={system_key(k): (v if v == POOLED else system_key(v)) for k, v in borrow.items()},
        min_labels=min_labels,
    )


@dataclass(frozen=True)
class SystemAttribution:
    """One failed rollout's attribution under a per-system calibration.

    Without a claim (``claim`` False) there is no set and no rollback point: only the
    ranking and ``labels_needed``. With a claim the set may still be empty (``lo`` None).
    """

    probabilities: list[float]
    ranking: list[int]
    point_step: int
    agent: str
    claim: bool
    lo: int | None
    hi: int | None
    rollback_step: int | None
    tau: float | None
    alpha: float
    agent_system: str
    group: str
    calibration_source: str
    calibration_system: str
    calibration_group: str
    labels: int
    labels_needed: int

    @property
    def borrowed(self) -> bool:
        return self.calibration_source == SOURCE_BORROWED

    def message(self) -> str:
        """The plain sentence a page shows when there is no claim ("" otherwise)."""
        if self.claim:
            return ""
        return MSG_NO_CLAIM.format(
            system=self.agent_system,
            labels=self.labels,
            needed=self.labels_needed,
            level=1 - self.alpha,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def attribute_per_system(
    trajectory: Any, probabilities: ArrayLike, calibration: SystemCalibration
) -> SystemAttribution:
    """Apply a per-system calibration to one rollout (its system from its view).

    Example:
        >>> from types import SimpleNamespace as NS
        >>> cal = calibrate_per_system([[0.2, 0.8]] * 9, [1] * 9, ["a"] * 9, alpha=0.1)
        >>> rollout = NS(agent_system="b", steps=[NS(content="x"), NS(content="y")])
        >>> result = attribute_per_system(rollout, [0.3, 0.7], cal)
        >>> result.claim, result.lo, result.ranking, result.labels_needed
        (False, None, [1, 0], 9)
    """
    view = scoring_view(trajectory)
    p = normalise(probabilities)
    decision = calibration.decision(
        view.agent_system, n_steps=view.n_steps, environment=view.environment
    )
    interval = None
    if decision.tau is not None and p.size:
        interval = prediction_set(p, decision.tau, calibration.variant)
    lo, hi = interval if interval is not None else (None, None)
    return SystemAttribution(
        probabilities=[float(x) for x in p],
        # Stable sort: ties keep the earlier step first, like point_estimate.
        ranking=[int(i) for i in np.argsort(-p, kind="stable")],
        point_step=point_estimate(p),
        agent=responsible_agent([s.agent for s in view.steps], p) if p.size else "",
        claim=decision.claim,
        lo=lo,
        hi=hi,
        rollback_step=lo,
        tau=decision.tau,
        alpha=calibration.alpha,
        agent_system=decision.system,
        group=decision.group,
        calibration_source=decision.source,
        calibration_system=decision.source_system,
        calibration_group=decision.calibration_group,
        labels=decision.labels,
        labels_needed=decision.labels_needed,
    )
