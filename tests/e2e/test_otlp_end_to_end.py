"""OTLP end to end with real services: redis-server, a Celery worker process, gunicorn, and
the real OpenTelemetry SDK exporter in a process of its own.

The agent (tests/ingest/otlp/trip_agent.py) sends a multi-agent rollout in several
batches, one span twice and one after the root; the worker assembles it (the test polls
the project's rollout export with a deadline), then the periodic closing task, queued to
the same worker, closes it and the project's refresh attributes it.
"""

from __future__ import annotations

import json
import re
import subprocess
import urllib.request

import pytest

from tests.ingest.otlp.exporters import exporter_env, run_python
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

AGENT = REPO_ROOT / "tests" / "ingest" / "otlp" / "trip_agent.py"
SETUP = """
from django.contrib.auth import get_user_model
from projects.tokens import project_token_issue
from projects.services import project_create
user = get_user_model().objects.create_user("alice", "a@example.com", "alice-pass-123")
project = project_create(name="OTLP", slug="otlp", owner=user)
print("TOKEN=" + project_token_issue(project=project))
"""
CLOSE = "from pipeline.tasks import close_quiet_traces; close_quiet_traces.delay()"
STATE = """
from ingest.models import LiveTrace
from attribution.models import TrajectoryAttribution
live = LiveTrace.objects.get()
attributed = TrajectoryAttribution.objects.filter(trajectory_id=live.rollout_id).exists()
print(f"STATE={live.state} ATTRIBUTED={attributed}")
"""


def _shell(manage: list[str], env: dict[str, str], code: str) -> str:
    return subprocess.run(
        [*manage, "shell", "-c", code],
        env=env,
        check=True,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    ).stdout


def _rollouts(base: str, token: str) -> list[dict]:
    request = urllib.request.Request(
        f"{base}/api/v1/projects/otlp/rollouts.jsonl", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return [json.loads(line) for line in response.read().splitlines() if line.strip()]
    except OSError:
        return []


def test_it_receives_an_otel_rollout_with_a_real_worker(tmp_path):
    with redis_server(tmp_path / "redis") as redis_url:
        env = service_env(tmp_path / "var", redis_url)
        env.update(
            DJANGO_SETTINGS_MODULE="faultline.settings",
            # Closed as soon as the closing task sees the root ended.
            FAULTLINE_OTLP_CLOSE_AFTER_SECONDS="0",
        )
        manage = [PYTHON, str(REPO_ROOT / "manage.py")]
        subprocess.run(
            [*manage, "migrate", "--no-input", "-v0"], env=env, check=True, cwd=REPO_ROOT
        )
        token = re.search(r"TOKEN=(\S+)", _shell(manage, env, SETUP)).group(1)
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
        web_cmd = [
            str(REPO_ROOT / ".venv" / "bin" / "gunicorn"),
            "faultline.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
        ]
        with (
            background(worker_cmd, env=env, log=tmp_path / "worker.log") as worker,
            background(web_cmd, env=env, log=tmp_path / "web.log"),
        ):
            wait_for(lambda: _reachable(f"{base}/login/"), timeout=60, what="the web server")
            agent_env = exporter_env(base, token, OTEL_EXPORTER_OTLP_COMPRESSION="gzip")
            assert "duplicate export: ok" in run_python([str(AGENT)], agent_env)

            def assembled() -> dict | None:
                rollouts = _rollouts(base, token)
                done = len(rollouts) == 1 and len(rollouts[0]["steps"]) == 9
                return rollouts[0] if done else None

            rollout = wait_for(assembled, timeout=120, what="the worker to assemble the trace")
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()
            assert [(s["kind"], s.get("tool_name", "")) for s in rollout["steps"]] == [
                ("message", ""),
                ("message", ""),
                ("tool_call", "search_flights"),
                ("tool_result", "search_flights"),
                ("message", ""),
                ("tool_call", "book_hotel"),
                ("tool_result", "book_hotel"),
                ("tool_call", "send_summary"),
                ("tool_result", "send_summary"),
            ]
            assert rollout["outcome"] == "failure"

            _shell(manage, env, CLOSE)
            wait_for(
                lambda: "STATE=closed ATTRIBUTED=True" in _shell(manage, env, STATE),
                timeout=180,
                what="the worker to close the trace and attribute its rollout",
                interval=1.0,
            )


def _reachable(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False
