"""The figures of bench/load.py: percentiles per page, the upload outcomes, PostgreSQL's
slow statements, and the "Load" section of docs/benchmarks.md."""

from __future__ import annotations

import math
import re
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

GOAL_P95_MS = 300.0
BASELINE = "baseline: login page"
STATEMENT = re.compile(r"duration: ([\d.]+) ms\s+(?:statement|execute [^:]*): (.*)")


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile (no interpolation between two requests).

    >>> percentile([10.0, 20.0, 30.0, 40.0], 0.5), percentile([10.0, 20.0, 30.0, 40.0], 0.95)
    (20.0, 40.0)
    """
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def summarise(load: dict[str, Any]) -> dict[str, Any]:
    samples, errors = load["samples"], load["errors"]
    base = samples.get(BASELINE) or [float("nan")]
    base_p50, base_p95 = percentile(base, 0.5), percentile(base, 0.95)
    pages: dict[str, dict[str, Any]] = {}
    for name in [BASELINE, *sorted(n for n in samples if n != BASELINE)]:
        values = samples.get(name) or []
        if not values:
            continue
        p50, p95 = percentile(values, 0.5), percentile(values, 0.95)
        pages[name] = {
            "requests": len(values),
            "errors": len(errors.get(name, [])),
            "p50_ms": round(p50, 1),
            "p95_ms": round(p95, 1),
            "max_ms": round(max(values), 1),
            "p50_x_baseline": round(p50 / base_p50, 1),
            "p95_x_baseline": round(p95 / base_p95, 1),
            "goal_met": p95 < GOAL_P95_MS,
            "alone_p50_ms": round(percentile(load["alone"].get(name) or [float("nan")], 0.5), 1),
        }
    uploads = load["uploads"]
    done = [u for u in uploads if u["status"] == "done"]
    upload_errors = [u for u in uploads if u["http"] not in (200, 202) or u["status"] != "done"]
    total_requests = sum(len(v) for v in samples.values())
    return {
        "pages": pages,
        "requests": total_requests,
        "requests_per_second": round(total_requests / load["browse_seconds"], 1),
        "zero_errors": not any(errors.values()) and not upload_errors,
        "error_samples": [e for name in errors for e in errors[name][:3]][:20],
        # Sent again once on a new connection after a stale kept-alive one (bench/load.py).
        "retried": sum(len(v) for v in load.get("retried", {}).values()),
        "retried_samples": [e for v in load.get("retried", {}).values() for e in v][:10],
        "uploads": uploads,
        "uploads_summary": {
            "started": len(uploads),
            "done": len(done),
            "not_done": [f"{u['file']}: {u['http']} {u['status']}" for u in upload_errors],
            "all_done": bool(uploads) and not upload_errors,
            "p50_seconds_to_done": round(statistics.median([u["done_s"] for u in done]), 2)
            if done
            else None,
            "max_seconds_to_done": max((u["done_s"] for u in done), default=None),
        },
        "browse_seconds": load["browse_seconds"],
        "wall_seconds": load["wall_seconds"],
        "cpu_seconds": load.get("cpu_seconds", {}),
    }


def _shape(statement: str) -> str:
    """The statement with its literals replaced, so that repeats group together."""
    shape = re.sub(r"'(?:[^']|'')*'", "?", statement)
    shape = re.sub(r"\b\d+(?:\.\d+)?\b", "?", shape)
    return re.sub(r"\s+", " ", shape).strip()


def slow_statements(log_path: Path, offset: int, *, top: int = 8) -> list[dict[str, Any]]:
    """The web role's statements slower than the logging threshold, grouped, slowest first."""
    with log_path.open("rb") as stream:
        stream.seek(offset)
        text = stream.read().decode("utf-8", "replace")
    # A statement continues on the following lines that do not start a new log entry.
    entries = re.split(r"\n(?=\d{4}-\d\d-\d\d )", text)
    groups: dict[str, list[float]] = defaultdict(list)
    examples: dict[str, str] = {}
    for entry in entries:
        match = STATEMENT.search(entry.replace("\n", " "))
        if match:
            shape = _shape(match.group(2))
            groups[shape].append(float(match.group(1)))
            examples.setdefault(shape, re.sub(r"\s+", " ", match.group(2))[:3000])
    rows = [
        {
            "count": len(times),
            "total_ms": round(sum(times)),
            "median_ms": round(statistics.median(times), 1),
            "max_ms": round(max(times), 1),
            "statement": examples[shape],
        }
        for shape, times in groups.items()
    ]
    return sorted(rows, key=lambda r: -r["total_ms"])[:top]


def condensed(statement: str) -> str:
    """A statement with its long column lists cut, so that the FROM and WHERE show.

    >>> condensed('SELECT "t"."a", "t"."b", "t"."c", "t"."d" FROM "t" WHERE x')
    'SELECT …, "t"."d" FROM "t" WHERE x'
    """
    return re.sub(r'(?:"\w+"\."\w+", ){3,}', "…, ", statement)


def _cpu_lines(report: dict[str, Any]) -> list[str]:
    """Where the CPUs went during the load, the load generator included (it is not free)."""
    used = report.get("cpu_seconds") or {}
    if not used:
        return []
    wall, cpus = report["wall_seconds"], report["machine"]["cpus"]
    lines = [
        "",
        f"CPU seconds used during the load ({wall:.0f} s from the first click to the last "
        f"upload done, {cpus} CPUs: {wall * cpus:.0f} CPU seconds to share), read from /proc:",
        "",
        "| part | CPU seconds | share of the machine's busy time |",
        "|---|---:|---:|",
    ]
    machine = used.get("machine (all processes)") or float("nan")
    ours = sum(seconds for name, seconds in used.items() if not name.startswith("machine"))
    rows = {**used, "other work on the machine (not this benchmark)": machine - ours}
    for name, seconds in rows.items():
        lines.append(f"| {name} | {seconds:.1f} | {100 * seconds / machine:.0f}% |")
    return lines


