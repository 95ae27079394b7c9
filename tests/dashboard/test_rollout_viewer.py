"""The rollout page: agent lanes, deviations, comparison, bounded queries."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from attribution.action_analysis import project_action_analysis_refresh
from tests.conftest import ingest_bytes, ingest_file, shared_file

pytestmark = pytest.mark.django_db

ROLLOUT_MAX_QUERIES = 20


@pytest.fixture
def tau(project):
    ingest_file(project, shared_file("tau_bench/historical_trajectories/gpt-4o-airline.json"))
    project_action_analysis_refresh(project_id=project.pk)
    return project


def test_it_draws_one_lane_per_agent(client, member, project):
    ingest_file(project, shared_file("who_and_when/Who&When/Hand-Crafted/1.json"))
    rollout = project.trajectories.get()
    client.force_login(member)
    response = client.get(reverse("dashboard:rollout_detail", args=[project.slug, rollout.pk]))
    lanes = response.context["lanes"]
    names = {trace["name"] for trace in lanes.figure["data"]}
    assert "WebSurfer" in names and len(names) > 2
    assert sum(len(t["x"]) for t in lanes.figure["data"]) == rollout.step_count
    assert 'data-figure-id="chart-lanes-data"' in response.content.decode()


def _reads_marks(client, url) -> bool:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from dashboard.pages import LANE_STEPS_MAX

    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return any(f"< {LANE_STEPS_MAX}" in query["sql"] for query in queries.captured_queries)


def test_it_draws_a_rollouts_lanes_once_until_the_rollout_grows(client, member, project):
    from django.core.cache import cache

    cache.clear()
    ingest_file(project, shared_file("who_and_when/Who&When/Hand-Crafted/1.json"))
    rollout = project.trajectories.get()
    client.force_login(member)
    url = reverse("dashboard:rollout_detail", args=[project.slug, rollout.pk])
    assert _reads_marks(client, url)
    assert not _reads_marks(client, url)  # the same chart, from the cache
    project.trajectories.filter(pk=rollout.pk).update(step_count=rollout.step_count + 1)
    assert _reads_marks(client, url)  # a live trace grew: drawn again


def test_it_renders_the_steps_of_a_window_with_their_marks(client, member, project):
    steps = [{"role": "assistant", "agent": f"a{i % 2}", "content": f"s{i}"} for i in range(900)]
    line = {"id": "long", "outcome": "failure", "steps": steps, "labels": [{"step": 850}]}
    rollout = ingest_bytes(
        project, (json.dumps(line) + "\n").encode(), "long.jsonl"
    ).trajectories.get()
    client.force_login(member)
    url = reverse("dashboard:rollout_detail", args=[project.slug, rollout.pk])
    html = client.get(url, {"from": "850"}).content.decode()
    assert html.count('<li class="step') == 100
    assert '<li class="step labelled" id="step-850"' in html
    assert 'data-click="step"' in html  # a lane mark opens its step, in any window


def test_it_marks_the_earliest_decisive_deviation(client, member, tau):
    rollout = tau.trajectories.get(external_id="airline-task0-trial0")
    client.force_login(member)
    response = client.get(reverse("dashboard:rollout_detail", args=[tau.slug, rollout.pk]))
    deviation = response.context["deviation"]
    assert deviation is not None and deviation.decisive_step is not None
    html = response.content.decode()
    assert 'id="jump-deviation"' in html
    assert "earliest mutating deviation" in html


def test_it_says_why_the_gold_action_label_sits_elsewhere(client, member, tau):
    from attribution.label_sources_refresh import project_derived_labels_refresh
    from attribution.models import RolloutDeviation
    from ingest.models import Label

    project_derived_labels_refresh(project_id=tau.pk)
    client.force_login(member)
    # task 3, trial 0: its first wrong update_reservation_flights failed ("not enough
    # seats"), so the plain diff and the gold-action rule name different steps.
    rollout = tau.trajectories.get(external_id="airline-task3-trial0")
    label = Label.objects.get(trajectory=rollout, source="gold_actions")
    response = client.get(reverse("dashboard:rollout_detail", args=[tau.slug, rollout.pk]))
    deviation = response.context["deviation"]
    assert deviation.decisive_step != label.step_index
    note = response.content.decode().split('id="gold-label-elsewhere"')[1].split("</p>")[0]
    assert f"step {label.step_index}</a>" in note and "result is an error" in note
    # Where both rules name the same step, nothing more is said.
    same = next(
        deviation.trajectory_id
        for deviation in RolloutDeviation.objects.filter(trajectory__project=tau)
        if Label.objects.filter(
            trajectory_id=deviation.trajectory_id,
            source="gold_actions",
            step_index=deviation.decisive_step,
        ).exists()
    )
    html = client.get(reverse("dashboard:rollout_detail", args=[tau.slug, same])).content.decode()
    assert 'id="jump-deviation"' in html and 'id="gold-label-elsewhere"' not in html


def test_it_offers_a_comparison_for_rollouts_of_a_task_with_trials(client, member, tau):
    rollout = tau.trajectories.get(external_id="airline-task1-trial0")
    client.force_login(member)
    html = client.get(
        reverse("dashboard:rollout_detail", args=[tau.slug, rollout.pk])
    ).content.decode()
    assert reverse("dashboard:rollout_compare", args=[tau.slug, rollout.pk]) in html


def test_it_compares_with_a_successful_trial_of_the_same_task(client, member, tau):
    rollout = tau.trajectories.get(external_id="airline-task1-trial0")
    client.force_login(member)
    response = client.get(reverse("dashboard:rollout_compare", args=[tau.slug, rollout.pk]))
    other = response.context["other"]
    assert other.task_id == rollout.task_id and other.outcome == "success"
    alignment = response.context["alignment"]
    assert alignment.first_action_difference is not None
    assert "first differ at" in response.content.decode()


def test_it_compares_with_the_trial_chosen_in_the_url(client, member, tau):
    rollout = tau.trajectories.get(external_id="airline-task1-trial0")
    chosen = tau.trajectories.get(external_id="airline-task1-trial2")
    client.force_login(member)
    url = reverse("dashboard:rollout_compare", args=[tau.slug, rollout.pk])
    assert client.get(url, {"with": chosen.pk}).context["other"] == chosen


def test_it_says_when_there_is_nothing_to_compare(client, member, project):
    line = {"id": "alone", "outcome": "failure", "steps": [{"role": "user", "content": "hi"}]}
    rollout = ingest_bytes(
        project, (json.dumps(line) + "\n").encode(), "a.jsonl"
    ).trajectories.get()
    client.force_login(member)
    html = client.get(
        reverse("dashboard:rollout_compare", args=[project.slug, rollout.pk])
    ).content.decode()
    assert "Nothing to compare with" in html


def test_it_escapes_trace_content_on_the_comparison(client, member, project):
    hostile = '<script>alert("x")</script>'
    lines = b"".join(
        (
            json.dumps(
                {
                    "id": f"r{n}",
                    "task_id": "t",
                    "outcome": outcome,
                    "steps": [{"role": "user", "content": hostile + str(n)}],
                }
            )
            + "\n"
        ).encode()
        for n, outcome in enumerate(["failure", "success"])
    )
    upload = ingest_bytes(project, lines, "two.jsonl")
    rollout = upload.trajectories.get(external_id="r0")
    client.force_login(member)
    html = client.get(
        reverse("dashboard:rollout_compare", args=[project.slug, rollout.pk])
    ).content.decode()
    assert "<script>alert" not in html and "&lt;script&gt;alert" in html


def test_it_keeps_queries_bounded_on_long_rollouts(
    client, member, project, django_assert_max_num_queries
):
    steps = [
        {"role": "assistant", "agent": f"agent{i % 3}", "content": f"step {i}"} for i in range(2000)
    ]
    line = {
        "id": "long",
        "task_id": "t",
        "outcome": "failure",
        "steps": steps,
        "labels": [{"step": 1500}],
    }
    rollout = ingest_bytes(
        project, (json.dumps(line) + "\n").encode(), "long.jsonl"
    ).trajectories.get()
    client.force_login(member)
    url = reverse("dashboard:rollout_detail", args=[project.slug, rollout.pk])
    with django_assert_max_num_queries(ROLLOUT_MAX_QUERIES):
        response = client.get(url, {"from": "1600"})
    assert len(response.context["steps"]) == 400


def _trials(project, task: str, *outcomes: str) -> list:
    lines = [
        json.dumps(
            {
                "id": f"{task}-{n}",
                "task_id": task,
                "outcome": outcome,
                "steps": [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "ok"},
                ],
            }
        )
        for n, outcome in enumerate(outcomes)
    ]
    ingest_bytes(project, ("\n".join(lines) + "\n").encode(), f"{task}.jsonl")
    return list(project.trajectories.filter(task_id=task).order_by("external_id"))


def _compare_button(client, member, project, rollout) -> str:
    client.force_login(member)
    html = client.get(reverse("dashboard:rollout_detail", args=[project.slug, rollout.pk])).content
    return html.decode().split('id="compare-link"', 1)[1].split("</a>", 1)[0]


def test_it_offers_a_successful_trial_only_when_the_task_has_one(client, member, project):
    failed, _ = _trials(project, "t1", "failure", "failure")
    assert "another trial" in _compare_button(client, member, project, failed)
    failed, _, success = _trials(project, "t2", "failure", "failure", "success")
    assert "a successful trial" in _compare_button(client, member, project, failed)
    assert "another trial" in _compare_button(client, member, project, success)
