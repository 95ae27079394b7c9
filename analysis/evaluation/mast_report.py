"""How often the suggested MAST mode agrees with the development set's annotated one.

    .venv/bin/python -m analysis.evaluation.mast_report \\
        [--out bench-results/devset-mast.json] [--seeds 0 1 2 3 4] [--data DIR]

Only the Who&When part has MAST annotations (tau-bench's categories are deviation kinds).
The product clusters the 184 decisive steps as ``clustering_report``'s ``product`` does
(default embeddings, no label reasons) and each step takes its misbehaviour's suggestion
(none when unclustered or when nothing points to a mode). Rows, per seed:

- ``product``: the shipped rule (a dominant signal, else the mode the wording of most
  members points to, for every cluster: ``analysis.core.mast.mast_suggestion``);
- ``product_half_rule``: the same suggestions under the rule before it, which kept a
  mode found by wording only when at least half the members pointed to it;
- ``product_above_chance``: the same suggestions, one found by wording kept only when
  more members point to it than a random vote among the modes would give (1 in 14).

The two variants only drop suggestions by their support, so they are read off the
shipped profiles (:func:`kept`), not described again;
- ``per_step_wording``: each step's own closest definition (of the masked text the
  suggestion reads), no clustering;
- ``always_most_common``: every step given the part's most common annotated mode, a
  reference that reads the annotations (no method without them can do this).

Figures: ``agreement`` (steps whose suggestion equals the annotation, over all steps),
``coverage`` (steps with any suggestion) and ``precision`` (agreement over the covered
steps). The seeds drive only the clustering.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from analysis.core.cluster import NOISE
from analysis.core.embeddings import WORDLLAMA, MemoryCache
from analysis.core.mast import BASIS_WORDING, closest_mode, shipped_modes
from analysis.core.naming import DOMINANT
from analysis.core.pipeline import cluster_wrong_steps
from analysis.core.profiles import MisbehaviourProfile
from analysis.core.steps import WrongStep
from analysis.evaluation.clustering_report import DEFAULT_SEEDS, devset_pairs
from analysis.evaluation.devset import DEFAULT_DATA_DIR, WHO_AND_WHEN, load_devset
from analysis.evaluation.product import without_reasons

DEFAULT_OUT = Path("bench-results/devset-mast.json")


def agreement(suggested: Sequence[str | None], annotated: Sequence[str]) -> dict[str, float]:
    """Agreement, coverage and precision of per-step suggestions.

    >>> agreement(["a", None, "b", "a"], ["a", "a", "a", "a"])
    {'agreement': 0.5, 'coverage': 0.75, 'precision': 0.6667}
    """
    covered = [(s, a) for s, a in zip(suggested, annotated) if s is not None]
    hits = sum(1 for s, a in covered if s == a)
    return {
        "agreement": round(hits / len(annotated), 4) if annotated else 0.0,
        "coverage": round(len(covered) / len(annotated), 4) if annotated else 0.0,
        "precision": round(hits / len(covered), 4) if covered else 0.0,
    }


def cluster_suggestions(
    steps: Sequence[WrongStep], *, seed: int, backend: str = WORDLLAMA
) -> dict[str, list[str | None]]:
    """Per step, in order: its misbehaviour's suggestion under the shipped rule, the half
    rule and the chance floor (None for an unclustered step), and its own closest
    definition (of the masked text the suggestion reads)."""
    outcome = cluster_wrong_steps(
        steps, backend=backend, cache=MemoryCache(), seed=seed, with_metrics=False
    )
    modes = shipped_modes()
    floors = {"product": 0.0, "product_half_rule": DOMINANT, "product_above_chance": 1 / len(modes)}
    by_key = {step.key: int(label) for step, label in zip(outcome.steps, outcome.labels)}
    rows: dict[str, list[str | None]] = {name: [] for name in [*floors, "per_step_wording"]}
    representer = outcome.model.representer
    for step in steps:
        label = by_key[step.key]
        profile = outcome.profiles.get(label) if label != NOISE else None
        for name, floor in floors.items():
            rows[name].append(kept(profile, floor))
        text = representer.naming_text(step) if representer is not None else step.content
        rows["per_step_wording"].append(closest_mode(text, modes))
    return rows


def kept(profile: MisbehaviourProfile | None, floor: float) -> str | None:
    """A profile's suggested mode, unless it was found by wording with support under
    ``floor`` (a signal-led suggestion is kept by every rule measured here).

    >>> p = MisbehaviourProfile(0, 1, 1.0, 1.0, "", [], "", 0, [], suggested_category="MAST-1",
    ...     suggested_support=0.3, suggested_basis=BASIS_WORDING)
    >>> kept(p, 0.0), kept(p, 0.5)
    ('MAST-1', None)
    """
    if profile is None or profile.suggested_category is None:
        return None
    weak = profile.suggested_basis == BASIS_WORDING and (profile.suggested_support or 0) < floor
    return None if weak else profile.suggested_category


def _summary(runs: Sequence[dict[str, float]]) -> dict[str, dict[str, float]]:
    return {
        name: {
            "mean": round(statistics.fmean(run[name] for run in runs), 4),
            "min": round(min(run[name] for run in runs), 4),
            "max": round(max(run[name] for run in runs), 4),
        }
        for name in runs[0]
    }


def evaluate(
    steps: Sequence[WrongStep], annotated: Sequence[str], *, seeds: Sequence[int]
) -> dict[str, Any]:
    """Every row's per-seed figures and their mean, min and max."""
    runs: dict[str, list[dict[str, float]]] = {}
    for seed in seeds:
        for name, suggested in cluster_suggestions(steps, seed=seed).items():
            runs.setdefault(name, []).append(agreement(suggested, annotated))
    most_common = Counter(annotated).most_common(1)[0][0]
    fixed = {"always_most_common": agreement([most_common] * len(annotated), annotated)}
    report: dict[str, Any] = {
        name: {"runs": rows, "summary": _summary(rows)} for name, rows in runs.items()
    }
    report.update(
        {name: {"runs": [row], "summary": _summary([row])} for name, row in fixed.items()}
    )
    report["most_common_mode"] = most_common
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--seeds", type=int, nargs="+", default=list(DEFAULT_SEEDS))
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR)
    args = parser.parse_args(argv)
    items = load_devset().part(WHO_AND_WHEN)
    pairs, _ = devset_pairs(items, args.data)
    steps = without_reasons([step for _, step in pairs])
    report = {
        "command": "python -m analysis.evaluation.mast_report "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "steps": len(steps),
        "categories": dict(Counter(item.category for item, _ in pairs).most_common()),
        "seeds": args.seeds,
        "rows": evaluate(steps, [item.category for item, _ in pairs], seeds=args.seeds),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    for name, row in report["rows"].items():
        if isinstance(row, dict):
            cells = "  ".join(f"{k} {v['mean']:.3f}" for k, v in row["summary"].items())
            print(f"{name:<20} {cells}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
