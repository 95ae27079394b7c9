"""The behaviour signals through the Django side: gathered, stored, shown, confirmed."""

from __future__ import annotations

import glob

import pytest
from django.urls import reverse
from django.utils.html import escape

from analysis.clustering import REPRESENTATION, project_misbehaviours_refresh
from analysis.core.mast import STRONG_SUPPORT
from analysis.core.naming import describe_signal
from analysis.curation import MSG_NO_SUGGESTION, misbehaviour_confirm_suggestion
from analysis.gather import gather_wrong_steps
from analysis.models import (
    ClusteringRun,
    Misbehaviour,
    RunKind,
    TaxonomyCategory,
    WrongStepMembership,
)
from analysis.views import MSG_CONFIRMED
from ingest.models import Label, Trajectory
from tests.conftest import WHO_AND_WHEN, ingest_file, shared_file

pytestmark = pytest.mark.django_db


@pytest.fixture
def clustered(demo_project):
    project_misbehaviours_refresh(project_id=demo_project.pk)
    return demo_project


def test_it_gathers_wrong_steps_with_their_rollouts_signals_task_and_reason(demo_project):
    gathered = gather_wrong_steps(demo_project)
    label = Label.objects.filter(trajectory__project=demo_project).exclude(reason="").first()
    labelled = next(
        s for s in gathered.wrong if s.rollout == str(label.trajectory_id) and s.source == "label"
    )
    assert labelled.reason == label.reason
    assert labelled.task_text == Trajectory.objects.get(pk=label.trajectory_id).task_text != ""
    assert any(step.signals for step in gathered.wrong)
    assert any(source for step in gathered.wrong for _, source in step.arg_sources)
    rollout = Trajectory.objects.filter(project=demo_project).first()
    assert gathered.rollout_length[str(rollout.pk)] == rollout.step_count
    assert gathered.rollout_group[str(rollout.pk)] == rollout.environment
    assert gathered.sampled_success == {s.rollout for s in gathered.success}


def test_it_never_takes_a_derived_labels_rule_text_for_a_diagnosis(demo_project):
    label = Label.objects.filter(trajectory__project=demo_project).exclude(reason="").first()
    Label.objects.filter(pk=label.pk).update(
        source="gold_actions", reason="expected cancel_reservation called with arguments"
    )
    gathered = gather_wrong_steps(demo_project)
    labelled = [s for s in gathered.wrong if s.rollout == str(label.trajectory_id)]
    assert labelled and all(step.reason == "" for step in labelled)


def test_it_stores_signals_lifts_and_suggestions_of_the_behaviour_pipeline(clustered):
    run = ClusteringRun.objects.get(project=clustered)
    assert run.params["representation"] == REPRESENTATION
    memberships = WrongStepMembership.objects.filter(project=clustered)
    assert memberships.exclude(signals=[]).exists()
    assert memberships.exclude(error="").exists()
    found = list(Misbehaviour.objects.filter(project=clustered, is_active=True))
    builtin = set(TaxonomyCategory.objects.filter(project=None).values_list("pk", flat=True))
    assert any(m.suggested_category_id in builtin for m in found)
    assert all(m.suggested_category_id in builtin | {None} for m in found)
    # Who&When environments have no successful rollout: no lift is claimed for them.
    airline = [m for m in found if set(m.environments) == {"airline"}]
    assert any(m.lift_unadjusted is not None and m.lift_adjusted is not None for m in airline)
    # The rollouts the adjusted lift rests on, and why a lift is missing, are stored.
    for m in found:
        if m.lift_adjusted is not None:
            assert 0 < m.lift_adjusted_rollouts <= m.rollout_count + len(m.success_rollouts)
        elif m.lift_unadjusted is not None:
            assert m.lift_gap in {"no_success", "all_show", "no_success_or_all_show"}
    assert all(
        m.lift_unadjusted is None and m.lift_adjusted is None
        for m in found
        if "airline" not in m.environments
    )


def test_a_model_of_another_representation_forces_a_full_run(clustered):
    first = ClusteringRun.objects.get(project=clustered)
    first.params = {**first.params, "representation": "plain"}
    first.save(update_fields=["params"])
    path = sorted(glob.glob(str(WHO_AND_WHEN / "Hand-Crafted" / "*.json")))[0]
    ingest_file(clustered, shared_file(path))
    project_misbehaviours_refresh(project_id=clustered.pk)
    latest = ClusteringRun.objects.filter(project=clustered).order_by("-id").first()
    assert latest.kind == RunKind.FULL


def _suggested(project) -> Misbehaviour:
    """An uncategorised misbehaviour with a strong suggestion (a weak one is not offered in
    one click: tests/analysis/test_s36_suggestion_strength.py)."""
    return Misbehaviour.objects.filter(
        project=project,
        is_active=True,
        category__isnull=True,
        suggested_category__isnull=False,
        suggestion_support__gte=STRONG_SUPPORT,
    ).first()


