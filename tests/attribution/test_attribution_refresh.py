"""project_attribution_refresh: fallback without labels, calibration, training, idempotence."""

from __future__ import annotations

import pytest

from attribution.models import Calibration, TrainedScorer, TrajectoryAttribution
from attribution.services import MIN_TRAINING_LABELS, project_attribution_refresh
from tests.attribution.conftest import make_rollout, make_upload

pytestmark = pytest.mark.django_db


def test_it_attributes_failed_rollouts_without_any_label(project):
    rollout = make_rollout(project, label=False)
    make_rollout(project, outcome="success", label=False)
    project_attribution_refresh(project_id=project.pk)
    row = TrajectoryAttribution.objects.get()
    assert row.trajectory == rollout
    assert row.calibration is None and row.lo is None and row.rollback_step is None
    assert sum(row.probabilities) == pytest.approx(1.0, abs=1e-5)
    assert row.point_step == 2
    assert row.scorer_version.startswith("heuristic-")


def test_it_calibrates_the_heuristic_scorer_on_a_few_labels(project):
    upload = make_upload(project)
    for i in range(12):
        make_rollout(project, upload=upload, length=5 + i % 4, bad_step=1 + i % 3)
    project_attribution_refresh(project_id=project.pk)
    calibration = Calibration.objects.get()
    assert calibration.m == 12 and calibration.alpha == 0.1
    assert calibration.scorer.kind == "heuristic"
    assert calibration.diagnostics["curve"]
    rows = TrajectoryAttribution.objects.all()
    assert rows.count() == 12
    assert all(r.calibration_id == calibration.pk and r.alpha == 0.1 for r in rows)
    assert all(r.lo is None or r.rollback_step == r.lo for r in rows)


def test_it_trains_the_learned_scorer_with_enough_labels(project):
    upload = make_upload(project)
    for i in range(MIN_TRAINING_LABELS + 40):
        make_rollout(project, upload=upload, length=6 + i % 5, bad_step=1 + i % 4)
    project_attribution_refresh(project_id=project.pk)
    scorer = TrainedScorer.objects.get(kind="per_system")
    calibration = Calibration.objects.get()
    assert scorer.metrics["trained_on"] + scorer.metrics["held_out"] == MIN_TRAINING_LABELS + 40
    assert calibration.m == scorer.metrics["held_out"]
    assert TrajectoryAttribution.objects.count() == MIN_TRAINING_LABELS + 40


def test_it_changes_nothing_when_run_twice(project):
    upload = make_upload(project)
    for i in range(12):
        make_rollout(project, upload=upload, bad_step=1 + i % 3)
    project_attribution_refresh(project_id=project.pk)
    first = list(
        TrajectoryAttribution.objects.order_by("trajectory_id").values(
            "lo", "hi", "probabilities", "calibration_id", "id"
        )
    )
    project_attribution_refresh(project_id=project.pk)
    second = list(
        TrajectoryAttribution.objects.order_by("trajectory_id").values(
            "lo", "hi", "probabilities", "calibration_id", "id"
        )
    )
    assert first == second
    assert Calibration.objects.count() == 1 and TrainedScorer.objects.count() == 1


def test_it_drops_the_attribution_of_a_rollout_that_no_longer_failed(project):
    rollout = make_rollout(project, label=False)
    project_attribution_refresh(project_id=project.pk)
    rollout.outcome = "success"
    rollout.save()
    project_attribution_refresh(project_id=project.pk)
    assert not TrajectoryAttribution.objects.exists()


def test_it_prefers_a_human_label_to_the_dataset_one(project, owner):
    from attribution.services import _decisive_labels
    from ingest.models import Label

    rollout = make_rollout(project, bad_step=2)
    Label.objects.create(trajectory=rollout, step_index=4, source="human", author=owner)
    assert _decisive_labels(project) == {rollout.pk: 4}


def test_it_does_nothing_for_an_empty_project(project):
    project_attribution_refresh(project_id=project.pk)
    assert not TrajectoryAttribution.objects.exists()
    assert not Calibration.objects.exists()


def test_it_runs_as_a_celery_task_body(project):
    from attribution.tasks import attribution_refresh

    make_rollout(project, label=False)
    attribution_refresh.run(project.pk)
    assert TrajectoryAttribution.objects.count() == 1


def test_it_falls_back_to_the_heuristic_when_the_judge_is_unreachable(
    project, settings, monkeypatch
):
    import socket

    from attribution import services

    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.FAULTLINE_JUDGE_URL = f"http://127.0.0.1:{port}/v1"
    settings.FAULTLINE_JUDGE_MODEL = "judge"
    monkeypatch.setattr(services, "JUDGE_BACKOFF", 0.0)
    make_rollout(project, label=False)
    project_attribution_refresh(project_id=project.pk)
    assert TrajectoryAttribution.objects.get().scorer_version.startswith("heuristic-")
    assert services.judge_from_settings().timeout == settings.FAULTLINE_JUDGE_TIMEOUT
