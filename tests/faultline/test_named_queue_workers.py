"""Scale-out as docs/deploy.md describes it, on one machine: gunicorn with two processes, one
Celery worker on the `ingest` queue only and another on the other queues, one Redis, one
database. An upload through the API is parsed by the ingest worker and the refresh after it
runs on the other one."""

from __future__ import annotations

import json
import re
import subprocess
import urllib.request
import uuid
from pathlib import Path

import pytest

from tests.conftest import shared_file
from tests.services import (
    PYTHON,
    REPO_ROOT,
    background,
    free_port,
    redis_server,
    same_on_every_database,
    service_env,
    wait_for,
)

pytestmark = [
    pytest.mark.services,
    same_on_every_database("which worker consumes which queue is Celery's routing"),
]

SETUP = """
from django.contrib.auth import get_user_model
from projects.tokens import project_token_issue
from projects.services import project_create
user = get_user_model().objects.create_user("alice", "a@example.com", "alice-pass-123")
project = project_create(name="Queues", slug="queues", owner=user)
print("TOKEN=" + project_token_issue(project=project))
"""


def _worker(queues: str, name: str) -> list[str]:
    return [
        PYTHON,
        "-m",
        "celery",
        "-A",
        "faultline",
        "worker",
        f"--queues={queues}",
        f"--hostname={name}@%h",
        "--pool=solo",
        "--without-gossip",
        "--without-mingle",
        "--loglevel=INFO",
    ]


def _upload(base: str, token: str, path: Path) -> str:
    boundary = uuid.uuid4().hex
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{path.name}"'
            "\r\nContent-Type: application/json\r\n\r\n"
        ).encode()
        + path.read_bytes()
        + f"\r\n--{boundary}--\r\n".encode()
    )
    request = urllib.request.Request(
        f"{base}/api/v1/projects/queues/uploads",
        data=body,
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": f"multipart/form-data; boundary={boundary}",
        },
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 202
        return json.loads(response.read())["status_url"]


def _status(url: str, token: str) -> dict | None:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        data = json.loads(response.read())
    return data if data["status"] in ("done", "failed") else None


def _reachable(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def _received(log: Path, task: str) -> bool:
    return bool(re.search(rf"Task {re.escape(task)}\[[^\]]+\] received", log.read_text()))


def _succeeded(log: Path, task: str) -> bool:
    return bool(re.search(rf"Task {re.escape(task)}\[[^\]]+\] succeeded", log.read_text()))


def test_it_runs_each_queue_on_the_worker_that_consumes_it(tmp_path):
    trace = shared_file("who_and_when/Who&When/Hand-Crafted/1.json")
    with redis_server(tmp_path / "redis") as redis_url:
        env = service_env(tmp_path / "var", redis_url)
        env["FAULTLINE_CACHE_URL"] = f"{redis_url}/2"
        manage = [PYTHON, "manage.py"]
        subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, cwd=REPO_ROOT)
        setup = subprocess.run(
            [*manage, "shell", "--no-imports", "-c", SETUP],
            env=env,
            check=True,
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
        )
        token = re.search(r"TOKEN=(\S+)", setup.stdout).group(1)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        web = [
            PYTHON,
            "-m",
            "gunicorn",
            "faultline.wsgi:application",
            f"--bind=127.0.0.1:{port}",
            "--workers=2",
            "--threads=2",
            "--worker-class=gthread",
        ]
        ingest_log, rest_log = tmp_path / "ingest.log", tmp_path / "rest.log"
        with (
            background(_worker("ingest", "ingest"), env=env, log=ingest_log),
            background(
                _worker("attribution,analysis,export,celery", "rest"), env=env, log=rest_log
            ),
            background(web, env=env, log=tmp_path / "web.log"),
        ):
            wait_for(lambda: _reachable(f"{base}/login/"), timeout=60, what="gunicorn")
            status_url = _upload(base, token, trace)
            status = wait_for(
                lambda: _status(status_url, token), timeout=120, what="the ingest", interval=0.25
            )
            assert status["status"] == "done", status["error"]
            wait_for(
                lambda: _succeeded(rest_log, "pipeline.tasks.refresh_project"),
                timeout=180,
                what="the refresh on the analysis worker",
                interval=0.25,
            )
        assert _succeeded(ingest_log, "pipeline.tasks.ingest_upload")
        assert not _received(ingest_log, "pipeline.tasks.refresh_project")
        assert not _received(rest_log, "pipeline.tasks.ingest_upload")
