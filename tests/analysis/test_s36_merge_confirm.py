"""Merging a misbehaviour asks first: the first POST only says what moves where, the
merge happens on the confirmation page's POST (plain forms, no script needed)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from analysis.curation import MSG_MERGE_SELF, misbehaviour_merge_plan
from analysis.models import ClusteringRun, Misbehaviour, WrongStepMembership
from analysis.views import MSG_MERGE_TARGET, MSG_MERGED
from ingest.models import Step
from tests.attribution.conftest import make_rollout, make_upload

pytestmark = pytest.mark.django_db


@pytest.fixture
def pair(project):
    """“Retries the search” holds 3 wrong steps in 2 rollouts, “Books <b>twice</b>” 2."""
    upload = make_upload(project)
    first, second = (make_rollout(project, upload=upload, label=False) for _ in range(2))
    run = ClusteringRun.objects.create(project=project, status="done")
    source = Misbehaviour.objects.create(project=project, key="m1", name="Retries the search")
    target = Misbehaviour.objects.create(
        project=project, key="m2", name="Books <b>twice</b>", size=2
    )
    steps = list(
        Step.objects.filter(trajectory__in=[first, second]).order_by("trajectory", "index")
    )
    for step, misbehaviour in zip(steps, [source, source, target, target] + [None] * 6 + [source]):
        WrongStepMembership.objects.create(
            project=project, run=run, step=step, misbehaviour=misbehaviour, source="error"
        )
    return source, target


def _merge_url(project, misbehaviour):
    return reverse("analysis:misbehaviour_merge", args=[project.slug, misbehaviour.pk])


def test_it_counts_the_steps_and_rollouts_that_would_move(pair):
    source, target = pair
    plan = misbehaviour_merge_plan(source=source, target=target)
    assert (plan.target, plan.step_count, plan.rollout_count) == (target, 3, 2)
    assert not Misbehaviour.objects.get(pk=source.pk).merged_into_id


def test_it_refuses_to_plan_a_merge_into_itself(pair):
    source, _ = pair
    with pytest.raises(ValueError, match=MSG_MERGE_SELF):
        misbehaviour_merge_plan(source=source, target=source)


def test_it_asks_before_merging_and_names_what_moves_where(client, member, project, pair):
    source, target = pair
    client.force_login(member)
    response = client.post(_merge_url(project, source), {"target": target.pk})
    html = response.content.decode()
    assert response.status_code == 200
    assert "Merge “Retries the search” into “Books &lt;b&gt;twice&lt;/b&gt;”?" in html
    assert "3 wrong steps</strong> (in 2 rollouts) move from “Retries the search”" in html
    assert 'name="confirm" value="yes"' in html and f'name="target" value="{target.pk}"' in html
    assert "<b>twice</b>" not in html
    source.refresh_from_db()
    assert source.merged_into_id is None and source.is_active
    assert WrongStepMembership.objects.filter(misbehaviour=source).count() == 3


def test_it_merges_once_confirmed(client, member, project, pair):
    source, target = pair
    client.force_login(member)
    response = client.post(
        _merge_url(project, source), {"target": target.pk, "confirm": "yes"}, follow=True
    )
    assert response.redirect_chain[0][0] == target.get_absolute_url()
    source.refresh_from_db()
    assert source.merged_into_id == target.pk and not source.is_active
    assert WrongStepMembership.objects.filter(misbehaviour=target).count() == 5
    target.refresh_from_db()
    assert MSG_MERGED.format(name=target.display_name) in [
        str(message) for message in response.context["messages"]
    ]


def test_the_detail_page_says_a_confirmation_follows(client, member, project, pair):
    source, _ = pair
    client.force_login(member)
    html = client.get(source.get_absolute_url()).content.decode()
    assert "asks you to confirm" in html


def test_it_sends_back_a_merge_without_a_target(client, member, project, pair):
    source, _ = pair
    client.force_login(member)
    response = client.post(_merge_url(project, source), {"confirm": "yes"}, follow=True)
    assert MSG_MERGE_TARGET in response.content.decode()
    source.refresh_from_db()
    assert source.merged_into_id is None


def test_a_viewer_neither_sees_the_question_nor_merges(client, viewer, project, pair):
    source, target = pair
    client.force_login(viewer)
    for data in ({"target": target.pk}, {"target": target.pk, "confirm": "yes"}):
        assert client.post(_merge_url(project, source), data).status_code == 403
    source.refresh_from_db()
    assert source.merged_into_id is None
