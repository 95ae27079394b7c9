"""Honest evaluation of attribution on labelled failed trajectories (Who&When).

Two experiments per data set, every scorer on the same splits:

1. Point-estimate accuracy under repeated cross-validation grouped by task, so that no
   task is in both the training and the test part. Exact index match only (Who&When's
   official scorer counts "1" as matching "12"; we do not).
2. Conformal sets over many random three-way splits by task: the scorer is fitted on the
   training part only, tau on the calibration part only, and coverage and removal are
   measured on the test part, overall and per length bucket.

Features are computed once per trajectory from its label-free view; they hold no state
fitted on other trajectories (hashing, no vocabulary), so caching them shares nothing
between a split's parts. Each scorer is refitted from scratch on each training part.

Example:
    >>> import numpy as np
    >>> summarise([0.8, 0.9, 1.0])["mean"]
    0.9
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.model_selection import GroupKFold

from attribution.core.attribute import point_estimate, responsible_agent
from attribution.core.conformal import (
    GROUPING_LENGTH,
    GROUPING_NONE,
    LEFT,
    RIGHT,
    TWO_SIDED,
    AlphaTooSmallError,
    calibrate_scores,
    group_key,
    interval_from_scores,
    length_bucket,
    step_scores,
)
from attribution.core.metrics import coverage, covers, empty_rate, removal_rate, set_size
from attribution.core.scorers.base import StepScorer
from attribution.core.scorers.baselines import (
    ConstantPositionScorer,
    HeuristicScorer,
    PositionPriorScorer,
    UniformScorer,
)
from attribution.core.scorers.learned import LearnedScorer
from attribution.core.view import TrajectoryView, agent_base_name, scoring_view
from attribution.evaluation.set_families import MODE_OUTWARD, mode_outward_scores

ALPHAS = (0.05, 0.1, 0.2, 0.3)
SUBSETS = ("Algorithm-Generated", "Hand-Crafted")
SCORERS = ("learned", "heuristic", "position_prior", "constant_position", "uniform")
# Published step-level and agent-level accuracy (%), from ../shared/data/README.md.
PUBLISHED: dict[str, dict[str, dict[str, float]]] = {
    "Algorithm-Generated": {
        "random": {"step": 19.06},
        "all-at-once (GPT-4o)": {"step": 12.50, "agent": 54.33},
        "step-by-step (GPT-4o)": {"step": 25.51},
        "binary search (GPT-4o)": {"step": 23.98},
        "A2P": {"step": 47.46},
    },
    "Hand-Crafted": {
        "random": {"step": 4.16},
        "all-at-once (GPT-4o)": {"step": 5.26, "agent": 55.17},
        "step-by-step (GPT-4o)": {"step": 7.02},
        "binary search (GPT-4o)": {"step": 6.90},
        "A2P": {"step": 29.31},
    },
}


@dataclass(frozen=True)
class LabelledSet:
    """Label-free views with their labels kept apart, in parallel lists."""

    name: str
    views: list[TrajectoryView]
    steps: NDArray[np.int64]
    agents: list[str]
    tasks: list[str]

    @property
    def lengths(self) -> list[int]:
        return [v.n_steps for v in self.views]


def load_who_and_when(root: Path, subset: str) -> LabelledSet:
    """Read one Who&When subset; labels are split off before any scorer sees a view."""
    from ingest.parsers import get_parser  # pure ingest core; imported late to stay light

    parser = get_parser("who_and_when")
    views: list[TrajectoryView] = []
    steps: list[int] = []
    agents: list[str] = []
    tasks: list[str] = []
    for path in sorted((root / subset).glob("*.json"), key=lambda p: (len(p.stem), p.stem)):
        with path.open("rb") as stream:
            for record in parser.parse(stream, filename=str(path)):
                if not record.labels:
                    continue
                views.append(scoring_view(record))
                steps.append(record.labels[0].step)
                agents.append(record.labels[0].agent)
                tasks.append(record.task_id or record.external_id)
    return LabelledSet(subset, views, np.asarray(steps, dtype=np.int64), agents, tasks)


def summarise(values: Sequence[float]) -> dict[str, float]:
    """Mean, standard deviation and the 5th/95th percentiles of finite values."""
    array = np.asarray([v for v in values if not math.isnan(v)], dtype=np.float64)
    if array.size == 0:
        return {
            "mean": float("nan"),
            "std": float("nan"),
            "p05": float("nan"),
            "p95": float("nan"),
            "n": 0,
        }
    return {
        "mean": round(float(array.mean()), 6),
        "std": round(float(array.std()), 6),
        "p05": round(float(np.percentile(array, 5)), 6),
        "p95": round(float(np.percentile(array, 95)), 6),
        "n": int(array.size),
    }


class ScorerSuite:
    """Fits each scorer kind afresh on a training part and scores a test part."""

    def __init__(self, data: LabelledSet, learned_params: dict[str, Any] | None = None) -> None:
        self.data = data
        self.learned_params = dict(learned_params or {})
        template = LearnedScorer(**self.learned_params)
        # Stateless, per-trajectory features: computing them once is not sharing state.
        self.matrices = [template.features(v) for v in data.views]
        heuristic = HeuristicScorer()
        self.heuristic_probs = [heuristic.step_probabilities(v) for v in data.views]

    def fit_predict(
        self, kind: str, train: Sequence[int], test: Sequence[int]
    ) -> list[NDArray[np.float64]]:
        data = self.data
        if kind == "learned":
            model = LearnedScorer(**self.learned_params).fit_matrices(
                [self.matrices[i] for i in train], data.steps[list(train)]
            )
            return [model.proba_from_matrix(self.matrices[i]) for i in test]
        if kind == "heuristic":
            return [self.heuristic_probs[i] for i in test]
        factories: dict[str, Callable[[], StepScorer]] = {
            "position_prior": PositionPriorScorer,
            "constant_position": ConstantPositionScorer,
            "uniform": UniformScorer,
        }
        scorer = factories[kind]().fit([data.views[i] for i in train], data.steps[list(train)])
        return scorer.predict_proba([data.views[i] for i in test])


def evaluate_accuracy(
    data: LabelledSet,
    suite: ScorerSuite,
    *,
    n_folds: int = 5,
    n_repeats: int = 5,
    seed: int = 0,
    kinds: Sequence[str] = SCORERS,
) -> dict[str, Any]:
    """Step and agent accuracy (%) of each scorer's point estimate, grouped CV by task.

    Also the mean negative log-likelihood of the true step (``nll``): the sharpness the
    conformal sets feed on.
    """
    results: dict[str, Any] = {}
    n = len(data.views)
    true_agents = [agent_base_name(a) for a in data.agents]
    for kind in kinds:
        step_acc: list[float] = []
        agent_acc: list[float] = []
        nll: list[float] = []
        for repeat in range(n_repeats):
            folds = GroupKFold(n_splits=n_folds, shuffle=True, random_state=seed + repeat)
            hits = np.zeros(n)
            agent_hits = np.zeros(n)
            losses = np.zeros(n)
            for train, test in folds.split(np.zeros(n), data.steps, data.tasks):
                for i, p in zip(test, suite.fit_predict(kind, train, test), strict=True):
                    hits[i] = point_estimate(p) == data.steps[i]
                    agents = [s.agent for s in data.views[i].steps]
                    agent_hits[i] = responsible_agent(agents, p) == true_agents[i]
                    losses[i] = -math.log(max(float(p[data.steps[i]]), 1e-12))
            step_acc.append(100 * hits.mean())
            agent_acc.append(100 * agent_hits.mean())
            nll.append(float(losses.mean()))
        results[kind] = {
            "step": summarise(step_acc),
            "agent": summarise(agent_acc),
            "nll": summarise(nll),
        }
    if "uniform" in results:
        # A uniform guess is right with probability 1/n: its expected accuracy, not argmax's.
        results["uniform"]["step_expected_random"] = round(
            100 * float(np.mean([1 / v.n_steps for v in data.views])), 4
        )
    return results


def split_sizes(
    n: int, train_fraction: float, calibration_fraction: float, min_calibration: int
) -> tuple[int, int, int]:
    """(train, calibration, test) sizes; calibration has at least ``min_calibration``.

    Example:
        >>> split_sizes(126, 0.4, 0.3, 19), split_sizes(58, 0.4, 0.3, 19)
        ((50, 38, 38), (21, 19, 18))
    """
    calibration = max(math.ceil(calibration_fraction * n), min_calibration)
    test = math.ceil((1 - train_fraction - calibration_fraction) * n - 1e-9)
    return n - calibration - test, calibration, test


def _three_way(
    tasks: Sequence[str], sizes: tuple[int, int, int], rng: np.random.Generator
) -> tuple[list[int], list[int], list[int]]:
    # Split by task, filling the parts in shuffled task order (a task stays in one part).
    by_task: dict[str, list[int]] = {}
    for i, task in enumerate(tasks):
        by_task.setdefault(task, []).append(i)
    order = list(by_task)
    rng.shuffle(order)
    parts: tuple[list[int], list[int], list[int]] = ([], [], [])
    targets = (sizes[0], sizes[0] + sizes[1])
    filled = 0
    for task in order:
        part = 0 if filled < targets[0] else (1 if filled < targets[1] else 2)
        parts[part].extend(by_task[task])
        filled += len(by_task[task])
    return parts


def evaluate_conformal(
    data: LabelledSet,
    suite: ScorerSuite,
    *,
    n_splits: int = 200,
    alphas: Sequence[float] = ALPHAS,
    seed: int = 0,
    train_fraction: float = 0.4,
    calibration_fraction: float = 0.3,
    min_calibration: int = 19,
    min_group_size: int = 20,
) -> dict[str, Any]:
    """Coverage, removal, empty-set rate and set size over random splits, per scorer."""
    sizes = split_sizes(len(data.views), train_fraction, calibration_fraction, min_calibration)
    rng = np.random.default_rng(seed)
    configs = [
        (kind, TWO_SIDED, grouping)
        for kind in SCORERS
        for grouping in (GROUPING_NONE, GROUPING_LENGTH)
    ]
    configs += [("learned", LEFT, GROUPING_NONE), ("learned", RIGHT, GROUPING_NONE)]
    configs += [("learned", MODE_OUTWARD, GROUPING_NONE)]
    raw: dict[tuple[str, str, str, float], dict[str, list[float]]] = {}
    buckets: dict[tuple[str, str, str, float], dict[str, list[list[float]]]] = {}
    lengths_all = data.lengths
    for _ in range(n_splits):
        train, calib, test = _three_way(data.tasks, sizes, rng)
        scores_cache: dict[tuple[str, str], list[NDArray[np.float64]]] = {}
        probs_cache: dict[str, list[NDArray[np.float64]]] = {}
        truth = data.steps[test].tolist()
        lengths = [lengths_all[i] for i in test]
        for kind, variant, grouping in configs:
            if kind not in probs_cache:
                probs_cache[kind] = suite.fit_predict(kind, train, calib + test)
            if (kind, variant) not in scores_cache:
                scores_cache[(kind, variant)] = [
                    mode_outward_scores(p) if variant == MODE_OUTWARD else step_scores(p, variant)
                    for p in probs_cache[kind]
                ]
            all_scores = scores_cache[(kind, variant)]
            cal_scores = [
                float(s[y])
                for s, y in zip(all_scores[: len(calib)], data.steps[calib], strict=True)
            ]
            test_scores = all_scores[len(calib) :]
            cal_groups = [group_key(grouping, n_steps=lengths_all[i]) for i in calib]
            test_groups = [group_key(grouping, n_steps=n) for n in lengths]
            for alpha in alphas:
                key = (kind, variant, grouping, alpha)
                store = raw.setdefault(
                    key, {"coverage": [], "removal": [], "empty": [], "size": []}
                )
                try:
                    cal = calibrate_scores(
                        cal_scores,
                        alpha=alpha,
                        # The core knows only its own families; the quantile is the same.
                        variant=TWO_SIDED if variant == MODE_OUTWARD else variant,
                        grouping=grouping,
                        groups=cal_groups,
                        min_group_size=min_group_size,
                    )
                except AlphaTooSmallError:
                    continue
                sets = [
                    interval_from_scores(s, cal.tau_for(g))
                    for s, g in zip(test_scores, test_groups, strict=True)
                ]
                store["coverage"].append(coverage(sets, truth))
                store["removal"].append(removal_rate(sets, lengths))
                store["empty"].append(empty_rate(sets))
                store["size"].append(float(np.mean([set_size(s) for s in sets])))
                per_bucket = buckets.setdefault(key, {})
                split_counts: dict[str, list[float]] = {}
                for s, y, n in zip(sets, truth, lengths, strict=True):
                    counts = split_counts.setdefault(length_bucket(n), [0.0, 0.0, 0.0])
                    counts[0] += 1
                    counts[1] += float(covers(s, y))
                    counts[2] += (n - set_size(s)) / n
                for bucket, counts in split_counts.items():
                    per_bucket.setdefault(bucket, []).append(counts)
    return _conformal_summary(raw, buckets, sizes, n_splits)


def _conformal_summary(
    raw: dict[tuple[str, str, str, float], dict[str, list[float]]],
    buckets: dict[tuple[str, str, str, float], dict[str, list[list[float]]]],
    sizes: tuple[int, int, int],
    n_splits: int,
) -> dict[str, Any]:
    rows = []
    for (kind, variant, grouping, alpha), store in raw.items():
        row: dict[str, Any] = {
            "scorer": kind,
            "variant": variant,
            "grouping": grouping,
            "alpha": alpha,
            "splits": len(store["coverage"]),
        }
        if not store["coverage"]:
            row["error"] = "alpha < 1/(m+1) for this calibration size"
            rows.append(row)
            continue
        row.update({name: summarise(values) for name, values in store.items()})
        per_bucket = {}
        for bucket, splits in sorted(buckets.get((kind, variant, grouping, alpha), {}).items()):
            counts = np.asarray(splits)
            total = counts[:, 0].sum()
            per_bucket[bucket] = {
                "mean_test_count": round(float(total / n_splits), 3),
                "coverage": round(float(counts[:, 1].sum() / total), 6),
                "coverage_split_std": round(float(np.std(counts[:, 1] / counts[:, 0])), 6),
                "removal": round(float(counts[:, 2].sum() / total), 6),
            }
        row["per_bucket"] = per_bucket
        rows.append(row)
    return {
        "split_sizes": {"train": sizes[0], "calibration": sizes[1], "test": sizes[2]},
        "n_splits": n_splits,
        "rows": rows,
    }
