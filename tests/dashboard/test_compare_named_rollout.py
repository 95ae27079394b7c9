"""The comparison page, asked for a rollout by an id no rollout of the project has, says
that, not "No other rollout of this task was uploaded" (a user trial read that as the
problem when the id was mistyped)."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from django.utils.html import escape

from dashboard.views import MSG_NAMED_ITSELF, MSG_NO_ROLLOUT_NAMED
from ingest.models import Trajectory
from projects.models import Project
from tests.conftest import ingest_bytes

pytestmark = pytest.mark.django_db

HI = {"role": "user", "content": "Change my flight to Friday."}
CALL = {"role": "assistant", "kind": "tool_call", "tool_name": "get", "tool_args": {"id": 1}}
HOSTILE = '<script>alert("x")</script>'


def _ingest(project, *rollouts: tuple[str, str, str]) -> None:
    lines = b""
    for external_id, task_id, outcome in rollouts:
        line = {"id": external_id, "task_id": task_id, "outcome": outcome, "steps": [HI, CALL]}
        lines += (json.dumps(line) + "\n").encode()
    ingest_bytes(project, lines, "rollouts.jsonl")


def _get(client, project, external_id: str, named: str):
    rollout = Trajectory.objects.get(project=project, external_id=external_id)
    url = reverse("dashboard:rollout_compare", args=[project.slug, rollout.pk])
    return client.get(url, {"with_rollout": named})


def test_an_unknown_id_is_named_and_escaped_not_blamed_on_the_task(client, member, project):
    _ingest(project, ("fail-1", "t1", "failure"))
    client.force_login(member)
    response = _get(client, project, "fail-1", HOSTILE)
    assert response.status_code == 200  # as for a bad ?with=: the page, saying so
    html = response.content.decode()
    problem = html.split('id="compare-named-problem"', 1)[1].split("</p>", 1)[0]
    assert escape(MSG_NO_ROLLOUT_NAMED.format(name=HOSTILE)) in problem
    assert "this task has no other rollout to show instead" in problem
    assert "No other rollout of this task" not in html
    assert HOSTILE not in html
    # The id stays in the field, to be corrected.
    assert f'value="{escape(HOSTILE)}" aria-invalid="true"' in html


def test_an_unknown_id_says_what_is_shown_instead(client, member, project):
    _ingest(project, ("fail-1", "t1", "failure"), ("ok-1", "t1", "success"))
    client.force_login(member)
    html = _get(client, project, "fail-1", "no-such-id").content.decode()
    problem = html.split('id="compare-named-problem"', 1)[1].split("</p>", 1)[0]
    assert escape(MSG_NO_ROLLOUT_NAMED.format(name="no-such-id")) in problem
    assert "Showing ok-1, a rollout of this task, instead." in problem
    assert 'id="divergence"' in html


def test_a_rollout_of_another_project_is_not_found(client, member, project):
    other_project = Project.objects.create(name="Other agents", slug="other")
    _ingest(project, ("fail-1", "t1", "failure"))
    _ingest(other_project, ("theirs", "t1", "success"))
    client.force_login(member)
    html = _get(client, project, "fail-1", "theirs").content.decode()
    assert escape(MSG_NO_ROLLOUT_NAMED.format(name="theirs")) in html
    assert 'id="divergence"' not in html


def test_a_rollout_of_another_task_is_compared_and_said_to_be_one(client, member, project):
    _ingest(project, ("fail-1", "t1", "failure"), ("elsewhere", "t2", "success"))
    client.force_login(member)
    html = _get(client, project, "fail-1", "elsewhere").content.decode()
    assert 'id="compare-named-problem"' not in html
    assert "elsewhere is not a rollout of this task (t2)" in html


def test_the_rollout_itself_is_not_called_missing(client, member, project):
    # It read "The rollout asked for is not one of this project's".
    _ingest(project, ("fail-1", "t1", "failure"))
    client.force_login(member)
    html = _get(client, project, "fail-1", "fail-1").content.decode()
    assert escape(MSG_NAMED_ITSELF.format(name="fail-1")) in html
    assert "not one of this project" not in html
