"""Incremental refresh benchmark (issue 15, "Steady streams stay cheap"): the refresh work
per new rollout in projects of growing size, against the full refresh of the same run.

For each size (5k, 20k and 50k rollouts; ``--quick``: 1k and 4k), in a fresh database and
child process: the project is generated and bulk-inserted as bench/pages.py does (copies
of the real tau-bench airline and Who&When rollouts with their dataset labels), its tasks
cut into blocks of a few trials each (a real project has a few trials per task, while
the generator cycles the same samples over and over), one full refresh runs, then new
rollouts arrive one at a time as closing live rollouts do (a finished upload of one
rollout each, stored directly: only the refresh after it is timed), then a batch of ten.

Reported per size: the full refresh's time; the median and slowest refresh per new
rollout and its SQL queries; the ratios against the smallest size's per-rollout time
(the goal: flat, about 1.0) and against the full refresh of the same size; and the
amortised cost per rollout once the full refresh that the quarter rule brings back
(pipeline.incremental.GROWTH) is spread over the rollouts that trigger it.

SQLite always; PostgreSQL as well when FAULTLINE_BENCH_POSTGRES_URL is set.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (  # noqa: E402
    PYTHON,
    REPO_ROOT,
    benchmarks_section_write,
    fresh_database_url,
    machine,
    write_report,
)

SIZES = (5_000, 20_000, 50_000)
QUICK_SIZES = (1_000, 4_000)
STEPS_PER_ROLLOUT = 8
SINGLES = 20
QUICK_SINGLES = 5
BATCH = 10
# Trials per task in the generated project: rollout ids are cut into blocks of
# (samples x TRIALS) and the block number joins the task id.
TRIALS = 4


# --- inside the worker process (Django set up) ------------------------------------------


def _bounded_tasks(project_id: int, samples: int) -> None:
    from django.db.models import F, Value
    from django.db.models.fields import CharField
    from django.db.models.functions import Cast, Concat

    from ingest.models import Trajectory

    block = Cast(F("id") / (samples * TRIALS), output_field=CharField())
    Trajectory.objects.filter(project_id=project_id).exclude(task_id="").update(
        task_id=Concat(F("task_id"), Value("#"), block, output_field=CharField())
    )


def _add_rollouts(project_id: int, templates: list[Any], start: int, count: int) -> list[int]:
    """``count`` new rollouts (templates cycled, no labels) in one finished upload, the way
    an upload or a closing live trace leaves them for the refresh."""
    from django.db import transaction
    from django.utils import timezone

    from ingest.models import Step, Trajectory, Upload

    with transaction.atomic():
        upload = Upload.objects.create(
            project_id=project_id,
            original_name=f"live-{start}.jsonl",
            raw_file=f"uploads/bench/live-{start}",
            sha256=uuid.uuid4().hex * 2,
            size=1,
            status="done",
            detected_format="native",
            trajectory_count=count,
            finished_at=timezone.now(),
        )
        last_task = (
            Trajectory.objects.filter(project_id=project_id)
            .order_by("-id")
            .values_list("task_id", flat=True)
            .first()
        )
        suffix = (last_task or "#0").rsplit("#", 1)[-1]
        ids = []
        for number in range(start, start + count):
            record = templates[number % len(templates)]
            actions = (record.metadata.get("info") or {}).get("task", {}).get("actions")
            length = max(2, min(len(record.steps), STEPS_PER_ROLLOUT * 2))
            rollout = Trajectory.objects.create(
                project_id=project_id,
                upload=upload,
                external_id=f"live-{number}",
                task_id=f"{record.task_id}#{suffix}" if record.task_id else "",
                task_text=record.task_text,
                environment=record.environment,
                agent_system=record.agent_system,
                policy_model="gpt-4o",
                outcome=record.outcome,
                reward=record.reward,
                step_count=length,
                metadata={"info": {"task": {"actions": actions}}} if actions is not None else {},
            )
            Step.objects.bulk_create(
                Step(
                    trajectory=rollout,
                    index=index,
                    agent=step.agent,
                    role=step.role,
                    kind=step.kind,
                    content=step.content[:4000],
                    tool_name=step.tool_name,
                    tool_args=step.tool_args,
                    tool_call_id=step.tool_call_id,
                    is_error=step.is_error,
                    is_mutating=step.is_mutating,
                )
                for index, step in enumerate(record.steps[:length])
            )
            ids.append(rollout.pk)
    return ids


def _timed_refresh(project_id: int) -> dict[str, Any]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from pipeline.refresh import refresh_project_run

    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        refresh = refresh_project_run(project_id)
        seconds = time.perf_counter() - started
    assert refresh is not None and refresh.status == "done", refresh and refresh.error_message
    return {
        "seconds": seconds,
        "queries": len(queries.captured_queries),
        "kind": refresh.kind,
        "reason": refresh.reason,
        "rollouts": refresh.rollouts,
    }


def worker(args: argparse.Namespace) -> None:
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from bench.common import sample_records
    from bench.pages import generate
    from ingest.models import Trajectory
    from pipeline.incremental import GROWTH
    from projects.models import Project

    generated = generate(rollouts=args.rollouts, steps=args.rollouts * STEPS_PER_ROLLOUT)
    project = Project.objects.get(slug="bench")
    templates = sample_records()
    _bounded_tasks(project.pk, len(templates))
    full = _timed_refresh(project.pk)
    assert full["kind"] == "full", full
    singles = []
    for number in range(args.singles):
        _add_rollouts(project.pk, templates, number, 1)
        singles.append(_timed_refresh(project.pk))
    _add_rollouts(project.pk, templates, args.singles, BATCH)
    batch = _timed_refresh(project.pk)
    from django.db import connection

    print(
        "RESULT="
        + json.dumps(
            {
                "database": connection.vendor,
                "size": args.rollouts,
                "growth": GROWTH,
                "project": generated,
                "failed": Trajectory.objects.filter(project=project, outcome="failure").count(),
                "full": full,
                "singles": singles,
                "batch": batch,
            }
        )
    )


# --- the parent: one child process per database and size --------------------------------


def run_one(kind: str, size: int, singles: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="faultline-bench-refresh-") as tmp:
        var_dir = Path(tmp)
        env = dict(os.environ)
        env.update(
            DATABASE_URL=fresh_database_url(kind, var_dir, prefix="bench_refresh"),
            FAULTLINE_VAR_DIR=str(var_dir),
            FAULTLINE_CACHE_URL="",
            DJANGO_SETTINGS_MODULE="faultline.settings",
            # No broker: the refreshes run in this process; a dispatch fails fast.
            FAULTLINE_BROKER_URL="memory://",
            FAULTLINE_RESULT_BACKEND="cache+memory://",
        )
        command = [PYTHON, __file__, "--worker", "--rollouts", str(size), "--singles", str(singles)]
        result = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"{kind} {size}: {result.stdout[-2000:]}\n{result.stderr[-4000:]}")
        match = re.search(r"^RESULT=(.*)$", result.stdout, re.MULTILINE)
        assert match, result.stdout[-2000:]
        return json.loads(match.group(1))


def summarise(run: dict[str, Any]) -> dict[str, Any]:
    incremental = [s for s in run["singles"] if s["kind"] == "incremental"]
    per_rollout = [s["seconds"] for s in incremental]
    median = statistics.median(per_rollout) if per_rollout else float("nan")
    full = run["full"]["seconds"]
    rollouts = run["project"]["rollouts"]
    return {
        "size": run["size"],
        "rollouts": rollouts,
        "failed": run["failed"],
        "steps": run["project"]["steps"],
        "full_seconds": round(full, 2),
        "incremental_runs": len(incremental),
        "full_runs_among_singles": len(run["singles"]) - len(incremental),
        "per_rollout_median_ms": round(median * 1000, 1),
        "per_rollout_max_ms": round(max(per_rollout) * 1000, 1) if per_rollout else None,
        "per_rollout_queries_median": statistics.median(s["queries"] for s in incremental)
        if incremental
        else None,
        "batch_per_rollout_ms": round(run["batch"]["seconds"] * 1000 / BATCH, 1),
        "batch_kind": run["batch"]["kind"],
        "per_rollout_over_full": round(median / full, 5) if full else None,
        "amortised_per_rollout_ms": round((median + full / (run["growth"] * rollouts)) * 1000, 1),
    }


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "## Incremental refresh",
        "",
        "`bench/refresh.py` (issue 15): the refresh after each new rollout in projects of "
        f"{', '.join(f'{s:,}' for s in report['sizes'])} rollouts (about {STEPS_PER_ROLLOUT} "
        "steps each; generated as bench/pages.py does from the real tau-bench airline and "
        f"Who&When rollouts with their dataset labels, tasks cut to blocks of {TRIALS} trials "
        "of each sample), each size in a fresh database and process: one full refresh, then "
        f"{report['singles']} new rollouts one at a time (a finished upload of one rollout "
        f"each, as a closing live rollout leaves it; only the refresh is timed), then a batch "
        f"of {BATCH}. {report['machine']['cpus']} CPUs, Python {report['machine']['python']}, "
        f"{report['machine']['date']}, default embeddings. The ratio against the smallest size "
        "is the goal's measure (flat: 1.0); the amortised cost adds the full refresh that the "
        "quarter rule (`pipeline/incremental.py`) brings back, spread over the quarter of the "
        "project's rollouts that triggers it.",
        "",
    ]
    for kind, rows in report["databases"].items():
        base = rows[0]["per_rollout_median_ms"]
        lines += [
            f"### {kind}",
            "",
            "| rollouts | failed | full refresh | per new rollout (median) | slowest | SQL "
            "queries | × smallest size | × full refresh | batch of 10, per rollout | "
            "amortised per rollout |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for row in rows:
            lines.append(
                f"| {row['rollouts']:,} | {row['failed']:,} | {row['full_seconds']:.1f} s "
                f"| {row['per_rollout_median_ms']:.0f} ms | {row['per_rollout_max_ms']:.0f} ms "
                f"| {row['per_rollout_queries_median']:.0f} "
                f"| {row['per_rollout_median_ms'] / base:.2f} "
                f"| {row['per_rollout_over_full']:.4f} | {row['batch_per_rollout_ms']:.0f} ms "
                f"| {row['amortised_per_rollout_ms']:.0f} ms |"
            )
        fulls = sum(row["full_runs_among_singles"] for row in rows)
        lines += ["", f"Full refreshes among the single-rollout refreshes: {fulls}.", ""]
    lines += ["Raw figures: `bench-results/refresh.json`.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1k and 4k rollouts, no docs")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rollouts", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--singles", type=int, default=SINGLES)
    parser.add_argument("--sqlite-only", action="store_true")
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    sizes = QUICK_SIZES if args.quick else SIZES
    singles = QUICK_SINGLES if args.quick else args.singles
    kinds = ["sqlite"]
    if os.environ.get("FAULTLINE_BENCH_POSTGRES_URL") and not args.sqlite_only:
        kinds.append("postgresql")
    databases: dict[str, list[dict[str, Any]]] = {}
    raw = []
    for kind in kinds:
        for size in sizes:
            print(f"refresh benchmark on {kind}: {size:,} rollouts...", flush=True)
            run = run_one("sqlite" if kind == "sqlite" else "postgres", size, singles)
            raw.append(run)
            row = summarise(run)
            databases.setdefault(kind, []).append(row)
            print(f"  {json.dumps(row)}", flush=True)
    report = {
        "machine": machine(),
        "sizes": list(sizes),
        "singles": singles,
        "quick": args.quick,
        "databases": databases,
        "runs": raw,
    }
    path = write_report("refresh-quick" if args.quick else "refresh", report)
    print(f"wrote {path}")
    if not args.quick:
        print(f"updated {benchmarks_section_write('Incremental refresh', markdown(report))}")


if __name__ == "__main__":
    main()
