"""The evaluation report as Markdown with SVG charts, from the JSON of the evaluation.

Example:
    >>> render_markdown.__name__
    'render_markdown'
"""

from __future__ import annotations

import re
from typing import Any

from attribution.evaluation.discussion import discussion, per_system_section, transfer_section
from attribution.evaluation.experiments import ALPHAS
from attribution.evaluation.report_json import (
    COVERAGE_SLACK,
    MIN_BUCKET_TEST,
    SCORER_TITLES,
    conformal_row,
    fmt_pm,
)
from attribution.evaluation.set_families import MODE_OUTWARD
from attribution.evaluation.svg import Series, bar_chart, line_chart


def slugify(name: str) -> str:
    """A chart file name part: "Hand-Crafted" -> "hand-crafted".

    >>> slugify("tau-bench airline (gold-action labels)")
    'tau-bench-airline-gold-action-labels'
    """
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def charts(report: dict[str, Any]) -> dict[str, str]:
    """File name -> SVG text for every chart of the report."""
    files: dict[str, str] = {}
    for subset in report["subsets"]:
        name = subset["name"]
        slug = slugify(name)
        conformal = subset["conformal"]
        alphas = [a for a in ALPHAS if conformal_row(conformal, "learned", "two_sided", "none", a)]
        series = [Series("promised 1-alpha", alphas, [1 - a for a in alphas], dashed=True)]
        for grouping in ("none", "length"):
            rows = [conformal_row(conformal, "learned", "two_sided", grouping, a) for a in alphas]
            ok = [(a, r) for a, r in zip(alphas, rows, strict=True) if r and "coverage" in r]
            series.append(
                Series(
                    f"learned, {'pooled' if grouping == 'none' else 'by length'}",
                    [a for a, _ in ok],
                    [r["coverage"]["mean"] for _, r in ok],
                    [r["coverage"]["p05"] for _, r in ok],
                    [r["coverage"]["p95"] for _, r in ok],
                )
            )
        files[f"coverage-{slug}.svg"] = line_chart(
            f"{name}: test coverage (mean, 5-95% of splits)",
            series,
            x_label="alpha",
            y_label="coverage",
            y_range=(0.4, 1.0),
        )
        removal = []
        for scorer, title in SCORER_TITLES.items():
            rows = [conformal_row(conformal, scorer, "two_sided", "none", a) for a in alphas]
            ok = [(a, r) for a, r in zip(alphas, rows, strict=True) if r and "removal" in r]
            removal.append(Series(title, [a for a, _ in ok], [r["removal"]["mean"] for _, r in ok]))
        files[f"removal-{slug}.svg"] = line_chart(
            f"{name}: removal rate (mean over splits)",
            removal,
            x_label="alpha",
            y_label="removal rate",
            y_range=(0.0, 1.0),
        )
        labels, values, ours = [], [], []
        for scorer, title in SCORER_TITLES.items():
            labels.append(title)
            values.append(subset["accuracy"][scorer]["step"]["mean"])
            ours.append(scorer == "learned")
        for method, figures in subset["published"].items():
            labels.append(f"{method} (published)")
            values.append(figures["step"])
            ours.append(False)
        files[f"accuracy-{slug}.svg"] = bar_chart(
            f"{name}: step accuracy %, exact index",
            labels,
            values,
            y_label="step accuracy %",
            highlight=ours,
        )
    return files


def _accuracy_section(subset: dict[str, Any]) -> list[str]:
    acc = subset["accuracy"]
    lines = [
        "| scorer | step accuracy % | agent accuracy % | NLL of true step |",
        "|---|---|---|---|",
    ]
    for scorer, title in SCORER_TITLES.items():
        lines.append(
            f"| {title} | {fmt_pm(acc[scorer]['step'], 1)} | {fmt_pm(acc[scorer]['agent'], 1)} | "
            f"{fmt_pm(acc[scorer]['nll'], 2)} |"
        )
    lines.append(
        f"| uniform, expected accuracy of a random guess (mean 1/n) | {acc['uniform']['step_expected_random']:.1f} | | |"
    )
    published = subset["published"]
    for method in sorted(published, key=lambda k: published[k]["step"]):
        figures = published[method]
        agent = f"{figures['agent']:.2f}" if "agent" in figures else ""
        lines.append(f"| *published:* {method} | {figures['step']:.2f} | {agent} | |")
    return lines


