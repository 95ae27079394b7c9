"""The token's project and the read-only list of its tokens."""

from __future__ import annotations

import pytest

from tests.dashboard.api.conftest import auth

pytestmark = pytest.mark.django_db


def test_it_shows_the_project_with_its_counts(client, api_project, token):
    body = client.get("/api/v1/projects/acme", **auth(token)).json()
    assert (body["slug"], body["name"]) == ("acme", "Acme agents")
    assert body["counts"] == {
        "rollouts": 7,
        "failed": 4,
        "succeeded": 2,
        "labelled": 1,
        "labelled_by_rule": 0,
    }


def test_it_lists_the_tokens_without_their_secret(client, api_project, token, revoked_token):
    response = client.get("/api/v1/projects/acme/tokens", **auth(token))
    tokens = response.json()["tokens"]
    assert [(t["name"], t["active"]) for t in tokens] == [("CI job", True), ("leaked", False)]
    assert token[:12] == tokens[0]["prefix"] and token not in response.content.decode()
    assert tokens[0]["last_used_at"] is not None
