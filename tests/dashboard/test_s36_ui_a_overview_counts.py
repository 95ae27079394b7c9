"""The overview's counts follow the stored rollouts.

Two ways they stood still: the demo project's subtitle said "184 failed multi-agent runs
... and 200 tau-bench airline rollouts" whatever the cards under it counted, and rollouts
deleted after they were counted (an upload read again after a cut-short run clears what
that run stored) stayed in the cards and charts until a full refresh, incremental refreshes
included.
"""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import call_command
from django.urls import reverse

from dashboard.management.commands.demo_setup import (
    DEMO_DESCRIPTION,
    DEMO_SLUG,
    OLD_DEMO_DESCRIPTION,
)
from ingest.selectors import project_counts
from pipeline.models import ProjectRefresh, RefreshKind
from pipeline.overview import stored_overview
from pipeline.overview_cards import overview_cards
from projects.models import Project

pytestmark = pytest.mark.django_db


def _trace(prefix: str, rollouts: int, failed: int) -> bytes:
    lines = [
        {
            "id": f"{prefix}-{i}",
            "outcome": "failure" if i < failed else "success",
            "environment": "airline",
            "steps": [{"role": "user", "content": f"{prefix} {i}"}, {"role": "assistant"}],
        }
        for i in range(rollouts)
    ]
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def _upload(project, data: bytes, name: str):
    """Through the worker's task: stored, ingested and counted into the overview's cards."""
    from ingest.services import upload_create
    from pipeline.tasks import ingest_upload

    outcome = upload_create(project=project, stream=io.BytesIO(data), original_name=name)
    ingest_upload(outcome.upload.pk)
    return outcome.upload


def _cards_on_page(client, project) -> dict[str, int]:
    html = client.get(reverse("dashboard:project_detail", args=[project.slug])).content.decode()
    cards = html.split('id="overview-cards"', 1)[1].split('id="coverage-card"', 1)[0]
    text = " ".join(re.sub(r"<[^>]+>", " ", cards).split())
    found = re.search(r"(\d+) rollouts .* (\d+) failed, (\d+) succeeded", text)
    assert found, text
    rollouts, failed, succeeded = (int(n) for n in found.groups())
    return {"rollouts": rollouts, "failed": failed, "succeeded": succeeded}


def test_the_cards_and_charts_drop_deleted_rollouts_at_the_next_refresh(client, member, project):
    from pipeline.tasks import refresh_project

    _upload(project, _trace("a", 10, 4), "a.jsonl")
    refresh_project(project.pk)
    deleted = _upload(project, _trace("b", 6, 6), "b.jsonl")
    refresh_project(project.pk)
    deleted.delete()  # its rollouts with it, after the cards counted them
    _upload(project, _trace("c", 3, 0), "c.jsonl")
    refresh_project(project.pk)
    last = ProjectRefresh.objects.filter(project=project).order_by("-pk").first()
    assert last is not None and last.kind == RefreshKind.INCREMENTAL

    live = project_counts(project=project)
    assert (live["rollouts"], live["failed"], live["succeeded"]) == (13, 4, 9)
    assert overview_cards(project=project) == live
    client.force_login(member)
    assert _cards_on_page(client, project) == {"rollouts": 13, "failed": 4, "succeeded": 9}
    charts, _ = stored_overview(project=project)
    assert [(row["total"], row["failed"]) for row in charts["failures"]] == [(13, 4)]
    assert sum(row["total"] for row in charts["uploads"]) == 13


def test_the_demo_subtitle_holds_no_counts(settings, tmp_path):
    settings.VAR_DIR = str(tmp_path)
    call_command("demo_setup", data=str(tmp_path / "no-data"), stdout=io.StringIO())
    project = Project.objects.get(slug=DEMO_SLUG)
    assert project.description == DEMO_DESCRIPTION
    assert not re.search(r"\d", DEMO_DESCRIPTION)


def test_the_demo_setup_replaces_the_old_subtitle_with_its_counts(settings, tmp_path):
    settings.VAR_DIR = str(tmp_path)
    call_command("demo_setup", data=str(tmp_path / "no-data"), stdout=io.StringIO())
    Project.objects.filter(slug=DEMO_SLUG).update(description=OLD_DEMO_DESCRIPTION)
    call_command("demo_setup", data=str(tmp_path / "no-data"), stdout=io.StringIO())
    assert Project.objects.get(slug=DEMO_SLUG).description == DEMO_DESCRIPTION


def test_the_demo_setup_keeps_a_description_someone_wrote(settings, tmp_path):
    settings.VAR_DIR = str(tmp_path)
    call_command("demo_setup", data=str(tmp_path / "no-data"), stdout=io.StringIO())
    Project.objects.filter(slug=DEMO_SLUG).update(description="Our own words")
    call_command("demo_setup", data=str(tmp_path / "no-data"), stdout=io.StringIO())
    assert Project.objects.get(slug=DEMO_SLUG).description == "Our own words"
