"""Automatic labels in the database: gold-action labels on hand-made tau-bench rollouts
(mutating and read-only deviations, a rollout with no deviation), sibling-divergence
labels, stored with their source, replaced and never duplicated by a second refresh."""

from __future__ import annotations

import itertools

import pytest

from attribution.label_sources_refresh import project_derived_labels_refresh
from ingest.core.records import LabelSource
from ingest.models import Label, Step, Trajectory
from tests.attribution.conftest import make_upload

pytestmark = pytest.mark.django_db

GOLD = [
    {"name": "get_reservation_details", "kwargs": {"reservation_id": "ABC123"}},
    {"name": "cancel_reservation", "kwargs": {"reservation_id": "ABC123"}},
]
ASK = ("user", "Please cancel my reservation ABC123.")
LOOKUP = ("call", "get_reservation_details", {"reservation_id": "ABC123"}, '{"status": "ok"}')
CANCEL_RIGHT = ("call", "cancel_reservation", {"reservation_id": "ABC123"}, "ok")
CANCEL_WRONG = ("call", "cancel_reservation", {"reservation_id": "XYZ9"}, "ok")
EXTRA_LOOKUP = ("call", "get_user_details", {"user_id": "mia_1"}, "{}")
_ids = itertools.count()


def tau_rollout(project, *turns, outcome="failure", task="1", gold=GOLD):
    """A rollout in the tau-bench parser's shape, stored with its gold actions."""
    n = next(_ids)
    steps = [("system", "system", "# Airline policy", "", None, "")]
    for turn in turns:
        if turn[0] == "call":
            _, tool, args, result = turn
            steps.append(("assistant", "tool_call", "", tool, args, f"c{len(steps)}"))
            steps.append(("tool", "tool_result", result, tool, None, f"c{len(steps) - 1}"))
        else:
            steps.append((turn[0], "message", turn[1], "", None, ""))
    trajectory = Trajectory.objects.create(
        project=project,
        upload=make_upload(project),
        external_id=f"tau-{n}",
        task_id=task,
        agent_system="tau-bench tool-calling agent",
        outcome=outcome,
        step_count=len(steps),
        metadata={"info": {"task": {"actions": gold}}},
    )
    Step.objects.bulk_create(
        Step(
            trajectory=trajectory,
            index=i,
            role=role,
            agent=role,
            kind=kind,
            content=content,
            tool_name=tool,
            tool_args=args,
            tool_call_id=call_id,
            is_error=kind == "tool_result" and content.startswith("Error"),
        )
        for i, (role, kind, content, tool, args, call_id) in enumerate(steps)
    )
    return trajectory


def _labels(rollout, source):
    return list(Label.objects.filter(trajectory=rollout, source=source))


def test_it_stores_the_first_wrong_mutating_call_as_a_gold_action_label(project):
    rollout = tau_rollout(project, ASK, LOOKUP, CANCEL_WRONG)
    project_derived_labels_refresh(project_id=project.pk)
    (label,) = _labels(rollout, LabelSource.GOLD_ACTIONS)
    assert label.step_index == 4  # system 0, ask 1, lookup call 2 and result 3, cancel 4
    assert "cancel_reservation called with arguments that no gold action has" in label.reason
    assert label.author is None


def test_it_stores_no_label_for_read_only_deviations_or_none(project):
    read_only = tau_rollout(project, ASK, LOOKUP, EXTRA_LOOKUP, CANCEL_RIGHT, task="2")
    clean = tau_rollout(project, ASK, LOOKUP, CANCEL_RIGHT, task="3")
    project_derived_labels_refresh(project_id=project.pk)
    assert not _labels(read_only, LabelSource.GOLD_ACTIONS)
    assert not _labels(clean, LabelSource.GOLD_ACTIONS)


def test_it_labels_no_successful_rollout(project):
    won = tau_rollout(project, ASK, LOOKUP, CANCEL_WRONG, outcome="success", task="4")
    project_derived_labels_refresh(project_id=project.pk)
    assert not Label.objects.filter(trajectory=won).exists()


def test_it_stores_where_a_failed_trial_leaves_a_successful_one(project):
    failed = tau_rollout(project, ASK, LOOKUP, CANCEL_WRONG, task="5")
    tau_rollout(project, ASK, LOOKUP, CANCEL_RIGHT, outcome="success", task="5")
    project_derived_labels_refresh(project_id=project.pk)
    (label,) = _labels(failed, LabelSource.SIBLING_DIVERGENCE)
    assert label.step_index == 4
    assert label.reason.endswith("after 1 shared tool call")


def test_a_trial_whose_shared_call_failed_in_it_only_gives_no_label(project):
    """The refresh read the calls without their results, so the rule that such trials are
    no siblings never held in the product."""
    broken = ("call", *LOOKUP[1:3], "Error: service timeout")
    failed = tau_rollout(project, ASK, broken, LOOKUP, CANCEL_WRONG, task="9")
    tau_rollout(project, ASK, LOOKUP, CANCEL_RIGHT, outcome="success", task="9")
    project_derived_labels_refresh(project_id=project.pk)
    assert not _labels(failed, LabelSource.SIBLING_DIVERGENCE)


def test_it_changes_nothing_when_run_twice(project):
    tau_rollout(project, ASK, LOOKUP, CANCEL_WRONG, task="6")
    tau_rollout(project, ASK, LOOKUP, CANCEL_RIGHT, outcome="success", task="6")
    project_derived_labels_refresh(project_id=project.pk)
    first = list(Label.objects.order_by("id").values_list("id", "source", "step_index"))
    result = project_derived_labels_refresh(project_id=project.pk)
    assert list(Label.objects.order_by("id").values_list("id", "source", "step_index")) == first
    assert (result.created, result.deleted) == (0, 0)
    assert (result.gold_actions, result.sibling_divergence) == (1, 1)


def test_it_replaces_the_label_when_the_rollout_no_longer_fails(project):
    rollout = tau_rollout(project, ASK, LOOKUP, CANCEL_WRONG, task="7")
    project_derived_labels_refresh(project_id=project.pk)
    Trajectory.objects.filter(pk=rollout.pk).update(outcome="success")
    project_derived_labels_refresh(project_id=project.pk)
    assert not _labels(rollout, LabelSource.GOLD_ACTIONS)


def test_it_never_touches_human_or_dataset_labels(project, owner):
    rollout = tau_rollout(project, ASK, LOOKUP, CANCEL_WRONG, task="8")
    Label.objects.create(trajectory=rollout, step_index=1, source="human", author=owner)
    Label.objects.create(trajectory=rollout, step_index=2, source="dataset")
    project_derived_labels_refresh(project_id=project.pk)
    project_derived_labels_refresh(project_id=project.pk)
    assert sorted(Label.objects.filter(trajectory=rollout).values_list("source", flat=True)) == [
        "dataset",
        "gold_actions",
        "human",
    ]


def test_a_failed_trial_leaving_its_sibling_with_a_lookup_gets_no_label(project):
    """A lookup in another order or with another argument changes nothing the outcome
    depends on: on airline such labels matched the gold-action label in 1 of 21."""
    failed = tau_rollout(project, ASK, LOOKUP, EXTRA_LOOKUP, CANCEL_WRONG, task="10")
    tau_rollout(project, ASK, LOOKUP, CANCEL_RIGHT, outcome="success", task="10")
    project_derived_labels_refresh(project_id=project.pk)
    assert not _labels(failed, LabelSource.SIBLING_DIVERGENCE)
