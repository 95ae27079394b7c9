"""The labelling-queue page: the queue order, progress per system, access, navigation."""

from __future__ import annotations

import re

import numpy as np
import pytest
from django.urls import reverse
from django.utils.html import escape

from attribution.core.labelling_queue import QueueItem, labelling_queue
from attribution.labels import human_label_add
from attribution.models import TrajectoryAttribution
from attribution.services import project_attribution_refresh
from attribution.system_selectors import QUEUE_RULE
from ingest.models import Trajectory
from tests.attribution.conftest import make_rollout, make_upload

pytestmark = pytest.mark.django_db


def _url(project):
    return reverse("attribution:labelling_queue", kwargs={"slug": project.slug})


@pytest.fixture
def queued(project):
    """Two systems: "A" with 3 labels, "B" with none; 6 and 4 unlabelled failures."""
    upload = make_upload(project)
    rollouts = []
    for i in range(13):
        system = "A" if i < 9 else "B"
        rollout = make_rollout(
            project, upload=upload, length=5 + i % 4, bad_step=1 + i % 3, label=i < 3
        )
        Trajectory.objects.filter(pk=rollout.pk).update(agent_system=system)
        rollouts.append(rollout)
    project_attribution_refresh(project_id=project.pk)
    return rollouts


def test_it_lists_the_unlabelled_rollouts_in_the_queue_order(client, project, member, queued):
    rows = TrajectoryAttribution.objects.filter(project=project).select_related("trajectory")
    items = [
        QueueItem(str(r.trajectory_id), r.trajectory.agent_system, np.array(r.probabilities))
        for r in rows
        if r.queue_rank is not None
    ]
    expected = [int(e.rollout_id) for e in labelling_queue(items, {"A": 3}, alpha=0.1)]
    assert len(expected) == 10
    client.force_login(member)
    body = client.get(_url(project)).content.decode()
    shown = [int(pk) for pk in re.findall(r'class="queue-entry" data-rollout="(\d+)"', body)]
    assert shown == expected


def test_it_leaves_labelled_rollouts_out(client, project, member, queued):
    client.force_login(member)
    body = client.get(_url(project)).content.decode()
    for rollout in queued[:3]:
        assert f'data-rollout="{rollout.pk}"' not in body


def test_it_shows_the_progress_and_the_rule(client, project, member, queued):
    client.force_login(member)
    response = client.get(_url(project))
    body = response.content.decode()
    progress = {p["system"]: p for p in response.context["progress"]}
    assert (progress["A"]["labels"], progress["A"]["needed"]) == (3, 6)
    assert progress["B"]["needed"] == 9
    assert "6 more labels until “calibrated at 90% for A”" in body
    assert escape(QUEUE_RULE) in body


def test_it_is_in_the_project_nav(client, project, member, queued):
    client.force_login(member)
    body = client.get(reverse("dashboard:project_detail", kwargs={"slug": project.slug}))
    assert f'href="{_url(project)}"' in body.content.decode()


def test_it_hides_the_page_from_a_non_member(client, project, outsider):
    client.force_login(outsider)
    assert client.get(_url(project)).status_code == 404


def test_the_rollout_page_links_the_next_rollout_in_the_queue(client, project, member, queued):
    first, second = (
        TrajectoryAttribution.objects.filter(project=project, queue_rank__isnull=False)
        .order_by("queue_rank")
        .values_list("trajectory_id", flat=True)[:2]
    )
    client.force_login(member)
    body = client.get(reverse("dashboard:rollout_detail", args=[project.slug, first]))
    next_url = reverse("dashboard:rollout_detail", args=[project.slug, second])
    assert f'data-next-url="{next_url}"' in body.content.decode()
    assert 'id="label-keys"' in body.content.decode()


