"""The comparison page says in words where two rollouts part when one has no matching step
(it wrote "differ at step — ↔ 6")."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse
from django.utils.html import escape

from ingest.models import Trajectory
from tests.conftest import ingest_bytes

pytestmark = pytest.mark.django_db

HI = {"role": "user", "content": "Change my flight to Friday."}


def _call(name: str) -> dict[str, object]:
    return {"role": "assistant", "kind": "tool_call", "tool_name": name, "tool_args": {"id": 1}}


def _rollout(external_id: str, outcome: str, steps: list[dict[str, object]]) -> bytes:
    line = {"id": external_id, "task_id": "t1", "outcome": outcome, "steps": steps}
    return (json.dumps(line) + "\n").encode()


def _summary(client, project, external_id: str) -> str:
    rollout = Trajectory.objects.get(project=project, external_id=external_id)
    html = client.get(reverse("dashboard:rollout_compare", args=[project.slug, rollout.pk]))
    panel = html.content.decode().split('id="divergence"', 1)[1]
    summary = panel.split("<p>", 1)[1].split("</p>", 1)[0]
    return " ".join(re.sub(r"<[^>]+>", "", summary).split())


def test_it_says_which_rollout_stops_where(client, member, project):
    get, book, cancel = _call("get"), _call("book"), _call("cancel")
    ingest_bytes(project, _rollout("fail-1", "failure", [HI, get, book, cancel]), "a.jsonl")
    ingest_bytes(project, _rollout("ok-1", "success", [HI, get, book]), "b.jsonl")
    client.force_login(member)
    summary = _summary(client, project, "fail-1")
    expected = "They first differ, in a tool call, at step 3 of fail-1 (ok-1 stops after step 2)."
    assert expected in summary
    assert "—" not in summary and "↔" not in summary


def test_it_says_when_the_other_has_no_step_there(client, member, project):
    lookup = {"role": "assistant", "content": "Let me look that up."}
    ingest_bytes(project, _rollout("fail-1", "failure", [HI, _call("book")]), "a.jsonl")
    steps = [HI, lookup, _call("get"), _call("book")]
    ingest_bytes(project, _rollout("ok-1", "success", steps), "b.jsonl")
    client.force_login(member)
    summary = _summary(client, project, "fail-1")
    assert summary.startswith("They first differ at step 1 of ok-1 (fail-1 has no matching step);")
    action = "first differ at step 2 of ok-1 (fail-1 has no matching step)."
    assert "their actions (tool calls) " + action in summary


def test_it_names_each_rollouts_step_when_they_differ_at_different_places(client, member, project):
    ask = {"role": "assistant", "content": "Which reservation?"}
    get, book, cancel = _call("get"), _call("book"), _call("cancel")
    ingest_bytes(project, _rollout("fail-1", "failure", [HI, get, book]), "a.jsonl")
    ingest_bytes(project, _rollout("ok-1", "success", [HI, ask, get, cancel]), "b.jsonl")
    client.force_login(member)
    summary = _summary(client, project, "fail-1")
    assert summary.startswith("They first differ at step 1 of ok-1 (fail-1 has no matching step);")
    assert "first differ at step 2 of fail-1 and step 3 of ok-1." in summary


def test_it_escapes_the_rollout_names_in_the_words(client, member, project):
    hostile = "<script>alert(1)</script>"
    ingest_bytes(project, _rollout(hostile, "failure", [HI, _call("get")]), "a.jsonl")
    ingest_bytes(project, _rollout("ok-1", "success", [HI]), "b.jsonl")
    rollout = Trajectory.objects.get(project=project, external_id=hostile)
    client.force_login(member)
    html = client.get(
        reverse("dashboard:rollout_compare", args=[project.slug, rollout.pk])
    ).content.decode()
    assert f"step 1 of {escape(hostile)} (ok-1 stops after step 0)" in html
    assert hostile not in html
