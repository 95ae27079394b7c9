"""The secret key file: random, private and the same for every process that reads it."""

from __future__ import annotations

import doctest
import stat

from faultline import secret_key
from faultline.secret_key import secret_key_from_file


def test_the_examples_in_the_module_hold():
    assert doctest.testmod(secret_key).failed == 0


def test_it_writes_the_file_readable_by_its_owner_only(tmp_path):
    secret_key_from_file(tmp_path / "var" / "secret_key")
    assert stat.S_IMODE((tmp_path / "var" / "secret_key").stat().st_mode) == 0o600


def test_it_keeps_a_key_that_is_already_there(tmp_path):
    path = tmp_path / "secret_key"
    path.write_text("kept-key\n")
    assert secret_key_from_file(path) == "kept-key"


def test_it_makes_a_different_key_for_each_new_file(tmp_path):
    assert secret_key_from_file(tmp_path / "a") != secret_key_from_file(tmp_path / "b")


def test_it_leaves_no_draft_file_behind(tmp_path):
    secret_key_from_file(tmp_path / "secret_key")
    assert [p.name for p in tmp_path.iterdir()] == ["secret_key"]
