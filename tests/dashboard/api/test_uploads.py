"""Upload status and retry through the API (creation: tests/dashboard/test_api.py)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from dashboard.api.uploads import MSG_NO_FILE, MSG_NO_FILE_READ, MSG_NOT_FAILED
from ingest.models import Upload
from ingest.services import MSG_DATABASE_REFUSED
from tests.conftest import ingest_bytes
from tests.dashboard.api.conftest import auth

pytestmark = pytest.mark.django_db
URL = "/api/v1/projects/acme/uploads"


@pytest.fixture
def failed_upload(project):
    """Failed as ingest leaves an upload whose write the database refused: a retry can help
    (one that failed on its content is refused: tests/dashboard/test_upload_retry.py)."""
    upload = ingest_bytes(project, b'{"id": "r1", "steps": [{"role": "user"}]}\n', "fine.jsonl")
    Upload.objects.filter(pk=upload.pk).update(
        status="failed",
        error_message=MSG_DATABASE_REFUSED.format(name="fine.jsonl", error="disk is full"),
    )
    return Upload.objects.get(pk=upload.pk)


def test_it_queues_a_failed_upload_again(
    client, project, token_of_project, failed_upload, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(f"{URL}/{failed_upload.pk}/retry", **auth(token_of_project))
    assert response.status_code == 202
    assert response.json()["status"] == "queued" and response.json()["error"] == ""
    assert Upload.objects.get(pk=failed_upload.pk).status == "queued"
    assert len(callbacks) == 1  # sent to a worker once committed


def test_it_answers_409_for_an_upload_that_did_not_fail(client, api_project, token):
    upload = api_project.uploads.get()
    response = client.post(f"{URL}/{upload.pk}/retry", **auth(token))
    assert response.status_code == 409
    assert response.json() == {"error": MSG_NOT_FAILED.format(status="done")}


def test_it_reports_the_status_with_its_counts(client, api_project, token):
    upload = api_project.uploads.get()
    body = client.get(f"{URL}/{upload.pk}", **auth(token)).json()
    assert (body["status"], body["trajectories"], body["progress"]["percent"]) == ("done", 7, 100)
    assert "created" not in body  # only the creation says whether it made the upload


def test_it_answers_404_for_another_projects_upload(client, api_project, token, other_project):
    theirs = ingest_bytes(other_project, b'{"id": "o1", "steps": []}\n', "o.jsonl")
    response = client.get(f"{URL}/{theirs.pk}", **auth(token))
    assert response.status_code == 404


def test_it_names_the_file_field_when_it_is_missing(client, project, token_of_project):
    response = client.post(URL, {"name": "x.jsonl"}, **auth(token_of_project))
    assert response.status_code == 400
    assert response.json() == {"error": MSG_NO_FILE_READ, "field": "file"}
    raw = client.post(URL, b"{}", content_type="application/json", **auth(token_of_project))
    assert raw.json() == {"error": MSG_NO_FILE, "field": "file"}


def test_a_multipart_body_cut_short_is_said_to_be_so(client, project, token_of_project):
    # The field is named file; the body stops before its closing boundary.
    body = (
        b'--XYZ\r\nContent-Disposition: form-data; name="file"; filename="a.jsonl"\r\n'
        b'Content-Type: application/octet-stream\r\n\r\n{"id": "r1"'
    )
    response = client.post(
        URL, body, content_type="multipart/form-data; boundary=XYZ", **auth(token_of_project)
    )
    assert response.status_code == 400
    assert response.json() == {"error": MSG_NO_FILE_READ, "field": "file"}


def test_it_refuses_a_nul_in_the_name(client, project, token_of_project):
    upload = SimpleUploadedFile("a.jsonl", b'{"id": "r1", "steps": []}\n')
    response = client.post(URL, {"file": upload, "name": "a\x00.jsonl"}, **auth(token_of_project))
    assert response.status_code == 400 and response.json()["field"] == "name"
    assert not Upload.objects.exists()


SWE_TRAJ = (
    "swe_agent/tests/test_data/trajectories/gpt4__swe-agent__test-repo__default_from_url__"
    "t-0.00__p-0.95__c-3.00__install-1/swe-agent__test-repo-i1.traj"
)


def test_the_uploader_names_the_agent_system_of_a_file_that_names_its_framework(
    client, project, token_of_project
):
    # SWE-agent and OpenHands files say "SWE-agent" / "OpenHands": one coding agent run
    # under both became two systems, each needing its own labels before any claim.
    from ingest.models import Trajectory
    from ingest.services import upload_ingest
    from tests.conftest import shared_file

    path = shared_file(SWE_TRAJ)
    upload = SimpleUploadedFile(path.name, path.read_bytes())
    response = client.post(
        URL, {"file": upload, "agent_system": "  checkout-coder "}, **auth(token_of_project)
    )
    assert response.status_code == 202, response.content
    assert response.json()["agent_system"] == "checkout-coder"
    upload_ingest(upload_id=response.json()["id"])
    assert list(Trajectory.objects.values_list("agent_system", flat=True)) == ["checkout-coder"]


@pytest.mark.parametrize("name", ["x" * 101, "coder\n2", "coder\x07"])
def test_it_refuses_an_agent_system_it_could_not_store_naming_the_field(
    client, project, token_of_project, name
):
    upload = SimpleUploadedFile("a.jsonl", b'{"id": "r1", "steps": []}\n')
    response = client.post(URL, {"file": upload, "agent_system": name}, **auth(token_of_project))
    assert response.status_code == 400
    assert response.json()["field"] == "agent_system"
    assert not Upload.objects.exists()


def test_without_an_agent_system_each_rollout_keeps_the_one_its_file_says(project):
    from ingest.models import Trajectory
    from tests.conftest import shared_file

    path = shared_file(SWE_TRAJ)
    ingest_bytes(project, path.read_bytes(), path.name)
    assert list(Trajectory.objects.values_list("agent_system", flat=True)) == ["SWE-agent"]
