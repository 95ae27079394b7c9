"""The refresh after a few new rollouts is incremental and gives them what a full one would;
labels, a changed miscoverage and growth make it full again (pipeline.incremental)."""

from __future__ import annotations

import copy
import json

import pytest

from attribution.labels import human_label_add
from attribution.models import TrajectoryAttribution
from attribution.services import SCORING_RULES, project_attribution_refresh
from ingest.models import Trajectory
from pipeline.incremental import (
    REASON_FIRST,
    REASON_GROWTH,
    REASON_LABELS_ARRIVED,
    REASON_MISCOVERAGE,
    REASON_SCORING_RULES,
)
from pipeline.models import ProjectOverview, ProjectRefresh, RefreshKind, RefreshStatus
from pipeline.overview import overview_aggregates
from pipeline.refresh import REASON_LABEL, refresh_project_queue, refresh_project_run
from tests.conftest import TAU_AIRLINE, ingest_bytes

pytestmark = pytest.mark.django_db

FIRST = 100
COMPARED = [
    "probabilities", "lo", "hi", "point_step", "agent", "rollback_step", "alpha", "tau",
    "group", "calibration_group", "calibration_id", "scorer_version", "claim",
    "calibration_source", "calibration_system", "labels_needed",
]  # fmt: skip


@pytest.fixture
def tau_records() -> list[dict]:
    if not TAU_AIRLINE.exists():
        pytest.skip("tau-bench sample data not available")
    return json.loads(TAU_AIRLINE.read_text())


def _fresh(record: dict, number: int, *, reward: float = 0.0) -> dict:
    """A copy of a real rollout under a task of its own and without gold actions: it gets
    no derived label, so the labels a full refresh would train and calibrate on stay."""
    fresh = copy.deepcopy(record)
    fresh["task_id"], fresh["trial"], fresh["reward"] = 9000 + number, 0, reward
    fresh.setdefault("info", {}).setdefault("task", {}).pop("actions", None)
    return fresh


def _ingest(project, records: list[dict]):
    # The parser reads the environment and the model from the file's name.
    upload = ingest_bytes(project, json.dumps(records).encode(), TAU_AIRLINE.name)
    assert upload.status == "done", upload.error_message
    return upload


def _refresh(project) -> ProjectRefresh:
    refresh = refresh_project_run(project.pk)
    assert refresh is not None and refresh.status == RefreshStatus.DONE, refresh.error_message
    return refresh


@pytest.fixture
def refreshed(project, tau_records):
    """100 real tau-bench rollouts after a full refresh; gold-action labels calibrate."""
    project.gold_actions_calibrate = True
    project.save(update_fields=["gold_actions_calibrate"])
    _ingest(project, tau_records[:FIRST])
    first = _refresh(project)
    assert first.kind == RefreshKind.FULL and first.reason == REASON_FIRST
    return project


def _new_failed(project, tau_records, number: int = 0) -> Trajectory:
    failed = [r for r in tau_records[FIRST:] if r["reward"] < 1]
    _ingest(project, [_fresh(failed[number], number)])
    return Trajectory.objects.get(project=project, task_id__endswith=f"/{9000 + number}")


def _attribution(rollout: Trajectory) -> dict:
    row = TrajectoryAttribution.objects.get(trajectory=rollout)
    return {name: getattr(row, name) for name in COMPARED}


def test_it_attributes_a_new_failed_rollout_as_a_full_refresh_would(refreshed, tau_records):
    rollout = _new_failed(refreshed, tau_records)
    refresh = _refresh(refreshed)
    assert refresh.kind == RefreshKind.INCREMENTAL and refresh.rollouts == 1
    incremental = _attribution(rollout)
    assert incremental["calibration_id"] is not None and incremental["claim"]
    project_attribution_refresh(project_id=refreshed.pk)
    assert _attribution(rollout) == incremental


def test_it_gives_the_new_rollout_a_place_after_the_ranked_queue(refreshed, tau_records):
    ranked = TrajectoryAttribution.objects.filter(project=refreshed, queue_rank__isnull=False)
    before = dict(ranked.values_list("trajectory_id", "queue_rank"))
    rollout = _new_failed(refreshed, tau_records)
    _refresh(refreshed)
    after = dict(ranked.values_list("trajectory_id", "queue_rank"))
    assert after.pop(rollout.pk) == max(before.values()) + 1
    assert after == before


