"""Attribution refresh benchmark: seconds, steps/s and peak memory at 10k, 50k and 100k steps.

Run with `make bench` (or `.venv/bin/python bench/attribution.py [--sizes 10000,50000]
[--evaluate]`). Each size is measured in its own child process under /usr/bin/time -v,
with a fresh SQLite database in a temporary FAULTLINE_VAR_DIR: the child bulk-inserts a
project of rollouts cloned from the real samples (tau-bench airline and Who&When, with new
ids and their dataset labels) through ingest.bulk.RolloutWriter inside one transaction,
then times `project_attribution_refresh` (train on half the labelled failures, calibrate on
the other half, attribute every failed rollout). Peak RSS is the child's, insert included.
Each size is measured twice: with the dataset labels (each agent system's learned scorer)
and without them, as a new project holds its rollouts: the action analysis and the labels
it derives (gold actions, sibling divergence) are timed first, as the pipeline runs them,
then the refresh (the label-free heuristic ranks the Who&When systems; tau-bench airline
gets gold-action labels, which calibrate as in the demo project, and so its own learned
scorer and claims).
Writes bench-results/attribution.json and the "Attribution refresh" section of
docs/benchmarks.md (other sections are kept). `--evaluate` also times
`manage.py evaluate_attribution --splits 50` (not run by default: it takes minutes; its
report goes to a temporary folder, the committed docs/attribution.md is left alone).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (  # noqa: E402
    PYTHON,
    REPO_ROOT,
    benchmarks_section_write,
    machine,
    peak_rss_mb,
    run_measured,
    write_report,
)

DEFAULT_SIZES = (10_000, 50_000, 100_000)
BATCH_STEPS = 5_000
SECTION = "Attribution refresh"


def worker(target_steps: int, *, labelled: bool = True) -> dict[str, Any]:
    """In the child process: build the project, then time one refresh."""
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import transaction

    from attribution.action_analysis import project_action_analysis_refresh
    from attribution.label_sources_refresh import project_derived_labels_refresh
    from attribution.models import TrajectoryAttribution
    from attribution.services import project_attribution_refresh
    from bench.common import cycle_records
    from ingest.bulk import RolloutWriter
    from ingest.models import Label, Trajectory, Upload
    from projects.services import project_create

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("bench")
    project = project_create(name="Bench attribution", slug="bench", owner=user)
    if not labelled:
        # As the demo project: the gold-action labels calibrate (the page says so).
        project.gold_actions_calibrate = True
        project.save(update_fields=["gold_actions_calibrate"])
    started = time.perf_counter()
    with transaction.atomic():
        upload = Upload.objects.create(
            project=project,
            original_name="bench.jsonl",
            raw_file="uploads/bench/attribution",
            sha256="0" * 64,
            size=1,
            status="done",
            detected_format="native",
        )
        writer = RolloutWriter(project_id=project.pk, upload_id=upload.pk, batch_steps=BATCH_STEPS)
        for record in cycle_records(target_steps):
            writer.add(record if labelled else dataclasses.replace(record, labels=[]))
        writer.flush()
    insert_seconds = time.perf_counter() - started
    rss_before = peak_rss_mb()
    derive_seconds = 0.0
    if not labelled:
        # What the pipeline's refresh runs before attribution: the action analysis and the
        # labels it derives (gold actions, sibling divergence) where no one labelled.
        started = time.perf_counter()
        project_action_analysis_refresh(project_id=project.pk)
        project_derived_labels_refresh(project_id=project.pk)
        derive_seconds = time.perf_counter() - started
    started = time.perf_counter()
    project_attribution_refresh(project_id=project.pk)
    seconds = time.perf_counter() - started
    failed = Trajectory.objects.filter(project=project, outcome="failure").count()
    return {
        "steps": writer.steps,
        "rollouts": writer.trajectories,
        "labels": writer.labels,
        "labels_after_refresh": Label.objects.filter(trajectory__project=project).count(),
        "failed_rollouts": failed,
        "attributed": TrajectoryAttribution.objects.filter(project=project).count(),
        "with_claim": TrajectoryAttribution.objects.filter(project=project, claim=True).count(),
        "insert_seconds": round(insert_seconds, 2),
        "refresh_seconds": round(seconds, 3),
        "derive_seconds": round(derive_seconds, 3),
        "steps_per_second": round(writer.steps / seconds),
        "peak_rss_mb_before_refresh": round(rss_before, 1),
        "peak_rss_mb_after_refresh": round(peak_rss_mb(), 1),
    }


def measure(target_steps: int, *, labelled: bool = True) -> dict[str, Any]:
    """One size in a child process with its own database; peak RSS from /usr/bin/time."""
    with tempfile.TemporaryDirectory(prefix="faultline-bench-attribution-") as tmp:
        env = dict(os.environ)
        env.update(
            DATABASE_URL=f"sqlite:///{Path(tmp) / 'bench.sqlite3'}",
            FAULTLINE_VAR_DIR=tmp,
            FAULTLINE_CACHE_URL="",
            DJANGO_SETTINGS_MODULE="faultline.settings",
        )
        result = run_measured(
            [PYTHON, str(Path(__file__).resolve()), "--worker", str(target_steps),
             *(() if labelled else ("--no-labels",))],
            env=env,
        )  # fmt: skip
    match = re.search(r"^RESULT=(.*)$", result["stdout"], re.MULTILINE)
    if match is None:
        raise RuntimeError(f"no result from the worker:\n{result['stdout']}")
    report: dict[str, Any] = json.loads(match.group(1))
    report["child_seconds"] = round(result["seconds"], 1)
    report["peak_rss_mb"] = round(result["peak_rss_mb"], 1)
    return report


def growth(sizes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Seconds per step of each size against the smallest: 1.0 is linear."""
    base = sizes[0]["refresh_seconds"] / sizes[0]["steps"]
    return [
        {
            "steps": size["steps"],
            "steps_ratio": round(size["steps"] / sizes[0]["steps"], 2),
            "seconds_ratio": round(size["refresh_seconds"] / sizes[0]["refresh_seconds"], 2),
            "per_step_ratio": round(size["refresh_seconds"] / size["steps"] / base, 2),
        }
        for size in sizes
    ]


