"""The typed environment readers behind settings.py: bad values fail loudly, by name."""

from __future__ import annotations

import doctest
import os
import subprocess
import sys
from pathlib import Path

import pytest

from faultline import env
from faultline.env import SettingError, env_choice

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_the_examples_in_the_module_hold():
    assert doctest.testmod(env).failed == 0


def test_a_choice_outside_the_set_names_the_variable_and_the_choices(monkeypatch):
    monkeypatch.setenv("FAULTLINE_EMBEDDINGS", "word2vec")
    with pytest.raises(SettingError) as error:
        env_choice("FAULTLINE_EMBEDDINGS", "wordllama", ("wordllama", "tfidf", "minilm"))
    assert str(error.value) == (
        "FAULTLINE_EMBEDDINGS='word2vec' is not one of: wordllama, tfidf, minilm."
    )


def test_an_empty_choice_takes_the_default(monkeypatch):
    monkeypatch.setenv("FAULTLINE_EMBEDDINGS", "  ")
    assert env_choice("FAULTLINE_EMBEDDINGS", "wordllama", ("wordllama", "tfidf")) == "wordllama"


def test_the_product_refuses_to_start_with_an_unknown_embedding_backend():
    environment = {**os.environ, "FAULTLINE_EMBEDDINGS": "bert"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "FAULTLINE_EMBEDDINGS='bert' is not one of: wordllama, tfidf, minilm." in result.stderr


def test_the_local_redis_follows_the_port_make_run_gives_it():
    """A CLI beside a `make run` on FAULTLINE_REDIS_PORT said the queue was unreachable."""
    code = (
        "from django.conf import settings; "
        "print(settings.FAULTLINE_CELERY_BROKER_URL, settings.FAULTLINE_CELERY_RESULT_BACKEND)"
    )
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("FAULTLINE_BROKER_URL", "FAULTLINE_RESULT_BACKEND")
    }
    environment.update(FAULTLINE_REDIS_PORT="6397", DJANGO_SETTINGS_MODULE="faultline.settings")
    result = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.stdout.split() == ["redis://127.0.0.1:6397/0", "redis://127.0.0.1:6397/1"]


def test_a_var_dir_s_run_urls_are_used_unless_the_environment_names_others(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "instance.env").write_text(
        "FAULTLINE_BROKER_URL=redis://127.0.0.1:6471/0\n"
        "FAULTLINE_RESULT_BACKEND=redis://127.0.0.1:6471/1\n"
        "FAULTLINE_CACHE_URL=redis://127.0.0.1:6471/2\n"
    )
    code = (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.FAULTLINE_CELERY_BROKER_URL, settings.FAULTLINE_CELERY_RESULT_BACKEND, "
        "settings.CACHES['default'].get('LOCATION', 'none'))"
    )
    base = {key: value for key, value in os.environ.items() if not key.startswith("FAULTLINE_")}
    base.update(FAULTLINE_VAR_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="faultline.settings")

    def urls(**extra: str) -> list[str]:
        result = subprocess.run(
            [sys.executable, "-c", code], cwd=REPO_ROOT, env={**base, **extra},
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        return result.stdout.split()

    run = "redis://127.0.0.1:6471"
    assert urls() == [f"{run}/0", f"{run}/1", f"{run}/2"]
    mine = "redis://10.0.0.5:6379"
    assert urls(FAULTLINE_BROKER_URL=f"{mine}/0", FAULTLINE_CACHE_URL="") == [
        f"{mine}/0",
        f"{run}/1",
        "none",
    ]
