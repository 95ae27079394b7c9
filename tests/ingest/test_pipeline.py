"""The ingest pipeline on the real demo data: exact counts, labels, idempotence."""

from __future__ import annotations

import pytest

from ingest.models import Label, Step, Trajectory, Upload
from tests.conftest import TAU_AIRLINE, WHO_AND_WHEN, ingest_file, shared_file

pytestmark = pytest.mark.django_db


def test_it_ingests_all_who_and_when_files_with_exact_counts(project):
    shared_file("who_and_when/Who&When")
    files = sorted(WHO_AND_WHEN.glob("*/*.json"))
    for path in files:
        upload = ingest_file(project, path, name=f"{path.parent.name}-{path.name}")
        assert upload.status == "done", upload.error_message
    assert Trajectory.objects.filter(project=project).count() == 184
    assert Trajectory.objects.filter(metadata__subset="Algorithm-Generated").count() == 126
    assert Trajectory.objects.filter(metadata__subset="Hand-Crafted").count() == 58
    assert Step.objects.filter(trajectory__project=project).count() == 4092
    assert Trajectory.objects.filter(project=project, outcome="failure").count() == 184
    assert Label.objects.filter(trajectory__project=project, source="dataset").count() == 184


def test_it_turns_mistake_step_into_a_dataset_label(project):
    path = shared_file("who_and_when/Who&When/Hand-Crafted/1.json")
    ingest_file(project, path)
    rollout = Trajectory.objects.get(project=project)
    label = rollout.labels.get()
    assert (label.step_index, label.agent) == (12, "WebSurfer")
    assert "irrelevant website" in label.reason
    step = rollout.steps.get(index=12)
    assert step.agent == "WebSurfer"
    assert rollout.environment == "AssistantBench"  # no GAIA level on this question
    assert rollout.agent_system == "Magentic-One"


def test_it_keeps_agent_names_from_name_in_algorithm_generated(project):
    path = shared_file("who_and_when/Who&When/Algorithm-Generated/1.json")
    ingest_file(project, path)
    agents = list(
        Step.objects.filter(trajectory__project=project)
        .order_by("index")
        .values_list("agent", flat=True)
    )
    assert agents[0] == "Excel_Expert"
    assert "Computer_terminal" in agents


def test_it_ingests_tau_bench_with_exact_counts(project):
    shared_file("tau_bench/historical_trajectories/gpt-4o-airline.json")
    upload = ingest_file(project, TAU_AIRLINE)
    assert upload.status == "done", upload.error_message
    assert (upload.trajectory_count, upload.step_count, upload.label_count) == (200, 5308, 0)
    rollouts = Trajectory.objects.filter(project=project)
    assert rollouts.filter(reward=1.0, outcome="success").count() == 84
    assert rollouts.filter(outcome="failure").count() == 116
    assert set(rollouts.values_list("environment", "policy_model").distinct()) == {
        ("airline", "gpt-4o")
    }
    calls = Step.objects.filter(trajectory__project=project, kind="tool_call")
    assert calls.count() == 1164
    booking = calls.filter(tool_name="book_reservation").first()
    assert booking.is_mutating is True and isinstance(booking.tool_args, dict)
    assert Step.objects.filter(trajectory__project=project, kind="tool_result").count() == 1164


def test_it_steps_are_zero_based_and_contiguous(project):
    ingest_file(project, shared_file("tau_bench/historical_trajectories/gpt-4o-airline.json"))
    for rollout in Trajectory.objects.filter(project=project)[:20]:
        indexes = list(rollout.steps.order_by("index").values_list("index", flat=True))
        assert indexes == list(range(rollout.step_count))


def test_it_stores_the_same_file_once(project):
    path = shared_file("who_and_when/Who&When/Hand-Crafted/1.json")
    first = ingest_file(project, path)
    second = ingest_file(project, path, name="copy.json")
    assert first.pk == second.pk
    assert Upload.objects.filter(project=project).count() == 1
    assert Trajectory.objects.filter(project=project).count() == 1


def test_it_does_nothing_when_the_task_runs_twice(project):
    from ingest.services import upload_ingest

    upload = ingest_file(project, shared_file("who_and_when/Who&When/Hand-Crafted/1.json"))
    again = upload_ingest(upload_id=upload.pk)
    assert again.status == "done"
    assert Trajectory.objects.filter(project=project).count() == 1


def test_it_honours_an_explicit_format(project):
    path = shared_file("who_and_when/Who&When/Hand-Crafted/1.json")
    upload = ingest_file(project, path, requested_format="tau_bench")
    assert upload.status == "failed"
    assert "A tau-bench file is a JSON list of rollouts." in upload.error_message
    assert Trajectory.objects.count() == 0


def test_the_same_file_sent_again_with_another_format_is_read_again(project):
    path = shared_file("who_and_when/Who&When/Hand-Crafted/1.json")
    wrong = ingest_file(project, path, requested_format="tau_bench")
    assert wrong.status == "failed" and wrong.failed_on_content
    # The same content with the same format: the failed upload, as it is.
    assert ingest_file(project, path, requested_format="tau_bench").status == "failed"
    fixed = ingest_file(project, path, requested_format="who_and_when")
    assert fixed.pk == wrong.pk and fixed.status == "done"
    assert (fixed.requested_format, fixed.error_message) == ("who_and_when", "")
    assert Trajectory.objects.filter(project=project).count() == 1
    # Done once: the same content again is that upload, whatever format is named.
    assert ingest_file(project, path, requested_format="tau_bench").status == "done"
