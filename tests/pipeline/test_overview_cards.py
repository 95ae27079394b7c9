"""The overview's cards: stored by the refresh, counted afresh once a rollout arrived."""

from __future__ import annotations

import json

import pytest

from ingest.selectors import project_counts
from pipeline.models import ProjectOverview
from pipeline.overview import project_overview_refresh
from pipeline.overview_cards import overview_cards
from tests.conftest import ingest_bytes

pytestmark = pytest.mark.django_db


def _ingest(project, name: str, *outcomes: str, labelled: bool = False) -> None:
    lines = [
        json.dumps(
            {
                "id": f"{name}-{n}",
                "outcome": outcome,
                "steps": [{"role": "user", "content": "x"}] * 2,
                **({"labels": [{"step": 1}]} if labelled else {}),
            }
        )
        for n, outcome in enumerate(outcomes)
    ]
    ingest_bytes(project, ("\n".join(lines) + "\n").encode(), f"{name}.jsonl")


def _stored_counts(project, **counts: int) -> None:
    overview = ProjectOverview.objects.get(project=project)
    overview.data["cards"].update(counts)
    overview.save()


def test_it_counts_a_project_without_a_stored_overview(project):
    _ingest(project, "first", "failure", "success", labelled=True)
    assert overview_cards(project=project) == {
        "rollouts": 2,
        "failed": 1,
        "succeeded": 1,
        "labelled": 2,
    }


def test_it_reads_the_counts_the_refresh_stored(project):
    _ingest(project, "first", "failure", "success", "unknown")
    project_overview_refresh(project_id=project.pk)
    # A stored figure the live count would not give: proof that the stored one is read.
    _stored_counts(project, labelled=99)
    assert overview_cards(project=project)["labelled"] == 99
    assert overview_cards(project=project)["rollouts"] == 3


def test_it_counts_afresh_once_a_rollout_arrived_after_the_refresh(project):
    _ingest(project, "first", "failure")
    project_overview_refresh(project_id=project.pk)
    _stored_counts(project, labelled=99)
    _ingest(project, "second", "success", "failure")
    assert overview_cards(project=project) == project_counts(project=project)
    assert overview_cards(project=project)["rollouts"] == 3


def test_the_overview_page_shows_the_stored_counts(client, member, project):
    from django.urls import reverse

    _ingest(project, "first", "failure", "success")
    project_overview_refresh(project_id=project.pk)
    _stored_counts(project, failed=77)
    client.force_login(member)
    response = client.get(reverse("dashboard:project_detail", args=[project.slug]))
    assert response.context["counts"]["failed"] == 77
