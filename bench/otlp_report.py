"""What bench/otlp.py reads off its processes and writes down: peak memory of every process
of a service, the receiver's statuses, percentiles, and the docs section."""

from __future__ import annotations

import json
import math
import os
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

GOAL_SPANS_PER_S = 10_000
RESULTS = Path(__file__).resolve().parent.parent / "bench-results"
# Earlier runs of this bench kept to show what each round of changes did: before the
# first speed-ups (json_format's MessageToDict, three statements per request, ORM
# bulk_update of the claims), the last run before spans were stored as they arrived, and
# the last run before the third round.
BEFORE_SPEEDUPS = RESULTS / "otlp-before-speedups.json"
BEFORE_STORED_PAYLOADS = RESULTS / "otlp-session-4.json"
BEFORE_KEPT_CONNECTIONS = RESULTS / "otlp-session-5.json"
SECOND_ROUND = (
    "Second round (spans stored as they arrived and decoded only by the assembly, read "
    "straight from protobuf there; span rows COPY'd on PostgreSQL; new rollouts written as "
    "plain rows; the closing sweep closing its batch in one statement and leaving pending "
    "traces to their tasks; the ingest pool one process per core; the refresh of closed "
    "traces held back FAULTLINE_STREAM_REFRESH_DELAY_S, 10 s, so a burst is analysed once "
    "after it)"
)
SECOND_ROUND_NOTE = (
    "The two runs' baselines differ (the bare insert now binds its values on the server as "
    "the receiver does, and the rows are the stored payloads), so compare rates and CPU, "
    "not ratios."
)
THIRD_ROUND = (
    "Third round (Celery workers keep their database connections from task to task, where "
    "Celery's Django fixup had closed them around every task, so every assembly paid a new "
    "PostgreSQL backend; binary COPY; a request's spans copied straight into their table; "
    "the overview's counters moved by the closing sweep instead of by every assembly; no "
    "database check of a step's rollout and a span's project at COMMIT, and no second index "
    "on a step's rollout; cheaper reads of the stored spans)"
)
THIRD_ROUND_NOTE = (
    "Before this round the PostgreSQL CPU of the backends that each task opened and closed "
    "was not counted (they had exited when the bench read it: 2.3 s in one 40,000-span run), "
    "so the CPU per span of the earlier run is too low."
)


def cpu_per_span_us(run: dict[str, Any]) -> float:
    """CPU of every process of a run (clients included) per span sent, in microseconds.

    >>> cpu_per_span_us({"cpu_seconds": {"gunicorn": 1.0, "clients": [0.5, 0.5]}, "spans_sent": 4})
    500000.0
    """
    cpu = run["cpu_seconds"]
    total = sum(v for k, v in cpu.items() if k != "clients") + sum(cpu["clients"])
    return 1e6 * total / run["spans_sent"]


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


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process so far."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def postgres_cpu_seconds() -> float:
    """CPU time of every PostgreSQL server process on the machine (the bench's cluster)."""
    total = 0.0
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() == "postgres":
                total += _cpu_seconds(int(comm.parent.name))
        except OSError:
            continue
    return total


def process_cpu(processes: list[subprocess.Popen[bytes]], names: list[str]) -> dict[str, float]:
    """CPU seconds used so far by each service, all processes of its group together."""
    return {
        name: round(sum(_cpu_seconds(pid) for pid, _ in _group_members(process.pid)), 2)
        for name, process in zip(names, processes)
    }


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
        f"{run.get('seconds_last_assembled')} | {run['export_p50_ms']} / {run['export_p95_ms']} | {baseline:,} | "
        f"{run['ratio_end_to_end_to_baseline']} | {run['ratio_acknowledged_to_baseline']} | "
        f"{run['spans_lost']} | {run['server_statuses']} |"
    )


def _memory_row(run: dict[str, Any]) -> str:
    peaks = run["peak_rss_mb"]
    return (
        f"| {run['database']} | {run['rollouts']:,} | "
        f"{peaks.get('gunicorn children')} | {peaks.get('worker-ingest')} / "
        f"{peaks.get('worker-ingest children')} | {peaks.get('worker-other')} / "
        f"{peaks.get('worker-other children')} | {peaks.get('beat')} | {peaks['clients']} |"
    )


def _busy(run: dict[str, Any], cores: int) -> str:
    """How busy the cores were until the spans were queryable, and how long a trace
    waited from its last span to its assembly (median / max), when the run measured it."""
    busy, lag = run.get("cores_busy_until_queryable"), run.get("assembly_lag_s")
    if busy is None or not lag:
        return ""
    return (
        f"; cores busy {busy} of {cores} until queryable; a trace waited "
        f"{lag['50']} s (median) / {lag['100']} s (max) from its last span to its assembly"
    )


def _load(averages: list[float] | None) -> str:
    """The 1-minute load average before and after the run."""
    return f" [{averages[0]} -> {averages[3]}]" if averages and len(averages) >= 6 else ""