def markdown(report: dict[str, Any]) -> str:
    project, machine = report["project"], report["machine"]
    uploads = report["uploads_summary"]
    lines = [
        "## Load",
        "",
        f"`bench/load.py` (issue 14): {report['users']} simulated users, each logged in with its "
        f"own session, open a page chosen at random, read it for {report['think_seconds'][0]}-"
        f"{report['think_seconds'][1]} s and open the next, for {report['browse_seconds']:.0f} s; "
        f"meanwhile {report['uploaders']} uploaders each send a small real Who&When file through "
        "the API, follow it until it is done, and send the next. gunicorn as `make run` starts it "
        "(2 processes x 4 threads), on PostgreSQL, with redis-server and two Celery workers (one "
        "on the ingest queue, one on the others, so a refresh never holds up an ingest); all on "
        f"loopback, on the same {machine['cpus']} CPUs, {machine['date']}. The big project: "
        f"{project['rollouts']:,} rollouts, {project['steps']:,} steps, generated by "
        "`bench/pages.py`'s generator (it has no attribution or clustering run: its misbehaviour "
        "and calibration pages show their empty state). The small project "
        f"({report['small_project_rollouts']} rollouts of tau-bench airline and Who&When, "
        "ingested, attributed and clustered for real) receives the uploads, each followed by the "
        "project's refresh on the worker, and carries the misbehaviour and calibration pages. "
        "Times are the client's, queueing in gunicorn included; the ratio is against the login "
        "page requested under the same load. \"Alone\" is the same page asked by one user "
        "with nothing else running, just before the load: what the page itself costs. "
        "The load generator (50 threads of `requests`) "
        "shares the CPUs with the server, and the machine is shared with other work: load "
        f"average {report['load_average_before_after'][:3]} before, "
        f"{report['load_average_before_after'][3:]} after.",
        "",
        f"Errors: **{'none' if report['zero_errors'] else 'some (see below)'}**. "
        f"{report['requests']:,} page requests, {report['requests_per_second']} requests/s. "
        f"Uploads: {uploads['done']} of {uploads['started']} done"
        + (f" (median {uploads['p50_seconds_to_done']} s from request to done, slowest "
           f"{uploads['max_seconds_to_done']} s)" if uploads["done"] else "")
        + ("; every upload done." if uploads["all_done"] else f"; not done: {uploads['not_done']}."),
        "",
        "| page | alone (p50 of 3) | requests | errors | p50 | p95 | max | p50 × baseline "
        f"| p95 × baseline | p95 < {GOAL_P95_MS:.0f} ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]  # fmt: skip
    for name, page in report["pages"].items():
        goal = "" if name == BASELINE else ("met" if page["goal_met"] else "**missed**")
        lines.append(
            f"| {name} | {page['alone_p50_ms']:.0f} ms | {page['requests']} | {page['errors']} "
            f"| {page['p50_ms']:.0f} ms "
            f"| {page['p95_ms']:.0f} ms | {page['max_ms']:.0f} ms | {page['p50_x_baseline']} "
            f"| {page['p95_x_baseline']} | {goal} |"
        )
    pages = {n: p for n, p in report["pages"].items() if n != BASELINE}
    missed = [n for n, p in pages.items() if not p["goal_met"]]
    base = report["pages"][BASELINE]
    slowest = max(pages, key=lambda n: pages[n]["p95_ms"])
    costliest = max(pages, key=lambda n: pages[n]["alone_p50_ms"])
    lines += [
        "",
        "Goal (p95 under 300 ms for every page): "
        + ("met by every page." if not missed else f"**missed** by {len(missed)} of {len(pages)} pages."),
        f"The slowest under load is {slowest} (p95 {pages[slowest]['p95_ms']:.0f} ms); the "
        f"costliest alone is {costliest} ({pages[costliest]['alone_p50_ms']:.0f} ms). The login "
        f"page, which runs no query of ours, took {base['alone_p50_ms']:.0f} ms alone and "
        f"{base['p50_ms']:.0f} ms (p50) under the load: what a page takes under the load beyond "
        "its cost alone is waiting for a CPU (gunicorn's threads, PostgreSQL, the refresh after "
        "each upload and the load generator itself share the machine's cores).",
    ]  # fmt: skip
    lines += _cpu_lines(report)
    if report.get("retried"):
        lines += [
            "",
            f"{report['retried']} request(s) met a kept-alive connection that gunicorn closed "
            "as the request went out and were sent again once on a new connection, as a "
            "browser does (their time counts both tries): "
            + "; ".join(f"`{e}`" for e in report["retried_samples"][:3]),
        ]
    if report["error_samples"]:
        lines += ["", "Errors seen: " + "; ".join(f"`{e}`" for e in report["error_samples"])]
    if report["slow_statements"]:
        lines += [
            "",
            "The web processes' statements slower than 100 ms during the warm-up and the load "
            "(PostgreSQL's "
            "`log_min_duration_statement` for gunicorn's database role only), by total time:",
            "",
            "| count | median | max | statement (column lists cut; first 400 characters) |",
            "|---:|---:|---:|---|",
        ]
        for row in report["slow_statements"]:
            statement = condensed(row["statement"])[:400].replace("|", "\\|")
            lines.append(
                f"| {row['count']} | {row['median_ms']:.0f} ms | {row['max_ms']:.0f} ms "
                f"| `{statement}` |"
            )
    lines += ["", "Raw figures: `bench-results/load.json`.", ""]
    return "\n".join(lines)
