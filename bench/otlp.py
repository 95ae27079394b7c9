"""OTLP ingestion benchmark (issue 15): rollouts of 20 spans sent by the real OpenTelemetry
SDK (BatchSpanProcessor + OTLP/HTTP exporter, several client processes in parallel) to
Faultline served as `make run` serves it (redis-server, Celery beat, gunicorn with 2
workers x 4 threads), with its Celery workers split as docs/deploy.md advises and as
bench/load.py runs them (one on the `ingest` queue, which assembles the traces, one on the
others, which run the refresh that each closed rollout queues), on SQLite and on
PostgreSQL, measured from the first export until every span is queryable through the
REST API.

Run with `make bench` (or `.venv/bin/python bench/otlp.py [--quick]`, with
FAULTLINE_BENCH_POSTGRES_URL set for PostgreSQL). Loopback only; every process it starts
is stopped at the end. Each run is a fresh database and fresh services, in a child
process of its own (Django is set up once per process). Two sizes (200 and 2,000
rollouts) show whether memory grows with the spans. Writes bench-results/otlp.json (and
the "OTLP ingestion" section of docs/benchmarks.md unless --quick).

Clocks: t0 is when every client is told GO (its spans are made before; the exports start
at once). "acknowledged" is when the last export got its answer; "queryable" is when the
rollouts list of /api/v1 shows every rollout with every step (the poller first waits,
with a cheap database query, until no trace is pending, then reads the whole list);
"closed" is when every trace is closed (quiet time 1 s, closing sweep every 1 s, set for
the bench). The baseline is a bare bulk insert of the same span rows into the same
database, in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (  # noqa: E402
    PYTHON,
    REPO_ROOT,
    benchmarks_section_write,
    fresh_database_url,
    machine,
    write_report,
)
from bench.load_services import (  # noqa: E402
    Services,
    answers,
    free_port,
    gunicorn_args,
    wait_until,
    worker_args,
)
from bench.otlp_client import SPANS_PER_ROLLOUT, make_spans  # noqa: E402
from bench.otlp_report import (  # noqa: E402
    markdown,
    percentile,
    postgres_cpu_seconds,
    process_cpu,
    process_peaks,
    statuses,
)

SERVICE_NAMES = ["redis", "worker-ingest", "worker-other", "beat", "gunicorn"]

ROLLOUTS, QUICK_ROLLOUTS = 2_000, 200
INGEST_CONCURRENCY = os.cpu_count() or 1
CLIENTS = 3
SEED = 15
RUN_TIMEOUT_S = 900.0
OTHER_QUEUES = "attribution,analysis,export,celery"
ACCESS_FORMAT = "%(m)s %(U)s %(s)s %(D)s"


def cores_busy_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine so far, from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def cores_busy(before: tuple[int, int], after: tuple[int, int] | None) -> float | None:
    """How many of the machine's cores were busy on average between two readings."""
    if after is None or after[1] == before[1]:
        return None
    share = (after[0] - before[0]) / (after[1] - before[1])
    return round(share * (os.cpu_count() or 1), 2)


