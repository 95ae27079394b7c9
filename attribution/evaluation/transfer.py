"""Transfer: does a scorer trained on one agent system help on another it never saw?

This decides whether a new project (fewer than 40 labels of its own) should start from a
learned scorer shipped with the product, trained on the public labelled data, or from the
label-free heuristic. For every ordered pair of labelled sets, the learned scorer is fitted
on all of the source and scores the whole target, and once more fitted on all the other
sets together (:data:`OTHER_SETS`, what a scorer shipped with the product would be for a
system outside its data); the heuristic scores the same target.
Both are then calibrated the way such a project would be: on a random half of the
target's own labels (split by task), coverage and removal measured on the other half, over
``n_splits`` splits, with the same splits for both scorers.

Example:
    >>> transfer_pairs(["a", "b", "c"])[:2]
    [('a', 'b'), ('a', 'c')]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from attribution.core.attribute import point_estimate
from attribution.core.conformal import (
    AlphaTooSmallError,
    calibrate_scores,
    interval_from_scores,
    step_scores,
)
from attribution.core.metrics import coverage, removal_rate
from attribution.core.scorers.baselines import HeuristicScorer
from attribution.core.scorers.learned import LearnedScorer
from attribution.evaluation.experiments import LabelledSet, summarise

OTHER_SETS = "all other sets"


def transfer_pairs(names: Sequence[str]) -> list[tuple[str, str]]:
    """Every (source, target) pair of distinct sets, in order."""
    return [(s, t) for s in names for t in names if s != t]


def _halves_by_task(tasks: Sequence[str], rng: np.random.Generator) -> tuple[list[int], list[int]]:
    by_task: dict[str, list[int]] = {}
    for i, task in enumerate(tasks):
        by_task.setdefault(task, []).append(i)
    order = list(by_task)
    rng.shuffle(order)
    calibration: list[int] = []
    test: list[int] = []
    for task in order:
        (calibration if len(calibration) < len(tasks) / 2 else test).extend(by_task[task])
    return calibration, test


def calibrated_on_target(
    probabilities: Sequence[NDArray[np.float64]],
    target: LabelledSet,
    *,
    alpha: float,
    n_splits: int,
    seed: int,
) -> dict[str, Any]:
    """Step accuracy and NLL on the whole target; coverage and removal over half splits."""
    truth = target.steps
    hits = [point_estimate(p) == y for p, y in zip(probabilities, truth, strict=True)]
    losses = [-math.log(max(float(p[y]), 1e-12)) for p, y in zip(probabilities, truth, strict=True)]
    scores = [step_scores(p) for p in probabilities]
    rng = np.random.default_rng(seed)
    coverages: list[float] = []
    removals: list[float] = []
    for _ in range(n_splits):
        calibration, test = _halves_by_task(target.tasks, rng)
        try:
            tau = calibrate_scores(
                [float(scores[i][truth[i]]) for i in calibration], alpha=alpha
            ).pooled_tau
        except AlphaTooSmallError:
            continue
        sets = [interval_from_scores(scores[i], tau) for i in test]
        coverages.append(coverage(sets, [int(truth[i]) for i in test]))
        removals.append(removal_rate(sets, [target.views[i].n_steps for i in test]))
    return {
        "step": round(100 * float(np.mean(hits)), 2),
        "nll": round(float(np.mean(losses)), 4),
        "coverage": summarise(coverages),
        "removal": summarise(removals),
    }


def evaluate_transfer(
    sets: Sequence[LabelledSet],
    *,
    learned_params: dict[str, Any] | None = None,
    alpha: float = 0.2,
    n_splits: int = 200,
    seed: int = 0,
) -> dict[str, Any]:
    """One row per (source, target), then one per target with :data:`OTHER_SETS` as its
    source (when there are three sets or more): the learned scorer against the heuristic."""
    by_name = {s.name: s for s in sets}
    heuristic = HeuristicScorer()
    heuristic_probs = {s.name: heuristic.predict_proba(s.views) for s in sets}
    sources = [([source], target) for source, target in transfer_pairs(list(by_name))]
    if len(by_name) > 2:
        sources += [([s for s in by_name if s != target], target) for target in by_name]
    rows = []
    for names, target in sources:
        model = LearnedScorer(**(learned_params or {})).fit(
            [view for name in names for view in by_name[name].views],
            np.concatenate([by_name[name].steps for name in names]),
        )
        source = names[0] if len(names) == 1 else OTHER_SETS
        learned = calibrated_on_target(
            model.predict_proba(by_name[target].views),
            by_name[target],
            alpha=alpha,
            n_splits=n_splits,
            seed=seed,
        )
        label_free = calibrated_on_target(
            heuristic_probs[target], by_name[target], alpha=alpha, n_splits=n_splits, seed=seed
        )
        rows.append(
            {"source": source, "target": target, "learned": learned, "heuristic": label_free}
        )
    return {"alpha": alpha, "n_splits": n_splits, "rows": rows}


def shipped_scorer_verdict(transfer: dict[str, Any]) -> dict[str, int]:
    """In how many rows the learned scorer beats the heuristic on accuracy and on removal:
    the single-source pairs, and the targets scored by a scorer of all other sets.

    Example:
        >>> row = {"source": "a", "learned": {"step": 5, "removal": {"mean": 0.2}},
        ...        "heuristic": {"step": 3, "removal": {"mean": 0.3}}}
        >>> shipped_scorer_verdict({"rows": [row]})
        {'pairs': 1, 'step': 1, 'removal': 0, 'others': 0, 'others_step': 0, 'others_removal': 0}
    """

    def wins(rows: list[dict[str, Any]]) -> tuple[int, int, int]:
        return (
            len(rows),
            sum(r["learned"]["step"] > r["heuristic"]["step"] for r in rows),
            sum(r["learned"]["removal"]["mean"] > r["heuristic"]["removal"]["mean"] for r in rows),
        )

    pairs = [r for r in transfer["rows"] if r.get("source") != OTHER_SETS]
    others = [r for r in transfer["rows"] if r.get("source") == OTHER_SETS]
    keys = ("pairs", "step", "removal", "others", "others_step", "others_removal")
    return dict(zip(keys, wins(pairs) + wins(others), strict=True))
