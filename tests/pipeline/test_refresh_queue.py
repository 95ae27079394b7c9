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
    sent = Sent()

    def apply_async(args: tuple[int], countdown: float | None = None) -> None:
        sent.append(args[0])
        sent.countdowns.append(countdown)

    monkeypatch.setattr(tasks, "refresh_project", SimpleNamespace(apply_async=apply_async))
    return sent


class Sent(list[int]):
    """The project ids sent, with the countdown each was sent with."""

    def __init__(self) -> None:
        super().__init__()
        self.countdowns: list[float | None] = []


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


def _upload(project, status: str, **fields):
    from tests.attribution.conftest import make_upload

    upload = make_upload(project)
    type(upload).objects.filter(pk=upload.pk).update(status=status, **fields)
    return upload


def test_it_leaves_the_refresh_to_an_upload_still_on_its_way(queued, project):
    from django.utils import timezone

    _upload(project, "queued", dispatched_at=timezone.now())
    refresh.project_refresh_dispatch(project_id=project.pk)
    assert queued == []


def test_it_is_not_held_back_by_a_stuck_or_failed_upload(queued, project, settings):
    from datetime import timedelta

    from django.utils import timezone

    silent_since = timezone.now() - timedelta(
        seconds=settings.FAULTLINE_JOB_HEARTBEAT_TIMEOUT_S + 5
    )
    _upload(project, "running", heartbeat_at=silent_since, started_at=silent_since)
    _upload(project, "queued", dispatched_at=None)  # accepted while the broker was down
    _upload(project, "failed")
    refresh.project_refresh_dispatch(project_id=project.pk)
    assert queued == [project.pk]


def test_a_failed_last_upload_of_a_burst_still_queues_the_refresh(queued, project):
    # The airline file finished while a bad file was on its way and left the refresh to
    # it; the bad file failed: the project's rollouts must not wait for the next upload.
    from django.utils import timezone

    _upload(project, "done", finished_at=timezone.now())
    refresh.failed_upload_dispatch(project_id=project.pk)
    assert queued == [project.pk]


def test_a_file_that_fails_alone_queues_nothing(queued, project):
    from django.utils import timezone

    _upload(project, "done", finished_at=timezone.now())
    refresh.refresh_project_run(project.pk)  # the done upload is refreshed already
    _upload(project, "failed", finished_at=timezone.now())
    refresh.failed_upload_dispatch(project_id=project.pk)
    assert queued == []


def test_it_holds_back_the_refresh_of_closed_live_traces_so_later_ones_join_it(
    queued, project, settings
):
    from pipeline.live import rollouts_changed

    settings.FAULTLINE_STREAM_REFRESH_DELAY_S = 7.5
    rollouts_changed(project.pk)
    rollouts_changed(project.pk)  # closed during the wait: joins the waiting refresh
    assert queued == [project.pk] and queued.countdowns == [7.5]
