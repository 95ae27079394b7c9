"""Which process runs each task, so that a job whose worker died is queued again within
seconds, not after the heartbeat timeout.

Silence alone cannot tell a dead worker from a busy one: a refresh beats only between its
stages, and its attribution and clustering stages run for minutes on a large project
without one (the refresh's row is silent while its clustering run beats on its own), so
the reaper waits FAULTLINE_JOB_HEARTBEAT_TIMEOUT_S (15 minutes) before it calls a job
stalled. A process that no longer exists is certain at once. Each task records, in the
cache beside the uploads' progress, the machine and the process running it, and the
worker's main process. A job whose task's recorded processes are both gone is lost: when
only the process running the task died (a pool process killed), the main process hands the
message back itself (``task_reject_on_worker_lost``) and the job is redelivered; when the
whole worker died, the message stays unacknowledged in Redis until its visibility timeout
(an hour), and the pipeline queues the job again (``pipeline.jobs.jobs_lost_requeue``): a
worker starting on the machine does at once, the sweeper at its next run.

Processes are compared only on the machine and in the process namespace that recorded
them (a container has its own), by number and start time, so a number given to a later
process is not taken for the one recorded. A job without a record (the cache was down or
is per process, a ``--sync`` command ran it) is left to the heartbeat timeout.

Example (a record as stored, then read on another machine: nothing there can tell):
    >>> runner = Runner(place="host-a|boot|pid:[1]", pid=41, start="900", main_pid=40,
    ...                 main_start="880")
    >>> runner_gone(runner, place="host-b|boot|pid:[1]")
    False
"""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from celery import signals
from django.core.cache import cache

logger = logging.getLogger(__name__)

PROC = Path("/proc")
# Longer than any job runs; the record of a task whose worker died stays until then.
RECORD_TTL_S = 7 * 24 * 3600
_main: tuple[int, str | None] | None = None  # the worker's main process, in a pool process


def _key(task_id: str) -> str:
    return f"faultline:task:{task_id}:runner"


def process_start(pid: int) -> str | None:
    """When the process started (clock ticks since boot, field 22 of /proc/PID/stat), ""
    where there is no /proc to ask, None when there is no such process (a zombie is none).

    Example:
        >>> process_start(os.getpid()) is not None
        True
    """
    if not PROC.is_dir():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return ""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The name in parentheses may hold spaces; the fields after it start at the state.
    fields = stat.rpartition(")")[2].split()
    if not fields or fields[0] in ("Z", "X"):
        return None
    return fields[19]


def this_place() -> str:
    """The machine and process namespace a process number is valid in: the host name, the
    boot, and the PID namespace (containers on one host may share a host name)."""
    parts = [socket.gethostname()]
    for source in (PROC / "sys/kernel/random/boot_id", PROC / "self/ns/pid"):
        try:
            parts.append(os.readlink(source) if source.is_symlink() else source.read_text())
        except OSError:
            parts.append("")
    return "|".join(part.strip() for part in parts)


@dataclass(frozen=True)
class Runner:
    """The process running a task and its worker's main process (the same one outside a
    prefork pool), each by number and start time."""

    place: str
    pid: int
    start: str
    main_pid: int
    main_start: str


def _alive(pid: int, start: str) -> bool:
    now = process_start(pid)
    return now is not None and (now == start or not start or not now)


def runner_gone(runner: Runner, *, place: str | None = None) -> bool:
    """Whether the task's process and its worker's main process are both gone; False for a
    runner recorded elsewhere (another machine, another container), which cannot be seen."""
    if runner.place != (place if place is not None else this_place()):
        return False
    return not _alive(runner.pid, runner.start) and not _alive(runner.main_pid, runner.main_start)


def runner_of_this_process() -> Runner:
    pid = os.getpid()
    main_pid, main_start = _main if _main is not None else (pid, process_start(pid))
    return Runner(this_place(), pid, process_start(pid) or "", main_pid, main_start or "")


def runner_save(task_id: str, runner: Runner) -> None:
    try:
        cache.set(_key(task_id), asdict(runner), RECORD_TTL_S)
    except Exception as error:  # the record only speeds up the reaper; never fail a task
        logger.warning("could not record the runner of task %s: %s", task_id, error)


def runner_record(task_id: str) -> None:
    """Note that this process runs the task (called as the task starts)."""
    runner_save(task_id, runner_of_this_process())


def runner_forget(task_id: str) -> None:
    try:
        cache.delete(_key(task_id))
    except Exception as error:
        logger.warning("could not forget the runner of task %s: %s", task_id, error)


def runners_gone(task_ids: list[str]) -> set[str]:
    """Those of the tasks whose recorded runner is gone, seen from this machine."""
    ids = sorted({task_id for task_id in task_ids if task_id})
    if not ids:
        return set()
    try:
        found = cache.get_many([_key(task_id) for task_id in ids])
    except Exception as error:
        logger.warning("could not read the runners of %d task(s): %s", len(ids), error)
        return set()
    place = this_place()
    gone = set()
    for task_id in ids:
        record = found.get(_key(task_id))
        if isinstance(record, dict) and runner_gone(Runner(**record), place=place):
            gone.add(task_id)
    return gone


# -- Celery's signals (connected by pipeline.apps) ----------------------------------------


def _eager(task: Any) -> bool:
    return bool(getattr(getattr(task, "request", None), "is_eager", False))


def _on_pool_process_start(**_: Any) -> None:
    """In a prefork pool process: the worker's main process is its parent."""
    global _main
    parent = os.getppid()
    _main = (parent, process_start(parent))


def _on_task_prerun(task_id: str | None = None, task: Any = None, **_: Any) -> None:
    if task_id and not _eager(task):
        runner_record(task_id)


def _on_task_postrun(task_id: str | None = None, task: Any = None, **_: Any) -> None:
    if task_id and not _eager(task):
        runner_forget(task_id)


def _on_worker_ready(**_: Any) -> None:
    """A worker starting (often the one started again after the last died) queues again
    the jobs of this machine whose worker is gone, without waiting for the sweeper."""
    from django.db import connections

    from pipeline.jobs import jobs_lost_requeue

    try:
        jobs_lost_requeue()
    except Exception:  # a worker must start whatever this finds
        logger.exception("could not look for jobs whose worker was lost")
    finally:
        # The pool processes forked later must not share this process's connections.
        connections.close_all()


def runner_signals_connect() -> None:
    signals.worker_process_init.connect(_on_pool_process_start, weak=False)
    signals.task_prerun.connect(_on_task_prerun, weak=False)
    signals.task_postrun.connect(_on_task_postrun, weak=False)
    signals.worker_ready.connect(_on_worker_ready, weak=False)
