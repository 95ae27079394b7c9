"""Page benchmark (issue 6): server time and SQL queries of the dashboard's pages on a
project of 50k rollouts and 1M steps, and first paint of a 5,000-step rollout in Chromium.

Run with `make bench` (or `.venv/bin/python bench/pages.py [--quick]`). Writes
bench-results/pages.json and the "Pages" section of docs/benchmarks.md (other sections
are kept). The project is generated from the real samples (tau-bench airline and
Who&When rollouts, cycled and cut to varied lengths) and bulk-inserted directly.

Every time is also given as a ratio against a baseline measured in the same run on the
same database (the login page, which runs the middleware, a session lookup and a template
but no query of ours), because these machines are noisy. Server time is measured
in-process with Django's test client (view, middleware and templates; no network).

SQLite always; PostgreSQL as well when FAULTLINE_BENCH_POSTGRES_URL
(postgres://user@host:port) is set, in a database created for the run.
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

ROLLOUTS = 50_000
STEPS = 1_000_000
LONG_STEPS = 5_000
UPLOADS = 50
CONTENT_MAX = 4_000
MODELS = ["gpt-4o", "claude-3-5-sonnet", "llama-3.1-70b", "qwen2.5-72b"]
GOAL_SERVER_MS = 300.0
# A tool's error message that a few of the copied airline rollouts hold.
SAYS_RARE = "gift+card+balance+is+not+enough"
GOAL_FIRST_PAINT_MS = 1_000.0
RUNS = 7
PAINT_RUNS = 5
PASSWORD = "bench-pass-123"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]  # fmt: skip


# --- the generated project (runs inside the worker process, Django set up) -------------


def _lengths(count: int, total: int) -> list[int]:
    """Varied rollout lengths (8..32 steps) scaled so that they add up to ``total``."""
    raw = [8 + (i * 7919) % 25 for i in range(count)]
    scale = total / sum(raw)
    lengths = [max(2, round(n * scale)) for n in raw]
    lengths[-1] += total - sum(lengths)
    return lengths


def generate(*, rollouts: int, steps: int) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from bench.common import sample_records
    from ingest.models import Label, Step, Trajectory, Upload
    from projects.services import project_create

    started = time.perf_counter()
    user = get_user_model().objects.create_user("bench", "bench@example.com", PASSWORD)
    project = project_create(name="Bench", slug="bench", owner=user)
    templates = sample_records()
    per_upload = max(1, rollouts // UPLOADS)
    lengths = _lengths(rollouts, steps)
    made_steps = 0
    with transaction.atomic():
        uploads = Upload.objects.bulk_create(
            [
                Upload(
                    project=project,
                    original_name=f"nightly-{n:02d}.jsonl",
                    raw_file=f"uploads/bench/{n}",
                    sha256=uuid.uuid4().hex * 2,
                    size=1,
                    status="done",
                    detected_format="native",
                    trajectory_count=min(per_upload, rollouts - n * per_upload),
                )
                for n in range((rollouts + per_upload - 1) // per_upload)
            ]
        )
    batch_rollouts: list[Trajectory] = []
    plans: list[tuple[Any, int]] = []

    def flush() -> None:
        nonlocal made_steps
        with transaction.atomic():
            created = Trajectory.objects.bulk_create(batch_rollouts)
            step_rows: list[Step] = []
            label_rows: list[Label] = []
            for rollout, (record, length) in zip(created, plans):
                for index in range(length):
                    source = record.steps[index % len(record.steps)]
                    step_rows.append(
                        Step(
                            trajectory_id=rollout.pk,
                            index=index,
                            agent=source.agent,
                            role=source.role,
                            kind=source.kind,
                            content=source.content[:CONTENT_MAX],
                            tool_name=source.tool_name,
                            tool_args=source.tool_args,
                            tool_call_id=source.tool_call_id,
                            is_error=source.is_error,
                            is_mutating=source.is_mutating,
                        )
                    )
                for label in record.labels:
                    label_rows.append(
                        Label(
                            trajectory_id=rollout.pk,
                            step_index=min(label.step, length - 1),
                            agent=label.agent,
                            reason=label.reason[:500],
                            source="dataset",
                        )
                    )
            Step.objects.bulk_create(step_rows, batch_size=5000)
            Label.objects.bulk_create(label_rows, batch_size=5000)
            made_steps += len(step_rows)
        batch_rollouts.clear()
        plans.clear()

    for number in range(rollouts):
        record = templates[number % len(templates)]
        length = lengths[number]
        actions = (record.metadata.get("info") or {}).get("task", {}).get("actions")
        batch_rollouts.append(
            Trajectory(
                project=project,
                upload=uploads[number // per_upload],
                external_id=f"{record.external_id}#{number}",
                task_id=record.task_id,
                task_text=record.task_text,
                environment=record.environment,
                agent_system=record.agent_system,
                policy_model=MODELS[(number // len(templates)) % len(MODELS)],
                outcome=record.outcome,
                reward=record.reward,
                step_count=length,
                metadata={"info": {"task": {"actions": actions}}} if actions is not None else {},
            )
        )
        plans.append((record, length))
        if len(batch_rollouts) >= 1000:
            flush()
    flush()
    # One long multi-agent rollout: the longest Who&When run cycled to 5,000 steps.
    longest = max((t for t in templates if t.agent_system), key=lambda t: len(t.steps))
    batch_rollouts.append(
        Trajectory(
            project=project,
            upload=uploads[-1],
            external_id="long-multi-agent",
            task_id="long",
            task_text=longest.task_text,
            environment=longest.environment,
            agent_system=longest.agent_system,
            policy_model=MODELS[0],
            outcome="failure",
            step_count=LONG_STEPS,
        )
    )
    plans.append((longest, LONG_STEPS))
    flush()
    inserted = time.perf_counter() - started
    from attribution.action_analysis import project_action_analysis_refresh
    from ingest.maintenance import tables_tidy

    tables_tidy()  # as the refresh task after uploads does (VACUUM ANALYZE on PostgreSQL)

    analysis_started = time.perf_counter()
    project_action_analysis_refresh(project_id=project.pk)
    return {
        "rollouts": Trajectory.objects.filter(project=project).count(),
        "steps": made_steps,
        "labels": Label.objects.filter(trajectory__project=project).count(),
        "insert_seconds": round(inserted, 1),
        "action_analysis_seconds": round(time.perf_counter() - analysis_started, 1),
    }


# --- measurements -----------------------------------------------------------------------


def _pages() -> dict[str, str]:
    from ingest.models import Trajectory

    typical = (
        Trajectory.objects.filter(
            project__slug="bench", outcome="failure", task_id__startswith="airline/"
        )
        .order_by("id")
        .first()
    )
    long = Trajectory.objects.get(project__slug="bench", external_id="long-multi-agent")
    assert typical is not None
    base = "/p/bench"
    return {
        "overview": f"{base}/",
        "rollouts list": f"{base}/rollouts/",
        "rollouts list, 5 filters": f"{base}/rollouts/?outcome=failure&environment=airline&model=gpt-4o&labelled=no&sort=-steps",
        "rollouts list, search + sort": f"{base}/rollouts/?q=reservation&sort=reward",
        "rollouts list, page 500": f"{base}/rollouts/?page=500",
        "rollouts list, by tool": f"{base}/rollouts/?tool=book_reservation&outcome=failure",
        "rollouts list, with an error step": f"{base}/rollouts/?errors=yes&sort=-steps",
        "rollouts list, a tool no rollout calls": f"{base}/rollouts/?tool=no_such_tool",
        # What the steps say: a scan of the steps of the rollouts looked at (no text index).
        "rollouts list, a step says (common text)": f"{base}/rollouts/?says=reservation",
        "rollouts list, a step says (a tool's error)": f"{base}/rollouts/?says={SAYS_RARE}",
        "rollouts list, a step says (no step says it)": f"{base}/rollouts/?says=no+step+says+this",
        "rollout page (tau-bench)": f"{base}/rollouts/{typical.pk}/",
        "rollout page, 5,000 steps": f"{base}/rollouts/{long.pk}/",
        "rollout page, 5,000 steps, last window": f"{base}/rollouts/{long.pk}/?from=4800",
        "rollout page, 5,000 steps, marking a text": f"{base}/rollouts/{long.pk}/?says=the",
        "comparison (tau-bench)": f"{base}/rollouts/{typical.pk}/compare/",
    }


def measure_server(*, runs: int) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    anonymous = Client(HTTP_HOST="127.0.0.1")
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(get_user_model().objects.get(username="bench"))

    def timed(who: Client, url: str) -> dict[str, Any]:
        for _ in range(2):
            response = who.get(url)
            assert response.status_code == 200, (url, response.status_code)
        samples = []
        for _ in range(runs):
            started = time.perf_counter()
            response = who.get(url)
            samples.append(1000 * (time.perf_counter() - started))
        with CaptureQueriesContext(connection) as queries:
            who.get(url)
        return {
            "median_ms": round(statistics.median(samples), 1),
            "max_ms": round(max(samples), 1),
            "queries": len(queries),
            "bytes": len(response.content),
        }

    from pipeline.overview import project_overview_refresh
    from projects.models import Project

    baseline = timed(anonymous, "/login/")
    urls = _pages()
    # Before the refresh task stored the overview's aggregates, the page computes them.
    live_overview = timed(client, urls["overview"])
    started = time.perf_counter()
    project_overview_refresh(project_id=Project.objects.get(slug="bench").pk)
    refresh_seconds = time.perf_counter() - started
    pages = {name: timed(client, url) for name, url in urls.items()}
    pages["overview, aggregates computed in the request (never refreshed)"] = live_overview
    for page in pages.values():
        page["ratio_to_baseline"] = round(page["median_ms"] / baseline["median_ms"], 1)
    return {
        "baseline (login page)": baseline,
        "pages": pages,
        "urls": urls,
        "overview_refresh_seconds": round(refresh_seconds, 2),
    }


def measure_first_paint(env: dict[str, str], urls: dict[str, str], *, runs: int) -> dict[str, Any]:
    """First paint and first contentful paint in headless Chromium, against runserver."""
    from playwright.sync_api import sync_playwright

    from tests.services import free_port

    port = free_port()
    server = subprocess.Popen(
        [PYTHON, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload", "--skip-checks", "--insecure"],
        cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 30
        import urllib.request

        while True:
            try:
                urllib.request.urlopen(base + "/login/", timeout=2)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.2)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS
            )
            page = browser.new_page(viewport={"width": 1360, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))

            def paint(url: str) -> dict[str, float]:
                samples: dict[str, list[float]] = {
                    "first_paint_ms": [],
                    "first_contentful_paint_ms": [],
                    "dom_content_loaded_ms": [],
                }
                for _ in range(runs + 1):
                    page.goto(base + url, wait_until="load")
                    # Paint entries can land just after "load": wait for them (buffered).
                    timing = page.evaluate(
                        """() => new Promise(resolve => {
                          const found = {};
                          const done = () => {
                            const n = performance.getEntriesByType('navigation')[0];
                            resolve({fp: found['first-paint'], fcp: found['first-contentful-paint'],
                                     dcl: n.domContentLoadedEventEnd});
                          };
                          new PerformanceObserver(list => {
                            list.getEntries().forEach(e => found[e.name] = e.startTime);
                            if (found['first-contentful-paint'] !== undefined) { done(); }
                          }).observe({type: 'paint', buffered: true});
                          setTimeout(done, 5000);
                        })"""
                    )
                    samples["first_paint_ms"].append(timing["fp"])
                    samples["first_contentful_paint_ms"].append(timing["fcp"])
                    samples["dom_content_loaded_ms"].append(timing["dcl"])
                # The first load warms caches (plotly.min.js, the server's imports).
                return {
                    key: round(
                        statistics.median([v for v in values[1:] if v is not None] or [-1]), 1
                    )
                    for key, values in samples.items()
                }

            baseline = paint("/login/")
            page.fill("#id_username", "bench")
            page.fill("#id_password", PASSWORD)
            page.click("button[type=submit]")
            page.wait_for_load_state("load")
            results = {
                "rollout page, 5,000 steps": paint(urls["rollout page, 5,000 steps"]),
                "overview": paint(urls["overview"]),
            }
            for result in results.values():
                result["ratio_to_baseline"] = round(
                    result["first_contentful_paint_ms"] / baseline["first_contentful_paint_ms"], 1
                )
            browser.close()
        return {"baseline (login page)": baseline, "pages": results, "errors": errors}
    finally:
        server.terminate()
        server.wait(timeout=10)


# --- one database per worker process ----------------------------------------------------


def worker(args: argparse.Namespace) -> None:
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    generated = generate(rollouts=args.rollouts, steps=args.steps)
    server = measure_server(runs=RUNS)
    paint = measure_first_paint(dict(os.environ), server["urls"], runs=PAINT_RUNS)
    from django.db import connection

    print(
        "RESULT="
        + json.dumps(
            {
                "database": connection.vendor,
                "project": generated,
                "server": server,
                "first_paint": paint,
            }
        )
    )


def run_database(kind: str, *, rollouts: int, steps: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="faultline-bench-pages-") as tmp:
        var_dir = Path(tmp)
        env = dict(os.environ)
        env.update(
            DATABASE_URL=fresh_database_url(kind, var_dir, prefix="bench_pages"),
            FAULTLINE_VAR_DIR=str(var_dir),
            FAULTLINE_CACHE_URL="",
            DJANGO_SETTINGS_MODULE="faultline.settings",
        )
        started = time.perf_counter()
        result = subprocess.run(
            [PYTHON, __file__, "--worker", "--rollouts", str(rollouts), "--steps", str(steps)],
            cwd=REPO_ROOT, env=env, capture_output=True, text=True,
        )  # fmt: skip
        if result.returncode != 0:
            raise RuntimeError(
                f"{kind} worker failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
            )
        match = re.search(r"^RESULT=(.*)$", result.stdout, re.MULTILINE)
        assert match, result.stdout[-2000:]
        report = json.loads(match.group(1))
        report["wall_seconds"] = round(time.perf_counter() - started, 1)
        return report


# --- report -----------------------------------------------------------------------------


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "## Pages",
        "",
        f"`bench/pages.py` (issue 6): one generated project of {report['runs'][0]['project']['rollouts']:,} "
        f"rollouts and {report['runs'][0]['project']['steps']:,} steps (copies of the real tau-bench airline "
        "and Who&When rollouts cut to 8-32 steps, 50 uploads, plus one 5,000-step multi-agent rollout), "
        "bulk-inserted, then tidied as the refresh task after uploads does (`ingest/maintenance.py`: "
        f"VACUUM ANALYZE of the rollout and label tables on PostgreSQL). {report['machine']['cpus']} CPUs, Python {report['machine']['python']}, "
        f"{report['machine']['date']}. Server time is the median of {RUNS} requests after 2 warm-ups, measured "
        "in-process with Django's test client; the ratio is against the login page measured the same way in "
        f"the same run. Goals: every page under {GOAL_SERVER_MS:.0f} ms of server time, the 5,000-step rollout "
        f"under {GOAL_FIRST_PAINT_MS:.0f} ms to first paint.",
        "",
    ]
    for run in report["runs"]:
        server = run["server"]
        base = server["baseline (login page)"]
        lines += [
            f"### {run['database']}",
            "",
            f"Generated in {run['project']['insert_seconds']} s; the action-level analysis over the whole "
            f"project took {run['project']['action_analysis_seconds']} s and the overview's aggregates "
            f"{server['overview_refresh_seconds']} s (both in the refresh task after each upload, "
            "never in a request).",
            "",
            "| page | server time (median) | slowest of the runs | × baseline | SQL queries | HTML size | goal |",
            "|---|---:|---:|---:|---:|---:|---|",
            f"| baseline: login page | {base['median_ms']:.1f} ms | {base['max_ms']:.1f} ms | 1.0 | {base['queries']} | {base['bytes'] // 1024} KB | |",
        ]
        for name, page in server["pages"].items():
            ok = "met" if page["median_ms"] < GOAL_SERVER_MS else "**missed**"
            lines.append(
                f"| {name} | {page['median_ms']:.1f} ms | {page['max_ms']:.1f} ms | {page['ratio_to_baseline']} "
                f"| {page['queries']} | {page['bytes'] // 1024} KB | {ok} |"
            )
        paint = run["first_paint"]
        pbase = paint["baseline (login page)"]
        lines += [
            "",
            "First paint in headless Chromium (median of "
            f"{PAINT_RUNS} loads after a warm-up, against `runserver`):",
            "",
            "| page | first paint | first contentful paint | DOMContentLoaded | × baseline (FCP) | goal |",
            "|---|---:|---:|---:|---:|---|",
            f"| baseline: login page | {pbase['first_paint_ms']:.0f} ms | {pbase['first_contentful_paint_ms']:.0f} ms | {pbase['dom_content_loaded_ms']:.0f} ms | 1.0 | |",
        ]
        for name, page in paint["pages"].items():
            goal = ""
            if "5,000" in name:
                goal = (
                    "met"
                    if page["first_contentful_paint_ms"] < GOAL_FIRST_PAINT_MS
                    else "**missed**"
                )
            lines.append(
                f"| {name} | {page['first_paint_ms']:.0f} ms | {page['first_contentful_paint_ms']:.0f} ms "
                f"| {page['dom_content_loaded_ms']:.0f} ms | {page['ratio_to_baseline']} | {goal} |"
            )
        lines.append("")
    lines += ["Raw figures: `bench-results/pages.json`.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="5k rollouts / 100k steps, no docs update"
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rollouts", type=int, default=ROLLOUTS)
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--sqlite-only", action="store_true")
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    if args.quick:
        args.rollouts, args.steps = 5_000, 100_000
    kinds = ["sqlite"]
    if os.environ.get("FAULTLINE_BENCH_POSTGRES_URL") and not args.sqlite_only:
        kinds.append("postgres")
    runs = []
    for kind in kinds:
        print(
            f"pages benchmark on {kind}: {args.rollouts:,} rollouts, {args.steps:,} steps...",
            flush=True,
        )
        runs.append(run_database(kind, rollouts=args.rollouts, steps=args.steps))
        for name, page in runs[-1]["server"]["pages"].items():
            print(f"  {name}: {page['median_ms']} ms, {page['queries']} queries", flush=True)
        for name, page in runs[-1]["first_paint"]["pages"].items():
            print(f"  first paint, {name}: {page['first_contentful_paint_ms']} ms", flush=True)
    report = {"machine": machine(), "runs": runs, "quick": args.quick}
    path = write_report("pages-quick" if args.quick else "pages", report)
    print(f"wrote {path}")
    if not args.quick:
        print(f"updated {benchmarks_section_write('Pages', markdown(report))}")


if __name__ == "__main__":
    main()
