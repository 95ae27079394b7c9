"""Outcomes of many rollouts in one request (a grader's verdicts on files that carry none,
as OpenHands event streams): all or nothing, one refresh for the rollouts that changed."""

from __future__ import annotations

import json

import pytest

from ingest.models import Trajectory
from pipeline.models import ProjectRefresh
from tests.dashboard.api.conftest import auth

pytestmark = pytest.mark.django_db
URL = "/api/v1/projects/acme/outcomes"


def _post(client, token, body):
    return client.post(URL, json.dumps(body), content_type="application/json", **auth(token))


def _outcomes() -> dict[str, tuple[str, float | None]]:
    return {t.external_id: (t.outcome, t.reward) for t in Trajectory.objects.all()}


def test_it_stores_every_verdict_and_queues_one_refresh_for_those_that_changed(
    client, api_project, token, django_capture_on_commit_callbacks
):
    before = _outcomes()
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(client, token, {"outcomes": [
            {"id": "s1", "outcome": "failure", "reward": 0.0},
            {"id": "f1", "outcome": "failure", "metadata": {"grader": "unit tests"}},
            {"id": "f2", "reward": 0.4},
        ]})  # fmt: skip
    assert response.status_code == 200, response.content
    assert response.json() == {"updated": 3, "attribution_queued": ["s1"]}
    after = _outcomes()
    assert after["s1"] == ("failure", 0.0) and after["f2"] == (before["f2"][0], 0.4)
    assert Trajectory.objects.get(external_id="f1").metadata["grader"] == "unit tests"
    assert ProjectRefresh.objects.count() == 1


@pytest.mark.parametrize(
    ("items", "field"),
    [
        ([{"id": "s1", "outcome": "failure"}, {"id": "nope", "outcome": "failure"}],
         "outcomes.1.id"),
        ([{"id": "s1", "outcome": "failure"}, {"id": "s1", "outcome": "success"}],
         "outcomes.1.id"),
        ([{"id": "s1", "outcome": "failure"}, {"id": "f1"}], "outcomes.1"),
    ],
)  # fmt: skip
def test_one_bad_item_refuses_the_whole_request_naming_it(client, api_project, token, items, field):
    before = _outcomes()
    response = _post(client, token, {"outcomes": items})
    assert response.status_code == 400, response.content
    assert response.json()["field"] == field
    assert response.json()["error"].startswith(field)
    assert _outcomes() == before
    assert not ProjectRefresh.objects.exists()


def test_an_empty_list_or_an_unknown_key_is_refused(client, api_project, token):
    assert _post(client, token, {"outcomes": []}).status_code == 400
    answer = _post(client, token, {"outcomes": [{"id": "s1", "verdict": "failure"}]})
    assert answer.status_code == 400


def test_an_item_s_field_is_named_once_and_nul_metadata_is_refused_as_one_rollout_s_is(
    client, api_project, token
):
    bad = _post(client, token, {"outcomes": [{"id": "s1", "outcome": "won"}]}).json()
    assert bad["field"] == "outcomes.0.outcome"
    assert bad["error"].startswith("outcomes.0.outcome: ")
    nul = _post(client, token, {"outcomes": [{"id": "s1", "metadata": {"note": "a\x00b"}}]})
    assert nul.status_code == 400 and nul.json()["field"] == "outcomes.0.metadata"


def test_it_reads_the_named_rollouts_in_one_query(
    client, api_project, token, django_assert_max_num_queries
):
    # Per item: its row locked and written; the rollouts themselves are read at once.
    items = [{"id": rid, "reward": 0.5} for rid in ("s1", "f1", "f2", "f3")]
    with django_assert_max_num_queries(40) as captured:
        assert _post(client, token, {"outcomes": items}).status_code == 200
    lookups = [q for q in captured.captured_queries if '"external_id" IN' in q["sql"]]
    assert len(lookups) == 1
    assert not [q for q in captured.captured_queries if '"external_id" = ' in q["sql"]]
