"""A job accepted while the broker was down says when it is sent: the sweeper's first
look after the broker is back, once the job is old enough (not "as soon as it answers")."""

from __future__ import annotations

import pytest
from django.urls import reverse

from dashboard.views import sweep_minutes
from tests.attribution.conftest import make_upload

pytestmark = pytest.mark.django_db


def test_a_queued_upload_never_sent_says_within_how_long_it_is_sent(
    client, member, project, settings
):
    settings.FAULTLINE_SWEEP_INTERVAL_S, settings.FAULTLINE_JOB_SWEEP_GRACE_S = 60.0, 30.0
    assert sweep_minutes() == 2
    upload = make_upload(project)
    upload.status, upload.dispatched_at = "queued", None
    upload.save(update_fields=["status", "dispatched_at"])
    client.force_login(member)
    page = client.get(reverse("dashboard:uploads", args=[project.slug])).content.decode()
    assert "the sweeper sends it within about 2 minutes" in page
    assert "as soon as the broker answers" not in page
