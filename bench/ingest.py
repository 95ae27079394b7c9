"""Ingest benchmark (issue 3): throughput against a bare insert, memory on 1 GB files, growth.

Run with `make bench` (or `.venv/bin/python bench/ingest.py [--quick]`). Writes
bench-results/ingest.json. Every figure is measured in this run; throughput is reported as
a ratio against a bare bulk insert of the same rows made in the same run (executemany on
SQLite, COPY on PostgreSQL), because these machines are noisy.

Set FAULTLINE_BENCH_POSTGRES_URL (postgres://user@host:port) to include PostgreSQL;
scripts/bench.sh starts a throwaway cluster and sets it.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
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
    fresh_database_url,
    machine,
    run_measured,
    write_native_corpus,
    write_report,
)
from ingest.columns import STEP_COLUMNS  # noqa: E402


def _env(db_url: str, var_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=db_url,
        FAULTLINE_VAR_DIR=str(var_dir),
        FAULTLINE_CACHE_URL="",
        DJANGO_SETTINGS_MODULE="faultline.settings",
    )
    return env


def _prepare(db_url: str, var_dir: Path) -> dict[str, str]:
    env = _env(db_url, var_dir)
    manage = [PYTHON, str(REPO_ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--no-input", "-v0"], env=env, check=True, cwd=REPO_ROOT)
    subprocess.run(
        [
            *manage,
            "shell",
            "-c",
            "from django.contrib.auth import get_user_model as g; g().objects.create_user('bench')",
        ],
        env=env,
        check=True,
        cwd=REPO_ROOT,
        capture_output=True,
    )
    return env


def pipeline_ingest(corpus: Path, kind: str, work: Path, fmt: str = "") -> dict[str, Any]:
    """The full pipeline (store, detect, parse, validate, write in one transaction) in a
    worker-like process, timed from outside; peak RSS from /usr/bin/time."""
    var_dir = work / f"var-{kind}-{uuid.uuid4().hex[:6]}"
    var_dir.mkdir()
    env = _prepare(fresh_database_url(kind, var_dir, prefix="bench"), var_dir)
    args = [
        PYTHON,
        str(REPO_ROOT / "manage.py"),
        "ingest",
        str(corpus),
        "--project",
        "bench",
        "--sync",
        "--no-refresh",
    ]
    if fmt:
        args += ["--format", fmt]
    result = run_measured(args, env=env)
    marker = "ingest seconds: "
    inner = [
        float(line.split(marker)[1]) for line in result["stdout"].splitlines() if marker in line
    ]
    result["ingest_seconds"] = inner[0] if inner else result["seconds"]
    return result


def _rows(corpus: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Pre-built rows for the bare baseline: the same trajectories and steps."""
    from ingest.parsers import get_parser

    trajectories, steps = [], []
    with corpus.open("rb") as stream:
        for number, record in enumerate(
            get_parser("native").parse(stream, filename=corpus.name), 1
        ):
            trajectories.append(
                (
                    number,
                    record.external_id,
                    record.task_id,
                    record.task_text,
                    record.environment,
                    record.policy_model,
                    record.outcome,
                    record.reward,
                    len(record.steps),
                    json.dumps(record.metadata),
                )
            )
            for step in record.steps:
                steps.append(
                    (
                        number,
                        step.index,
                        step.agent,
                        step.role,
                        step.kind,
                        step.content,
                        step.tool_name,
                        json.dumps(step.tool_args),
                        step.tool_call_id,
                        step.is_error,
                        step.is_mutating,
                        step.started_at.isoformat() if step.started_at else None,
                        step.ended_at.isoformat() if step.ended_at else None,
                        json.dumps(step.metadata),
                    )
                )
    return trajectories, steps


TRAJ_DDL = (
    "CREATE TABLE bare_traj (id bigint PRIMARY KEY, external_id varchar(255), task_id varchar(255), "
    "task_text text, environment varchar(100), policy_model varchar(100), outcome varchar(10), "
    "reward double precision, step_count integer, metadata {json})"
)
STEP_DDL = (
    "CREATE TABLE bare_step (id {serial} PRIMARY KEY, trajectory_id bigint REFERENCES bare_traj(id), "
    '"index" integer, agent varchar(200), role varchar(40), kind varchar(20), content text, '
    "tool_name varchar(200), tool_args {json}, tool_call_id varchar(200), is_error boolean, "
    "is_mutating boolean, started_at {time}, ended_at {time}, metadata {json}, "
    'UNIQUE (trajectory_id, "index"))'
)
TRAJ_COLS = "id, external_id, task_id, task_text, environment, policy_model, outcome, reward, step_count, metadata"
STEP_COLS = ", ".join(f'"{c}"' if c == "index" else c for c in STEP_COLUMNS)


def bare_insert(corpus: Path, kind: str, work: Path) -> dict[str, Any]:
    trajectories, steps = _rows(corpus)
    if kind == "sqlite":
        path = work / f"bare-{uuid.uuid4().hex[:6]}.sqlite3"
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(TRAJ_DDL.format(json="text"))
        conn.execute(STEP_DDL.format(serial="integer", json="text", time="text"))
        started = time.perf_counter()
        with conn:
            conn.executemany(
                f"INSERT INTO bare_traj ({TRAJ_COLS}) VALUES ({','.join('?' * 10)})", trajectories
            )
            conn.executemany(
                f"INSERT INTO bare_step ({STEP_COLS}) VALUES ({','.join('?' * 14)})", steps
            )
        seconds = time.perf_counter() - started
        conn.close()
    else:
        import psycopg

        url = fresh_database_url("postgres", work, prefix="bench")
        with psycopg.connect(url) as conn:
            conn.execute(TRAJ_DDL.format(json="jsonb"))
            conn.execute(STEP_DDL.format(serial="bigserial", json="jsonb", time="timestamptz"))
            conn.commit()
            started = time.perf_counter()
            with conn.cursor() as cur:
                with cur.copy(f"COPY bare_traj ({TRAJ_COLS}) FROM STDIN") as copy:
                    for row in trajectories:
                        copy.write_row(row)
                with cur.copy(f"COPY bare_step ({STEP_COLS}) FROM STDIN") as copy:
                    for row in steps:
                        copy.write_row(row)
            conn.commit()
            seconds = time.perf_counter() - started
    return {"seconds": seconds, "steps": len(steps), "rollouts": len(trajectories)}