def expected_steps() -> int:
    """The steps one bench rollout becomes, by the receiver's own decode and assembly."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from ingest.core.otlp_receive import CONTENT_PROTOBUF, decode_request
    from ingest.core.otlp_stored import incoming_spans_read
    from ingest.core.otlp_trace import assemble_spans

    body = encode_spans(make_spans(0, 1, SEED)).SerializeToString()
    decoded = decode_request(body, CONTENT_PROTOBUF)
    received = incoming_spans_read(decoded.spans)
    return len(assemble_spans(received, trace_id=decoded.spans[0].trace_id).steps)


def api_rollouts(base: str, slug: str, token: str) -> list[dict[str, Any]]:
    headers = {"Authorization": f"Bearer {token}"}
    url: str | None = f"{base}/api/v1/projects/{slug}/rollouts?limit=500"
    rows: list[dict[str, Any]] = []
    while url:
        page = requests.get(url, headers=headers, timeout=60).json()
        rows.extend(page["results"])
        url = page["next"]
    return rows


def all_queryable(base: str, slug: str, token: str, rollouts: int, steps: int) -> bool:
    rows = api_rollouts(base, slug, token)
    return len(rows) == rollouts and all(row["step_count"] == steps for row in rows)


def details_complete(base: str, slug: str, token: str, steps: int) -> bool:
    """A few rollouts read one by one: the detail has every step too."""
    rows = api_rollouts(base, slug, token)
    headers = {"Authorization": f"Bearer {token}"}
    for row in random.Random(SEED).sample(rows, min(5, len(rows))):
        url = f"{base}/api/v1/projects/{slug}/rollouts/{row['external_id']}"
        if len(requests.get(url, headers=headers, timeout=60).json()["steps"]) != steps:
            return False
    return True


def baseline_insert(project_id: int, into_project_id: int) -> dict[str, float]:
    """The same span rows, inserted bare (one transaction, one executemany)."""
    from django.db import connection, transaction

    from ingest.models import ReceivedSpan

    table = connection.ops.quote_name(ReceivedSpan._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT trace_id, span_id, encoding, payload, received_at FROM {table} "
            "WHERE project_id = %s",
            [project_id],
        )
        rows = [(into_project_id, *row) for row in cursor.fetchall()]
    received = [(p, t, s, e, bytes(b), connection.ops.adapt_datetimefield_value(at)) for p, t, s, e, b, at in rows]  # fmt: skip
    sql = (
        f"INSERT INTO {table} (project_id, trace_id, span_id, encoding, payload, received_at) "
        "VALUES (%s, %s, %s, %s, %s, %s)"
    )
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            import psycopg

            # Values bound on the server, as the receiver sends them (ingest.otlp.services).
            with psycopg.Cursor(cursor.connection) as bound:
                bound.executemany(sql, received)
        else:
            cursor.executemany(sql, received)
    seconds = time.perf_counter() - started
    return {"rows": len(received), "seconds": round(seconds, 3),
            "spans_per_s": round(len(received) / seconds, 1)}  # fmt: skip


def start_clients(
    base: str, token: str, rollouts: int, clients: int
) -> list[subprocess.Popen[str]]:
    shares = [rollouts // clients + (1 if n < rollouts % clients else 0) for n in range(clients)]
    processes, first = [], 0
    for share in shares:
        processes.append(
            subprocess.Popen(
                [PYTHON, str(Path(__file__).with_name("otlp_client.py")),
                 "--endpoint", f"{base}/v1/traces", "--token", token,
                 "--first", str(first), "--rollouts", str(share), "--seed", str(SEED)],
                cwd=REPO_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                env={k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
            )
        )  # fmt: skip
        first += share
    for process in processes:
        assert process.stdout is not None
        if process.stdout.readline().strip() != "READY":
            raise RuntimeError("a client did not get ready")
    return processes


def one_run(kind: str, rollouts: int, clients: int) -> dict[str, Any]:
    """One measured run on a fresh database (the child process's whole life)."""
    with tempfile.TemporaryDirectory(prefix="faultline-bench-otlp-") as tmp:
        var_dir = Path(tmp)
        redis_port, web_port = free_port(), free_port()
        database_url = fresh_database_url(kind, var_dir, prefix="bench_otlp")
        os.environ.update(
            DATABASE_URL=database_url, FAULTLINE_VAR_DIR=str(var_dir),
            FAULTLINE_BROKER_URL=f"redis://127.0.0.1:{redis_port}/0",
            FAULTLINE_RESULT_BACKEND=f"redis://127.0.0.1:{redis_port}/1",
            FAULTLINE_CACHE_URL=f"redis://127.0.0.1:{redis_port}/2",
            FAULTLINE_SECRET_KEY="otlp-benchmark-" + os.urandom(16).hex(),
            DJANGO_SETTINGS_MODULE="faultline.settings",
            FAULTLINE_OTLP_CLOSE_AFTER_SECONDS="1", FAULTLINE_OTLP_CLOSE_INTERVAL_S="1",
        )  # fmt: skip
        import django

        django.setup()
        from django.contrib.auth import get_user_model
        from django.core.management import call_command
        from django.db.models import Max

        from ingest.models import LiveTrace, LiveTraceState, ReceivedSpan
        from projects.services import project_create
        from projects.tokens import project_token_issue

        call_command("migrate", verbosity=0)
        owner = get_user_model().objects.create_user("bench", password="bench-otlp-1")
        project = project_create(name="OTLP bench", owner=owner, slug="otlp")
        token = project_token_issue(project=project)
        steps = expected_steps()
        services = Services(var_dir)
        env = dict(os.environ)
        base = f"http://127.0.0.1:{web_port}"
        try:
            services.start("redis", ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1",
                                     "--save", "", "--appendonly", "no", "--dir", str(var_dir)], env)  # fmt: skip
            wait_until(lambda: subprocess.run(["redis-cli", "-p", str(redis_port), "ping"],
                                              capture_output=True).returncode == 0, seconds=20, what="redis")  # fmt: skip
            # As docs/deploy.md sizes it: the ingest queue's pool has one process per core.
            services.start("worker-ingest", worker_args("ingest", INGEST_CONCURRENCY), env)
            services.start("worker-other", worker_args(OTHER_QUEUES), env)
            services.start("beat", [PYTHON, "-m", "celery", "-A", "faultline", "beat", "--loglevel=WARNING",
                                    f"--schedule={var_dir / 'celerybeat-schedule'}", "--pidfile="], env)  # fmt: skip
            access_log = var_dir / "access.log"
            services.start("gunicorn", [*gunicorn_args(web_port), "--access-logfile", str(access_log),
                                        "--access-logformat", ACCESS_FORMAT], env)  # fmt: skip
            wait_until(lambda: answers(base + "/login/"), seconds=60, what="gunicorn")
            for _ in range(8):  # every gunicorn process has imported the receiver
                requests.post(base + "/api/v1/otlp/v1/traces", data=b"", timeout=30,
                              headers={"Content-Type": "application/x-protobuf", "Authorization": f"Bearer {token}"})  # fmt: skip
            warm_lines = len(access_log.read_text().splitlines())
            processes = start_clients(base, token, rollouts, clients)
            cpu_before = {
                **process_cpu(services.processes, SERVICE_NAMES),
                "postgres": postgres_cpu_seconds(),
            }
            load_average = [round(x, 2) for x in os.getloadavg()]
            busy_before = cores_busy_jiffies()
            t0 = time.time()
            for process in processes:
                assert process.stdin is not None
                process.stdin.write("GO\n")
                process.stdin.flush()
            queryable_at = closed_at = 0.0
            busy_until_queryable: tuple[int, int] | None = None
            traces = LiveTrace.objects.filter(project=project)
            deadline = time.monotonic() + RUN_TIMEOUT_S
            while not (queryable_at and closed_at) and time.monotonic() < deadline:
                sent = all(process.poll() is not None for process in processes)
                if (not queryable_at and sent and traces.count() == rollouts
                        and not traces.filter(pending=True).exists()
                        and all_queryable(base, project.slug, token, rollouts, steps)):  # fmt: skip
                    queryable_at = time.time()
                    busy_until_queryable = cores_busy_jiffies()
                if not closed_at and traces.filter(state=LiveTraceState.CLOSED).count() == rollouts:
                    closed_at = time.time()
                time.sleep(0.1)
            assembled = traces.aggregate(last=Max("assembled_at"))["last"]
            last_assembled = round(assembled.timestamp() - t0, 2) if assembled else None
            # How long each trace waited from its last span to its assembly (seconds).
            rows = [
                (last, done)
                for last, done in traces.values_list("last_span_at", "assembled_at")
                if done
            ]
            lags = sorted((done - last).total_seconds() for last, done in rows)
            assembled_times = [done.timestamp() for _, done in rows]
            reports = [json.loads(process.communicate(timeout=60)[0].strip().splitlines()[-1]) for process in processes]  # fmt: skip
            details_ok = details_complete(base, project.slug, token, steps)
            cpu_after = {
                **process_cpu(services.processes, SERVICE_NAMES),
                "postgres": postgres_cpu_seconds(),
            }
            peaks = process_peaks(services.processes, SERVICE_NAMES)
            access = access_log.read_text().splitlines()[warm_lines:]
            trouble = services.trouble()
            load_average += [round(x, 2) for x in os.getloadavg()]
        finally:
            services.stop()
        spans_sent = sum(report["spans"] for report in reports)
        spans_stored = ReceivedSpan.objects.filter(project=project).count()
        exports = [export for report in reports for export in report["exports"]]
        acknowledged_at = max(end for _, end, _, _ in exports)
        other = project_create(name="OTLP bench baseline", owner=owner, slug="baseline")
        baseline = baseline_insert(project.pk, other.pk)
    if kind == "postgres":
        import psycopg
        from django.db import connection

        connection.close()
        name = database_url.rsplit("/", 1)[1]
        with psycopg.connect(os.environ["FAULTLINE_BENCH_POSTGRES_URL"].rstrip("/") + "/postgres", autocommit=True) as conn:  # fmt: skip
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def rate(at: float) -> float | None:
        return round(spans_sent / (at - t0), 1) if at else None

    end_to_end = rate(queryable_at)
    return {
        "database": kind, "rollouts": rollouts, "spans_per_rollout": SPANS_PER_ROLLOUT,
        "steps_per_rollout": steps, "clients": clients, "spans_sent": spans_sent,
        "spans_stored": spans_stored, "spans_lost": spans_sent - spans_stored,
        "exports": len(exports), "exports_failed": sum(1 for *_, ok in exports if not ok),
        "seconds_acknowledged": round(acknowledged_at - t0, 2),
        "seconds_queryable": round(queryable_at - t0, 2) if queryable_at else None,
        "seconds_closed": round(closed_at - t0, 2) if closed_at else None,
        "seconds_last_assembled": last_assembled,
        "cores_busy_until_queryable": cores_busy(busy_before, busy_until_queryable),
        "assembly_lag_s": {q: round(percentile(lags, q) or 0.0, 3) for q in (50, 95, 100)},
        "share_assembled_by_acknowledged": round(
            sum(1 for at in assembled_times if at <= acknowledged_at) / max(1, len(assembled_times)), 3
        ),
        "spans_per_s_acknowledged": rate(acknowledged_at), "spans_per_s_end_to_end": end_to_end,
        "spans_per_s_closed": rate(closed_at),
        "export_p50_ms": percentile([1000 * (end - start) for start, end, _, _ in exports], 50),
        "export_p95_ms": percentile([1000 * (end - start) for start, end, _, _ in exports], 95),
        "server_statuses": statuses(access), "details_complete": details_ok,
        "baseline_bulk_insert": baseline,
        "ratio_end_to_end_to_baseline": round(end_to_end / baseline["spans_per_s"], 3) if end_to_end else None,
        "ratio_acknowledged_to_baseline": round((rate(acknowledged_at) or 0) / baseline["spans_per_s"], 3),
        "cpu_seconds": {**{name: round(cpu_after[name] - cpu_before[name], 2) for name in cpu_after},
                        "clients": [report["cpu_seconds"] for report in reports]},
        "peak_rss_mb": {**peaks, "clients": [round(r["peak_rss_mb"], 1) for r in reports]},
        "load_average_before_after": load_average, "service_trouble": trouble,
    }  # fmt: skip


