"""API tokens: several per project, each named, shown once, stored hashed, revocable, with
the last use recorded."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from django.http import Http404
from django.urls import resolve, reverse

from projects.models import ApiToken
from projects.tokens import (
    MSG_TOKEN_NAME,
    TokenError,
    TokenRefused,
    hash_token,
    project_for_bearer_token,
    project_for_token,
    token_issue,
    token_revoke,
)

pytestmark = pytest.mark.django_db


def _status(client, project, token):
    return client.get(
        f"/api/v1/projects/{project.slug}/rollouts.jsonl", HTTP_AUTHORIZATION=f"Bearer {token}"
    ).status_code


def test_it_keeps_several_named_tokens_as_hashes_only(project, owner):
    first, first_token = token_issue(project=project, name="CI", user=owner)
    second, second_token = token_issue(project=project, name="agent")
    assert first_token != second_token and first_token.startswith("flt_")
    assert first.token_hash == hash_token(first_token) and first_token not in first.token_hash
    assert first.prefix == first_token[:12] and first.created_by == owner
    assert project_for_token(first_token, project.slug) == project
    assert project_for_token(second_token, project.slug) == project


def test_it_refuses_a_nameless_token(project):
    with pytest.raises(TokenError, match=re.escape(MSG_TOKEN_NAME)):
        token_issue(project=project, name="  ")


def test_it_refuses_a_revoked_token_and_keeps_the_others(client, project):
    kept_row, kept = token_issue(project=project, name="kept")
    gone_row, gone = token_issue(project=project, name="gone")
    token_revoke(token=gone_row)
    assert _status(client, project, gone) == 404
    assert _status(client, project, kept) == 200
    gone_row.refresh_from_db()
    assert not gone_row.is_active and kept_row.is_active


def test_it_records_the_last_use(client, project):
    row, token = token_issue(project=project, name="CI")
    assert row.last_used_at is None
    assert _status(client, project, token) == 200
    row.refresh_from_db()
    assert row.last_used_at is not None


def test_it_refuses_a_token_of_another_project(project, owner):
    from projects.services import project_create

    other = project_create(name="Other", owner=owner)
    _, token = token_issue(project=other, name="CI")
    with pytest.raises(Http404) as refused:
        project_for_token(token, project.slug)
    # The same 404, but not a TokenRefused: a real token is no guess for the throttle.
    assert not isinstance(refused.value, TokenRefused)
    assert project_for_bearer_token(token) == other


def test_the_owner_creates_a_token_that_is_shown_once(client, owner, project):
    client.force_login(owner)
    url = reverse("dashboard:project_settings", args=[project.slug])
    page = client.post(url, {"action": "token", "name": "nightly CI"}).content.decode()
    row = ApiToken.objects.get(project=project)
    assert row.name == "nightly CI" and 'id="new-token"' in page
    token = page.split('id="new-token">')[1].split("<")[0]
    assert hash_token(token) == row.token_hash
    again = client.get(url).content.decode()
    assert token not in again and row.prefix in again


def test_the_owner_revokes_a_token_on_the_settings_page(client, owner, project):
    row, token = token_issue(project=project, name="old laptop")
    client.force_login(owner)
    url = reverse("dashboard:project_settings", args=[project.slug])
    assert client.post(url, {"action": "revoke", "token": row.pk}).status_code == 302
    row.refresh_from_db()
    assert not row.is_active
    assert _status(client, project, token) == 404


def test_a_member_can_neither_create_nor_revoke(client, member, project):
    row, _ = token_issue(project=project, name="CI")
    client.force_login(member)
    url = reverse("dashboard:project_settings", args=[project.slug])
    assert client.post(url, {"action": "token", "name": "mine"}).status_code == 403
    assert client.post(url, {"action": "revoke", "token": row.pk}).status_code == 403
    row.refresh_from_db()
    assert row.is_active and ApiToken.objects.count() == 1


def test_the_settings_page_tells_how_to_point_an_otlp_exporter_here(client, owner, project):
    client.force_login(owner)
    page = client.get(reverse("dashboard:project_settings", args=[project.slug])).content.decode()
    endpoint = re.search(r'OTEL_EXPORTER_OTLP_ENDPOINT="([^"]+)"', page).group(1)
    assert "Authorization=Bearer%20$FAULTLINE_TOKEN" in page
    # The exporter appends /v1/traces to the endpoint: that must be the OTLP receiver.
    path = urlsplit(endpoint + "/v1/traces").path
    assert resolve(path).url_name == "otlp_traces"
