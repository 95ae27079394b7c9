"""Access: non-members get 404 on every page, rollout and API of a project."""

from __future__ import annotations

import pytest
from django.urls import reverse

from projects.tokens import project_token_issue
from tests.conftest import ingest_bytes

pytestmark = pytest.mark.django_db

LINE = b'{"id": "r1", "outcome": "failure", "steps": [{"role": "user", "content": "hi"}]}\n'


@pytest.fixture
def rollout(project):
    upload = ingest_bytes(project, LINE, "one.jsonl")
    return upload.trajectories.get()


def _pages(project, rollout):
    return [
        reverse("dashboard:project_detail", args=[project.slug]),
        reverse("dashboard:rollout_list", args=[project.slug]),
        reverse("dashboard:rollout_detail", args=[project.slug, rollout.pk]),
        reverse("dashboard:rollout_compare", args=[project.slug, rollout.pk]),
        reverse("dashboard:uploads", args=[project.slug]),
        reverse("dashboard:upload_status", args=[project.slug, rollout.upload_id]),
        reverse("dashboard:project_settings", args=[project.slug]),
    ]


def test_it_shows_every_page_to_members(client, member, project, rollout):
    client.force_login(member)
    for url in _pages(project, rollout):
        assert client.get(url).status_code == 200, url


def test_it_answers_404_to_outsiders_on_every_page(client, outsider, project, rollout):
    client.force_login(outsider)
    for url in _pages(project, rollout):
        assert client.get(url).status_code == 404, url


def test_it_sends_anonymous_users_to_login(client, project, rollout):
    for url in _pages(project, rollout):
        response = client.get(url)
        assert response.status_code == 302 and response.url.startswith("/login/"), url


def test_it_answers_404_for_a_rollout_of_another_project(client, owner, project, rollout):
    from projects.services import project_create

    other = project_create(name="Other", owner=owner)
    client.force_login(owner)
    url = reverse("dashboard:rollout_detail", args=[other.slug, rollout.pk])
    assert client.get(url).status_code == 404


def test_it_answers_404_to_another_projects_token(client, owner, project, rollout):
    from projects.services import project_create

    other = project_create(name="Other", owner=owner)
    token = project_token_issue(project=other)
    url = f"/api/v1/projects/{project.slug}/uploads/{rollout.upload_id}"
    assert client.get(url, HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 404
    response = client.post(
        f"/api/v1/projects/{project.slug}/uploads",
        {"file": _file()},
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 404


def test_it_does_not_let_viewers_upload(client, viewer, project):
    client.force_login(viewer)
    response = client.post(reverse("dashboard:uploads", args=[project.slug]), {"files": _file()})
    assert response.status_code == 403


def _file():
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("x.jsonl", LINE)
