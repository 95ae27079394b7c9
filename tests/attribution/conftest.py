"""Rollouts in the database for the attribution app's Django tests."""

from __future__ import annotations

import itertools

import pytest

from ingest.models import Label, Step, Trajectory, Upload
from projects.models import Membership, Role

_counter = itertools.count()


def make_upload(project):
    n = next(_counter)
    return Upload.objects.create(
        project=project,
        original_name=f"u{n}.jsonl",
        raw_file=f"uploads/u{n}",
        sha256=f"{n:064d}",
        size=1,
    )


def make_rollout(
    project, *, upload=None, length=6, bad_step=2, outcome="failure", label=True, task=None
):
    """A rollout whose step after ``bad_step`` shows an error; labelled when asked."""
    upload = upload or make_upload(project)
    n = next(_counter)
    trajectory = Trajectory.objects.create(
        project=project,
        upload=upload,
        external_id=f"r{n}",
        task_id=task or f"task-{n}",
        task_text="Book the cheapest flight to Paris",
        outcome=outcome,
        step_count=length,
    )
    Step.objects.bulk_create(
        Step(
            trajectory=trajectory,
            index=i,
            role="user" if i == 0 else "assistant",
            agent="user" if i == 0 else ("Planner" if i % 2 else "WebSurfer"),
            content=(
                "Traceback: KeyError 'price'"
                if i == bad_step + 1
                else f"step {i}: looking at <b>flights</b>"
            ),
        )
        for i in range(length)
    )
    if label:
        Label.objects.create(
            trajectory=trajectory, step_index=bad_step, agent="Planner", source="dataset"
        )
    return trajectory


@pytest.fixture
def viewer(django_user_model, project):
    user = django_user_model.objects.create_user("viewer", "viewer@example.com", "viewer-pass-123")
    Membership.objects.create(project=project, user=user, role=Role.VIEWER)
    return user


def with_system(rollout, system):
    """``rollout`` moved to the agent system ``system`` (stored and on the object)."""
    Trajectory.objects.filter(pk=rollout.pk).update(agent_system=system)
    rollout.agent_system = system
    return rollout
