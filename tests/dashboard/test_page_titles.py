"""Every page of a project names the project in its title: a user with the same page of
two projects open in two tabs can tell them apart (the calibration, labelling and
rollout pages said only "Calibration", "Label next" or the rollout's id)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from ingest.models import Trajectory
from tests.conftest import ingest_bytes

pytestmark = pytest.mark.django_db

TRACE = (
    b'{"id": "run-1", "outcome": "failure", "steps": ['
    b'{"role": "user", "content": "Buy a red mug"}, {"role": "assistant", "content": "Done."}]}'
)
PAGES = [
    "dashboard:project_detail",
    "dashboard:rollout_list",
    "dashboard:uploads",
    "dashboard:project_settings",
    "analysis:misbehaviour_list",
    "analysis:misbehaviour_map",
    "analysis:taxonomy",
    "attribution:calibration",
    "attribution:labelling_queue",
    "exports:index",
]


def _title(html: str) -> str:
    found = re.search(r"<title>(.*?)</title>", html, re.S)
    assert found, "the page has no <title>"
    return " ".join(found.group(1).split())


@pytest.mark.parametrize("page", PAGES)
def test_a_project_page_title_names_the_project(client, member, project, page):
    client.force_login(member)
    response = client.get(reverse(page, args=[project.slug]))
    assert response.status_code == 200
    assert project.name in _title(response.content.decode())


@pytest.mark.parametrize("page", ["dashboard:rollout_detail", "dashboard:rollout_compare"])
def test_a_rollout_page_title_names_the_rollout_and_the_project(client, member, project, page):
    ingest_bytes(project, TRACE, "one.jsonl")
    rollout = Trajectory.objects.get(project=project)
    client.force_login(member)
    response = client.get(reverse(page, args=[project.slug, rollout.pk]))
    assert response.status_code == 200
    title = _title(response.content.decode())
    assert rollout.external_id in title and project.name in title
