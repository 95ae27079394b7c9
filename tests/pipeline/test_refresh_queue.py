"""A burst of uploads queues one project refresh, not one per upload."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pipeline import refresh, tasks

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(monkeypatch):
    """The project ids sent to the queue (the broker is not part of this test)."""
    from django.core.cache import cache

    cache.clear()  # no pending mark left by another test
    sent: list[int] = []
    monkeypatch.setattr(tasks, "refresh_project", SimpleNamespace(delay=sent.append))
    return sent


def test_it_queues_one_refresh_while_one_is_waiting(queued, project):
    assert refresh.refresh_project_queue(project_id=project.pk) is True
    assert refresh.refresh_project_queue(project_id=project.pk) is False
    assert queued == [project.pk]


def test_it_queues_again_once_the_waiting_refresh_started(queued, project):
    run_refresh = refresh.refresh_project_run
    refresh.refresh_project_queue(project_id=project.pk)
    run_refresh(project.pk)  # an empty project: the refresh is quick
    assert refresh.refresh_project_queue(project_id=project.pk) is True
    assert queued == [project.pk, project.pk]
