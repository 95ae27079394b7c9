"""The overview's tools copy says whether failed rollouts are longer than successful ones
in this project, as they are, instead of always saying they are."""

from __future__ import annotations

import pytest
from django.urls import reverse

from analysis.selectors import MSG_FAILED_LONGER, MSG_FAILED_SHORTER
from pipeline.overview_counts import overview_counts_rebuild
from tests.conftest import ingest_bytes
from tests.dashboard.test_tools import ROLLOUTS, _call, _lines

pytestmark = pytest.mark.django_db


def _overview(client, member, project, rollouts) -> str:
    upload = ingest_bytes(project, _lines(*rollouts), "tools.jsonl")
    assert upload.status == "done", upload.error_message
    overview_counts_rebuild(project_id=project.pk)
    client.force_login(member)
    html = client.get(reverse("dashboard:project_detail", args=[project.slug])).content.decode()
    return html.split('id="tools"', 1)[1].split("</section>", 1)[0]


def test_it_says_failures_are_longer_when_they_are(client, member, project):
    # Failures of 5 and 3 steps, a success of 3.
    html = _overview(client, member, project, ROLLOUTS)
    assert MSG_FAILED_LONGER.format(failed="4", succeeded="3") in html
    assert "comes with long rollouts has an adjusted lift near 1 and a crude one above 1" in html


def test_it_says_failures_are_shorter_when_they_are(client, member, project):
    long_success = {
        "id": "d",
        "outcome": "success",
        "environment": "shop",
        "steps": [{"role": "user", "content": "find boots"}] + _call("search") * 4,
    }
    second = {**long_success, "id": "e"}
    html = _overview(client, member, project, [*ROLLOUTS, long_success, second])
    assert MSG_FAILED_SHORTER.format(failed="4", succeeded="9") in html
    assert "failed rollouts are longer and call more" not in html
    assert "comes with short rollouts" in html
