"""`make run` (scripts/run.sh) for real: gunicorn serves the app and its static files under
the CSP, the worker takes the demo upload off its queue, redis-server keeps an append-only
file, a service that dies (Redis too) is started again, an upload over the limit is
refused before its body, SIGINT (Ctrl-C) stops every process the script started, a second
Ctrl-C at once, TERM to `make run`'s process group (kill, systemd, docker stop, a CI
timeout) too, and what a killed run left running is stopped by the next."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from dashboard.upload_limit import MSG_UPLOAD_TOO_LARGE
from tests.conftest import shared_file
from tests.services import REPO_ROOT, free_port, same_on_every_database, wait_for

pytestmark = [
    pytest.mark.services,
    # make run serves the embedded defaults: the script runs with DATABASE_URL removed
    # (below), so on the PostgreSQL pass these would repeat the SQLite pass's run exactly.
    same_on_every_database("make run is on SQLite whatever DATABASE_URL says"),
]


def _get(url: str) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, dict(response.headers), response.read()
    except OSError:
        return 0, {}, b""


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _processes_of(var_dir: Path) -> list[str]:
    """Processes whose environment names this run's var dir: everything run.sh started."""
    marker = f"FAULTLINE_VAR_DIR={var_dir}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return found


def _upload_states(var_dir: Path) -> list[str]:
    try:
        with sqlite3.connect(var_dir / "faultline.sqlite3", timeout=5) as conn:
            return [row[0] for row in conn.execute("SELECT status FROM ingest_upload")]
    except sqlite3.Error:
        return []


# `make run`'s recipe without the set-up it depends on: make forwards a TERM it gets to the
# script, so the script gets the TERM sent to the group twice.
MAKEFILE = "SHELL := /bin/bash\nrun:\n\t@bash scripts/run.sh\n"


