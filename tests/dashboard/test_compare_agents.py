"""The comparison page names each step's agent in a multi-agent rollout, as the rollout page
does (it said "assistant" for every agent's step)."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from ingest.models import Trajectory
from tests.conftest import ingest_bytes

pytestmark = pytest.mark.django_db

HI = {"role": "user", "content": "Find the cheapest flight to Oslo."}


def _step(agent: str, text: str) -> dict[str, object]:
    return {"role": "assistant", "agent": agent, "content": text}


def _rollout(external_id: str, outcome: str, steps: list[dict[str, object]]) -> bytes:
    line = {"id": external_id, "task_id": "t1", "outcome": outcome, "steps": steps}
    return (json.dumps(line) + "\n").encode()


def _meta(client, project, external_id: str) -> list[str]:
    rollout = Trajectory.objects.get(project=project, external_id=external_id)
    html = client.get(reverse("dashboard:rollout_compare", args=[project.slug, rollout.pk]))
    return html.content.decode().split('class="compare-meta"')[1:]


def test_it_names_the_agent_of_each_step(client, member, project):
    failed = [HI, _step("planner", "Search flights."), _step("searcher", "No flights found.")]
    succeeded = [HI, _step("planner", "Search flights."), _step("searcher", "SK 4411, 89 EUR.")]
    ingest_bytes(project, _rollout("fail-1", "failure", failed), "a.jsonl")
    ingest_bytes(project, _rollout("ok-1", "success", succeeded), "b.jsonl")
    client.force_login(member)
    metas = _meta(client, project, "fail-1")
    agents = [meta.split('class="agent"', 1)[1].split("</span>", 1)[0] for meta in metas]
    assert [agent.rsplit(">", 1)[1] for agent in agents] == [
        "user", "user", "planner", "planner", "searcher", "searcher",
    ]  # fmt: skip
    assert "assistant" not in "".join(agent.rsplit(">", 1)[1] for agent in agents)


def test_a_step_without_an_agent_keeps_its_role(client, member, project):
    ingest_bytes(project, _rollout("fail-1", "failure", [HI, HI]), "a.jsonl")
    ingest_bytes(project, _rollout("ok-1", "success", [HI]), "b.jsonl")
    client.force_login(member)
    assert all(">user</span>" in meta for meta in _meta(client, project, "fail-1"))


def test_a_huge_result_is_cut_on_the_compare_page_as_on_the_rollout_page(client, member, project):
    from dashboard.templatetags.faultline import INLINE_CHARS

    page = "row " * 50_000  # 200,000 characters on each side
    huge = {"role": "tool", "content": page}
    ingest_bytes(project, _rollout("fail-1", "failure", [HI, huge]), "a.jsonl")
    ingest_bytes(project, _rollout("ok-1", "success", [HI, huge]), "b.jsonl")
    client.force_login(member)
    rollout = Trajectory.objects.get(project=project, external_id="fail-1")
    html = client.get(
        reverse("dashboard:rollout_compare", args=[project.slug, rollout.pk])
    ).content.decode()
    assert len(html) < 3 * INLINE_CHARS
    assert f"Showing the first {INLINE_CHARS:,} of {len(page):,} characters" in html
