"""The overview's cards: stored by the pipeline, never counted afresh while stored; the
rollouts newer than them are counted alone and the page says the cards lag."""

from __future__ import annotations

import json

import pytest

from ingest.core.records import LabelSource
from ingest.selectors import project_counts
from pipeline.models import ProjectOverview
from pipeline.overview import overview_aggregates, project_overview_refresh
from pipeline.overview_cards import MSG_CARDS_LAG, overview_cards, overview_cards_state
from pipeline.overview_counts import overview_counts_rebuild, overview_counts_update
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
        "labelled_by_rule": 0,
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


def _label_sources(project) -> None:
    """Rollout first-0 keeps its data set's label and gains a rule's, first-1 has only a
    rule's (gold actions), first-2 only a successful sibling's, first-3 none."""
    _ingest(project, "first", "failure", "failure", "failure", "failure")
    rollouts = {r.external_id: r for r in project.trajectories.all()}
    rollouts["first-0"].labels.create(step_index=1, source=LabelSource.DATASET)
    rollouts["first-0"].labels.create(step_index=0, source=LabelSource.GOLD_ACTIONS)
    rollouts["first-1"].labels.create(step_index=0, source=LabelSource.GOLD_ACTIONS)
    rollouts["first-2"].labels.create(step_index=1, source=LabelSource.SIBLING_DIVERGENCE)


def test_the_cards_count_the_rollouts_only_a_rule_labelled(project):
    _label_sources(project)
    counted = project_counts(project=project)
    assert counted["labelled"] == 3 and counted["labelled_by_rule"] == 2
    project_overview_refresh(project_id=project.pk)
    assert overview_cards(project=project) == counted


def test_the_rule_count_moves_when_a_person_labels_a_rule_labelled_rollout(project):
    _label_sources(project)
    project_overview_refresh(project_id=project.pk)
    rollout = project.trajectories.get(external_id="first-1")
    rollout.labels.create(step_index=1, source=LabelSource.HUMAN)
    overview_counts_update(project_id=project.pk, rollout_ids=[rollout.pk])
    cards = overview_cards(project=project)
    assert cards["labelled"] == 3 and cards["labelled_by_rule"] == 1
    assert cards == project_counts(project=project)


def test_counters_stored_before_the_rule_count_are_rebuilt_not_moved(project):
    _label_sources(project)
    overview = overview_counts_rebuild(project_id=project.pk)
    # The shape an older release stored: no rule count, an older version.
    overview.data["counts"]["version"] = 2
    del overview.data["counts"]["cards"]["labelled_by_rule"]
    del overview.data["cards"]["labelled_by_rule"]
    overview.save()
    # Stored cards that lack a card are not read: the request counts.
    assert overview_cards_state(project=project).as_of is None
    rollout = project.trajectories.get(external_id="first-3")
    overview_counts_update(project_id=project.pk, rollout_ids=[rollout.pk])
    state = overview_cards_state(project=project)
    assert state.as_of is not None and state.counts == project_counts(project=project)


def test_the_overview_card_says_how_many_labels_a_rule_made(client, member, project):
    from django.urls import reverse

    _label_sources(project)
    project_overview_refresh(project_id=project.pk)
    client.force_login(member)
    html = client.get(reverse("dashboard:project_detail", args=[project.slug])).content.decode()
    assert "labelled rollouts (a decisive step marked) · 2 by a rule" in html


def test_the_position_chart_counts_each_rollout_once_by_its_decisive_label(project):
    # first-0 holds a data set's label (step 1 of 2) and a rule's (step 0): the data set's
    # decides (LabelSource.prefers), so it is counted in the second half and only there.
    _label_sources(project)
    expected = [0] * 10
    expected[0] += 1  # first-1, the rule's step 0
    expected[5] += 2  # first-0 (data set), first-2 (sibling), each step 1 of 2
    aggregated = overview_aggregates(project=project)["positions"]["labelled decisive step"]
    assert aggregated == expected
    rebuilt = overview_counts_rebuild(project_id=project.pk)
    assert rebuilt.data["positions"]["labelled decisive step"] == expected
    # A person's label on first-1 moves its position, it does not add one.
    rollout = project.trajectories.get(external_id="first-1")
    rollout.labels.create(step_index=1, source=LabelSource.HUMAN)
    moved = overview_counts_update(project_id=project.pk, rollout_ids=[rollout.pk])
    assert moved.data["positions"]["labelled decisive step"][:6] == [0, 0, 0, 0, 0, 3]
    assert moved.data["positions"] == overview_aggregates(project=project)["positions"]
