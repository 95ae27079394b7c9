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
