"""The overview's cards: stored by the pipeline, never counted afresh while stored; the
rollouts newer than them are counted alone and the page says the cards lag."""

from __future__ import annotations

import json

import pytest

from ingest.selectors import project_counts
from pipeline.models import ProjectOverview
from pipeline.overview import project_overview_refresh
from pipeline.overview_cards import MSG_CARDS_LAG, overview_cards, overview_cards_state
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


def test_it_keeps_the_stored_counts_and_counts_only_the_newer_rollouts(project):
    _ingest(project, "first", "failure")
    project_overview_refresh(project_id=project.pk)
    _stored_counts(project, labelled=99)
    # Stored without the pipeline's task: the counters did not move for these two.
    _ingest(project, "second", "success", "failure")
    cards = overview_cards_state(project=project)
    assert cards.counts["labelled"] == 99 and cards.counts["rollouts"] == 1
    assert cards.newer == 2
    assert cards.lag_message == MSG_CARDS_LAG.format(
        time=cards.as_of.strftime("%H:%M"), count="2", plural="s", verb="are"
    )


def test_it_counts_the_rollouts_of_a_project_whose_stored_cards_hold_none(project):
    project_overview_refresh(project_id=project.pk)
    _ingest(project, "first", "failure", "success")
    cards = overview_cards_state(project=project)
    assert cards.counts == project_counts(project=project) and cards.lag_message == ""


def test_the_overview_page_shows_the_stored_counts(client, member, project):
    from django.urls import reverse

    _ingest(project, "first", "failure", "success")
    project_overview_refresh(project_id=project.pk)
    _stored_counts(project, failed=77)
    client.force_login(member)
    response = client.get(reverse("dashboard:project_detail", args=[project.slug]))
    assert response.context["counts"]["failed"] == 77
