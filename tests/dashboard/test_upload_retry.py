"""The uploads page offers Retry only on a failure a retry can help (a lost worker, a
refused database write), not on one of the file's content, which would fail again."""

from __future__ import annotations

import pytest
from django.urls import reverse

from ingest.models import Upload
from ingest.services import MSG_DATABASE_REFUSED
from pipeline.uploads import MSG_NOT_RETRYABLE
from projects.tokens import project_token_issue
from tests.conftest import ingest_bytes

pytestmark = pytest.mark.django_db

BAD_FIELD = b'{"id": "r1", "steps": "not a list"}\n'


@pytest.fixture
def content_failure(project) -> Upload:
    upload = ingest_bytes(project, BAD_FIELD, "bad.jsonl")
    assert upload.status == "failed" and "field steps" in upload.error_message
    return upload


@pytest.fixture
def refused_write(project) -> Upload:
    """Failed as ingest leaves an upload whose write the database refused."""
    upload = ingest_bytes(project, b'{"id": "r2", "steps": [{"role": "user"}]}\n', "fine.jsonl")
    Upload.objects.filter(pk=upload.pk).update(
        status="failed",
        error_message=MSG_DATABASE_REFUSED.format(name="fine.jsonl", error="disk is full"),
        trajectory_count=0,
    )
    return Upload.objects.get(pk=upload.pk)


def _retry_url(upload: Upload) -> str:
    return reverse("dashboard:upload_retry", args=[upload.project.slug, upload.pk])


def _page(client, user, project) -> str:
    client.force_login(user)
    return client.get(reverse("dashboard:uploads", args=[project.slug])).content.decode()


def test_it_offers_no_retry_on_a_failure_of_the_files_content(
    client, member, project, content_failure
):
    page = _page(client, member, project)
    assert f'action="{_retry_url(content_failure)}"' not in page
    assert "fix the file and upload it again" in page


def test_it_offers_retry_on_a_refused_database_write(client, member, project, refused_write):
    page = _page(client, member, project)
    assert f'action="{_retry_url(refused_write)}"' in page


def test_it_refuses_to_queue_a_content_failure_again_and_says_why(
    client, member, project, content_failure
):
    client.force_login(member)
    response = client.post(_retry_url(content_failure), follow=True)
    assert MSG_NOT_RETRYABLE.format(name="bad.jsonl") in response.content.decode()
    assert Upload.objects.get(pk=content_failure.pk).status == "failed"


def test_it_queues_a_refused_write_again(
    client, member, project, refused_write, django_capture_on_commit_callbacks
):
    client.force_login(member)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(_retry_url(refused_write))
    assert response.status_code == 302
    assert Upload.objects.get(pk=refused_write.pk).status == "queued"
    assert len(callbacks) == 1


def test_the_api_refuses_to_retry_a_content_failure_with_409(client, project, content_failure):
    url = f"/api/v1/projects/{project.slug}/uploads/{content_failure.pk}/retry"
    token = project_token_issue(project=project)
    response = client.post(url, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 409
    assert response.json() == {"error": MSG_NOT_RETRYABLE.format(name="bad.jsonl")}
    assert Upload.objects.get(pk=content_failure.pk).status == "failed"


def test_it_counts_an_archives_rollouts_in_the_singular_when_there_is_one(
    client, member, project, refused_write
):
    Upload.objects.filter(pk=refused_write.pk).update(
        member_reports=[
            {"name": "a.jsonl", "format": "native", "trajectories": 1, "steps": 1},
            {"name": "b.jsonl", "format": "native", "trajectories": 2, "steps": 5},
        ]
    )
    page = _page(client, member, project)
    assert "a.jsonl: Faultline native JSONL, 1 rollout, 1 step<" in page
    assert "b.jsonl: Faultline native JSONL, 2 rollouts, 5 steps<" in page
    assert "1 rollouts" not in page and "1 steps" not in page
