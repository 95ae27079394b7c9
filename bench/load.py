"""Load benchmark (issue 14): 50 simulated users browsing every page and 10 concurrent
uploads for 60 seconds, against gunicorn on PostgreSQL with a 50k-rollout project.

Run with `make bench` (or `.venv/bin/python bench/load.py [--quick]` with
FAULTLINE_BENCH_POSTGRES_URL set). Loopback only, and it stops by itself: every process it
starts (redis-server, two Celery workers, gunicorn) is stopped at the end, whatever
happened. Writes bench-results/load.json and the "Load" section of docs/benchmarks.md.

The big project is generated as bench/pages.py generates it (its `generate`, bulk insert
of copies of the real samples); a second, small project is filled through the real
pipeline (tau-bench airline and Who&When Hand-Crafted, attributed and clustered) so that
the misbehaviour and calibration pages have content, and it receives the uploads: small
real Who&When files through the API, each ingested by the worker and followed by the
project's refresh, as after any upload. Every latency is measured by the client over
loopback (queueing in gunicorn included) and also given as a ratio against the login page
measured under the same load in the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (  # noqa: E402
    PYTHON,
    REPO_ROOT,
    SHARED_DATA,
    benchmarks_section_write,
    fresh_database_url,
    machine,
    write_report,
)
from bench.load_cpu import cpu_snapshot, cpu_used, postmaster_pid  # noqa: E402
from bench.load_report import BASELINE, markdown, slow_statements, summarise  # noqa: E402
from bench.load_services import (  # noqa: E402
    Services,
    answers,
    free_port,
    gunicorn_args,
    wait_until,
    worker_args,
)

ROLLOUTS, STEPS, DURATION_S = 50_000, 1_000_000, 60.0
QUICK_ROLLOUTS, QUICK_STEPS, QUICK_DURATION_S = 5_000, 100_000, 15.0
USERS, UPLOADERS = 50, 10
THINK_S = (0.5, 1.5)  # a user reads a page for a while before the next click
UPLOAD_PAUSE_S = (3.0, 6.0)  # between one uploader's files: 126 real files last the minute
UPLOAD_GRACE_S = 120.0  # after the load: how long uploads still queued may take to finish
REQUEST_TIMEOUT_S = 60.0
SEED = 14
ALONE_RUNS = 3
SLOW_STATEMENT_MS = 100
WEB_ROLE = "faultline_web"  # gunicorn's database role: only its statements are logged
UPLOAD_DIR = "who_and_when/Who&When/Algorithm-Generated"


# --- the simulated users ----------------------------------------------------------------


def stale_keepalive(exc: requests.RequestException) -> bool:
    """The server closed a kept-alive connection as the request went out on it (gunicorn
    closes one idle for its keep-alive time, 2 s: a user who read a page and then the login
    page comes back just then). A browser sends such a GET again on a new connection by
    itself; a refused connection, a timeout or an HTTP error is never this."""
    return isinstance(exc, requests.ConnectionError) and "Connection aborted" in str(exc)


class Recorder:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.samples: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, list[str]] = defaultdict(list)
        self.retried: dict[str, list[str]] = defaultdict(list)

    def timed_get(self, session: requests.Session, base: str, name: str, url: str) -> None:
        started = time.perf_counter()
        retried = ""
        for attempt in (1, 2):
            try:
                response = session.get(base + url, timeout=REQUEST_TIMEOUT_S, allow_redirects=False)
                error = "" if response.status_code == 200 else f"{response.status_code} {url}"
            except requests.RequestException as exc:
                error = f"{type(exc).__name__} {url}: {str(exc)[:160]}"
                if attempt == 1 and stale_keepalive(exc):
                    retried = error  # once, as a browser does; the time counts both tries
                    continue
            break
        elapsed_ms = 1000 * (time.perf_counter() - started)
        with self.lock:
            self.samples[name].append(elapsed_ms)
            if error:
                self.errors[name].append(error)
            if retried:
                self.retried[name].append(retried)


def log_in(base: str, password: str) -> requests.Session:
    session = requests.Session()
    session.get(base + "/login/", timeout=REQUEST_TIMEOUT_S)
    response = session.post(
        base + "/login/",
        data={"username": "bench", "password": password, "next": "/"},
        headers={"X-CSRFToken": session.cookies["csrftoken"], "Referer": base + "/login/"},
        timeout=REQUEST_TIMEOUT_S,
        allow_redirects=False,
    )
    if response.status_code != 302:
        raise RuntimeError(f"log-in failed: {response.status_code}")
    return session


def page_plan(ids: dict[str, Any]) -> list[tuple[str, Callable[[random.Random], str]]]:
    """(page name, URL maker) for every page a user may open next; equally likely."""
    big, small = "/p/bench", "/p/uploads"
    pick = lambda key: lambda rng: rng.choice(ids[key])  # noqa: E731
    rollout, tau, mis, own = (
        pick("rollouts"),
        pick("tau_rollouts"),
        pick("misbehaviours"),
        pick("small_rollout_pks"),
    )
    return [
        ("overview", lambda rng: f"{big}/"),
        ("rollouts list", lambda rng: f"{big}/rollouts/"),
        ("rollouts list, 5 filters", lambda rng: f"{big}/rollouts/?outcome=failure&environment=airline&model=gpt-4o&labelled=no&sort=-steps"),
        ("rollouts list, search + sort", lambda rng: f"{big}/rollouts/?q=reservation&sort=reward"),
        ("rollouts list, page 500", lambda rng: f"{big}/rollouts/?page=500"),
        ("rollout page", lambda rng: f"{big}/rollouts/{rollout(rng)}/"),
        ("rollout page, 5,000 steps", lambda rng: f"{big}/rollouts/{ids['long_rollout']}/"),
        ("comparison", lambda rng: f"{big}/rollouts/{tau(rng)}/compare/"),
        ("misbehaviours (50k project, no clustering run)", lambda rng: f"{big}/misbehaviours/"),
        ("calibration (50k project, not attributed)", lambda rng: f"{big}/attribution/calibration/"),
        ("exports", lambda rng: f"{big}/exports/"),
        ("uploads", lambda rng: f"{big}/uploads/"),
        ("overview (small project)", lambda rng: f"{small}/"),
        ("rollout page (small project)", lambda rng: f"{small}/rollouts/{own(rng)}/"),
        ("misbehaviours (small project)", lambda rng: f"{small}/misbehaviours/"),
        ("misbehaviour detail (small project)", lambda rng: f"{small}/misbehaviours/{mis(rng)}/"),
        ("misbehaviour map (small project)", lambda rng: f"{small}/misbehaviours/map/"),
        ("taxonomy (small project)", lambda rng: f"{small}/misbehaviours/taxonomy/"),
        ("calibration (small project)", lambda rng: f"{small}/attribution/calibration/"),
        ("uploads (small project, during the uploads)", lambda rng: f"{small}/uploads/"),
    ]  # fmt: skip


def browse(
    number: int, base: str, session: requests.Session, plan: list, stop_at: float, rec: Recorder
) -> None:
    rng = random.Random(SEED * 1000 + number)
    anonymous = requests.Session()
    # Start spread over the first think time, as users do not all click at the same moment.
    time.sleep(rng.uniform(0, THINK_S[1]))
    while time.monotonic() < stop_at:
        if rng.random() < 1 / (len(plan) + 1):
            rec.timed_get(anonymous, base, BASELINE, "/login/")
        else:
            name, url = rng.choice(plan)
            rec.timed_get(session, base, name, url(rng))
        time.sleep(rng.uniform(*THINK_S))


def sessions_ready(base: str, password: str, plan: list) -> tuple[list, Recorder]:
    """Every user logged in (a password hash each, on purpose slow) and every page asked
    twice (each gunicorn process imports its modules on first use), before the clock runs;
    then every page three times by one user alone: what a page costs without the load."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        sessions = list(pool.map(lambda _: log_in(base, password), range(USERS)))
    rng, warm, alone = random.Random(SEED), Recorder(), Recorder()
    for name, url in plan * 2:
        warm.timed_get(sessions[0], base, name, url(rng))
    for name, url in [(BASELINE, lambda _: "/login/"), *plan] * ALONE_RUNS:
        alone.timed_get(
            requests.Session() if name == BASELINE else sessions[0], base, name, url(rng)
        )
    if any(warm.errors.values()) or any(alone.errors.values()):
        raise RuntimeError(f"warm-up failed: {dict(warm.errors)} {dict(alone.errors)}")
    return sessions, alone


