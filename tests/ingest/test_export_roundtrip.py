"""Lossless export: download a project's rollouts as native JSONL, upload them into
another project, and get identical steps, for a sample file of every format."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from ingest.models import Label, Step, Trajectory
from projects.services import project_create
from projects.tokens import project_token_issue
from tests.conftest import ingest_bytes, ingest_file, shared_file

pytestmark = pytest.mark.django_db

SAMPLES = [
    "who_and_when/Who&When/Hand-Crafted/1.json",
    "who_and_when/Who&When/Algorithm-Generated/1.json",
    "tau_bench/historical_trajectories/gpt-4o-airline.json",
    "otlp_json/examples/trace.json",
    "otel_genai_any_agent/tests/assets/OPENAI_trace.json",
    "otel_genai_any_agent/tests/assets/LANGCHAIN_trace.json",
    "swe_agent/trajectories/demonstrations/function_calling_simple.traj",
    "swe_agent/tests/test_data/trajectories/gpt4__swe-bench-dev-easy_first_only__default__t-0.00__p-0.95__c-3.00__install-1/pydicom__pydicom-1458.traj",
    "openhands/tests/runtime/trajs/basic.json",
    "inspect_ai/tests/log/test_eval_log/log_read_sample.json",
    "inspect_ai/tests/log/test_eval_log/log_read_sample.eval",
]

STEP_FIELDS = (
    "index",
    "agent",
    "role",
    "kind",
    "content",
    "tool_name",
    "tool_args",
    "tool_call_id",
    "is_error",
    "is_mutating",
    "started_at",
    "ended_at",
    "metadata",
)
ROLLOUT_FIELDS = (
    "external_id",
    "task_id",
    "task_text",
    "environment",
    "agent_system",
    "policy_model",
    "outcome",
    "reward",
    "step_count",
    "metadata",
)


def _snapshot(project):
    rollouts = [
        tuple(json.dumps(getattr(r, f), sort_keys=True, default=str) for f in ROLLOUT_FIELDS)
        for r in Trajectory.objects.filter(project=project).order_by("id")
    ]
    steps = [
        tuple(json.dumps(s[f], sort_keys=True, default=str) for f in STEP_FIELDS)
        for s in Step.objects.filter(trajectory__project=project)
        .order_by("trajectory_id", "index")
        .values(*STEP_FIELDS)
    ]
    labels = list(
        Label.objects.filter(trajectory__project=project)
        .order_by("trajectory_id", "id")
        .values_list("step_index", "agent", "reason", "source")
    )
    return rollouts, steps, labels


@pytest.mark.parametrize("relative", SAMPLES)
def test_it_round_trips_every_format_through_the_download(client, owner, project, relative):
    source = ingest_file(project, shared_file(relative))
    assert source.status == "done", source.error_message
    client.force_login(owner)
    response = client.get(reverse("dashboard:rollouts_download", args=[project.slug]))
    assert response.status_code == 200
    exported = b"".join(response.streaming_content)

    copy = project_create(name="Copy", owner=owner)
    again = ingest_bytes(copy, exported, "export.jsonl")
    assert again.status == "done", again.error_message
    assert again.detected_format == "native"
    assert _snapshot(copy) == _snapshot(project)


def test_it_exports_through_the_api_and_the_cli(client, owner, project):
    ingest_file(project, shared_file("who_and_when/Who&When/Hand-Crafted/1.json"))
    token = project_token_issue(project=project)
    response = client.get(
        f"/api/v1/projects/{project.slug}/rollouts.jsonl", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    api_bytes = b"".join(response.streaming_content)
    out = io.StringIO()
    err = io.StringIO()
    call_command("export_rollouts", "--project", project.slug, stdout=out, stderr=err)
    assert "Wrote 1 rollout(s)." in err.getvalue()
    assert api_bytes.decode() == out.getvalue() or json.loads(api_bytes) == json.loads(
        out.getvalue()
    )
    assert json.loads(api_bytes)["labels"][0]["step"] == 12


def test_it_downloads_one_rollout_from_its_page(client, member, project):
    ingest_file(project, shared_file("who_and_when/Who&When/Hand-Crafted/1.json"))
    rollout = project.trajectories.get()
    client.force_login(member)
    response = client.get(reverse("dashboard:rollout_download", args=[project.slug, rollout.pk]))
    assert response["Content-Disposition"].startswith("attachment;")
    line = json.loads(b"".join(response.streaming_content))
    assert line["id"] == rollout.external_id and len(line["steps"]) == 29
