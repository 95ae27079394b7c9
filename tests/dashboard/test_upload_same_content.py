"""Sending the bytes of an earlier upload under another name: the answer is that upload,
and the page and the API say so instead of showing its name and error as the file's."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from tests.conftest import ingest_bytes

pytestmark = pytest.mark.django_db

GOOD = b'{"id": "r1", "steps": [{"role": "user", "content": "hi"}]}\n'
BAD = GOOD + GOOD + b'{"id": "r3", "steps": [{"content": "no role"}]}\n'


def _send_from_page(client, project, name: str, data: bytes) -> dict:
    url = reverse("dashboard:uploads", args=[project.slug])
    response = client.post(
        url, {"files": SimpleUploadedFile(name, data)}, HTTP_ACCEPT="application/json"
    )
    return response.json()["uploads"][0]


def test_it_says_a_file_has_the_content_of_an_earlier_failed_upload(client, member, project):
    failed = ingest_bytes(project, BAD, "bad_line3.jsonl")
    assert failed.status == "failed"
    client.force_login(member)
    answer = _send_from_page(client, project, "other.jsonl", BAD)
    assert answer["created"] is False
    assert answer["same_content_as"] == "bad_line3.jsonl"
    assert answer["message"].startswith(
        "other.jsonl has the same content as bad_line3.jsonl, uploaded "
    )
    assert ", which failed, so it is not read again: bad_line3.jsonl, line 3" in answer["message"]
    assert project.uploads.count() == 1


def test_it_says_a_file_has_the_content_of_an_earlier_stored_upload(client, member, project):
    ingest_bytes(project, GOOD, "one.jsonl")
    client.force_login(member)
    answer = _send_from_page(client, project, "again.jsonl", GOOD)
    assert answer["same_content_as"] == "one.jsonl"
    assert "again.jsonl has the same content as one.jsonl, uploaded" in answer["message"]
    assert answer["message"].endswith("its rollouts are already stored, nothing new was stored.")


def test_it_says_the_same_file_sent_again_was_uploaded_before(client, member, project):
    ingest_bytes(project, GOOD, "one.jsonl")
    client.force_login(member)
    answer = _send_from_page(client, project, "one.jsonl", GOOD)
    assert answer["message"].startswith("one.jsonl was uploaded before, ")


def test_it_shows_the_failed_twin_on_the_page_without_javascript(client, member, project):
    ingest_bytes(project, BAD, "bad_line3.jsonl")
    client.force_login(member)
    url = reverse("dashboard:uploads", args=[project.slug])
    response = client.post(url, {"files": SimpleUploadedFile("other.jsonl", BAD)}, follow=True)
    html = response.content.decode()
    assert "other.jsonl has the same content as bad_line3.jsonl, uploaded" in html
    assert "which failed, so it is not read again" in html
