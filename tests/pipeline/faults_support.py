"""A Faultline of real processes for the fault tests: a migrated database of its own
(SQLite file or PostgreSQL database), redis-server, Celery workers in process groups of
their own (so ``killpg`` reaches the pool), and raw SQL to watch the job rows from the test
without going through Django in this process (whose database is pytest's).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.services import PYTHON, REPO_ROOT, free_port, wait_for

MANAGE = [PYTHON, str(REPO_ROOT / "manage.py")]
WORKER = [
    PYTHON,
    "-m",
    "celery",
    "-A",
    "faultline",
    "worker",
    "--without-gossip",
    "--without-mingle",
    "--without-heartbeat",
    "--loglevel=INFO",
]
SETUP = """
from django.contrib.auth import get_user_model
from projects.tokens import project_token_issue
from projects.services import project_create
user = get_user_model().objects.create_user("alice", "a@example.com", "alice-pass-123")
project = project_create(name="Faults", slug="faults", owner=user)
print("TOKEN=" + project_token_issue(project=project))
"""
_TEMPLATES: dict[str, str] = {}


def _base_env(var_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        FAULTLINE_VAR_DIR=str(var_dir),
        FAULTLINE_TASKS_EAGER="false",
        DJANGO_SETTINGS_MODULE="faultline.settings",
        FAULTLINE_LOG_LEVEL="INFO",
    )
    env.pop("CELERY_BROKER_URL", None)
    return env


def _postgres_url() -> str:
    url = os.environ.get("DATABASE_URL", "")
    return url if url.startswith("postgres") else ""


def on_postgres() -> bool:
    return bool(_postgres_url())


def _template(tmp_root: Path) -> str:
    """A database migrated once per test session; each stack starts from a copy."""
    key = _postgres_url() or "sqlite"
    if key in _TEMPLATES:
        return _TEMPLATES[key]
    var_dir = tmp_root / "template"
    var_dir.mkdir(parents=True, exist_ok=True)
    env = _base_env(var_dir)
    env["FAULTLINE_CACHE_URL"] = ""
    if key == "sqlite":
        url = f"sqlite:///{var_dir / 'template.sqlite3'}"
    else:
        name = f"faultline_faults_tpl_{uuid.uuid4().hex[:8]}"
        _pg_admin(f'CREATE DATABASE "{name}"')
        atexit.register(_pg_drop, name)
        url = key.rsplit("/", 1)[0] + "/" + name
    env["DATABASE_URL"] = url
    subprocess.run([*MANAGE, "migrate", "--no-input", "-v0"], env=env, check=True, cwd=REPO_ROOT)
    _TEMPLATES[key] = url
    return url


def _pg_admin(statement: str) -> None:
    import psycopg

    admin = _postgres_url().rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(statement)


def _pg_drop(name: str) -> None:
    with suppress(Exception):
        _pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _fresh_database(tmp_root: Path, var_dir: Path) -> str:
    template = _template(tmp_root)
    if template.startswith("sqlite"):
        target = var_dir / "faultline.sqlite3"
        shutil.copyfile(template[len("sqlite:///") :], target)
        return f"sqlite:///{target}"
    name = f"faultline_faults_{uuid.uuid4().hex[:10]}"
    source = template.rsplit("/", 1)[1]
    _pg_admin(f'CREATE DATABASE "{name}" TEMPLATE "{source}"')
    return template.rsplit("/", 1)[0] + "/" + name


@dataclass
class Redis:
    port: int
    workdir: Path
    appendonly: bool = False
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        persistence = (
            ["--appendonly", "yes", "--appendfsync", "everysec", "--save", ""]
            if self.appendonly
            else ["--appendonly", "no", "--save", ""]
        )
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                *persistence,
                "--dir",
                str(self.workdir),
                "--logfile",
                str(self.workdir / "redis.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_for(self.ping, timeout=15, what="redis-server")

    def ping(self) -> bool:
        import socket

        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        """SIGTERM: redis-server flushes its append-only file, as on a normal shutdown."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None


@dataclass
class Worker:
    process: subprocess.Popen[bytes]
    log: Path

    def pool_children(self) -> list[int]:
        path = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        try:
            return [int(pid) for pid in path.read_text().split()]
        except OSError:
            return []

    def kill_pool_child(self) -> int:
        children = self.pool_children()
        assert children, f"the worker has no pool process:\n{self.output()}"
        os.kill(children[0], signal.SIGKILL)
        return children[0]

    def stop(self, timeout: float = 60) -> None:
        """SIGTERM: a warm shutdown (the current task finishes); killed if it hangs."""
        with suppress(ProcessLookupError):
            self.process.terminate()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill_group()

    def kill_group(self) -> None:
        with suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""


