"""The labelling queue has one name: the top bar called it "Label next" while its links
and the rollout page called it the labelling queue."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.urls import reverse

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.django_db

NAME = "Labelling queue"
# The old name as a name; "the rollouts to label next" in running text is no name.
OLD_NAME = re.compile(r"\bLabel next\b")


def test_it_names_the_page_in_the_top_bar(client, member, project):
    client.force_login(member)
    html = client.get(reverse("dashboard:project_detail", args=[project.slug])).content.decode()
    queue_url = reverse("attribution:labelling_queue", args=[project.slug])
    assert re.search(rf'<a href="{re.escape(queue_url)}"\s*>{NAME}</a>', html)


def test_it_names_the_page_in_its_title_and_heading(client, member, project):
    client.force_login(member)
    html = client.get(reverse("attribution:labelling_queue", args=[project.slug])).content.decode()
    assert re.search(rf"<title>{NAME} · {re.escape(project.name)} · Faultline</title>", html)
    assert f"<h1>{NAME}</h1>" in html
    assert not OLD_NAME.search(html)


def test_no_template_or_document_uses_the_other_name():
    files = [
        *(REPO_ROOT / "templates").rglob("*.html"),
        *(REPO_ROOT / "docs").rglob("*.md"),
        REPO_ROOT / "README.md",
        REPO_ROOT / "dashboard" / "templatetags" / "faultline.py",
    ]
    assert [
        str(Path(f).relative_to(REPO_ROOT)) for f in files if OLD_NAME.search(f.read_text())
    ] == []
