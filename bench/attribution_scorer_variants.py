"""Learned-scorer variants on Who&When, quickly: grouped CV accuracy and removal at alpha 0.2.

A lighter loop than `manage.py evaluate_attribution` for trying a scorer change: the same
grouped 5-fold cross-validation by task (3 repeats instead of 5) and the same random
three-way splits (50 instead of 200) from `attribution.evaluation.experiments`, for the
learned scorer only. Pass variants as JSON objects of `LearnedScorer` parameters:

    .venv/bin/python bench/attribution_scorer_variants.py '{}' '{"content": true}'

Not part of `make bench` (the boosted variants take minutes). Measured once on 2026-12-01,
2 shared CPUs (step accuracy %, NLL, coverage and removal at alpha 0.2, seconds):

| variant | Algorithm-Generated | Hand-Crafted |
|---|---|---|
| `{}` (default) | 43.7, 1.611, 0.829, 0.410, 3 s | 18.4, 3.356, 0.774, 0.329, 3 s |
| `{"content": true}` | 40.5, 1.590, 0.819, 0.432, 6 s | 17.2, 3.540, 0.782, 0.306, 10 s |
| `{"objective": "boosted", "C": 1.0, "max_iter": 100}` | 37.0, 1.699, 0.798, 0.409, 155 s | 10.9, 3.443, 0.804, 0.325, 201 s |
| `{"objective": "boosted", "C": 1.0, "max_iter": 100, "content": true}` | 35.7, 1.690, 0.804, 0.415, 158 s | 19.5, 3.324, 0.796, 0.336, 213 s |
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import SHARED_DATA, machine, write_report  # noqa: E402

ALPHA = 0.2


def removal_at_alpha(data: Any, suite: Any, *, n_splits: int, seed: int = 0) -> dict[str, float]:
    """Mean coverage and removal of the learned scorer's pooled sets over random splits."""
    import numpy as np

    from attribution.core.conformal import calibrate_scores, interval_from_scores, step_scores
    from attribution.core.metrics import coverage, removal_rate
    from attribution.evaluation.experiments import _three_way, split_sizes

    sizes = split_sizes(len(data.views), 0.4, 0.3, 19)
    rng = np.random.default_rng(seed)
    coverages, removals = [], []
    for _ in range(n_splits):
        train, calibration, test = _three_way(data.tasks, sizes, rng)
        scores = [step_scores(p) for p in suite.fit_predict("learned", train, calibration + test)]
        truth = data.steps[calibration]
        tau = calibrate_scores(
            [float(s[y]) for s, y in zip(scores[: len(calibration)], truth, strict=True)],
            alpha=ALPHA,
        ).pooled_tau
        sets = [interval_from_scores(s, tau) for s in scores[len(calibration) :]]
        coverages.append(coverage(sets, data.steps[test].tolist()))
        removals.append(removal_rate(sets, [data.views[i].n_steps for i in test]))
    return {"coverage": float(np.mean(coverages)), "removal": float(np.mean(removals))}


def measure(params: dict[str, Any], *, repeats: int, splits: int) -> dict[str, Any]:
    from attribution.evaluation.experiments import (
        SUBSETS,
        ScorerSuite,
        evaluate_accuracy,
        load_who_and_when,
    )

    root = SHARED_DATA / "who_and_when" / "Who&When"
    result: dict[str, Any] = {"params": params}
    for subset in SUBSETS:
        started = time.perf_counter()
        data = load_who_and_when(root, subset)
        suite = ScorerSuite(data, params)
        accuracy = evaluate_accuracy(data, suite, n_repeats=repeats, kinds=("learned",))
        result[subset] = {
            "step": round(accuracy["learned"]["step"]["mean"], 1),
            "nll": round(accuracy["learned"]["nll"]["mean"], 3),
            **{k: round(v, 3) for k, v in removal_at_alpha(data, suite, n_splits=splits).items()},
            "seconds": round(time.perf_counter() - started, 1),
        }
    return result


def main() -> None:
    from threadpoolctl import threadpool_limits

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("variants", nargs="*", default=["{}"], help="LearnedScorer parameters")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--splits", type=int, default=50)
    args = parser.parse_args()
    rows = []
    with threadpool_limits(limits=1):
        for variant in args.variants:
            rows.append(measure(json.loads(variant), repeats=args.repeats, splits=args.splits))
            print(json.dumps(rows[-1]), flush=True)
    path = write_report("attribution-scorer-variants", {"machine": machine(), "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
