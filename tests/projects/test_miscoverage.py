"""Each project has its own miscoverage alpha: FAULTLINE_ALPHA is only the default of new
projects, the owner changes it on the settings page, and the calibration uses it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.urls import reverse

from attribution.models import Calibration, TrajectoryAttribution
from attribution.services import project_attribution_refresh
from projects.models import Project
from projects.services import MSG_BAD_MISCOVERAGE, project_create
from tests.attribution.conftest import make_rollout, make_upload
from tests.services import REPO_ROOT

pytestmark = pytest.mark.django_db


def _settings_url(project: Project) -> str:
    return reverse("dashboard:project_settings", args=[project.slug])


def test_it_starts_a_new_project_at_the_configured_default(settings, owner):
    settings.FAULTLINE_ALPHA = 0.2
    assert project_create(name="Another", owner=owner).miscoverage == 0.2


def test_it_lets_the_owner_set_the_miscoverage(client, owner, project):
    client.force_login(owner)
    response = client.post(_settings_url(project), {"action": "miscoverage", "miscoverage": "0.2"})
    assert response.status_code == 302
    project.refresh_from_db()
    assert project.miscoverage == 0.2
    page = client.get(_settings_url(project)).content.decode()
    assert "80.0%" in page


@pytest.mark.parametrize("value", ["", "abc", "0", "0.9", "nan"])
def test_it_refuses_a_miscoverage_out_of_range(client, owner, project, value):
    client.force_login(owner)
    response = client.post(
        _settings_url(project), {"action": "miscoverage", "miscoverage": value}, follow=True
    )
    project.refresh_from_db()
    assert project.miscoverage == 0.1
    message = MSG_BAD_MISCOVERAGE.format(low=0.01, high=0.5)
    assert message.split(":")[0] in response.content.decode()


def test_it_forbids_a_member_to_change_it(client, member, project):
    client.force_login(member)
    response = client.post(_settings_url(project), {"action": "miscoverage", "miscoverage": "0.3"})
    assert response.status_code == 403
    project.refresh_from_db()
    assert project.miscoverage == 0.1


def test_the_calibration_promises_the_projects_level(project):
    project.miscoverage = 0.25
    project.save()
    upload = make_upload(project)
    for i in range(12):
        make_rollout(project, upload=upload, length=5 + i % 4, bad_step=1 + i % 3)
    project_attribution_refresh(project_id=project.pk)
    assert Calibration.objects.get().alpha == 0.25
    assert set(TrajectoryAttribution.objects.values_list("alpha", flat=True)) == {0.25}


def test_the_product_refuses_to_start_with_a_default_out_of_range():
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=REPO_ROOT,
        env={**os.environ, "FAULTLINE_ALPHA": "0.9"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "FAULTLINE_ALPHA=0.9: give a miscoverage from 0.01 to 0.5" in result.stderr