def test_it_moves_the_overview_by_the_new_rollouts_share(refreshed, tau_records):
    _new_failed(refreshed, tau_records, 0)
    _new_failed(refreshed, tau_records, 1)
    assert _refresh(refreshed).kind == RefreshKind.INCREMENTAL
    stored = ProjectOverview.objects.get(project=refreshed).data
    expected = overview_aggregates(project=refreshed)
    assert {key: stored[key] for key in expected} == expected


def test_it_refreshes_fully_after_a_new_label(
    refreshed, tau_records, django_capture_on_commit_callbacks
):
    rollout = _new_failed(refreshed, tau_records)
    with django_capture_on_commit_callbacks(execute=False):
        human_label_add(
            trajectory=rollout,
            step_index=_first_agent_action(rollout),
            reason="skipped the confirmation",
        )
    waiting = ProjectRefresh.objects.get(project=refreshed, status=RefreshStatus.QUEUED)
    assert waiting.full_requested
    refresh = _refresh(refreshed)
    assert refresh.pk == waiting.pk
    assert refresh.kind == RefreshKind.FULL and refresh.reason == REASON_LABEL


def test_it_refreshes_fully_when_the_scoring_code_changed_since_the_last_full_one(refreshed):
    # As after an upgrade: the last full refresh was made by other scoring code (a basis
    # stored before the version existed has none at all).
    last = ProjectRefresh.objects.filter(project=refreshed).order_by("-id").first()
    basis = copy.deepcopy(last.basis)
    basis["attribution"]["scoring_rules"] = ""
    ProjectRefresh.objects.filter(pk=last.pk).update(basis=basis)
    refresh = _refresh(refreshed)
    assert refresh.kind == RefreshKind.FULL and refresh.reason == REASON_SCORING_RULES
    # The full refresh records today's rules: the next one may be incremental again.
    assert refresh.basis["attribution"]["scoring_rules"] == SCORING_RULES


def test_it_refreshes_fully_when_the_miscoverage_changed(refreshed):
    refreshed.miscoverage = 0.2
    refreshed.save(update_fields=["miscoverage"])
    refresh = _refresh(refreshed)
    assert refresh.kind == RefreshKind.FULL and refresh.reason == REASON_MISCOVERAGE
    assert set(
        TrajectoryAttribution.objects.filter(project=refreshed, claim=True).values_list(
            "alpha", flat=True
        )
    ) == {0.2}


def test_it_refreshes_fully_when_the_project_grew_by_a_quarter(refreshed, tau_records):
    grown = [_fresh(record, n) for n, record in enumerate(tau_records[FIRST : FIRST + 30])]
    _ingest(refreshed, grown)
    refresh = _refresh(refreshed)
    assert refresh.kind == RefreshKind.FULL and refresh.reason == REASON_GROWTH


def test_it_refreshes_fully_when_labels_arrive_with_the_rollouts(refreshed, tau_records):
    native = {
        "id": "labelled-late",
        "outcome": "failure",
        "task_id": "own-task",
        "agent_system": "tau-bench tool-calling agent",
        "steps": [
            {"role": "user", "content": "Change my flight."},
            {"role": "assistant", "content": "Booked it without asking."},
        ],
        "labels": [{"step": 1, "reason": "booked without asking"}],
    }
    ingest_bytes(refreshed, (json.dumps(native) + "\n").encode(), "labelled.jsonl")
    refresh = _refresh(refreshed)
    assert refresh.kind == RefreshKind.FULL and refresh.reason == REASON_LABELS_ARRIVED


def test_it_attributes_a_rollout_whose_outcome_turned_failed_later(refreshed, tau_records):
    failed = [r for r in tau_records[FIRST:] if r["reward"] < 1]
    _ingest(refreshed, [_fresh(failed[0], 0, reward=1.0)])
    assert _refresh(refreshed).kind == RefreshKind.INCREMENTAL
    rollout = Trajectory.objects.get(project=refreshed, task_id__endswith="/9000")
    assert not TrajectoryAttribution.objects.filter(trajectory=rollout).exists()
    from ingest.outcomes import rollout_outcome_set

    # What the outcome API does (tests/dashboard/api/test_feedback.py sends the request).
    change = rollout_outcome_set(rollout=rollout, outcome="failure")
    assert change.turned_failed
    refresh_project_queue(project_id=refreshed.pk, rollout_ids=[rollout.pk])
    refresh = _refresh(refreshed)
    assert refresh.kind == RefreshKind.INCREMENTAL and refresh.rollouts == 1
    assert TrajectoryAttribution.objects.filter(trajectory=rollout).exists()