def test_a_system_short_of_rollouts_says_so_and_comes_last(client, project, member, queued):
    # B has 4 unlabelled failed rollouts and needs 9 labels: labelling all of them brings
    # no claim, so they come after A's, and the page and B's rollouts say what would help.
    client.force_login(member)
    response = client.get(_url(project))
    body = response.content.decode()
    progress = {p["system"]: p for p in response.context["progress"]}
    assert (progress["A"]["short_by"], progress["B"]["short_by"]) == (0, 5)
    assert 'data-short-by="5"' in body and "only 4 of its failed rollouts are" in body
    systems = [entry["system"] for entry in response.context["entries"]]
    assert systems == ["A"] * 6 + ["B"] * 4
    assert "fewer failed rollouts to label than the labels it needs" in body
    b_rollout = queued[-1]
    page = client.get(reverse("dashboard:rollout_detail", args=[project.slug, b_rollout.pk]))
    text = page.content.decode()
    assert 'id="short-note"' in text
    assert "only 4 are without a label and it needs 9" in text
    a_rollout = queued[5]
    page = client.get(reverse("dashboard:rollout_detail", args=[project.slug, a_rollout.pk]))
    assert 'id="short-note"' not in page.content.decode()


def _first_queued(project):
    """The attribution at the head of the labelling queue."""
    return (
        TrajectoryAttribution.objects.filter(project=project, queue_rank__isnull=False)
        .order_by("queue_rank")
        .select_related("trajectory")
        .first()
    )


def test_a_label_leaves_the_queue_and_lowers_the_need_before_the_refresh(
    client, project, member, queued
):
    # The refresh a label queues runs after the request (seconds, or minutes behind a long
    # refresh): meanwhile the pages must not still ask for the label just given.
    first = _first_queued(project)
    assert (first.trajectory.agent_system, first.queue_reason) == ("A", "deficit")
    human_label_add(trajectory=first.trajectory, step_index=1, reason="", author=member)
    client.force_login(member)
    response = client.get(_url(project))
    body = response.content.decode()
    assert f'data-rollout="{first.trajectory_id}"' not in body
    progress = {p["system"]: p for p in response.context["progress"]}
    assert (progress["A"]["labels"], progress["A"]["needed"]) == (4, 5)
    assert progress["B"]["needed"] == 9 and response.context["queued"] == 9
    other_a = queued[5]
    page = client.get(reverse("dashboard:rollout_detail", args=[project.slug, other_a.pk]))
    assert "A needs 5 more labelled failed rollouts" in page.content.decode()
    # Moving one's own label again changes nothing more.
    human_label_add(trajectory=first.trajectory, step_index=2, reason="", author=member)
    progress = {p["system"]: p for p in client.get(_url(project)).context["progress"]}
    assert progress["A"]["needed"] == 5


def test_a_label_of_a_rollout_queued_to_train_the_scorer_leaves_the_need_alone(
    project, member, queued
):
    first = TrajectoryAttribution.objects.filter(project=project, queue_rank__isnull=False).first()
    TrajectoryAttribution.objects.filter(pk=first.pk).update(queue_reason="uncertain")
    before = dict(
        TrajectoryAttribution.objects.filter(project=project).values_list("pk", "labels_needed")
    )
    human_label_add(trajectory=first.trajectory, step_index=1, reason="", author=member)
    after = dict(
        TrajectoryAttribution.objects.filter(project=project).values_list("pk", "labels_needed")
    )
    assert after == before
    assert TrajectoryAttribution.objects.get(pk=first.pk).queue_rank is None


def test_each_row_says_its_task_escaped(client, project, member, queued):
    """A live trace's id is 32 hex digits: alone it told a labeller nothing."""
    Trajectory.objects.filter(pk=queued[5].pk).update(task_text="<b>Refund</b> order 7")
    client.force_login(member)
    body = client.get(_url(project)).content.decode()
    assert f"task {queued[4].task_id}: Book the cheapest flight to Paris" in body
    assert "&lt;b&gt;Refund&lt;/b&gt; order 7" in body and "<b>Refund</b>" not in body


def test_the_progress_never_goes_back_when_a_refresh_writes_older_counts(
    client, project, member, queued
):
    # A refresh that began before a label writes its rows with the need it counted then;
    # the labels themselves are counted when the page is read.
    first = _first_queued(project)
    human_label_add(trajectory=first.trajectory, step_index=1, reason="", author=member)
    TrajectoryAttribution.objects.filter(project=project, trajectory__agent_system="A").update(
        labels_needed=6
    )  # what the older refresh counted
    client.force_login(member)
    progress = {p["system"]: p for p in client.get(_url(project)).context["progress"]}
    assert progress["A"]["labels"] == 4