@dataclass
class Stack:
    """One Faultline: its database, var dir, Redis and the processes started on them."""

    root: Path
    env: dict[str, str]
    database_url: str
    redis: Redis
    token: str = ""
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _logs: int = 0

    # -- processes -------------------------------------------------------------------------
    def manage(self, *args: str, extra_env: dict[str, str] | None = None, timeout: float = 120):
        env = {**self.env, **(extra_env or {})}
        return subprocess.run(
            [*MANAGE, *args],
            env=env,
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def shell(self, code: str, *, extra_env: dict[str, str] | None = None, timeout: float = 120):
        """Run Django code in a fresh process; its stdout (the process must succeed)."""
        done = self.manage("shell", "-c", code, extra_env=extra_env, timeout=timeout)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def shell_json(self, code: str, **kwargs: Any) -> Any:
        out = self.shell(code, **kwargs)
        marker = "JSON="
        line = next(line for line in out.splitlines() if line.startswith(marker))
        return json.loads(line[len(marker) :])

    def spawn(self, args: list[str], name: str, extra_env: dict[str, str] | None = None):
        self._logs += 1
        log = self.root / f"{self._logs:02d}-{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                args,
                cwd=REPO_ROOT,
                env={**self.env, **(extra_env or {})},
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.processes.append(process)
        return process, log

    def worker(self, *, concurrency: int = 1, pool: str = "prefork", name: str = "worker"):
        process, log = self.spawn(
            [*WORKER, f"--pool={pool}", f"--concurrency={concurrency}", f"--hostname={name}@%h"],
            name,
        )
        worker = Worker(process, log)
        if pool == "prefork":
            wait_for(
                lambda: len(worker.pool_children()) >= concurrency or process.poll() is not None,
                timeout=60,
                what="the worker's pool",
            )
        assert process.poll() is None, worker.output()
        return worker

    def web(self) -> str:
        """gunicorn as scripts/run.sh starts it; the base URL."""
        port = free_port()
        process, log = self.spawn(
            [
                PYTHON,
                "-m",
                "gunicorn",
                "faultline.wsgi:application",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                "1",
                "--threads",
                "4",
                "--worker-class",
                "gthread",
                "--timeout",
                "120",
            ],
            "gunicorn",
        )
        base = f"http://127.0.0.1:{port}"
        wait_for(
            lambda: _reachable(f"{base}/login/") or process.poll() is not None,
            timeout=60,
            what="gunicorn",
        )
        assert process.poll() is None, log.read_text()
        return base

    def sweep(self, **settings: str) -> dict[str, Any]:
        """pipeline.jobs.jobs_sweep in a process of its own, with these settings."""
        env = {"FAULTLINE_JOB_SWEEP_GRACE_S": "0", **settings}
        return self.shell_json(
            "import json, dataclasses\n"
            "from pipeline.jobs import jobs_sweep\n"
            "print('JSON=' + json.dumps(dataclasses.asdict(jobs_sweep())))",
            extra_env=env,
        )

    def stop_all(self) -> None:
        for process in self.processes:
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            with suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
        self.processes.clear()
        self.redis.stop()

    # -- the database ----------------------------------------------------------------------
    def sql(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self.database_url.startswith("sqlite"):
            conn = sqlite3.connect(self.database_url[len("sqlite:///") :], timeout=30)
            try:
                return conn.execute(query, params).fetchall()
            finally:
                conn.close()
        import psycopg

        with psycopg.connect(self.database_url, autocommit=True) as pg:
            return pg.execute(query.replace("?", "%s"), params).fetchall()

    def execute_script(self, script: str) -> None:
        if self.database_url.startswith("sqlite"):
            conn = sqlite3.connect(self.database_url[len("sqlite:///") :], timeout=30)
            try:
                conn.executescript(script)
            finally:
                conn.close()
            return
        import psycopg

        with psycopg.connect(self.database_url, autocommit=True) as pg:
            pg.execute(script)

    def one(self, query: str, params: tuple[Any, ...] = ()) -> Any:
        rows = self.sql(query, params)
        return rows[0][0] if rows and len(rows[0]) == 1 else (rows[0] if rows else None)


def _reachable(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@contextmanager
def faultline_stack(
    tmp_path: Path, *, redis_running: bool = True, appendonly: bool = False
) -> Iterator[Stack]:
    """A migrated database with user alice owning project ``faults`` (token in
    ``stack.token``), a Redis port (started unless ``redis_running`` is False); every
    process is killed at the end, failure or not."""
    var_dir = tmp_path / "var"
    var_dir.mkdir(parents=True, exist_ok=True)
    redis = Redis(free_port(), var_dir / "redis", appendonly=appendonly)
    env = _base_env(var_dir)
    env.update(
        FAULTLINE_BROKER_URL=f"{redis.url}/0",
        FAULTLINE_RESULT_BACKEND=f"{redis.url}/1",
        FAULTLINE_CACHE_URL=f"{redis.url}/2",
    )
    url = _fresh_database(tmp_path.parent, var_dir)
    env["DATABASE_URL"] = url
    stack = Stack(tmp_path, env, url, redis)
    try:
        if redis_running:
            redis.start()
        out = stack.shell(SETUP)
        stack.token = next(
            line.split("=", 1)[1] for line in out.splitlines() if line.startswith("TOKEN=")
        )
        yield stack
    finally:
        stack.stop_all()
        if not url.startswith("sqlite"):
            _pg_drop(url.rsplit("/", 1)[1])
