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
    # Its format by name, as the files' rows have theirs, not the stored id "otlp".
    assert "<td>OTLP/HTTP spans (live)</td>" in row


def test_the_live_row_counts_rollouts_before_their_traces_close(client, project, member):
    from django.test import TestCase

    from ingest.core.otlp_receive import CONTENT_JSON, decode_request
    from ingest.models import Upload
    from ingest.otlp.receive import spans_receive
    from ingest.otlp.services import live_traces_assemble
    from tests.ingest.core.otlp_builders import TRACE, json_body, json_span

    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "find_hotel"}
    spans = [
        json_span(n, parent=1, name="tool", start=n, end=n + 1, attributes=tool) for n in (2, 3)
    ]
    spans_receive(project=project, spans=decode_request(json_body(spans), CONTENT_JSON).spans)
    with TestCase.captureOnCommitCallbacks(execute=True):
        assert live_traces_assemble(project_id=project.pk, trace_ids=[TRACE]) == 1
    stored = Upload.objects.get(project=project, original_name__startswith="OTLP")
    assert stored.trajectory_count == 0  # the sweep has not closed the trace yet
    client.force_login(member)
    html = client.get(reverse("dashboard:uploads", args=[project.slug])).content.decode()
    row = html[html.index("OTLP/HTTP traces") :]
    cells = [cell.split(">")[-1] for cell in row[: row.index("</tr>")].split("</td>")]
    steps = stored.trajectories.get().step_count
    assert steps > 0 and ["1", str(steps)] == [c for c in cells if c.isdigit()][:2]