def upload_files() -> Iterator[Path]:
    yield from sorted((SHARED_DATA / UPLOAD_DIR).glob("*.json"), key=lambda p: int(p.stem))


def upload_loop(number: int, base: str, token: str, files: Iterator[Path], lock: threading.Lock,
                stop_at: float, outcomes: list[dict[str, Any]]) -> None:  # fmt: skip
    """Upload one file, follow it until it is done, then the next, while the load lasts."""
    rng = random.Random(SEED * 7 + number)
    headers = {"Authorization": f"Bearer {token}"}
    while time.monotonic() < stop_at:
        with lock:
            path = next(files, None)
        if path is None:
            return
        started = time.perf_counter()
        # Recorded before the request: an upload cut short still counts, as not done.
        outcome: dict[str, Any] = {"file": path.name, "http": 0, "status": "not sent"}
        outcomes.append(outcome)
        try:
            with path.open("rb") as stream:
                response = requests.post(
                    f"{base}/api/v1/projects/uploads/uploads", headers=headers,
                    files={"file": (path.name, stream)}, timeout=REQUEST_TIMEOUT_S,
                )  # fmt: skip
            outcome.update(http=response.status_code, status="refused")
            outcome["post_ms"] = round(1000 * (time.perf_counter() - started), 1)
            if response.status_code in (200, 202):
                status, status_url = response.json()["status"], response.json()["status_url"]
                deadline = stop_at + UPLOAD_GRACE_S
                while status in ("queued", "running") and time.monotonic() < deadline:
                    time.sleep(0.5)
                    polled = requests.get(status_url, headers=headers, timeout=REQUEST_TIMEOUT_S)
                    status = polled.json()["status"]
                outcome["status"] = status
        except (requests.RequestException, ValueError, KeyError) as exc:
            outcome["status"] = f"{type(exc).__name__}: {exc}"[:200]
        outcome["done_s"] = round(time.perf_counter() - started, 2)
        time.sleep(rng.uniform(*UPLOAD_PAUSE_S))