def evaluate() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="faultline-bench-evaluate-") as tmp:
        env = dict(os.environ, FAULTLINE_CACHE_URL="")
        output = Path(tmp) / "attribution.md"
        result = run_measured(
            [PYTHON, str(REPO_ROOT / "manage.py"), "evaluate_attribution", "--splits", "50",
             "--output", str(output)],
            env=env,
        )  # fmt: skip
        headline = [line for line in output.read_text().splitlines() if line.startswith("- ")]
    return {
        "command": "manage.py evaluate_attribution --splits 50",
        "seconds": round(result["seconds"], 1),
        "peak_rss_mb": round(result["peak_rss_mb"], 1),
        "goals": headline[:6],
    }


def _table(sizes: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| steps | rollouts | failed | labels before / after | with a claim "
        "| labels derived s | refresh s | steps/s | peak RSS MB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size in sizes:
        after = size.get("labels_after_refresh", size["labels"])
        derive = size.get("derive_seconds") or 0.0
        lines.append(
            f"| {size['steps']:,} | {size['rollouts']:,} | {size['failed_rollouts']:,} "
            f"| {size['labels']:,} / {after:,} | {size.get('with_claim', 0):,} "
            f"| {f'{derive:.1f}' if derive else '-'} "
            f"| {size['refresh_seconds']:.1f} | {size['steps_per_second']:,} "
            f"| {size['peak_rss_mb']:.0f} |"
        )
    return lines


def _growth_sentence(growth_rows: list[dict[str, Any]]) -> str:
    last = growth_rows[-1]
    return (
        f"{last['steps_ratio']}x the steps took {last['seconds_ratio']}x the time "
        f"({last['per_step_ratio']}x the time per step; 1.0 is linear)"
    )


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"## {SECTION}",
        "",
        "`project_attribution_refresh` (train each agent system's own learned scorer on half "
        "of its labelled failed rollouts, calibrate on the other half, attribute every failed "
        "rollout) on projects of rollouts cloned from the real samples (tau-bench airline and "
        "Who&When), one child process and fresh SQLite database per size and run. "
        f"Measured {report['machine']['date']} on {report['machine']['cpus']} CPUs, Python "
        f"{report['machine']['python']} (`python bench/attribution.py`).",
        "",
        "With the dataset labels (every agent system has its own learned scorer):",
        "",
        *_table(report["sizes"]),
    ]
    label_free = report.get("label_free_sizes") or []
    if label_free:
        ratio = [
            round(free["refresh_seconds"] / labelled["refresh_seconds"], 2)
            for free, labelled in zip(label_free, report["sizes"], strict=False)
        ]
        lines += [
            "",
            "Without them, as a new project holds its rollouts: the pipeline's action "
            'analysis first derives gold-action and sibling-divergence labels ("labels '
            'derived s"; "labels after" counts them), which calibrate as in the demo project, '
            "so tau-bench airline gets its own learned scorer and its claims; the Who&When "
            'systems are ranked by the label-free heuristic and make no claim ("refresh s" '
            "and steps/s are the attribution refresh's alone, as above):",
            "",
            *_table(label_free),
            "",
            "Label-free refresh time against the labelled one at the same size, in the same "
            f"run: {', '.join(f'{r}x' for r in ratio)}.",
        ]
    lines += [
        "",
        f"Growth with labels: {_growth_sentence(report['growth'])}"
        + (f"; without: {_growth_sentence(report['label_free_growth'])}." if label_free else ".")
        + " The machine is shared (load average "
        f"{', '.join(str(x) for x in report['machine']['load_average'])} at the end of the "
        "run): runs of the same code have measured between 0.95x and 1.25x per step. Peak "
        "RSS is the child process's, the bulk insert of the project included; what the "
        "refresh adds on top grows with the labelled rollouts (the training half's feature "
        "matrix), not with the steps.",
        "",
        "Where the time went before: feature extraction, 28.9 s of a 29 s refresh of the demo "
        "project under cProfile (12.4 s without it): case-insensitive alternations tried at "
        "every offset of each step's text, every step compared with every earlier step, "
        "digits counted by a per-character generator, and the training rollouts' features "
        "computed twice. Now the regular expressions are only tried where one of their "
        "literal phrases occurs, a step's repetition is measured against at most the 128 "
        "steps before it with a sparse product, and each rollout's features are computed "
        "once per refresh: 2.1 s (3.0 s under cProfile) with the same stored attributions. "
        "The label-free heuristic reads each rollout's behaviour signals, whose argument "
        "provenance lower-cased and re-spaced up to 200,000 characters of every step to "
        "find its numbers; it reads them from the raw text now, which gives the same numbers "
        "(the pattern spans no letter, space, _ or -): the signals of 601 real and trial "
        "rollouts are identical and computed in 2.5 s instead of 5.6 s.",
    ]
    if report.get("evaluation"):
        evaluation = report["evaluation"]
        lines += [
            "",
            f"`{evaluation['command']}`: {evaluation['seconds']} s, peak RSS "
            f"{evaluation['peak_rss_mb']:.0f} MB.",
        ]
    lines += ["", "Raw figures: `bench-results/attribution.json`.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES))
    parser.add_argument(
        "--evaluate", action="store_true", help="also time evaluate_attribution --splits 50"
    )
    parser.add_argument("--worker", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--no-labels", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="10k and 20k steps, no docs update")
    args, _ = parser.parse_known_args()  # scripts/bench.sh passes its flags to every bench
    if args.worker:
        result = worker(args.worker, labelled=not args.no_labels)
        print("RESULT=" + json.dumps(result), flush=True)
        return
    targets = [10_000, 20_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    runs: dict[str, list[dict[str, Any]]] = {"labelled": [], "label_free": []}
    for target in targets:
        for run, labelled in (("labelled", True), ("label_free", False)):
            print(
                f"attribution refresh at {target:,} steps, {run.replace('_', '-')}...", flush=True
            )
            runs[run].append(measure(target, labelled=labelled))
            size = runs[run][-1]
            print(
                f"  {size['refresh_seconds']} s, {size['steps_per_second']:,} steps/s, "
                f"peak RSS {size['peak_rss_mb']} MB",
                flush=True,
            )
    report: dict[str, Any] = {
        "machine": {**machine(), "load_average": [round(x, 2) for x in os.getloadavg()]},
        "sizes": runs["labelled"],
        "growth": growth(runs["labelled"]),
        "label_free_sizes": runs["label_free"],
        "label_free_growth": growth(runs["label_free"]),
    }
    if args.evaluate:
        print("evaluate_attribution --splits 50...", flush=True)
        report["evaluation"] = evaluate()
        print(f"  {report['evaluation']['seconds']} s", flush=True)
    path = write_report("attribution-quick" if args.quick else "attribution", report)
    print(f"wrote {path}")
    if not args.quick:
        print(f"updated {benchmarks_section_write(SECTION, markdown(report))}")


if __name__ == "__main__":
    main()
