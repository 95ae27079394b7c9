"""The rollouts list's misbehaviour filter: names that start alike stay told apart."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from analysis.models import Misbehaviour
from tests.conftest import ingest_bytes

pytestmark = pytest.mark.django_db

STEM = "Calls scroll with a value nobody provided, repeats it after the page "
ENDINGS = ("ended", "failed to load", "asked for a login")


@pytest.fixture
def alike(project):
    line = {"id": "a", "outcome": "failure", "steps": [{"role": "user", "content": "hi"}]}
    ingest_bytes(project, (json.dumps(line) + "\n").encode(), "one.jsonl")
    return [
        Misbehaviour.objects.create(project=project, key=f"m{i}", name=STEM + end)
        for i, end in enumerate(ENDINGS)
    ]


def _options(html: str) -> list[tuple[str, str, str]]:
    select = html.split('id="f-misbehaviour"', 1)[1].split("</select>", 1)[0]
    return re.findall(r'<option value="(\d+)" title="([^"]*)"\s*>([^<]*)</option>', select)


def test_it_tells_apart_misbehaviours_whose_names_start_alike(client, member, project, alike):
    client.force_login(member)
    html = client.get(reverse("dashboard:rollout_list", args=[project.slug])).content.decode()
    options = _options(html)
    assert len(options) == 3
    texts = [text for _, _, text in options]
    assert len(set(texts)) == 3
    for misbehaviour in alike:
        value, title, text = next(o for o in options if o[0] == str(misbehaviour.pk))
        assert text.startswith(f"#{misbehaviour.pk} ")  # distinct even when the box clips it
        assert title == misbehaviour.display_name  # the whole name on hover
    assert any(text.endswith("asked for a login") for text in texts)