def run_load(base: str, ids: dict[str, Any], duration: float, password: str,
             cpu: Callable[[], dict[str, float]]) -> dict[str, Any]:  # fmt: skip
    rec, outcomes, lock = Recorder(), [], threading.Lock()
    plan = page_plan(ids)
    sessions, alone = sessions_ready(base, password, plan)
    files = upload_files()
    cpu_before = cpu()
    started = time.monotonic()
    stop_at = started + duration
    threads = [
        threading.Thread(target=browse, args=(n, base, sessions[n], plan, stop_at, rec))
        for n in range(USERS)
    ]
    threads += [threading.Thread(target=upload_loop, args=(n, base, ids["token"], files, lock, stop_at, outcomes)) for n in range(UPLOADERS)]  # fmt: skip
    for thread in threads:
        thread.daemon = True  # a hung request must not keep the benchmark alive
        thread.start()
    deadline = stop_at + UPLOAD_GRACE_S + 2 * REQUEST_TIMEOUT_S
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))
    return {"samples": rec.samples, "errors": rec.errors, "retried": rec.retried, "uploads": outcomes, "alone": alone.samples,
            "browse_seconds": duration, "wall_seconds": round(time.monotonic() - started, 1),
            "cpu_seconds": cpu_used(cpu_before, cpu())}  # fmt: skip