def _launch(
    tmp_path: Path, demo_files: int = 1, *, via_make: bool = False, log_name: str = "run.log"
) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    """scripts/run.sh (under make with ``via_make``) on free ports with the var dir of
    ``tmp_path`` and ``demo_files`` demo files (the first of the shared data, then small
    distinct copies: each is queued on its own); its output in ``log_name``."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (make test installs it)")
    demo = tmp_path / "demo" / "who_and_when" / "Who&When" / "Hand-Crafted"
    demo.mkdir(parents=True, exist_ok=True)
    shutil.copy(shared_file("who_and_when/Who&When/Hand-Crafted/1.json"), demo / "1.json")
    for number in range(2, demo_files + 1):
        (demo / f"{number}.json").write_text(json.dumps({"history": [], "copy": number}))
    var_dir = tmp_path / "var"
    port, redis_port = free_port(), free_port()
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("FAULTLINE_", "CELERY_")) and key != "DATABASE_URL"
    }
    env.update(
        FAULTLINE_VAR_DIR=str(var_dir),
        FAULTLINE_PORT=str(port),
        FAULTLINE_REDIS_PORT=str(redis_port),
        FAULTLINE_DEMO_DATA=str(tmp_path / "demo"),
    )
    command = ["bash", "scripts/run.sh"]
    if via_make:
        makefile = tmp_path / "Makefile"
        makefile.write_text(MAKEFILE)
        command = ["make", "-s", "-f", str(makefile), "run"]
    log = (tmp_path / log_name).open("wb")
    script = subprocess.Popen(
        command,
        cwd=REPO_ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        # A shell cannot trap a signal it was started with ignored: start it as a terminal does.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    log.close()  # the script has its own copy
    base = f"http://127.0.0.1:{port}"
    return script, {
        "script": script,
        "base": base,
        "var": var_dir,
        "port": port,
        "redis": redis_port,
        "log": tmp_path / log_name,
    }


def _stop(script: subprocess.Popen[bytes]) -> None:
    if script.poll() is None:
        script.send_signal(signal.SIGINT)
        try:
            script.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(script.pid, signal.SIGKILL)


@contextmanager
def _run_script(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """scripts/run.sh on free ports with its own var dir and one demo file, serving."""
    script, started = _launch(tmp_path)
    try:
        wait_for(lambda: _get(started["base"] + "/login/")[0] == 200, timeout=120, what="gunicorn")
        yield started
    finally:
        _stop(script)
        _kill_what_is_left(started)


@pytest.fixture(scope="module")
def running(tmp_path_factory) -> Iterator[dict[str, Any]]:
    """One start shared by the tests that only look at the running services."""
    with _run_script(tmp_path_factory.mktemp("run")) as started:
        yield started


@pytest.fixture
def fresh_run(tmp_path) -> Iterator[dict[str, Any]]:
    with _run_script(tmp_path) as started:
        yield started


def test_it_serves_the_login_page_from_gunicorn_with_the_csp(running):
    status, headers, body = _get(f"{running['base']}/login/")
    assert status == 200 and headers["Server"] == "gunicorn"
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert b"Log in to Faultline" in body


def test_it_serves_static_files_from_the_app(running):
    status, headers, body = _get(f"{running['base']}/static/js/charts.js")
    assert status == 200 and b"Plotly.newPlot" in body
    assert headers["Content-Type"].startswith("text/javascript")


def test_it_ingests_the_demo_upload_on_the_worker(running):
    states = wait_for(
        lambda: (s := _upload_states(running["var"])) and all(x == "done" for x in s) and s,
        timeout=120,
        what="the worker to ingest the demo upload",
        interval=0.25,
    )
    assert states == ["done"]
    # Parsed by the intake worker, so that it never waits behind a refresh on the other.
    logs = running["var"] / "log"
    received = "Task pipeline.tasks.ingest_upload["  # not the banner's list of tasks
    assert received in (logs / "intake.log").read_text()
    assert received not in (logs / "worker.log").read_text()


def test_it_keeps_redis_data_in_an_append_only_file(running):
    assert (running["var"] / "redis" / "appendonlydir").is_dir()
    assert (running["var"] / "secret_key").stat().st_mode & 0o777 == 0o600


def test_a_command_with_only_its_var_dir_reaches_the_run_s_queue(running):
    """A trial's CLI run with only FAULTLINE_VAR_DIR beside this run on another Redis port
    stored every file as queued and unsent: it now reads the run's URLs from var/run."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("FAULTLINE_")}
    env.update(FAULTLINE_VAR_DIR=str(running["var"]), DJANGO_SETTINGS_MODULE="faultline.settings")
    code = (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.FAULTLINE_CELERY_BROKER_URL, settings.CACHES['default']['LOCATION'])"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    redis = f"redis://127.0.0.1:{running['redis']}"
    assert result.stdout.split() == [f"{redis}/0", f"{redis}/2"], result.stderr
    assert (running["var"] / "run" / "instance.env").stat().st_mode & 0o777 == 0o600


def _lock_free(var_dir: Path) -> bool:
    with (var_dir / "run" / "run.lock").open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(lock, fcntl.LOCK_UN)
        return True


def _stopped(started: dict[str, Any]) -> bool:
    """Nothing of the run is left: no process of its var dir, both ports free, the lock
    free (redis-server rewrites its environment, so its port tells of it)."""
    return (
        _processes_of(started["var"]) == []
        and not _listening(started["port"])
        and not _listening(started["redis"])
        and _lock_free(started["var"])
    )


def _serving(started: dict[str, Any]) -> bool:
    """Whether gunicorn answers; fails at once when the script has ended instead."""
    if started["script"].poll() is not None:
        raise AssertionError(f"the script ended:\n{started['log'].read_text()[-3000:]}")
    return _get(started["base"] + "/login/")[0] == 200


def _lock_holders(lock: Path) -> list[int]:
    """Every process with the lock file open."""
    holders = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if any(os.readlink(fd) == str(lock) for fd in (entry / "fd").iterdir()):
                holders.append(int(entry.name))
        except OSError:
            continue
    return holders


def test_only_the_script_holds_the_run_lock(running):
    """A service that inherited the lock would keep it after the script died, and the
    next run would say 'already running' with nothing to stop."""
    assert _lock_holders(running["var"] / "run" / "run.lock") == [running["script"].pid]


def test_it_stops_every_process_on_ctrl_c_and_at_once_on_a_second(fresh_run):
    assert len(_processes_of(fresh_run["var"])) >= 5  # script, redis, worker, beat, gunicorn
    script = fresh_run["script"]
    # A terminal signals the whole foreground group.
    os.killpg(script.pid, signal.SIGINT)
    wait_for(
        lambda: "Stopping Faultline" in fresh_run["log"].read_text(),
        timeout=30,
        what="the script to start stopping",
        interval=0.05,
    )
    os.killpg(script.pid, signal.SIGINT)
    script.wait(timeout=60)
    log = fresh_run["log"].read_text()
    assert "Stopping at once." in log and log.rstrip().endswith("Stopped.")
    assert _stopped(fresh_run)


def _kill_what_is_left(*runs: dict[str, Any]) -> None:
    """After a failed test: no process of these runs may outlive it."""
    for started in runs:
        if started["script"].poll() is None:
            os.killpg(started["script"].pid, signal.SIGKILL)
            started["script"].wait()
        for pid in [_redis_pid(started["redis"])] + [
            int(entry.name)
            for entry in Path("/proc").iterdir()
            if entry.name.isdigit() and _of_run(entry, started["var"])
        ]:
            if pid is not None:
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def _of_run(entry: Path, var_dir: Path) -> bool:
    try:
        marker = f"FAULTLINE_VAR_DIR={var_dir}".encode()
        return marker in (entry / "environ").read_bytes().split(b"\0")
    except OSError:
        return False


def test_a_term_to_make_run_s_group_stops_everything_after_a_killed_run(tmp_path):
    """Two starts of the script on one var dir (each costs about 17 s): the first is killed
    outright (SIGKILL to the script: a crash, an OOM kill), leaving its services running;
    the second, under make, stops them and serves; a TERM to its process group (what
    kill, systemd, docker stop and a CI timeout send) then stops every service, redis-server
    too, and frees the lock, although make sends the script the same TERM again while it
    is stopping."""
    crashed, first = _launch(tmp_path)
    second: dict[str, Any] = {}
    try:
        wait_for(lambda: _serving(first), timeout=120, what="the first run to serve")
        crashed.kill()
        crashed.wait(timeout=10)
        left = _processes_of(first["var"])
        assert any("gunicorn" in cmdline for cmdline in left)
        assert _listening(first["redis"])

        script, second = _launch(tmp_path, via_make=True, log_name="make.log")
        wait_for(lambda: _serving(second), timeout=120, what="the second run to serve")
        assert not _listening(first["port"]) and not _listening(first["redis"])
        log = second["log"].read_text()
        assert "Stopping what an earlier run on" in log

        os.killpg(script.pid, signal.SIGTERM)
        script.wait(timeout=60)
        # make ends the log with "make: *** [...] Terminated", as it dies of the TERM too.
        assert "Stopped." in second["log"].read_text().splitlines()
        assert _stopped(second)
    finally:
        _kill_what_is_left(first, *([second] if second else []))


def _worker_group(var_dir: Path) -> int | None:
    """The process group of the run's Celery worker of the heavy queues (its main process
    leads it), not the intake worker."""
    marker = f"FAULTLINE_VAR_DIR={var_dir}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            # The word as an argument: this test's own paths hold "worker" too.
            is_worker = b"\0worker\0" in cmdline and b"\0--hostname=worker@" in cmdline
            if is_worker and marker in (entry / "environ").read_bytes().split(b"\0"):
                return os.getpgid(int(entry.name))
        except OSError:
            continue
    return None


