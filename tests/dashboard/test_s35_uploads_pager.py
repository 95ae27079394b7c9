"""The uploads page says when it shows only the newest uploads, and pages to the older."""

from __future__ import annotations

import pytest
from django.urls import reverse

from dashboard.views import UPLOADS_PER_PAGE
from ingest.models import Upload

pytestmark = pytest.mark.django_db


def _uploads(project, count: int) -> None:
    Upload.objects.bulk_create(
        Upload(
            project=project,
            original_name=f"run-{number:03d}.json",
            raw_file=f"uploads/run-{number:03d}.json",
            sha256=f"{number:064x}",
            size=10,
            status="done",
        )
        for number in range(count)
    )


def test_it_says_how_many_uploads_it_leaves_out(client, project, member):
    _uploads(project, UPLOADS_PER_PAGE + 10)
    client.force_login(member)
    html = client.get(reverse("dashboard:uploads", args=[project.slug])).content.decode()
    assert f"Showing the newest {UPLOADS_PER_PAGE} of {UPLOADS_PER_PAGE + 10} uploads." in html
    assert "?page=2" in html and "Older uploads" in html
    assert html.count("<tr data-upload=") == UPLOADS_PER_PAGE


def test_it_lists_the_older_uploads_on_the_next_page(client, project, member):
    _uploads(project, UPLOADS_PER_PAGE + 10)
    client.force_login(member)
    url = reverse("dashboard:uploads", args=[project.slug])
    html = client.get(url + "?page=2").content.decode()
    assert html.count("<tr data-upload=") == 10
    assert f"Showing uploads 201–210 of {UPLOADS_PER_PAGE + 10}, newest first." in html
    assert "Newer uploads" in html and "Older uploads" not in html


def test_it_says_nothing_of_paging_when_all_uploads_fit(client, project, member):
    _uploads(project, 3)
    client.force_login(member)
    html = client.get(reverse("dashboard:uploads", args=[project.slug])).content.decode()
    assert html.count("<tr data-upload=") == 3
    assert "Showing the newest" not in html and "Older uploads" not in html


def test_two_files_of_one_name_show_the_start_of_their_content_hash(client, member, project):
    from tests.conftest import ingest_bytes

    line = '{"id": "%s", "steps": [{"role": "user", "content": "hi"}]}\n'
    first = ingest_bytes(project, (line % "a").encode(), "runs.jsonl")
    second = ingest_bytes(project, (line % "b").encode(), "runs.jsonl")
    other = ingest_bytes(project, (line % "c").encode(), "other.jsonl")
    client.force_login(member)
    html = client.get(reverse("dashboard:uploads", args=[project.slug])).content.decode()
    assert html.count('data-role="content-hash"') == 2
    assert f"content {first.sha256[:12]}…" in html and f"content {second.sha256[:12]}…" in html
    assert other.sha256[:12] not in html


def test_an_upload_queued_again_after_its_worker_was_lost_says_so(client, member, project):
    from tests.conftest import ingest_bytes

    line = '{"id": "a", "steps": [{"role": "user", "content": "hi"}]}\n'
    upload = ingest_bytes(project, line.encode(), "runs.jsonl")
    Upload.objects.filter(pk=upload.pk).update(status="queued", reaped=2, progress_done=0)
    client.force_login(member)
    html = client.get(reverse("dashboard:uploads", args=[project.slug])).content.decode()
    assert 'data-role="requeued"' in html and "2 times so far" in html
