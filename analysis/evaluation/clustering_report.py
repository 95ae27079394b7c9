"""Score the product's clustering and the baselines on the development set, in one run.

    .venv/bin/python -m analysis.evaluation.clustering_report \\
        [--out bench-results/devset-clustering.json] [--seeds 0 1 2 3 4] [--data DIR] \\
        [--label NAME] [--methods product structural ...]

For each step set (Who&When decisive steps against their MAST modes, tau-bench
decisive deviations against their kinds, and both together), each method and each seed
it runs the method twice: on every step (the seed only drives the method's own
randomness) and on a seeded 90% subsample of the steps (the spread that comes from the
data). Methods: ``product`` (default embeddings), ``product_tfidf`` (the fallback),
``product_with_reasons`` (with the label reasons: optimistic on Who&When, whose
categories were read from them), ``product_half_reasons`` (a seeded half of the steps
with their reasons, as in a project where some steps were labelled by hand), ``product_in_context`` (the labelled steps clustered
among every other agent action of their rollouts, scored on the labelled ones), the
previous pipeline (``previous_product``, ``previous_product_tfidf``) and the baselines
of ``baselines.py``. Each step carries the behaviour signals of its whole rollout, as
the product gathers them (``analysis.evaluation.product``). It
writes every figure to a JSON report and prints a summary table. Nothing is tuned here:
the parameters of every method are fixed in its own module.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from analysis.core.cluster import ClusterParams, params_for_size
from analysis.core.embeddings import TFIDF, WORDLLAMA, EmbeddingUnavailable
from analysis.core.steps import WrongStep
from analysis.evaluation import baselines
from analysis.evaluation.devset import (
    DEFAULT_DATA_DIR,
    PARTS,
    TAU_BENCH,
    WHO_AND_WHEN,
    DevItem,
    DevSet,
    labelled_steps,
    load_devset,
    rollout_actions,
    rollout_records,
)
from analysis.evaluation.metrics import best_match_f1, score_partition
from analysis.evaluation.product import product_labels, rollout_signals_steps, without_reasons
from ingest.core.records import TrajectoryRecord

DEFAULT_OUT = Path("bench-results") / "devset-clustering.json"
DEFAULT_SEEDS = (0, 1, 2, 3, 4)
SUBSAMPLE = 0.9
COMBINED = "combined"
HEADLINE = (
    "homogeneity",
    "macro_best_match_f1",
    "nmi",
    "ari",
    "unclustered_share",
    "top8_share",
    "clusters",
)

#: method name -> labels of (steps, number of categories, seed, other agent actions of
#: the same rollouts); only the in-context product uses the last one.
Method = Callable[[Sequence[WrongStep], int, int, Sequence[WrongStep]], list[int]]


def _in_context_with(backend: str) -> Method:
    def method(
        steps: Sequence[WrongStep], k: int, seed: int, context: Sequence[WrongStep]
    ) -> list[int]:
        """The product clustering the labelled steps among every agent action of their
        rollouts (the all-failed-steps switch), scored on the labelled steps only."""
        every = without_reasons([*steps, *context])
        return product_labels(every, backend=backend, seed=seed)[: len(steps)]

    return method


_in_context = _in_context_with(WORDLLAMA)


def _product(
    backend: str, *, reasons: bool = False, behaviour: bool = True, **options: Any
) -> Method:
    def method(steps: Sequence[WrongStep], k: int, seed: int, _: Sequence[WrongStep]) -> list[int]:
        chosen = list(steps) if reasons else without_reasons(steps)
        return product_labels(chosen, backend=backend, seed=seed, behaviour=behaviour, **options)

    return method


def _half_reasons(
    steps: Sequence[WrongStep], k: int, seed: int, _: Sequence[WrongStep]
) -> list[int]:
    """The product on a project where a reviewer gave the reason of a random half of the
    steps (seeded): how a project with some hand-labelled steps looks. A representation
    that splits one behaviour by whether a step has a reason scores lower here."""
    keep = np.random.default_rng(seed).random(len(steps)) < 0.5
    chosen = [step if kept else without_reasons([step])[0] for step, kept in zip(steps, keep)]
    return product_labels(chosen, backend=WORDLLAMA, seed=seed)


def _sqrt_params(n: int, seed: int) -> ClusterParams:
    size = max(5, round(math.sqrt(n) / 2))
    base = params_for_size(n, random_state=seed)
    return replace(base, min_cluster_size=size, min_samples=min(base.min_samples, size))


def _per_kind(steps: Sequence[WrongStep], k: int, seed: int, _: Sequence[WrongStep]) -> list[int]:
    """The product run separately on each step kind (tool calls, messages, ...), labels
    offset so they never collide: a two-level clustering, kind first, then within."""
    chosen = without_reasons(steps)
    by_kind: dict[str, list[int]] = {}
    for position, step in enumerate(chosen):
        by_kind.setdefault(step.kind, []).append(position)
    labels = [-1] * len(chosen)
    offset = 0
    for kind in sorted(by_kind):
        positions = by_kind[kind]
        found = product_labels([chosen[p] for p in positions], backend=WORDLLAMA, seed=seed)
        for position, label in zip(positions, found):
            labels[position] = label + offset if label >= 0 else -1
        offset += max(found, default=-1) + 1
    return labels


#: Representation and clustering variants of the product (docs/clustering.md, "Variants
#: tried"), each one change against ``product``; their settings are fixed here, by
#: rule, not chosen from the figures.
VARIANTS: dict[str, Method] = {
    # The product before the structural block (representation behaviour-v1).
    "behaviour_v1": _product(WORDLLAMA, structure_weight=0.0),
    # Against behaviour-v1: the behaviour signals weigh twice the text's variance.
    "variant_signals_x2": _product(WORDLLAMA, structure_weight=0.0, signal_weight=2.0),
    # Against behaviour-v1: noise joins the cluster it more likely belongs to than not
    # (soft membership >= 0.5), or reaches the weakest tenth of the members' own level.
    "variant_soft_noise": _product(WORDLLAMA, structure_weight=0.0, soft_noise=0.5),
    "variant_soft_noise_p10": _product(WORDLLAMA, structure_weight=0.0, soft_noise_quantile=0.1),
    # Against behaviour-v1: clusters whose centroids lie within their own spread merge.
    "variant_merge_near": _product(WORDLLAMA, structure_weight=0.0, merge_near=True),
    # Against behaviour-v1: min_cluster_size sqrt(n)/2 (at least 5) instead of 0.5% of n.
    "variant_min_size_sqrt": lambda steps, k, seed, _: product_labels(
        without_reasons(steps),
        backend=WORDLLAMA,
        seed=seed,
        structure_weight=0.0,
        params=_sqrt_params(len(steps), seed),
    ),
    # On top of the adopted structural block (the product now).
    "variant_structure_per_kind": _per_kind,
    "variant_structure_signals_x2": _product(WORDLLAMA, signal_weight=2.0),
    "variant_structure_soft_noise_p10": _product(WORDLLAMA, soft_noise_quantile=0.1),
    "variant_structure_merge_near": _product(WORDLLAMA, merge_near=True),
    # The structural block at twice the text's variance (session 8).
    "variant_structure_x2": _product(WORDLLAMA, structure_weight=2.0),
}

#: ``product*`` run the pipeline as the Django side does, without the label reasons (the
#: Who&When categories were read from them); ``product_with_reasons`` adds them and is
#: optimistic on Who&When. ``previous_product*`` are the pipeline before behaviour
#: signals and masking (``behaviour=False``), which ignores signals and reasons.
METHODS: dict[str, Method] = {
    "product": _product(WORDLLAMA),
    "product_tfidf": _product(TFIDF),
    "product_with_reasons": _product(WORDLLAMA, reasons=True),
    "product_half_reasons": _half_reasons,
    "product_in_context": _in_context,
    "product_tfidf_in_context": _in_context_with(TFIDF),
    "previous_product": _product(WORDLLAMA, behaviour=False),
    "previous_product_tfidf": _product(TFIDF, behaviour=False),
    **VARIANTS,
    "structural": lambda steps, k, seed, _: baselines.structural(steps),
    "structural_min_size": lambda steps, k, seed, _: baselines.structural_min_size(steps),
    "tfidf_hdbscan": lambda steps, k, seed, _: baselines.tfidf_hdbscan(steps, seed=seed),
    "tfidf_kmeans": lambda steps, k, seed, _: baselines.tfidf_kmeans(steps, k=k, seed=seed),
}


def devset_pairs(
    items: Sequence[DevItem], data_dir: Path
) -> tuple[list[tuple[DevItem, WrongStep]], dict[str, TrajectoryRecord]]:
    """Each item with its step as the product gathers it: the signals of its whole
    rollout, its task text, gold actions and label reason (methods drop the reason
    unless they say otherwise); and the parsed rollouts."""
    records = rollout_records(items, data_dir)
    pairs = labelled_steps(items, data_dir)
    steps = rollout_signals_steps([step for _, step in pairs], records)
    return [(item, step) for (item, _), step in zip(pairs, steps)], records


def context_steps(
    items: Sequence[DevItem], data_dir: Path, records: dict[str, TrajectoryRecord]
) -> dict[str, list[WrongStep]]:
    """Every other agent action of each item's rollout, with its rollout's signals."""
    found = rollout_actions(items, data_dir)
    return {
        item_id: rollout_signals_steps(steps, records, with_reasons=False)
        for item_id, steps in found.items()
    }


def floor_subset(devset: DevSet) -> list[DevItem]:
    """The fixed small subset the regression floor in ``make test`` scores: every third
    Who&When item and every second tau-bench item (120 steps)."""
    return devset.part(WHO_AND_WHEN)[::3] + devset.part(TAU_BENCH)[::2]


def step_sets(
    pairs: Sequence[tuple[DevItem, WrongStep]],
) -> dict[str, list[tuple[DevItem, WrongStep]]]:
    """Each part on its own, and all of them together (categories never overlap)."""
    sets = {part: [pair for pair in pairs if pair[0].part == part] for part in PARTS}
    sets[COMBINED] = list(pairs)
    return {name: chosen for name, chosen in sets.items() if chosen}


def subsample(count: int, seed: int, share: float = SUBSAMPLE) -> list[int]:
    """Sorted positions of a seeded ``share`` of ``count`` items.

    >>> subsample(10, 0)
    [0, 1, 2, 3, 4, 5, 7, 8, 9]
    >>> subsample(10, 0) == subsample(10, 0)
    True
    """
    rng = np.random.default_rng(seed)
    kept = rng.choice(count, size=max(1, int(round(share * count))), replace=False)
    return sorted(int(position) for position in kept)


def summarise(runs: Sequence[dict[str, float]]) -> dict[str, dict[str, float]]:
    """Mean, standard deviation, min and max of each figure over the runs.

    >>> summarise([{"f1": 0.5}, {"f1": 0.7}])["f1"]
    {'mean': 0.6, 'sd': 0.1414, 'min': 0.5, 'max': 0.7}
    """
    summary = {}
    for name in runs[0]:
        values = [run[name] for run in runs]
        summary[name] = {
            "mean": round(statistics.fmean(values), 4),
            "sd": round(statistics.stdev(values), 4) if len(values) > 1 else 0.0,
            "min": round(min(values), 4),
            "max": round(max(values), 4),
        }
    return summary


def evaluate_method(
    method: Method,
    pairs: Sequence[tuple[DevItem, WrongStep]],
    seeds: Sequence[int],
    context: dict[str, list[WrongStep]] | None = None,
) -> dict[str, Any]:
    """Every seed's figures on all steps and on a subsample, with their summaries."""
    truth = [item.category for item, _ in pairs]
    steps = [step for _, step in pairs]
    categories = len(set(truth))
    around = context or {}

    def others(positions: Sequence[int]) -> list[WrongStep]:
        return [s for p in positions for s in around.get(pairs[p][0].item_id, [])]

    full, resampled = [], []
    per_category: dict[str, float] = {}
    started = time.perf_counter()
    for seed in seeds:
        found = method(steps, categories, seed, others(range(len(pairs))))
        full.append({"seed": seed, **score_partition(truth, found)})
        if seed == seeds[0]:
            per_category = {str(k): v for k, v in best_match_f1(truth, found).items()}
        kept = subsample(len(steps), seed)
        sub_truth = [truth[p] for p in kept]
        found = method([steps[p] for p in kept], len(set(sub_truth)), seed, others(kept))
        resampled.append({"seed": seed, **score_partition(sub_truth, found)})
    strip = [{k: v for k, v in run.items() if k != "seed"} for run in full]
    strip_resampled = [{k: v for k, v in run.items() if k != "seed"} for run in resampled]
    return {
        "all_steps": {"runs": full, "summary": summarise(strip)},
        "subsample": {"share": SUBSAMPLE, "runs": resampled, "summary": summarise(strip_resampled)},
        "best_match_f1_per_category_seed0": per_category,
        "seconds": round(time.perf_counter() - started, 2),
    }


