"""Every endpoint of the API answers its own project's token and refuses, with the same
404 counted by the token throttle, a revoked token and none; another project's token gets
the same 404, uncounted."""

from __future__ import annotations

import json

import pytest
from django.core.cache import cache

from dashboard.api.main import api
from projects.security import token_failure_key
from projects.tokens import MSG_NO_PROJECT
from tests.dashboard.api.conftest import auth

pytestmark = pytest.mark.django_db

P = "/api/v1/projects/{slug}"
R = P + "/rollouts/{external_id}"
M = P + "/misbehaviours/{pk}"
E = P + "/exports/"
# (method, the schema's path, a path that exists in api_project, body) of every operation.
OPERATIONS = [
    ("get", P, "/api/v1/projects/acme", None),
    ("get", P + "/tokens", "/api/v1/projects/acme/tokens", None),
    ("get", P + "/tools", "/api/v1/projects/acme/tools", None),
    ("post", P + "/uploads", "/api/v1/projects/acme/uploads", None),
    ("get", P + "/uploads/{pk}", "/api/v1/projects/acme/uploads/{upload}", None),
    ("post", P + "/uploads/{pk}/retry", "/api/v1/projects/acme/uploads/{upload}/retry", None),
    ("get", P + "/rollouts", "/api/v1/projects/acme/rollouts", None),
    ("get", P + "/rollouts.jsonl", "/api/v1/projects/acme/rollouts.jsonl", None),
    ("get", R, "/api/v1/projects/acme/rollouts/f1", None),
    ("post", R + "/outcome", "/api/v1/projects/acme/rollouts/s1/outcome", {"reward": 0.5}),
    (
        "post",
        P + "/outcomes",
        "/api/v1/projects/acme/outcomes",
        {"outcomes": [{"id": "s1", "reward": 0.5}]},
    ),
    ("get", R + "/labels", "/api/v1/projects/acme/rollouts/f1/labels", None),
    ("post", R + "/labels", "/api/v1/projects/acme/rollouts/f1/labels", {"step": 1}),
    ("delete", R + "/labels/{label_pk}", "/api/v1/projects/acme/rollouts/f1/labels/1", None),
    ("get", R + "/attribution", "/api/v1/projects/acme/rollouts/f1/attribution", None),
    ("get", P + "/calibration", "/api/v1/projects/acme/calibration", None),
    ("get", P + "/labelling-queue", "/api/v1/projects/acme/labelling-queue", None),
    ("get", P + "/misbehaviours", "/api/v1/projects/acme/misbehaviours", None),
    ("get", M, "/api/v1/projects/acme/misbehaviours/1", None),
    ("get", M + "/members", "/api/v1/projects/acme/misbehaviours/1/members", None),
    ("get", E.rstrip("/"), "/api/v1/projects/acme/exports", None),
    ("post", E.rstrip("/"), "/api/v1/projects/acme/exports", {"kinds": ["sft"]}),
    ("get", E + "{pk}", "/api/v1/projects/acme/exports/1", None),
    ("post", E + "{pk}/retry", "/api/v1/projects/acme/exports/1/retry", None),
    ("get", E + "{pk}/files/{name}", "/api/v1/projects/acme/exports/1/files/sft.jsonl", None),
    ("get", E + "{pk}/export.zip", "/api/v1/projects/acme/exports/1/export.zip", None),
]
ENDPOINTS = [(method, path, body) for method, _, path, body in OPERATIONS]
IDS = [f"{method} {path}" for method, path, _ in ENDPOINTS]


def _call(client, api_project, method, path, body, headers):
    # Refused callers never reach the upload: any id does for them.
    url = path.format(upload=api_project.uploads.get().pk if api_project else 1)
    if body is None:
        return getattr(client, method)(url, **headers)
    return getattr(client, method)(
        url, json.dumps(body), content_type="application/json", **headers
    )


def test_it_covers_every_operation_of_the_schema():
    paths = api.get_openapi_schema()["paths"]
    operations = {(method, path) for path, ops in paths.items() for method in ops}
    covered = {(method, template) for method, template, _, _ in OPERATIONS}
    assert operations == covered | {("get", "/api/v1/projects")}


def test_it_serves_the_projects_own_token_on_every_endpoint(client, api_project, token):
    for method, path, body in ENDPOINTS:
        response = _call(client, api_project, method, path, body, auth(token))
        # Past the token, each answers for itself (a missing export is a 404 of its own).
        assert response.status_code < 500, path
        assert not (response.status_code == 404 and response.json() == {"error": MSG_NO_PROJECT}), (
            path
        )
    assert cache.get(token_failure_key("127.0.0.1")) is None


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS, ids=IDS)
def test_it_refuses_every_other_caller_with_a_counted_404(
    client, project, other_token, revoked_token, method, path, body
):
    callers = {
        "a revoked token": auth(revoked_token),
        "no token": {},
        "not a bearer token": {"HTTP_AUTHORIZATION": "Token flt_x"},
    }
    for count, (caller, headers) in enumerate(callers.items(), start=1):
        response = _call(client, None, method, path, body, headers)
        assert response.status_code == 404, caller
        assert response.json() == {"error": MSG_NO_PROJECT}, caller
        assert cache.get(token_failure_key("127.0.0.1")) == count, caller
    # Another project's real token gets the same 404 but is no guess: not counted (ten
    # slips of a script that mixed up two slugs locked the address out, OTLP included).
    response = _call(client, None, method, path, body, auth(other_token))
    assert response.status_code == 404 and response.json() == {"error": MSG_NO_PROJECT}
    assert cache.get(token_failure_key("127.0.0.1")) == len(callers)


def test_it_lists_only_the_tokens_own_project(client, api_project, token, other_token):
    response = client.get("/api/v1/projects", **auth(token))
    assert [p["slug"] for p in response.json()["projects"]] == ["acme"]


def test_it_refuses_the_project_list_without_a_token(client, project):
    assert client.get("/api/v1/projects").status_code == 404


def test_a_refused_token_is_a_404_not_a_500_while_the_cache_is_down(
    client, api_project, monkeypatch
):
    import projects.security

    class DownCache:
        def __getattr__(self, name):
            def down(*args, **kwargs):
                raise ConnectionError("Error 111 connecting to 127.0.0.1:6379.")

            return down

    monkeypatch.setattr(projects.security, "cache", DownCache())
    for headers in ({"HTTP_AUTHORIZATION": "Bearer flt_wrong"}, {}):
        response = client.get("/api/v1/projects/acme/rollouts", **headers)
        assert response.status_code == 404 and response.json() == {"error": MSG_NO_PROJECT}
