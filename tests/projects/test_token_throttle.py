"""Refused API tokens are counted per client address: past the limit the API answers 429
with MSG_TOKEN_THROTTLED, even for the right token, until the cool-off has passed."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.core.cache import cache

from projects.security import MSG_TOKEN_THROTTLED
from projects.tokens import project_token_issue

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_counts():
    # The test cache is shared by every test of the process: start and leave it empty.
    cache.clear()
    yield
    cache.clear()


def _rollouts(client, project, token: str, address: str = "127.0.0.1"):
    return client.get(
        f"/api/v1/projects/{project.slug}/rollouts.jsonl",
        HTTP_AUTHORIZATION=f"Bearer {token}",
        REMOTE_ADDR=address,
    )


def test_it_answers_429_after_the_limit_of_bad_tokens_even_for_the_right_one(client, project):
    token = project_token_issue(project=project)
    for _ in range(settings.FAULTLINE_TOKEN_FAILURE_LIMIT):
        assert _rollouts(client, project, "flt_wrong").status_code == 404
    response = _rollouts(client, project, token)
    assert response.status_code == 429
    assert response.json() == {"error": MSG_TOKEN_THROTTLED}
    assert response["Retry-After"] == str(settings.FAULTLINE_TOKEN_COOLOFF_SECONDS)


def test_it_serves_the_right_token_below_the_limit(client, project):
    token = project_token_issue(project=project)
    for _ in range(settings.FAULTLINE_TOKEN_FAILURE_LIMIT - 1):
        _rollouts(client, project, "flt_wrong")
    assert _rollouts(client, project, token).status_code == 200


def test_it_counts_each_client_address_on_its_own(client, project):
    token = project_token_issue(project=project)
    for _ in range(settings.FAULTLINE_TOKEN_FAILURE_LIMIT):
        _rollouts(client, project, "flt_wrong", address="10.0.0.1")
    assert _rollouts(client, project, token, address="10.0.0.2").status_code == 200


def test_it_does_not_count_a_missing_upload_behind_a_right_token(client, project):
    token = project_token_issue(project=project)
    for _ in range(settings.FAULTLINE_TOKEN_FAILURE_LIMIT):
        missing = client.get(
            f"/api/v1/projects/{project.slug}/uploads/999999",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )
        assert missing.status_code == 404
    assert _rollouts(client, project, token).status_code == 200


def test_a_locked_out_address_can_still_read_the_api_docs(client, project):
    for _ in range(settings.FAULTLINE_TOKEN_FAILURE_LIMIT):
        _rollouts(client, project, "flt_wrong")
    assert _rollouts(client, project, "flt_wrong").status_code == 429
    for path in ("/api/v1/docs", "/api/v1/openapi.json", "/api/v1/docs/assets/swagger-ui.css"):
        assert client.get(path, REMOTE_ADDR="127.0.0.1").status_code == 200, path
