"""Pages show rollouts and steps, with filters in the URL, and escape trace content."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from tests.conftest import ingest_bytes, ingest_file, shared_file

pytestmark = pytest.mark.django_db

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def _line(**fields):
    base = {"id": "r1", "outcome": "failure", "steps": [{"role": "user", "content": "hi"}]}
    base.update(fields)
    return (json.dumps(base) + "\n").encode()


def test_it_escapes_trace_content_everywhere(client, member, project):
    data = _line(
        id="evil" + HOSTILE,
        task_text=HOSTILE,
        environment="env" + HOSTILE,
        steps=[
            {
                "role": "assistant",
                "agent": HOSTILE,
                "content": HOSTILE + "\x1b[31mred\x1b[0m",
                "kind": "tool_call",
                "tool_name": "t" + HOSTILE,
                "tool_args": {"q": HOSTILE},
            },
        ],
        labels=[{"step": 0, "reason": HOSTILE, "agent": HOSTILE}],
    )
    upload = ingest_bytes(project, data, "evil.jsonl")
    rollout = upload.trajectories.get()
    client.force_login(member)
    for url in (
        reverse("dashboard:project_detail", args=[project.slug]),
        reverse("dashboard:rollout_list", args=[project.slug]),
        reverse("dashboard:rollout_detail", args=[project.slug, rollout.pk]),
        reverse("dashboard:uploads", args=[project.slug]),
    ):
        html = client.get(url).content.decode()
        assert "<script>alert" not in html, url
        assert "<img src=x" not in html, url
    html = client.get(
        reverse("dashboard:rollout_detail", args=[project.slug, rollout.pk])
    ).content.decode()
    assert "&lt;script&gt;alert" in html
    assert "\x1b[31m" not in html


def test_it_filters_rollouts_by_outcome_environment_model_and_search(client, member, project):
    lines = b"".join(
        [
            _line(
                id="a",
                outcome="failure",
                environment="airline",
                policy_model="m1",
                task_text="book a flight",
            ),
            _line(
                id="b",
                outcome="success",
                environment="airline",
                policy_model="m2",
                task_text="cancel a trip",
            ),
            _line(
                id="c",
                outcome="failure",
                environment="retail",
                policy_model="m1",
                task_text="return shoes",
            ),
        ]
    )
    ingest_bytes(project, lines, "three.jsonl")
    client.force_login(member)
    url = reverse("dashboard:rollout_list", args=[project.slug])

    def ids(**params):
        page = client.get(url, params).context["page"]
        return sorted(r.external_id for r in page.object_list)

    assert ids() == ["a", "b", "c"]
    assert ids(outcome="failure") == ["a", "c"]
    assert ids(environment="airline") == ["a", "b"]
    assert ids(model="m1", outcome="failure") == ["a", "c"]
    assert ids(q="shoes") == ["c"]
    assert ids(labelled="yes") == []


def test_it_marks_the_labelled_decisive_step(client, member, project):
    ingest_file(project, shared_file("who_and_when/Who&When/Hand-Crafted/1.json"))
    rollout = project.trajectories.get()
    client.force_login(member)
    response = client.get(reverse("dashboard:rollout_detail", args=[project.slug, rollout.pk]))
    html = response.content.decode()
    assert 'id="step-12"' in html
    assert "labelled decisive step" in html
    assert "WebSurfer clicks on an irrelevant website" in html
    assert response.context["labelled_steps"] == {12}


def test_it_pretty_prints_tool_arguments(client, member, project):
    ingest_file(project, shared_file("tau_bench/historical_trajectories/gpt-4o-airline.json"))
    rollout = project.trajectories.get(external_id="airline-task0-trial0")
    client.force_login(member)
    html = client.get(
        reverse("dashboard:rollout_detail", args=[project.slug, rollout.pk])
    ).content.decode()
    assert "get_user_details" in html
    assert "&quot;user_id&quot;: &quot;mia_li_3668&quot;" in html


def test_it_windows_long_rollouts(client, member, project):
    steps = [{"role": "assistant", "content": f"step {i}"} for i in range(1000)]
    upload = ingest_bytes(project, _line(id="long", steps=steps), "long.jsonl")
    rollout = upload.trajectories.get()
    client.force_login(member)
    url = reverse("dashboard:rollout_detail", args=[project.slug, rollout.pk])
    first = client.get(url)
    assert len(first.context["steps"]) == 400
    later = client.get(url, {"from": "850"})
    assert [s.index for s in later.context["steps"]][:1] == [800]
    assert len(later.context["steps"]) == 200


def test_it_creates_a_project_owned_by_its_creator(client, outsider):
    from projects.models import Membership

    client.force_login(outsider)
    response = client.post(reverse("dashboard:project_list"), {"name": "My agent"})
    assert response.status_code == 302
    membership = Membership.objects.get(user=outsider)
    assert membership.role == "owner" and membership.project.slug == "my-agent"


def test_it_shows_how_to_upload_on_an_empty_project(client, member, project):
    client.force_login(member)
    html = client.get(reverse("dashboard:project_detail", args=[project.slug])).content.decode()
    assert "Upload your first trace log" in html
    assert "Who&amp;When JSON" in html


def test_it_reports_upload_status_as_json(client, member, project):
    upload = ingest_bytes(project, _line(), "one.jsonl")
    client.force_login(member)
    data = client.get(reverse("dashboard:upload_status", args=[project.slug, upload.pk])).json()
    assert data["status"] == "done"
    assert data["progress"]["percent"] == 100
    assert (data["trajectories"], data["steps"]) == (1, 1)


def test_it_says_when_an_uploaded_file_was_already_stored(client, member, project):
    from django.core.files.uploadedfile import SimpleUploadedFile

    first = ingest_bytes(project, _line(), "one.jsonl")
    client.force_login(member)
    url = reverse("dashboard:uploads", args=[project.slug])
    response = client.post(url, {"files": SimpleUploadedFile("again.jsonl", _line())}, follow=True)
    html = response.content.decode()
    assert "again.jsonl has the same content as one.jsonl, uploaded" in html
    assert "nothing new was stored" in html
    assert project.uploads.count() == 1 and project.uploads.get() == first
