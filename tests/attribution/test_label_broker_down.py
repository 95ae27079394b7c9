"""A label entered while the broker is down is kept, the page answers normally, and its
recalibration (a full refresh requested in the label's transaction) is sent by the
sweeper once it runs."""

from __future__ import annotations

import pytest
from django.urls import reverse

from ingest.models import Label
from pipeline.jobs import jobs_sweep
from pipeline.models import ProjectRefresh, RefreshStatus
from pipeline.refresh import REASON_LABEL
from tests.attribution.conftest import make_rollout

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_keeps_a_label_entered_with_the_broker_down_and_sweeps_its_refresh(
    client,
    project,
    member,
    unreachable_broker,
    monkeypatch,
    settings,
):
    settings.FAULTLINE_JOB_SWEEP_GRACE_S = 0
    rollout = make_rollout(project, label=False)
    client.force_login(member)
    url = reverse("attribution:label_add", args=[project.slug, rollout.pk])
    response = client.post(url, {"step_index": 2, "reason": "booked without asking"})
    assert response.status_code == 302
    assert Label.objects.filter(trajectory=rollout, source="human").count() == 1
    waiting = ProjectRefresh.objects.get(project=project)
    assert waiting.status == RefreshStatus.QUEUED and waiting.dispatched_at is None
    assert waiting.full_requested and waiting.request_reason == REASON_LABEL

    sent: list[int] = []
    from pipeline import tasks

    monkeypatch.setattr(
        tasks.refresh_project, "apply_async", lambda args, countdown=None: sent.append(args[0])
    )
    report = jobs_sweep()
    assert report.dispatched["refresh"] == 1
    assert ProjectRefresh.objects.filter(project=project).count() == 1 and sent == [project.pk]
    assert jobs_sweep().dispatched["refresh"] == 0  # sent: it is no longer undispatched
