"""The uploads page's row of live OTLP rollouts is a stream, not a 0-byte file by nobody."""

from __future__ import annotations

import pytest
from django.urls import reverse

from ingest.otlp.rollouts import stream_upload

pytestmark = pytest.mark.django_db


def test_the_live_row_says_spans_from_the_exporter(client, project, member):
    stream_upload(project_id=project.pk)
    client.force_login(member)
    html = client.get(reverse("dashboard:uploads", args=[project.slug])).content.decode()
    row = html[html.index("OTLP/HTTP traces") :]
    row = row[: row.index("</tr>")]
    assert 'data-role="live-stream">live spans<' in row and "OTLP exporter" in row
    assert "bytes" not in row and "API / CLI" not in row
