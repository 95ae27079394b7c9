"""One project holding several agent systems: pooled calibration against per-system.

The labelled sets (Who&When's two subsets, the airline rollouts) are put into one project
as three agent systems. For each random split, every system's tasks are cut into train,
calibration and test parts; one learned scorer is trained on all the training parts
together, as the product does, and tau is calibrated two ways on the calibration parts:
one pooled tau for the whole project, and :func:`calibrate_per_system`. Coverage and
removal are then measured per system on its test part. A third run leaves one system's
labels out of calibration entirely: the pooled tau still makes a claim about it, the
per-system calibration makes none. A fourth is what the product does
(:class:`attribution.core.scorers.per_system.PerSystemScorer`): each system's own scorer,
trained on its training part alone, calibrated on its own calibration part.

Example:
    >>> PER_SYSTEM_ALPHAS
    (0.1, 0.2)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from attribution.core.conformal import (
    AlphaTooSmallError,
    calibrate_scores,
    interval_from_scores,
    step_scores,
)
from attribution.core.metrics import coverage, removal_rate
from attribution.core.scorers.learned import LearnedScorer
from attribution.core.system_calibration import calibrate_per_system
from attribution.evaluation.experiments import LabelledSet, _three_way, split_sizes, summarise

PER_SYSTEM_ALPHAS = (0.1, 0.2)


def evaluate_per_system(
    sets: Sequence[LabelledSet],
    *,
    learned_params: dict[str, Any] | None = None,
    n_splits: int = 100,
    seed: int = 0,
) -> dict[str, Any]:
    """Per system and alpha: coverage and removal under pooled and per-system tau."""
    template = LearnedScorer(**(learned_params or {}))
    matrices = [[template.features(v) for v in s.views] for s in sets]
    rng = np.random.default_rng(seed)
    store: dict[tuple[str, str, float], dict[str, list[float]]] = {}
    claims: dict[tuple[str, float], list[float]] = {}
    for _ in range(n_splits):
        parts = [_three_way(s.tasks, split_sizes(len(s.views), 0.4, 0.3, 19), rng) for s in sets]
        model = LearnedScorer(**(learned_params or {})).fit_matrices(
            [m[i] for m, (train, _, _) in zip(matrices, parts, strict=True) for i in train],
            np.concatenate([s.steps[p[0]] for s, p in zip(sets, parts, strict=True)]),
        )
        cal_probs, cal_steps, cal_systems = [], [], []
        tests = []
        for s, m, (_, calibration, test) in zip(sets, matrices, parts, strict=True):
            cal_probs += [model.proba_from_matrix(m[i]) for i in calibration]
            cal_steps += [int(s.steps[i]) for i in calibration]
            cal_systems += [s.name] * len(calibration)
            tests.append((s, [model.proba_from_matrix(m[i]) for i in test], test))
        own = []
        for s, m, (train, calibration, test) in zip(sets, matrices, parts, strict=True):
            alone = LearnedScorer(**(learned_params or {})).fit_matrices(
                [m[i] for i in train], s.steps[train]
            )
            own.append(
                (
                    [alone.proba_from_matrix(m[i]) for i in calibration],
                    [int(s.steps[i]) for i in calibration],
                    [alone.proba_from_matrix(m[i]) for i in test],
                )
            )
        for alpha in PER_SYSTEM_ALPHAS:
            pooled_tau = _pooled_tau(cal_probs, cal_steps, alpha)
            per_system = calibrate_per_system(
                cal_probs, cal_steps, cal_systems, alpha=alpha, grouping="none"
            )
            for (s, probs, test), (own_cal, own_steps, own_test) in zip(tests, own, strict=True):
                truth = [int(s.steps[i]) for i in test]
                lengths = [s.views[i].n_steps for i in test]
                decision = per_system.decision(s.name, n_steps=1)
                for kind, tau, scored in (
                    ("pooled", pooled_tau, probs),
                    ("per_system", decision.tau, probs),
                    ("own_scorer", _pooled_tau(own_cal, own_steps, alpha), own_test),
                ):
                    if tau is None:
                        continue
                    sets_ = [interval_from_scores(step_scores(p), tau) for p in scored]
                    cell = store.setdefault((s.name, kind, alpha), {"coverage": [], "removal": []})
                    cell["coverage"].append(coverage(sets_, truth))
                    cell["removal"].append(removal_rate(sets_, lengths))
                # Leave this system's labels out: does anything still claim coverage for it?
                others = [i for i, name in enumerate(cal_systems) if name != s.name]
                without = calibrate_per_system(
                    [cal_probs[i] for i in others],
                    [cal_steps[i] for i in others],
                    [cal_systems[i] for i in others],
                    alpha=alpha,
                    grouping="none",
                )
                claims.setdefault((s.name, alpha), []).append(
                    float(without.decision(s.name, n_steps=1).claim)
                )
                unlabelled_tau = _pooled_tau(
                    [cal_probs[i] for i in others], [cal_steps[i] for i in others], alpha
                )
                sets_ = [interval_from_scores(step_scores(p), unlabelled_tau) for p in probs]
                cell = store.setdefault(
                    (s.name, "pooled_without_own", alpha), {"coverage": [], "removal": []}
                )
                cell["coverage"].append(coverage(sets_, truth))
                cell["removal"].append(removal_rate(sets_, lengths))
    rows = [
        {
            "system": system,
            "calibration": kind,
            "alpha": alpha,
            "coverage": summarise(values["coverage"]),
            "removal": summarise(values["removal"]),
        }
        for (system, kind, alpha), values in sorted(store.items())
    ]
    no_claim = [
        {"system": system, "alpha": alpha, "claim_rate": float(np.mean(values))}
        for (system, alpha), values in sorted(claims.items())
    ]
    return {"n_splits": n_splits, "rows": rows, "claims_without_own_labels": no_claim}


def _pooled_tau(probabilities: list[NDArray[np.float64]], steps: list[int], alpha: float) -> float:
    scores = [float(step_scores(p)[y]) for p, y in zip(probabilities, steps, strict=True)]
    try:
        return calibrate_scores(scores, alpha=alpha).pooled_tau
    except AlphaTooSmallError:
        return float("inf")
