"""A rollout id the project already had is kept twice, and the upload says so: uploading a
file again with a changed verdict left the old failure in every figure and export while
the new copy answered the API."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from tests.conftest import ingest_bytes

pytestmark = pytest.mark.django_db


def _line(rollout_id: str, outcome: str) -> str:
    steps = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "done"}]
    return json.dumps({"id": rollout_id, "outcome": outcome, "steps": steps}) + "\n"


def test_an_upload_counts_the_ids_the_project_already_had(project):
    first = ingest_bytes(
        project, (_line("a", "failure") + _line("b", "failure")).encode(), "1.jsonl"
    )
    assert first.repeated_ids == 0
    second = ingest_bytes(
        project, (_line("a", "success") + _line("c", "failure")).encode(), "2.jsonl"
    )
    assert second.status == "done" and second.repeated_ids == 1
    twice = ingest_bytes(project, (_line("d", "failure") * 2).encode(), "3.jsonl")
    assert twice.repeated_ids == 2  # the same id twice in one file


def test_the_uploads_page_and_the_api_say_so(client, member, project):
    from projects.tokens import project_token_issue

    ingest_bytes(project, _line("a", "failure").encode(), "1.jsonl")
    again = ingest_bytes(project, _line("a", "success").encode(), "2.jsonl")
    client.force_login(member)
    html = client.get(reverse("dashboard:uploads", args=[project.slug])).content.decode()
    assert 'data-role="repeated-ids"' in html and "1 rollout of this file has an id" in html
    token = project_token_issue(project=project)
    answer = client.get(
        f"/api/v1/projects/{project.slug}/uploads/{again.pk}", HTTP_AUTHORIZATION=f"Bearer {token}"
    ).json()
    assert answer["repeated_ids"] == 1


def test_the_cli_says_so(project, tmp_path, capsys):
    ingest_bytes(project, _line("a", "failure").encode(), "1.jsonl")
    path = tmp_path / "again.jsonl"
    path.write_text(_line("a", "success"))
    call_command("ingest", str(path), "--project", project.slug, "--sync")
    assert "1 of its rollouts has an id the project already had" in capsys.readouterr().out
