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
