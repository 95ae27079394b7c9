"""The rollout list: every filter of the rollouts page, cursor pages in every sort, one
rollout with its steps, the JSONL download; bad input is a 400 naming the field."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from analysis.rollout_filters import SORTS
from dashboard.api.pagination import MSG_BAD_CURSOR
from tests.dashboard.api.conftest import ROLLOUTS, SLASHED_ID, auth

pytestmark = pytest.mark.django_db
URL = "/api/v1/projects/acme/rollouts"


def _ids(client, token, **params):
    response = client.get(URL, params, **auth(token))
    assert response.status_code == 200, response.content
    return sorted(row["external_id"] for row in response.json()["results"])


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"outcome": "failure"}, ["f1", "f2", "f3", "f4"]),
        ({"outcome": "unknown"}, [SLASHED_ID]),
        ({"environment": "retail", "outcome": "success"}, ["s2"]),
        ({"model": "gpt-4o-mini"}, ["f2", "f4"]),
        ({"task": "t3"}, ["f3", "s2"]),
        ({"q": "sample 3"}, [SLASHED_ID]),
        ({"labelled": "yes"}, ["f1"]),
        ({"labelled": "no", "outcome": "failure"}, ["f2", "f3", "f4"]),
        ({"labelled": "given"}, ["f1"]),
        ({"labelled": "rule"}, []),
    ],
)
def test_it_filters_like_the_rollouts_page(client, api_project, token, params, expected):
    assert _ids(client, token, **params) == expected


def test_it_filters_by_agent_system(client, api_project, token):
    api_project.trajectories.filter(external_id__in=["f3", "s2"]).update(agent_system="bot-2")
    assert _ids(client, token, system="bot-2") == ["f3", "s2"]
    assert _ids(client, token, system="bot-2", outcome="failure") == ["f3"]
    assert _ids(client, token, system="nobody") == []


def test_it_filters_by_upload(client, api_project, token):
    upload = api_project.uploads.get()
    assert len(_ids(client, token, upload=upload.pk)) == len(ROLLOUTS)


@pytest.mark.parametrize("name", ["upload", "misbehaviour"])
def test_an_id_the_project_does_not_have_is_a_400_naming_it(client, api_project, token, name):
    """An empty page said 'no rollout has it' where the id was wrong (the exports refuse
    such ids); another project's id is refused the same way."""
    for path in (URL, URL.rstrip("/") + ".jsonl"):
        response = client.get(path, {name: 999999}, **auth(token))
        assert response.status_code == 400, path
        assert response.json() == {"error": f"No {name} 999999 in this project.", "field": name}


@pytest.mark.parametrize("sort", sorted(SORTS))
def test_it_pages_every_sort_by_cursor_without_repeats_or_gaps(client, api_project, token, sort):
    whole = client.get(URL, {"sort": sort, "limit": 500}, **auth(token)).json()["results"]
    seen, url, params = [], URL, {"sort": sort, "limit": 2}
    while url:
        page = client.get(url, params, **auth(token)).json()
        assert len(page["results"]) <= 2
        seen += [row["external_id"] for row in page["results"]]
        url, params = page["next"], {}
    assert seen == [row["external_id"] for row in whole]
    assert sorted(seen) == sorted(row["id"] for row in ROLLOUTS)


def test_it_sorts_empty_rewards_last(client, api_project, token):
    rows = client.get(URL, {"sort": "-reward"}, **auth(token)).json()["results"]
    rewards = [row["reward"] for row in rows]
    given = [r for r in rewards if r is not None]
    assert given == sorted(given, reverse=True) and rewards[len(given) :] == [None] * 3


@pytest.mark.parametrize("cursor", ["nonsense", "WyJuZXdlc3QiLDEsMV0", "W10"])
def test_it_answers_400_naming_the_cursor_for_a_foreign_one(client, api_project, token, cursor):
    # "WyJuZXdlc3QiLDEsMV0" is a real cursor of the "newest" sort, asked of "oldest".
    response = client.get(URL, {"cursor": cursor}, **auth(token))
    assert response.status_code == 400
    assert response.json() == {"error": MSG_BAD_CURSOR, "field": "cursor"}


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"outcome": "maybe"}, "outcome"),
        ({"limit": "0"}, "limit"),
        ({"limit": "many"}, "limit"),
        ({"upload": "-3"}, "upload"),
        ({"upload": str(2**70)}, "upload"),
        ({"sort": "random"}, "sort"),
        ({"set_size": "3"}, "set_size"),
        ({"environment": "air\x00line"}, "environment"),
    ],
)
def test_it_answers_400_naming_the_bad_filter(client, api_project, token, params, field):
    response = client.get(URL, params, **auth(token))
    assert response.status_code == 400
    body = response.json()
    assert body["field"] == field and body["error"].startswith(f"{field}: ")


def test_it_shows_a_rollout_with_its_steps_and_labels(client, api_project, token):
    body = client.get(f"{URL}/f1", **auth(token)).json()
    assert body["external_id"] == "f1" and body["outcome"] == "failure"
    assert [step["index"] for step in body["steps"]] == list(range(5))
    assert body["steps"][1]["agent"] == "planner"
    assert [(label["step"], label["source"]) for label in body["labels"]] == [(2, "dataset")]


@pytest.mark.parametrize("safe", ["/", ""])
def test_it_finds_a_rollout_whose_external_id_holds_slashes(client, api_project, token, safe):
    response = client.get(f"{URL}/{quote(SLASHED_ID, safe=safe)}", **auth(token))
    assert response.status_code == 200 and response.json()["external_id"] == SLASHED_ID


def test_it_answers_404_for_an_unknown_external_id(client, api_project, token):
    response = client.get(f"{URL}/nope", **auth(token))
    assert response.status_code == 404 and "external id" in response.json()["error"]


def test_it_downloads_the_filtered_rollouts_as_native_jsonl(client, api_project, token):
    response = client.get(f"{URL}.jsonl", {"environment": "airline"}, **auth(token))
    lines = b"".join(response.streaming_content).splitlines()
    assert response["Content-Type"] == "application/x-ndjson"
    assert sorted(json.loads(line)["id"] for line in lines) == ["f1", "f2", "s1"]