def test_a_second_run_on_the_same_var_dir_refuses_to_start(running, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAULTLINE_", "CELERY_"))}
    env.update(
        FAULTLINE_VAR_DIR=str(running["var"]),
        FAULTLINE_PORT=str(free_port()),
        FAULTLINE_REDIS_PORT=str(free_port()),
    )
    second = subprocess.run(
        ["bash", "scripts/run.sh"], cwd=REPO_ROOT, env=env, capture_output=True, timeout=60
    )
    assert second.returncode == 1
    assert b"already running on" in second.stderr
    assert _get(running["base"] + "/login/")[0] == 200  # the first one untouched


def _redis(port: int, command: bytes) -> bytes:
    """A redis-server's raw answer to one inline command, b"" when nothing answers."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
            conn.sendall(command + b"\r\n")
            return conn.recv(65536)
    except OSError:
        return b""


def _redis_pid(port: int) -> int | None:
    """The process of the redis-server on this port (it rewrites its /proc environ, so it
    is asked rather than found by the run's marker)."""
    for line in _redis(port, b"INFO server").splitlines():
        if line.startswith(b"process_id:"):
            return int(line.split(b":")[1])
    return None


def _worker_says(var: Path, line: str) -> int:
    """How often the run's worker log says ``line``."""
    worker_log = var / "log" / "worker.log"
    return worker_log.read_text().count(line) if worker_log.exists() else 0


def _connections(var: Path) -> int:
    return _worker_says(var, "Connected to redis://")


def test_a_killed_worker_then_a_killed_redis_are_named_and_started_again(fresh_run, tmp_path):
    """One run for both (each start of make run costs about 17 s): the worker killed, then
    the redis-server, each named in the log and started again."""
    var, port = fresh_run["var"], fresh_run["redis"]
    killed = _worker_group(var)
    assert killed is not None
    os.killpg(killed, signal.SIGKILL)
    wait_for(lambda: (_worker_group(var) or killed) != killed, timeout=60, what="a new worker")
    log = (tmp_path / "run.log").read_text()
    assert "The worker stopped (exit 137); starting it again." in log
    assert fresh_run["script"].poll() is None and _get(fresh_run["base"] + "/login/")[0] == 200

    # Ready, not only connected: a Redis lost while the worker still starts is reconnected
    # without a line in its log.
    wait_for(lambda: _worker_says(var, " ready.") >= 2, timeout=90, what="the new worker")
    connected = _connections(var)
    killed = _redis_pid(port)
    assert killed is not None
    os.kill(killed, signal.SIGKILL)
    wait_for(
        lambda: (_redis_pid(port) or killed) != killed,
        timeout=60,
        what="a new redis-server on the same port",
    )
    log = (tmp_path / "run.log").read_text()
    assert (
        f"The redis-server (port {port}, data in {var}/redis) stopped (exit 137); "
        "starting it again." in log
    )
    # The same data dir, whose append-only file it read back; the worker connects again.
    assert str(var / "redis").encode() in _redis(port, b"CONFIG GET dir")
    wait_for(lambda: _connections(var) > connected, timeout=90, what="the worker to reconnect")
    assert fresh_run["script"].poll() is None and _get(fresh_run["base"] + "/login/")[0] == 200


def test_ctrl_c_during_the_demo_set_up_stops_in_one_line(tmp_path):
    script, started = _launch(tmp_path, demo_files=2000)
    try:
        # Ctrl-C once demo_setup is queueing files: the terminal signals the whole
        # foreground group, the script and the command it waits on.
        wait_for(lambda: _upload_states(started["var"]), timeout=120, what="demo files queued")
        os.killpg(script.pid, signal.SIGINT)
        assert script.wait(timeout=60) == 130
    finally:
        _stop(script)
    log = (tmp_path / "run.log").read_text()
    assert "Traceback" not in log and "KeyboardInterrupt" not in log
    [line] = [x for x in log.splitlines() if "interrupted" in x]
    assert line.startswith("Demo set-up interrupted after queueing ")
    assert line.endswith(" demo file(s); the next 'make run' queues the rest.")
    assert log.rstrip().endswith("Stopped.")
    assert _processes_of(started["var"]) == [] and not _listening(started["redis"])


def test_gunicorn_refuses_an_upload_over_the_limit_before_its_body(running):
    declared = 3 * 1024**3
    with socket.create_connection(("127.0.0.1", running["port"]), timeout=20) as conn:
        conn.sendall(
            b"POST /api/v1/projects/demo/uploads HTTP/1.1\r\n"
            + f"Host: 127.0.0.1:{running['port']}\r\n".encode()
            + b"Content-Type: multipart/form-data; boundary=x\r\n"
            + f"Content-Length: {declared}\r\n\r\n".encode()
            + b"--x\r\n"
            + b"y" * 16 * 1024  # the start of the 3 GiB only
        )
        answer = b""
        # Until gunicorn closes the connection: the client need send no more.
        while chunk := conn.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413 ")
    limit = "2.0 GB (2147483648 bytes)"
    message = MSG_UPLOAD_TOO_LARGE.format(size="3.0 GB (3221225472 bytes)", limit=limit)
    assert json.loads(body) == {"error": message}
