"""How much more often rollouts that show a misbehaviour fail, with episode length held fixed.

Failed rollouts are longer than successful ones (they retry, wander, loop), and a long
rollout has more steps in which to show any behaviour at all. So a behaviour that merely
comes with length has a high crude risk ratio without causing anything. The adjusted
lift stratifies by length: rollouts are cut into ``LENGTH_BUCKETS`` quantile buckets of
their step count (within each environment) and the Mantel-Haenszel risk ratio pools the
per-stratum comparisons,

    RR_MH = sum_k (a_k * n0_k / N_k) / sum_k (c_k * n1_k / N_k)

with, in stratum k, ``a_k`` failed of ``n1_k`` rollouts showing it, ``c_k`` failed of
``n0_k`` not showing it, ``N_k = n0_k + n1_k``. Five quantile strata of a continuous
confounder remove about 90% of its bias (Cochran, 1968), which is why five.

Both lifts are computed only where successful rollouts exist: an environment whose every
rollout failed (Who&When) can say nothing about what makes rollouts fail, so its rollouts
are left out of both; with no success anywhere both lifts are None.

When no rollout without the misbehaviour failed while some with it did (in a small
project, a behaviour seen in every failure and in no success), the ratio has a zero
denominator: the strongest evidence there is, not a missing one. Then 0.5 is added to
every cell, the Haldane-Anscombe correction, and the lift is that finite estimate (a
stratum's cells for the adjusted one). Anywhere else the cells are used as they are.

Example:
    >>> rollouts = [RolloutOutcome(f"r{i}", failed=i % 2 == 0, length=10) for i in range(8)]
    >>> estimate = failure_lift(rollouts, {"r0", "r2", "r4", "r1"})
    >>> estimate.unadjusted, estimate.adjusted
    (3.0, 3.0)
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

LENGTH_BUCKETS = 5
#: A misbehaviour "generalises" when it recurs in at least this many environments, agent
#: systems or policy models...
GENERALISES_AT = 3
#: ...or in at least this share of the project's tasks (and at least GENERALISES_AT
#: tasks). A fixed count of three tasks is met by almost any cluster once a project has
#: hundreds of tasks, so it tells nothing; a share grows with the project. One task in
#: ten is the bar because a behaviour tied to what one task asks for (a city, a product,
#: a document) shows up in the few tasks that ask it, while a trait of the agent shows up
#: wherever its situation arises; and it stays reachable for a misbehaviour of 0.5% of
#: the wrong steps (the smallest cluster) when each task has a few wrong steps.
TASK_SHARE = 0.1
#: A misbehaviour *recurs* in a task, environment or policy model when its wrong steps
#: there weigh at least this much together. A wrong step's weight is the probability that
#: it is the decisive error: 1 for a labelled step or one that drew an error, the scorer's
#: probability for a step of a prediction set. Below one half the misbehaviour is more
#: likely not what went wrong there. Without the weight, a routine step type that sits at
#: a low probability in nearly every rollout's set (a planner's turn, a search) "recurred"
#: in nearly every task, and the mark was on 23 of the demo's 24 misbehaviours.
RECURS_AT_WEIGHT = 0.5
#: Below this many rollouts with an outcome showing a behaviour (calling a tool, holding a
#: misbehaviour), its lifts are a ratio of a handful of rollouts (one failure more or less
#: moves them from 0 to 2) and the pages mark them so (:func:`few_rollouts`).
FEW_ROLLOUTS = 5

#: Why an adjusted lift is missing while rollouts show the behaviour (``adjusted_gap``):
#: no rollout compared shows it; at the lengths it occurs at, no rollout succeeded; every
#: rollout of those lengths shows it (none without it to compare with); or each of those
#: lengths is one or the other.
GAP_NONE_SHOWS = "none_shows"
GAP_NO_SUCCESS = "no_success"
GAP_ALL_SHOW = "all_show"
GAP_NO_SUCCESS_OR_ALL_SHOW = "no_success_or_all_show"


def few_rollouts(rollouts: float) -> bool:
    """Whether a lift from ``rollouts`` rollouts with an outcome showing the behaviour is
    marked as a small sample: the one rule of the tools table and the misbehaviours.

    >>> few_rollouts(4), few_rollouts(5)
    (True, False)
    """
    return rollouts < FEW_ROLLOUTS


@dataclass(frozen=True)
class RolloutOutcome:
    """One rollout as the lift sees it. ``weight``: how many rollouts a sampled one stands for."""

    key: str
    failed: bool
    length: int
    group: str = ""
    weight: float = 1.0


@dataclass(frozen=True)
class LiftEstimate:
    unadjusted: float | None
    adjusted: float | None
    rollouts: int = 0  # rollouts showing it, among those compared
    strata: int = 0  # strata with rollouts both showing and not showing it
    # Why ``adjusted`` is None (a GAP_* code), "" when it is not.
    adjusted_gap: str = ""
    # Rollouts showing it in the strata the adjusted lift compares: it may rest on a few
    # of them (three successes of one length while every failure showing it is longer
    # than any success gave an unseen SQL agent's misbehaviour 1.62x crude, 0.00x adjusted).
    adjusted_rollouts: int = 0
    # Why ``unadjusted`` is None while rollouts are compared: none or all of them show it.
    unadjusted_gap: str = ""


def length_strata(
    rollouts: Sequence[RolloutOutcome], buckets: int = LENGTH_BUCKETS
) -> dict[str, tuple[str, int]]:
    """Each rollout's stratum: its group and its length bucket (quantiles within the group).

    >>> rs = [RolloutOutcome(str(n), True, n) for n in (1, 2, 3, 4)]
    >>> [bucket for _, bucket in length_strata(rs, buckets=2).values()]
    [0, 0, 1, 1]
    """
    by_group: dict[str, list[RolloutOutcome]] = defaultdict(list)
    for rollout in rollouts:
        by_group[rollout.group].append(rollout)
    strata: dict[str, tuple[str, int]] = {}
    for group, members in by_group.items():
        lengths = np.array([rollout.length for rollout in members], dtype=np.float64)
        inner = np.linspace(0, 1, buckets + 1)[1:-1]
        edges = np.unique(np.quantile(lengths, inner)) if len(lengths) else np.zeros(0)
        for rollout in members:
            strata[rollout.key] = (group, int(np.searchsorted(edges, rollout.length, "left")))
    return strata


def comparable(rollouts: Sequence[RolloutOutcome]) -> list[RolloutOutcome]:
    """The rollouts of groups that have at least one success: the only ones a lift uses."""
    with_success = {rollout.group for rollout in rollouts if not rollout.failed}
    return [rollout for rollout in rollouts if rollout.group in with_success]


def _ratio(numerator: float, denominator: float) -> float | None:
    if denominator <= 0 or not math.isfinite(numerator / denominator):
        return None
    return round(numerator / denominator, 4)


def failure_lift(
    rollouts: Sequence[RolloutOutcome],
    containing: Collection[str],
    *,
    buckets: int = LENGTH_BUCKETS,
    strata: Mapping[str, tuple[str, int]] | None = None,
) -> LiftEstimate:
    """Crude and length-stratified (Mantel-Haenszel) risk ratio of failure.

    ``containing`` holds the keys of the rollouts that show the misbehaviour. Pass
    ``strata`` (from :func:`length_strata` of :func:`comparable` rollouts) to reuse them
    across misbehaviours.
    """
    compared = comparable(rollouts)
    if not compared:
        return LiftEstimate(None, None)
    if strata is None:
        strata = length_strata(compared, buckets)
    shown = set(containing)
    cells: dict[tuple[str, int], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for rollout in compared:
        cell = cells[strata[rollout.key]]
        offset = 0 if rollout.key in shown else 2
        cell[offset + 1] += rollout.weight
        if rollout.failed:
            cell[offset] += rollout.weight
    estimate = lift_of_cells(cells.values())
    # Rollouts, not their weights (a sampled success stands for several).
    showing = [rollout for rollout in compared if rollout.key in shown]
    in_informing = sum(1 for rollout in showing if _informs(cells[strata[rollout.key]]))
    return dataclasses.replace(estimate, rollouts=len(showing), adjusted_rollouts=in_informing)


def lift_of_cells(cells: Iterable[Sequence[float]]) -> LiftEstimate:
    """Crude and stratified lift from per-stratum counts, each ``[failed showing, all
    showing, failed not showing, all not showing]``, for callers that keep counts rather
    than rollouts (the overview's tool counters). The strata are the caller's, already of
    comparable rollouts; ``rollouts`` of the estimate is the weight showing it.

    >>> lift_of_cells([[2, 4, 1, 4], [4, 4, 4, 4]])  # every rollout of the second failed
    LiftEstimate(unadjusted=1.2, adjusted=2.0, rollouts=8, strata=1, adjusted_gap='', \
adjusted_rollouts=4, unadjusted_gap='')
    >>> lift_of_cells([[2, 4, 0, 0], [0, 0, 3, 4]]).adjusted_gap  # all of that length show it
    'all_show'
    >>> lift_of_cells([[2, 4, 0, 0]]).unadjusted_gap  # every rollout compared shows it
    'all_show'
    """
    cells = [list(cell) for cell in cells]
    pooled = [sum(cell[i] for cell in cells) for i in range(4)]
    unadjusted = _risk_ratio([pooled]) if pooled[1] and pooled[3] else None
    unadjusted_gap = ""
    if unadjusted is None and (pooled[1] or pooled[3]):
        unadjusted_gap = GAP_NONE_SHOWS if not pooled[1] else GAP_ALL_SHOW
    # A stratum informs the adjusted lift when it holds rollouts with and without the
    # misbehaviour and at least one success: where every rollout of a length failed, the
    # risk is 1 on both sides whatever the behaviour does, and such strata would pull the
    # estimate to exactly 1.00x (failed rollouts are the long ones, so this is common).
    informative = [cell for cell in cells if _informs(cell)]
    adjusted = _risk_ratio(informative) if informative else None
    gap = "" if adjusted is not None else adjusted_gap(cells)
    compared = round(sum(cell[1] for cell in informative))
    return LiftEstimate(
        unadjusted, adjusted, round(pooled[1]), len(informative), gap, compared, unadjusted_gap
    )


def _informs(cell: Sequence[float]) -> bool:
    """Whether a stratum informs the adjusted lift (see :func:`lift_of_cells`)."""
    return bool(cell[1] and cell[3] and cell[0] + cell[2] < cell[1] + cell[3])


def adjusted_gap(cells: Sequence[Sequence[float]]) -> str:
    """Why no stratum of ``cells`` (as :func:`lift_of_cells` takes them) informs an
    adjusted lift, looking at the strata that hold rollouts showing it: a GAP_* code.

    >>> adjusted_gap([[3, 3, 2, 2]]), adjusted_gap([[1, 3, 0, 0]]), adjusted_gap([[0, 0, 1, 4]])
    ('no_success', 'all_show', 'none_shows')
    >>> adjusted_gap([[3, 3, 2, 2], [1, 3, 0, 0]])
    'no_success_or_all_show'
    """
    showing = [cell for cell in cells if cell[1]]
    if not showing:
        return GAP_NONE_SHOWS
    if all(cell[0] + cell[2] >= cell[1] + cell[3] for cell in showing):
        return GAP_NO_SUCCESS
    if all(not cell[3] for cell in showing):
        return GAP_ALL_SHOW
    # Every such stratum is one or the other (else it would inform the lift).
    return GAP_NO_SUCCESS_OR_ALL_SHOW


def _risk_ratio(cells: Sequence[Sequence[float]]) -> float | None:
    """The Mantel-Haenszel risk ratio of these strata (one stratum: the crude ratio), each
    ``[failed showing, all showing, failed not showing, all not showing]``; with the
    Haldane-Anscombe correction when only the zero denominator stops it (module doc).

    >>> _risk_ratio([[4, 4, 0, 4]])  # every failure shows it, no success does
    9.0
    >>> _risk_ratio([[2, 4, 1, 4]])
    2.0
    """
    for correction in (0.0, 0.5):
        numerator = denominator = 0.0
        for a_k, n1_k, c_k, n0_k in cells:
            a_k, c_k = a_k + correction, c_k + correction
            n1_k, n0_k = n1_k + 2 * correction, n0_k + 2 * correction
            total = n1_k + n0_k
            numerator += a_k * n0_k / total
            denominator += c_k * n1_k / total
        if denominator > 0 or numerator <= 0:
            return _ratio(numerator, denominator)
    return None


def rollout_outcomes(
    rollout_failed: Mapping[str, bool],
    *,
    rollout_length: Mapping[str, int] | None,
    rollout_group: Mapping[str, str] | None,
    sampled_success: Collection[str] | None,
    success_scale: float,
    sampled_failure: Collection[str] | None = None,
    failure_scale: float = 1.0,
) -> list[RolloutOutcome] | None:
    """The rollouts the stratified lift compares; None when the sample is unknown.

    A success outside the sample of successes that were assigned cannot be told to
    contain a misbehaviour or not, so it is left out, and each sampled one stands for
    ``success_scale`` successes; failures likewise when ``sampled_failure`` names the
    failed rollouts that were assigned (else every failure is compared, each standing
    for ``failure_scale``, 1 by default).
    """
    if sampled_success is None and success_scale != 1.0:
        return None
    sampled = set(sampled_success) if sampled_success is not None else None
    sampled_failed = set(sampled_failure) if sampled_failure is not None else None
    outcomes = []
    for key in sorted(rollout_failed):
        failed = rollout_failed[key]
        sample, scale = (sampled_failed, failure_scale) if failed else (sampled, success_scale)
        if sample is not None and key not in sample:
            continue
        outcomes.append(
            RolloutOutcome(
                key=key,
                failed=failed,
                length=int((rollout_length or {}).get(key, 0)),
                group=(rollout_group or {}).get(key, ""),
                weight=scale,
            )
        )
    return outcomes


def recurs_in(weights: Iterable[tuple[str, float]], at: float = RECURS_AT_WEIGHT) -> set[str]:
    """The groups (tasks, environments, models) whose members' weights add up to ``at``.

    >>> sorted(recurs_in([("t1", 0.3), ("t1", 0.3), ("t2", 0.4), ("t3", 1.0), ("", 1.0)]))
    ['t1', 't3']
    """
    totals: dict[str, float] = defaultdict(float)
    for group, weight in weights:
        if group:
            totals[group] += weight
    # A small tolerance: 0.25 + 0.25 stored as floats still makes one half.
    return {group for group, total in totals.items() if total >= at - 1e-9}


def generalises(
    *,
    environments: int,
    agent_systems: int = 0,
    policy_models: int = 0,
    tasks: int = 0,
    project_tasks: int = 0,
) -> bool:
    """True when a misbehaviour recurs across settings, not in a few tasks' specifics.

    The counts are of the settings it recurs in (:func:`recurs_in`).

    >>> generalises(environments=1, tasks=5, project_tasks=40)
    True
    >>> generalises(environments=1, tasks=5, project_tasks=200)
    False
    >>> generalises(environments=3, tasks=1, project_tasks=200)
    True
    """
    if max(environments, agent_systems, policy_models) >= GENERALISES_AT:
        return True
    needed = max(GENERALISES_AT, math.ceil(TASK_SHARE * project_tasks))
    return tasks >= needed
