"""``manage.py ingest`` on a native file with a bad field: the error names the file, the
line and the field, the command fails (exit status 1) and nothing is stored."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from ingest.core.validate import MSG_NOT_LIST
from ingest.models import Trajectory, Upload

pytestmark = pytest.mark.django_db

GOOD = {"id": "r1", "outcome": "failure", "steps": [{"role": "user", "content": "hi"}]}


def test_it_fails_naming_the_line_and_field(project, tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps({"id": "x", "steps": "nope"}) + "\n" + json.dumps(GOOD) + "\n")
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError) as caught:
        call_command(
            "ingest", str(path), "--project", project.slug, "--sync", stdout=out, stderr=err
        )
    assert caught.value.returncode == 1  # what manage.py exits with
    assert f"FAILED runs.jsonl, line 1, field steps: {MSG_NOT_LIST}" in err.getvalue()
    assert Upload.objects.get().status == "failed"
    assert Trajectory.objects.count() == 0
