"""Ctrl-C in any manage.py command (make run's migrate and collectstatic among them) ends
it with one line and exit 130, not a Python traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_an_interrupted_command_says_so_in_one_line(tmp_path):
    ready = tmp_path / "ready"
    script = f"import pathlib, time; pathlib.Path({str(ready)!r}).touch(); time.sleep(60)"
    env = {**os.environ, "FAULTLINE_VAR_DIR": str(tmp_path)}
    process = subprocess.Popen(
        [sys.executable, "manage.py", "shell", "-c", script],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Started as a terminal starts it: a process started with SIGINT ignored keeps it
        # ignored (Python then installs no KeyboardInterrupt), and whether the test's own
        # process ignores it depends on what ran before it in the same worker.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    while not ready.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ready.exists(), process.communicate()
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert err.strip() == "shell interrupted."
