"""Held-out coverage of a calibration, measured on its own labelled trajectories.

Calibrating and measuring on the same trajectories would always look perfect, so the
labelled set is split at random many times: tau from one half, coverage and set sizes on
the other. The result is what the calibration page plots against the promised 1 - alpha.

Example:
    >>> probs = [[0.1, 0.8, 0.1]] * 40
    >>> curve = coverage_curve(probs, [1] * 40, alphas=(0.1,), n_splits=5)
    >>> curve[0]["alpha"], curve[0]["coverage"]
    (0.1, 1.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from attribution.core.conformal import (
    TWO_SIDED,
    AlphaTooSmallError,
    calibrate_scores,
    interval_from_scores,
    step_scores,
)
from attribution.core.metrics import covers, set_size

CURVE_ALPHAS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5)


def curve_alphas(alpha: float) -> tuple[float, ...]:
    """The curve's grid with the project's own miscoverage on it: the calibration page and
    the overview read the held-out coverage at that alpha, and a project set to 0.25 read
    "too few to measure" for systems with sixty labels.

    Example:
        >>> curve_alphas(0.25), curve_alphas(0.1) == CURVE_ALPHAS
        ((0.05, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5), True)
    """
    return tuple(sorted({*CURVE_ALPHAS, round(float(alpha), 6)}))


def coverage_curve(
    probabilities: Sequence[ArrayLike],
    true_steps: Sequence[int],
    *,
    alphas: Sequence[float] = CURVE_ALPHAS,
    groups: Sequence[str] | None = None,
    variant: str = TWO_SIDED,
    n_splits: int = 50,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Mean held-out coverage and removal per alpha (pooled tau), and coverage per group.

    Alphas too small for half of the labelled trajectories are left out.
    """
    scores = [step_scores(p, variant) for p in probabilities]
    truth = [int(y) for y in true_steps]
    n = len(scores)
    labels = list(groups) if groups is not None else ["all"] * n
    rng = np.random.default_rng(seed)
    half = n // 2
    rows = []
    for alpha in alphas:
        hits = sizes = removal = total = 0.0
        per_group: dict[str, list[float]] = {}
        ok = True
        for _ in range(n_splits):
            order = rng.permutation(n)
            cal, test = order[:half], order[half:]
            if half == 0 or len(test) == 0:
                ok = False
                break
            try:
                tau = calibrate_scores([scores[i][truth[i]] for i in cal], alpha=alpha).pooled_tau
            except AlphaTooSmallError:
                ok = False
                break
            for i in test:
                interval = interval_from_scores(scores[i], tau)
                covered = float(covers(interval, truth[i]))
                length = len(scores[i])
                hits += covered
                sizes += set_size(interval)
                removal += (length - set_size(interval)) / length
                total += 1
                counts = per_group.setdefault(labels[i], [0.0, 0.0])
                counts[0] += 1
                counts[1] += covered
        if not ok or total == 0:
            continue
        rows.append(
            {
                "alpha": alpha,
                "promised": round(1 - alpha, 6),
                "coverage": round(hits / total, 6),
                "removal": round(removal / total, 6),
                "mean_set_size": round(sizes / total, 4),
                "by_group": {
                    group: {"coverage": round(c[1] / c[0], 6), "tested": int(c[0])}
                    for group, c in sorted(per_group.items())
                },
            }
        )
    return rows


def curve_at(curve: Sequence[Mapping[str, Any]], alpha: float) -> Mapping[str, Any] | None:
    """The row of a :func:`coverage_curve` at ``alpha`` (None when it has none: an alpha
    off the curve's grid, or one too small for half of the labels).

    Example:
        >>> curve_at([{"alpha": 0.1, "coverage": 0.9}], 0.1)["coverage"], curve_at([], 0.1)
        (0.9, None)
    """
    return next((row for row in curve if abs(row["alpha"] - alpha) < 1e-9), None)


def systems_held_out(
    systems: Mapping[str, Mapping[str, Any]], alpha: float, *, calibrated: Sequence[str]
) -> tuple[float | None, list[tuple[str, int]]]:
    """The held-out coverage at ``alpha`` over the agent systems that calibrate on their own
    labels, each system's estimate weighted by its labels, and the systems it is measured
    on with their labels (those with a curve at ``alpha``).

    Each system's rollouts are promised coverage by that system's own tau, so the project's
    figure is the systems' figures together, never one curve of every label pooled (whose
    tau no rollout uses). (None, []) when no calibrated system has a curve at ``alpha``.

    Example:
        >>> systems = {"a": {"labels": 30, "curve": [{"alpha": 0.1, "coverage": 0.9}]},
        ...            "b": {"labels": 10, "curve": [{"alpha": 0.1, "coverage": 0.98}]},
        ...            "c": {"labels": 3, "curve": []}}
        >>> systems_held_out(systems, 0.1, calibrated=["a", "b", "c"])
        (0.92, [('a', 30), ('b', 10)])
    """
    weighted = 0.0
    measured: list[tuple[str, int]] = []
    for system in calibrated:
        data = systems.get(system)
        row = curve_at(data.get("curve", []), alpha) if data else None
        if data is None or row is None:
            continue
        weighted += float(row["coverage"]) * int(data["labels"])
        measured.append((system, int(data["labels"])))
    labels = sum(count for _, count in measured)
    if labels == 0:
        return None, []
    return round(weighted / labels, 6), measured
