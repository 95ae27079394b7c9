"""The calibration page's choices: gold-action labels calibrating, and borrowing."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils.html import escape

from attribution.calibration_settings import MSG_BAD_LENDER, calibration_settings_save
from attribution.system_selectors import RULE_GOLD
from ingest.models import Trajectory
from tests.attribution.conftest import make_rollout

pytestmark = pytest.mark.django_db


def _url(project):
    return reverse("attribution:calibration_settings", kwargs={"slug": project.slug})


@pytest.fixture
def systems(project):
    for system in ("A", "B"):
        rollout = make_rollout(project, label=False)
        Trajectory.objects.filter(pk=rollout.pk).update(agent_system=system)


def test_it_lets_an_owner_opt_in(
    client, project, owner, systems, django_capture_on_commit_callbacks
):
    client.force_login(owner)
    with django_capture_on_commit_callbacks():
        response = client.post(_url(project), {"gold_actions_calibrate": "on", "borrow:B": "A"})
    assert response.status_code == 302
    project.refresh_from_db()
    assert project.gold_actions_calibrate and project.calibration_borrow == {"B": "A"}


def test_it_refuses_a_member(client, project, member, systems):
    client.force_login(member)
    response = client.post(_url(project), {"gold_actions_calibrate": "on"})
    assert response.status_code == 403
    project.refresh_from_db()
    assert not project.gold_actions_calibrate


def test_it_refuses_to_borrow_from_the_system_itself(project, systems):
    with pytest.raises(ValueError) as error:
        calibration_settings_save(project=project, gold_actions_calibrate=False, borrow={"A": "A"})
    assert str(error.value) == MSG_BAD_LENDER.format(system="A", lender="A")


def test_the_page_names_the_labelling_rule_and_shows_the_form_to_owners_only(
    client, project, owner, member, systems
):
    project.gold_actions_calibrate = True
    project.save(update_fields=["gold_actions_calibrate"])
    page = reverse("attribution:calibration", kwargs={"slug": project.slug})
    client.force_login(owner)
    body = client.get(page).content.decode()
    assert 'id="calibration-settings"' in body and 'name="borrow:B"' in body
    assert escape(RULE_GOLD) in body
    client.force_login(member)
    assert 'id="calibration-settings"' not in client.get(page).content.decode()
