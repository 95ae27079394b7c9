"""End to end with real services: redis-server, a Celery worker process, the web server.

A trace log goes in through the HTTP API with the project's token; the test waits on the
status URL (polling with a deadline) and then reads the rollout page as a logged-in user.
"""

from __future__ import annotations

import http.cookiejar
import json
import re
import subprocess
import urllib.parse
import urllib.request
import uuid

import pytest

from tests.conftest import shared_file
from tests.services import (
    PYTHON,
    REPO_ROOT,
    background,
    free_port,
    redis_server,
    service_env,
    wait_for,
)

pytestmark = pytest.mark.services

SETUP = """
from django.contrib.auth import get_user_model
from projects.tokens import project_token_issue
from projects.services import project_create
user = get_user_model().objects.create_user("alice", "a@example.com", "alice-pass-123")
project = project_create(name="E2E", slug="e2e", owner=user)
print("TOKEN=" + project_token_issue(project=project))
"""


def _multipart(name: str, content: bytes) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
            "Content-Type: application/json\r\n\r\n"
        ).encode()
        + content
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return body, f"multipart/form-data; boundary={boundary}"


def _upload(base: str, token: str, name: str, content: bytes) -> str:
    body, content_type = _multipart(name, content)
    request = urllib.request.Request(
        f"{base}/api/v1/projects/e2e/uploads",
        data=body,
        headers={"Authorization": f"Bearer {token}", "Content-Type": content_type},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 202
        return json.loads(response.read())["status_url"]


def _wait_finished(status_url: str, token: str) -> dict:
    def finished():
        req = urllib.request.Request(status_url, headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            data = json.loads(resp.read())
        return data if data["status"] in ("done", "failed") else None

    return wait_for(finished, timeout=120, what="the worker to finish the upload", interval=0.25)


def test_it_ingests_through_the_api_with_a_real_worker(tmp_path):
    trace = shared_file("who_and_when/Who&When/Hand-Crafted/1.json")
    with redis_server(tmp_path / "redis") as redis_url:
        env = service_env(tmp_path / "var", redis_url)
        manage = [PYTHON, str(REPO_ROOT / "manage.py")]
        subprocess.run(
            [*manage, "migrate", "--no-input", "-v0"], env=env, check=True, cwd=REPO_ROOT
        )
        out = subprocess.run(
            [*manage, "shell", "-c", SETUP],
            env=env,
            check=True,
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
        ).stdout
        token = re.search(r"TOKEN=(\S+)", out).group(1)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        worker_cmd = [
            PYTHON,
            "-m",
            "celery",
            "-A",
            "faultline",
            "worker",
            "--pool=solo",
            "--without-gossip",
            "--without-mingle",
            "--loglevel=INFO",
        ]
        web_cmd = [*manage, "runserver", f"127.0.0.1:{port}", "--noreload", "--skip-checks"]
        with (
            background(worker_cmd, env=env, log=tmp_path / "worker.log") as worker,
            background(web_cmd, env=env, log=tmp_path / "web.log"),
        ):
            wait_for(lambda: _reachable(f"{base}/login/"), timeout=60, what="the web server")

            # A broken file first: it fails with a clear message and the worker stays up.
            bad = _wait_finished(
                _upload(base, token, "broken.jsonl", b'{"id": "x", "steps": [\n'), token
            )
            assert bad["status"] == "failed"
            assert bad["error"].startswith("broken.jsonl, line 1: Malformed JSON")
            assert bad["trajectories"] == 0

            status = _wait_finished(_upload(base, token, trace.name, trace.read_bytes()), token)
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()
            assert status["status"] == "done", status["error"]
            assert (status["trajectories"], status["steps"], status["labels"]) == (1, 29, 1)

            opener = _login(base, "alice", "alice-pass-123")
            project_page = opener.open(f"{base}/p/e2e/rollouts/", timeout=30).read().decode()
            rollout_url = re.search(r'href="(/p/e2e/rollouts/\d+/)"', project_page).group(1)
            page = opener.open(base + rollout_url, timeout=30).read().decode()
            assert 'id="step-28"' in page
            assert "WebSurfer" in page
            assert "labelled decisive step" in page


def _reachable(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def _login(base: str, username: str, password: str) -> urllib.request.OpenerDirector:
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    html = opener.open(f"{base}/login/", timeout=30).read().decode()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
    data = urllib.parse.urlencode(
        {"username": username, "password": password, "csrfmiddlewaretoken": csrf, "next": "/"}
    ).encode()
    request = urllib.request.Request(
        f"{base}/login/", data=data, headers={"Referer": f"{base}/login/"}
    )
    final = opener.open(request, timeout=30)
    assert "/login/" not in final.geturl(), "login failed"
    return opener
