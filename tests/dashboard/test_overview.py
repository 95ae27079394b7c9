"""The project overview: cards, charts with table fallbacks, bounded queries."""

from __future__ import annotations

import contextlib
import json

import pytest
from django.urls import reverse

from attribution.action_analysis import project_action_analysis_refresh
from attribution.models import ActionAnalysis, RolloutDeviation
from tests.conftest import ingest_bytes, ingest_file, shared_file

pytestmark = pytest.mark.django_db

OVERVIEW_MAX_QUERIES = 20


@pytest.fixture
def tau_project(project):
    ingest_file(project, shared_file("tau_bench/historical_trajectories/gpt-4o-airline.json"))
    ingest_file(project, shared_file("who_and_when/Who&When/Hand-Crafted/1.json"))
    project_action_analysis_refresh(project_id=project.pk)
    return project


def test_it_is_the_projects_landing_page(client, member, project):
    client.force_login(member)
    response = client.get(reverse("dashboard:project_detail", args=[project.slug]))
    assert response.templates[0].name == "dashboard/overview.html"
    assert "Upload your first trace log" in response.content.decode()


def test_it_shows_cards_and_every_chart_with_its_numbers(client, member, tau_project):
    client.force_login(member)
    response = client.get(reverse("dashboard:project_detail", args=[tau_project.slug]))
    html = response.content.decode()
    assert response.context["counts"]["rollouts"] == 201
    assert "failure rate" in html and "labelled rollouts" in html and "coverage" in html
    for chart_id in ("chart-heatmap", "chart-positions", "chart-uploads", "chart-actions"):
        assert f'data-figure-id="{chart_id}-data"' in html, chart_id
        assert f'id="{chart_id}-data"' in html, chart_id
    assert html.count('class="chart-fallback"') >= 4
    assert "116/200" in html  # gpt-4o on airline: 116 of 200 failed


def test_it_embeds_figures_as_json_scripts(client, member, tau_project):
    client.force_login(member)
    html = client.get(reverse("dashboard:project_detail", args=[tau_project.slug])).content.decode()
    marker = '<script id="chart-heatmap-data" type="application/json">'
    start = html.index(marker) + len(marker)
    figure = json.loads(html[start : html.index("</script>", start)])
    assert figure["data"][0]["type"] == "heatmap"
    assert figure["layout"]["title"]["text"]


def test_it_keeps_queries_bounded(client, member, tau_project, django_assert_max_num_queries):
    client.force_login(member)
    url = reverse("dashboard:project_detail", args=[tau_project.slug])
    with django_assert_max_num_queries(OVERVIEW_MAX_QUERIES):
        assert client.get(url).status_code == 200


def test_it_costs_the_same_queries_with_more_uploads(
    client, member, tau_project, django_assert_max_num_queries
):
    for number in range(5):
        line = {
            "id": f"x{number}",
            "outcome": "failure",
            "steps": [{"role": "user", "content": "hi"}],
        }
        ingest_bytes(tau_project, (json.dumps(line) + "\n").encode(), f"extra{number}.jsonl")
    client.force_login(member)
    with django_assert_max_num_queries(OVERVIEW_MAX_QUERIES):
        client.get(reverse("dashboard:project_detail", args=[tau_project.slug]))


def test_it_stores_the_action_analysis_once_per_refresh(tau_project):
    analysis = ActionAnalysis.objects.get(project=tau_project)
    assert analysis.summary["with_gold"] == 200
    kinds = {o["kind"]: o for o in analysis.summary["odds"]}
    assert kinds["mutating"]["odds_ratio"] < kinds["read_only"]["odds_ratio"]
    assert RolloutDeviation.objects.filter(trajectory__project=tau_project).count() == 200
    project_action_analysis_refresh(project_id=tau_project.pk)
    assert RolloutDeviation.objects.filter(trajectory__project=tau_project).count() == 200
    assert ActionAnalysis.objects.filter(project=tau_project).count() == 1


def test_it_reads_the_aggregates_the_refresh_stored(client, member, tau_project):
    from pipeline.models import ProjectOverview
    from pipeline.overview import project_overview_refresh

    project_overview_refresh(project_id=tau_project.pk)
    stored = ProjectOverview.objects.get(project=tau_project)
    assert {row["policy_model"] for row in stored.data["failures"]} == {"gpt-4o", "(none)"}
    assert sum(stored.data["positions"]["labelled decisive step"]) == 1
    client.force_login(member)
    response = client.get(reverse("dashboard:project_detail", args=[tau_project.slug]))
    assert response.context["computed_at"] == stored.computed_at
    assert "Charts as of" in response.content.decode()


def test_the_refresh_task_stores_the_overview_even_without_the_other_apps(tau_project):
    from pipeline.models import ProjectOverview
    from pipeline.tasks import refresh_project

    # An attribution or clustering failure must not lose the overview.
    with contextlib.suppress(Exception):
        refresh_project(tau_project.pk)
    assert ProjectOverview.objects.filter(project=tau_project).exists()


def test_it_explains_when_no_rollout_has_gold_actions(client, member, project):
    ingest_file(project, shared_file("who_and_when/Who&When/Hand-Crafted/1.json"))
    project_action_analysis_refresh(project_id=project.pk)
    client.force_login(member)
    html = client.get(reverse("dashboard:project_detail", args=[project.slug])).content.decode()
    assert "regression needs at least" in html


def test_it_links_only_pages_that_exist(client, member, project):
    client.force_login(member)
    html = client.get(reverse("dashboard:project_detail", args=[project.slug])).content.decode()
    for name in ("project_detail", "rollout_list", "uploads", "project_settings"):
        assert f'href="{reverse("dashboard:" + name, args=[project.slug])}"' in html
    assert 'aria-current="page">Overview' in html
