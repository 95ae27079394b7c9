"""A query parameter a GET endpoint does not take is a 400 naming it and the ones it takes,
on every endpoint with query parameters, with the schema as it was."""

from __future__ import annotations

import doctest
import json

import pytest
from ninja import NinjaAPI

from dashboard.api import main, query_params
from dashboard.api.query_params import unknown_params_message
from tests.dashboard.api.conftest import auth

pytestmark = pytest.mark.django_db
PROJECT = "/api/v1/projects/acme"
ROLLOUT_LIST_PARAMS = [
    "cursor",
    "environment",
    "errors",
    "labelled",
    "limit",
    "misbehaviour",
    "model",
    "outcome",
    "q",
    "says",
    "set_size",
    "sort",
    "system",
    "task",
    "tool",
    "upload",
]
# Path parameters of the schema's GET paths, filled so that the request reaches the view.
PATH_VALUES = {"slug": "acme", "external_id": "f1", "pk": "1", "name": "sft.jsonl"}


def _schema_query_params() -> dict[str, list[str]]:
    """Each GET path of the served schema with query parameters: their documented names."""
    schema = main.api.get_openapi_schema(path_prefix="/api/v1/")
    found: dict[str, list[str]] = {}
    for path, operations in schema["paths"].items():
        get = operations.get("get", {})
        names = [p["name"] for p in get.get("parameters", []) if p["in"] == "query"]
        if names:
            found[path] = sorted(names)
    return found


def test_its_examples_hold():
    assert doctest.testmod(query_params).failed == 0


def test_it_answers_400_naming_an_unknown_param_of_the_rollout_list(client, api_project, token):
    response = client.get(f"{PROJECT}/rollouts", {"agent_system": "planner"}, **auth(token))
    assert response.status_code == 400
    assert response.json() == {
        "error": unknown_params_message(["agent_system"], ROLLOUT_LIST_PARAMS),
        "field": "agent_system",
    }
    assert response.json()["error"].startswith("agent_system: ")
    assert "system, task, tool, upload." in response.json()["error"]


def test_it_names_every_unknown_param_once(client, api_project, token):
    response = client.get(
        f"{PROJECT}/rollouts?offset=2&outcome=failure&page=3&offset=4", **auth(token)
    )
    assert response.status_code == 400
    assert response.json()["field"] == "offset"
    assert response.json()["error"].startswith("offset, page: not query parameters")


def test_it_answers_400_for_a_filter_given_twice(client, api_project, token):
    # Only the last value was used: ?outcome=failure&outcome=success answered the
    # successes alone, as if both had been asked for.
    response = client.get(f"{PROJECT}/rollouts?outcome=failure&outcome=success", **auth(token))
    assert response.status_code == 400
    assert response.json() == {
        "error": query_params.MSG_REPEATED_PARAM.format(field="outcome", count=2),
        "field": "outcome",
    }
    once = client.get(f"{PROJECT}/rollouts?outcome=failure", **auth(token))
    assert once.status_code == 200


def test_it_still_takes_the_known_params_and_their_next_page(client, api_project, token):
    api_project.trajectories.filter(external_id__in=["f3", "s2"]).update(agent_system="planner")
    first = client.get(f"{PROJECT}/rollouts", {"system": "planner", "limit": 1}, **auth(token))
    assert first.status_code == 200 and len(first.json()["results"]) == 1
    second = client.get(first.json()["next"], **auth(token))
    assert second.status_code == 200
    seen = [row["external_id"] for row in first.json()["results"] + second.json()["results"]]
    assert sorted(seen) == ["f3", "s2"] and second.json()["next"] is None


def test_it_answers_400_for_an_unknown_param_of_the_jsonl_download(client, api_project, token):
    response = client.get(f"{PROJECT}/rollouts.jsonl", {"env": "airline"}, **auth(token))
    assert response.status_code == 400
    assert response.json()["field"] == "env"


def test_it_answers_400_for_an_unknown_param_of_every_get_with_query_params(
    client, api_project, token
):
    documented = _schema_query_params()
    assert set(documented) >= {
        "/api/v1/projects/{slug}/rollouts",
        "/api/v1/projects/{slug}/rollouts.jsonl",
        "/api/v1/projects/{slug}/misbehaviours/{pk}/members",
    }
    for path, names in documented.items():
        url = path.format(**PATH_VALUES)
        response = client.get(url, {"not_a_param": "1"}, **auth(token))
        assert response.status_code == 400, path
        assert response.json() == {
            "error": unknown_params_message(["not_a_param"], names),
            "field": "not_a_param",
        }, path


def test_it_refuses_a_wrong_token_before_looking_at_the_params(client, api_project, other_token):
    response = client.get(f"{PROJECT}/rollouts", {"agent_system": "x"}, **auth(other_token))
    assert response.status_code == 404 and "field" not in response.json()


def test_it_leaves_gets_without_query_params_as_they_were(client, api_project, token):
    response = client.get(f"{PROJECT}/misbehaviours", {"anything": "1"}, **auth(token))
    assert response.status_code == 200


def test_it_leaves_the_openapi_schema_as_it_was(client):
    # The same routers on an API without the check: the schemas are the same.
    unchecked = NinjaAPI(
        title=main.api.title,
        version=main.api.version,
        description=main.DESCRIPTION,
        auth=main.api.auth,
        urls_namespace="unchecked_schema",
    )
    for router in main.ROUTERS:
        unchecked.add_router("", router)
    served = client.get("/api/v1/openapi.json").json()
    expected = json.loads(json.dumps(unchecked.get_openapi_schema(path_prefix="/api/v1/")))
    assert served == expected
    assert _schema_query_params()["/api/v1/projects/{slug}/rollouts"] == ROLLOUT_LIST_PARAMS
