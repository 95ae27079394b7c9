"""What bench/otlp.py reads off its processes and writes down: peak memory of every process
of a service, the receiver's statuses, percentiles, and the docs section."""

from __future__ import annotations

import math
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

GOAL_SPANS_PER_S = 10_000


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile.

    >>> percentile([1.0, 2.0, 3.0, 4.0], 50)
    2.0
    """
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)], 1)


def _group_members(group: int) -> list[tuple[int, int]]:
    """(pid, parent pid) of the live processes of a process group."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group:
            members.append((int(stat.parent.name), int(fields[1])))
    return members


def _peak_mb(pid: int) -> float:
    """The process's peak resident set (VmHWM) so far, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def process_peaks(processes: list[subprocess.Popen[bytes]], names: list[str]) -> dict[str, Any]:
    """Peak RSS of each service's main process and of each of its children (gunicorn's
    workers, Celery's pool process), read before the services are stopped."""
    peaks: dict[str, Any] = {}
    for name, process in zip(names, processes):
        members = _group_members(process.pid)
        peaks[name] = _peak_mb(process.pid) if any(p == process.pid for p, _ in members) else None
        children = sorted(pid for pid, parent in members if parent == process.pid)
        if children:
            peaks[f"{name} children"] = [_peak_mb(pid) for pid in children]
    return peaks


def statuses(access_lines: list[str]) -> dict[str, int]:
    """How many OTLP requests got each status (gunicorn's access log: method path status)."""
    counted: Counter[str] = Counter()
    for line in access_lines:
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "/v1/traces":  # the warm-up goes to /api/v1/otlp
            counted[parts[2]] += 1
    return dict(sorted(counted.items()))


def _row(run: dict[str, Any]) -> str:
    baseline = run["baseline_bulk_insert"]["spans_per_s"]
    return (
        f"| {run['database']} | {run['rollouts']:,} x {run['spans_per_rollout']} = "
        f"{run['spans_sent']:,} | {run['spans_per_s_end_to_end']:,} | "
        f"{run['spans_per_s_acknowledged']:,} | {run['spans_per_s_closed']:,} | "
        f"{run['export_p50_ms']} / {run['export_p95_ms']} | {baseline:,} | "
        f"{run['ratio_end_to_end_to_baseline']} | {run['ratio_acknowledged_to_baseline']} | "
        f"{run['spans_lost']} | {run['server_statuses']} |"
    )


def _memory_row(run: dict[str, Any]) -> str:
    peaks = run["peak_rss_mb"]
    return (
        f"| {run['database']} | {run['rollouts']:,} | "
        f"{peaks.get('gunicorn children')} | {peaks.get('worker')} / "
        f"{peaks.get('worker children')} | {peaks.get('beat')} | {peaks['clients']} |"
    )


def markdown(report: dict[str, Any]) -> str:
    runs = report["runs"]
    lines = [
        "## OTLP ingestion",
        "",
        f"`bench/otlp.py`, run on {report['machine']['date']} ({report['machine']['cpus']} "
        "cores, shared by everything below). Rollouts of 20 spans (an `invoke_agent` root, "
        "children alternating `chat` and `execute_tool`, 500-1,000 characters of output each, "
        "GenAI attributes) made by the real OpenTelemetry SDK in "
        f"{runs[0]['clients']} client processes and sent in one burst through its "
        "BatchSpanProcessor and OTLP/HTTP exporter (protobuf, batches of 512) to the product "
        "as `make run` starts it: gunicorn 2 workers x 4 threads, one Celery worker on every "
        "queue, Celery beat, redis-server; quiet time before closing 1 s for the bench. "
        "Clocks start when the clients are told to send. *End to end*: until the REST API's "
        "rollouts list shows every rollout with all its steps. *Acknowledged*: until the last "
        "export got its 200. *Closed*: until every trace is closed. Baseline: a bare bulk "
        "insert (one transaction, one executemany) of the same span rows into the same "
        "database in the same run; ratios are spans/s against it.",
        "",
        "| database | spans | end to end spans/s | acknowledged spans/s | closed spans/s | "
        "export p50 / p95 ms | baseline spans/s | end to end / baseline | acknowledged / "
        "baseline | spans lost | receiver statuses |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *(_row(run) for run in runs),
        "",
        "Peak resident memory (MB) of each process, by size of the run (flat in the number "
        "of spans when the two sizes match):",
        "",
        "| database | rollouts | gunicorn workers | Celery worker / pool | beat | clients |",
        "|---|---|---|---|---|---|",
        *(_memory_row(run) for run in runs),
        "",
    ]
    postgres = [run for run in runs if run["database"] == "postgres"]
    if postgres:
        best = max(postgres, key=lambda run: run["rollouts"])
        rate = best["spans_per_s_end_to_end"] or 0
        verdict = "met" if rate >= GOAL_SPANS_PER_S else "missed"
        lines.append(
            f"Goal (issue 15): at least {GOAL_SPANS_PER_S:,} spans/s end to end on PostgreSQL: "
            f"**{verdict}** ({rate:,} spans/s with {best['spans_sent']:,} spans). Spans lost: "
            f"{sum(run['spans_lost'] for run in runs)} in all runs (stored rows counted "
            "against spans sent)."
        )
    return "\n".join(lines) + "\n"
