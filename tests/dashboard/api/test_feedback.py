"""Outcomes and labels attached later by external id: a rollout turning failed queues its
attribution (the project's refresh), a label is stored as a human's; bad input is a 400
naming the field and stores nothing."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from attribution.labels import (
    MSG_NOT_FAILED,
    MSG_NOT_THIS_TOKENS,
    MSG_STEP_OUT_OF_RANGE,
    MSG_UNKNOWN_AGENT,
)
from dashboard.api.errors import MSG_BODY_NOT_JSON
from dashboard.api.feedback import MSG_NO_LABEL
from ingest.models import Label, Trajectory
from ingest.outcomes import MSG_NOTHING
from pipeline.models import ProjectRefresh, RefreshStatus
from projects.tokens import project_token_issue
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
        ({"reward": True}, "reward"),  # read as 1.0 before
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


def test_the_answer_says_whose_step_was_labelled(client, api_project, token):
    response = _post(client, token, "f3/labels", {"step": 2})
    assert response.status_code == 201
    assert (response.json()["agent"], response.json()["step_agent"]) == ("planner", "planner")
    # Only the answer to writing a label says it; a list of labels does not.
    listed = client.get(f"{URL}/f3/labels", **auth(token)).json()["labels"]
    assert listed[0].get("step_agent") is None


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
    ("body", "field"),
    [
        ({}, "step"),
        ({"step": -1}, "step"),
        ({"step": True}, "step"),
        ({"step": "2"}, "step"),
        ({"step": 1, "agent": 3}, "agent"),
        ({"step": 1, "agent": "NoSuchAgent"}, "agent"),
    ],
)
def test_it_answers_400_naming_the_bad_label_field(client, api_project, token, body, field):
    response = _post(client, token, "f3/labels", body)
    assert response.status_code == 400 and response.json()["field"] == field
    assert not Label.objects.filter(trajectory__external_id="f3").exists()


def test_it_names_the_agents_of_the_rollout_when_the_agent_is_unknown(client, api_project, token):
    response = _post(client, token, "f3/labels", {"step": 1, "agent": "NoSuchAgent"})
    assert response.json()["error"] == MSG_UNKNOWN_AGENT.format(
        agent="NoSuchAgent", agents="planner"
    )


def test_the_steps_role_names_its_agent(client, api_project, token):
    # "assistant" is how a chat file names the agent a trace calls by its name.
    body = _post(client, token, "f3/labels", {"step": 2, "agent": "assistant"}).json()
    assert body["agent"] == "planner"


def test_it_takes_the_steps_agent_when_none_is_given_and_names_the_token(
    client, api_project, token
):
    body = _post(client, token, "f3/labels", {"step": 2}).json()
    assert body["agent"] == "planner" and body["token"] == "CI job" and body["author"] == ""


def test_labelling_again_with_the_same_token_moves_its_label(client, api_project, token):
    first = _post(client, token, "f3/labels", {"step": 2}).json()
    second = _post(client, token, "f3/labels", {"step": 5, "reason": "second look"}).json()
    assert second["id"] == first["id"] and second["step"] == 5
    other = project_token_issue(project=api_project, name="another script")
    _post(client, other, "f3/labels", {"step": 3})
    steps = [row["step"] for row in client.get(f"{URL}/f3/labels", **auth(token)).json()["labels"]]
    assert sorted(steps) == [3, 5]


def test_a_token_removes_only_the_labels_it_wrote(client, api_project, token):
    mine = _post(client, token, "f3/labels", {"step": 2}).json()["id"]
    other = project_token_issue(project=api_project, name="another script")
    theirs = _post(client, other, "f3/labels", {"step": 3}).json()["id"]
    refused = client.delete(f"{URL}/f3/labels/{theirs}", **auth(token))
    assert refused.status_code == 403 and refused.json() == {"error": MSG_NOT_THIS_TOKENS}
    ProjectRefresh.objects.all().delete()
    removed = client.delete(f"{URL}/f3/labels/{mine}", **auth(token))
    assert removed.status_code == 204
    assert ProjectRefresh.objects.get(project=api_project).status == RefreshStatus.QUEUED
    assert list(
        Label.objects.filter(trajectory__external_id="f3").values_list("pk", flat=True)
    ) == [theirs]
    missing = client.delete(f"{URL}/f3/labels/{mine}", **auth(token))
    assert missing.status_code == 404 and missing.json() == {"error": MSG_NO_LABEL}


def test_a_form_body_is_told_to_be_json(client, api_project, token):
    response = client.post(
        f"/api/v1/projects/{api_project.slug}/rollouts/s1/outcome",
        "outcome=failure",
        content_type="application/x-www-form-urlencoded",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 400
    assert response.json() == {"error": MSG_BODY_NOT_JSON, "field": "body"}


def test_it_refuses_a_label_on_a_step_no_agent_took(client, api_project, token):
    response = _post(client, token, "f3/labels", {"step": 0})
    assert response.status_code == 400
    assert response.json()["field"] == "step"
    assert response.json()["error"].startswith("Step 0 is the user's turn, not an agent's action")
    assert not Label.objects.filter(trajectory__external_id="f3").exists()
