"""The demo data (Who&When Hand-Crafted and tau-bench airline), ingested once per module
and exported once, for the tests that read every exported line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import TAU_AIRLINE, WHO_AND_WHEN, ingest_file

FAST_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fast_passwords_and_own_media(settings, tmp_path):
    # The standing users' passwords are hashed at 1 s each with the real hasher; and job
    # ids repeat between tests, so each test writes its exports in a folder of its own.
    settings.PASSWORD_HASHERS = FAST_HASHERS
    settings.MEDIA_ROOT = str(tmp_path / "media")


def _ingest_demo(project) -> None:
    if not TAU_AIRLINE.exists() or not WHO_AND_WHEN.exists():
        pytest.skip("shared demo data not present")
    ingest_file(project, TAU_AIRLINE)
    for path in sorted((WHO_AND_WHEN / "Hand-Crafted").glob("*.json")):
        ingest_file(project, path, name=f"Hand-Crafted-{path.name}")


def _refresh(project) -> None:
    """The refresh that follows uploads, as the worker runs it: action analysis, the
    derived labels (gold actions, sibling divergence), attribution, misbehaviours."""
    from pipeline.refresh import refresh_project_run

    refresh_project_run(project.pk)


def _correct_some(project, author) -> int:
    """Human corrections on the labelled step of the first few Who&When rollouts."""
    from exports.services import correction_save
    from ingest.models import Label

    saved = 0
    labels = (
        Label.objects.filter(trajectory__project=project)
        .select_related("trajectory")
        .order_by("id")
    )
    for label in labels[:12]:
        correction_save(
            rollout=label.trajectory,
            step_index=label.step_index,
            kind="message",
            author=author,
            content="Stop and verify the claim with a second source before going on.",
        )
        saved += 1
    return saved


@pytest.fixture(scope="module")
def demo_export(django_db_setup, django_db_blocker, tmp_path_factory):
    """A project holding the demo data and one finished export of all four kinds."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import override_settings

    from exports.core.filters import KINDS, parse_filters
    from exports.services import export_create, export_folder, export_run
    from projects.models import Membership, Project, Role

    media = tmp_path_factory.mktemp("media")
    with (
        django_db_blocker.unblock(),
        override_settings(
            MEDIA_ROOT=str(media),
            PASSWORD_HASHERS=FAST_HASHERS,
            CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}},
        ),
    ):
        user = get_user_model().objects.create_user(
            "demo-exporter", "d@example.com", "pw-123456789"
        )
        project = Project.objects.create(name="Demo exports", slug="demo-exports")
        Membership.objects.create(project=project, user=user, role=Role.OWNER)
        _ingest_demo(project)
        _refresh(project)
        corrected = _correct_some(project, user)
        job = export_create(project=project, kinds=KINDS, filters=parse_filters({}), dispatch=False)
        job = export_run(job_id=job.pk)
        folder = Path(export_folder(job))
        lines = {
            kind: [json.loads(line) for line in (folder / f"{kind}.jsonl").read_text().splitlines()]
            for kind in KINDS
        }
        yield {
            "project": project,
            "job": job,
            "folder": folder,
            "lines": lines,
            "corrected": corrected,
            "media": media,
        }
        project.delete()
        user.delete()
    assert settings.MEDIA_ROOT  # the override ended with the module


def native_rollout(
    rollout_id: str,
    *,
    environment: str = "airline",
    model: str = "gpt-4o",
    outcome: str = "failure",
    task_id: str = "t1",
    cancel: str = "WRONG",
    label_source: str | None = "dataset",
) -> dict:
    """A small tool-calling rollout whose decisive step is 3 (the cancel call)."""
    line = {
        "format": "faultline.trajectory.v1",
        "id": rollout_id,
        "task_id": task_id,
        "task_text": "Cancel reservation GOOD.",
        "environment": environment,
        "policy_model": model,
        "outcome": outcome,
        "steps": [
            {"role": "system", "kind": "system", "content": "You are an airline agent."},
            {"role": "user", "content": "Cancel my reservation GOOD, please."},
            {"role": "assistant", "agent": "assistant", "content": "Sure, which one?"},
            {
                "role": "assistant",
                "agent": "assistant",
                "kind": "tool_call",
                "tool_name": "cancel",
                "tool_args": {"id": cancel},
                "tool_call_id": f"{rollout_id}-c1",
            },
            {
                "role": "tool",
                "kind": "tool_result",
                "tool_name": "cancel",
                "content": "cancelled",
                "tool_call_id": f"{rollout_id}-c1",
            },
            {"role": "assistant", "agent": "assistant", "content": f"{cancel} is cancelled."},
        ],
    }
    if label_source and outcome == "failure":
        line["labels"] = [
            {"step": 3, "agent": "assistant", "reason": "wrong id", "source": label_source}
        ]
    return line


def ingest_rollouts(project, rollouts: list[dict], name: str = "small.jsonl"):
    from tests.conftest import ingest_bytes

    data = "".join(json.dumps(r) + "\n" for r in rollouts).encode()
    return ingest_bytes(project, data, name)


@pytest.fixture
def small_project(project):
    """Four failed rollouts (two environments, two models, one human label) and a success."""
    ingest_rollouts(
        project,
        [
            native_rollout("a1", environment="airline", model="gpt-4o"),
            native_rollout("a2", environment="airline", model="gpt-4o-mini", label_source="human"),
            native_rollout("r1", environment="retail", model="gpt-4o", task_id="t2"),
            native_rollout(
                "r2", environment="retail", model="gpt-4o", task_id="t3", label_source=None
            ),
            native_rollout("ok", environment="airline", outcome="success", cancel="GOOD"),
        ],
    )
    return project
