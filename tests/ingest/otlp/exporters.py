"""Running OpenTelemetry exporters in processes of their own, configured as the docs say."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]


def exporter_env(base_url: str, token: str, **extra: str) -> dict[str, str]:
    """The two variables docs/send-traces.md tells an agent engineer to set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(
        OTEL_EXPORTER_OTLP_ENDPOINT=base_url,
        OTEL_EXPORTER_OTLP_HEADERS=f"Authorization=Bearer%20{token}",
        PYTHONPATH=str(REPO_ROOT),
        **extra,
    )
    return env


def run_python(args: list[str], env: dict[str, str]) -> str:
    """Run ``python <args>`` to completion; its standard output (stderr in the failure)."""
    result = subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout
