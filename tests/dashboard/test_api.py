"""The upload API: token auth, 202 with a status URL, 4xx for what it sees at once."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from ingest.models import Upload
from ingest.services import MSG_BAD_FILENAME, MSG_EMPTY_UPLOAD
from projects.tokens import project_token_issue

pytestmark = pytest.mark.django_db

LINE = b'{"id": "r1", "outcome": "failure", "steps": [{"role": "user", "content": "hi"}]}\n'


@pytest.fixture
def token(project):
    return project_token_issue(project=project)


def _post(client, project, token, **fields):
    return client.post(
        f"/api/v1/projects/{project.slug}/uploads", fields, HTTP_AUTHORIZATION=f"Bearer {token}"
    )


def test_it_accepts_an_upload_with_202_and_a_status_url(
    client, project, token, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = _post(client, project, token, file=SimpleUploadedFile("a.jsonl", LINE))
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "queued" and body["created"] is True
    assert body["status_url"].endswith(f"/api/v1/projects/{project.slug}/uploads/{body['id']}")
    assert len(callbacks) == 1  # the ingest task is dispatched on commit
    status = client.get(body["status_url"], HTTP_AUTHORIZATION=f"Bearer {token}")
    assert status.status_code == 200 and status.json()["id"] == body["id"]


def test_it_returns_the_existing_upload_for_the_same_file(client, project, token):
    first = _post(client, project, token, file=SimpleUploadedFile("a.jsonl", LINE)).json()
    second = _post(client, project, token, file=SimpleUploadedFile("b.jsonl", LINE))
    assert second.status_code == 200
    assert second.json()["id"] == first["id"] and second.json()["created"] is False
    assert Upload.objects.count() == 1


def test_it_refuses_requests_without_a_valid_token(client, project, token):
    response = client.post(
        f"/api/v1/projects/{project.slug}/uploads", {"file": SimpleUploadedFile("a.jsonl", LINE)}
    )
    assert response.status_code == 404
    response = _post(client, project, "flt_wrong", file=SimpleUploadedFile("a.jsonl", LINE))
    assert response.status_code == 404
    assert Upload.objects.count() == 0


def test_it_answers_400_for_an_empty_file(client, project, token):
    response = _post(client, project, token, file=SimpleUploadedFile("empty.jsonl", b""))
    assert response.status_code == 400
    assert response.json()["error"] == MSG_EMPTY_UPLOAD.format(name="empty.jsonl")
    assert Upload.objects.count() == 0


def test_it_answers_400_for_a_path_in_the_name(client, project, token):
    response = _post(
        client, project, token, file=SimpleUploadedFile("x.jsonl", LINE), name="../../etc/passwd"
    )
    assert response.status_code == 400
    assert response.json()["error"] == MSG_BAD_FILENAME.format(name="../../etc/passwd")
    assert Upload.objects.count() == 0


def test_it_answers_400_without_a_file(client, project, token):
    response = _post(client, project, token)
    assert response.status_code == 400


def test_it_answers_400_for_an_unknown_format(client, project, token):
    response = _post(
        client, project, token, file=SimpleUploadedFile("a.jsonl", LINE), format="nope"
    )
    assert response.status_code == 400
    assert "Unknown format 'nope'" in response.json()["error"]
