"""The export API: token auth, 202 with a status URL, downloads, 404 for a wrong token."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest

from exports.core.filters import KINDS, MSG_BAD_KIND, MSG_NO_KIND
from exports.models import ExportJob
from exports.services import export_run
from projects.tokens import project_token_issue

pytestmark = pytest.mark.django_db


@pytest.fixture
def token(small_project):
    return project_token_issue(project=small_project)


def _auth(token):
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def test_it_starts_an_export_from_json(
    client, small_project, token, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(
            f"/api/v1/projects/{small_project.slug}/exports/",
            json.dumps({"kinds": ["sft", "diagnosis"], "filters": {"environment": "airline"}}),
            content_type="application/json",
            **_auth(token),
        )
    assert response.status_code == 202
    body = response.json()
    assert body["kinds"] == ["sft", "diagnosis"] and body["filters"]["environment"] == "airline"
    assert body["status_url"].endswith(
        f"/api/v1/projects/{small_project.slug}/exports/{body['id']}"
    )
    assert len(callbacks) == 1


def test_it_explains_a_bad_kind(client, small_project, token):
    response = client.post(
        f"/api/v1/projects/{small_project.slug}/exports/",
        json.dumps({"kinds": ["dpo"]}),
        content_type="application/json",
        **_auth(token),
    )
    assert response.status_code == 400
    assert response.json() == {"error": MSG_BAD_KIND.format(kind="dpo"), "field": "kinds"}


def _start(client, project, token, body, *, content_type="application/json", slash=False):
    url = f"/api/v1/projects/{project.slug}/exports" + ("/" if slash else "")
    data = json.dumps(body) if content_type == "application/json" else body
    return client.post(url, data, content_type=content_type, **_auth(token))


@pytest.mark.parametrize("slash", [False, True], ids=["no slash", "old slash"])
def test_it_starts_an_export_with_or_without_the_trailing_slash(
    client, small_project, token, slash
):
    response = _start(client, small_project, token, {"kinds": ["sft"]}, slash=slash)
    assert response.status_code == 202 and ExportJob.objects.count() == 1


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        (
            {"kinds": ["sft"], "filters": {"environmnt": "airline"}},
            "filters.environmnt",
            "Unknown filter 'environmnt'",
        ),
        ({"kinds": ["sft"], "filters": {"model": "gpt-4o"}}, "filters.model", "Unknown filter"),
        ({"kind": ["sft"]}, "kind", "Unknown field 'kind'"),
        ({"kinds": []}, "kinds", MSG_NO_KIND),
        ({"filters": {"alpha": "2"}}, "filters.alpha", "alpha must be"),
        ({"filters": {"misbehaviours": [99999]}}, "filters.misbehaviours", "no misbehaviour 99999"),
    ],
    ids=["misspelt filter", "wrong filter name", "misspelt field", "no kind", "alpha", "no such"],
)
def test_it_refuses_what_it_would_otherwise_ignore_and_names_the_field(
    client, small_project, token, body, field, message
):
    response = _start(client, small_project, token, body)
    assert response.status_code == 400
    assert response.json()["field"] == field and message in response.json()["error"]
    assert not ExportJob.objects.exists()


def test_it_names_a_forms_unknown_field_at_the_top(client, small_project, token):
    response = _start(
        client,
        small_project,
        token,
        urlencode({"kinds": "sft", "environmnt": "airline"}),
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 400 and response.json()["field"] == "environmnt"


def test_it_refuses_json_sent_as_another_content_type_with_415(client, small_project, token):
    response = _start(client, small_project, token, '{"kinds": ["sft"]}', content_type="text/plain")
    assert response.status_code == 415
    assert "application/json" in response.json()["error"]
    assert not ExportJob.objects.exists()


def test_an_empty_body_exports_every_kind(client, small_project, token):
    response = client.post(f"/api/v1/projects/{small_project.slug}/exports", **_auth(token))
    assert response.status_code == 202 and response.json()["kinds"] == list(KINDS)


def test_it_serves_status_and_files_of_a_finished_export(client, small_project, token):
    response = client.post(
        f"/api/v1/projects/{small_project.slug}/exports/",
        {"kinds": "sft,preference"},
        **_auth(token),
    )
    job = export_run(job_id=response.json()["id"])
    status = client.get(response.json()["status_url"], **_auth(token)).json()
    assert status["status"] == "done" and status["manifest"]["counts"] == job.counts
    sft = client.get(status["files"]["sft.jsonl"], **_auth(token))
    assert (
        sft.status_code == 200
        and len(b"".join(sft.streaming_content).splitlines()) == job.counts["sft"]
    )
    assert client.get(status["zip_url"], **_auth(token)).status_code == 200
    listing = client.get(f"/api/v1/projects/{small_project.slug}/exports/", **_auth(token)).json()
    assert [e["id"] for e in listing["exports"]] == [job.pk]


@pytest.mark.parametrize("header", ["", "Bearer wrong", "Token flt_x"])
def test_it_answers_404_without_the_projects_token(client, small_project, token, header):
    extra = {"HTTP_AUTHORIZATION": header} if header else {}
    response = client.post(
        f"/api/v1/projects/{small_project.slug}/exports/", {"kinds": "sft"}, **extra
    )
    assert response.status_code == 404 and not ExportJob.objects.exists()


def _failed_job(project) -> ExportJob:
    from exports.core.filters import parse_filters
    from exports.services import export_create

    job = export_create(project=project, kinds=("sft",), filters=parse_filters({}), dispatch=False)
    ExportJob.objects.filter(pk=job.pk).update(status="failed", error_message="disk full")
    return job


def test_it_queues_a_failed_export_again(
    client, small_project, token, django_capture_on_commit_callbacks
):
    job = _failed_job(small_project)
    url = f"/api/v1/projects/{small_project.slug}/exports/{job.pk}/retry"
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(url, **_auth(token))
    assert response.status_code == 202 and response.json()["status"] == "queued"
    job.refresh_from_db()
    assert job.status == "queued" and job.error_message == "" and len(callbacks) == 1


def test_it_answers_409_for_an_export_that_did_not_fail(client, small_project, token):
    from dashboard.api.exports import MSG_NOT_FAILED

    job = _failed_job(small_project)
    ExportJob.objects.filter(pk=job.pk).update(status="done")
    url = f"/api/v1/projects/{small_project.slug}/exports/{job.pk}/retry"
    response = client.post(url, **_auth(token))
    assert response.status_code == 409
    assert response.json() == {"error": MSG_NOT_FAILED.format(status="done")}
