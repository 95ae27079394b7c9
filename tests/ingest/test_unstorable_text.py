"""A trace holding characters PostgreSQL refuses (NUL) or no driver can send (a lone
surrogate) is stored, with U+FFFD in their place, the same on SQLite and PostgreSQL: by
an upload and by the OTLP receiver."""

from __future__ import annotations

import pytest

from ingest.core.otlp_receive import CONTENT_JSON, decode_request
from ingest.core.storable import REPLACEMENT
from ingest.models import LiveTrace, Step, Trajectory
from ingest.otlp.receive import spans_receive
from ingest.otlp.services import live_traces_assemble
from tests.conftest import ingest_bytes
from tests.ingest.core.otlp_builders import json_body, json_span

pytestmark = pytest.mark.django_db

BAD = [("nul", b"\\u0000"), ("lone surrogate", b"\\ud800")]


@pytest.mark.parametrize("escape", [escape for _, escape in BAD], ids=[name for name, _ in BAD])
def test_an_upload_stores_them_replaced(project, escape):
    line = (
        b'{"id": "r1", "outcome": "failure", "task": "t'
        + escape
        + b'", "metadata": {"k'
        + escape
        + b'": "v'
        + escape
        + b'"}, "steps": [{"role": "user", "content": "a'
        + escape
        + b'b", "metadata": {"m": "'
        + escape
        + b'"}}]}\n'
    )
    upload = ingest_bytes(project, line, "odd.jsonl")
    assert upload.status == "done", upload.error_message
    step = Step.objects.get(trajectory__project=project)
    assert step.content == f"a{REPLACEMENT}b" and step.metadata["m"] == REPLACEMENT
    rollout = Trajectory.objects.get(project=project)
    assert rollout.metadata[f"k{REPLACEMENT}"] == f"v{REPLACEMENT}"


@pytest.mark.parametrize("escape", ["\\u0000", "\\ud800"], ids=[name for name, _ in BAD])
def test_a_live_trace_is_assembled_with_them_replaced(project, escape):
    messages = f'[{{"role": "user", "content": "a{escape}b"}}]'
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.input.messages": messages}
    decoded = decode_request(
        json_body([json_span(1, name="root", end=9, attributes=attributes)]), CONTENT_JSON
    )
    spans_receive(project=project, spans=decoded.spans)
    assert live_traces_assemble(project_id=project.pk, trace_ids=[decoded.spans[0].trace_id]) == 1
    live = LiveTrace.objects.get(project=project)
    assert not live.pending and live.error_message == ""
    assert f"a{REPLACEMENT}b" in Step.objects.filter(trajectory=live.rollout).values_list(
        "content", flat=True
    )
