"""The exports page: start an export, watch it, download its files; access rules."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile

import pytest
from jsonschema import Draft202012Validator

from exports.core.filters import MSG_BAD_ALPHA, MSG_NO_KIND, SCHEMA_FILES
from exports.core.writer import file_sha256
from exports.models import ExportJob
from exports.services import export_folder, export_run
from exports.sources import MSG_NO_CALIBRATION
from exports.views import MSG_VIEWERS_CANNOT_EXPORT

pytestmark = pytest.mark.django_db


def _start(client, project, **fields):
    data = {"kinds": ["sft", "preference", "diagnosis", "start_states"], **fields}
    return client.post(f"/p/{project.slug}/exports/", data)


def test_it_shows_the_form_and_the_jobs(client, small_project, member):
    client.force_login(member)
    response = client.get(f"/p/{small_project.slug}/exports/")
    assert response.status_code == 200
    body = response.content.decode()
    assert 'id="export-form"' in body and "retail" in body and "gpt-4o-mini" in body
    # Each format says in a line what its file holds, tied to its checkbox.
    from django.utils.html import escape

    from exports.core.filters import KINDS
    from exports.views import KIND_DESCRIPTIONS

    for kind in KINDS:
        assert f'aria-describedby="kind-{kind}-help"' in body
        assert f'id="kind-{kind}-help"' in body and escape(KIND_DESCRIPTIONS[kind]) in body


def test_it_queues_an_export_on_commit(
    client, small_project, member, django_capture_on_commit_callbacks
):
    client.force_login(member)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = _start(client, small_project, environment="airline", human_only="1")
    assert response.status_code == 302
    job = ExportJob.objects.get()
    assert job.created_by == member and job.status == "queued"
    assert job.filters["environment"] == "airline" and job.filters["human_only"] is True
    assert len(callbacks) == 1


@pytest.mark.parametrize(
    ("fields", "message"), [({"alpha": "2"}, MSG_BAD_ALPHA), ({"kinds": []}, MSG_NO_KIND)]
)
def test_it_explains_a_bad_filter(client, small_project, member, fields, message):
    client.force_login(member)
    response = _start(client, small_project, **fields)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not ExportJob.objects.exists()


def test_it_explains_that_no_calibration_serves_an_alpha(client, small_project, member):
    client.force_login(member)
    response = _start(client, small_project, alpha="0.2")
    assert response.status_code == 400
    assert MSG_NO_CALIBRATION.format(alpha=0.2) in response.content.decode()


def test_viewers_see_exports_but_cannot_start_one(client, small_project, viewer):
    client.force_login(viewer)
    assert client.get(f"/p/{small_project.slug}/exports/").status_code == 200
    response = _start(client, small_project)
    assert response.status_code == 403 and MSG_VIEWERS_CANNOT_EXPORT in response.content.decode()
    assert not ExportJob.objects.exists()


def _finished(client, project, user):
    client.force_login(user)
    _start(client, project)
    job = ExportJob.objects.get()
    return export_run(job_id=job.pk)


def test_it_reports_progress_as_json(client, small_project, member):
    job = _finished(client, small_project, member)
    data = client.get(f"/p/{small_project.slug}/exports/{job.pk}/status").json()
    assert data["status"] == "done" and data["progress"] == {"done": 4, "total": 4, "percent": 100}
    assert set(data["files"]) == {
        "sft.jsonl",
        "preference.jsonl",
        "diagnosis.jsonl",
        "start_states.jsonl",
        "manifest.json",
    }


def test_it_downloads_each_file(client, small_project, member):
    job = _finished(client, small_project, member)
    response = client.get(f"/p/{small_project.slug}/exports/{job.pk}/files/sft.jsonl")
    assert response.status_code == 200
    body = b"".join(response.streaming_content)
    assert body == (export_folder(job) / "sft.jsonl").read_bytes()
    lines = [json.loads(line) for line in body.splitlines()]
    assert {line["metadata"]["rollout"] for line in lines} == {"a1", "a2"}


def test_it_downloads_the_manifest(client, small_project, member):
    job = _finished(client, small_project, member)
    response = client.get(f"/p/{small_project.slug}/exports/{job.pk}/files/manifest.json")
    manifest = json.loads(b"".join(response.streaming_content))
    assert manifest["counts"] == job.counts


def test_it_refuses_names_that_are_not_the_jobs_files(client, small_project, member):
    job = _finished(client, small_project, member)
    for name in ("..%2F..%2Fsettings.py", "other.jsonl", "sft.jsonl.partial"):
        assert (
            client.get(f"/p/{small_project.slug}/exports/{job.pk}/files/{name}").status_code == 404
        )


def _zip(client, project, job) -> tuple[zipfile.ZipFile, str]:
    response = client.get(f"/p/{project.slug}/exports/{job.pk}/export.zip")
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    return archive, f"{project.slug}-export-{job.pk}"


def test_it_zips_every_file(client, small_project, member):
    job = _finished(client, small_project, member)
    archive, folder = _zip(client, small_project, job)
    kinds = ("sft", "preference", "diagnosis", "start_states")
    assert sorted(archive.namelist()) == sorted(
        [f"{folder}/{kind}.jsonl" for kind in kinds]
        + [f"{folder}/{SCHEMA_FILES[kind]}" for kind in kinds]
        + [f"{folder}/manifest.schema.json", f"{folder}/manifest.json"]
    )
    manifest = json.loads(archive.read(f"{folder}/manifest.json"))
    assert manifest["files"][0]["sha256"] == file_sha256(export_folder(job) / "sft.jsonl")


def test_the_zip_holds_every_file_its_manifest_names_and_no_other(client, small_project, member):
    job = _finished(client, small_project, member)
    archive, folder = _zip(client, small_project, job)
    manifest = json.loads(archive.read(f"{folder}/manifest.json"))
    named = [entry["name"] for entry in manifest["files"] + manifest["schemas"]]
    assert {entry["schema"] for entry in manifest["files"]} <= set(named)
    assert sorted(archive.namelist()) == sorted(
        f"{folder}/{name}" for name in [*named, "manifest.json"]
    )
    for entry in manifest["files"] + manifest["schemas"]:
        data = archive.read(f"{folder}/{entry['name']}")
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
        assert len(data) == entry["bytes"]


def test_the_schemas_in_the_zip_validate_its_records(client, small_project, member):
    job = _finished(client, small_project, member)
    archive, folder = _zip(client, small_project, job)
    manifest = json.loads(archive.read(f"{folder}/manifest.json"))

    def validator(name: str) -> Draft202012Validator:
        schema = json.loads(archive.read(f"{folder}/{name}"))
        Draft202012Validator.check_schema(schema)
        return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)

    assert list(validator("manifest.schema.json").iter_errors(manifest)) == []
    checked = 0
    for entry in manifest["files"]:
        lines = archive.read(f"{folder}/{entry['name']}").decode().splitlines()
        assert len(lines) == entry["lines"]
        check = validator(entry["schema"])
        for line in lines:
            assert list(check.iter_errors(json.loads(line))) == [], entry["name"]
        checked += len(lines)
    assert checked > 0


def test_the_zip_of_an_export_made_before_schemas_shipped_still_downloads(
    client, small_project, member
):
    job = _finished(client, small_project, member)
    old_manifest = {k: v for k, v in job.manifest.items() if k != "schemas"}
    ExportJob.objects.filter(pk=job.pk).update(manifest=old_manifest)
    for name in SCHEMA_FILES.values():
        (export_folder(job) / name).unlink()
    archive, folder = _zip(client, small_project, job)
    assert len(archive.namelist()) == 5 and f"{folder}/manifest.json" in archive.namelist()


def test_an_unfinished_job_offers_no_files(client, small_project, member):
    client.force_login(member)
    _start(client, small_project)
    job = ExportJob.objects.get()
    assert (
        client.get(f"/p/{small_project.slug}/exports/{job.pk}/files/sft.jsonl").status_code == 404
    )
    assert client.get(f"/p/{small_project.slug}/exports/{job.pk}/export.zip").status_code == 404


@pytest.mark.parametrize("path", ["", "1/status", "1/files/sft.jsonl", "1/export.zip"])
def test_outsiders_get_404(client, small_project, member, outsider, path):
    _finished(client, small_project, member)
    client.force_login(outsider)
    assert client.get(f"/p/{small_project.slug}/exports/{path}").status_code == 404


def test_anonymous_users_are_sent_to_log_in(client, small_project):
    response = client.get(f"/p/{small_project.slug}/exports/")
    assert response.status_code == 302 and "/login/" in response["Location"]
