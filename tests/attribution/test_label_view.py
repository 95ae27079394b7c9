"""POST a human label: access, validation, coverage check and the queued recalibration."""

from __future__ import annotations

import pytest
from django.urls import reverse

from attribution.models import Calibration, CoverageCheck
from attribution.services import project_attribution_refresh
from ingest.models import Label
from projects.access import MSG_READ_ONLY
from tests.attribution.conftest import make_rollout, make_upload

pytestmark = pytest.mark.django_db


def _url(project, rollout):
    return reverse("attribution:label_add", kwargs={"slug": project.slug, "pk": rollout.pk})


def test_it_hides_the_project_from_a_non_member(client, project, outsider):
    rollout = make_rollout(project, label=False)
    client.force_login(outsider)
    response = client.post(_url(project, rollout), {"step_index": 1, "reason": "x"})
    assert response.status_code == 404
    assert not Label.objects.filter(source="human").exists()


def test_it_forbids_a_viewer_to_label(client, project, viewer):
    rollout = make_rollout(project, label=False)
    client.force_login(viewer)
    response = client.post(_url(project, rollout), {"step_index": 1, "reason": "x"})
    assert response.status_code == 403
    assert MSG_READ_ONLY in response.content.decode()
    assert not Label.objects.exists()


def test_it_refuses_get(client, project, member):
    rollout = make_rollout(project, label=False)
    client.force_login(member)
    assert client.get(_url(project, rollout)).status_code == 405


def test_it_rejects_a_step_outside_the_rollout(client, project, member):
    rollout = make_rollout(project, label=False, length=4)
    client.force_login(member)
    response = client.post(_url(project, rollout), {"step_index": 9, "reason": "x"}, follow=True)
    assert not Label.objects.exists()
    assert "Choose a step between 0 and 3." in response.content.decode()


def test_it_saves_the_label_and_queues_a_recalibration(
    client, project, member, django_capture_on_commit_callbacks
):
    upload = make_upload(project)
    for i in range(12):
        make_rollout(project, upload=upload, bad_step=1 + i % 3)
    rollout = make_rollout(project, upload=upload, label=False)
    project_attribution_refresh(project_id=project.pk)
    before = Calibration.objects.get()
    client.force_login(member)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(
            _url(project, rollout),
            {"step_index": 3, "agent": "WebSurfer", "reason": "ignored the error"},
        )
    assert response.status_code == 302
    assert response["Location"].endswith(f"/rollouts/{rollout.pk}/#attribution")
    label = Label.objects.get(source="human")
    assert (label.step_index, label.agent, label.author) == (3, "WebSurfer", member)
    assert len(callbacks) == 1
    check = CoverageCheck.objects.get()
    assert check.label == label and check.calibration == before
    # The queued task's body, called directly: the new label joins the calibration.
    project_attribution_refresh(project_id=project.pk)
    after = Calibration.objects.first()
    assert after.pk != before.pk and after.m == before.m + 1


def test_it_shows_the_new_label_in_the_panel(client, project, member):
    from attribution.selectors import attribution_panel

    rollout = make_rollout(project, label=False)
    project_attribution_refresh(project_id=project.pk)
    client.force_login(member)
    client.post(_url(project, rollout), {"step_index": 2, "reason": "<script>alert(1)</script>"})
    panel = attribution_panel(rollout)
    assert [(x["step_index"], x["source"], x["author"]) for x in panel["labels"]] == [
        (2, "human", "member")
    ]


def _delete_url(project, rollout, label):
    return reverse(
        "attribution:label_delete",
        kwargs={"slug": project.slug, "pk": rollout.pk, "label_pk": label.pk},
    )


def test_a_label_needs_no_reason(client, project, member):
    """A made-up reason would be quoted by the misbehaviours as a diagnosis."""
    rollout = make_rollout(project, label=False)
    client.force_login(member)
    client.post(_url(project, rollout), {"step_index": 2, "reason": ""})
    assert Label.objects.get(source="human").reason == ""


