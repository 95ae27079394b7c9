"""Every log line carries its time and level, in one format for the web (Django's
handler), the worker and beat (Celery's, configured from the same strings)."""

from __future__ import annotations

import os
import re
import subprocess

from django.conf import settings

from faultline.celery import app
from tests.services import PYTHON, REPO_ROOT

# [2026-05-01 12:00:00,123: WARNING/MainProcess] pipeline.jobs: message
LINE = re.compile(
    r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}: (?P<level>[A-Z]+)/(?P<process>\w+)\] "
    r"(?P<logger>[\w.]+): (?P<message>.*)$"
)


def test_it_writes_the_time_and_level_on_a_django_log_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAULTLINE_")}
    env.update(FAULTLINE_VAR_DIR=str(tmp_path), FAULTLINE_CACHE_URL="")
    code = "import logging; logging.getLogger('pipeline.jobs').warning('the sweeper is late')"
    done = subprocess.run(
        [PYTHON, "manage.py", "shell", "-c", code],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    line = LINE.match(lines[0])
    assert line is not None, lines[0]
    assert line.group("level", "process", "logger", "message") == (
        "WARNING",
        "MainProcess",
        "pipeline.jobs",
        "the sweeper is late",
    )


def test_the_worker_and_beat_write_the_same_format():
    assert app.conf.worker_log_format == settings.LOG_FORMAT
    assert settings.LOGGING["formatters"]["line"]["format"] == settings.LOG_FORMAT
    assert app.conf.worker_task_log_format == settings.LOG_TASK_FORMAT
    assert settings.LOG_TASK_FORMAT.startswith(settings.LOG_FORMAT.split("%(name)s")[0])
