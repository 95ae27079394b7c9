"""CPU seconds that each part of bench/load.py used while the load ran: gunicorn, the two
Celery workers, redis-server, PostgreSQL (the benchmark's cluster), the load generator
itself (this process: the simulated users' threads), and the whole machine, which other
work shares. Read from /proc (Linux), before and after the load."""

from __future__ import annotations

import os
import time
from pathlib import Path

TICK = float(os.sysconf("SC_CLK_TCK"))


def _stats() -> list[tuple[int, int, int, float]]:
    """(pid, parent pid, process group, CPU seconds of it and of its reaped children)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:  # ended meanwhile
            continue
        # The command name may hold spaces and parentheses: the fields follow the last ")".
        fields = text[text.rindex(")") + 2 :].split()
        ppid, group = int(fields[1]), int(fields[2])
        seconds = sum(int(value) for value in fields[11:15]) / TICK
        found.append((int(entry.name), ppid, group, seconds))
    return found


def _machine_busy_seconds() -> float:
    with open("/proc/stat") as stream:
        values = [int(v) for v in stream.readline().split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return (sum(values[:8]) - idle) / TICK


def postmaster_pid(data_directory: str) -> int | None:
    try:
        return int(Path(data_directory, "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def cpu_snapshot(groups: dict[str, int], postmaster: int | None) -> dict[str, float]:
    """CPU seconds so far of each service (by its process group), PostgreSQL (the
    postmaster and its backends), the load generator and the machine."""
    totals = dict.fromkeys([*groups, "postgresql"], 0.0)
    by_group = {group: name for name, group in groups.items()}
    for pid, ppid, group, seconds in _stats():
        if group in by_group:
            totals[by_group[group]] += seconds
        elif postmaster is not None and postmaster in (pid, ppid):
            totals["postgresql"] += seconds
    totals["load generator (this process)"] = time.process_time()
    totals["machine (all processes)"] = _machine_busy_seconds()
    return totals


def cpu_used(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {name: round(after[name] - before.get(name, 0.0), 1) for name in after}
