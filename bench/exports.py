"""Exports benchmark (issue 7): all four formats for generated projects of failed rollouts.

Run with `make bench` (or `.venv/bin/python bench/exports.py [--rollouts 50000] [--small 10000]
[--quick]`). Writes bench-results/exports.json and the "Exports" section of
docs/benchmarks.md. Not part of the test suite.

Each project is made by bulk-inserting copies of the real failed rollouts (tau-bench airline
and Who&When; each copy gets its own task id, and the tau-bench successes of that copy go
with it so that corrections can come from successful rollouts), with the Who&When labels
and a human correction on every third labelled rollout. The export then runs in a process
of its own under /usr/bin/time; inside it, the peak RSS is read every 5,000 rollouts, which
shows whether memory grows with the number of rollouts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
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
    sample_records,
    write_report,
)

CHECKPOINT = 5000
DOC = REPO_ROOT / "docs" / "benchmarks.md"


def _django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "faultline.settings")
    import django

    django.setup()


def generate(slug: str, failed: int) -> dict[str, Any]:
    """Bulk-insert a project of ``failed`` failed rollouts (plus the successes of each copy)."""
    _django()
    from django.db import transaction

    from analysis.models import ClusteringRun, Misbehaviour, WrongStepMembership
    from attribution.models import TrajectoryAttribution
    from exports.models import Correction, CorrectionKind
    from ingest.core.vocabulary import is_agent_action
    from ingest.models import Label, Step, Trajectory, Upload
    from projects.models import Project

    records = sample_records()
    failures = [r for r in records if r.outcome == "failure"]
    successes = [r for r in records if r.outcome == "success"]
    project = Project.objects.create(name=f"Bench {slug}", slug=slug)
    upload = Upload.objects.create(
        project=project, original_name="bench", raw_file="bench", sha256=slug, size=0, status="done"
    )
    # Stand-ins for what the attribution and analysis tasks would store: a set of up to five
    # steps around the decisive one, and three wrong steps per rollout in ten misbehaviours.
    run = ClusteringRun.objects.create(project=project, kind="full", status="done", backend="bench")
    misbehaviours = Misbehaviour.objects.bulk_create(
        [
            Misbehaviour(project=project, key=f"m{i}", name=f"bench misbehaviour {i}")
            for i in range(10)
        ]
    )
    started = time.perf_counter()
    made = copy = steps_made = corrections = memberships = 0
    while made < failed:
        batch = []
        for record in failures:
            if made >= failed:
                break
            batch.append(record)
            made += 1
        batch += [r for r in successes]
        with transaction.atomic():
            rows = Trajectory.objects.bulk_create(
                [
                    Trajectory(
                        project=project,
                        upload=upload,
                        external_id=f"{r.external_id}#c{copy}",
                        task_id=f"{r.task_id}#c{copy}",
                        task_text=r.task_text,
                        environment=r.environment,
                        agent_system=r.agent_system,
                        policy_model=r.policy_model,
                        outcome=r.outcome,
                        reward=r.reward,
                        step_count=len(r.steps),
                        metadata=r.metadata,
                    )
                    for r in batch
                ],
                batch_size=500,
            )
            steps, labels, fixes, attributions, wrong = [], [], [], [], []
            for row, record in zip(rows, batch):
                n = len(record.steps)
                decisive = min(record.labels[0].step if record.labels else n // 2, max(n - 1, 0))
                if record.outcome == "failure" and n:
                    lo, hi = max(0, decisive - 2), min(n - 1, decisive + 2)
                    attributions.append(
                        TrajectoryAttribution(
                            trajectory_id=row.pk,
                            project=project,
                            probabilities=[],
                            lo=lo,
                            hi=hi,
                            point_step=decisive,
                            agent=record.steps[decisive].agent,
                            rollback_step=lo,
                            alpha=0.1,
                            scorer_version="bench",
                        )
                    )
                actions = [s.index for s in record.steps if is_agent_action(s)]
                chosen = set()
                if record.outcome == "failure":
                    chosen = set(actions[1 :: max(1, len(actions) // 3)][:3])
                for s in record.steps:
                    step = Step(
                        trajectory_id=row.pk,
                        index=s.index,
                        agent=s.agent,
                        role=s.role,
                        kind=s.kind,
                        content=s.content,
                        tool_name=s.tool_name,
                        tool_args=s.tool_args,
                        tool_call_id=s.tool_call_id,
                        is_error=s.is_error,
                        is_mutating=s.is_mutating,
                        metadata=s.metadata,
                    )
                    steps.append(step)
                    if s.index in chosen:
                        wrong.append((step, misbehaviours[(row.pk + s.index) % len(misbehaviours)]))
                    if len(steps) >= 5000:
                        Step.objects.bulk_create(steps)
                        steps_made += len(steps)
                        steps = []
                for position, label in enumerate(record.labels):
                    labels.append(
                        Label(
                            trajectory_id=row.pk,
                            step_index=label.step,
                            agent=label.agent,
                            reason=label.reason,
                            source=label.source,
                        )
                    )
                    step = record.steps[label.step] if label.step < len(record.steps) else None
                    if (
                        position == 0
                        and step is not None
                        and is_agent_action(step)
                        and row.pk % 3 == 0
                    ):
                        fixes.append(
                            Correction(
                                trajectory_id=row.pk,
                                step_index=label.step,
                                kind=CorrectionKind.MESSAGE,
                                content="Check the claim against a second source first.",
                            )
                        )
            Step.objects.bulk_create(steps)
            steps_made += len(steps)
            TrajectoryAttribution.objects.bulk_create(attributions)
            WrongStepMembership.objects.bulk_create(
                [
                    WrongStepMembership(
                        project=project,
                        run=run,
                        step_id=step.pk,
                        misbehaviour=m,
                        source="conformal",
                    )
                    for step, m in wrong
                ]
            )
            memberships += len(wrong)
            Label.objects.bulk_create(labels)
            Correction.objects.bulk_create(fixes)
            corrections += len(fixes)
        copy += 1
    return {
        "failed_rollouts": made,
        "successful_rollouts": copy * len(successes),
        "steps": steps_made,
        "human_corrections": corrections,
        "misbehaviour_steps": memberships,
        "seconds": round(time.perf_counter() - started, 1),
    }


def export(slug: str) -> dict[str, Any]:
    """Export all four kinds of the project in this process; peak RSS every 5,000 rollouts."""
    _django()
    from exports.core.filters import KINDS, parse_filters
    from exports.services import export_create, export_folder, export_run
    from projects.models import Project

    project = Project.objects.get(slug=slug)
    job = export_create(project=project, kinds=KINDS, filters=parse_filters({}), dispatch=False)
    started = time.perf_counter()
    checkpoints: list[dict[str, float]] = []

    def observe(done: int) -> None:
        if done % CHECKPOINT == 0:
            peak_mb = peak_rss_mb()
            checkpoints.append(
                {
                    "rollouts": done,
                    "peak_rss_mb": round(peak_mb, 1),
                    "seconds": round(time.perf_counter() - started, 1),
                }
            )

    job = export_run(job_id=job.pk, observer=observe)
    if job.status != "done":
        raise RuntimeError(job.error_message)
    folder = export_folder(job)
    return {
        "seconds": round(time.perf_counter() - started, 1),
        "rollouts": job.progress_done,
        "counts": job.counts,
        "skipped": job.manifest["skipped"],
        "bytes": {p.name: p.stat().st_size for p in sorted(folder.iterdir())},
        "checkpoints": checkpoints,
    }


def _child(mode: str, slug: str, env: dict[str, str], *extra: str) -> dict[str, Any]:
    # The child writes its figures to a file: run_measured keeps only the tail of stdout.
    result = Path(env["FAULTLINE_VAR_DIR"]) / f"{mode}-{slug}.json"
    script = str(Path(__file__).resolve())
    measured = run_measured(
        [PYTHON, script, f"--{mode}", slug, *extra, "--result", str(result)], env=env
    )
    data = json.loads(result.read_text())
    data["process_seconds"] = round(measured["seconds"], 1)
    data["process_peak_rss_mb"] = round(measured["peak_rss_mb"], 1)
    return data


def _markdown(report: dict[str, Any]) -> str:
    runs = report["runs"]
    lines = [
        "## Exports",
        "",
        "`bench/exports.py` (issue 7): all four export formats (sft, preference, diagnosis, start states) "
        "of generated projects whose failed rollouts are copies of the real tau-bench airline and "
        "Who&When rollouts (bulk-inserted, with their labels, the tau-bench successes of each copy, "
        "a human correction on every third labelled rollout, stand-in attributions and misbehaviour "
        "memberships). SQLite, one process, "
        f"{report['machine']['cpus']} CPUs, Python {report['machine']['python']}, {report['machine']['date']}.",
        "",
        "| failed rollouts | steps | export time | rollouts/s | peak RSS (whole process) | sft | preference | diagnosis | start states | output |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        ex, gen = run["export"], run["generate"]
        size_mb = sum(ex["bytes"].values()) / 1e6
        lines.append(
            f"| {gen['failed_rollouts']:,} | {gen['steps']:,} | {ex['seconds']:.0f} s | "
            f"{ex['rollouts'] / max(ex['seconds'], 0.001):.0f} | {ex['process_peak_rss_mb']:.0f} MB | "
            f"{ex['counts'].get('sft', 0):,} | {ex['counts'].get('preference', 0):,} | "
            f"{ex['counts'].get('diagnosis', 0):,} | {ex['counts'].get('start_states', 0):,} | {size_mb:,.0f} MB |"
        )
    big = runs[-1]["export"]["checkpoints"]
    if big:
        lines += [
            "",
            "Peak RSS inside the largest export as it goes (memory flat in the number of rollouts):",
            "",
            "| rollouts done | " + " | ".join(f"{c['rollouts']:,}" for c in big) + " |",
            "|---|" + "---:|" * len(big),
            "| peak RSS (MB) | " + " | ".join(f"{c['peak_rss_mb']:.0f}" for c in big) + " |",
        ]
    lines += ["", report["note"], "", "Raw figures: `bench-results/exports.json`.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=50_000)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true", help="1,000 and 5,000 rollouts")
    parser.add_argument("--generate", nargs=2, metavar=("SLUG", "N"), help=argparse.SUPPRESS)
    parser.add_argument("--export", metavar="SLUG", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.generate or args.export:
        data = (
            generate(args.generate[0], int(args.generate[1]))
            if args.generate
            else export(args.export)
        )
        Path(args.result).write_text(json.dumps(data))
        return
    sizes = (1000, 5000) if args.quick else (args.small, args.rollouts)
    with tempfile.TemporaryDirectory(prefix="faultline-bench-exports-") as work:
        env = dict(os.environ)
        env.update(
            DATABASE_URL=f"sqlite:///{Path(work) / 'bench.sqlite3'}",
            FAULTLINE_VAR_DIR=work,
            FAULTLINE_CACHE_URL="",
            DJANGO_SETTINGS_MODULE="faultline.settings",
        )
        subprocess.run(
            [PYTHON, str(REPO_ROOT / "manage.py"), "migrate", "--no-input", "-v0"],
            env=env,
            check=True,
            cwd=REPO_ROOT,
        )
        runs = []
        for size in sizes:
            slug = f"bench-{size}"
            print(f"generating {size:,} failed rollouts ...", flush=True)
            generated = _child("generate", slug, env, str(size))
            print(f"  {generated}", flush=True)
            print(f"exporting {slug} ...", flush=True)
            exported = _child("export", slug, env)
            print(
                f"  {exported['seconds']} s, peak {exported['process_peak_rss_mb']} MB, {exported['counts']}",
                flush=True,
            )
            runs.append({"generate": generated, "export": exported})
    report = {
        "machine": machine(),
        "runs": runs,
        "note": (
            "The generated projects stand in for what the attribution and analysis tasks store "
            "(those are benchmarked on their own): each failed rollout gets a prediction set of up to "
            "five steps around its labelled step (the middle one without label) and three agent "
            "steps in ten misbehaviours. Corrections come from the human corrections and from the "
            "tau-bench successes of the same copy of each task."
        ),
    }
    path = write_report("exports", report)
    benchmarks_section_write("Exports", _markdown(report))
    print(f"wrote {path} and the Exports section of {DOC}")


if __name__ == "__main__":
    main()
