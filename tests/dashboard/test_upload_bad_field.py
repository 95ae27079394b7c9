"""A native file with a bad field, uploaded from the page or the API: its status says
failed with the file, the line and the field (it used to say "unknown format")."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from ingest.core.validate import MSG_NOT_LIST
from ingest.models import Trajectory, Upload
from pipeline.tasks import ingest_upload
from projects.tokens import project_token_issue

pytestmark = pytest.mark.django_db

GOOD = {"id": "r1", "outcome": "failure", "steps": [{"role": "user", "content": "hi"}]}
BAD_FIRST_LINE = (json.dumps({"id": "x", "steps": "nope"}) + "\n" + json.dumps(GOOD)).encode()
EXPECTED = f"runs.jsonl, line 1, field steps: {MSG_NOT_LIST}"


def _run_the_queued_ingest() -> Upload:
    """What the worker does with the task queued on commit."""
    upload = Upload.objects.get()
    ingest_upload(upload.pk)
    return Upload.objects.get(pk=upload.pk)


def test_the_uploads_page_shows_the_line_and_field(
    client, owner, project, django_capture_on_commit_callbacks
):
    client.force_login(owner)
    url = reverse("dashboard:uploads", args=[project.slug])
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post(url, {"files": SimpleUploadedFile("runs.jsonl", BAD_FIRST_LINE)})
    assert response.status_code == 302
    upload = _run_the_queued_ingest()
    assert upload.status == "failed" and upload.error_message == EXPECTED
    html = client.get(url).content.decode()
    assert f'<div class="error-text">{EXPECTED}</div>' in html
    status = client.get(reverse("dashboard:upload_status", args=[project.slug, upload.pk]))
    assert status.json()["status"] == "failed" and status.json()["error"] == EXPECTED
    assert Trajectory.objects.count() == 0


def test_the_api_upload_status_says_failed_with_the_line_and_field(
    client, project, django_capture_on_commit_callbacks
):
    auth = {"HTTP_AUTHORIZATION": f"Bearer {project_token_issue(project=project)}"}
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post(
            f"/api/v1/projects/{project.slug}/uploads",
            {"file": SimpleUploadedFile("runs.jsonl", BAD_FIRST_LINE)},
            **auth,
        )
    assert response.status_code == 202
    _run_the_queued_ingest()
    status = client.get(response.json()["status_url"], **auth)
    assert status.status_code == 200
    assert status.json()["status"] == "failed"
    assert status.json()["error"] == EXPECTED
    assert status.json()["trajectories"] == 0
    assert Trajectory.objects.count() == 0
