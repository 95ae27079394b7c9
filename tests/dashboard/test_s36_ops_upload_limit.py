"""An upload over FAULTLINE_MAX_UPLOAD_BYTES is refused (413, naming the limit) from its
Content-Length before a byte of its body is read, on the API and on the upload page; one
whose file passes the limit while it is read is refused with the same status; a body sent
in chunks, which Django does not read, is a 411 rather than "no file". (The same against
gunicorn on a real socket: tests/faultline/test_run_script.py.)"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test.client import FakePayload
from django.urls import reverse

from dashboard.upload_limit import MSG_LENGTH_REQUIRED, MSG_UPLOAD_TOO_LARGE
from ingest.models import Upload
from ingest.services import MSG_TOO_LARGE, UploadTooLarge, size_text, upload_create
from projects.tokens import project_token_issue

pytestmark = pytest.mark.django_db

TWO_GIB = 2 * 1024**3
LIMIT_TEXT = "2.0 GB (2147483648 bytes)"
MULTIPART = "multipart/form-data; boundary=BoUnDaRy"
FORM_START = (
    b'--BoUnDaRy\r\nContent-Disposition: form-data; name="file"; filename="big.jsonl"\r\n'
    b"Content-Type: application/octet-stream\r\n\r\n"
)


@pytest.fixture
def api_auth(project):
    return {"HTTP_AUTHORIZATION": f"Bearer {project_token_issue(project=project)}"}


@pytest.fixture
def small_limit(settings):
    settings.FAULTLINE_MAX_UPLOAD_BYTES = 1000
    return 1000


def _declared(client, url, *, content_length: str, **extra):
    """A POST whose headers declare ``content_length`` bytes while only the start of the
    form is there: reading past it fails the test (FakePayload refuses to)."""
    payload = FakePayload(FORM_START)
    # Set in the environ directly: the client sets the type and length only for its data.
    environ = {"wsgi.input": payload, "CONTENT_LENGTH": content_length, "CONTENT_TYPE": MULTIPART}
    response = client.generic("POST", url, **environ, **extra)
    return response, payload


def _api_url(project) -> str:
    return f"/api/v1/projects/{project.slug}/uploads"


def test_the_api_refuses_a_declared_2_gb_upload_without_reading_it(client, project, api_auth):
    response, payload = _declared(
        client, _api_url(project), content_length=str(TWO_GIB + 1024**3), **api_auth
    )
    assert response.status_code == 413
    assert response.json() == {
        "error": MSG_UPLOAD_TOO_LARGE.format(size="3.0 GB (3221225472 bytes)", limit=LIMIT_TEXT)
    }
    assert not payload.read_started
    assert Upload.objects.count() == 0


def test_the_upload_page_script_gets_the_413_with_the_message(client, owner, project):
    client.force_login(owner)
    url = reverse("dashboard:uploads", args=[project.slug])
    response, payload = _declared(
        client, url, content_length=str(TWO_GIB + 1024**2), HTTP_ACCEPT="application/json"
    )
    assert response.status_code == 413
    message = MSG_UPLOAD_TOO_LARGE.format(size="2.0 GB (2148532224 bytes)", limit=LIMIT_TEXT)
    # The shape the page's script shows next to the file (static/js/upload.js).
    assert response.json() == {"uploads": [{"error": message}]}
    assert not payload.read_started


def test_the_upload_page_without_script_shows_the_message(client, owner, project):
    client.force_login(owner)
    url = reverse("dashboard:uploads", args=[project.slug])
    response, payload = _declared(client, url, content_length=str(3 * TWO_GIB))
    assert response.status_code == 302 and response["Location"] == url
    assert not payload.read_started
    page = client.get(url).content.decode()
    message = MSG_UPLOAD_TOO_LARGE.format(size="6.0 GB (6442450944 bytes)", limit=LIMIT_TEXT)
    assert f'<li class="message error">{message}</li>' in page


def test_it_takes_a_file_of_exactly_the_limit(client, project, api_auth, small_limit):
    file = SimpleUploadedFile("edge.jsonl", b"x" * small_limit)
    response = client.post(_api_url(project), {"file": file}, **api_auth)
    assert response.status_code == 202


def test_a_file_over_the_limit_within_the_form_allowance_is_a_413_too(
    client, owner, project, api_auth, small_limit
):
    big = b"x" * (small_limit + 1)
    response = client.post(
        _api_url(project), {"file": SimpleUploadedFile("big.jsonl", big)}, **api_auth
    )
    message = MSG_TOO_LARGE.format(name="big.jsonl", limit="1000 bytes")
    assert response.status_code == 413 and response.json() == {"error": message}
    client.force_login(owner)
    page = client.post(
        reverse("dashboard:uploads", args=[project.slug]),
        {"files": SimpleUploadedFile("big.jsonl", big)},
        HTTP_ACCEPT="application/json",
    )
    assert page.status_code == 413
    assert page.json() == {"uploads": [{"name": "big.jsonl", "error": message}]}
    assert Upload.objects.count() == 0


def test_a_chunked_upload_is_answered_411_unread(client, project, api_auth):
    response, payload = _declared(
        client, _api_url(project), content_length="", HTTP_TRANSFER_ENCODING="chunked", **api_auth
    )
    assert response.status_code == 411
    assert response.json() == {"error": MSG_LENGTH_REQUIRED}
    assert not payload.read_started


def test_a_stream_is_read_only_just_past_the_limit(project, settings):
    """Any stream (a CLI pipe, a body read in pieces) is cut once it passes the limit."""
    settings.FAULTLINE_MAX_UPLOAD_BYTES = 3 * 1024 * 1024
    read = []

    def endless():
        while True:
            read.append(1)
            yield b"x" * (1024 * 1024)

    with pytest.raises(UploadTooLarge):
        upload_create(project=project, stream=endless(), original_name="endless.jsonl")
    assert len(read) == 4
    assert Upload.objects.count() == 0


def test_size_text_names_sizes_as_people_read_them():
    assert size_text(TWO_GIB) == LIMIT_TEXT
    assert size_text(1536 * 1024) == "1.5 MB (1572864 bytes)"
    assert size_text(1000) == "1000 bytes"
    assert size_text(1024) == "1.0 KB (1024 bytes)"
