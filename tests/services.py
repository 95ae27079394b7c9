"""Real services for tests: a throwaway redis-server, free ports, processes that stop."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
PYTHON = str(REPO_ROOT / ".venv" / "bin" / "python")
T = TypeVar("T")


def same_on_every_database(reason: str) -> pytest.MarkDecorator:
    """Skip a services test on the PostgreSQL pass: what it checks does not touch the
    database (``reason`` says why), so there it would repeat the SQLite pass's run."""
    on_postgres = os.environ.get("DATABASE_URL", "").startswith("postgres")
    return pytest.mark.skipif(on_postgres, reason=f"the same on every database: {reason}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(
    check: Callable[[], T | None], *, timeout: float, what: str, interval: float = 0.1
) -> T:
    """Poll ``check`` until it returns a truthy value, failing after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


@contextmanager
def redis_server(workdir: Path) -> Iterator[str]:
    """Start redis-server on a free loopback port; yield its URL prefix."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed (make test installs it)")
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
            "--logfile",
            str(workdir / "redis.log"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def ready() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2) as conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    try:
        wait_for(ready, timeout=15, what="redis-server")
        yield f"redis://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


@contextmanager
def background(
    args: list[str], *, env: dict[str, str], log: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """Run a process for the duration of the block, its output in ``log``."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            args, cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
        try:
            yield process
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def fresh_database_url(base_env: dict[str, str], var_dir: Path) -> str:
    """A database of its own for a multi-process test: SQLite in var_dir, or a new
    PostgreSQL database on the server that DATABASE_URL names."""
    url = base_env.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        return f"sqlite:///{var_dir / 'faultline.sqlite3'}"
    import psycopg

    name = f"faultline_e2e_{uuid.uuid4().hex[:10]}"
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return url.rsplit("/", 1)[0] + "/" + name


def service_env(var_dir: Path, redis_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        FAULTLINE_VAR_DIR=str(var_dir),
        FAULTLINE_BROKER_URL=f"{redis_url}/0",
        FAULTLINE_RESULT_BACKEND=f"{redis_url}/1",
        FAULTLINE_CACHE_URL=f"{redis_url}/2",
        FAULTLINE_TASKS_EAGER="false",
        DJANGO_SETTINGS_MODULE="faultline.settings",
    )
    env["DATABASE_URL"] = fresh_database_url(env, var_dir)
    env.pop("CELERY_BROKER_URL", None)
    return env
