"""The API's answer to the bytes of an earlier upload sent under another name: that upload,
with its name (``same_content_as``) and a ``message`` saying what sending the file did."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.conftest import ingest_bytes
from tests.dashboard.api.conftest import auth

pytestmark = pytest.mark.django_db

GOOD = b'{"id": "r1", "steps": [{"role": "user", "content": "hi"}]}\n'
BAD = GOOD + GOOD + b'{"id": "r3", "steps": [{"content": "no role"}]}\n'


def test_it_says_so_in_the_api_answer(client, project, token_of_project):
    ingest_bytes(project, BAD, "bad_line3.jsonl")
    response = client.post(
        f"/api/v1/projects/{project.slug}/uploads",
        {"file": SimpleUploadedFile("other.jsonl", BAD)},
        **auth(token_of_project),
    )
    assert response.status_code == 200
    body = response.json()
    assert body["same_content_as"] == "bad_line3.jsonl"
    assert body["message"].startswith("other.jsonl has the same content as bad_line3.jsonl")


def test_it_says_a_failed_twin_is_read_again_with_a_format_named(
    client, project, token_of_project, django_capture_on_commit_callbacks
):
    ingest_bytes(project, BAD, "bad_line3.jsonl")
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post(
            f"/api/v1/projects/{project.slug}/uploads",
            {"file": SimpleUploadedFile("other.jsonl", BAD), "format": "native"},
            **auth(token_of_project),
        )
    assert response.status_code == 202
    assert response.json()["message"].endswith("which failed: that upload is read again.")


def test_a_new_file_has_no_same_content_message(client, project, token_of_project):
    response = client.post(
        f"/api/v1/projects/{project.slug}/uploads",
        {"file": SimpleUploadedFile("new.jsonl", GOOD)},
        **auth(token_of_project),
    )
    assert response.status_code == 202
    assert "same_content_as" not in response.json() and "message" not in response.json()
