"""Production security settings: `check --deploy` is clean under the production variables,
HTTPS-only cookies and HSTS follow FAULTLINE_HTTPS, and SECRET_KEY never falls back to a
published string."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
# A deployment over HTTPS as docs/deploy.md describes it (the key is made up for the test).
PRODUCTION_ENV = {
    "FAULTLINE_DEBUG": "false",
    "FAULTLINE_HTTPS": "true",
    "FAULTLINE_ALLOWED_HOSTS": "faultline.example.com",
    "FAULTLINE_SECRET_KEY": "t3st-only-" + "k8Zq2vX9mW4pL7sN1rB6yH3jD5fG0cT" * 2,
}
HTTPS_SETTINGS = (
    "(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS)"
)


def _manage(args: list[str], var_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """manage.py in a fresh process with only the given FAULTLINE_* variables set."""
    environment = {
        key: value
        for key, value in os.environ.items()
        # The test run's own switches (make test sets DJANGO_ALLOW_ASYNC_UNSAFE for
        # Playwright) are not part of a production environment.
        if not key.startswith("FAULTLINE_")
        and key not in {"DATABASE_URL", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    }
    environment.update(FAULTLINE_VAR_DIR=str(var_dir), FAULTLINE_CACHE_URL="", **env)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _settings(expression: str, var_dir: Path, **env: str) -> str:
    code = f"from django.conf import settings as s; print({expression})"
    result = _manage(["shell", "--no-imports", "-c", code], var_dir, **env)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_it_passes_check_deploy_without_a_warning_under_production_settings(tmp_path):
    result = _manage(["check", "--deploy", "--fail-level", "WARNING"], tmp_path, **PRODUCTION_ENV)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


def test_it_makes_cookies_https_only_and_sends_hsts_when_served_over_https(tmp_path):
    assert _settings(HTTPS_SETTINGS, tmp_path, **PRODUCTION_ENV) == "(True, True, True, 31536000)"


def test_it_keeps_cookies_usable_over_plain_http_by_default(tmp_path):
    assert _settings(HTTPS_SETTINGS, tmp_path) == "(False, False, False, 0)"


def test_it_takes_the_secret_key_from_the_environment(tmp_path):
    key = PRODUCTION_ENV["FAULTLINE_SECRET_KEY"]
    assert _settings("s.SECRET_KEY", tmp_path, FAULTLINE_SECRET_KEY=key) == key
    assert not (tmp_path / "secret_key").exists()


def test_it_generates_a_private_secret_key_file_when_none_is_set(tmp_path):
    first = _settings("s.SECRET_KEY", tmp_path)
    key_file = tmp_path / "secret_key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert len(first) >= 50 and key_file.read_text().strip() == first
    assert _settings("s.SECRET_KEY", tmp_path) == first  # the next process reads the same key


def test_it_publishes_no_default_secret_key_in_env_example():
    lines = (REPO_ROOT / ".env.example").read_text().splitlines()
    values = [line.partition("=")[2] for line in lines if line.startswith("FAULTLINE_SECRET_KEY=")]
    assert values == [""]
