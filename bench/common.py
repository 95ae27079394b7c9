"""Shared helpers for the benchmarks: corpora made from the real samples, timing, reports."""

from __future__ import annotations

import json
import os
import platform
import re
import resource
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(
    os.environ.get("FAULTLINE_DEMO_DATA", REPO_ROOT.parent / "shared" / "data")
).resolve()
RESULTS_DIR = REPO_ROOT / "bench-results"
PYTHON = str(REPO_ROOT / ".venv" / "bin" / "python")

sys.path.insert(0, str(REPO_ROOT))


def sample_records() -> list[Any]:
    """The real rollouts the corpora are made of: tau-bench airline and Who&When."""
    from ingest.parsers import get_parser

    records = []
    tau = SHARED_DATA / "tau_bench" / "historical_trajectories" / "gpt-4o-airline.json"
    with tau.open("rb") as stream:
        records.extend(get_parser("tau_bench").parse(stream, filename=tau.name))
    for path in sorted((SHARED_DATA / "who_and_when" / "Who&When").glob("*/*.json")):
        with path.open("rb") as stream:
            records.extend(get_parser("who_and_when").parse(stream, filename=path.name))
    return records


def cycle_records(target_steps: int) -> Iterator[Any]:
    """Copies of the real rollouts with fresh ids until ``target_steps`` steps were made."""
    import dataclasses

    base = sample_records()
    made = 0
    copy = 0
    while made < target_steps:
        for record in base:
            if made >= target_steps:
                return
            yield dataclasses.replace(record, external_id=f"{record.external_id}#copy{copy}")
            made += len(record.steps)
        copy += 1


def write_native_corpus(
    path: Path, *, target_steps: int = 0, target_bytes: int = 0
) -> dict[str, int]:
    """Write a native JSONL corpus of at least target_steps steps or target_bytes bytes."""
    from ingest.core.native_writer import trajectory_to_native

    steps = rollouts = 0
    with path.open("w", encoding="ascii") as out:
        for record in cycle_records(target_steps or 10**12):
            out.write(json.dumps(trajectory_to_native(record), ensure_ascii=True) + "\n")
            steps += len(record.steps)
            rollouts += 1
            if target_bytes and out.tell() >= target_bytes:
                break
    return {"steps": steps, "rollouts": rollouts, "bytes": path.stat().st_size}


def run_measured(args: list[str], *, env: dict[str, str]) -> dict[str, float]:
    """Run a command under /usr/bin/time -v; return wall seconds and peak RSS in MB."""
    started = time.perf_counter()
    result = subprocess.run(
        ["/usr/bin/time", "-v", *args], env=env, cwd=REPO_ROOT, capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(
            f"{' '.join(args)} failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
        )
    peak_kb = 0
    for line in result.stderr.splitlines():
        if "Maximum resident set size" in line:
            peak_kb = int(line.rsplit(":", 1)[1])
    return {"seconds": wall, "peak_rss_mb": peak_kb / 1024, "stdout": result.stdout[-500:]}


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def write_report(name: str, report: dict[str, Any]) -> Path:
    RESULTS_DIR.mkdir(exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps(report, indent=2, default=str))
    return path


def peak_rss_mb() -> float:
    """This process's peak resident memory so far (a high-water mark), in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def fresh_database_url(kind: str, var_dir: Path, *, prefix: str) -> str:
    """A new empty database: a SQLite file under ``var_dir``, or a database created on the
    PostgreSQL cluster named by FAULTLINE_BENCH_POSTGRES_URL."""
    if kind == "sqlite":
        return f"sqlite:///{var_dir / f'{prefix}.sqlite3'}"
    import psycopg

    base = os.environ["FAULTLINE_BENCH_POSTGRES_URL"].rstrip("/")
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base + "/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{base}/{name}"


def benchmarks_section_write(title: str, section: str) -> Path:
    """Replace (or append) the "## <title>" section of docs/benchmarks.md, keeping the rest."""
    path = REPO_ROOT / "docs" / "benchmarks.md"
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.MULTILINE | re.DOTALL)
    if pattern.search(text):
        text = pattern.sub(lambda _: section.rstrip() + "\n\n", text)
    else:
        text = text.rstrip() + "\n\n" + section.rstrip() + "\n"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text.rstrip() + "\n", encoding="utf-8")
    return path