def test_it_confirms_a_suggested_category_in_one_click(client, member, clustered):
    misbehaviour = _suggested(clustered)
    client.force_login(member)
    page = client.get(reverse("analysis:taxonomy", args=[clustered.slug])).content.decode()
    confirm = reverse("analysis:misbehaviour_confirm", args=[clustered.slug, misbehaviour.pk])
    assert f'action="{confirm}"' in page
    response = client.post(confirm, follow=True)
    assert response.redirect_chain[-1][0] == reverse("analysis:taxonomy", args=[clustered.slug])
    misbehaviour.refresh_from_db()
    assert misbehaviour.category_id == misbehaviour.suggested_category_id
    expected = MSG_CONFIRMED.format(
        name=misbehaviour.display_name, category=misbehaviour.suggested_category
    )
    assert expected in [str(message) for message in response.context["messages"]]


def test_it_refuses_to_confirm_when_there_is_no_suggestion(project):
    misbehaviour = Misbehaviour.objects.create(project=project, key="k1", name="x")
    with pytest.raises(ValueError, match=MSG_NO_SUGGESTION):
        misbehaviour_confirm_suggestion(misbehaviour=misbehaviour)


def test_it_refuses_a_confirmation_from_a_viewer(client, viewer, clustered):
    misbehaviour = _suggested(clustered)
    client.force_login(viewer)
    page = client.get(reverse("analysis:taxonomy", args=[clustered.slug])).content.decode()
    confirm = reverse("analysis:misbehaviour_confirm", args=[clustered.slug, misbehaviour.pk])
    assert confirm not in page
    assert client.post(confirm).status_code == 403
    misbehaviour.refresh_from_db()
    assert misbehaviour.category_id is None


def test_it_shows_both_lifts_side_by_side(client, member, clustered):
    client.force_login(member)
    html = client.get(reverse("analysis:misbehaviour_list", args=[clustered.slug])).content
    assert b"length-adjusted lift" in html
    misbehaviour = Misbehaviour.objects.filter(
        project=clustered, is_active=True, lift_adjusted__isnull=False
    ).first()
    detail = client.get(misbehaviour.get_absolute_url()).content.decode()
    assert f"{misbehaviour.lift_adjusted:.2f}×" in detail


def test_it_stores_what_came_just_before_each_wrong_step(clustered):
    memberships = WrongStepMembership.objects.filter(project=clustered)
    assert memberships.exists()
    assert not memberships.filter(preceded_by="").exists()
    assert memberships.filter(preceded_by="user").exists()
    assert memberships.filter(preceded_by__startswith="result:").exists()


def test_the_rollout_page_says_which_misbehaviour_each_wrong_step_is(client, member, clustered):
    client.force_login(member)
    membership = (
        WrongStepMembership.objects.filter(project=clustered, misbehaviour__is_active=True)
        .exclude(signals=[])
        .select_related("step", "misbehaviour")
        .first()
    )
    url = reverse("dashboard:rollout_detail", args=[clustered.slug, membership.step.trajectory_id])
    html = client.get(url).content.decode()
    section = html[html.index('id="rollout-misbehaviours"') :]
    assert f'href="{membership.misbehaviour.get_absolute_url()}"' in section
    assert escape(describe_signal(membership.signals[0])) in section
    assert f'data-jump="{membership.step.index}"' in section


def test_the_rollout_page_says_when_a_wrong_step_fits_no_misbehaviour(client, member, clustered):
    client.force_login(member)
    membership = WrongStepMembership.objects.filter(
        project=clustered, misbehaviour__isnull=True
    ).select_related("step")[0]
    url = reverse("dashboard:rollout_detail", args=[clustered.slug, membership.step.trajectory_id])
    assert "unclustered (fits no misbehaviour)" in client.get(url).content.decode()


def test_the_rollout_page_gives_each_wrong_steps_weight_not_its_cluster_strength(clustered):
    from analysis.selectors import rollout_wrong_steps

    membership = (
        WrongStepMembership.objects.filter(project=clustered)
        .exclude(weight=1.0)
        .select_related("step")
        .first()
    )
    rows = rollout_wrong_steps(membership.step.trajectory_id)
    row = next(r for r in rows if r["index"] == membership.step.index)
    assert row["weight"] == membership.weight != 1.0


def test_the_rollout_page_lists_the_likeliest_decisive_steps_first(clustered):
    from analysis.selectors import rollout_wrong_steps

    for rollout_id in (
        WrongStepMembership.objects.filter(project=clustered)
        .values_list("step__trajectory_id", flat=True)
        .distinct()
    ):
        rows = rollout_wrong_steps(rollout_id)
        assert [(-r["weight"], r["index"]) for r in rows] == sorted(
            (-r["weight"], r["index"]) for r in rows
        )


def test_only_failures_of_environments_with_a_success_are_sampled_for_the_lift():
    # A lift compares only environments with a success: assigning the actions of
    # Who&When's all-failed group chats doubled the demo's refresh for nothing.
    from analysis.gather import lift_samples

    rollouts = {
        3: ("airline", True),
        1: ("GAIA", True),
        2: ("airline", True),
        5: ("airline", False),
    }
    assert lift_samples(rollouts)[1].ids == [2, 3]
    assert lift_samples({1: ("GAIA", True)})[1].ids == []