def test_it_says_on_the_overview_which_refresh_ran_and_why(client, member, refreshed, tau_records):
    from django.urls import reverse

    _new_failed(refreshed, tau_records)
    _refresh(refreshed)
    client.force_login(member)
    html = client.get(reverse("dashboard:project_detail", args=[refreshed.slug])).content.decode()
    assert "Last analysis: incremental (1 new or changed rollouts)." in html


def test_it_builds_each_incremental_refresh_on_the_last_full_one(refreshed, tau_records):
    full = ProjectRefresh.objects.get(project=refreshed, kind=RefreshKind.FULL)
    _new_failed(refreshed, tau_records, 0)
    _refresh(refreshed)
    _new_failed(refreshed, tau_records, 1)
    second = _refresh(refreshed)
    # The first upload is still inside the time margin, but was already analysed.
    assert second.kind == RefreshKind.INCREMENTAL and second.rollouts == 1
    assert second.basis["full"] == full.pk and second.basis["since_full"]["rollouts"] == 2


def test_it_attributes_a_live_rollout_assembled_since_the_last_refresh(refreshed, tau_records):
    from django.utils import timezone

    from ingest.models import LiveTrace
    from ingest.otlp.rollouts import stream_upload

    stream = stream_upload(project_id=refreshed.pk)
    rollout = _new_failed(refreshed, tau_records)
    Trajectory.objects.filter(pk=rollout.pk).update(upload=stream)
    now = timezone.now()
    LiveTrace.objects.create(
        project=refreshed,
        trace_id="ab" * 16,
        state="closed",
        pending=False,
        root_ended=True,
        first_span_at=now,
        last_span_at=now,
        assembled_at=now,
        closed_at=now,
        rollout=rollout,
    )
    refresh = _refresh(refreshed)
    assert refresh.kind == RefreshKind.INCREMENTAL and refresh.rollouts == 1
    assert TrajectoryAttribution.objects.filter(trajectory=rollout).exists()


def test_it_asks_again_for_the_full_refresh_of_a_request_whose_refresh_failed(refreshed):
    from django.utils import timezone

    ProjectRefresh.objects.create(
        project=refreshed,
        status=RefreshStatus.FAILED,
        full_requested=True,
        request_reason=REASON_LABEL,
        finished_at=timezone.now(),
    )
    refresh = _refresh(refreshed)
    assert refresh.kind == RefreshKind.FULL and refresh.reason == REASON_LABEL


def test_it_assigns_the_new_rollouts_wrong_steps_to_the_existing_misbehaviours(
    refreshed, tau_records
):
    from analysis.models import ClusteringRun, RunKind, WrongStepMembership

    full_run = ClusteringRun.objects.get(project=refreshed, kind=RunKind.FULL)
    rollout = _new_failed(refreshed, tau_records)
    _refresh(refreshed)
    assigned = WrongStepMembership.objects.filter(step__trajectory=rollout)
    assert assigned.exists() and all(m.assigned for m in assigned)
    run = ClusteringRun.objects.get(project=refreshed, kind=RunKind.INCREMENTAL)
    assert run.base_run == full_run and run.assigned_count == assigned.count()


def _first_agent_action(rollout: Trajectory) -> int:
    return (
        rollout.steps.filter(role="assistant").order_by("index").values_list("index", flat=True)
    )[0]


def test_new_labels_recluster_once_enough_more_are_among_the_wrong_steps(project, tau_records):
    # A label replaces its rollout's guessed steps by the one it names: assignment alone
    # kept the groups made before twenty labels of an unseen system. Five more labelled
    # wrong steps (and a quarter more) than the last full run had make a full run.
    from analysis.core.pipeline import RECLUSTER_LABELS
    from analysis.models import ClusteringRun, RunKind

    def last_run() -> ClusteringRun:
        return ClusteringRun.objects.filter(project=project).order_by("-id").first()

    failed = [r for r in tau_records if r["reward"] < 1][:30]
    _ingest(project, [_fresh(record, number) for number, record in enumerate(failed)])
    _refresh(project)
    full = last_run()
    assert full.kind == RunKind.FULL and full.params["labelled_steps"] == 0
    rollouts = list(Trajectory.objects.filter(project=project).order_by("id")[:RECLUSTER_LABELS])
    for rollout in rollouts[:-1]:
        human_label_add(trajectory=rollout, step_index=_first_agent_action(rollout), reason="")
    _refresh(project)
    assert last_run().kind != RunKind.FULL  # one label short: the model places them
    last = rollouts[-1]
    human_label_add(trajectory=last, step_index=_first_agent_action(last), reason="")
    _refresh(project)
    rerun = last_run()
    assert rerun.kind == RunKind.FULL and rerun.params["labelled_steps"] == RECLUSTER_LABELS