# --- one run ------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    import psycopg

    from bench.pages import PASSWORD

    base_url = os.environ["FAULTLINE_BENCH_POSTGRES_URL"].rstrip("/")
    with tempfile.TemporaryDirectory(prefix="faultline-bench-load-") as tmp:
        var_dir = Path(tmp)
        database_url = fresh_database_url("postgres", var_dir, prefix="bench_load")
        database = database_url.rsplit("/", 1)[1]
        redis_port, web_port = free_port(), free_port()
        env = dict(os.environ)
        env.update(
            DATABASE_URL=database_url, FAULTLINE_VAR_DIR=str(var_dir),
            FAULTLINE_BROKER_URL=f"redis://127.0.0.1:{redis_port}/0",
            FAULTLINE_RESULT_BACKEND=f"redis://127.0.0.1:{redis_port}/1",
            FAULTLINE_CACHE_URL=f"redis://127.0.0.1:{redis_port}/2",
            FAULTLINE_SECRET_KEY="load-benchmark-" + os.urandom(16).hex(),
            DJANGO_SETTINGS_MODULE="faultline.settings",
        )  # fmt: skip
        services = Services(var_dir)
        try:
            services.start("redis", ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1",
                                     "--save", "", "--appendonly", "no", "--dir", str(var_dir)], env)  # fmt: skip
            wait_until(lambda: subprocess.run(["redis-cli", "-p", str(redis_port), "ping"],
                                              capture_output=True).returncode == 0, seconds=20, what="redis")  # fmt: skip
            print(f"generating {args.rollouts:,} rollouts, {args.steps:,} steps...", flush=True)
            prepared = subprocess.run(
                [PYTHON, str(Path(__file__).with_name("load_projects.py")), "--rollouts", str(args.rollouts), "--steps", str(args.steps)],
                cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=1200,
            )  # fmt: skip
            match = re.search(r"^RESULT=(.*)$", prepared.stdout, re.MULTILINE)
            if prepared.returncode != 0 or not match:
                raise RuntimeError(
                    f"prepare failed:\n{prepared.stdout[-2000:]}\n{prepared.stderr[-4000:]}"
                )
            ids = json.loads(match.group(1))
            with psycopg.connect(base_url + "/postgres", autocommit=True) as conn:
                conn.execute(f"DROP ROLE IF EXISTS {WEB_ROLE}")  # left by an interrupted run
                conn.execute(f"CREATE ROLE {WEB_ROLE} LOGIN SUPERUSER")
                conn.execute(
                    f'ALTER ROLE {WEB_ROLE} IN DATABASE "{database}" SET log_min_duration_statement = {SLOW_STATEMENT_MS}'
                )
                data_directory = conn.execute("SHOW data_directory").fetchone()[0]  # type: ignore[index]
                log_path = Path(data_directory).parent / "log"
            log_offset = log_path.stat().st_size if log_path.exists() else 0
            web_env = dict(
                env, DATABASE_URL=database_url.replace("://postgres@", f"://{WEB_ROLE}@")
            )
            services.start("worker-ingest", worker_args("ingest"), env)
            services.start(
                "worker-analysis", worker_args("attribution,analysis,export,celery"), env
            )
            services.start("gunicorn", gunicorn_args(web_port), web_env)
            base = f"http://127.0.0.1:{web_port}"
            wait_until(lambda: answers(base + "/login/"), seconds=60, what="gunicorn")
            print(
                f"load: {USERS} users and {UPLOADERS} uploaders for {args.duration:.0f} s...",
                flush=True,
            )
            load_average = [round(x, 2) for x in os.getloadavg()]
            postmaster = postmaster_pid(data_directory)
            load = run_load(base, ids, args.duration, PASSWORD,
                            cpu=lambda: cpu_snapshot(services.groups, postmaster))  # fmt: skip
            load_average += [round(x, 2) for x in os.getloadavg()]
            slow = slow_statements(log_path, log_offset) if log_path.exists() else []
            trouble = services.trouble()
        finally:
            services.stop()
            with (
                contextlib.suppress(Exception),
                psycopg.connect(base_url + "/postgres", autocommit=True) as conn,
            ):
                conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
                conn.execute(f"DROP ROLE IF EXISTS {WEB_ROLE}")
    return {"machine": machine(), "quick": args.quick, "users": USERS, "uploaders": UPLOADERS,
            "think_seconds": THINK_S, "project": ids["project"], "small_project_rollouts": ids["small_rollouts"],
            "small_project_seconds": ids["small_project_seconds"],
            **summarise(load), "slow_statements": slow, "load_average_before_after": load_average, "service_trouble": trouble}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5k rollouts, 15 s, no docs update")
    parser.add_argument("--rollouts", type=int, default=ROLLOUTS)
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--duration", type=float, default=DURATION_S)
    args = parser.parse_args()
    if not os.environ.get("FAULTLINE_BENCH_POSTGRES_URL"):
        sys.exit("bench/load.py needs PostgreSQL: run it through scripts/bench.sh (make bench).")
    if args.quick:
        args.rollouts, args.steps, args.duration = QUICK_ROLLOUTS, QUICK_STEPS, QUICK_DURATION_S
    report = run(args)
    for name, page in report["pages"].items():
        print(
            f"  {name}: p50 {page['p50_ms']} ms, p95 {page['p95_ms']} ms, {page['errors']} errors"
        )
    print(f"  {report['requests_per_second']} requests/s; uploads {report['uploads_summary']}")
    path = write_report("load-quick" if args.quick else "load", report)
    print(f"wrote {path}")
    if not args.quick:
        print(f"updated {benchmarks_section_write('Load', markdown(report))}")


if __name__ == "__main__":
    main()
