"""A NUL character in a page's query or form fields is refused with a 400 that names the
field, and nothing is stored: on PostgreSQL (`make test` runs this file there too) each of
these requests was a server error, since it refuses NUL in text."""

from __future__ import annotations

import pytest
from django.urls import reverse

from projects.models import ApiToken, Project
from projects.tokens import project_token_issue
from tests.dashboard.api.conftest import auth

pytestmark = pytest.mark.django_db


def _refused(response, field):
    assert response.status_code == 400
    body = response.content.decode()
    assert f"The field “{field}” holds a NUL character" in body
    assert "nothing was changed" in body


def test_form_fields_holding_a_nul_are_refused_and_nothing_is_stored(client, owner, project):
    client.force_login(owner)
    _refused(client.post(reverse("dashboard:project_list"), {"name": "a\x00b"}), "name")
    assert not Project.objects.exclude(pk=project.pk).exists()
    settings_url = reverse("dashboard:project_settings", args=[project.slug])
    _refused(client.post(settings_url, {"action": "token", "name": "ci\x00"}), "name")
    assert not ApiToken.objects.filter(project=project).exists()
    _refused(client.post(settings_url, {"action": "member", "username": "x\x00"}), "username")
    _refused(
        client.post(settings_url, {"action": "miscoverage", "miscoverage": "0.1\x00"}),
        "miscoverage",
    )


def test_query_parameters_holding_a_nul_are_refused(client, member, project):
    client.force_login(member)
    url = reverse("dashboard:rollout_list", args=[project.slug])
    for key in ("q", "says", "tool", "task", "environment"):
        _refused(client.get(url, {key: "a\x00b"}), key)
    _refused(client.get(url + "?bad%00name=1"), "bad\\x00name")
    assert client.get(url, {"q": "a b"}).status_code == 200


def test_the_field_name_is_escaped_in_the_page(client, member, project):
    client.force_login(member)
    url = reverse("dashboard:rollout_list", args=[project.slug])
    body = client.get(url + "?%3Cscript%3E=%00").content.decode()
    assert "<script>" not in body
    assert "&lt;script&gt;" in body


def test_the_login_form_refuses_it_too(client):
    response = client.post(reverse("login"), {"username": "a\x00b", "password": "x"})
    _refused(response, "username")


def test_api_paths_are_left_to_the_api_schemas(client, project):
    token = project_token_issue(project=project, name="ci")
    url = f"/api/v1/projects/{project.slug}/rollouts"
    response = client.get(url, {"q": "a\x00b"}, **auth(token))
    assert response.status_code == 400
    assert response.json()["field"] == "q"  # the API's own JSON error, not the page