def _conformal_section(subset: dict[str, Any]) -> list[str]:
    conformal = subset["conformal"]
    lines = [
        "| scorer | calibration | alpha | coverage (mean ± sd) | coverage 5-95% | removal | empty sets | mean set size |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for scorer, title in SCORER_TITLES.items():
        for grouping in ("none", "length"):
            for alpha in ALPHAS:
                row = conformal_row(conformal, scorer, "two_sided", grouping, alpha)
                if row is None:
                    continue
                label = "pooled" if grouping == "none" else "Mondrian by length"
                if "error" in row:
                    lines.append(f"| {title} | {label} | {alpha} | n/a: {row['error']} | | | | |")
                    continue
                lines.append(
                    f"| {title} | {label} | {alpha} | {fmt_pm(row['coverage'])} | "
                    f"{row['coverage']['p05']:.3f}-{row['coverage']['p95']:.3f} | {fmt_pm(row['removal'])} | "
                    f"{row['empty']['mean']:.3f} | {row['size']['mean']:.2f} |"
                )
    return lines


def _bucket_section(subset: dict[str, Any]) -> list[str]:
    conformal = subset["conformal"]
    lines = [
        "| calibration | alpha | length bucket | mean test trajectories per split | coverage | goal (>= 1-alpha-0.02 when >= 20 test) | removal |",
        "|---|---|---|---|---|---|---|",
    ]
    for grouping in ("none", "length"):
        for alpha in ALPHAS:
            row = conformal_row(conformal, "learned", "two_sided", grouping, alpha)
            if row is None or "per_bucket" not in row:
                continue
            for bucket, stats in row["per_bucket"].items():
                if stats["mean_test_count"] >= MIN_BUCKET_TEST:
                    goal = (
                        "met" if stats["coverage"] >= 1 - alpha - COVERAGE_SLACK else "**missed**"
                    )
                else:
                    goal = "too few to judge"
                label = "pooled" if grouping == "none" else "by length"
                lines.append(
                    f"| {label} | {alpha} | {bucket} | {stats['mean_test_count']:.1f} | "
                    f"{stats['coverage']:.3f} | {goal} | {stats['removal']:.3f} |"
                )
    return lines


def _variant_section(subset: dict[str, Any]) -> list[str]:
    conformal = subset["conformal"]
    lines = ["| variant | alpha | coverage | removal |", "|---|---|---|---|"]
    for variant in ("two_sided", "left", "right", MODE_OUTWARD):
        for alpha in ALPHAS:
            row = conformal_row(conformal, "learned", variant, "none", alpha)
            if row and "coverage" in row:
                lines.append(
                    f"| {variant} | {alpha} | {fmt_pm(row['coverage'])} | {fmt_pm(row['removal'])} |"
                )
    return lines


ADDITIONS = {
    "content": "content features",
    "structure": "structure features",
    "agent_stage": "agent-then-step",
    "stacked": "stacked second stage",
}


def additions(params: dict[str, Any]) -> str:
    """The variant options of a model-selection row, in words ("none" for the plain model).

    Example:
        >>> additions({"content": True, "stacked": False}), additions({})
        ('content features', 'none')
    """
    return ", ".join(title for key, title in ADDITIONS.items() if params.get(key)) or "none"


def _selection_section(subset: dict[str, Any]) -> list[str]:
    lines = [
        "| objective | C | hashed text buckets | temperature | additions | step accuracy % | NLL | coverage at 0.2 | removal at 0.2 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in subset.get("model_selection", []):
        params = row["params"]
        coverage = row.get("coverage_0.2") or {"mean": float("nan")}
        removal = row.get("removal_0.2") or {"mean": float("nan")}
        lines.append(
            f"| {params['objective']} | {params['C']} | {params['text_buckets']} | "
            f"{params.get('temperature', 1.0)} | {additions(params)} | "
            f"{fmt_pm(row['step'], 1)} | {fmt_pm(row['nll'], 3)} | "
            f"{coverage['mean']:.3f} | {removal['mean']:.3f} |"
        )
    return lines


def goals(report: dict[str, Any]) -> list[str]:
    """One line per goal and subset: what was reached, met or missed."""
    lines = []
    for subset in report["subsets"]:
        name = subset["name"]
        conformal = subset["conformal"]
        misses = []
        judged = 0
        for alpha in ALPHAS:
            row = conformal_row(
                conformal, "learned", "two_sided", report["calibration_grouping"], alpha
            )
            for bucket, stats in (row or {}).get("per_bucket", {}).items():
                if stats["mean_test_count"] >= MIN_BUCKET_TEST:
                    judged += 1
                    if stats["coverage"] < 1 - alpha - COVERAGE_SLACK:
                        misses.append(f"{bucket} at alpha {alpha} ({stats['coverage']:.3f})")
        if judged == 0:
            lines.append(
                f"- {name}: per-bucket coverage: no length bucket has 20 test trajectories per split; not judged."
            )
        elif misses:
            lines.append(
                f"- {name}: per-bucket coverage **missed** in {', '.join(misses)} ({judged} bucket-alpha cells judged)."
            )
        else:
            lines.append(
                f"- {name}: per-bucket coverage met in all {judged} bucket-alpha cells with >= 20 test trajectories."
            )
        row = conformal_row(conformal, "learned", "two_sided", report["calibration_grouping"], 0.2)
        if row and "removal" in row:
            removal = row["removal"]["mean"]
            verdict = "met" if removal >= 0.5 else "**missed**"
            lines.append(f"- {name}: removal at alpha 0.2 = {removal:.3f} (goal 0.5): {verdict}.")
        step = subset["accuracy"]["learned"]["step"]["mean"]
        a2p = subset["published"].get("A2P", {}).get("step")
        if a2p is not None:
            verdict = "met" if step > a2p else "**missed**"
            lines.append(
                f"- {name}: step accuracy {step:.1f}% vs A2P {a2p:.2f}% (no LLM call): {verdict}."
            )
    return lines


def render_markdown(report: dict[str, Any], chart_dir: str) -> str:
    meta = report["meta"]
    out = [
        "# Attribution: evaluation on Who&When and tau-bench airline",
        "",
        f"Produced by `{meta['command']}` on {meta['date']} (commit `{meta['commit']}`, "
        f"{meta['seconds']:.0f} s on {meta['cpus']} CPUs). Every number below comes from "
        f"`{chart_dir}/report.json`, written by the same run; rerun the command to reproduce it.",
        "The code is `attribution/evaluation/` (these experiments, this report and its charts), "
        "beside the runtime core `attribution/core/`, which never imports it.",
        "",
        "## Goals (benchmarks, not tests)",
        "",
        *goals(report),
        "",
        "## Method",
        "",
        *report["method"],
        "",
    ]
    for subset in report["subsets"]:
        slug = slugify(subset["name"])
        split = subset["conformal"]["split_sizes"]
        out += [
            f"## {subset['name']}",
            "",
            f"{subset['trajectories']} failed trajectories from {subset['tasks']} tasks; length "
            f"{subset['length']['min']}-{subset['length']['max']} (median {subset['length']['median']:g}); "
            f"length buckets {subset['length_buckets']}. Learned scorer parameters: `{subset['learned_params']}`.",
            "",
            "### Point estimate, grouped cross-validation by task (exact index)",
            "",
            *_accuracy_section(subset),
            "",
            f"![step accuracy]({chart_dir}/accuracy-{slug}.svg)",
            "",
            f"### Conformal sets over {subset['conformal']['n_splits']} random splits "
            f"(train {split['train']} / calibration {split['calibration']} / test {split['test']})",
            "",
            *_conformal_section(subset),
            "",
            f"![coverage]({chart_dir}/coverage-{slug}.svg)",
            f"![removal]({chart_dir}/removal-{slug}.svg)",
            "",
            "### Coverage per length bucket (learned scorer)",
            "",
            *_bucket_section(subset),
            "",
            "### Set variants (learned scorer, pooled)",
            "",
            "`left` cuts only the early tail (set [lo, n-1], a safe rollback point); "
            "`right` cuts only the late tail (set [0, hi]); `mode_outward` is a rival nested "
            "family, one interval grown from the most probable step toward its more probable "
            "neighbour (`attribution/evaluation/set_families.py`, not in the product).",
            "",
            *_variant_section(subset),
            "",
            "### Model selection (grouped CV for accuracy and NLL; 50 random splits for alpha 0.2)",
            "",
            *_selection_section(subset),
            "",
        ]
    if report.get("transfer"):
        out += [
            "## Transfer to an agent system the scorer never saw",
            "",
            *transfer_section(report["transfer"]),
            "",
        ]
    if report.get("per_system"):
        out += [
            "## One project, several agent systems: pooled against per-system calibration",
            "",
            *per_system_section(report["per_system"]),
            "",
        ]
    out += ["## Discussion", "", *discussion(report), ""]
    return "\n".join(out)
