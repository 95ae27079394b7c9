"""Beat during a Redis outage: each periodic task it cannot send is one line in its log
(Celery printed the stack and a chain of five exceptions at every tick), other failures
keep their traceback, and the sends resume once Redis is back."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from celery.beat import ScheduleEntry

from faultline.beat import MSG_NOT_SENT, Scheduler
from faultline.celery import app
from tests.services import PYTHON, REPO_ROOT, free_port, same_on_every_database, wait_for

SWEEP = "faultline-jobs-sweep"
SWEEP_TASK = "pipeline.tasks.jobs_sweep"


@pytest.fixture(scope="module")
def tasks_registered() -> None:
    """The tasks imported, as in beat (before caplog: the import sets up logging anew)."""
    app.loader.import_default_modules()


def _entry(**fields: object) -> ScheduleEntry:
    return ScheduleEntry(
        name=SWEEP,
        task=SWEEP_TASK,
        schedule=timedelta(seconds=60),
        app=app,
        options={"queue": "celery"},
        **fields,
    )


def _errors(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "celery.beat" and r.levelno >= logging.ERROR]


def test_a_task_not_sent_for_want_of_a_broker_is_one_line(
    tasks_registered, unreachable_broker, caplog
):
    scheduler = Scheduler(app=app, lazy=True)
    with caplog.at_level(logging.INFO, logger="celery.beat"):
        scheduler.apply_entry(_entry())
    [error] = _errors(caplog)
    assert error.msg == MSG_NOT_SENT and error.exc_info is None
    assert error.args[:2] == (SWEEP, SWEEP_TASK)
    assert "Connection refused" in str(error.args[2])
    assert "\n" not in error.getMessage()


def test_any_other_failure_keeps_its_traceback(tasks_registered, unreachable_broker, caplog):
    scheduler = Scheduler(app=app, lazy=True)
    with caplog.at_level(logging.INFO, logger="celery.beat"):
        scheduler.apply_entry(_entry(args=("an argument the sweeper does not take",)))
    [error] = _errors(caplog)
    assert error.getMessage().startswith("Message Error: ")
    assert error.exc_info is not None and error.exc_info[0] is not None


# Beat for real, with redis-server stopped under it and started again.


def _redis(port: int, workdir: Path) -> subprocess.Popen[bytes]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (make test installs it)")
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", str(workdir)]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _queued(port: int) -> int:
    """Messages waiting on the maintenance queue (what beat sent), or -1 if Redis is down."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
            conn.sendall(b"LLEN celery\r\n")
            answer = conn.recv(64)
    except OSError:
        return -1
    return int(answer[1:].split(b"\r\n")[0]) if answer.startswith(b":") else -1


@pytest.fixture
def beat_and_redis(tmp_path) -> Iterator[dict[str, object]]:
    port = free_port()
    redis = _redis(port, tmp_path)
    wait_for(lambda: _queued(port) >= 0, timeout=15, what="redis-server")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAULTLINE_", "CELERY_"))}
    env.update(
        FAULTLINE_VAR_DIR=str(tmp_path / "var"),
        FAULTLINE_BROKER_URL=f"redis://127.0.0.1:{port}/0",
        FAULTLINE_CACHE_URL="",
        FAULTLINE_SWEEP_INTERVAL_S="1",
        FAULTLINE_OTLP_CLOSE_INTERVAL_S="3600",
    )
    log_path = tmp_path / "beat.log"
    log = log_path.open("wb")
    beat = subprocess.Popen(
        [PYTHON, "-m", "celery", "-A", "faultline", "beat", "--loglevel=INFO"]
        + [f"--schedule={tmp_path / 'schedule'}", "--pidfile="],
        cwd=REPO_ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    state: dict[str, object] = {"port": port, "redis": redis, "log": log_path, "dir": tmp_path}
    try:
        yield state
    finally:
        beat.send_signal(signal.SIGINT)
        try:
            beat.wait(timeout=20)
        except subprocess.TimeoutExpired:
            beat.kill()
        log.close()
        for process in (state["redis"],):
            assert isinstance(process, subprocess.Popen)
            process.terminate()
            process.wait(timeout=10)


@pytest.mark.services
@same_on_every_database("beat sends tasks to Redis and reads no database")
def test_beat_says_in_one_line_per_tick_that_redis_is_down(beat_and_redis):
    port = beat_and_redis["port"]
    log = beat_and_redis["log"]
    redis = beat_and_redis["redis"]
    assert isinstance(port, int) and isinstance(log, Path) and isinstance(redis, subprocess.Popen)
    wait_for(lambda: _queued(port) > 0, timeout=60, what="beat to send the sweeper")
    redis.terminate()
    redis.wait(timeout=10)
    wait_for(
        lambda: log.read_text().count("Could not send") >= 3,
        timeout=60,
        what="three ticks without Redis",
    )
    text = log.read_text()
    assert "Traceback" not in text and "Message Error" not in text
    failures = [line for line in text.splitlines() if "Could not send" in line]
    assert failures[0].endswith(
        f"ERROR/MainProcess] celery.beat: Could not send {SWEEP} ({SWEEP_TASK}): the broker "
        f"is unreachable (Error 111 connecting to 127.0.0.1:{port}. Connection refused.); "
        "it is sent at its next run."
    )
    # Back on the same port: the next ticks are sent again, with no error.
    directory = beat_and_redis["dir"]
    assert isinstance(directory, Path)
    beat_and_redis["redis"] = _redis(port, directory)
    wait_for(lambda: _queued(port) > 0, timeout=60, what="beat to send again")
