"""Every error under /api/ is JSON, also a path no route matches and a method a route does
not take (answered by Django and ninja before the API's own handlers run)."""

from __future__ import annotations

import pytest

from dashboard.api.errors import MSG_METHOD, MSG_NO_ENDPOINT
from projects.tokens import project_token_issue

pytestmark = pytest.mark.django_db


@pytest.fixture
def auth(project):
    return {"HTTP_AUTHORIZATION": f"Bearer {project_token_issue(project=project)}"}


@pytest.mark.parametrize(
    "path",
    ["/api/v1/nothing", "/api/v1/projects/{slug}/rollouts/", "/api/v1/projects/{slug}/uploads/"],
)
def test_a_path_no_route_matches_is_a_json_404(client, project, auth, path):
    path = path.format(slug=project.slug)
    response = client.post(path, **auth)
    assert response.status_code == 404
    assert response.json() == {"error": MSG_NO_ENDPOINT.format(path=path)}


def test_a_method_a_route_does_not_take_is_a_json_405_that_keeps_allow(client, project, auth):
    path = f"/api/v1/projects/{project.slug}/calibration"
    response = client.delete(path, **auth)
    assert response.status_code == 405 and response["Allow"] == "GET"
    assert response.json() == {
        "error": MSG_METHOD.format(method="DELETE", path=path, allowed="GET")
    }


def test_pages_outside_the_api_keep_their_html_404(client, project):
    response = client.get("/no-such-page/")
    assert response.status_code == 404 and "json" not in response["Content-Type"]