def test_labelling_again_moves_the_persons_label_and_its_coverage_check(client, project, member):
    """One person has one say per rollout: the second label corrects the first."""
    upload = make_upload(project)
    for i in range(12):
        make_rollout(project, upload=upload, bad_step=1 + i % 3)
    rollout = make_rollout(project, upload=upload, label=False, length=8)
    project_attribution_refresh(project_id=project.pk)
    client.force_login(member)
    client.post(_url(project, rollout), {"step_index": 7, "reason": "slip"})
    check = CoverageCheck.objects.get()
    lo, hi = check.set_lo, check.set_hi
    response = client.post(_url(project, rollout), {"step_index": 2, "reason": ""}, follow=True)
    label = Label.objects.get(source="human", trajectory=rollout)
    assert (label.step_index, label.reason) == (2, "")
    check = CoverageCheck.objects.get()
    assert check.label == label and (check.set_lo, check.set_hi) == (lo, hi)
    assert check.covered == (lo is not None and lo <= 2 <= hi)
    assert "Your label moved from step 7 to step 2." in response.content.decode()


def test_two_people_each_keep_their_label(client, project, owner, member):
    rollout = make_rollout(project, label=False)
    for user, step in ((member, 1), (owner, 3)):
        client.force_login(user)
        client.post(_url(project, rollout), {"step_index": step})
    assert sorted(Label.objects.filter(source="human").values_list("step_index", flat=True)) == [
        1,
        3,
    ]


def test_the_author_or_an_owner_removes_a_label_and_nobody_else(
    client, project, owner, member, django_user_model
):
    from projects.models import Membership, Role

    other = django_user_model.objects.create_user("other", "other@example.com", "other-pass-123")
    Membership.objects.create(project=project, user=other, role=Role.MEMBER)
    rollout = make_rollout(project, label=False)
    client.force_login(member)
    client.post(_url(project, rollout), {"step_index": 1})
    label = Label.objects.get(source="human")
    client.force_login(other)
    response = client.post(_delete_url(project, rollout, label), follow=True)
    assert "Only its author or a project owner can remove a label." in response.content.decode()
    assert Label.objects.filter(pk=label.pk).exists()
    client.force_login(owner)
    response = client.post(_delete_url(project, rollout, label), follow=True)
    assert "Label of step 1 removed." in response.content.decode()
    assert not Label.objects.filter(source="human").exists()


def test_a_rule_label_cannot_be_removed(client, project, owner):
    rollout = make_rollout(project, label=False)
    rule = Label.objects.create(trajectory=rollout, step_index=1, source="gold_actions")
    client.force_login(owner)
    response = client.post(_delete_url(project, rollout, rule), follow=True)
    assert "label follows its rule" in response.content.decode()
    assert Label.objects.filter(pk=rule.pk).exists()


def test_the_panel_offers_removal_only_where_it_is_allowed(client, project, owner, member):
    from attribution.selectors import attribution_panel

    rollout = make_rollout(project, label=False)
    project_attribution_refresh(project_id=project.pk)
    client.force_login(member)
    client.post(_url(project, rollout), {"step_index": 2})
    assert [x["removable"] for x in attribution_panel(rollout, user=member)["labels"]] == [True]
    assert [x["removable"] for x in attribution_panel(rollout, user=owner)["labels"]] == [True]
    client.force_login(owner)
    client.post(_url(project, rollout), {"step_index": 3})
    assert sorted(x["removable"] for x in attribution_panel(rollout, user=member)["labels"]) == [
        False,
        True,
    ]


def test_the_label_message_is_shown_in_the_panel_the_page_lands_on(client, project, member):
    """The view sends the page to #attribution: a message at the page's top is out of sight."""
    rollout = make_rollout(project, label=False)
    project_attribution_refresh(project_id=project.pk)
    client.force_login(member)
    html = client.post(_url(project, rollout), {"step_index": 2}, follow=True).content.decode()
    panel = html[html.index('id="attribution"') :]
    assert "Label saved: step 2." in panel
    assert html.count("Label saved: step 2.") == 1
