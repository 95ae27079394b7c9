"""The Markdown tables of docs/clustering.md, from one or more clustering-report JSON files.

    .venv/bin/python -m analysis.evaluation.report_tables \\
        bench-results/devset-clustering-behaviour.json bench-results/devset-clustering-in-context.json

Each cell is the mean over the seeds (their range in brackets when the seeds differ),
then ± the standard deviation over the seeded 90% subsamples (percentage points for the
two shares). Methods of later files are added after those of earlier ones.

Example:
    >>> cell({"mean": 0.5, "min": 0.5, "max": 0.5}, {"sd": 0.02}, share=False)
    '0.50 ±0.02'
    >>> cell({"mean": 0.25, "min": 0.2, "max": 0.3}, {"sd": 0.05}, share=True)
    '25.0% (20.0%-30.0%) ±5.0'
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

COLUMNS = (
    ("homogeneity", "homogeneity"),
    ("macro_best_match_f1", "macro best-match F1"),
    ("nmi", "NMI"),
    ("ari", "ARI"),
    ("unclustered_share", "unclustered"),
    ("top8_share", "top 8"),
    ("clusters", "clusters"),
)
SHARES = {"unclustered_share", "top8_share"}


def cell(summary: dict[str, float], resampled: dict[str, float], *, share: bool) -> str:
    """One table cell: mean, the seeds' range when they differ, ± the subsample spread."""
    scale, unit = (100.0, "%") if share else (1.0, "")
    digits = 1 if share else 2

    def show(value: float) -> str:
        return f"{value * scale:.{digits}f}{unit}"

    text = show(summary["mean"])
    if round(summary["min"] * scale, digits) != round(summary["max"] * scale, digits):
        text += f" ({show(summary['min'])}-{show(summary['max'])})"
    return text + f" ±{resampled['sd'] * scale:.{digits}f}"


def _clusters(summary: dict[str, float]) -> str:
    low, high = int(summary["min"]), int(summary["max"])
    return str(low) if low == high else f"{low}-{high}"


def tables(reports: list[dict[str, Any]]) -> str:
    """One Markdown table per step set, a row per method of every report."""
    sets: dict[str, dict[str, Any]] = {}
    for report in reports:
        for name, entry in report["sets"].items():
            merged = sets.setdefault(name, {"entry": entry, "methods": {}})
            merged["methods"].update(entry["methods"])
    out = []
    for name, merged in sets.items():
        entry = merged["entry"]
        out.append(f"\n{name}: {entry['steps']} steps, {len(entry['categories'])} categories\n")
        out.append("| method | " + " | ".join(title for _, title in COLUMNS) + " |")
        out.append("|---" * (len(COLUMNS) + 1) + "|")
        for method, result in merged["methods"].items():
            if "error" in result:
                out.append(f"| {method} | unavailable: {result['error'][:60]} |")
                continue
            summary = result["all_steps"]["summary"]
            resampled = result["subsample"]["summary"]
            cells = [
                _clusters(summary[key])
                if key == "clusters"
                else cell(summary[key], resampled[key], share=key in SHARES)
                for key, _ in COLUMNS
            ]
            out.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", type=Path, nargs="+")
    args = parser.parse_args(argv)
    print(tables([json.loads(path.read_text(encoding="utf-8")) for path in args.reports]))


if __name__ == "__main__":
    main()
