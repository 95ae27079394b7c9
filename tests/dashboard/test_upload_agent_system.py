"""The uploads page's agent system field: every rollout of the files takes that system."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from ingest.models import Trajectory, Upload
from pipeline.tasks import ingest_upload

pytestmark = pytest.mark.django_db

LINE = json.dumps({"id": "r1", "outcome": "failure", "agent_system": "SWE-agent",
                   "steps": [{"role": "user", "content": "fix the test"}]}).encode()  # fmt: skip


def test_the_page_offers_the_field(client, owner, project):
    client.force_login(owner)
    page = client.get(reverse("dashboard:uploads", args=[project.slug]))
    assert b'name="agent_system" id="agent-system" maxlength="100"' in page.content


def test_the_files_rollouts_take_the_system_typed_on_the_page(
    client, owner, project, django_capture_on_commit_callbacks
):
    client.force_login(owner)
    url = reverse("dashboard:uploads", args=[project.slug])
    with django_capture_on_commit_callbacks(execute=False):
        answer = client.post(
            url,
            {"files": SimpleUploadedFile("runs.jsonl", LINE), "agent_system": "checkout-coder"},
            HTTP_ACCEPT="application/json",
        )
    assert answer.status_code == 202
    assert answer.json()["uploads"][0]["agent_system"] == "checkout-coder"
    ingest_upload(Upload.objects.get().pk)
    assert list(Trajectory.objects.values_list("agent_system", flat=True)) == ["checkout-coder"]


def test_a_system_it_cannot_store_is_refused_with_the_reason(client, owner, project):
    client.force_login(owner)
    url = reverse("dashboard:uploads", args=[project.slug])
    answer = client.post(
        url,
        {"files": SimpleUploadedFile("runs.jsonl", LINE), "agent_system": "x" * 101},
        HTTP_ACCEPT="application/json",
    )
    assert answer.status_code == 400
    assert "The agent system must be at most 100 characters" in answer.json()["uploads"][0]["error"]
    assert not Upload.objects.exists()