def _same_runs(
    before: dict[str, Any], runs: list[dict[str, Any]]
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(earlier run, run now) of the same database and size."""
    pairs = []
    for old in before["runs"]:
        now = [
            r for r in runs if (r["database"], r["rollouts"]) == (old["database"], old["rollouts"])
        ]
        if now:
            pairs.append((old, now[0]))
    return pairs


def _speedups(before: dict[str, Any], runs: list[dict[str, Any]]) -> str:
    """A sentence per database: end to end and acknowledged against the baseline, before
    the first speed-ups and after them (the largest runs of each)."""
    parts = [
        f"{old['database']}: end to end / baseline {old['ratio_end_to_end_to_baseline']} -> "
        f"{now['ratio_end_to_end_to_baseline']}, acknowledged / baseline "
        f"{old['ratio_acknowledged_to_baseline']} -> {now['ratio_acknowledged_to_baseline']}"
        for old, now in _same_runs(before, runs)
    ]
    return (
        "First speed-ups (protobuf turned into the OTLP/JSON shape without json_format's "
        "generic walk, one upsert per trace instead of three statements, the assembly's "
        "claims cleared with one UPDATE instead of an ORM bulk_update), measured by the same "
        f"bench just before them on {before['machine']['date']} "
        f"({before['runs'][0]['rollouts']:,} rollouts): " + "; ".join(parts) + "."
    )


def _round(title: str, note: str, before: dict[str, Any], runs: list[dict[str, Any]]) -> str:
    """One round of changes against the last run before it: end to end spans/s and the CPU
    every span cost, for each database and size both runs have."""
    parts = [
        f"{old['database']}, {old['rollouts']:,} rollouts: end to end "
        f"{old['spans_per_s_end_to_end']:,} -> {now['spans_per_s_end_to_end']:,} "
        f"spans/s, CPU per span {cpu_per_span_us(old):.0f} -> {cpu_per_span_us(now):.0f} us"
        for old, now in _same_runs(before, runs)
    ]
    return (
        f"{title}, against the run of {before['machine']['date']}: "
        + "; ".join(parts)
        + f". {note}"
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
        "as `make run` starts it (gunicorn 2 workers x 4 threads, Celery beat, redis-server), "
        "its Celery workers split as docs/deploy.md advises (one on `ingest`, which assembles "
        "the traces, with one pool process per core; one on the other queues, which close "
        "quiet traces and run the refresh that closing queues, 10 s after the first close so "
        "the traces closing meanwhile join it); quiet time before closing 1 s for the bench. "
        "Clocks start when the clients are told to send. *End to end*: until the REST API's "
        "rollouts list shows every rollout with all its steps. *Acknowledged*: until the last "
        "export got its 200. *Closed*: until every trace is closed. *Assembled*: when the "
        "last trace was assembled (seconds). Baseline: a bare bulk insert (one transaction, "
        "one executemany) of the same span rows into the same database in the same run; "
        "ratios are spans/s against it.",
        "",
        "| database | spans | end to end spans/s | acknowledged spans/s | closed spans/s | "
        "assembled s | export p50 / p95 ms | baseline spans/s | end to end / baseline | "
        "acknowledged / baseline | spans lost | receiver statuses |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
        *(_row(run) for run in runs),
        "",
        "Peak resident memory (MB) of each process, by size of the run (flat in the number "
        "of spans when the two sizes match):",
        "",
        "| database | rollouts | gunicorn workers | ingest worker / pool | other worker / pool "
        "| beat | clients |",
        "|---|---|---|---|---|---|---|",
        *(_memory_row(run) for run in runs),
        "",
    ]
    lines += [
        "Where the CPU went during each run (seconds; the machine's 2 cores were shared with "
        "other work, 1-minute load average before -> after in brackets):",
        "",
        *(
            f"- {run['database']}, {run['rollouts']:,} rollouts: "
            + ", ".join(f"{name} {value}" for name, value in run["cpu_seconds"].items())
            + _load(run.get("load_average_before_after"))
            + _busy(run, report["machine"]["cpus"])
            for run in runs
        ),
        "",
    ]
    # Each round is shown against the run before it and the run that followed it.
    second_before, third_before = (
        json.loads(path.read_text()) if path.exists() else None
        for path in (BEFORE_STORED_PAYLOADS, BEFORE_KEPT_CONNECTIONS)
    )
    if BEFORE_SPEEDUPS.exists():
        after_first = second_before["runs"] if second_before else runs
        lines += [_speedups(json.loads(BEFORE_SPEEDUPS.read_text()), after_first), ""]
    if second_before:
        after_second = third_before["runs"] if third_before else runs
        lines += [_round(SECOND_ROUND, SECOND_ROUND_NOTE, second_before, after_second), ""]
    if third_before:
        lines += [_round(THIRD_ROUND, THIRD_ROUND_NOTE, third_before, runs), ""]
    postgres = [run for run in runs if run["database"] == "postgres"]
    if postgres:
        best = max(postgres, key=lambda run: run["rollouts"])
        rate = best["spans_per_s_end_to_end"] or 0
        verdict = "met" if rate >= GOAL_SPANS_PER_S else "missed"
        per_span_us = cpu_per_span_us(best)
        lines.append(
            f"Goal (issue 15): at least {GOAL_SPANS_PER_S:,} spans/s end to end on PostgreSQL: "
            f"**{verdict}** ({rate:,} spans/s with {best['spans_sent']:,} spans). Every span "
            f"costs about {per_span_us:.0f} us of CPU over all processes (receive, assembly, "
            "closing, PostgreSQL, the clients' encoding), so two cores "
            f"cap the rate near {2e6 / per_span_us:,.0f} spans/s even on an idle machine. "
            f"Spans lost: {sum(run['spans_lost'] for run in runs)} in all runs (stored rows "
            "counted against spans sent)."
        )
    return "\n".join(lines) + "\n"
