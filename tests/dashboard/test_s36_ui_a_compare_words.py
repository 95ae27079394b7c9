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


def _page(client, project, external_id: str, **params) -> str:
    rollout = Trajectory.objects.get(project=project, external_id=external_id)
    url = reverse("dashboard:rollout_compare", args=[project.slug, rollout.pk])
    return client.get(url, params, follow=True).content.decode()


def test_rollouts_without_a_task_id_compare_by_their_task_text(client, member, project):
    # Seven live traces of one prompt had no task id: "Nothing to compare with".
    get, book = _call("get"), _call("book")
    lines = b""
    for external_id, outcome, steps in (
        ("live-a", "failure", [HI, get, book]),
        ("live-b", "success", [HI, get]),
        ("other", "success", [{"role": "user", "content": "Cancel everything."}, get]),
    ):
        line = {
            "id": external_id,
            "outcome": outcome,
            "steps": steps,
            "task_text": steps[0]["content"],
        }
        lines += (json.dumps(line) + "\n").encode()
    ingest_bytes(project, lines, "live.jsonl")
    client.force_login(member)
    html = _page(client, project, "live-a")
    assert "Nothing to compare with" not in html and 'id="divergence"' in html
    assert "live-b" in html.split('id="divergence"', 1)[1]
    # Any rollout of the project, named: compared, and the page says it is another task.
    named = _page(client, project, "live-a", with_rollout="other")
    assert 'id="compare-other-task"' in named and "is not a rollout of this task" in named
    # A name no rollout has is said, not silently replaced.
    missing = _page(client, project, "live-a", with_rollout="<nope>")
    assert escape("No rollout called “<nope>” in this project.") in missing
    other = Trajectory.objects.get(project=project, external_id="other")
    by_id = _page(client, project, "live-a", **{"with": str(other.pk)})
    assert 'id="compare-other-task"' in by_id
    huge = _page(client, project, "live-a", **{"with": "9" * 30})
    assert 'id="divergence"' in huge  # ignored, the first candidate is shown
