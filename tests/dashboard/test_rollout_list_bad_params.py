"""A rollouts-list link with a filter the API refuses: the page names the parameter and
why, in the API's words, and searches nothing, so a typo never reads as "no results"."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from tests.conftest import ingest_bytes

pytestmark = pytest.mark.django_db

LINE = {"id": "a", "outcome": "failure", "steps": [{"role": "user", "content": "hello there"}]}


@pytest.fixture
def rollouts(project):
    ingest_bytes(project, (json.dumps(LINE) + "\n").encode(), "one.jsonl")
    return project


def _page(client, project, params):
    return client.get(reverse("dashboard:rollout_list", args=[project.slug]), params)


def _api_error(client, project, token, params) -> str:
    from tests.dashboard.api.conftest import auth

    url = f"/api/v1/projects/{project.slug}/rollouts"
    response = client.get(url, params, **auth(token))
    assert response.status_code == 400
    return str(response.json()["error"])


@pytest.fixture
def token(rollouts):
    from projects.tokens import project_token_issue

    return project_token_issue(project=rollouts)


@pytest.mark.parametrize(
    "params",
    [
        {"says": "x" * 250},
        {"outcome": "bogus"},
        {"q": "y" * 201},
        {"errors": "maybe"},
        {"upload": "abc"},
        {"misbehaviour": "999"},
        {"sort": "drop table"},
    ],
)
def test_it_names_a_bad_parameter_as_the_api_does(client, member, rollouts, token, params):
    client.force_login(member)
    response = _page(client, rollouts, params)
    assert response.status_code == 400
    error = response.context["filter_error"]
    assert error == _api_error(client, rollouts, token, params)
    assert error.split(":")[0] in (*params, f"No {next(iter(params))} 999 in this project.")
    html = response.content.decode()
    assert 'id="filter-error"' in html
    assert "match." not in html  # no "0 rollouts match" as if it had searched
    assert response.context["page"].object_list == []


def test_it_says_which_limit_a_long_search_passed(client, member, rollouts):
    client.force_login(member)
    response = _page(client, rollouts, {"says": "hello" + "x" * 245})
    assert response.context["filter_error"] == "says: String should have at most 200 characters"


def test_it_says_which_values_an_outcome_takes(client, member, rollouts):
    client.force_login(member)
    response = _page(client, rollouts, {"outcome": "bogus"})
    assert response.context["filter_error"].startswith("outcome: Input should be 'success'")


def test_it_still_lists_with_filters_left_at_any(client, member, rollouts):
    client.force_login(member)
    params = {"outcome": "", "says": "", "misbehaviour": "", "upload": "", "page": "1"}
    response = _page(client, rollouts, params)
    assert response.status_code == 200
    assert response.context["filter_error"] == ""
    assert [r.external_id for r in response.context["page"].object_list] == ["a"]


def test_it_searches_a_text_at_the_limit(client, member, rollouts):
    client.force_login(member)
    response = _page(client, rollouts, {"says": "x" * 200})
    assert response.status_code == 200
    assert "0 rollouts match." in response.content.decode()


def test_it_refuses_to_download_with_a_bad_parameter(client, member, rollouts):
    client.force_login(member)
    url = reverse("dashboard:rollouts_download", args=[rollouts.slug])
    response = client.get(url, {"says": "x" * 250})
    assert response.status_code == 400
    assert "says: String should have at most 200 characters" in response.content.decode()