def evaluate(
    pairs: Sequence[tuple[DevItem, WrongStep]],
    *,
    seeds: Sequence[int] = DEFAULT_SEEDS,
    methods: dict[str, Method] | None = None,
    context: dict[str, list[WrongStep]] | None = None,
) -> dict[str, Any]:
    """The report's ``sets`` section: per step set, its categories and every method."""
    chosen = METHODS if methods is None else methods
    report: dict[str, Any] = {}
    for name, subset in step_sets(pairs).items():
        counts: dict[str, int] = {}
        for item, _ in subset:
            counts[item.category] = counts.get(item.category, 0) + 1
        entry: dict[str, Any] = {
            "steps": len(subset),
            "categories": dict(sorted(counts.items(), key=lambda kv: -kv[1])),
            "methods": {},
        }
        for method_name, method in chosen.items():
            try:
                entry["methods"][method_name] = evaluate_method(method, subset, seeds, context)
            except EmbeddingUnavailable as error:
                entry["methods"][method_name] = {"error": str(error)}
        report[name] = entry
    return report


def _git_commit() -> str:
    try:
        result = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return ""
    return result.stdout.strip()


def summary_table(sets: dict[str, Any]) -> str:
    """Mean (and min-max over seeds) of the headline figures, one line per method."""
    lines = []
    for name, entry in sets.items():
        lines.append(f"\n{name}: {entry['steps']} steps, {len(entry['categories'])} categories")
        lines.append(f"  {'method':<15}" + "".join(f"{h[:18]:>22}" for h in HEADLINE))
        for method_name, result in entry["methods"].items():
            if "error" in result:
                lines.append(f"  {method_name:<15} unavailable: {result['error'][:80]}")
                continue
            summary = result["all_steps"]["summary"]
            cells = "".join(
                f"{summary[h]['mean']:>8.3f} ({summary[h]['min']:.2f}-{summary[h]['max']:.2f})"
                for h in HEADLINE
            )
            lines.append(f"  {method_name:<15}{cells}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--seeds", type=int, nargs="+", default=list(DEFAULT_SEEDS))
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--label", default="", help="a name for this run, e.g. the pipeline")
    parser.add_argument(
        "--methods",
        nargs="+",
        choices=sorted(METHODS),
        default=list(METHODS),
        help="run only these (product_in_context takes most of the time)",
    )
    parser.add_argument(
        "--floor-subset",
        action="store_true",
        help="score only the regression floor's subset (to re-measure its floors)",
    )
    args = parser.parse_args(argv)
    devset = load_devset()
    items = floor_subset(devset) if args.floor_subset else devset.items
    pairs, records = devset_pairs(items, args.data)
    in_context = any(name.endswith("_in_context") for name in args.methods)
    context = context_steps(items, args.data, records) if in_context else {}
    started = time.perf_counter()
    methods = {name: METHODS[name] for name in args.methods}
    sets = evaluate(pairs, seeds=args.seeds, methods=methods, context=context)
    report = {
        "command": "python -m analysis.evaluation.clustering_report "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "label": args.label,
        "git_commit": _git_commit(),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "seeds": args.seeds,
        "seconds": round(time.perf_counter() - started, 1),
        "sets": sets,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(summary_table(sets))
    print(f"\nwrote {args.out} in {report['seconds']} s")


if __name__ == "__main__":
    main()