def write_otlp_corpus(path: Path, *, target_bytes: int) -> dict[str, int]:
    """An OTLP/JSON file with GenAI attributes made from the real rollouts: one document,
    one resourceSpans block per trace (as a collector's batches would write it), with the
    spans of each trace in reverse order so parents come after their children."""
    from bench.common import cycle_records

    def attr(key: str, value: Any) -> dict[str, Any]:
        if isinstance(value, bool):
            return {"key": key, "value": {"boolValue": value}}
        if isinstance(value, int):
            return {"key": key, "value": {"intValue": str(value)}}
        return {"key": key, "value": {"stringValue": str(value)}}

    spans_written = traces = 0
    with path.open("w", encoding="ascii") as out:
        out.write('{"resourceSpans": [')
        block_head = (
            '{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": '
            '"bench-agent"}}]}, "scopeSpans": [{"scope": {"name": "bench"}, "spans": ['
        )
        for record in cycle_records(10**12):
            trace_id = uuid.uuid4().hex
            root_id = uuid.uuid4().hex[:16]
            t0 = 1_700_000_000_000_000_000 + traces * 10**12
            spans = [
                {
                    "traceId": trace_id,
                    "spanId": root_id,
                    "name": "invoke_agent bench",
                    "startTimeUnixNano": str(t0),
                    "endTimeUnixNano": str(t0 + 10**10),
                    "attributes": [
                        attr("gen_ai.operation.name", "invoke_agent"),
                        attr("gen_ai.agent.name", "bench"),
                    ],
                    "status": {"code": 2 if record.outcome == "failure" else 1},
                }
            ]
            for step in record.steps:
                if step.kind == "tool_result":
                    continue
                start = t0 + (step.index + 1) * 10**6
                if step.kind == "tool_call":
                    attrs = [
                        attr("gen_ai.operation.name", "execute_tool"),
                        attr("gen_ai.tool.name", step.tool_name),
                        attr("gen_ai.tool.call.arguments", json.dumps(step.tool_args)),
                    ]
                else:
                    message = [
                        {"role": step.role, "parts": [{"type": "text", "content": step.content}]}
                    ]
                    attrs = [
                        attr("gen_ai.operation.name", "chat"),
                        attr("gen_ai.output.messages", json.dumps(message)),
                    ]
                spans.append(
                    {
                        "traceId": trace_id,
                        "spanId": uuid.uuid4().hex[:16],
                        "parentSpanId": root_id,
                        "name": step.kind,
                        "startTimeUnixNano": str(start),
                        "endTimeUnixNano": str(start + 1000),
                        "attributes": attrs,
                        "status": {"code": 0},
                    }
                )
            out.write(("," if traces else "") + block_head)
            out.write(",".join(json.dumps(span, ensure_ascii=True) for span in reversed(spans)))
            out.write("]}]}")
            spans_written += len(spans)
            traces += 1
            if out.tell() >= target_bytes:
                break
        out.write("]}\n")
    return {"spans": spans_written, "traces": traces, "bytes": path.stat().st_size}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--work", default="", help="scratch folder (default: a temp dir)")
    options = parser.parse_args()
    kinds = ["sqlite"] + (["postgres"] if os.environ.get("FAULTLINE_BENCH_POSTGRES_URL") else [])
    growth_sizes = [2_000, 10_000] if options.quick else [10_000, 100_000, 1_000_000]
    throughput_steps = 10_000 if options.quick else 200_000
    memory_bytes = 20 * 1024**2 if options.quick else 1024**3

    work = Path(options.work or tempfile.mkdtemp(prefix="faultline-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"machine": machine(), "throughput": {}, "growth": {}, "memory": {}}

    corpus = work / "throughput.jsonl"
    size = write_native_corpus(corpus, target_steps=throughput_steps)
    for kind in kinds:
        bare = bare_insert(corpus, kind, work)
        full = pipeline_ingest(corpus, kind, work)
        report["throughput"][kind] = {
            "corpus": size,
            "pipeline_steps_per_s": size["steps"] / full["ingest_seconds"],
            "bare_insert_steps_per_s": size["steps"] / bare["seconds"],
            "ratio_to_bare": bare["seconds"] / full["ingest_seconds"],
            "pipeline_seconds": full["ingest_seconds"],
            "bare_seconds": bare["seconds"],
            "pipeline_peak_rss_mb": full["peak_rss_mb"],
        }
        print(kind, json.dumps(report["throughput"][kind]), flush=True)

    for steps in growth_sizes:
        path = work / f"growth-{steps}.jsonl"
        made = write_native_corpus(path, target_steps=steps)
        run = pipeline_ingest(path, kinds[-1], work)
        report["growth"][str(steps)] = {
            "database": kinds[-1],
            "steps": made["steps"],
            "seconds": run["ingest_seconds"],
            "us_per_step": 1e6 * run["ingest_seconds"] / made["steps"],
            "peak_rss_mb": run["peak_rss_mb"],
        }
        print("growth", steps, json.dumps(report["growth"][str(steps)]), flush=True)
        path.unlink()

    big = work / "big.jsonl"
    made = write_native_corpus(big, target_bytes=memory_bytes)
    run = pipeline_ingest(big, kinds[-1], work)
    report["memory"]["native_jsonl"] = {
        "database": kinds[-1],
        **made,
        "seconds": run["ingest_seconds"],
        "peak_rss_mb": run["peak_rss_mb"],
    }
    print("memory jsonl", json.dumps(report["memory"]["native_jsonl"]), flush=True)
    big.unlink()
    otlp = work / "big-otlp.json"
    made = write_otlp_corpus(otlp, target_bytes=memory_bytes)
    try:
        run = pipeline_ingest(otlp, kinds[-1], work, fmt="otlp_json")
        report["memory"]["otlp_json"] = {
            "database": kinds[-1],
            **made,
            "seconds": run["ingest_seconds"],
            "peak_rss_mb": run["peak_rss_mb"],
        }
    except RuntimeError as exc:
        report["memory"]["otlp_json"] = {**made, "error": str(exc)[-800:]}
    print("memory otlp", json.dumps(report["memory"]["otlp_json"])[:1000], flush=True)
    otlp.unlink()
    print("wrote", write_report("ingest", report))


if __name__ == "__main__":
    main()