def run_child(kind: str, rollouts: int, clients: int) -> dict[str, Any]:
    print(f"== {kind}: {rollouts:,} rollouts, {clients} clients ==", flush=True)
    result = subprocess.run(
        [PYTHON, __file__, "--one", kind, "--rollouts", str(rollouts), "--clients", str(clients)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT_S + 300,
    )  # fmt: skip
    match = re.search(r"^RESULT=(.*)$", result.stdout, re.MULTILINE)
    if result.returncode != 0 or not match:
        raise RuntimeError(f"run failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}")
    run = json.loads(match.group(1))
    print(f"  end to end {run['spans_per_s_end_to_end']} spans/s, acknowledged "
          f"{run['spans_per_s_acknowledged']} spans/s, export p95 {run['export_p95_ms']} ms, "
          f"lost {run['spans_lost']}, baseline {run['baseline_bulk_insert']['spans_per_s']} spans/s, "
          f"statuses {run['server_statuses']}", flush=True)  # fmt: skip
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 rollouts only, no docs update")
    parser.add_argument("--clients", type=int, default=CLIENTS)
    parser.add_argument("--rollouts", type=int, default=0, help="one size instead of both")
    parser.add_argument("--databases", default="sqlite,postgres")
    parser.add_argument("--one", choices=("sqlite", "postgres"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print("RESULT=" + json.dumps(one_run(args.one, args.rollouts, args.clients)), flush=True)
        return
    kinds = args.databases.split(",")
    if "postgres" in kinds and not os.environ.get("FAULTLINE_BENCH_POSTGRES_URL"):
        print("FAULTLINE_BENCH_POSTGRES_URL is not set: SQLite only.", flush=True)
        kinds = [kind for kind in kinds if kind != "postgres"]
    sizes = [args.rollouts] if args.rollouts else [QUICK_ROLLOUTS] if args.quick else [QUICK_ROLLOUTS, ROLLOUTS]  # fmt: skip
    runs = [run_child(kind, size, args.clients) for kind in kinds for size in sizes]
    report = {"machine": machine(), "quick": args.quick, "goal_spans_per_s": 10_000, "runs": runs}
    path = write_report("otlp-quick" if args.quick or args.rollouts else "otlp", report)
    print(f"wrote {path}")
    if not (args.quick or args.rollouts):
        print(f"updated {benchmarks_section_write('OTLP ingestion', markdown(report))}")


if __name__ == "__main__":
    main()
