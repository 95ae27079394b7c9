"""manage.py export: files and manifest in --out, clear errors and a non-zero exit."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command

from exports.core.filters import MSG_BAD_ALPHA
from exports.core.writer import file_sha256
from exports.management.commands.repair_export import MSG_NO_PROJECT
from tests.services import REPO_ROOT

pytestmark = pytest.mark.django_db


def test_it_writes_the_files_and_manifest(small_project, tmp_path, capsys):
    call_command(
        "repair_export",
        project=small_project.slug,
        kinds="sft,diagnosis",
        out=str(tmp_path / "out"),
    )
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == [
        "diagnosis.jsonl",
        "diagnosis.schema.json",
        "manifest.json",
        "manifest.schema.json",
        "sft.jsonl",
        "sft.schema.json",
    ]
    manifest = json.loads((out / "manifest.json").read_text())
    for entry in manifest["files"] + manifest["schemas"]:
        assert file_sha256(out / entry["name"]) == entry["sha256"]
    assert "sft.jsonl" in capsys.readouterr().out


def test_it_applies_the_filters(small_project, tmp_path):
    call_command(
        "repair_export",
        "--environment",
        "retail",
        "--kinds",
        "diagnosis",
        "--out",
        str(tmp_path),
        project=small_project.slug,
    )
    lines = [json.loads(x) for x in (tmp_path / "diagnosis.jsonl").read_text().splitlines()]
    assert [line["metadata"]["rollout"] for line in lines] == ["r1"]  # r2 has no label


def test_it_names_a_missing_project(small_project, tmp_path):
    with pytest.raises(CommandError) as caught:
        call_command("repair_export", project="nope", out=str(tmp_path))
    assert str(caught.value) == MSG_NO_PROJECT.format(slug="nope", known="acme")


def test_it_explains_a_bad_filter(small_project, tmp_path):
    with pytest.raises(CommandError, match=re.escape(MSG_BAD_ALPHA)):
        call_command("repair_export", "--alpha", "7", project=small_project.slug, out=str(tmp_path))


def test_it_exits_non_zero_with_a_clear_message(tmp_path):
    env = {"FAULTLINE_CACHE_URL": "", "FAULTLINE_VAR_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v", "0"], cwd=REPO_ROOT, env=env, check=True
    )
    result = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "export",
            "--project",
            "ghost",
            "--kinds",
            "sft",
            "--out",
            str(tmp_path / "o"),
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert "No project with slug 'ghost'" in result.stderr


def test_it_still_answers_to_its_former_name(small_project, tmp_path):
    call_command("export", project=small_project.slug, kinds="sft", out=str(tmp_path / "out"))
    assert (tmp_path / "out" / "manifest.json").exists()
