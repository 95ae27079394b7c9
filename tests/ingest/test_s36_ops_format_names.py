"""Format errors name the formats as people know them (the upload page's names, each
parser's LABEL), not by their internal ids; the API still takes the ids, and its refusal of
an unknown one pairs each id with its name."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from ingest.core.errors import TraceParseError
from ingest.models import Upload
from ingest.parsers import (
    MSG_NO_SUCH_FORMAT,
    MSG_UNKNOWN_FORMAT,
    PARSERS,
    format_choices,
    format_labels,
    get_parser,
)
from projects.tokens import project_token_issue
from tests.conftest import ingest_bytes

pytestmark = pytest.mark.django_db

WHO_AND_WHEN = b'{"history": [{"role": "user", "content": "hi", "name": "user"}]}'
# Ids that are not the name of their format, which a reader would not know.
INTERNAL_IDS = ("otlp_json", "otel_sdk_spans", "who_and_when", "tau_bench", "openai_chat")


def _upload(client, project, **fields):
    return client.post(
        f"/api/v1/projects/{project.slug}/uploads",
        fields,
        HTTP_AUTHORIZATION=f"Bearer {project_token_issue(project=project)}",
    )


def test_it_names_the_formats_a_file_matches_none_of(project):
    upload = ingest_bytes(project, b"hello, this is not a trace\n", "notes.txt")
    assert upload.status == "failed"
    assert upload.error_message == "notes.txt: " + MSG_UNKNOWN_FORMAT.format(
        formats=format_labels()
    )
    assert "Who&When JSON, OpenHands event stream, tau-bench trajectories" in upload.error_message
    assert not any(format_id in upload.error_message for format_id in INTERNAL_IDS)


def test_it_lists_every_format_by_its_label_in_detection_order():
    assert format_labels() == ", ".join(module.LABEL for module in PARSERS.values())


def test_the_api_still_takes_a_format_id(client, project, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        response = _upload(
            client,
            project,
            file=SimpleUploadedFile("run.json", WHO_AND_WHEN),
            format="who_and_when",
        )
    assert response.status_code == 202
    assert Upload.objects.get().requested_format == "who_and_when"


def test_an_unknown_format_id_is_answered_with_each_id_and_its_name(client, project):
    response = _upload(
        client, project, file=SimpleUploadedFile("run.json", WHO_AND_WHEN), format="ww"
    )
    assert response.status_code == 400 and response.json()["field"] == "format"
    message = response.json()["error"]
    assert message == MSG_NO_SUCH_FORMAT.format(name="ww", formats=format_choices())
    assert "'who_and_when' for Who&When JSON" in message
    assert "'tau_bench' for tau-bench trajectories" in message
    assert Upload.objects.count() == 0


def test_a_stored_unknown_format_id_is_refused_with_the_same_choices():
    with pytest.raises(TraceParseError) as caught:
        get_parser("ww")
    assert caught.value.message == MSG_NO_SUCH_FORMAT.format(name="ww", formats=format_choices())


def test_the_uploads_page_names_a_stored_upload_s_format(client, member, project):
    ingest_bytes(project, WHO_AND_WHEN, "run.json")
    client.force_login(member)
    page = client.get(f"/p/{project.slug}/uploads/").content.decode()
    table = page[page.index('id="uploads"') :]
    assert "<td>Who&amp;When JSON</td>" in table
    assert "<td>who_and_when</td>" not in table
