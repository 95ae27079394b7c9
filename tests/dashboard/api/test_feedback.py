"""Outcomes and labels attached later by external id: a rollout turning failed queues its
attribution (the project's refresh), a label is stored as a human's; bad input is a 400
naming the field and stores nothing."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from attribution.labels import MSG_NOT_FAILED, MSG_STEP_OUT_OF_RANGE
from ingest.models import Label, Trajectory
from ingest.outcomes import MSG_NOTHING
from pipeline.models import ProjectRefresh, RefreshStatus
from tests.dashboard.api.conftest import SLASHED_ID, auth

pytestmark = pytest.mark.django_db
URL = "/api/v1/projects/acme/rollouts"


def _post(client, token, path, body):
    return client.post(
        f"{URL}/{path}", json.dumps(body), content_type="application/json", **auth(token)
    )


def test_it_queues_the_attribution_of_a_rollout_turning_failed(
    client, api_project, token, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(client, token, f"{quote(SLASHED_ID)}/outcome", {"outcome": "failure"})
    assert response.status_code == 200
    body = response.json()
    assert body["attribution_queued"] is True and body["rollout"]["outcome"] == "failure"
    assert Trajectory.objects.get(external_id=SLASHED_ID).outcome == "failure"
    refresh = ProjectRefresh.objects.get(project=api_project)
    assert refresh.status == RefreshStatus.QUEUED
    # The request names the rollout: the incremental refresh attributes it (pipeline.incremental).
    assert refresh.rollout_ids == [Trajectory.objects.get(external_id=SLASHED_ID).pk]


def test_it_queues_nothing_when_only_the_reward_changes(
    client, api_project, token, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = _post(client, token, "f3/outcome", {"reward": 0.25})
    assert response.status_code == 200 and response.json()["attribution_queued"] is False
    assert response.json()["rollout"]["reward"] == 0.25
    assert callbacks == [] and not ProjectRefresh.objects.exists()


def test_it_merges_metadata_into_the_rollouts(client, api_project, token):
    _post(client, token, "s1/outcome", {"metadata": {"judge": "gpt-4o", "score": 3}})
    _post(client, token, "s1/outcome", {"metadata": {"score": 4}})
    assert Trajectory.objects.get(external_id="s1").metadata == {"judge": "gpt-4o", "score": 4}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"outcome": "won"}, "outcome"),
        ({"reward": "high"}, "reward"),
        ({"metadata": ["a"]}, "metadata"),
        ({"metadata": {"note": "a\x00b"}}, "metadata"),
        ({"outcome": "failure", "verdict": "bad"}, "verdict"),
    ],
)
def test_it_answers_400_naming_the_bad_outcome_field_and_stores_nothing(
    client, api_project, token, body, field
):
    before = list(Trajectory.objects.values_list("outcome", "reward", "metadata").order_by("id"))
    response = _post(client, token, "s1/outcome", body)
    assert response.status_code == 400
    assert response.json()["field"] == field and field in response.json()["error"]
    after = list(Trajectory.objects.values_list("outcome", "reward", "metadata").order_by("id"))
    assert after == before


def test_it_answers_400_for_an_empty_outcome(client, api_project, token):
    response = _post(client, token, "s1/outcome", {})
    assert response.status_code == 400 and response.json() == {"error": MSG_NOTHING}


def test_it_answers_400_for_a_body_that_is_not_json(client, api_project, token):
    response = client.post(
        f"{URL}/s1/outcome", b"{not json", content_type="application/json", **auth(token)
    )
    assert response.status_code == 400 and "error" in response.json()


def test_it_stores_a_label_as_a_humans(
    client, api_project, token, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = _post(
            client, token, "f3/labels", {"step": 4, "agent": "planner", "reason": "wrong tool"}
        )
    assert response.status_code == 201
    assert response.json()["step"] == 4 and response.json()["source"] == "human"
    label = Label.objects.get(trajectory__external_id="f3")
    assert (label.step_index, label.agent, label.reason) == (4, "planner", "wrong tool")
    assert len(callbacks) == 1  # the recalibration, once committed
    listed = client.get(f"{URL}/f3/labels", **auth(token)).json()["labels"]
    assert [row["id"] for row in listed] == [label.pk]


def test_it_answers_400_naming_the_step_past_the_end(client, api_project, token):
    response = _post(client, token, "f3/labels", {"step": 7})
    assert response.status_code == 400
    assert response.json() == {
        "error": MSG_STEP_OUT_OF_RANGE.format(step=7, last=6),
        "field": "step",
    }
    assert not Label.objects.filter(trajectory__external_id="f3").exists()


def test_it_refuses_a_label_on_a_rollout_that_did_not_fail(client, api_project, token):
    response = _post(client, token, "s1/labels", {"step": 0})
    assert response.status_code == 400
    assert response.json() == {"error": MSG_NOT_FAILED, "field": "outcome"}


@pytest.mark.parametrize(
    ("body", "field"), [({}, "step"), ({"step": -1}, "step"), ({"step": 1, "agent": 3}, "agent")]
)
def test_it_answers_400_naming_the_bad_label_field(client, api_project, token, body, field):
    response = _post(client, token, "f3/labels", body)
    assert response.status_code == 400 and response.json()["field"] == field
