"""The processes bench/load.py runs the product in: redis-server, Celery workers and
gunicorn, each in its own process group so that stopping one reaches its children."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import requests

from bench.common import PYTHON, REPO_ROOT

TROUBLE = re.compile(r"Traceback|\bERROR\b|CRITICAL|WORKER TIMEOUT|Exception:|Connection refused")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Services:
    """redis-server, the workers and gunicorn, each in its own process group."""

    def __init__(self, var_dir: Path) -> None:
        self.var_dir = var_dir
        self.processes: list[subprocess.Popen[bytes]] = []
        self.groups: dict[str, int] = {}  # name: process group (the leader's pid)

    def start(self, name: str, args: list[str], env: dict[str, str]) -> None:
        log = (self.var_dir / f"{name}.log").open("ab")
        process = subprocess.Popen(
            args, cwd=REPO_ROOT, env=env, stdout=log, stderr=log, start_new_session=True
        )
        self.processes.append(process)
        self.groups[name] = process.pid

    def trouble(self, *, limit: int = 20) -> dict[str, list[str]]:
        """The lines of each service's log that tell of a failure (the logs go with the run)."""
        found: dict[str, list[str]] = {}
        for log in sorted(self.var_dir.glob("*.log")):
            lines = log.read_text(errors="replace").splitlines()
            bad = [line for line in lines if TROUBLE.search(line)]
            if bad:
                found[log.stem] = bad[-limit:]
        return found

    def stop(self) -> None:
        for process in reversed(self.processes):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for process in self.processes:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


def wait_until(check: Callable[[], bool], *, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not come up within {seconds:.0f} s")
        time.sleep(0.2)


def answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False


def gunicorn_args(port: int) -> list[str]:
    """The command scripts/run.sh serves with (its default workers and threads)."""
    return [
        PYTHON, "-m", "gunicorn", "faultline.wsgi:application", "--bind", f"127.0.0.1:{port}",
        "--workers", "2", "--threads", "4", "--worker-class", "gthread", "--timeout", "120",
        "--graceful-timeout", "10",
    ]  # fmt: skip


def worker_args(queues: str, concurrency: int = 1) -> list[str]:
    return [
        PYTHON, "-m", "celery", "-A", "faultline", "worker", "--loglevel=WARNING",
        f"--queues={queues}", f"--concurrency={concurrency}", "--without-gossip",
        "--without-mingle",
    ]  # fmt: skip
